"""popdyn.models.lora.joint: the diffusion theory of joint (c_hat, u_hat) training (Fig. 4).

Oracles: the per-sample stochastic gradient of the d-dimensional network by torch autograd (explicit vectors,
the algorithm's projection), whose Monte Carlo mean and covariance the quadrature must match (z-scores with both
errors: Monte Carlo SE and the spread of the quadrature over scrambles); the exact drift; symmetries.
"""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import popdyn
from popdyn import InvalidParameterError
from popdyn.models import lora
from popdyn.models.lora import GeneralProblem, diffusion_paths, general_drift, increment_covariance

pytestmark = pytest.mark.filterwarnings("ignore::popdyn.RegimeWarning")

_Z = 5.0  # |z| bound: up to 45 covariance entries and 9 means per case, P(|Z| > 5) = 6e-7 each


def _autograd_increments(gp, m, q, c_hat, *, d, lr, lr_c, n, seed):
    """Per-sample increments of (m, q [unprojected], c_hat) of one unnormalised SGD step, by autograd on
    explicit d-dimensional vectors: W in the first k coordinates (orthonormal features only), u = e_k,
    u_hat = q + m e_k + rest e_{k+1}."""
    P, k = gp.problem, gp.k
    assert np.allclose(P.G, np.eye(k)) and np.allclose(gp.p, 0)
    dt = torch.float64
    W = torch.zeros(k, d, dtype=dt)
    W[:, :k] = torch.eye(k, dtype=dt)
    u = torch.zeros(d, dtype=dt)
    u[k] = 1.0
    uh0 = torch.zeros(d, dtype=dt)
    qq = np.zeros(k) if q is None else q
    uh0[:k], uh0[k], uh0[k + 1] = torch.tensor(qq), m, math.sqrt(1 - qq @ qq - m * m)
    x = torch.randn(n, d, dtype=dt, generator=torch.Generator().manual_seed(seed))
    sig = lambda z: _torch_act(P.activation.name, z)
    lam, c, xi = torch.tensor(P.lam), torch.tensor(P.c), P.xi
    vt = (W + xi * c[:, None] * u[None]) / torch.tensor(P.r)[:, None]
    fstar = sig(x @ vt.T) @ lam
    uh = uh0.expand(n, d).clone().requires_grad_(True)
    ch = torch.tensor(c_hat, dtype=dt).expand(n, k).clone().requires_grad_(True)
    rh = torch.sqrt(1 + xi**2 * ch**2)
    pre = ((x @ W.T) + xi * ch * (x * uh).sum(1, keepdim=True)) / rh
    loss = ((fstar - sig(pre) @ lam) ** 2).sum()
    gu, gc = torch.autograd.grad(loss, (uh, ch))
    Lp = gu - (gu @ uh0)[:, None] * uh0[None]                  # P = I - u_hat u_hat^T
    if gp.project:
        Lp[:, :k] = 0.0                                         # and Pi_W^perp
        Lp = Lp - (Lp @ uh0)[:, None] * uh0[None]
    cols = [-lr * (Lp @ u)[:, None]]
    if not gp.project:
        cols.append(-lr * Lp @ W.T)
    if lr_c is not None:
        cols.append(-lr_c * gc)
    return torch.cat(cols, 1).numpy()


def _torch_act(name, z):
    return {"relu": torch.relu, "sigmoid": torch.sigmoid, "he3": lambda t: (t**3 - 3 * t) / math.sqrt(6),
            "quadratic": lambda t: t * t, "tanh": torch.tanh}[name](z)


_CASES = [  # activation, xi, project, joint, m, q scale, c_hat factor
    ("he3", math.sqrt(3), False, True, -0.1, 0.2, 1.0),
    ("sigmoid", 1.0, False, True, 0.4, 0.3, 1.4),
    ("quadratic", math.sqrt(3), False, True, 0.0, 0.0, 0.7),
    ("relu", 1.0, True, True, 0.6, 0.0, 1.0),
    ("relu", 1.0, False, False, -0.3, 0.25, 1.0),
]


