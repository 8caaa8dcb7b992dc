"""popdyn.models.domain_gen: the ERM-l1 optimum and the 2-D toy with a full A against brute force, Monte Carlo,
finite differences and direct probing of optimality; their properties; bad inputs."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

from popdyn._validate import InvalidParameterError
from popdyn.models import domain_gen as DG

S = DG.SpuriousFeatureModel


# ---- ERM-l1 ---------------------------------------------------------------------------------------------------

def _probe(F, x, h):
    """min over the 8 neighbours x + h (+-1, 0, +-1) of F minus F(x): >= 0 at a minimum (up to F's rounding)."""
    f0 = F(x)
    return min(F(x + h * np.array(d)) - f0 for d in ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, -1),
                                                      (1, -1), (-1, 1)))


@pytest.mark.slow
@pytest.mark.parametrize("r, d, g, lam", [(1, 2, 0.2, 0.01), (1, 2, 0.2, 0.1), (5, 50, 0.4, 0.005),
                                          (5, 50, 0.4, 0.2), (20, 300, 0.49, 0.05), (3, 9, -0.3, 0.002)])
def test_erm_l1_vs_brute_force_and_probing(r, d, g, lam):
    # Nelder-Mead on the penalised population loss (derivative-free: it does not use the kink) agrees to 1e-6
    # relative, and no neighbour at 1e-6 relative is lower (beyond the loss' 1e-13 relative rounding)
    m = S(r, d, g)
    a, b, rho = DG.erm_l1(m, lam)
    F = lambda x: DG.population_loss(x[0], x[1], m, lam, "l1")  # noqa: E731
    res = optimize.minimize(F, [1.1 * a + 0.01, 0.9 * b + 0.01 * np.sign(g)], method="Nelder-Mead",
                            options={"xatol": 1e-11, "fatol": 1e-16, "maxiter": 8000, "maxfev": 16000})
    assert F([a, b]) <= res.fun + 1e-13
    assert np.max(np.abs(res.x - [a, b])) <= 1e-6 * max(1.0, a)
    assert _probe(F, np.array([a, b]), 1e-6 * max(1.0, a)) >= -1e-13 * F([a, b])
    assert (b == 0) == (rho <= 1)


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 8), st.integers(0, 40), st.floats(-0.49, 0.49), st.floats(-3, -0.2))
def test_erm_l1_properties(r, m, g, log_lam):
    # beta = 0 exactly iff rho_1 <= 1; rho_1 >= 2 |gamma| below lam = 1/4 (|gamma| / (2 lam) above); rho_1 does not
    # depend on d; beta has the sign of gamma;
    # alpha > 0 below lam = 1/4, w = 0 at and above it
    lam = 10.0 ** log_lam
    a, b, rho = DG.erm_l1(S(r, r + m, g), lam)
    assert (b == 0) == (rho <= 1 or m == 0 or g == 0)
    assert rho >= (2 * abs(g) if lam < 0.25 else abs(g) / (2 * lam)) * (1 - 1e-12)
    assert rho == pytest.approx(DG.erm_l1(S(r, r + m + 7, g), lam)[2], rel=1e-14)
    assert b * g >= 0
    assert (a > 0) == (lam < 0.25)
    assert DG.erm_l1(S(r, r + m, g), 0.25 + 1e-9)[:2] == (0.0, 0.0)


def test_erm_l1_selects_where_l2_does_not_and_the_toy_crosses_rho_one():
    # at (5, 50, 0.4): lam = 0.2 gives rho_1 = 0.81 (beta = 0), lam = 0.005 rho_1 = 1.15 (beta = 0.0676); ERM-l2 keeps
    # beta > 0 at both; the 2-D toy's rho_1 crosses 1 between lam = 0.01 and 0.05 (4.8 at 1e-3, 0.43 at 0.2)
    m = S(5, 50, 0.4)
    assert DG.erm_l1(m, 0.2)[1] == 0 and DG.erm_l2(m, 0.2)[1] > 0.1
    a, b, rho = DG.erm_l1(m, 0.005)
    assert rho == pytest.approx(1.1454, abs=1e-4) and b == pytest.approx(0.06755, abs=1e-5)
    toy = S(1, 2, 0.2)
    assert DG.erm_l1(toy, 0.01)[2] > 1 > DG.erm_l1(toy, 0.05)[2]


