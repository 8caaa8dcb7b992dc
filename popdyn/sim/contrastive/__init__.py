"""Finite-sample contrastive pre-training, CR fine-tuning and norm-bounded linear probes in torch, batched over seeds:
``popdyn.simulate`` for :class:`popdyn.models.contrastive.Problem` ([Shi24] ch. 7; docs/contrastive.md).

Public names
------------
project_spectral_frobenius
    Batched projection onto {||W|| <= 1, ||W||_F <= sqrt r} (singular values min(1, sigma/(1 + mu)), mu by bisection).
pretrain
    Projected SGD on the contrastive loss ell(phi(x)^T phi(x^+)) of task t or of the mixture.
cr_finetune
    Projected SGD on task t's contrastive loss inside {||W - W0||_F <= gamma} and the spectral-Frobenius set
    (Dykstra's alternating projections).
probe_excess_risk
    Norm-constrained least squares (||u|| <= B_{phi,t}, ridge with lambda by bisection) on n_labelled points; the
    exact population excess risk of each fit.
simulate
    ``popdyn.simulate(problem, steps=..., batch=..., lr=..., ft_steps=..., n_labelled=..., probes=..., seeds=...)``
    -> :class:`popdyn.results.Simulation` with the observables of ``popdyn.predict`` that training can measure
    (``alpha``, ``beta``, ``probe_norm``, ``column_norms``, ``gram_offdiag``) and ``excess_risk``
    (seeds, 3, len(n_labelled)).
"""
from __future__ import annotations

import numpy as np
import torch

from ..._validate import Options, check
from ...models.contrastive import LOSSES, REPRESENTATIONS
from ...results import Simulation
from .._torch import (make_generator, progress as _progress, resolve_device, resolve_dtype, serial_if_small,
                      standard_normal_, to_numpy)

__all__ = ["project_spectral_frobenius", "pretrain", "cr_finetune", "probe_excess_risk", "simulate"]

_OWNER = "contrastive.simulate"
_DLOSS = {"logistic": lambda u: -torch.sigmoid(-u), "exp": lambda u: -torch.exp(-u),
          "linear": lambda u: -torch.ones_like(u)}


def project_spectral_frobenius(W, r):
    """Project each W[i] (batch, k, d) onto {||W|| <= 1, ||W||_F^2 <= r} (the numpy twin in the model bisects).

    With c = 1 + mu and the j largest singular values capped, sum min(1, sigma/c)^2 = j + tail_j / c^2 = r gives
    c_j = sqrt(tail_j / (r - j)); the candidate with c_j >= 1 that meets the budget is the projection.
    """
    U, sv, Vh = torch.linalg.svd(W, full_matrices=False)
    capped = sv.clamp(max=1.0)
    over = (capped**2).sum(-1) > r
    if bool(over.any()):
        n = sv.shape[-1]
        j = torch.arange(n, dtype=sv.dtype, device=sv.device)
        tail = (sv**2).flip(-1).cumsum(-1).flip(-1)                              # sum_{i >= j} sigma_i^2
        c = (tail / (r - j).clamp(min=1e-300)).sqrt().where(j < r, torch.full_like(tail, torch.inf)).clamp(min=1.0)
        f = ((sv[..., None, :] / c[..., :, None]).clamp(max=1.0) ** 2).sum(-1)  # budget used by each candidate
        best = (f - r).abs().argmin(-1, keepdim=True)
        scaled = (sv / c.gather(-1, best)).clamp(max=1.0)
        capped = torch.where(over[:, None], scaled, capped)
    return (U * capped[:, None, :]) @ Vh


def _pairs(problem, t, n, gen, dt, dev, seeds):
    """(x, x^+) of shape (seeds, n, d): task t, or tasks drawn from the weights when t is None."""
    scales = torch.as_tensor(np.stack([problem.feature_scales(j) for j in range(problem.n_tasks)]), dtype=dt, device=dev)
    if t is None:
        task = torch.multinomial(torch.tensor(problem.weights, device=dev), seeds * n, True, generator=gen)
        sc = scales[task].reshape(seeds, n, -1)
    else:
        sc = scales[t].expand(seeds, n, -1)
    x = standard_normal_(torch.empty(seeds, n, problem.d, dtype=dt, device=dev), gen) * sc
    xp = x.clone()
    k = problem.k
    xp[..., k:] = standard_normal_(torch.empty(seeds, n, problem.d - k, dtype=dt, device=dev), gen) * sc[..., k:]
    return x, xp


def _grad(W, x, xp, dloss):
    """Gradient of mean ell((W x)^T (W x^+)) in W: mean ell'(u) W (x x^+T + x^+ x^T)."""
    A, Ap = x @ W.mT, xp @ W.mT
    g = dloss((A * Ap).sum(-1)) / x.shape[1]
    return (Ap * g[..., None]).mT @ x + (A * g[..., None]).mT @ xp


