"""Prop. 7.4's floor on the other tasks: the closed form against linear algebra and Monte Carlo least squares."""
import numpy as np
import pytest

from popdyn._validate import InvalidParameterError
from popdyn.models import contrastive as c


def _problem(**kw):
    args = dict(n_tasks=3, s=2, r=4, d=11, weights=None, sigma_S=np.array([1.0, 1.4, 0.7]),
                sigma_R=np.array([1.0, 0.8, 1.3]), t=0, v1=0.3, v2=0.7, noise=0.5)
    args.update(kw)
    return c.Problem(**args)


def _specific(problem):
    """The task-specific optimum phi_t^* of Prop. 7.4 as a matrix: identity on R_t, 0 elsewhere."""
    alphas = np.zeros(problem.n_tasks)
    alphas[problem.t] = 1.0
    return c.representation_matrix(1.0, alphas, problem)


def _target(problem, i):
    S, P, _, _ = problem.index_sets()
    u = np.zeros(problem.d)
    u[np.concatenate([S, P[i]])] = problem.u_star
    return u


@pytest.mark.parametrize("t", [0, 2])
def test_floor_is_the_population_least_squares_residual(t):
    # min_u E (u^T W x - u*^T x)^2 = u*^T Sigma u* - b^T (W Sigma W^T)^+ b, b = W Sigma u*: the projection of the
    # target onto the span of the representation, by linear algebra (no use of the closed form)
    problem = _problem(t=t)
    W = _specific(problem)
    for i in range(problem.n_tasks):
        Sig, u = np.diag(problem.feature_scales(i) ** 2), _target(problem, i)
        b = W @ Sig @ u
        resid = u @ Sig @ u - b @ np.linalg.pinv(W @ Sig @ W.T) @ b
        assert c.task_specific_floor(problem, i) == pytest.approx(resid, abs=1e-12)  # 1e-12: pinv round-off
    assert c.task_specific_floor(problem, t) == 0.0
    assert c.task_specific_floor(_problem(sigma_R=1.0, t=t), (t + 1) % 3) == pytest.approx(0.7, abs=1e-15)  # v_{i,2}


@pytest.mark.parametrize("i,m", [(1, 8), (2, 20), (0, 12)])
def test_finite_m_least_squares_risk_matches_monte_carlo(i, m):
    # unconstrained least squares (pinv) on the exact phi_t^* with m samples of task i, exact population excess risk
    # per fit, 40000 fits: the mean against the closed form, |z| <= 5 (Gaussian, one comparison per case)
    problem = _problem()
    W, u = _specific(problem), _target(problem, i)
    rng = np.random.default_rng([7, i, m])
    n = 40_000
    sc = problem.feature_scales(i)
    x = rng.standard_normal((n, m, problem.d)) * sc
    y = x @ u + problem.noise * rng.standard_normal((n, m))
    coef = np.einsum("nkm,nm->nk", np.linalg.pinv(x @ W.T), y)
    err = coef @ W - u
    risk = np.sum(err**2 * sc**2, axis=1)
    z = (risk.mean() - c.task_specific_floor(problem, i, m)) / (risk.std(ddof=1) / np.sqrt(n))
    assert abs(z) < 5, z


def test_the_floor_needs_the_exact_representation_or_the_norm_bound():
    # phi_t^* plus columns of size 1e-3 on task 1's private features (what projected SGD leaves): unconstrained least
    # squares rescales them and falls far below the floor; with ||u|| <= ||u*|| the gain is at most ~2 B 1e-3 sqrt(v2)
    torch = pytest.importorskip("torch")
    from popdyn.sim import contrastive as csim
    problem = _problem(sigma_S=1.0, sigma_R=1.0)
    W = _specific(problem)
    S, P, _, _ = problem.index_sets()
    W[np.ix_(P[1], P[1])] = 1e-3 * np.eye(problem.r - problem.s)
    Wt = torch.as_tensor(W)[None]
    gen = torch.Generator().manual_seed(0)
    floor, m = c.task_specific_floor(problem, 1), 200
    free, _ = csim.probe_excess_risk(problem, Wt, m, 2000, gen, task=1, B=np.inf)
    bound, _ = csim.probe_excess_risk(problem, Wt, m, 2000, gen, task=1, B=np.linalg.norm(problem.u_star))
    assert float(free.mean()) < floor / 2
    assert float(bound.mean()) > floor - 2 * 1e-3 * np.sqrt(problem.v2) * 1.0 - 5 * float(bound.std()) / np.sqrt(2000)


@pytest.mark.parametrize("call,name", [
    (lambda: c.task_specific_floor(_problem(), 3), "task"),
    (lambda: c.task_specific_floor(_problem(), -1), "task"),
    (lambda: c.task_specific_floor(_problem(), 1, 3), "n_labelled"),   # s + 2 = 4 at the least on other tasks
    (lambda: c.task_specific_floor(_problem(), 0, 5), "n_labelled")])  # r + 2 = 6 on the representation's task
def test_bad_inputs_name_the_parameter(call, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        call()
