"""Online SGD for LoRA with u in general position (Figs 4-5), in torch: the twin of ``lora.general.predict``.

Public names
------------
simulate
    ``simulate(gp, *, d, lr, steps, ...)`` -> :class:`popdyn.results.Simulation` for a
    :class:`popdyn.models.lora.GeneralProblem` (``p = W u`` not 0), u_hat projected on span(W)^perp (the
    paper's Eq. 4) or not (Fig. 4): the loop of :mod:`popdyn.sim.lora` with the general teacher, and the
    observable ``q_norm`` besides ``m``, ``loss`` and (joint) ``c_overlap``. ``popdyn.simulate`` calls it
    (registered by path in ``popdyn.models.lora.predict``).
"""
from __future__ import annotations

import time

import numpy as np
import torch

from ..._validate import Integer, Interval, InvalidParameterError, check
from ...models.lora import general_drift
from ...results import Simulation
from .. import _torch
from .._torch import make_generator, resolve_device, resolve_dtype, serial_if_small, standard_normal_, to_numpy
from . import _check, _factor, _init, _record, _record_grid, _run

__all__ = ["simulate"]

_OWNER = "lora.general.simulate"


def _general_draws(a, s, project):
    """Like :func:`_draws`, with ``<u, x> = a . x_W + s x_q`` (u has the part ``a`` in span W) and, unprojected,
    u_hat in all d coordinates (``y = x``)."""
    def draws(consts, state, q, opts, gen, C):
        S, B, d, joint = opts["seeds"], opts["batch"], opts["d"], opts["joint"]
        X = torch.empty((C, S, B, d), dtype=state.U.dtype, device=state.U.device)
        for _ in range(-(-(opts["steps"] + 1) // C)):
            standard_normal_(X, gen)
            Wx = X[..., :q] @ consts.FT
            ux = torch.addcmul(X[..., :q] @ a, X[..., q], torch.full_like(X[..., q], s))
            pre = torch.addcmul(Wx, ux.unsqueeze(-1), consts.c_t) * consts.scale_t
            fstar = consts.act.f(pre) @ consts.lam
            yield (X[..., q:] if project else X), fstar, Wx if joint else Wx * state.scale.unsqueeze(0)
    return draws


def _general_record(a, s, project, q):
    """Like :func:`_record`, with ``m = <u_hat, u>`` for the general u and ``q_norm = ||Pi_W u_hat||``."""
    def record(consts, state, rec, j):
        _record(consts, state, rec, j)
        U = state.U[:, 0]
        if project:
            rec["m"][:, j] = s * U[:, 0]
            rec["q_norm"][:, j] = 0.0
        else:
            rec["m"][:, j] = U[:, :q] @ a + s * U[:, q]
            rec["q_norm"][:, j] = torch.linalg.vector_norm(U[:, :q], dim=1)
    return record


def simulate(gp, *, d, lr, steps, m0, q0, joint, lr_c, n_points, seed, batch, seeds, device, dtype, progress):
    r"""Online SGD with u in general position (``p = W u`` not 0), projected (Eq. 4) or not (Fig. 4).

    .. math:: u = \alpha u_1 + \sqrt{1-\alpha^2}\,u_2,\quad u_1 \in \mathrm{span}\,W,\ u_2 \perp W;\qquad
              u_{t+1} = \frac{u_t - \eta P\nabla_{\hat u} L}{\lVert u_t - \eta P\nabla_{\hat u} L\rVert}

    with P = (I - u_t u_t^T) Pi_W^perp (``gp.project``, the paper's algorithm) or (I - u_t u_t^T) (Fig. 4).

    Parameters
    ----------
    gp : lora.GeneralProblem
    d, lr, steps, seeds, device, dtype, n_points, batch, joint, lr_c, seed, progress
        As :func:`popdyn.sim.lora.simulate`; ``d >= k + 3`` (as ``lora.general.predict``).
    m0 : float, optional
        Initial ``<u_hat, u>``, exact on every seed; default ``s 0.5/sqrt(d)``, s the sign of the
        population dm/dt at (m, q) = 0. Projected: ``|m0| < sqrt(1 - alpha^2)``.
    q0 : ndarray of shape (k,), optional
        Initial ``W u_hat`` (unprojected only; default 0), exact on every seed.

    Returns
    -------
    Simulation
        As :func:`popdyn.sim.lora.simulate`, plus the observable ``q_norm`` = ``||Pi_W u_hat||``; ``meta["alpha"]``.

    Notes
    -----
    Regime: any d >= k + 3. Geometry: W in the first q = rank G coordinates, u = (a, s, 0, ...) with
    ``F a = p``, ``s = sqrt(1 - alpha^2)``; projected, u_hat lives in coordinates q.. (exact projection).

    References
    ----------
    .. [src] [Dayi25, App. B (Figs 4-5), Section 2, eq. (4)]; docs/lora.md (general position).

    Examples
    --------
    >>> import popdyn
    >>> from popdyn.models import lora
    >>> gp = lora.GeneralProblem.from_alpha(lora.Problem.orthonormal(k=2, xi=1.0, seed=0), 0.5, seed=0)
    >>> sim = popdyn.simulate(gp, d=16, lr=0.01, steps=10, seeds=2, m0=0.25, n_points=3)
    >>> [round(v, 12) for v in sim["m"][:, 0].tolist()]   # m0 is exact on every seed
    [0.25, 0.25]
    """
    P, project = gp.problem, bool(gp.project)
    F = _factor(P.G)
    qr = F.shape[1]
    a = np.linalg.lstsq(F, gp.p, rcond=None)[0]
    s = float(np.sqrt(max(1.0 - a @ a, 0.0)))
    d = check(_OWNER, "d", d, Integer(P.k + 3))
    if m0 is None:
        sgn = np.sign(general_drift(gp, 0.0, None if project else np.zeros(P.k), lr=1.0, convention="paper")[0]) or 1.0
        m0 = sgn * 0.5 / np.sqrt(d)
    if q0 is not None and project:
        raise InvalidParameterError(f"The 'q0' parameter of {_OWNER} must be None when project=True. Got {q0!r}.")
    if q0 is not None and np.shape(q0) != (P.k,):
        raise InvalidParameterError(f"The 'q0' parameter of {_OWNER} must have shape ({P.k},). "
                                    f"Got shape {np.shape(q0)} instead.")
    b = np.zeros(qr) if q0 is None else np.linalg.lstsq(F, np.asarray(q0, dtype=np.float64), rcond=None)[0]
    m0 = check(_OWNER, "m0", m0, Interval(-s, s) if project else Interval(-1, 1))
    t1 = m0 / s if project else (m0 - a @ b) / s
    rest2 = 1.0 - b @ b - t1 * t1
    if not (-1 <= t1 <= 1) or rest2 < 0:
        raise InvalidParameterError(f"The 'm0', 'q0' parameters of {_OWNER} must be the overlaps of a unit u_hat: "
                                    f"||Pi_W u_hat||^2 + t^2 <= 1. Got m0={m0!r}, q0={q0!r} instead.")
    opts = _check(P, d, lr, steps, float(np.clip(t1, -1, 1)), seeds, batch, joint, lr_c, seed, _OWNER)
    dev, dt = resolve_device(device, _OWNER), resolve_dtype(dtype, _OWNER)
    t, window = _record_grid(opts["steps"], n_points)
    gen = make_generator(opts["seed"], dev)
    start = time.perf_counter()
    as_t = lambda v: torch.tensor(np.asarray(v, dtype=np.float64), dtype=dt, device=dev)
    with torch.inference_mode(), serial_if_small(dev, opts["seeds"] * opts["batch"] * d):
        consts, state, q = _init(P, opts, dev, dt, gen)       # u_hat in span(W)^perp with <u_hat, e_q> = t1
        if not project:                                        # add the span-W part b, keep the unit norm
            U = state.U
            if 1 - t1 * t1 > 0:
                U[..., 1:] *= float(np.sqrt(max(rest2, 0.0) / (1 - t1 * t1)))
            state.U = torch.cat([as_t(b).expand(U.shape[0], 1, qr), U], dim=2).contiguous()
        bar = _torch.progress(opts["steps"] + 1, progress, _OWNER, unit="step")
        try:
            rec = _run(consts, state, q, opts, t, window, gen, bar, draws=_general_draws(as_t(a), s, project),
                       record=_general_record(as_t(a), s, project, q), extra=("q_norm",))
        finally:
            bar.close()
        obs = {name: to_numpy(v) for name, v in rec.items()}
    wall = time.perf_counter() - start
    ok = all(np.all(np.isfinite(v)) for v in obs.values())
    opts["m0"] = m0
    meta = {"problem": repr(gp), "options": {**opts, "q0": None if q0 is None else list(map(float, q0)),
                                             "n_points": n_points},
            "t_unit": "steps", "device": str(dev), "dtype": str(dt).replace("torch.", ""),
            "torch_version": torch.__version__, "seeds": opts["seeds"], "seed": opts["seed"], "wall_time_s": wall,
            "steps_per_s": (opts["steps"] + 1) / wall, "rank_G": q, "alpha": gp.alpha, "project": project,
            "activation_native": consts.act.native}
    message = "" if ok else (f"non-finite values: the run diverged or overflowed at lr={opts['lr']} "
                             f"({meta['dtype']}); lower lr, or use float64")
    return Simulation(t=t, observables=obs, status=0 if ok else -1, message=message, meta=meta)

