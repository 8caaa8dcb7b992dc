"""Falsification tests of the domain-generalisation claims: each passes with popdyn's theory and FAILS with a wrong
one. Trainings are memoised (``falsify.memoise``): a wrong theory changes only the theory side, so both runs of a test
share one simulation."""

import numpy as np
import pytest

from popdyn.models import domain_gen as DG

from .falsify import falsifies, measure, memoise, perturb, run_claim

pytest.importorskip("torch")


def _key(x):
    return repr(x) if isinstance(x, (DG.Problem, int, float, str, type(None))) else \
        repr(np.asarray(x).tolist())


# wrong theory: the ERM-l2 optimum with beta 3 % too large (a perturbed alpha/beta, i.e. a wrong stationarity
# ratio). GD sits within 0.4 % of the true optimum, so the gap is ~3 % against the tolerance 1.5 %. The true theory
# passes with both nulls (the linearised optimum, beta = 0) rejected.
@falsifies("domain_gen.erm_l2_finite_sample")
@pytest.mark.parametrize("wrong", [False, True])
def test_erm_l2_finite_sample_fails_a_beta_3_percent_off(wrong, monkeypatch, tmp_path):
    memoise(monkeypatch, "popdyn.simulate", key=_key)
    if wrong:
        perturb(monkeypatch, "popdyn.models.domain_gen.predict.erm_l2", lambda f: lambda *a, **k: (f(*a, **k)[0],
                                                                                                  1.03 * f(*a, **k)[1]))
    verdict, res = run_claim("domain_gen.erm_l2_finite_sample", tmp_path, lam=[0.3], seeds=1, n_test=1000)
    assert verdict == ("FAIL" if wrong else "PASS"), (res.measured, res.nulls)
    assert (res.measured > 0.02) if wrong else (res.measured < 0.01 and min(res.nulls.values()) > 0.5)


# wrong theory: the normal approximation in place of the exact accuracy (docs/domain_gen.md: "not exact"). It is off by
# up to 6.3e-3 at the quick cases, ~13 SE of the n = 4e5 Monte Carlo; the exact value is within ~1 SE.
@falsifies("domain_gen.accuracy")
@pytest.mark.parametrize("wrong", [False, True])
def test_accuracy_fails_the_normal_approximation(wrong, monkeypatch, tmp_path):
    if wrong:
        perturb(monkeypatch, "popdyn.models.domain_gen.accuracy",
                lambda f: lambda a, b, m, dom, method="exact", log10=False:
                f(a, b, m, dom, "normal" if method == "exact" else method, log10))
    verdict, measured, _ = measure("domain_gen.accuracy", tmp_path)
    assert verdict == ("FAIL" if wrong else "PASS"), measured
    assert (measured > 8) if wrong else (measured < 4)


# wrong theories: (swapped) the 2-D toy's closed form with the ID and OOD mixture weights swapped (gamma -> -gamma):
# at c ~ 0.17-0.38 the two differ by 2 gamma (1 - q(c)) = 0.03-0.07, hundreds of SE at 1e5 test samples, so the
# accuracy check fails; (half_c) the population ERM-l2 optimum with beta halved (c 50 % off against the
# tolerance 25 %; true: ~10 %). The true theory passes with the invariant null (c = 0, 100 % off) rejected.
@falsifies("domain_gen.toy2d")
@pytest.mark.parametrize("wrong", [None, "swapped", "half_c"])
def test_toy2d_fails_swapped_domains_or_a_wrong_ratio(wrong, monkeypatch, tmp_path):
    memoise(monkeypatch, "popdyn.simulate", key=_key)
    if wrong == "swapped":
        perturb(monkeypatch, "popdyn.models.domain_gen.toy2d_accuracy", lambda f: lambda c, g: f(c, -g))
    if wrong == "half_c":
        perturb(monkeypatch, "popdyn.models.domain_gen.predict.erm_l2", lambda f: lambda *a, **k: (f(*a, **k)[0],
                                                                                                  0.5 * f(*a, **k)[1]))
    verdict, res = run_claim("domain_gen.toy2d", tmp_path, lam=[1.0, 0.1], steps=2000, seeds=1)
    assert verdict == ("PASS" if wrong is None else "FAIL"), (res.measured, res.checks, res.nulls)
    if wrong is None:
        assert res.measured < 0.2 and res.nulls["invariant"] > 0.9
    elif wrong == "swapped":
        assert not res.checks["test accuracies within 5 SE of (6-i) at the trained c"]
    else:
        assert res.measured > 0.4