def pretrain(problem, t=None, *, steps=6000, batch=512, lr=0.05, seeds=2, seed=0, loss="logistic", device="cpu",
             dtype=None, progress=False):
    """Projected SGD from a random start (entries N(0, 0.25/d), projected) on task t (None: the mixture).

    The step is ``lr`` for the first half and falls linearly to 0 over the second (a settled end point).

    Returns W of shape (seeds, k, d) as a torch tensor; seed i uses ``torch.Generator().manual_seed(seed + i)``
    through one generator seeded with ``seed``.
    """
    dev, dt = resolve_device(device, "contrastive.pretrain"), resolve_dtype(dtype, "contrastive.pretrain")
    dloss = _DLOSS[check("contrastive.pretrain", "loss", loss, Options(tuple(LOSSES)))]
    gen = make_generator(seed, dev)
    W = standard_normal_(torch.empty(seeds, problem.k, problem.d, dtype=dt, device=dev), gen) * (0.5 / problem.d**0.5)
    W = project_spectral_frobenius(W, problem.r)
    bar = _progress(steps, progress, "contrastive.pretrain", unit="step")
    for i in range(steps):
        x, xp = _pairs(problem, t, batch, gen, dt, dev, seeds)
        W = project_spectral_frobenius(W - lr * min(1.0, 2 * (1 - i / steps)) * _grad(W, x, xp, dloss), problem.r)
        bar.update()
    bar.close()
    return W


def cr_finetune(problem, W0, *, steps=2000, batch=512, lr=0.05, dykstra=5, seed=1, loss="logistic",
                progress=False):
    """Projected SGD on task t's contrastive loss within ||W - W0||_F <= gamma, ||W|| <= 1, ||W||_F <= sqrt r.

    The projection onto the intersection is ``dykstra`` rounds of Dykstra's algorithm (ball, then the
    spectral-Frobenius set), ending in the latter; W0 of shape (seeds, k, d).
    """
    dloss = _DLOSS[check("contrastive.cr_finetune", "loss", loss, Options(tuple(LOSSES)))]
    gen = make_generator(seed, W0.device)
    gamma, W = problem.gamma, W0.clone()

    def ball(V):
        dist = (V - W0).flatten(1).norm(dim=1).clamp(min=1e-300)
        return W0 + (V - W0) * (gamma / dist).clamp(max=1.0)[:, None, None]

    bar = _progress(steps, progress, "contrastive.cr_finetune", unit="step")
    for _ in range(steps):
        x, xp = _pairs(problem, problem.t, batch, gen, W.dtype, W.device, W.shape[0])
        V = W - lr * _grad(W, x, xp, dloss)
        p, q = torch.zeros_like(V), torch.zeros_like(V)
        for _ in range(dykstra):
            Y = ball(V + p)
            p = V + p - Y
            V = project_spectral_frobenius(Y + q, problem.r)
            q = Y + q - V
        W = V
        bar.update()
    bar.close()
    return W


def _norms(problem, W):
    """alpha (mean squared column norm on S) and beta (on P_t) of W (seeds, k, d), as numpy."""
    S, P, _, _ = problem.index_sets()
    c2 = (W**2).sum(-2)
    return to_numpy(c2[:, S].mean(-1)), to_numpy(c2[:, P[problem.t]].mean(-1))


