r"""Finite-sample training of the restricted rank-r linear self-attention on sampled prompts (torch).

Each step draws ``batch`` fresh prompts per seed: ``x ~ N(0, Lambda)`` (as ``z Lambda^{1/2}``),
``w ~ N(0, I_d)``, ``y_i = <w, x_i>``, and takes an SGD step (the default: the stochastic version of the
population gradient descent that ``popdyn.predict`` iterates) or an Adam step on
``(1/2) mean (u h^T A B^T x_q - <w, x_q>)^2`` with ``h = (1/n) sum_i y_i x_i`` over the ``context`` examples
([Shi24, eq. (5.3)]; the other attention blocks are held at 0, docs/icl.md). ``full=True`` trains an
unrestricted ``U`` (d x d). All seeds run batched in one loop (Adam is elementwise, so the batched runs are
independent).

At every recorded step the trained ``uU`` is evaluated: ``loss`` (Lemma 5.1 at the trained
parameters), ``excess_loss``, ``rel_error`` against ``U*`` of Thm 5.4.1, and ``eval_risk``, a Monte
Carlo estimate on ``prompts`` fresh evaluation prompts of ``test_context`` examples with noise sigma and
``rho * test_context`` flipped
labels (the query average is exact: ``(U^T h - w)^T Lambda (U^T h - w)``).

Public names
------------
simulate
    ``simulate(problem, *, lr, steps, ...)`` -> :class:`popdyn.results.Simulation`.
"""
from __future__ import annotations

import math
import time

import numpy as np
import torch

from ...models.icl import eval_risk_avg, initial_factors, optimum, population_loss, spectrum
from ...results import Simulation
from .._torch import make_generator, resolve_device, resolve_dtype, serial_if_small, standard_normal_, to_numpy
from .._torch import progress as progress_bar

__all__ = ["simulate"]

_OWNER = "icl.simulate"
_EVAL_CHUNK = 8192  # evaluation prompts per chunk: S * 8192 * M * d numbers at most per draw


def _sample(S, B, n, Lhalf, gen):
    """``(S, B, n, d)`` inputs ``z Lambda^{1/2}`` and ``(S, B, d)`` tasks ``w ~ N(0, I)``."""
    d = Lhalf.shape[0]
    X = standard_normal_(Lhalf.new_empty((S, B, n, d)), gen) @ Lhalf
    return X, standard_normal_(Lhalf.new_empty((S, B, d)), gen)


def _context(X, w, beta, noise):
    """``h = (1/n) sum_i y_i x_i`` with ``y_i = beta_i <w, x_i> + noise_i`` (shape (S, B, d))."""
    y = torch.einsum("sbnd,sbd->sbn", X, w) * beta + noise
    return torch.einsum("sbn,sbnd->sbd", y, X) / X.shape[2]


def _eval_risk(U, p, Lhalf, L, n, gen):
    """Monte Carlo w-averaged eval risk of ``U`` (S, d, d) on ``n`` test_context-shot prompts: mean, standard error."""
    S, M, k = U.shape[0], p.test_context, int(round(p.rho * p.test_context))
    beta = U.new_ones(M)
    beta[:k] = -1.0
    total, total2, done = U.new_zeros(S), U.new_zeros(S), 0
    while done < n:
        B = min(_EVAL_CHUNK, n - done)
        X, w = _sample(S, B, M, Lhalf, gen)
        noise = standard_normal_(U.new_empty((S, B, M)), gen) * p.sigma
        e = torch.einsum("sde,sbd->sbe", U, _context(X, w, beta, noise)) - w
        risk = torch.einsum("sbd,de,sbe->sb", e, L, e)
        total, total2, done = total + risk.sum(1), total2 + (risk * risk).sum(1), done + B
    mean = total / n
    return to_numpy(mean), to_numpy(torch.sqrt(torch.clamp(total2 / n - mean**2, min=0) / max(n - 1, 1)))


def _record(p, U, opt):
    """Theory-free functionals of the trained ``uU`` (numpy): loss, excess_loss, rel_error, eval_risk formula."""
    loss = np.array([population_loss(Ui, p.Lambda, p.context) for Ui in U])
    rel = np.linalg.norm(U - opt.U, axis=(1, 2)) / np.linalg.norm(opt.U)
    return loss, loss - opt.value, rel


def _params(p, S, init_scale, init_seed, full, train_u, dev, dt):
    """Trainable tensors: A, B (S, d, r) from :func:`initial_factors` (same start on every seed), or U, and u."""
    A0, B0 = initial_factors(p.d, p.d if full else p.r, init_scale, init_seed)
    t = lambda a: torch.tensor(np.broadcast_to(a, (S,) + np.shape(a)).copy(), device=dev, dtype=dt)
    params = [t(A0 @ B0.T)] if full else [t(A0), t(B0)]
    u = t(1.0)
    for x in params:
        x.requires_grad_(True)
    if train_u:
        u.requires_grad_(True)
    return params, u


def _U(params, u):
    U = params[0] if len(params) == 1 else params[0] @ params[1].mT
    return u[:, None, None] * U


