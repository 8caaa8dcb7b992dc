"""popdyn.models.contrastive.gen_chi2_loss and the exact general-W loss: invariants (Hypothesis), the two-cluster
Laguerre path where both apply, Monte Carlo, bad inputs. The accuracy against mpmath is in
tests/test_accuracy_contrastive.py."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import ortho_group

from popdyn._validate import InvalidParameterError
from popdyn.models import contrastive as c

G = c.gen_chi2_loss
ELL = c.LOSSES["logistic"][0]
TOL = 1e-10  # the declared relative accuracy of gen_chi2_loss

_w = st.one_of(st.floats(-30, 30), st.floats(-3, 3).map(lambda e: 10.0 ** e),
               st.floats(-3, 3).map(lambda e: -(10.0 ** e)))
_weights = st.lists(_w, min_size=1, max_size=6)
_dofs = st.integers(1, 40)


@settings(max_examples=40, deadline=None)
@given(_weights, st.data())
def test_reflection_identity(lam, data):
    """ell(x) - ell(-x) = -x, so E ell(Q) - E ell(-Q) = -E Q = -sum m lam (ties the negative-weight strip to the
    positive one; the two sides use different contours unless every weight is small)."""
    dof = data.draw(st.lists(_dofs, min_size=len(lam), max_size=len(lam)))
    a, b = G(lam, dof), G(-np.asarray(lam), dof)
    assert abs((a - b) + np.dot(dof, lam)) <= 2 * TOL * max(a, b)


@settings(max_examples=40, deadline=None)
@given(_weights, st.data())
def test_permutation_and_splitting_of_multiplicities(lam, data):
    """Q is a sum of independent terms: the order of the weights and a split of chi^2_m into chi^2_{m1} + chi^2_{m2}
    of the same weight do not change it."""
    dof = data.draw(st.lists(st.integers(2, 40), min_size=len(lam), max_size=len(lam)))
    ref = G(lam, dof)
    perm = data.draw(st.permutations(range(len(lam))))
    assert G(np.asarray(lam)[perm], np.asarray(dof)[perm]) == pytest.approx(ref, rel=2 * TOL)
    m1 = data.draw(st.integers(1, dof[0] - 1))
    assert G([lam[0], lam[0], *lam[1:]], [m1, dof[0] - m1, *dof[1:]]) == pytest.approx(ref, rel=2 * TOL)


@settings(max_examples=40, deadline=None)
@given(_weights, st.data())
def test_monotone_convex_and_bounded(lam, data):
    """ell is decreasing and convex, Q linear in lam: E ell(Q) decreases in each lam_j, is convex in lam, lies above
    Jensen's ell(E Q) and max(0, -E Q), and below log 2 + E(-Q)_+ <= log 2 + sum_j m_j max(0, -lam_j)."""
    lam = np.asarray(lam)
    dof = np.asarray(data.draw(st.lists(_dofs, min_size=lam.size, max_size=lam.size)))
    v = G(lam, dof)
    mean = float(dof @ lam)
    assert v >= ELL(mean) * (1 - 2 * TOL) and v >= -mean * (1 - 2 * TOL)
    assert v <= (np.log(2) + dof @ np.maximum(0, -lam)) * (1 + 2 * TOL)
    j = data.draw(st.integers(0, lam.size - 1))
    up = lam.copy()
    up[j] += data.draw(st.floats(1e-3, 10))
    assert G(up, dof) <= v * (1 + 2 * TOL)
    mu = np.asarray(data.draw(st.lists(_w, min_size=lam.size, max_size=lam.size)))
    assert G((lam + mu) / 2, dof) <= (v + G(mu, dof)) / 2 * (1 + 2 * TOL)