def probe_excess_risk(problem, W, n_labelled, probes, gen, task=None, B=None):
    """Excess risks (seeds, probes) of the norm-bounded least-squares probe on n_labelled points of task ``task``
    (default the target t), and the norm bound (seeds,).

    B defaults to the norm of the min-norm exact probe W_{R_i}^T u = u*_i on the learned W (F.68; task i's inputs
    vanish on the other tasks' private features, so only the R_i columns constrain u); a float B is used as given
    (inf: unconstrained). The fit is the minimiser of the empirical squared loss over ||u|| <= B (ridge with lambda
    by bisection when the min-norm fit is longer); the excess risk is the exact population value
    (W^T u - u*_i)^T Sigma_i (W^T u - u*_i).
    """
    dt, dev, seeds = W.dtype, W.device, W.shape[0]
    i = problem.t if task is None else task
    S, P, _, _ = problem.index_sets()
    Rt = np.concatenate([S, P[i]])
    target = torch.zeros(problem.d, dtype=dt, device=dev)
    u_star = torch.as_tensor(problem.u_star, dtype=dt, device=dev)
    target[Rt] = u_star
    B = ((torch.linalg.pinv(W[:, :, Rt].mT) @ u_star).norm(dim=-1) if B is None    # (seeds,): only R_i is seen
         else torch.full((seeds,), float(B), dtype=dt, device=dev))
    scale = torch.as_tensor(problem.feature_scales(i), dtype=dt, device=dev)
    m = n_labelled
    x = standard_normal_(torch.empty(seeds, probes, m, problem.d, dtype=dt, device=dev), gen) * scale
    y = x @ target + problem.noise * standard_normal_(torch.empty(seeds, probes, m, dtype=dt, device=dev), gen)
    phi = x @ W.mT[:, None]                                                   # (seeds, probes, m, k)
    e, V = torch.linalg.eigh(phi.mT @ phi)
    b = (V.mT @ (phi.mT @ y[..., None]))[..., 0]
    keep = e > e.amax(-1, keepdim=True) * 1e-12
    coef = torch.where(keep, b / torch.where(keep, e, 1.0), 0.0)            # min-norm least squares
    Bx = B[:, None].expand(seeds, probes)
    lo, hi = torch.zeros_like(Bx), torch.full_like(Bx, 1.0)
    while bool(((b / (e + hi[..., None])).norm(dim=-1) > Bx).any()):
        hi = hi * 10
    for _ in range(100):
        mid = (lo + hi) / 2
        long = (b / (e + mid[..., None])).norm(dim=-1) > Bx
        lo, hi = torch.where(long, mid, lo), torch.where(long, hi, mid)
    ridge = b / (e + hi[..., None])
    coef = torch.where((coef.norm(dim=-1) > Bx)[..., None], ridge, coef)
    u = (V @ coef[..., None])[..., 0]                                         # (seeds, probes, k)
    err = torch.einsum("spk,skd->spd", u, W) - target                         # (seeds, probes, d)
    return (err**2 * scale**2).sum(-1), B


def simulate(problem, *, n_labelled, loss, steps, batch, lr, ft_steps, probes, seeds, seed, device, dtype, progress):
    """Pre-train universal (mixture) and specific (task t) representations, CR-fine-tune the trained universal one,
    probe each on n_labelled labelled points; observables with a leading seed axis (see the module docstring).

    Pre-training is ``steps`` projected SGD steps of ``batch`` positive pairs from a random start (step ``lr``, falling
    linearly to 0 over the second half); fine-tuning ``ft_steps`` steps at ``lr``; ``probes`` labelled sets per seed
    and probe size. The seeds run batched; ``seed`` seeds the generators.
    """
    ms = problem.labelled_sizes(n_labelled, _OWNER)
    dev, dt = resolve_device(device, _OWNER), resolve_dtype(dtype, _OWNER)
    with serial_if_small(dev, seeds * batch * problem.d * 4):
        kw = dict(steps=steps, batch=batch, lr=lr, seeds=seeds, loss=loss, device=dev, dtype=dt,
                  progress=progress)
        Wu = pretrain(problem, None, seed=seed, **kw)
        Ws = pretrain(problem, problem.t, seed=seed + 10_000, **kw)
        # the warm start is the trained universal representation (pre-train, then fine-tune: the protocol of
        # Prop. F.9, [Shi24, App. F.3], whose analysis places that start at the universal optimum W*); the population
        # W* enters only the prediction
        Wc = cr_finetune(problem, Wu.contiguous(), steps=ft_steps, batch=batch, lr=lr, seed=seed + 20_000, loss=loss,
                         progress=progress)
        gen = make_generator(seed + 30_000, dev)
        alpha, beta, B, risk = [], [], [], []
        for W in (Wu, Wc, Ws):
            al, be = _norms(problem, W)
            alpha.append(al)
            beta.append(be)
            per_m = [probe_excess_risk(problem, W, int(mm), probes, gen) for mm in ms]
            risk.append(np.stack([to_numpy(r.mean(-1)) for r, _ in per_m], axis=-1))
            B.append(to_numpy(per_m[0][1]))
    S, P, _, _ = problem.index_sets()
    G = Wu.mT @ Wu
    blocks = [G[:, Rt][:, :, Rt] for Rt in (np.concatenate([S, p]) for p in P)]
    off = torch.stack([(g - torch.diag_embed(torch.diagonal(g, dim1=-2, dim2=-1))).abs().amax(dim=(1, 2))
                       for g in blocks]).amax(0)
    obs = {"alpha": np.stack(alpha, 1), "beta": np.stack(beta, 1), "probe_norm": np.stack(B, 1),
           "column_norms": to_numpy((Wu**2).sum(-2).sqrt()), "excess_risk": np.stack(risk, 1),
           "gram_offdiag": to_numpy(off)}
    meta = {"seeds": [seed + i for i in range(seeds)], "n_labelled": ms, "device": str(dev), "dtype": str(dt),
            "note": "CR fine-tuning starts from the trained universal representation (Prop. F.9's protocol: "
                    "pre-train, then fine-tune)"}
    return Simulation(t=None, observables=obs, meta=meta,
                      coords={"representation": np.array(REPRESENTATIONS), "n_labelled": ms})
