"""Finite-sample ERM / ERM-NU on the spurious-feature model in torch, batched over seeds: the simulation of
``popdyn.simulate`` for :class:`popdyn.models.domain_gen.Problem` ([Shi24] Section 6.4;
docs/domain_gen.md).

Public names
------------
sample_features
    Label-multiplied features z of shape (seeds, n, d) drawn on the device from a seeded torch generator.
batch_nuclear_norm
    ``||Phi(X_B)||_* / sqrt(B)`` of the batch features Phi = Z diag(w) (the population-normalised form, C.7).
train
    Full-batch gradient descent (or L-BFGS) on w with the fixed all-ones head: logistic loss + lam/2 ||w||^2 ("l2"),
    + lam ||Z diag(w)||_* / sqrt(n) ("nuclear"), or + lam ||w||_1 ("l1": accelerated proximal gradient, exact zeros).
simulate
    ``popdyn.simulate(problem, lam=..., penalty=..., n_train=..., steps=..., lr=..., ...)`` ->
    :class:`popdyn.results.Simulation`
    with observables ``alpha``, ``beta`` (block means of w), ``acc_id``, ``acc_ood`` (test accuracy),
    ``nuclear_norm`` and ``stable_rank`` (of the test features), one row per seed, coordinate ``lam``.
"""
from __future__ import annotations

import numpy as np
import torch

from ..._validate import InvalidParameterError
from ...results import Simulation
from .._torch import make_generator, progress as make_bar, resolve_device, resolve_dtype, serial_if_small, to_numpy

__all__ = ["sample_features", "batch_nuclear_norm", "train", "simulate", "train_toy2d_full"]

_OWNER = "domain_gen.simulate"


def sample_features(model, seeds, n, domain, generator, dtype=torch.float64, device="cpu"):
    """z of shape (seeds, n, d): U[0, 1] on the r invariant coordinates, D_{+-gamma} on the others."""
    g = model.g(domain)
    u = torch.rand((seeds, n, model.d), generator=generator, dtype=dtype, device=device)
    sign = torch.where(torch.rand((seeds, n, model.m), generator=generator, dtype=dtype, device=device) < 0.5 + g,
                       1.0, -1.0).to(dtype)
    return torch.cat([u[..., :model.r], u[..., model.r:] * sign], dim=-1)


def batch_nuclear_norm(Z, w):
    """||Z diag(w)||_* / sqrt(n) for Z of shape (..., n, d) and w of shape (..., d) (docs/domain_gen.md).

    Computed as the nuclear norm of R diag(w) with R^T R = Z^T Z / n (same singular values, d x d instead of n x d).
    """
    G = Z.transpose(-1, -2) @ Z / Z.shape[-2]
    return _gram_nuclear(torch.linalg.cholesky(G).transpose(-1, -2), w)


def _gram_nuclear(R, w):
    return torch.linalg.svdvals(R * w.unsqueeze(-2)).sum(-1)


def _objective(Z, R, w, lam, penalty):
    loss = torch.nn.functional.softplus(-(Z @ w.unsqueeze(-1)).squeeze(-1)).mean(-1)
    if penalty == "l2":
        return loss + lam / 2 * (w * w).sum(-1)
    return loss + lam * _gram_nuclear(R, w)