@pytest.mark.parametrize("act,xi,project,joint,m,qs,cf", _CASES)
def test_increment_moments_against_autograd(act, xi, project, joint, m, qs, cf):
    # mean: the exact first-order drift; covariance: the quadrature of 8 scrambles (its spread is its SE) against
    # 2e5 per-sample gradients of the d-dimensional network; |z| < 5 on every entry (measured max |z| 1.5-2.9 for
    # the means, 1.4-2.2 for the covariances)
    k, d, lr = 3, 12, 0.01
    lr_c = 0.02 if joint else None
    P = lora.Problem.orthonormal(k, xi, act, seed=1)
    gp = GeneralProblem(P, np.zeros(k), project=project)
    q = None if project else qs * np.array([0.6, -0.8, 0.0])
    c_hat = cf * P.c_hat
    inc = _autograd_increments(gp, m, q, c_hat, d=d, lr=lr, lr_c=lr_c, n=200_000, seed=3)
    n = inc.shape[0]
    mean, cen = inc.mean(0), inc - inc.mean(0)
    cov = cen.T @ cen / (n - 1)
    cov_se = np.sqrt(np.var(cen[:, :, None] * cen[:, None, :], axis=0) / n)
    dm, dq, dc = general_drift(gp, m, q, c_hat, lr=lr, lr_c=lr_c, convention="paper")
    drift = np.r_[dm, [] if project else dq, dc if joint else []]
    zm = (mean - drift) / (cen.std(0) / math.sqrt(n))
    assert np.all(np.abs(zm) < _Z), zm
    reps = np.array([increment_covariance(gp, m, q, c_hat, lr=lr, lr_c=lr_c, n_mc=1 << 14, seed=s) for s in range(8)])
    se = np.sqrt(cov_se**2 + reps.var(0, ddof=1) / 8)
    z = (reps.mean(0) - cov) / se
    assert np.all(np.abs(z) < _Z), np.abs(z).max()


def test_increment_covariance_falsified_without_the_residual_noise():
    # a wrong noise model (the population drift's square, i.e. no fluctuation of the residual) is far off
    P = lora.Problem.orthonormal(3, math.sqrt(3), "he3", seed=1)
    gp = GeneralProblem(P, np.zeros(3), project=False)
    q = 0.2 * np.array([0.6, -0.8, 0.0])
    cov = increment_covariance(gp, -0.1, q, lr=0.01, lr_c=0.02)
    dm, dq, dc = general_drift(gp, -0.1, q, lr=0.01, lr_c=0.02, convention="paper")
    b = np.r_[dm, dq, dc]
    assert np.min(np.diag(cov) / (b * b + 1e-300)) > 10


# ---- properties ------------------------------------------------------------------------------------------
@settings(max_examples=15, deadline=None)
@given(act=st.sampled_from(["relu", "he3", "quadratic"]), m=st.floats(-0.9, 0.9), seed=st.integers(0, 1000),
       s=st.floats(0.1, 10.0))
def test_covariance_symmetries(act, m, seed, s):
    # symmetric PSD; scaling lr, lr_c by s scales Sigma by s^2; the frozen block is the joint one's (m, q) block
    P = lora.Problem.orthonormal(3, 1.5, act, seed=seed)
    gp = GeneralProblem(P, np.zeros(3), project=False)
    q = 0.3 * np.sqrt(1 - m * m) * np.array([0.0, 0.6, 0.8])
    cov = increment_covariance(gp, m, q, lr=0.01, lr_c=0.03)
    scale = np.abs(cov).max()
    np.testing.assert_allclose(cov, cov.T, atol=1e-14 * scale)
    assert np.linalg.eigvalsh(cov).min() >= -1e-12 * scale
    big = increment_covariance(gp, m, q, lr=0.01 * s, lr_c=0.03 * s)
    np.testing.assert_allclose(big, s * s * cov, rtol=1e-9, atol=1e-12 * s * s * scale)
    frozen = increment_covariance(gp, m, q, lr=0.01)
    np.testing.assert_allclose(frozen, cov[:4, :4], rtol=1e-12, atol=1e-14 * scale)


