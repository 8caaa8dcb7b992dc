"""Falsification tests of the multi-task downstream claims (E6, E7): each passes with popdyn's theory and FAILS
with a wrong one injected where the claim looks it up. The comment above each test names the wrong theory and the
margin by which it must fail.
"""
import math

import numpy as np
import pytest

from popdyn.models import multitask as mt

from .falsify import falsifies, measure, perturb, run_claim

# E6 at a reduced size: two d (the distance must decrease with d), one n >= 4 2^r
_E6 = {"d": [30, 100], "n": [50], "m_bar": 50, "m_hat": 400, "n_test": 1000}


def _no_feature_learning(f):
    """Wrong theory: pretraining learns nothing, W+ = kappa_par W0 (random features at the learned scale)."""
    return lambda W0, r, *a, **k: mt.kappa_par(r, 1.0) * np.asarray(W0)


# wrong theory: no feature learning (W+ = kappa W0, the 'random features' of Thm 4.6 in place of learned ones). The
# learned embedding then sees all d coordinates and the parity stays at chance: test error ~0.5 against the
# tolerance 0.02 (true theory: 0.000 at these sizes).
@falsifies("multitask.downstream_probe")
@pytest.mark.parametrize("wrong", [False, True])
def test_downstream_probe_fails_without_feature_learning(wrong, monkeypatch, tmp_path):
    if wrong:
        perturb(monkeypatch, "popdyn.models.multitask.one_step_map", _no_feature_learning)
    verdict, measured, checks = measure("multitask.downstream_probe", tmp_path, **_E6)
    assert verdict == ("FAIL" if wrong else "PASS"), (measured, checks)
    assert (measured > 0.3) if wrong else (measured == 0.0)


# wrong theory: the paper's kappa = eta^2 2^-r-2 (Lemma A.10, L859) in the rescaling alpha = alpha_hat/kappa. The
# learned first layer is then 2/pi of the purified one: the embeddings differ by ~35 % of ||g~|| (true theory at
# this size: 6 % at d = 30, 1 % at d = 100), against the Lemma B.3 check's 10 %. The test error alone would not see it
# (a rescaled first layer still separates the 2^r points).
@falsifies("multitask.downstream_probe")
@pytest.mark.parametrize("wrong", [False, True])
def test_downstream_probe_fails_the_papers_kappa_in_alpha(wrong, monkeypatch, tmp_path):
    if wrong:
        perturb(monkeypatch, "popdyn.models.multitask.kappa_par",
                lambda f: lambda r, eta, corrected=True: f(r, eta, corrected=False))
    verdict, res = run_claim("multitask.downstream_probe", tmp_path, **_E6)
    assert verdict == ("FAIL" if wrong else "PASS"), (res.measured, res.checks)
    dist = max(i["rel_distance"] for i in res.details["per_d"])
    assert (dist > 0.25) if wrong else (dist < 0.08)


_E7 = {"dr": [[7, 2], [8, 3]], "B_frac": [0.05, 0.5, 0.9], "m_hat": 16}


# wrong theories for Thm 4.6's bound: (a) without the square root, 1 - B/binom(d, r) (above the attained loss of
# the parity-feature embedding by B/sqrt(K) - B/K >= 0.04 here); (b) the constant off by 10 %, 1 - 0.9 B/sqrt(binom)
# (below the attained value by 0.1 B/sqrt(K) = 0.09 at B = 0.9 sqrt(K): the tightness gap). Tolerance 1e-9; the
# true bound is within 3e-15.
@falsifies("multitask.parity_lower_bound")
@pytest.mark.parametrize("wrong", [None, "no sqrt", "constant 0.9"])
def test_parity_lower_bound_fails_perturbed_bounds(wrong, monkeypatch, tmp_path):
    if wrong == "no sqrt":
        perturb(monkeypatch, "popdyn.models.multitask.bounds.thm46_bessel",
                lambda f: lambda d, r, B: 1 - B / math.comb(d, r))
    elif wrong == "constant 0.9":
        perturb(monkeypatch, "popdyn.models.multitask.bounds.thm46_bessel",
                lambda f: lambda d, r, B: 1 - 0.9 * (1 - f(d, r, B)))
    verdict, measured, checks = measure("multitask.parity_lower_bound", tmp_path, **_E7)
    assert verdict == ("PASS" if wrong is None else "FAIL"), (measured, checks)
    assert (measured < 1e-13) if wrong is None else (measured > 0.03)