def test_l1_penalty_and_gradient():
    m = S(3, 8, 0.3)
    a, b, lam = 0.4, -0.2, 0.07
    base = DG.population_loss(a, b, m)
    assert DG.population_loss(a, b, m, lam, "l1") == pytest.approx(base + lam * (3 * 0.4 + 5 * 0.2), rel=1e-15)
    h = 1e-6
    fd = [(DG.population_loss(a + h, b, m, lam, "l1") - DG.population_loss(a - h, b, m, lam, "l1")) / (2 * h),
          (DG.population_loss(a, b + h, m, lam, "l1") - DG.population_loss(a, b - h, m, lam, "l1")) / (2 * h)]
    assert np.allclose(DG.population_grad(a, b, m, lam, "l1"), fd, atol=1e-8)


def test_erm_l1_bad_input():
    with pytest.raises(InvalidParameterError, match="'lam'.*\\(0"):
        DG.erm_l1(S(2, 4, 0.2), 0.0)
    with pytest.raises(InvalidParameterError, match="'penalty'"):
        DG.population_loss(0.1, 0.1, S(2, 4, 0.2), 0.1, "l0")


# ---- the 2-D toy with a full A ----------------------------------------------------------------------------------

def _reduced_penalty(w, g, penalty):
    return float(w @ w) / 4 if penalty == "l2" else float(np.sqrt(w @ DG.toy2d_sigma(g) @ w / 2))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=4, max_size=4), st.floats(-0.49, 0.49),
       st.sampled_from(["l2", "nuclear"]))
def test_toy2d_full_penalty_reduction(entries, g, penalty):
    # min over A with A^T 1 = w of the penalty is attained at A = 1 w^T / 2: any A's penalty >= the reduced one
    A = np.array(entries).reshape(2, 2)
    w = A.sum(0)
    P = lambda M: DG.toy2d_full_loss(M, g, 1.0, penalty) - DG.toy2d_full_loss(M, g)  # noqa: E731
    assert P(A) >= _reduced_penalty(w, g, penalty) * (1 - 1e-12) - 1e-15
    assert P(np.outer(np.ones(2), w) / 2) == pytest.approx(_reduced_penalty(w, g, penalty), rel=1e-12, abs=1e-15)


def test_toy2d_full_loss_vs_monte_carlo_and_batch_svd():
    # loss: 5 SE of n = 1e6 samples (seed 0); the nuclear term: batch ||Z A^T||_* / sqrt(n) within 1 % at n = 2e5
    A, g = np.array([[0.7, -0.3], [0.4, 0.9]]), 0.2
    z = S(1, 2, g).sample(1_000_000, "id", rng=0)
    vals = np.logaddexp(0, -(z @ A.sum(0)))
    assert abs(DG.toy2d_full_loss(A, g) - vals.mean()) < 5 * vals.std() / np.sqrt(vals.size)
    zo = S(1, 2, g).sample(1_000_000, "ood", rng=1)
    vo = np.logaddexp(0, -(zo @ A.sum(0)))
    assert abs(DG.toy2d_full_loss(A, g, domain="ood") - vo.mean()) < 5 * vo.std() / np.sqrt(vo.size)
    nu = DG.toy2d_full_loss(A, g, 1.0, "nuclear") - DG.toy2d_full_loss(A, g)
    batch = np.linalg.svd(z[:200_000] @ A.T, compute_uv=False).sum() / np.sqrt(200_000)
    assert nu == pytest.approx(batch, rel=0.01)
    assert np.allclose(DG.toy2d_sigma(g), z.T @ z / z.shape[0], atol=5 * 0.5 / 1000)


