"""Multi-index polynomial: Stein/Hermite closed forms vs quadrature, Monte Carlo, references.

Monte Carlo band: max |z| < 5 over <= 50 coordinates. Quadrature oracle: adaptive quad along w_hat (from t to
infinity) times a tensor Gauss-Hermite rule, exact for the polynomial, over the rest of span(U, w_hat).
"""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st
from scipy import integrate

from popdyn._validate import InvalidParameterError
from popdyn.hermite import gauss_hermite
from popdyn.models.gradient_features import MultiIndexPolynomial

Z = 5.0
PHI0 = 1 / math.sqrt(2 * math.pi)
TERMS = {(0, 0): 0.3, (1, 0): 0.5, (0, 1): -0.2, (2, 0): 0.7, (1, 1): 0.4, (0, 2): -0.3, (3, 0): 0.2,
         (2, 1): -0.3, (4, 0): 0.25, (1, 3): 0.2, (0, 5): 0.1}


def _U(d, r, seed):
    return np.linalg.qr(np.random.default_rng(seed).normal(size=(d, r)))[0].T


def _quadrature_G(model, w, b):
    """E[y x 1[w.x > b]] = B^T int_t^inf phi(s1) E_rest[y(B^T s) s] ds1, B = orthonormal basis (w_hat first)."""
    what = w / np.linalg.norm(w)
    B = np.linalg.qr(np.vstack([what, model.U]).T)[0].T                 # (q, d), B[0] = +-w_hat
    B[0] = what
    q = B.shape[0]
    x, wt = gauss_hermite(8)
    grid = np.stack(np.meshgrid(*([x] * (q - 1)), indexing="ij"), -1).reshape(-1, q - 1)
    weights = np.prod(np.stack(np.meshgrid(*([wt] * (q - 1)), indexing="ij"), -1).reshape(-1, q - 1), axis=1)

    def inner(s1, i):
        S = np.hstack([np.full((len(grid), 1), s1), grid])
        y = model.labels_of(S @ B)
        return PHI0 * math.exp(-s1 * s1 / 2) * np.sum(weights * y * S[:, i])

    t = b / np.linalg.norm(w)
    coords = [integrate.quad(inner, t, np.inf, args=(i,), epsabs=1e-13, epsrel=1e-12, limit=200)[0] for i in range(q)]
    return np.array(coords) @ B


@pytest.mark.parametrize("preprocess", [False, True])
@pytest.mark.parametrize("b_over", [0.0, 0.8, -1.3])
def test_G_vs_quadrature(preprocess, b_over):
    model = MultiIndexPolynomial(_U(5, 2, 0), TERMS, preprocess=preprocess)
    w = np.random.default_rng(1).normal(size=5)
    b = b_over * np.linalg.norm(w)
    # 1e-10: quad's epsabs 1e-13 times the polynomial's size, with margin
    assert np.allclose(model.simplified_gradient(w[None], b)[0], _quadrature_G(model, w, b), rtol=0, atol=1e-10)


def test_G_and_A_vs_monte_carlo():
    model = MultiIndexPolynomial(_U(6, 2, 2), TERMS)
    rng = np.random.default_rng(3)
    W = rng.normal(size=(4, 6))
    b = np.array([0.0, 0.5, -0.7, 1.2]) * np.linalg.norm(W, axis=1)
    G_mc, se = model.simplified_gradient_mc(W, b, 400_000, 4)
    assert np.max(np.abs(G_mc - model.simplified_gradient(W, b)) / se) < Z
    A_mc, ase = model.A_mc(W, b, 400_000, 5)
    assert np.max(np.abs(A_mc - model.A(W, b)) / ase) < Z


