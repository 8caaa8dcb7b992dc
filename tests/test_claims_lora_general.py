"""Falsification tests of the general-position LoRA claims (Figs 4-5): each claim PASSES with popdyn's theory and
FAILS with a deliberately wrong one, at a reduced size. The SGD runs are memoised (they do not depend on the
theory), so the wrong run reuses the right run's simulations. Comments give the measured margins.
"""
from pathlib import Path

import numpy as np
import pytest

import popdyn
from popdyn.models.lora import GeneralProblem
from popdyn.validation import claims
from tests.falsify import falsifies, memoise, perturb, run_claim

pytest.importorskip("torch")


def _verdict(claim_id, tmp_path, wrong, **size):
    verdict, res = run_claim(claim_id, tmp_path, **size)
    print(f"{claim_id} wrong={wrong}: measured {res.measured:.4g}, checks {res.checks}")
    assert verdict == ("FAIL" if wrong else "PASS"), f"{claim_id}: measured {res.measured:.4g}; {res.message}"
    assert res.figure and Path(res.figure).exists() and res.table
    (c,) = claims.select([claim_id])
    assert c.kind in claims.KINDS and c.nulls and set(res.nulls) == set(c.nulls)
    if not wrong:  # every declared null is measured on the same SGD runs and rejected
        assert all(claims.null_rejected(c, v) for v in res.nulls.values()), res.nulls
    return res


def _a2_theory(monkeypatch):
    """The A2 theory for every GeneralProblem: u's part in span W ignored (p = 0), as if Fig. 5 were inside A2."""
    perturb(monkeypatch, "popdyn.predict", lambda f: lambda problem, **kw: f(
        GeneralProblem(problem.problem, np.zeros(problem.k), problem.project)
        if isinstance(problem, GeneralProblem) else problem, **kw))


@falsifies("lora.fig5_nonorthogonal")
@pytest.mark.parametrize("wrong", [False, True])
def test_fig5_fails_the_a2_theory(wrong, monkeypatch, tmp_path):
    # ignoring p = W u: at alpha = 0.75 the A2 ODE runs ahead of SGD, which is bounded by
    # sqrt(1 - alpha^2) = 0.66 and slower (0.33 at tau = 15) (measured ratio 7.4 vs tolerance 1 with the
    # Student-t band; right theory 0.23)
    memoise(monkeypatch, "popdyn.simulate")
    if wrong:
        _a2_theory(monkeypatch)
    _verdict("lora.fig5_nonorthogonal", tmp_path, wrong, alphas=[0.75])


@falsifies("lora.fig5b_instances")
@pytest.mark.parametrize("wrong", [False, True])
def test_fig5b_fails_the_a2_theory(wrong, monkeypatch, tmp_path):
    # the same wrong theory on one random instance at alpha = 1/2 (measured ratio 1.73 vs 1; right theory 0.10)
    memoise(monkeypatch, "popdyn.simulate")
    if wrong:
        _a2_theory(monkeypatch)
    _verdict("lora.fig5b_instances", tmp_path, wrong, instances=1)


@falsifies("lora.fig4_activations")
@pytest.mark.parametrize("wrong", [False, True])
def test_fig4_fails_without_the_normalisation_drift(wrong, monkeypatch, tmp_path):
    # the population flow alone (convention "paper", no -(lr^2/2) E||L||^2 drift): at xi = sqrt(k) it runs to
    # |m| = 1 where SGD plateaus at 0.91 (measured ratio 3.3 vs 1 at 8
    # seeds; right theory 0.15)
    memoise(monkeypatch, "popdyn.simulate")
    if wrong:
        perturb(monkeypatch, "popdyn.predict",
                lambda f: lambda problem, **kw: f(problem, **{**kw, "convention": "paper"}))
    _verdict("lora.fig4_activations", tmp_path, wrong, activations=["relu"], panels=[["sqrt_k", 0.02, 30.0]])
