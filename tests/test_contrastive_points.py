"""popdyn.models.contrastive.points: the XOR counterexample of App. F.1.1 against independent computations."""
import math

import numpy as np
import pytest
from scipy.optimize import minimize

from popdyn._validate import InvalidParameterError
from popdyn.models import contrastive as c


def ell(t):
    """Scalar logistic loss log(1 + e^{-t}) by math.log1p (independent of the package's numpy version)."""
    return math.log1p(math.exp(-t))


XOR_LOSS = (ell(0) + ell(2) + 2 * ell(1)) / 4


def _angle_loss(theta):
    """The uniform-law loss of four unit vectors at angles theta, written out pair by pair in math."""
    return sum(ell(1 - math.cos(a - b)) for a in theta for b in theta) / 16


def test_the_xor_map_has_the_papers_value():
    _, _, H = c.xor_counterexample()
    assert round(XOR_LOSS, 6) == 0.361650
    assert c.point_contrastive_loss(H) == pytest.approx(XOR_LOSS, abs=1e-15)  # 1e-15: 16 float64 terms of O(1)
    assert c.point_contrastive_loss(H) == pytest.approx(_angle_loss([math.pi, 0, -math.pi / 2, math.pi / 2]),
                                                        abs=1e-15)


@pytest.mark.parametrize("q", [0.0, 0.1, 0.3, 0.5, 0.8, 1.0])
def test_linear_maps_have_the_convex_closed_form(q):
    # h(z) = (sqrt q z_1, sqrt(1 - q) z_2): pairs differing in z_1 only give ell(2q), in z_2 only ell(2(1 - q)), in both
    # ell(2), equal ell(0): the loss (ell(0) + ell(2) + ell(2q) + ell(2 - 2q)) / 4, convex in q, least at q = 1/2
    points, _, _ = c.xor_counterexample()
    H = points * np.sqrt([q, 1 - q])
    ref = (ell(0) + ell(2) + ell(2 * q) + ell(2 - 2 * q)) / 4
    assert c.point_contrastive_loss(H) == pytest.approx(ref, abs=1e-15)
    assert ref >= XOR_LOSS - 1e-15
    if q == 0.5:
        assert c.point_contrastive_loss(c.xor_counterexample("linear")[2]) == pytest.approx(XOR_LOSS, abs=1e-15)
    if q == 1.0:
        assert c.point_contrastive_loss(c.xor_counterexample("label")[2]) == pytest.approx(ref, abs=1e-15)


def test_the_global_minimum_by_a_shifted_grid_and_local_refinement():
    # rotation fixes theta_0 = 0; a 96-point grid in (theta_1, theta_2, theta_3), shifted by 0.013 rad so that the
    # square is not on it; every partial derivative is <= 3/16 (|ell'| <= 1/2 at t >= 0), so the grid minimum is
    # within 9 h / 32 + (the shift's distance) of the true one; Nelder-Mead from the best node lands on XOR_LOSS
    n = 96
    g = 2 * np.pi * np.arange(n) / n + 0.013
    t1, t2, t3 = np.meshgrid(g, g, g, indexing="ij")
    pairs = [(0, t1), (0, t2), (0, t3), (t1, t2), (t1, t3), (t2, t3)]
    L = (4 * ell(0) + 2 * sum(np.logaddexp(0, -(1 - np.cos(a - b))) for a, b in pairs)) / 16
    assert L.min() >= XOR_LOSS - 1e-15          # no configuration on the grid is below the XOR map
    assert L.min() <= XOR_LOSS + 9 * (2 * np.pi / n) / 32 + 3 * 3 / 16 * 0.013
    i = np.unravel_index(np.argmin(L), L.shape)
    res = minimize(lambda th: _angle_loss([0.0, *th]), [g[j] for j in i], method="Nelder-Mead",
                   options={"xatol": 1e-10, "fatol": 1e-15, "maxiter": 4000})
    assert res.fun == pytest.approx(XOR_LOSS, abs=1e-13)  # 1e-13: Nelder-Mead to fatol 1e-15 on a smooth minimum


