"""Finite-sample ERM / ERM-NU on the spurious-feature model in torch, batched over seeds; registers
``popdyn.simulate`` (seed 001 section 6.4; specs/looped_contrastive_dg.md C.4).

Public names
------------
sample_features
    Label-multiplied features z of shape (seeds, n, d) drawn on the device from a seeded torch generator.
batch_nuclear_norm
    ``||Phi(X_B)||_* / sqrt(B)`` of the batch features Phi = Z diag(w) (the population-normalised form, C.7).
train
    Full-batch gradient descent (or L-BFGS) on w with the fixed all-ones head: logistic loss + lam/2 ||w||^2 ("l2") or
    + lam ||Z diag(w)||_* / sqrt(n) ("nuclear").
simulate
    ``simulate(model, *, lam, penalty, n, steps, lr, seeds, test, ...)`` -> :class:`popdyn.results.Simulation`
    with observables ``alpha``, ``beta`` (block means of w), ``acc_id``, ``acc_ood`` (test accuracy),
    ``nuclear_norm`` and ``stable_rank`` (of the test features), one row per seed, coordinate ``lam``.
"""
from __future__ import annotations

import numpy as np
import torch

from .._validate import FiniteArray, Integer, Interval, InvalidParameterError, Options, check
from ..api import simulate as _api_simulate
from ..models.domain_gen import SpuriousFeatureModel
from ..results import Simulation
from ._torch import make_generator, progress, resolve_device, resolve_dtype, serial_if_small, to_numpy

__all__ = ["sample_features", "batch_nuclear_norm", "train", "simulate"]

_OWNER = "domain_gen.simulate"


def sample_features(model, seeds, n, domain, generator, dtype=torch.float64, device="cpu"):
    """z of shape (seeds, n, d): U[0, 1] on the r invariant coordinates, D_{+-gamma} on the others."""
    g = model.g(domain)
    u = torch.rand((seeds, n, model.d), generator=generator, dtype=dtype, device=device)
    sign = torch.where(torch.rand((seeds, n, model.m), generator=generator, dtype=dtype, device=device) < 0.5 + g,
                       1.0, -1.0).to(dtype)
    return torch.cat([u[..., :model.r], u[..., model.r:] * sign], dim=-1)


def batch_nuclear_norm(Z, w):
    """||Z diag(w)||_* / sqrt(n) for Z of shape (..., n, d) and w of shape (..., d) (spec C.7's normalisation).

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
    """
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
    for _ in range(steps):
        f = _objective(Z, R, w, lam, penalty).sum()
        (g,) = torch.autograd.grad(f, w)
        with torch.no_grad():
            w -= lr * g
    return w.detach()


def _check(model, lam, penalty, n, steps, lr, seeds, test, seed, method):
    check(_OWNER, "method", method, Options(("gd", "lbfgs")))
    lam = check(_OWNER, "lam", np.atleast_1d(lam), FiniteArray(1))
    if not np.all(lam > 0):
        raise InvalidParameterError(f"The 'lam' parameter of {_OWNER} must be an array of floats in (0, inf). "
                                    f"Got {lam!r} instead.")
    penalty = check(_OWNER, "penalty", penalty, Options(("l2", "nuclear")))
    n = check(_OWNER, "n", n, Integer(model.d + 1))  # batch > d (the paper's L1650): a full-rank Gram
    return (lam, penalty, n, check(_OWNER, "steps", steps, Integer(1)),
            check(_OWNER, "lr", lr, Interval(0, np.inf, "neither")), check(_OWNER, "seeds", seeds, Integer(1)),
            check(_OWNER, "test", test, Integer(1)), check(_OWNER, "seed", seed, Integer(0)))


@_api_simulate.register(SpuriousFeatureModel)
def simulate(model, *, lam, penalty="l2", n=4096, steps=1500, lr=0.25, seeds=2, test=20_000, seed=0, method="gd",
             device="cpu", dtype=None, progress_bar=False):
    """Train w on ``n`` ID samples per seed at each ``lam`` (warm-started along the path) by full-batch GD or L-BFGS
    (``method``, see :func:`train`); test on fresh ID and OOD samples. All seeds draw from one generator seeded
    with ``seed``."""
    lam, penalty, n, steps, lr, seeds, test, seed = _check(model, lam, penalty, n, steps, lr, seeds, test, seed, method)
    dev, dt = resolve_device(device, _OWNER), resolve_dtype(dtype, _OWNER)
    gen = make_generator(seed, dev)
    obs = {k: [] for k in ("alpha", "beta", "acc_id", "acc_ood", "nuclear_norm", "stable_rank")}
    bar = progress(len(lam), progress_bar, _OWNER)
    # the step's cost is the d x d SVD and its backward (threads stall on a busy CPU: 136 s vs 11 s measured)
    with serial_if_small(dev, seeds * model.d * model.d):
        Z = sample_features(model, seeds, n, "id", gen, dt, dev)
        Zid, Zood = (sample_features(model, seeds, test, dom, gen, dt, dev) for dom in ("id", "ood"))
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
                       "nuclear_norm": sv.sum(-1) / np.sqrt(test), "stable_rank": (sv ** 2).sum(-1) / sv[:, 0] ** 2}
            for k, v in row.items():
                obs[k].append(to_numpy(v))
            bar.update()
    bar.close()
    meta = {"problem": repr(model), "seeds": [seed], "options": {"lam": lam, "penalty": penalty, "n": n, "steps": steps,
            "lr": lr, "method": method, "test": test, "device": str(dev), "dtype": str(dt)}}
    return Simulation(t=None, observables={k: np.stack(v, axis=1) for k, v in obs.items()}, meta=meta,
                      coords={"lam": lam})