def test_covariance_is_invariant_under_the_sign_flip():
    # (c_hat, u_hat) -> (-c_hat, -u_hat) is the same student and flips every increment, so Sigma is unchanged; the
    # quadrature points are not mapped onto each other, so within the spread over 8 scrambles (|z| < 5)
    P = lora.Problem.orthonormal(3, 1.5, "he3", seed=4)
    gp = GeneralProblem(P, np.zeros(3), project=False)
    m, q = 0.3, np.array([0.1, -0.2, 0.25])
    a = np.array([increment_covariance(gp, m, q, lr=0.01, lr_c=0.03, n_mc=1 << 13, seed=s) for s in range(8)])
    b = np.array([increment_covariance(gp, -m, -q, -P.c_hat, lr=0.01, lr_c=0.03, n_mc=1 << 13, seed=s)
                  for s in range(8, 16)])
    z = (a.mean(0) - b.mean(0)) / np.sqrt((a.var(0, ddof=1) + b.var(0, ddof=1)) / 8 + 1e-30)
    assert np.abs(z).max() < _Z
    # and it is not a test that cannot fail: flipping u_hat alone (a different student) is far off
    c = np.array([increment_covariance(gp, -m, -q, lr=0.01, lr_c=0.03, n_mc=1 << 13, seed=s) for s in range(8)])
    zc = (a.mean(0) - c.mean(0)) / np.sqrt((a.var(0, ddof=1) + c.var(0, ddof=1)) / 8 + 1e-30)
    assert np.abs(zc).max() > _Z   # measured 6.0 (deterministic draws)


def test_noiseless_paths_are_the_ode():
    # noise=False: every path is Euler's solution of the population ODE; halving dtau halves its error, and the
    # finest is within 2e-3 of predict's RK45 solution of the same ODE
    P = lora.Problem.orthonormal(4, 1.0, "he3", seed=0)
    gp = GeneralProblem(P, np.zeros(4), project=False)
    d, lr = 200, 0.1 / 200
    t = np.array([0, 400, 800])
    pred = popdyn.predict(gp, d=d, lr=lr, steps=800, n_points=3, joint=True, m0=-0.05)
    errs = []
    for dtau in (0.2, 0.1):
        X = diffusion_paths(gp, d=d, lr=lr, t=t, m0=-0.05, lr_c=lr, paths=2, dtau=dtau, noise=False)
        assert np.array_equal(X[:, 0], X[:, 1])
        errs.append(abs(X[-1, 0, 0] - pred["m"][-1]))
    assert errs[1] < 0.65 * errs[0] and errs[1] < 2e-3, errs


def test_paths_reject_bad_input():
    gp = GeneralProblem(lora.Problem.orthonormal(3, 1.0, seed=0), np.zeros(3), project=False)
    with pytest.raises(InvalidParameterError, match="'t'"):
        diffusion_paths(gp, d=50, lr=1e-3, t=[5, 10], m0=0.0)
    with pytest.raises(InvalidParameterError, match="paths"):
        diffusion_paths(gp, d=50, lr=1e-3, t=[0, 10], m0=0.0, paths=0)
    with pytest.raises(InvalidParameterError, match="lr"):
        increment_covariance(gp, 0.0, np.zeros(3), lr=0.0)


def test_predict_diffusion_means_and_spread():
    # predict(method="diffusion") returns the path means of every observable and their SDs; one path has SD 0 and
    # equals diffusion_paths' path with the same seed; convention "paper" is refused (the noise needs finite d)
    gp = GeneralProblem(lora.Problem.orthonormal(3, 1.0, "relu", seed=0), np.zeros(3), project=False)
    kw = dict(d=60, lr=0.1 / 60, steps=120, n_points=3, joint=True, m0=0.2)
    pred = popdyn.predict(gp, method="diffusion", paths=3, dtau=0.5, seed=2, **kw)
    assert set(pred.observables) == {"m", "loss", "q_norm", "c_overlap"}
    assert set(pred.meta["sd"]) == set(pred.observables) and np.all(np.asarray(pred.meta["sd"]["m"])[1:] > 0)
    X = diffusion_paths(gp, d=60, lr=0.1 / 60, t=pred.t, m0=0.2, lr_c=0.1 / 60, paths=3, dtau=0.5, seed=2)
    np.testing.assert_allclose(pred["m"], X[:, :, 0].mean(1), rtol=0, atol=1e-15)
    with pytest.raises(InvalidParameterError, match="convention"):
        popdyn.predict(gp, method="diffusion", convention="paper", **kw)