def test_spec_A5_degree_two_and_four():
    """Reference cases: degree 2 gives phi(0)(H w - (w.Hw) w / 2); y = He_4(u.x) gives phi(0)(-4c^3 u + 3c^4 w)."""
    U = _U(12, 2, 4)
    M = np.array([[2.0, 0.7], [0.7, -1.0]])
    H = U.T @ M @ U
    # y = (x^T H x - tr H)/2 in the orthonormal basis h_2 = (z^2 - 1)/sqrt 2, h_1 h_1 = z1 z2
    model = MultiIndexPolynomial(U, {(2, 0): M[0, 0] / math.sqrt(2), (1, 1): M[0, 1], (0, 2): M[1, 1] / math.sqrt(2)})
    assert np.allclose(model.hessian(), H, atol=1e-14)  # 1e-14: round-off
    w = np.random.default_rng(5).normal(size=(3, 12))
    wh = w / np.linalg.norm(w, axis=1, keepdims=True)
    pred = PHI0 * (wh @ H - 0.5 * np.einsum("mi,ij,mj->m", wh, H, wh)[:, None] * wh)
    assert np.allclose(model.first_step_direction(w), pred, atol=1e-15)  # 1e-15: same formula, round-off
    single = MultiIndexPolynomial(U[:1], {(4,): math.sqrt(24.0)})     # He_4 = sqrt(24) h_4
    c = wh @ U[0]
    assert np.allclose(single.first_step_direction(w), PHI0 * (-4 * c[:, None] ** 3 * U[0] + 3 * c[:, None] ** 4 * wh),
                       atol=1e-15)  # 1e-15: same formula, round-off


def test_target_and_preprocessing():
    model = MultiIndexPolynomial(_U(4, 2, 6), TERMS, preprocess=True)
    X = np.random.default_rng(7).normal(size=(5, 4))
    z = X @ model.U.T
    h = lambda k, t: {0: 1.0, 1: t, 2: (t * t - 1) / math.sqrt(2), 3: (t ** 3 - 3 * t) / math.sqrt(6),
                      4: (t ** 4 - 6 * t * t + 3) / math.sqrt(24),
                      5: (t ** 5 - 10 * t ** 3 + 15 * t) / math.sqrt(120)}[k]
    explicit = sum(c * h(a[0], z[:, 0]) * h(a[1], z[:, 1]) for a, c in TERMS.items())
    # 1e-13: Hermite recurrence vs explicit polynomials, round-off
    assert np.allclose(model.target(X), explicit, atol=1e-13)
    assert model.rho == 0.3 and np.allclose(model.beta, 0.5 * model.U[0] - 0.2 * model.U[1])
    assert np.allclose(model.labels_of(X), explicit - 0.3 - X @ model.beta, atol=1e-13)  # 1e-13: as above
    Xs, y = model.sample(200_000, 8)
    yx = y[:, None] * Xs
    assert abs(y.mean()) < Z * y.std() / math.sqrt(len(y))
    assert np.max(np.abs(yx.mean(0)) / (yx.std(0) / math.sqrt(len(y)))) < Z
    assert np.all(model.E_yx() == 0)
    assert model.second_moment == pytest.approx(sum(c * c for c in TERMS.values()))
    dev2 = (y - y.mean()) ** 2                                         # Var y = sum of the degree >= 2 c_hat^2
    var_y = model.second_moment - 0.3 ** 2 - 0.5 ** 2 - 0.2 ** 2
    assert abs(dev2.mean() - var_y) < Z * dev2.std() / math.sqrt(len(y))


def test_hessian_vs_stein_monte_carlo_and_kappa():
    model = MultiIndexPolynomial(_U(5, 2, 9), TERMS)
    X, y = model.sample(400_000, 10)
    S = np.einsum("n,ni,nj->nij", y, X, X) - y[:, None, None] * np.eye(5)    # E[y (x x^T - I)] = E grad^2 y
    se = S.std(0) / math.sqrt(len(y))
    assert np.max(np.abs(S.mean(0) - model.hessian()) / se) < Z
    s = np.linalg.svd(model.hessian(), compute_uv=False)[:2]
    assert model.kappa == pytest.approx(1 / s.min() / math.sqrt(2))
    assert MultiIndexPolynomial(_U(5, 2, 9), {(2, 0): 1.0}).kappa == math.inf      # rank H = 1 < r


def test_bounds_chi_mean():
    for d in (1, 2, 7, 400):
        Bx, Bx1, Bx2 = MultiIndexPolynomial(_U(d, 1, 0), {(2,): 1.0}).bounds()
        X = np.random.default_rng(d).normal(size=(100_000, d))
        nrm = np.linalg.norm(X, axis=1)
        assert Bx == math.inf and Bx2 == d
        assert abs(nrm.mean() - Bx1) < Z * nrm.std() / math.sqrt(len(nrm))
    assert MultiIndexPolynomial(_U(1, 1, 0), {(1,): 1.0}).bounds().Bx1 == pytest.approx(math.sqrt(2 / math.pi))