def test_optimal_point_representation_finds_four_equally_spaced_points():
    values, H = c.optimal_point_representation(4, starts=40, seed=3)
    assert values[0] == pytest.approx(XOR_LOSS, abs=1e-14)  # 1e-14: BFGS to gradient 1e-11, quadratic convergence
    assert np.all(np.diff(values) >= 0)
    G = H[0] @ H[0].T                                        # a square: Gram entries 1 (self), -1 (opposite), 0
    assert np.sort(np.abs(G).ravel()).round(6).tolist() == [0.0] * 8 + [1.0] * 8
    assert np.allclose(np.linalg.norm(H, axis=-1), 1.0, atol=1e-12)


def test_optimal_point_representation_two_points_any_norm():
    # two points: antipodal at norm B, loss (ell(0) + ell(2 B^2)) / 2, in any dimension
    for norm, dim in ((1.0, 1), (0.7, 3)):
        values, H = c.optimal_point_representation(2, dim=dim, norm=norm, starts=5)
        assert values[0] == pytest.approx((ell(0) + ell(2 * norm**2)) / 2, abs=1e-14)
        assert float(H[0, 0] @ H[0, 1]) == pytest.approx(-norm**2, abs=1e-8)  # 1e-8: sqrt of the loss precision


def test_the_uniform_law_is_needed_for_the_xor_map_to_be_optimal():
    # with z_R not uniform the optimum moves off the square: measured 0.362728 against the XOR map's 0.363585 at
    # p = (.3, .3, .2, .2); the gap (8.6e-4) is 1e11 times the optimiser's precision
    p = np.array([0.3, 0.3, 0.2, 0.2])
    values, _ = c.optimal_point_representation(4, p=p, starts=30)
    assert c.point_contrastive_loss(c.xor_counterexample()[2], p) - values[0] > 5e-4


def test_linear_loss_is_the_pca_identity():
    # Thm 7.1 with U empty: the linear-loss contrastive loss of a table equals pca_identity's enumeration (nU = 1)
    rng = np.random.default_rng(0)
    H, p = rng.standard_normal((5, 3)), rng.dirichlet(np.ones(5))
    lhs, rhs = c.pca_identity(H[:, None, :], p, np.ones(1))
    assert c.point_contrastive_loss(H, p, loss="linear") == pytest.approx(lhs, abs=1e-14)
    assert lhs == pytest.approx(rhs, abs=1e-14)


def test_linear_probe_errors():
    points, labels, H = c.xor_counterexample()
    # on the XOR map sum_a (u.h_a - y_a)^2 / 4 = 1 + |u|^2 / 2 (each class on an antipodal pair): minimum 1 at u = 0,
    # with or without an intercept (both classes have mean 0)
    rng = np.random.default_rng(1)
    for u in rng.standard_normal((5, 2)):
        assert np.mean((H @ u - labels) ** 2) == pytest.approx(1 + u @ u / 2, abs=1e-14)
    assert c.linear_probe_error(H, labels) == pytest.approx(1.0, abs=1e-14)
    assert c.linear_probe_error(H, labels, intercept=True) == pytest.approx(1.0, abs=1e-14)
    for name in ("linear", "label"):
        assert c.linear_probe_error(c.xor_counterexample(name)[2], labels) == pytest.approx(0.0, abs=1e-14)
    w = np.array([0.1, 0.2, 0.3, 0.4])   # weighted: the trivial probe's error E y^2 = 1 still, as y^2 = 1
    assert c.linear_probe_error(H, labels, w) <= 1.0 + 1e-14


@pytest.mark.parametrize("call,name", [
    (lambda: c.point_contrastive_loss(np.eye(2), p=[0.5, 0.6]), "p"),
    (lambda: c.point_contrastive_loss(np.eye(2), loss="hinge"), "loss"),
    (lambda: c.point_contrastive_loss(np.ones(3)), "H"),
    (lambda: c.optimal_point_representation(0), "n_points"),
    (lambda: c.optimal_point_representation(4, norm=0.0), "norm"),
    (lambda: c.optimal_point_representation(4, starts=0), "starts"),
    (lambda: c.linear_probe_error(np.eye(3), np.ones(2)), "y"),
    (lambda: c.xor_counterexample("parity"), "representation")])
def test_bad_inputs_name_the_parameter(call, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        call()