@pytest.mark.parametrize("penalty", [None, "l2", "nuclear"])
def test_toy2d_full_grad_vs_finite_differences(penalty):
    A, g, lam, h = np.array([[0.7, -0.3], [0.4, 0.9]]), 0.3, 0.2, 1e-6
    G = DG.toy2d_full_grad(A, g, lam, penalty)
    for i in range(2):
        for j in range(2):
            E = np.zeros((2, 2))
            E[i, j] = h
            fd = (DG.toy2d_full_loss(A + E, g, lam, penalty) - DG.toy2d_full_loss(A - E, g, lam, penalty)) / (2 * h)
            assert G[i, j] == pytest.approx(fd, abs=1e-8)


@pytest.mark.parametrize("g, lam, penalty", [(0.2, 0.01, "l2"), (0.2, 0.3, "l2"), (0.2, 0.01, "nuclear"),
                                             (0.2, 0.1, "nuclear"), (0.2, 0.5, "nuclear"), (-0.35, 0.05, "nuclear")])
def test_toy2d_full_optimum_by_probing(g, lam, penalty):
    # A* = 1 w*^T / 2 is a minimum over all of A: no step of 1e-5 along 40 seeded random directions lowers the
    # objective (the nuclear one has a kink at A*, so a subgradient test by probing, not a gradient)
    A, w = DG.toy2d_full_optimum(g, lam, penalty)
    assert np.allclose(A.sum(0), w) and np.allclose(A[0], A[1])
    F = lambda M: DG.toy2d_full_loss(M, g, lam, penalty)  # noqa: E731
    f0 = F(A)
    for B in np.random.default_rng(0).standard_normal((40, 2, 2)):
        assert F(A + 1e-5 * B) >= f0 - 1e-13 * abs(f0)
    if penalty == "l2":  # the diagonal toy's ERM-l2 at lam / 2
        assert np.allclose(w, DG.erm_l2(S(1, 2, g), lam / 2), rtol=1e-14)


def test_toy2d_full_nu_threshold_and_limits():
    # w* = 0 iff lam >= lam_0; just below lam_0 the NU direction is Sigma^{-1} mu (c = gamma / (2 - 6 gamma^2));
    # c_NU < c_l2 <= 2 gamma at every lam; population NU OOD accuracy >= 0.96 on the paper's toy (gamma = 0.2)
    g = 0.2
    lam0 = DG.toy2d_nu_threshold(g)
    mu = np.array([0.5, g])
    assert lam0 == pytest.approx(np.sqrt(mu @ np.linalg.solve(DG.toy2d_sigma(g), mu) / 2), rel=1e-14)
    assert np.all(DG.toy2d_full_optimum(g, lam0 * (1 + 1e-9), "nuclear")[1] == 0)
    w = DG.toy2d_full_optimum(g, lam0 * (1 - 1e-4), "nuclear")[1]
    assert 0 < w[0] < 1e-2 and w[1] / w[0] == pytest.approx(g / (2 - 6 * g * g), rel=1e-3)
    for lam in (1e-3, 0.01, 0.1, 0.3, 0.6):
        cn = (lambda v: v[1] / v[0])(DG.toy2d_full_optimum(g, lam, "nuclear")[1])
        cl = (lambda v: v[1] / v[0])(DG.toy2d_full_optimum(g, lam, "l2")[1])
        assert 0 < cn < cl < 2 * g
        assert DG.toy2d_accuracy(cn, g)[1] >= 0.96


def test_toy2d_full_bad_input():
    with pytest.raises(InvalidParameterError, match="'A'"):
        DG.toy2d_full_loss(np.ones(3), 0.2)
    with pytest.raises(InvalidParameterError, match="'gamma'"):
        DG.toy2d_full_optimum(0.5, 0.1)
    with pytest.raises(InvalidParameterError, match="'penalty'"):
        DG.toy2d_full_optimum(0.2, 0.1, "l1")
    with pytest.raises(InvalidParameterError, match="'lam'"):
        DG.toy2d_full_grad(np.eye(2), 0.2, -1.0, "l2")
