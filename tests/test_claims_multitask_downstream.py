"""Falsification tests of the multi-task downstream claims (E6, E7): each passes with popdyn's theory and FAILS
with a wrong one injected where the claim looks it up. The comment above each test names the wrong theory and the
margin by which it must fail.
"""
import math

import pytest

from .falsify import falsifies, measure, perturb, run_claim

# E6 at a reduced size: two d (the distance must decrease with d), one n >= 4 2^r
_E6 = {"d": [30, 100], "n": [50], "m_bar": 50, "m_hat": 400, "n_test": 1000}


# null: no feature learning (the 'random features' of Thm 4.6: the same embedding on the initial first layer W0),
# measured inside the claim on the same draw. The parity stays at chance: test error ~0.5 against the tolerance 0.02
# (the torch-pretrained features: 0.000 at these sizes), so the runner's PASS rejects the null.
@falsifies("multitask.downstream_probe")
def test_downstream_probe_rejects_no_feature_learning(tmp_path):
    verdict, res = run_claim("multitask.downstream_probe", tmp_path, **_E6)
    assert verdict == "PASS", (res.measured, res.checks, res.nulls)
    assert res.measured <= 0.02 and res.nulls["no_feature_learning"] > 0.3


# wrong theory: the paper's kappa = eta^2 2^-r-2 (Lemma A.10, eq. (75)) in the rescaling alpha = alpha_hat/kappa. The
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
