"""Finite-d online SGD of the soft committee machine in torch, all seeds batched: the simulation of
``committee.Problem``. On CPU in float64 with popdyn's own activations the steps run in one compiled loop
(:mod:`._steps`, on the same draws; equal to the torch loop to rounding, 2-3x faster: the Gaussian draws are then
most of the cost).

Geometry: x is isotropic, so the teacher is placed in the first M coordinates, ``B = [L, 0]`` with
``L L^T = T`` (the problem's ``teacher_overlap``; eigen-factor, any rank); the teacher fields are ``nu = x[:M] L^T`` and ``R = J[:, :M] L^T``
exactly. The student starts from ``J = init_scale G / sqrt(d)``, G standard Gaussian, so ``Q0 ~ init_scale^2 I``.
"""
from __future__ import annotations

import numpy as np
import torch

from ... import _pointwise, activations
from ..._validate import FiniteArray, check
from ...models.committee import check_dimension, generalisation_error
from ...results import Simulation
from .. import _torch
from .._torch import make_generator, resolve_device, resolve_dtype, serial_if_small, standard_normal_, to_numpy, \
    torch_activation
from ._steps import sgd_chunk

__all__ = ["simulate"]

_OWNER = "committee.simulate"
_CHUNK_ELEMENTS = 2**19     # inputs drawn per chunk: at most 4 MB of float64


