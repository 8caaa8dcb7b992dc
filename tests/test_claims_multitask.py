"""Falsification tests of the multi-task claims: each passes with popdyn's theory and FAILS with a wrong one.

The comment above each test names the wrong theory and the margin by which it must fail. Simulations are
memoised (``memoise``): a wrong theory changes only the theory side, so the right and the wrong run share them.
"""
import numpy as np
import pytest

from popdyn.models import multitask as mt

from .falsify import falsifies, measure, memoise, perturb, scaled

pytest.importorskip("torch")

_SIM = {"n_train": 2 ** 16, "seeds": 3}


def _papers_kappa_map(f):
    """Wrong theory: the one-step map with the paper's kappa = eta^2 2^-r-2 in the ground-truth part (Lemma A.10)."""
    def wrong(W0, r, *a, **k):
        W = f(W0, r, *a, **k)
        eta = k.get("eta", a[1] if len(a) > 1 else 1.0)
        W = np.array(W)
        W[:, :r] += (mt.kappa_par(r, eta, corrected=False) - mt.kappa_par(r, eta)) * np.asarray(W0)[:, :r]
        return W
    return wrong


# wrong theory: the paper's kappa (0.25 eta^2 2^-r instead of 0.159) in the map's ground-truth part. The gap is
# 0.09 eta^2 2^-r ||w_par||, about 40 % of ||W+_j||: dozens of SE at n = 2^16 x 3 seeds (true theory: ~1-3 SE).
@falsifies("multitask.one_step_map")
@pytest.mark.parametrize("wrong", [False, True])
def test_one_step_map_fails_the_papers_kappa(wrong, monkeypatch, tmp_path):
    memoise(monkeypatch, "popdyn.simulate")
    if wrong:
        perturb(monkeypatch, "popdyn.models.multitask.one_step_map", _papers_kappa_map)
    verdict, measured, checks = measure("multitask.one_step_map", tmp_path, **_SIM)
    assert verdict == ("FAIL" if wrong else "PASS"), (measured, checks)
    assert (measured > 10) if wrong else (measured < 5)


# wrong theory: kappa_par with the paper's constant eta^2 2^-r-2 (corrected=False). The exact map's kappa is
# 0.159 eta^2 2^-r, so the relative error is 1 - 0.159/0.25 = 0.36, against the tolerance 0.02 (true: 0.004).
@falsifies("multitask.kappa_vs_r")
@pytest.mark.parametrize("wrong", [False, True])
def test_kappa_vs_r_fails_the_papers_constant(wrong, monkeypatch, tmp_path):
    memoise(monkeypatch, "popdyn.simulate")
    if wrong:
        perturb(monkeypatch, "popdyn.models.multitask.kappa_par",
                lambda f: lambda r, eta, corrected=True: f(r, eta, corrected=False))
    verdict, measured, checks = measure("multitask.kappa_vs_r", tmp_path, r=[1, 2, 4], sim=[[1, 20, 8]], **_SIM)
    assert verdict == ("FAIL" if wrong else "PASS"), (measured, checks)
    assert (measured > 0.3) if wrong else (measured < 0.01)


# wrong theory: a weight decay whose 1 - eta lambda_w is 1 % too large in magnitude (an imperfect perp
# cancellation). The leakage 0.01 eta^2 2^-r-1/pi ||w_perp|| does not decay with d: the slope is near 0 instead of
# -1.5 and r = 1 is no longer exactly 0 (true theory: slopes within 0.06 of -1.5, r = 1 at 1e-15).
@falsifies("multitask.ratio_vs_d")
@pytest.mark.parametrize("wrong", [False, True])
def test_ratio_vs_d_fails_an_imperfect_cancellation(wrong, monkeypatch, tmp_path):
    if wrong:
        perturb(monkeypatch, "popdyn.models.multitask.onestep.decay_factor", scaled(1.01))
    verdict, measured, checks = measure("multitask.ratio_vs_d", tmp_path, r=[2], d=[50, 200, 800], draws=3)
    assert verdict == ("FAIL" if wrong else "PASS"), (measured, checks)
    assert (measured > 0.8 and not all(checks.values())) if wrong else measured < 0.2


def _universe_walsh(f):
    """Wrong theory: the leading-order map with the universe's statistics for every task set (B = 2^-r, K = 2^-r I)."""
    return lambda w_par, s, eta=1.0, tasks=None, lam_w="paper": f(w_par, s, eta, None, lam_w)


# wrong theory: the T = infinity Walsh map for finite T (the task statistics B_T, K_T, c_T ignored). It predicts
# the tiny T = infinity ratio (~1e-4) where the exact map has 0.01-0.7: relative error ~1, against 0.10 (true: 0.01).
@falsifies("multitask.ratio_vs_T")
@pytest.mark.parametrize("wrong", [False, True])
def test_ratio_vs_T_fails_the_infinite_T_walsh_map(wrong, monkeypatch, tmp_path):
    if wrong:
        perturb(monkeypatch, "popdyn.models.multitask.onestep.leading_order_map", _universe_walsh)
    verdict, measured, checks = measure("multitask.ratio_vs_T", tmp_path, d=[100], n_tasks=[100, 1000, 10000], draws=6)
    assert verdict == ("FAIL" if wrong else "PASS"), (measured, checks)
    assert (measured > 0.5) if wrong else (measured < 0.05)


# wrong theory: the same universe Walsh map for every task family (the paper's kappa regardless of the tasks'
# Walsh content). Degree >= 2 parities then get kappa_par where the exact map gives -kappa_par (no learning, only
# decay): an error of 2 kappa_par against the tolerance 0.05 (true: < 1e-2).
@falsifies("multitask.task_structure")
@pytest.mark.parametrize("wrong", [False, True])
def test_task_structure_fails_a_task_blind_theory(wrong, monkeypatch, tmp_path):
    memoise(monkeypatch, "popdyn.simulate")
    if wrong:
        perturb(monkeypatch, "popdyn.models.multitask.onestep.leading_order_map", _universe_walsh)
    verdict, measured, checks = measure("multitask.task_structure", tmp_path, r=[2], **_SIM)
    assert verdict == ("FAIL" if wrong else "PASS"), (measured, checks)
    assert (measured > 1.0) if wrong else (measured < 0.02)