def train(Z, lam, penalty, steps, lr, w0=None, method="gd"):
    """Minimise the empirical objective over w (shape (seeds, d)) from ``w0`` (default 0); returns w.

    ``method="gd"``: ``steps`` full-batch gradient steps of size ``lr``. ``method="lbfgs"``: torch's L-BFGS with a
    strong-Wolfe line search, at most ``steps`` iterations (the nuclear norm is not smooth where a weight is 0; GD
    relaxes the invariant weights' spread at rate ~ lr E[l''] Var z = lr / 60 per step there, L-BFGS in tens of
    iterations). The nuclear term is the batch nuclear norm over sqrt(n), via the Cholesky factor of Z^T Z / n.
    ``penalty="l1"`` takes ``steps`` accelerated proximal gradient steps (FISTA: a gradient step on the loss, then
    soft-thresholding by lr lam), which set weights exactly to 0; it has no L-BFGS form.
    """
    if penalty == "l1" and method == "lbfgs":
        raise InvalidParameterError(f"The 'method' parameter of {_OWNER} must be 'gd' with penalty='l1' (proximal "
                                    f"gradient descent; L-BFGS needs a smooth objective). Got {method!r} instead.")
    G = Z.transpose(-1, -2) @ Z / Z.shape[-2]
    R = torch.linalg.cholesky(G).transpose(-1, -2)
    w = (torch.zeros(Z.shape[0], Z.shape[-1], dtype=Z.dtype, device=Z.device) if w0 is None else w0.clone())
    w.requires_grad_(True)
    if method == "lbfgs":
        opt = torch.optim.LBFGS([w], lr=1, max_iter=steps, history_size=50, line_search_fn="strong_wolfe",
                                tolerance_grad=1e-12, tolerance_change=1e-15)

        def closure():
            opt.zero_grad()
            f = _objective(Z, R, w, lam, penalty).sum()
            f.backward()
            return f
        opt.step(closure)
        return w.detach()
    if penalty == "l1":
        return _fista(Z, w.detach(), lam, steps, lr)
    for _ in range(steps):
        f = _objective(Z, R, w, lam, penalty).sum()
        (g,) = torch.autograd.grad(f, w)
        with torch.no_grad():
            w -= lr * g
    return w.detach()


def _fista(Z, w, lam, steps, lr):
    """Accelerated proximal gradient (FISTA, Beck and Teboulle 2009) on the mean logistic loss + lam ||w||_1: a step
    of size lr from the extrapolated point, then soft-thresholding by lr lam (exact zeros)."""
    prev = w.clone()
    for k in range(steps):
        v = (w + (k / (k + 3)) * (w - prev)).requires_grad_(True)
        f = torch.nn.functional.softplus(-(Z @ v.unsqueeze(-1)).squeeze(-1)).mean(-1).sum()
        (g,) = torch.autograd.grad(f, v)
        with torch.no_grad():
            u = v - lr * g
            prev, w = w, torch.sign(u) * torch.clamp(u.abs() - lr * lam, min=0)
    return w


def simulate(model, *, lam, penalty, n_train, steps, lr, method, n_test, seeds, seed, device, dtype, progress):
    """Train w on ``n_train`` ID samples per seed at each ``lam`` (warm-started along the path) by full-batch GD or
    L-BFGS (``method``, see :func:`train`); test on ``n_test`` fresh ID and OOD samples. All seeds draw from one
    generator seeded with ``seed``. The options are resolved by ``popdyn.simulate`` (``Problem.options``)."""
    if penalty == "rank":
        raise InvalidParameterError(f"The 'penalty' parameter of {_OWNER} must be one of ['l2', 'nuclear', 'l1'] "
                                    f"(ERM-rank has no simulation). Got {penalty!r} instead.")
    if n_train <= model.d:  # batch > d (the paper's Section 6.2.2): a full-rank Gram
        raise InvalidParameterError(f"The 'n_train' parameter of {_OWNER} must be an int in [d + 1, inf] = "
                                    f"[{model.d + 1}, inf] (a full-rank Gram matrix). Got {n_train!r} instead.")
    dev, dt = resolve_device(device, _OWNER), resolve_dtype(dtype, _OWNER)
    gen = make_generator(seed, dev)
    obs = {k: [] for k in ("alpha", "beta", "acc_id", "acc_ood", "nuclear_norm", "stable_rank")}
    bar = make_bar(len(lam), progress, _OWNER, unit="lambda")
    # the step's cost is the d x d SVD and its backward (threads stall on a busy CPU: 136 s vs 11 s measured)
    with serial_if_small(dev, seeds * model.d * model.d):
        Z = sample_features(model, seeds, n_train, "id", gen, dt, dev)
        Zid, Zood = (sample_features(model, seeds, n_test, dom, gen, dt, dev) for dom in ("id", "ood"))
        w = None
        for x in lam:
            w = train(Z, float(x), penalty, steps, lr, w, method)
            if not bool(torch.isfinite(w).all()):
                raise InvalidParameterError(f"The 'lr' parameter of {_OWNER} = {lr!r} made GD diverge at lam = {x!r} "
                                            f"(stable for lr < 2/(lam + L), L <= (r/4 + (d-r) gamma^2)/4); lower lr.")
            with torch.no_grad():
                sv = torch.linalg.svdvals(Zid * w.unsqueeze(-2))
                row = {"alpha": w[:, :model.r].mean(-1), "beta": w[:, model.r:].mean(-1) if model.m else 0 * w[:, 0],
                       "acc_id": ((Zid @ w.unsqueeze(-1)).squeeze(-1) > 0).to(dt).mean(-1),
                       "acc_ood": ((Zood @ w.unsqueeze(-1)).squeeze(-1) > 0).to(dt).mean(-1),
                       "nuclear_norm": sv.sum(-1) / np.sqrt(n_test), "stable_rank": (sv ** 2).sum(-1) / sv[:, 0] ** 2}
            for k, v in row.items():
                obs[k].append(to_numpy(v))
            bar.update()
    bar.close()
    meta = {"device": str(dev), "dtype": str(dt).replace("torch.", "")}
    return Simulation(t=None, observables={k: np.stack(v, axis=1) for k, v in obs.items()}, meta=meta,
                      coords={"lam": lam})