# wrong theory: the paper's unnormalised penalty (docs/domain_gen.md): its code adds lambda * sum(svd(features)), i.e. a
# population weight lambda sqrt(n); at n = 4096, lambda = 0.1 that is 6.4 > r/(4 c_R) = 0.93, so alpha_NU = 0 and the
# relative gap is 100 %, against the tolerance 5 % and the true theory's 0.2 %.
@falsifies("domain_gen.nu_finite_sample")
@pytest.mark.parametrize("wrong", [False, True])
def test_nu_finite_sample_fails_the_unnormalised_penalty(wrong, monkeypatch, tmp_path):
    memoise(monkeypatch, "popdyn.simulate", key=_key)
    if wrong:
        perturb(monkeypatch, "popdyn.models.domain_gen.predict.erm_nuclear",
                lambda f: lambda m, lam: f(m, lam * np.sqrt(4096)))
    verdict, measured, _ = measure("domain_gen.nu_finite_sample", tmp_path, steps=200)
    assert verdict == ("FAIL" if wrong else "PASS"), measured
    assert (measured > 0.5) if wrong else (measured < 0.02)


# wrong theory: the paper's printed stable rank ||M||_F^2 / ||M||_2 of M = Sigma^{1/2} D_w, i.e. the standard
# one times ||M||_2 = sqrt(tr(D_w Sigma D_w) / srank). At lambda = 0.3, ||M||_2 = 0.21 (l2) and 0.27 (NU), so it is
# 0.60 and 0.35 against the trained 2.84 and 1.31: a relative gap of 3.8 (|2.84 - 0.60| / 0.60) against the
# tolerance 0.05 and the true theory's 0.004.
@pytest.mark.slow
@falsifies("domain_gen.lambda_path")
@pytest.mark.parametrize("wrong", [False, True])
def test_lambda_path_fails_the_printed_stable_rank(wrong, monkeypatch, tmp_path):
    memoise(monkeypatch, "popdyn.simulate", key=_key)
    if wrong:
        perturb(monkeypatch, "popdyn.models.domain_gen.predict.feature_stable_rank",
                lambda f: lambda a, b, m: np.sqrt(f(a, b, m) * (m.r * a ** 2 + m.m * b ** 2) / 3))
    verdict, measured, _ = measure("domain_gen.lambda_path", tmp_path, lam=[0.3])
    assert verdict == ("FAIL" if wrong else "PASS"), measured
    assert (measured > 0.5) if wrong else (measured < 0.02)


# wrong theory: weight decay in place of l1 (the skeptic's closest theory): at lambda = 0.2 the ERM-l2 optimum has
# beta = 0.127 where the trained (and population) beta = 0, a 100 % gap against the tolerance 45 %; the true
# theory's gap is ~3-14 %.
@falsifies("domain_gen.l1_finite_sample")
@pytest.mark.parametrize("wrong", [False, True])
def test_l1_finite_sample_fails_weight_decay_in_place_of_l1(wrong, monkeypatch, tmp_path):
    memoise(monkeypatch, "popdyn.simulate", key=_key)
    if wrong:
        perturb(monkeypatch, "popdyn.models.domain_gen.predict.erm_l1",
                lambda f: lambda m, lam: (*DG.erm_l2(m, lam), f(m, lam)[2]))
    verdict, res = run_claim("domain_gen.l1_finite_sample", tmp_path, seeds=1)
    assert verdict == ("FAIL" if wrong else "PASS"), (res.measured, res.nulls)
    assert (res.measured > 0.9) if wrong else (res.measured < 0.2)


# wrong theory: the diagonal toy's reduction applied to the full A (penalty lam N_diag instead of the Mahalanobis
# norm): erm_nuclear with r = 1, d = 2 gives c = 0 at lambda = 0.3, 0.1 (rho <= 1), a 100 % gap against the trained
# c ~ 0.11 and the tolerance 35 %; the true theory is within ~5 %.
@pytest.mark.slow
@falsifies("domain_gen.toy2d_full")
@pytest.mark.parametrize("wrong", [False, True])
def test_toy2d_full_fails_the_diagonal_nu(wrong, monkeypatch, tmp_path):
    memoise(monkeypatch, "popdyn.sim.domain_gen.train_toy2d_full", key=_key)
    if wrong:
        def diag(f):
            def g(gamma, lam, penalty="l2"):
                if penalty == "l2":
                    return f(gamma, lam, penalty)
                a, b, _ = DG.erm_nuclear(DG.Problem(1, 2, gamma), lam)
                return np.outer(np.ones(2), [a, b + 1e-300]) / 2, np.array([a, b + 1e-300])
            return g
        perturb(monkeypatch, "popdyn.models.domain_gen.toy2d_full_optimum", diag)
    verdict, res = run_claim("domain_gen.toy2d_full", tmp_path, seeds=1)
    assert verdict == ("FAIL" if wrong else "PASS"), (res.measured, res.nulls)
    assert (res.measured > 0.9) if wrong else (res.measured < 0.15)