def simulate(problem, *, lr, steps, init_scale, init_seed, train_u, n_points, optimizer, schedule, batch, full,
             prompts, seeds, seed, device, dtype, progress):
    r"""Train the rank-r LSA on fresh prompts; record population functionals and the Monte Carlo eval risk.

    .. math:: \hat y_q = u\,h^\top A B^\top x_q,\quad h = \frac1n\sum_{i=1}^n y_i x_i,\quad
              \hat{\mathcal L} = \frac1{2B}\sum_{\tau}(\hat y_{\tau,q} - \langle w_\tau, x_{\tau,q}\rangle)^2

    Parameters
    ----------
    problem : icl.Problem
    lr, steps, init_scale, init_seed, train_u, n_points, optimizer, schedule, batch, full, prompts, seeds, seed, \
device, dtype, progress
        The options of ``Problem.options`` (``popdyn.simulate`` resolves them): SGD (default, the algorithm
        ``predict`` describes) or Adam with step ``lr`` for ``steps`` steps of ``batch`` fresh prompts per seed
        from the start ``A_0, B_0`` of :func:`popdyn.models.icl.initial_factors` (the same on every seed and in
        ``predict``); ``prompts`` evaluation prompts per recorded step; the prompt stream uses ``seed`` (the
        evaluation stream ``seed + 1``).

    Returns
    -------
    Simulation
        ``t`` in steps; observables (leading seed axis) ``loss``, ``excess_loss``, ``rel_error``,
        ``eval_risk`` (MC), ``eval_risk_se`` (its standard error) and ``uU`` (final, shape (S, d, d)).

    Notes
    -----
    Regime: finite batch, fresh prompts (online). SGD follows population gradient descent up to noise of
    order ``lr / batch``. Adam with a cosine schedule reaches ``U*`` to a few per cent in a few thousand
    steps (docs/icl.md: 4 % at 4000 constant-rate steps), on its own time axis.

    References
    ----------
    .. [src] [Shi24, Section 5.3, eq. (5.1)] (LSA, loss).
    """
    p, dev, dt = problem, resolve_device(device, _OWNER), resolve_dtype(dtype, _OWNER)
    lam, Q = spectrum(p.Lambda)
    Lhalf = torch.tensor((Q * np.sqrt(lam)) @ Q.T, device=dev, dtype=dt)
    L = torch.tensor(p.Lambda, device=dev, dtype=dt)
    gen, gen_eval = make_generator(seed, dev), make_generator(seed + 1, dev)
    params, u = _params(p, seeds, init_scale, init_seed, full, train_u, dev, dt)
    trained = params + ([u] if train_u else [])
    opt_cls = torch.optim.Adam if optimizer == "adam" else torch.optim.SGD
    opt = opt_cls(trained, lr=lr)
    sched = (torch.optim.lr_scheduler.LambdaLR(opt, lambda k: 0.5 * (1 + math.cos(math.pi * k / steps)))
             if schedule == "cosine" else None)
    record = set(np.unique(np.rint(np.linspace(0, steps, n_points)).astype(np.int64)).tolist())
    U_star = optimum(p.Lambda, p.context, p.r)
    rows, t, t0 = [], [], time.perf_counter()
    bar = progress_bar(steps, progress, _OWNER, unit="step")
    with serial_if_small(dev, seeds * batch * p.context * p.d):
        for k in range(steps + 1):
            if k in record:
                rows.append(_snapshot(p, _U(params, u).detach(), U_star, Lhalf, L, prompts, gen_eval))
                t.append(k)
            if k == steps:
                break
            X, w = _sample(seeds, batch, p.context + 1, Lhalf, gen)
            h = _context(X[:, :, :-1], w, 1.0, 0.0)
            err = torch.einsum("sbd,sde,sbe->sb", h, _U(params, u), X[:, :, -1]) - torch.einsum("sbd,sbd->sb", X[:, :, -1], w)
            loss = 0.5 * (err * err).mean(1)
            opt.zero_grad(set_to_none=True)
            loss.sum().backward()
            opt.step()
            if sched is not None:
                sched.step()
            bar.update(1)
    bar.close()
    return _result(p, rows, t, _U(params, u).detach(), dict(device=str(dev), dtype=str(dt)),
                   time.perf_counter() - t0)


def _snapshot(p, U, opt, Lhalf, L, prompts, gen):
    Un = to_numpy(U)
    loss, excess, rel = _record(p, Un, opt)
    risk, se = _eval_risk(U, p, Lhalf, L, prompts, gen)
    return dict(loss=loss, excess_loss=excess, rel_error=rel, eval_risk=risk, eval_risk_se=se)


def _result(p, rows, t, U, options, wall):
    obs = {k: np.stack([r[k] for r in rows], axis=1) for k in rows[0]}
    obs["uU"] = to_numpy(U)
    finite = all(np.all(np.isfinite(v)) for v in obs.values())
    meta = dict(problem=repr(p), run=options, t_unit="steps", wall_s=wall,
                source="[Shi24, Section 5.3, eqs. (5.1)-(5.2)]",
                eval_risk_formula_final=[eval_risk_avg(Ui, p.Lambda, p.test_context, p.sigma, rho=p.rho) for Ui in obs["uU"]])
    message = "success" if finite else "non-finite values: lower lr"
    return Simulation(t=np.array(t), observables=obs, status=0 if finite else -1, message=message, meta=meta)