def train_toy2d_full(gamma, lam, penalty, n_train, steps, lr, seeds, seed=0, device="cpu", dtype=torch.float64):
    """Train a full feature map Phi(x) = A x (A of shape (seeds, 2, 2), from A = I / 2) with the fixed all-ones head
    on ``n_train`` ID samples of the 2-D toy (Section 6.3.1; z_2 ~ D_gamma) by ``steps`` full-batch gradient steps of
    size ``lr`` along the path ``lam`` (warm-started); returns A of shape (seeds, len(lam), 2, 2) as numpy.

    Objective: mean logistic loss of 1^T A z + lam/2 ||A||_F^2 ("l2") or + lam ||Z A^T||_* / sqrt(n) ("nuclear",
    via the Cholesky factor of Z^T Z / n; a subgradient step where A Sigma^{1/2} has rank 1). The last half of the
    steps is averaged (Polyak averaging), which settles the subgradient oscillation across the rank-one kink.
    """
    from ...models.domain_gen import Problem
    dev, dt = resolve_device(device, "domain_gen.train_toy2d_full"), resolve_dtype(dtype, "domain_gen.train_toy2d_full")
    gen = make_generator(seed, dev)
    with serial_if_small(dev, 4 * seeds):
        Z = sample_features(Problem(1, 2, gamma), seeds, n_train, "id", gen, dt, dev)
        R = torch.linalg.cholesky(Z.transpose(-1, -2) @ Z / n_train).transpose(-1, -2)
        A = 0.5 * torch.eye(2, dtype=dt, device=dev).repeat(seeds, 1, 1)
        out = []
        for x in lam:
            A.requires_grad_(True)
            avg, k = torch.zeros_like(A), 0
            for t in range(steps):
                f = torch.nn.functional.softplus(-(Z @ A.sum(-2).unsqueeze(-1)).squeeze(-1)).mean(-1)
                f = f + (x / 2 * (A * A).sum((-1, -2)) if penalty == "l2"
                         else x * torch.linalg.svdvals(R @ A.transpose(-1, -2)).sum(-1))
                (g,) = torch.autograd.grad(f.sum(), A)
                with torch.no_grad():
                    A = A - lr * g
                    if 2 * t >= steps:
                        avg, k = avg + A, k + 1
                A.requires_grad_(True)
            A = (avg / k).detach()
            out.append(to_numpy(A))
    return np.stack(out, axis=1)