terms_st = st.dictionaries(st.tuples(st.integers(0, 4), st.integers(0, 4)), st.floats(-1, 1), min_size=1, max_size=6)


@given(terms_st, st.integers(0, 10_000), st.floats(0.1, 10))
def test_depends_only_on_w_hat_and_complement(terms, seed, c):
    model = MultiIndexPolynomial(_U(5, 2, seed % 13), terms)
    w = np.random.default_rng(seed).normal(size=(1, 5))
    G = model.first_step_direction(w)
    assert np.allclose(model.first_step_direction(c * w), G, atol=1e-12)  # 1e-12: round-off (G depends on w_hat only)
    # 1e-12: round-off
    assert np.allclose(model.simplified_gradient(c * w, 0.4 * c), model.simplified_gradient(w, 0.4), atol=1e-12)
    assert np.allclose(G + model.simplified_gradient(-w, 0.0), model.E_yx(), atol=1e-12)  # 1e-12: round-off


@given(terms_st, terms_st, st.integers(0, 10_000))
def test_linear_in_labels_and_odd_degrees_vanish(t1, t2, seed):
    U = _U(5, 2, seed % 11)
    w = np.random.default_rng(seed).normal(size=(2, 5))
    merged = {k: t1.get(k, 0.0) + t2.get(k, 0.0) for k in set(t1) | set(t2)}
    G = lambda t: MultiIndexPolynomial(U, t).simplified_gradient(w, 0.3)
    assert np.allclose(G(merged), G(t1) + G(t2), atol=1e-12)  # 1e-12: round-off (G linear in the coefficients)
    odd = {k: v for k, v in t1.items() if sum(k) in (3, 5)} or {(2, 1): 1.0}
    # 1e-14: round-off; the odd-degree terms vanish exactly
    assert np.allclose(MultiIndexPolynomial(U, odd).first_step_direction(w), 0.0, atol=1e-14)
    assert np.abs(MultiIndexPolynomial(U, {(2, 1): 1.0}).simplified_gradient(w, 0.5)).max() > 1e-3   # b != 0: not 0


@given(terms_st, st.integers(0, 10_000))
def test_rotation_equivariance_and_gradient_of_A(terms, seed):
    rng = np.random.default_rng(seed)
    U = _U(4, 2, seed % 17)
    R = np.linalg.qr(rng.normal(size=(4, 4)))[0]
    w = rng.normal(size=(1, 4))
    base, rot = MultiIndexPolynomial(U, terms), MultiIndexPolynomial(U @ R.T, terms)
    # 1e-12: round-off of a rotation
    assert np.allclose(rot.simplified_gradient(w @ R.T, 0.2), base.simplified_gradient(w, 0.2) @ R.T, atol=1e-12)
    h = 1e-6
    E = np.eye(4) * h
    fd = (base.A(w[0] + E, 0.2) - base.A(w[0] - E, 0.2)) / (2 * h)
    scale = 1 + sum(abs(v) for v in terms.values()) * 50
    # 1e-7: central differences, h = 1e-6, scaled by the coefficients' size
    assert np.allclose(fd, base.simplified_gradient(w, 0.2)[0], atol=1e-7 * scale)


def test_degree_two_in_span():
    model = MultiIndexPolynomial(_U(6, 2, 1), {(2, 0): 1.0, (1, 1): -0.5, (0, 2): 0.3})
    w = np.random.default_rng(2).normal(size=6)
    wh = w / np.linalg.norm(w)
    G = model.first_step_direction(w[None])[0]
    B = np.linalg.qr(np.stack([model.hessian() @ wh, wh], 1))[0]
    assert np.linalg.norm(G - B @ (B.T @ G)) < 1e-14  # 1e-14: round-off


@pytest.mark.parametrize("U,terms,name", [
    (np.ones((1, 3)), {(2,): 1.0}, "U"), (np.eye(3)[:2], {(2,): 1.0}, "terms"),
    (np.eye(3)[:1], {(-1,): 1.0}, "terms"), (np.eye(3)[:1], {}, "terms"), (np.eye(3)[:1], {(1,): np.nan}, "terms")])
def test_bad_input(U, terms, name):
    with pytest.raises(InvalidParameterError, match=repr(name)):
        MultiIndexPolynomial(U, terms)