@settings(max_examples=30, deadline=None)
@given(_weights, st.floats(-12, -2), st.booleans(), _dofs)
def test_vanishing_weight_gives_the_reduced_rank_loss(lam, log_eps, negative, m):
    """|d E ell / d lam_j| <= m_j (|ell'| <= 1), so adding a weight eps moves the loss by at most |eps| m, and
    eps -> 0 is the form without it."""
    eps = (-1 if negative else 1) * 10.0 ** log_eps
    base = G(lam)
    assert abs(G([*lam, eps], [1] * len(lam) + [m]) - base) <= abs(eps) * m + 2 * TOL * base


@settings(max_examples=30, deadline=None)
@given(st.floats(-3, 2).map(lambda e: 10.0 ** e), st.floats(-3, 2).map(lambda e: 10.0 ** e),
       st.integers(1, 30), st.integers(1, 30))
def test_two_positive_clusters_match_the_laguerre_path(a, b, s, q):
    """Where the old exact path applies (two positive eigenvalue clusters) it agrees: chi2_expect is accurate to
    1e-12 relative with decay=1 (its docstring), the contour to 1e-10."""
    assert G([a, b], [s, q]) == pytest.approx(c.chi2_expect(ELL, a, b, s, q, decay=1.0), rel=TOL + 1e-12)


def test_exp_and_linear_closed_forms():
    assert G([0.3, -0.2, 1.0], [2, 1, 3], loss="exp") == pytest.approx(1.6 ** -1 * 0.6 ** -0.5 * 3.0 ** -1.5,
                                                                      rel=1e-15)
    assert G([0.3, -0.5], loss="exp") == np.inf  # E e^{0.5 chi^2_1} diverges
    assert G([0.3, -0.5], [2, 3], loss="linear") == pytest.approx(0.9, rel=1e-15)


def test_general_W_loss_is_rotation_invariant_and_matches_monte_carlo():
    """phi -> O phi leaves phi(x)^T phi(x^+) unchanged; a W weighing U gives H negative eigenvalues (the case that
    was Monte Carlo only), and the exact loss agrees with the seeded mean within 5 SE."""
    model = c.MultiTaskLinearModel(3, 2, 4, 14, np.array([0.5, 0.3, 0.2]), sigma_S=np.array([1.0, 0.7, 1.3]),
                                   sigma_R=0.8, sigma_U=2.0)
    W = 0.25 * np.random.default_rng(3).standard_normal((5, model.d))
    lam = np.linalg.eigvalsh(c.loss._quadratic_form(W, model, 1))
    assert np.sum(lam < -1e-3) >= 2 and np.unique(np.round(lam, 6)).size > 4
    exact = c.contrastive_loss_W(W, model)
    O = ortho_group.rvs(5, random_state=1)
    assert c.contrastive_loss_W(O @ W, model) == pytest.approx(exact, rel=2 * TOL)
    se2, mc = 0.0, 0.0
    for t in range(model.n_tasks):
        x, xp, _ = model.sample_pairs(t, 200_000, np.random.default_rng(10 + t))
        v = ELL(np.sum((x @ W.T) * (xp @ W.T), axis=1))
        mc += model.weights[t] * v.mean()
        se2 += (model.weights[t] * v.std()) ** 2 / v.size
    assert abs(mc - exact) < 5 * np.sqrt(se2)


@pytest.mark.parametrize("kwargs, name", [({"lam": [np.nan]}, "lam"), ({"lam": [1e101]}, "lam"), ({"lam": "x"}, "lam"),
                                          ({"lam": [1.0], "dof": [0.0]}, "dof"),
                                          ({"lam": [1.0, 2.0], "dof": [1.0]}, "dof"),
                                          ({"lam": [1.0], "loss": "hinge"}, "loss")])
def test_bad_inputs_name_the_parameter(kwargs, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
        G(**kwargs)
    model = c.MultiTaskLinearModel(2, 1, 2, 4)
    with pytest.raises(InvalidParameterError, match="'W' parameter"):
        c.contrastive_loss_W(np.full((2, 4), 1e60), model)
