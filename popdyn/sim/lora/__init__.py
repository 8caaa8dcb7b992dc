"""Finite-sample online SGD for LoRA fine-tuning ([Dayi25, eq. (4)]), in torch: the twin of ``lora.predict``.

Public names
------------
simulate
    ``simulate(problem, *, d, lr, steps, ...)`` -> :class:`popdyn.results.Simulation` with observables
    ``m`` (the overlap <u_t, u>), ``loss`` (online estimate of the population loss) and, with
    ``joint=True``, ``c_overlap``. All seeds run batched on one device in one loop. ``popdyn.simulate``
    calls it for a :class:`popdyn.models.lora.Problem` (registered by path in ``popdyn.models.lora.predict``).

:mod:`popdyn.sim.lora.general` runs the same loop for :class:`popdyn.models.lora.GeneralProblem` (u not
orthogonal to span W, Figs 4-5), u_hat projected on span(W)^perp or not.

Geometry. Since x ~ N(0, I_d) is isotropic, any orthonormal frame gives the same law of the
trajectories, so W is placed in the first q = rank(G) coordinates (``W = [F, 0]`` with ``F F^T = G``
from the eigendecomposition of G), u is the next coordinate vector and u_hat lives in the remaining
n = d - q coordinates. The projection on span(W)^perp is then exact coordinate restriction, for any
rank of G (no QR projector is needed). See docs/lora.md (Simulation).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from ..._validate import Integer, InvalidParameterError, check
from ...models.lora import h0
from ...results import Simulation
from .. import _torch
from .._torch import (make_generator, resolve_device, resolve_dtype, serial_if_small, standard_normal_, to_numpy,
                      torch_activation)

__all__ = ["simulate"]

_OWNER = "lora.simulate"
_RANK_TOL = 1e-10  # 1e-10: eigenvalues of a unit-diagonal Gram below this are rank-deficiency, not signal
_CHUNK_ELEMENTS = 2**19  # noise drawn per chunk: at most 4 MB of float64 (two buffers stay near cache size)
_CHUNK_STEPS = 256       # and at most 256 steps, so a short run draws little noise it does not use


@dataclass
class _Consts:
    """Per-run constants on the device: feature factor, head, teacher and student neuron coefficients."""
    FT: torch.Tensor        # (q, k): W x = z @ FT for the first q coordinates z of x
    lam: torch.Tensor       # (k, 1)
    c_t: torch.Tensor       # (k,): xi c_i (teacher)
    scale_t: torch.Tensor   # (k,): 1/r_i (N1) or 1 (N0)
    xi: float
    n1: bool                # normalisation N1 (unit-normalised neurons) or N0
    act: object             # TorchActivation


@dataclass
class _State:
    """Trained parameters, u_hat (S, 1, n) in span(W)^perp coordinates and c_hat (S, 1, k), and the student
    coefficients derived from c_hat: ``scale`` = 1/r_hat_j (N1) or 1 (N0), ``xc`` = xi c_hat_j scale_j and
    ``gvec`` = -2 lam_j xc_j (S, k, 1), refreshed after every c_hat step."""
    U: torch.Tensor
    c_hat: torch.Tensor
    scale: torch.Tensor = None
    xc: torch.Tensor = None
    gvec: torch.Tensor = None

    def refresh(self, consts):
        c = self.c_hat
        self.scale = torch.rsqrt(1 + consts.xi**2 * c * c) if consts.n1 else torch.ones_like(c)
        self.xc = consts.xi * c * self.scale
        self.gvec = (-2 * consts.lam.mT * self.xc).mT
        return self


def _factor(G):
    """``F`` of shape (k, q) with ``F F^T = G`` and q = numerical rank of G (eigenvalues > _RANK_TOL)."""
    vals, vecs = np.linalg.eigh((G + G.T) / 2)
    keep = vals > _RANK_TOL
    return vecs[:, keep] * np.sqrt(vals[keep])


def _teacher(consts, X, q):
    """Teacher outputs f*(x) of shape (..., 1) and ``W x`` of shape (..., k) for x = X (..., d)."""
    Wx = X[..., :q] @ consts.FT
    pre = torch.addcmul(Wx, X[..., q:q + 1], consts.c_t) * consts.scale_t
    return consts.act.f(pre) @ consts.lam, Wx


def _projected_gradient(U, y, coef, b):
    r"""Batch sum of the per-sample gradients, projected on span(W)^perp and then on u_hat^perp.

    .. math:: \hat g = (I - \hat u\hat u^\top)\,\Pi^\perp_W \sum_b \mathrm{coef}_b\, x_b,
              \quad \langle \Pi^\perp_W x_b, \hat u\rangle = b_b

    ``U`` (S, 1, n) is u_hat and ``y`` (S, B, n) the samples, both in span(W)^perp coordinates (so
    Pi_W^perp is implicit); ``coef`` (S, B, 1) is the per-sample ``dL/d<u_hat, x>`` and ``b`` (S, B, 1)
    is ``<u_hat, x>``. Returns shape (S, 1, n), orthogonal to ``U``.
    """
    g = torch.bmm(coef.mT, y)                                         # sum_b coef_b y_b
    return torch.addcmul(g, U, torch.bmm(coef.mT, b), value=-1)       # g - <g, u_hat> u_hat


def _sgd_step(consts, state, y, Wxs, fstar, lr, lr_c=None, update=True, out=None):
    r"""One online-SGD step on every seed; returns the residual f* - f_hat of shape (S, B, 1) (into ``out``).

    .. math:: u_{t+1} = \frac{u_t - \eta \hat\nabla L}{\lVert u_t - \eta \hat\nabla L\rVert},\quad
              \hat\nabla L = (I - u_t u_t^\top)\,\Pi^\perp_{W}\,\Big(-2 (f^* - \hat f)
              \sum_j \lambda_j \sigma'(\langle \hat v_j, x\rangle) \frac{\xi \hat c_j}{\hat r_j}\, x\Big)

    ``y`` (S, B, n) are the span(W)^perp coordinates of x, so Pi_W^perp is the restriction to them;
    ``Wxs`` is ``(W x)_j * scale_j``. The gradient is averaged over the batch axis B. With ``lr_c``
    (joint training) c_hat takes a plain SGD step on the same sample, simultaneously with u_hat.
    """
    U = state.U                                                       # (S, 1, n)
    b = torch.bmm(y, U.mT)                                            # <u_hat, x>, (S, B, 1)
    pre = torch.addcmul(Wxs, b, state.xc)                             # <v_hat_j, x>, (S, B, k)
    res = torch.sub(fstar, consts.act.f(pre) @ consts.lam, out=out)   # f* - f_hat, (S, B, 1)
    if not update:
        return res
    dact = consts.act.df(pre)
    coef = res * (dact @ state.gvec)                                  # dL/d<u_hat, x>, (S, B, 1)
    if lr_c is not None:
        dpre = consts.xi * state.scale * (b - pre * state.xc) if consts.n1 else consts.xi * b
        grad_c = (res * dact * dpre).mean(1, keepdim=True) * (-2 * consts.lam.mT)
        state.c_hat.sub_(grad_c, alpha=lr_c)
        state.refresh(consts)
    U.add_(_projected_gradient(U, y, coef, b), alpha=-lr / y.shape[1])
    U.div_(torch.linalg.vector_norm(U, dim=2, keepdim=True))
    return res


def _record_grid(steps, n_points):
    """Recorded steps t (int64, from 0 to ``steps``) and, for s = 0..steps, the index of the nearest t."""
    t = np.unique(np.round(np.linspace(0, steps, min(n_points, steps + 1))).astype(np.int64))
    window = np.searchsorted((t[:-1] + t[1:]) / 2, np.arange(steps + 1), side="right")
    return t, window


def _default_m0(problem, d):
    """``sign(h(0)) * 0.5 / sqrt(d)`` (docs/lora.md): start on the side the population flow goes to."""
    return (1.0 if h0(problem) >= 0 else -1.0) * 0.5 / np.sqrt(d)


def _check(problem, d, lr, steps, m0, seeds, batch, joint, lr_c, seed, owner=_OWNER):
    """The run's options (resolved by ``popdyn.simulate``) with the checks that involve the problem:
    ``d >= k + 3`` (as ``lora.predict``), the default m0 and ``lr_c`` (None: lr; only with ``joint``)."""
    d = check(owner, "d", d, Integer(problem.k + 3))
    if lr_c is not None and not joint:
        raise InvalidParameterError(f"The 'lr_c' parameter of {owner} needs joint=True. Got {lr_c!r} instead.")
    return {"d": d, "lr": float(lr), "steps": steps, "seeds": seeds, "batch": batch, "seed": seed,
            "joint": bool(joint), "m0": _default_m0(problem, d) if m0 is None else float(m0),
            "lr_c": (float(lr) if lr_c is None else float(lr_c)) if joint else None}


def _init(problem, opts, device, dtype, gen):
    """Constants, initial state (u_0 with overlap exactly m0 with u = first perp coordinate) and q."""
    F = _factor(problem.G)
    q, k, S = F.shape[1], problem.k, opts["seeds"]
    n1 = problem.normalisation == "N1"
    as_t = lambda a: torch.tensor(np.array(a, dtype=np.float64), dtype=dtype, device=device)
    consts = _Consts(FT=as_t(F.T), lam=as_t(problem.lam[:, None]), c_t=as_t(problem.xi * problem.c),
                     scale_t=as_t(1 / problem.r if n1 else np.ones(k)), xi=float(problem.xi), n1=n1,
                     act=torch_activation(problem.activation))
    n = opts["d"] - q
    e = standard_normal_(torch.empty((S, n), dtype=dtype, device=device), gen)
    e[:, 0] = 0
    e /= torch.linalg.vector_norm(e, dim=1, keepdim=True)
    m0 = opts["m0"]
    e *= float(np.sqrt(1 - m0 * m0))
    e[:, 0] = m0
    c_hat = as_t(problem.c_hat).expand(S, 1, k).clone()
    return consts, _State(U=e.unsqueeze(1), c_hat=c_hat).refresh(consts), q


def _draws(consts, state, q, opts, gen, C):
    """Chunks of C steps of fresh x ~ N(0, I_d): (y, f*, scaled W x) per step, in one reused buffer."""
    S, B, d, joint = opts["seeds"], opts["batch"], opts["d"], opts["joint"]
    X = torch.empty((C, S, B, d), dtype=state.U.dtype, device=state.U.device)
    for _ in range(-(-(opts["steps"] + 1) // C)):
        standard_normal_(X, gen)
        fstar, Wx = _teacher(consts, X, q)
        yield X[..., q:], fstar, Wx if joint else Wx * state.scale.unsqueeze(0)


def _run(consts, state, q, opts, t, window, gen, bar, draws=None, record=None, extra=()):
    """The SGD loop over steps 0..steps (the last one only evaluates the loss); returns recorded tensors.

    ``draws`` and ``record`` replace :func:`_draws` and :func:`_record` (general position,
    :func:`popdyn.sim.lora.general.simulate`);
    ``extra`` names further recorded observables."""
    draws, record = draws or _draws, record or _record
    S, B, d, steps, joint = opts["seeds"], opts["batch"], opts["d"], opts["steps"], opts["joint"]
    dev, dt = state.U.device, state.U.dtype
    C = max(1, min(_CHUNK_STEPS, _CHUNK_ELEMENTS // (S * B * d)))  # not a function of steps: longer runs
                                                                    # extend shorter ones with the same seed
    names = ("m", "c_overlap")[:1 + joint] + tuple(extra)
    rec = {name: torch.empty((S, len(t)), dtype=dt, device=dev) for name in names}
    loss_sum = torch.zeros((S, len(t)), dtype=dt, device=dev)
    window_t = torch.as_tensor(window, device=dev)
    slot = {int(s): j for j, s in enumerate(t)}
    for ci, (Y, fstar, Wxs) in enumerate(draws(consts, state, q, opts, gen, C)):
        s0, nc = ci * C, min(C, steps + 1 - ci * C)
        res = torch.empty((nc, S, B, 1), dtype=dt, device=dev)
        for i, (y, f, w, r) in enumerate(zip(Y.unbind(0), fstar.unbind(0), Wxs.unbind(0), res.unbind(0))):
            if s0 + i in slot:
                record(consts, state, rec, slot[s0 + i])
            w = w * state.scale if joint else w
            _sgd_step(consts, state, y, w, f, opts["lr"], opts["lr_c"], s0 + i < steps, r)
        loss_sum.index_add_(1, window_t[s0:s0 + nc], res.square().mean((2, 3)).T)
        bar.update(nc)
    rec["loss"] = loss_sum / torch.as_tensor(np.bincount(window, minlength=len(t)), dtype=dt, device=dev)
    return rec


def _record(consts, state, rec, j):
    """Write m = <u_hat, u> (and the cosine <c_hat, c>/||c_hat|| when c_hat is trained) into column j."""
    rec["m"][:, j] = state.U[:, 0, 0]
    if "c_overlap" in rec:
        c = state.c_hat[:, 0]
        rec["c_overlap"][:, j] = (c @ consts.c_t) / (torch.linalg.vector_norm(c, dim=1) * consts.xi)


def simulate(problem, *, d, lr, steps, m0, n_points, seed, batch, joint, lr_c, seeds, device, dtype, progress):
    r"""Online SGD on the LoRA student, all seeds batched: the finite-d twin of the overlap dynamics.

    .. math:: u_{t+1} = \frac{u_t - \eta \hat\nabla L(u_t; x_t)}{\lVert u_t - \eta \hat\nabla L(u_t; x_t)\rVert},
              \quad \hat\nabla L = (I - u_t u_t^\top)\Pi^\perp_{\mathrm{span} W}\nabla_{\hat u} L,
              \quad L = (f^*(x) - \hat f(x))^2,\ x_t \sim N(0, I_d)

    Parameters
    ----------
    problem : lora.Problem
        The teacher and student; ``problem.normalisation`` picks N1 (unit-normalised neurons
        ``s(<w_j + xi c_j u, x> / r_j)``) or N0 (unnormalised, main text).
    d : int
        Input dimension, ``d >= k + 3`` (as ``lora.predict``).
    lr : float
        Step size eta in (0, inf); the theory's regime is ``eta = delta / d`` with small delta.
    steps : int
        Number of SGD steps, ``>= 1``.
    m0 : float, optional
        Initial overlap ``<u_0, u>`` in [-1, 1], exact on every seed; the rest of u_0 is uniform on the
        sphere of span(W, u)^perp. Default ``sign(h(0)) * 0.5 / sqrt(d)`` (docs/lora.md).
    seeds : int
        Independent runs ``>= 1``, batched on one device.
    device : str or torch.device
        "cpu", "cuda" or "cuda:N".
    dtype : {None, "float64", "float32"}
        Working precision; None is float64 (on every device).
    n_points : int
        Number of recorded steps, evenly spaced from 0 to ``steps`` (``>= 2``; fewer when steps is small).
    batch : int
        Fresh samples per step; the gradient is their mean (1 is online SGD, the paper's algorithm).
    joint : bool
        Also train c_hat (extension, Figs 2-4): plain SGD on the same sample with step ``lr_c``, no
        normalisation or projection of c_hat (the paper gives neither). In N1 the student
        norms ``r_hat_j = sqrt(1 + xi^2 c_hat_j^2)`` follow c_hat and its gradient includes them.
    lr_c : float, optional
        Step for c_hat when ``joint``, >= 0; default ``lr``. ``lr_c = 0`` keeps c_hat frozen: the same
        numbers as ``joint=False`` (and ``c_overlap`` recorded).
    seed : int
        Seed of the run's ``torch.Generator``: same seed, same numbers (on the same device and dtype).
    progress : bool
        Show a tqdm bar over the steps (when tqdm is installed).

    Returns
    -------
    Simulation
        ``t`` (int steps, ``t_unit = "steps"``) and observables of shape (seeds, len(t)): ``m`` =
        ``<u_t, u>``; ``loss`` = mean of the per-sample losses ``L(u_s; x_s)`` (over the batch and over
        the steps s nearest to each recorded t, s = 0..steps; the loss at s = steps takes one extra
        sample without an update), the online estimate of the population loss ``Phi(m_t)``; with
        ``joint``, ``c_overlap`` = ``<c_hat_t, c> / ||c_hat_t||``. ``status`` is -1 when a run diverged.

    Notes
    -----
    Regime: any d >= k + 3; the population recursion ``m_{t+1} = m_t + eta h(m_t)(1 - m_t^2)`` holds
    for ``eta d -> 0``; at ``eta = delta / d`` the normalisation adds a drift ``-2 delta^2 m B0(m)`` in
    ``tau = t / d`` (derived in docs/lora.md). W is placed in the first rank(G) coordinates (exact, x is isotropic),
    so Pi_W^perp is a coordinate restriction. In N1, ``r_hat`` is treated as constant in the u_hat
    gradient (its derivative is radial and removed by the projection).

    References
    ----------
    .. [src] [Dayi25, Section 2, eq. (4); App. E.1 (exact one-step relation)]; the normalisation drift derived
       in docs/lora.md.

    Examples
    --------
    >>> import popdyn
    >>> from popdyn.models import lora
    >>> p = lora.Problem.orthonormal(k=2, xi=1.0, seed=0)
    >>> sim = popdyn.simulate(p, d=16, lr=0.01, steps=10, seeds=2, m0=0.25, n_points=3)
    >>> sim.t.tolist(), sim["m"][:, 0].tolist()  # m0 is exact on every seed
    ([0, 5, 10], [0.25, 0.25])
    """
    opts = _check(problem, d, lr, steps, m0, seeds, batch, joint, lr_c, seed)
    dev, dt = resolve_device(device, _OWNER), resolve_dtype(dtype, _OWNER)
    t, window = _record_grid(opts["steps"], n_points)
    gen = make_generator(opts["seed"], dev)
    start = time.perf_counter()
    work = opts["seeds"] * opts["batch"] * opts["d"]
    with torch.inference_mode(), serial_if_small(dev, work):
        consts, state, q = _init(problem, opts, dev, dt, gen)
        bar = _torch.progress(opts["steps"] + 1, progress, "lora.simulate", unit="step")
        try:
            rec = _run(consts, state, q, opts, t, window, gen, bar)
        finally:
            bar.close()
        obs = {name: to_numpy(v) for name, v in rec.items()}
    wall = time.perf_counter() - start
    ok = all(np.all(np.isfinite(v)) for v in obs.values())
    meta = {"problem": repr(problem), "options": {**opts, "n_points": n_points},
            "t_unit": "steps", "device": str(dev), "dtype": str(dt).replace("torch.", ""),
            "torch_version": torch.__version__, "seeds": opts["seeds"], "seed": opts["seed"], "wall_time_s": wall,
            "steps_per_s": (opts["steps"] + 1) / wall, "rank_G": q, "activation_native": consts.act.native}
    message = "" if ok else (f"non-finite values: the run diverged or overflowed at lr={opts['lr']} "
                             f"({meta['dtype']}); lower lr, or use float64")
    return Simulation(t=t, observables=obs, status=0 if ok else -1, message=message, meta=meta)
