"""Falsification tests of the ICL regression claims: popdyn's theory passes, a deliberately wrong one FAILS.

Each test runs its claim at a reduced size twice (issue 7): with popdyn's formulas (PASS) and with one
formula perturbed at the name the claim (or the simulation) looks it up (FAIL). The trainings do not
depend on the theory, so they are memoised between the two runs where the claim trains.
"""
import dataclasses

import numpy as np
import pytest

from popdyn.validation.claims import REGISTRY, null_rejected

from tests.falsify import falsifies, memoise, perturb, run_claim, scaled


def assert_nulls_rejected(claim_id, res):
    """Every null the claim declares was measured on the same draw and is outside the tolerance."""
    c = REGISTRY[claim_id]
    assert set(res.nulls) == set(c.nulls), res.nulls
    assert all(null_rejected(c, v) for v in res.nulls.values()), res.nulls


@falsifies("icl.lemma51_thm542_mc")
@pytest.mark.parametrize("wrong", [None, "loss", "risk"])
def test_lemma51_thm542_fails_a_five_percent_error(wrong, monkeypatch, tmp_path):
    # loss x 1.05 or the Thm 5.4.2 risk x 1.05: at n = 6e4 the SE is ~0.3 % of the value, so ~15 SE off
    if wrong == "loss":
        perturb(monkeypatch, "popdyn.models.icl.population_loss", scaled(1.05))
    if wrong == "risk":
        perturb(monkeypatch, "popdyn.models.icl.optimum_eval_risk_avg", scaled(1.05))
    verdict, res = run_claim("icl.lemma51_thm542_mc", tmp_path, context=[3, 40], ranks=[1, 3])
    assert verdict == ("PASS" if wrong is None else "FAIL"), res.message
    if not wrong:
        assert_nulls_rejected("icl.lemma51_thm542_mc", res)


@pytest.mark.slow
@falsifies("icl.trained_optimum")
@pytest.mark.parametrize("wrong", [False, True])
def test_trained_optimum_fails_an_optimum_ten_percent_too_large(wrong, monkeypatch, tmp_path):
    pytest.importorskip("torch")
    # U* x 1.1 where the simulation measures the distance: at rank 4 (2500 steps x 1024 prompts) the trained uU is
    # ~1.2 % from the true U* and so >= 8 % from the wrong one, above the 5 % tolerance. (The simulation
    # recomputes U*, so the training is not memoised here.)
    if wrong:
        perturb(monkeypatch, "popdyn.sim.icl.regression.optimum",
                lambda f: lambda *a, **k: dataclasses.replace(f(*a, **k), U=1.1 * f(*a, **k).U))
    verdict, res = run_claim("icl.trained_optimum", tmp_path, ranks=[4], steps=2500, batch=1024)
    assert verdict == ("FAIL" if wrong else "PASS"), res.message
    if not wrong:
        assert_nulls_rejected("icl.trained_optimum", res)


@falsifies("icl.risk_vs_noise")
@pytest.mark.parametrize("wrong", [None, "formula", "U=0", "random U"])
def test_risk_vs_noise_fails_a_wrong_formula_and_untrained_models(wrong, monkeypatch, tmp_path):
    pytest.importorskip("torch")
    import popdyn.validation.claims.icl as claim_module
    small = {"ranks": [2], "sigma2": [0.0, 1.0], "rho": [0.25, 0.5], "n": 20_000}
    if wrong == "formula":  # the risk formula 5 % too large: ~8-20 SE at n = 2e4
        perturb(monkeypatch, "popdyn.models.icl.eval_risk_avg", scaled(1.05))
    if wrong in ("U=0", "random U"):  # the risk formula holds at any U (z passes): the near-R(U*) check must fail
        rng = np.random.default_rng(0)

        def untrained(p, size, device):
            U = np.zeros((p.d, p.d)) if wrong == "U=0" else rng.standard_normal((p.d, p.d)) / p.d
            return {"uU": U[None]}
        monkeypatch.setattr(claim_module, "_train", untrained)
    else:
        memoise(monkeypatch, "popdyn.validation.claims.icl._train")
    verdict, res = run_claim("icl.risk_vs_noise", tmp_path, **small)
    assert verdict == ("PASS" if wrong is None else "FAIL"), res.message
    if not wrong:
        assert_nulls_rejected("icl.risk_vs_noise", res)
    if wrong in ("U=0", "random U"):
        assert res.measured <= 4.0 and not all(res.checks.values())  # the formula is right; the model is not


@falsifies("icl.rank_gap")
@pytest.mark.parametrize("wrong", [False, True])
def test_rank_gap_fails_a_gap_ten_percent_too_large(wrong, monkeypatch, tmp_path):
    # Thm 5.4.3's gap x 1.1: the paired MC difference has SE ~1 % of the gap at n = 4e4, so ~10 SE off
    if wrong:
        perturb(monkeypatch, "popdyn.models.icl.rank_gap", scaled(1.1))
    verdict, res = run_claim("icl.rank_gap", tmp_path, pairs=[[1, 2], [2, 4]], sigma=[0.0, 1.0])
    assert verdict == ("FAIL" if wrong else "PASS"), res.message
    if not wrong:
        assert_nulls_rejected("icl.rank_gap", res)


@falsifies("icl.gradient_flow")
@pytest.mark.parametrize("wrong", [None, "optimum", "N+1"])
def test_gradient_flow_fails_a_wrong_optimum(wrong, monkeypatch, tmp_path):
    # the flow converges to the true U* to 1e-10; U* x 1.001 or the optimum of N + 1 are 1e-3 away
    if wrong == "optimum":
        perturb(monkeypatch, "popdyn.models.icl.optimum",
                lambda f: lambda *a, **k: dataclasses.replace(f(*a, **k), U=1.001 * f(*a, **k).U))
    if wrong == "N+1":
        perturb(monkeypatch, "popdyn.models.icl.optimum", lambda f: lambda L, N, r, **k: f(L, N + 1, r, **k))
    verdict, res = run_claim("icl.gradient_flow", tmp_path)
    assert verdict == ("PASS" if wrong is None else "FAIL"), res.message
    if not wrong:
        assert_nulls_rejected("icl.gradient_flow", res)
