r"""Appendix A.1 of [AllenZhu19] in torch: the min-norm Pareto solver and SGD on the sparse parity.

Public names
------------
pareto
    Weight-decayed full-batch training of :math:`F(W;x)=a^\top\sigma(Wx)` on all :math:`2^d` inputs (d = 6 in the
    paper's construction, footnote 13) from several starts and penalties, tracing (||W||_F / sqrt d, MSE); then, for
    each MSE level, the smallest norm reached on the rays {tW} of the trained W (exact, by homogeneity) and,
    optionally, a descent of that level norm over the direction of W.
sgd
    Minibatch SGD (momentum, weight decay) on N samples of the parity, for a batch of (lr, wd) pairs at one width m,
    as in the experiment of App. A.1 (Fig. 3(a)): norm, training error, Monte Carlo test error.

Units: W acts on x in {±1/sqrt d}^d (the paper's units); norms are ||W||_F / sqrt d; the output layer is
:func:`popdyn.models.resnet.minnorm.signs`. See docs/resnet.md (Appendix A.1).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ..._validate import Integer, InvalidParameterError, Interval, check
from ...models.resnet.hypercube import hypercube_points
from ...models.resnet.minnorm import PAPER_POINTS, check_support, signs
from .._torch import make_generator, resolve_device, resolve_dtype, serial_if_small, to_numpy

__all__ = ["pareto", "sgd"]

_POS = Interval(0.0, np.inf, "neither")
_NONNEG = Interval(0.0, np.inf, "left")
_LEVELS = tuple(e for _, e in PAPER_POINTS)
# _ONE_THREAD: these steps touch a few MB, above serial_if_small's threshold, yet on a shared 2-core machine two
# threads stall them (measured: sgd at d = 40, N = 5000, m = 200, 4 pairs, 50 epochs: 4.5 s on one thread, 124 s on
# two contended ones), so both solvers always run on one CPU thread (elements = 0).


def _grid(owner, name, values, constraint):
    vals = np.atleast_1d(np.asarray(values, dtype=object))
    if vals.ndim != 1 or vals.size < 1:
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must be a non-empty list of floats. "
                                    f"Got {values!r} instead.")
    return [check(owner, f"{name}[{i}]", v, constraint) for i, v in enumerate(vals)]


def _forward(W, X, a):
    """F for a batch of networks: W (C, m, d), X (n, d) or (C, n, d) -> (C, n)."""
    return torch.relu(torch.matmul(X, W.transpose(1, 2))) @ a


def _level_norm(W, X, y, a, eps):
    """Smallest ||tW||_F / sqrt d with MSE(tW) <= eps (+inf where the ray misses), per network; differentiable."""
    F = _forward(W, X, a)
    q, p = (F * F).mean(1), (F * y).mean(1)
    disc = p * p - q * (1.0 - eps)
    ok = (disc > 0) & (p > 0)
    safe = torch.where(ok, disc, torch.ones_like(disc))
    t = (p - torch.sqrt(safe)) / torch.where(ok, q, torch.ones_like(q))
    nrm = W.flatten(1).norm(dim=1) / math.sqrt(W.shape[2])
    return torch.where(ok, t * nrm, torch.full_like(t, math.inf))


def pareto(d=6, m=200, lams=(3e-4, 1e-4), starts=4, steps=10_000, lr=0.025, init_std=1.0, levels=_LEVELS,
           refine_steps=3000, refine_lr=0.01, S=range(6), seed=0, device="cpu", dtype=None):
    r"""Trace the (norm, MSE) Pareto frontier of A.1's two-layer network on the whole cube (docs/resnet.md).

    For each penalty λ in ``lams`` and each of ``starts`` random inits (all trained at once, full batch over the
    :math:`2^d` inputs, Adam):

    .. math::
        \min_W\ \mathbb E_x\big(F(W;x)-y\big)^2+\lambda\,\frac{\|W\|_F^2}{d},

    then for each level ε the level norm of every trained W (the exact ray minimum
    :math:`t^*\|W\|_F/\sqrt d` of :func:`popdyn.models.resnet.minnorm.level_norm`) and, when ``refine_steps`` > 0,
    an Adam descent of that (scale-free) level norm over the direction of W from each trained W.

    Parameters
    ----------
    d : int
        Input dimension, 6 <= d <= 12 (2^d inputs per step).
    m : int
        Even width (the paper: m = 200).
    lams : list of float
        Penalties λ >= 0 on (||W||_F / sqrt d)^2 (λ = 0: plain training).
    starts : int
        Random inits per λ.
    steps, lr : int, float
        Adam steps and learning rate of the penalized training.
    init_std : float
        W_ij ~ N(0, init_std^2) in the paper's units (pre-activations of std init_std).
    levels : list of float
        MSE levels in (0, 1) (default: the paper's 0.12, 0.037, 0.011).
    refine_steps, refine_lr : int, float
        Adam steps on the level norm per level (0: the ray minimum of the trained W only).
    S : iterable of int
        Support of the parity.
    seed : int
    device, dtype
        Torch device and dtype (float64 default).

    Returns
    -------
    dict
        ``lam``, ``start`` (C,) the run labels, ``norm``, ``mse`` (C,) the trained points (norm in the paper's
        unit); ``levels`` (L,), ``level_norms`` (L, C) the level norm of each run (after refinement),
        ``level_norm`` (L,) the frontier (minimum over runs) and ``W`` (L, m, d) the minimizing weights, scaled
        onto the level (paper's units).

    Notes
    -----
    Regime: a non-convex search; the frontier is an upper bound on the true minimum norm at each level (more
    starts can only lower it). Every returned W is exact: its MSE is the enumerated population MSE.

    References
    ----------
    .. [src] [AllenZhu19, App. A.1, footnote 13]; the Pareto solver is popdyn's (docs/resnet.md).

    Examples
    --------
    >>> r = pareto(m=20, lams=[1e-3], starts=1, steps=200, refine_steps=0, levels=[0.5])
    >>> r["level_norm"].shape, r["W"].shape
    ((1,), (1, 20, 6))
    """
    owner = "resnet.pareto"
    d = check(owner, "d", d, Integer(6, 12))
    m = check(owner, "m", m, Integer(2))
    a_np = signs(m)
    lams = _grid(owner, "lams", lams, _NONNEG)
    levels = _grid(owner, "levels", levels, Interval(0.0, 1.0, "neither"))
    starts, steps, refine_steps = (check(owner, n, v, Integer(lo)) for n, v, lo in
                                   (("starts", starts, 1), ("steps", steps, 1), ("refine_steps", refine_steps, 0)))
    lr, refine_lr, init_std = (check(owner, n, v, _POS) for n, v in
                               (("lr", lr), ("refine_lr", refine_lr), ("init_std", init_std)))
    S = check_support(owner, S, d)
    seed = check(owner, "seed", seed, Integer(0))
    dev, dt = resolve_device(device, owner), resolve_dtype(dtype, owner)

    Z = hypercube_points(d)
    X = torch.tensor(Z / math.sqrt(d), dtype=dt, device=dev)
    y = torch.tensor(np.prod(Z[:, list(S)], axis=1), dtype=dt, device=dev)
    a = torch.tensor(a_np, dtype=dt, device=dev)
    lam_run = np.repeat(lams, starts)
    C = lam_run.size
    lam_t = torch.tensor(lam_run, dtype=dt, device=dev)
    gen = make_generator(seed, dev)
    W = (init_std * torch.randn((C, m, d), generator=gen, dtype=dt, device=dev)).requires_grad_()
    with serial_if_small(dev, 0):  # one thread always: see _ONE_THREAD
        opt = torch.optim.Adam([W], lr=lr)
        for _ in range(steps):
            opt.zero_grad()
            mse = ((_forward(W, X, a) - y) ** 2).mean(1)
            (mse + lam_t * W.flatten(1).pow(2).sum(1) / d).sum().backward()
            opt.step()
        W = W.detach()
        mse = ((_forward(W, X, a) - y) ** 2).mean(1)
        norm = W.flatten(1).norm(dim=1) / math.sqrt(d)
        level_norms, best_W = [], []
        for eps in levels:
            V = W.clone().requires_grad_()
            if refine_steps:
                reach = torch.isfinite(_level_norm(V.detach(), X, y, a, eps))
                opt = torch.optim.Adam([V], lr=refine_lr)
                for _ in range(refine_steps):
                    opt.zero_grad()
                    torch.where(reach, _level_norm(V, X, y, a, eps), torch.zeros(())).sum().backward()
                    opt.step()
                    with torch.no_grad():  # the level norm is scale-free: keep each W at its trained norm
                        V.mul_((norm * math.sqrt(d) / V.flatten(1).norm(dim=1)).view(-1, 1, 1))
            V = V.detach()
            ln = _level_norm(V, X, y, a, eps)
            j = int(torch.argmin(ln))
            level_norms.append(to_numpy(ln))
            best_W.append(to_numpy(V[j]) * (float(ln[j]) / float(norm[j])) if math.isfinite(float(ln[j]))
                          else np.full((m, d), np.nan))
    level_norms = np.array(level_norms)
    return {"lam": lam_run, "start": np.tile(np.arange(starts), len(lams)), "norm": to_numpy(norm),
            "mse": to_numpy(mse), "levels": np.array(levels), "level_norms": level_norms,
            "level_norm": level_norms.min(1), "W": np.array(best_W)}


def sgd(d=20, N=2000, m=200, lrs=(0.1,), wds=(0.0,), epochs=100, batch=50, momentum=0.9, init_std=1.0,
        test=20_000, S=range(6), oracle_support=False, seed=0, device="cpu", dtype=None):
    r"""Minibatch SGD on N samples of A.1's parity for every (lr, wd) pair at width m (App. A.1, Fig. 3(a)).

    PyTorch's SGD (momentum, weight decay added to the gradient) on the training error
    :math:`\frac1N\sum_i(F(W;x_i)-y_i)^2`, all pairs trained at once on the same sample, for ``epochs`` epochs at lr
    and ``epochs`` more at lr / 10 (the protocol of App. A; A.1 states no schedule).

    Parameters
    ----------
    d : int
        Input dimension, 6 <= d <= 200.
    N : int
        Training samples, N >= batch.
    m : int
        Even width.
    lrs, wds : list of float
        Learning rates (> 0) and weight decays (>= 0); every pair is trained.
    epochs, batch, momentum : int, int, float
        Epochs per phase, minibatch size, momentum in [0, 1).
    init_std : float
        W_ij ~ N(0, init_std^2) (pre-activations of std init_std on ||x|| = 1; A.1 states no init).
    test : int
        Fresh Monte Carlo test points.
    S : iterable of int
        Support of the parity.
    oracle_support : bool
        Train only the columns of W in S (the other columns stay 0): SGD told the support, the easy problem
        behind the hand constructions.
    seed : int
    device, dtype
        Torch device and dtype (float64 default).

    Returns
    -------
    dict
        ``lr``, ``wd`` (C,) the pairs; ``norm`` (||W||_F / sqrt d), ``train_mse``, ``test_mse`` and ``test_se``
        (standard error of the Monte Carlo mean), each (C,); ``diverged`` (C,) bool: runs whose weights became
        non-finite, returned with NaN norm and errors.

    Notes
    -----
    Regime: finite-sample training; the test error is Monte Carlo (exact population errors of small d live in
    :func:`popdyn.models.resnet.minnorm.population_mse`).

    References
    ----------
    .. [src] [AllenZhu19, App. A.1, App. A].

    Examples
    --------
    >>> r = sgd(d=8, N=100, m=20, epochs=2, test=1000)
    >>> sorted(r)
    ['diverged', 'lr', 'norm', 'test_mse', 'test_se', 'train_mse', 'wd']
    """
    owner = "resnet.sgd"
    d = check(owner, "d", d, Integer(6, 200))
    m = check(owner, "m", m, Integer(2))
    a_np = signs(m)
    batch = check(owner, "batch", batch, Integer(1))
    N = check(owner, "N", N, Integer(batch))
    epochs, test, seed = (check(owner, n, v, Integer(lo)) for n, v, lo in
                          (("epochs", epochs, 1), ("test", test, 2), ("seed", seed, 0)))
    momentum = check(owner, "momentum", momentum, Interval(0.0, 1.0, "left"))
    init_std = check(owner, "init_std", init_std, _POS)
    lrs, wds = _grid(owner, "lrs", lrs, _POS), _grid(owner, "wds", wds, _NONNEG)
    S = check_support(owner, S, d)
    if not isinstance(oracle_support, (bool, np.bool_)):
        raise InvalidParameterError(f"The 'oracle_support' parameter of {owner} must be a bool. "
                                    f"Got {oracle_support!r} instead.")
    dev, dt = resolve_device(device, owner), resolve_dtype(dtype, owner)

    pairs = [(lr, wd) for lr in lrs for wd in wds]
    C = len(pairs)
    lr_t = torch.tensor([p[0] for p in pairs], dtype=dt, device=dev).view(-1, 1, 1)
    wd_t = torch.tensor([p[1] for p in pairs], dtype=dt, device=dev).view(-1, 1, 1)
    gen = make_generator(seed, dev)

    def cube(n):
        z = 1.0 - 2.0 * torch.randint(0, 2, (n, d), generator=gen, device=dev).to(dt)
        return z / math.sqrt(d), z[:, list(S)].prod(1)

    X, y = cube(N)
    mask = torch.zeros((1, 1, d), dtype=dt, device=dev)
    mask[..., list(S) if oracle_support else slice(None)] = 1.0
    a = torch.tensor(a_np, dtype=dt, device=dev)
    W = (init_std * torch.randn((C, m, d), generator=gen, dtype=dt, device=dev) * mask).requires_grad_()
    buf = torch.zeros_like(W)
    with serial_if_small(dev, 0):  # one thread always: see _ONE_THREAD
        for phase in (1.0, 0.1):
            for _ in range(epochs):
                perm = torch.randperm(N, generator=gen, device=dev)
                for lo in range(0, N - batch + 1, batch):
                    idx = perm[lo:lo + batch]
                    loss = ((_forward(W, X[idx], a) - y[idx]) ** 2).mean(1).sum()
                    (g,) = torch.autograd.grad(loss, W)
                    with torch.no_grad():
                        buf.mul_(momentum).add_((g + wd_t * W) * mask)
                        W.sub_(phase * lr_t * buf)
        W = W.detach()
        train = ((_forward(W, X, a) - y) ** 2).mean(1)
        Xt, yt = cube(test)
        err = (_forward(W, Xt, a) - yt) ** 2
        bad = ~torch.isfinite(W.flatten(1)).all(1)
        nan = torch.tensor(math.nan, dtype=dt, device=dev)
        train, err = torch.where(bad, nan, train), torch.where(bad.view(-1, 1), nan, err)
        norm = torch.where(bad, nan, W.flatten(1).norm(dim=1)) / math.sqrt(d)
    return {"diverged": bad.cpu().numpy(), "lr": np.array([p[0] for p in pairs]), "wd": np.array([p[1] for p in pairs]),
            "norm": to_numpy(norm), "train_mse": to_numpy(train), "test_mse": to_numpy(err.mean(1)),
            "test_se": to_numpy(err.std(1) / math.sqrt(test))}