def simulate(problem, *, d, steps, lr, lr_v, weight_decay, init_scale, v0, n_points, seed, seeds, device, dtype,
             progress):
    r"""Online SGD of the committee at input dimension d, all seeds batched: the finite-d twin of :func:`~popdyn.models.committee.ode`.

    .. math:: J_k \leftarrow J_k - \frac{\eta}{d}\big(v_kg'(\lambda_k)\Delta + \mathrm{wd}\,J_k\big)\cdot x,\qquad
              v_k \leftarrow v_k - \frac{\eta_v}{d}\big(g(\lambda_k)\Delta + \mathrm{wd}\,v_k\big),\qquad
              \Delta = \sum_kv_kg(\lambda_k) - \sum_nv^*_ng(\nu_n) - \sigma\zeta

    (the weight-decay term is ``wd J_k``, not multiplied by x), one fresh :math:`x \sim N(0, I_d)` and
    :math:`\zeta\sim N(0,1)` a step; :math:`\eta` = ``lr``, :math:`\eta_v` = ``lr_v``, wd = ``weight_decay``.

    Parameters
    ----------
    problem : committee.Problem
    d : int
        Input dimension, >= M + 1.
    steps : int
        SGD steps, >= 1 (time ``t = steps / d`` of the ODE).
    lr, lr_v : float
        Step sizes of the first layer (> 0) and the second (>= 0; 0 keeps v at v0); an SGD step is lr/d.
    weight_decay : float
        Weight decay of both layers, >= 0 (wd J_k and wd v_k in the updates: SGD on the squared error / 2 plus
        (wd / 2)(|J|^2 + |v|^2), each layer at its own step).
    seeds : int
        Independent runs, batched, >= 1.
    init_scale : float
        Student initial scale, > 0: ``J = init_scale G / sqrt(d)``.
    v0 : ndarray of shape (K,) or None
        Initial second layer (every seed); None for ones.
    n_points : int
        Recorded step numbers, evenly spaced on [0, steps], >= 2.
    seed : int
        Seed of the run's torch.Generator, >= 0.
    device : str
        "cpu", "cuda" or "cuda:N".
    dtype : {None, "float64", "float32"}
        None is float64.
    progress : bool
        A tqdm bar over the steps.

    Returns
    -------
    Simulation
        ``t`` (int steps), observables with a leading seed axis: ``"Q"`` (seeds, n, K, K), ``"R"`` (seeds, n, K, M),
        ``"eg"`` (seeds, n), and ``"v"`` (seeds, n, K) when the second layer trains. eg is the exact population
        error of the recorded weights, :func:`~popdyn.models.committee.generalisation_error` of their overlaps.

    Notes
    -----
    Regime: any d; the ODE is its limit d -> infinity at fixed t = steps/d, with O(1/sqrt d) fluctuations.

    References
    ----------
    .. [src] Saad & Solla 1995 eqs. (1)-(3); Goldt et al. 2019 eqs. (1)-(5).

    Examples
    --------
    >>> from popdyn.models import committee
    >>> import popdyn
    >>> sim = popdyn.simulate(committee.Problem.saad_solla(K=2, M=2), d=50, steps=100, seeds=2, n_points=3)
    >>> sim.t.tolist(), sim["Q"].shape
    ([0, 50, 100], (2, 3, 2, 2))
    """
    K, M = problem.K, problem.M
    d = check_dimension(_OWNER, problem, d)
    S = seeds
    v0 = np.ones(K) if v0 is None else check(_OWNER, "v0", v0, FiniteArray(1, (K,)))
    dev = resolve_device(device, _OWNER)
    dt = resolve_dtype(dtype, _OWNER)
    act = torch_activation(problem.activation)
    rec = np.unique(np.rint(np.linspace(0, steps, n_points)).astype(np.int64))
    lam, U = np.linalg.eigh(problem.teacher_overlap)
    L = torch.as_tensor(U * np.sqrt(np.maximum(lam, 0.0)), dtype=dt, device=dev)   # L L^T = T
    vstar = torch.tensor(problem.v_star, dtype=dt, device=dev)
    gen = make_generator(seed, dev)
    W = torch.zeros(S, K + M, d, dtype=dt, device=dev)          # rows: the student J, then the teacher [L, 0]
    W[:, :K] = standard_normal_(torch.empty(S, K, d, dtype=torch.float64, device=dev), gen).to(dt) * (init_scale / np.sqrt(d))
    W[:, K:, :M] = L
    J = W[:, :K]
    u = torch.cat([torch.tensor(v0, dtype=dt, device=dev), -vstar]).expand(S, K + M).clone()      # (v, -v*)
    v = u[:, :K]
    # on CPU in float64 a compiled loop takes the steps (popdyn's own activations; same draws, same update)
    fast = _pointwise.code(activations.get(problem.activation)) if dev.type == "cpu" and dt == torch.float64 else None
    if fast:
        J, v = J.contiguous(), v.contiguous()
        fast_args = (J.numpy(), v.numpy(), L.numpy(), vstar.numpy())
    eta, eta_v, sigma, wd = lr / d, lr_v / d, problem.sigma, weight_decay
    chunk = max(1, min(steps, _CHUNK_ELEMENTS // (S * (d + 1))))
    Qs, Rs, vs = [], [], []
    buf = torch.empty(chunk, S, d + 1, dtype=torch.float64, device=dev)
    bar = _torch.progress(steps, progress, _OWNER, unit="step")
    ok = True
    with serial_if_small(dev, S * K * d):
        step, i_rec = 0, 0
        while True:
            if step == rec[i_rec]:
                Qs.append(to_numpy(J @ J.transpose(1, 2)))
                Rs.append(to_numpy(J[:, :, :M] @ L.T))
                vs.append(to_numpy(v))
                ok = ok and bool(np.all(np.isfinite(Qs[-1])))
                i_rec += 1
                if i_rec == rec.size:
                    break
            n = min(chunk, int(rec[i_rec] - step))
            xs = standard_normal_(buf[:n], gen).to(dt)
            if fast:
                sgd_chunk(*fast_args, xs.numpy(), *fast, eta, eta_v, sigma, wd)
            else:
                for x in xs:
                    z = x[:, :d]
                    fields = torch.bmm(W, z[:, :, None]).squeeze(-1)                # (S, K + M): lambda, nu
                    g = act.f(fields)
                    delta = (g * u).sum(1)
                    if sigma:
                        delta = delta - sigma * x[:, d]
                    c = v * act.df(fields[:, :K]) * delta[:, None]
                    if wd:
                        J.mul_(1 - eta * wd)
                    J.baddbmm_(c[:, :, None], z[:, None, :], alpha=-eta)
                    if eta_v:
                        v.sub_(eta_v * (g[:, :K] * delta[:, None] + wd * v))
            step += n
            bar.update(n)
    bar.close()
    Q, R, vv = (np.stack(a, axis=1) for a in (Qs, Rs, vs))
    obs = {"Q": Q, "R": R, "eg": generalisation_error(problem, Q, R, vv) if ok else np.full(Q.shape[:2], np.nan)}
    if lr_v > 0:
        obs["v"] = vv
    meta = dict(device=str(dev), dtype=str(dt), t_unit="steps", source=["Saad & Solla 1995 eqs. (1)-(3)"])
    return Simulation(t=rec, observables=obs, status=0 if ok else -1,
                      message="success" if ok else "a run diverged (non-finite weights)", meta=meta)
