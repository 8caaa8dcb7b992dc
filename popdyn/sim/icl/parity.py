"""Finite-sample sparse-parity ICL in torch ([Shi24] Section 5.5): the simulation of ``icl.parity``.

Public names
------------
simulate
    ``simulate(problem, *, test_context, prompts, flip, seeds, ...)``: the paper's heads ``g_1^*`` and ``g_2^*``
    put into ``W^(n) = G diag(V^(n)) G^T`` with a random orthonormal dictionary G per seed, evaluated on fresh
    full prompts ``x = G phi`` of ``test_context`` examples (M in the paper; a fraction ``flip`` of the context
    labels flipped); the prompt lengths are ``coords["test_context"]``. Observables ``acc_small``, ``acc_large``, ``hinge_small``,
    ``hinge_large`` (seeds, len(test_context)), the names of the theory's observables, each with
    ``*_se``: the standard error of that seed's mean over its prompts.
train
    the two-layer ReLU-attention model ``g = sum_n a_n ReLU[(y^T X/N) W^(n) x_q]`` trained by Adam on the
    hinge loss plus ``weight_decay sum ||W||_F^2`` over sampled pretraining prompts of ``context`` examples (a in [-1, 1]
    by projection). Returns a Simulation with ``train_loss`` over steps and the final ``a``, ``W``, ``G``
    and ``V = G^T W G``.
fresh_hinge
    mean hinge (and its SE) of given heads on fresh pretraining prompts of ``context`` examples.

Nothing here assumes the N -> inf reduction: prompts are sampled in full and the model is applied to X.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ..._validate import Interval, InvalidParameterError, as_int, check
from ...models.icl.parity import ParityProblem, paper_construction, pattern_probs, task_sets
from ...results import Simulation
from .._torch import make_generator, resolve_device, resolve_dtype, to_numpy
from .._torch import progress as progress_bar

__all__ = ["simulate", "train", "fresh_hinge"]

_OWNER = "icl.parity.simulate"
_BLOCK = 1 << 22  # prompt floats (n N d) held at once: 32 MiB in float64


def _check_problem(problem, owner):
    if not isinstance(problem, ParityProblem):
        raise InvalidParameterError(
            f"The 'problem' parameter of {owner} must be an icl.ParityProblem. Got {problem!r} instead.")


def _dictionary(d, gen, device, dtype):
    """A random orthonormal G (d, d): QR of a Gaussian matrix with the signs of R's diagonal fixed."""
    q, r = torch.linalg.qr(torch.randn(d, d, generator=gen, device=device, dtype=dtype))
    return q * torch.sign(torch.diagonal(r))


def _tasks(problem, gen, n, pT, device):
    """Tasks (n, 2): S1 w.p. 1 - pT, else S2."""
    S1, S2 = (torch.as_tensor(s, device=device) for s in task_sets(problem.d, problem.k))
    t = S1[torch.randint(len(S1), (n,), generator=gen, device=device)]
    if len(S2) and pT > 0:
        from_s2 = torch.rand(n, generator=gen, device=device) < pT
        t = torch.where(from_s2[:, None], S2[torch.randint(len(S2), (n,), generator=gen, device=device)], t)
    return t


def _phi(problem, gen, t, L, device, dtype):
    """phi of shape (n, L, d): uniform signs off the task, the pattern law on the task coordinates."""
    n = len(t)
    pats, probs = (torch.as_tensor(x, device=device, dtype=dtype) for x in pattern_probs(problem.gamma))
    phi = torch.randint(2, (n, L, problem.d), generator=gen, device=device).to(dtype).mul_(2).sub_(1)
    f = pats[torch.multinomial(probs, n * L, replacement=True, generator=gen)].view(n, L, 2)
    rows, cols = torch.arange(n, device=device)[:, None], torch.arange(L, device=device)[None, :]
    phi[rows, cols, t[:, None, 0]] = f[..., 0]
    phi[rows, cols, t[:, None, 1]] = f[..., 1]
    return phi


def _prompts(problem, gen, n, N, pT, flip, G):
    """Context X (n, N, d), labels y (n, N) (the first round(flip N) flipped), query x_q (n, d), y_q (n,)."""
    dev, dt = G.device, G.dtype
    t = _tasks(problem, gen, n, pT, dev)
    phi = _phi(problem, gen, t, N + 1, dev, dt)
    rows = torch.arange(n, device=dev)[:, None]
    y = phi[rows, :, t[:, None, 0]].squeeze(1) * phi[rows, :, t[:, None, 1]].squeeze(1)   # (n, N + 1)
    y_ctx = y[:, :N].clone()
    y_ctx[:, :int(round(flip * N))] *= -1
    x = phi @ G.T
    return x[:, :N], y_ctx, x[:, N], y[:, N]


def _output(a, W, X, y, xq):
    """g = sum_n a_n ReLU[(y^T X / N) W^(n) x_q] for prompts (n, ...); heads a (m,), W (m, d, d)."""
    z = torch.einsum("bl,bld->bd", y, X) / X.shape[1]
    return torch.relu(torch.einsum("bd,nde,be->bn", z, W, xq)) @ a


def _blocks(problem, N):
    """Prompts per block: at most _BLOCK floats held at once."""
    return max(1, _BLOCK // ((N + 1) * problem.d))


def _margins(problem, a, W, G, gen, n, N, pT, flip, bar=None):
    """y_q g on n fresh prompts, drawn in blocks of at most _BLOCK floats; ``bar`` advances once per block."""
    step = _blocks(problem, N)
    out = []
    for s in range(0, n, step):
        X, y, xq, yq = _prompts(problem, gen, min(step, n - s), N, pT, flip, G)
        out.append(yq * _output(a, W, X, y, xq))
        if bar is not None:
            bar.update()
    return torch.cat(out)


def _heads_in_basis(a, Vdiag, G):
    """Paper heads as torch tensors: a (m,) and W^(n) = G diag(V^(n)) G^T (m, d, d)."""
    V = torch.as_tensor(Vdiag, device=G.device, dtype=G.dtype)
    return torch.as_tensor(a, device=G.device, dtype=G.dtype), torch.einsum("ab,nb,cb->nac", G, V, G)


def simulate(problem, *, test_context, prompts, flip, seed, seeds, device, dtype, progress):
    """Evaluate the paper's g_1^* and g_2^* on fresh full prompts of ``test_context`` examples; see the module docstring.

    Each seed draws its own orthonormal G and ``prompts`` prompts per length (task from S1, as in Thm 5.5.2).
    ``acc`` counts a tie ``g = 0`` as 1/2 (a fair coin), as :func:`popdyn.models.icl.mc_eval` does. The
    result has ``coords["test_context"]``, so ``popdyn.compare(popdyn.predict(problem, test_context=M),
    popdyn.simulate(problem, test_context=M))`` holds the two side by side; ``progress`` shows one step per
    block of prompts.
    """
    _check_problem(problem, _OWNER)
    if problem.nu1 is None or problem.nu2 is None:
        raise InvalidParameterError(f"The 'problem' parameter of {_OWNER} must have d and k powers of two "
                                    f"(Thm 5.5.1). Got {problem!r} instead.")
    Ms, n = list(test_context), prompts
    dev, dt = resolve_device(device, _OWNER), resolve_dtype(dtype, _OWNER)
    heads = {"small": paper_construction(problem.nu2, problem.gamma, nu1=problem.nu1),
             "large": paper_construction(problem.nu2, problem.gamma)}
    obs = {f"{k}_{h}{e}": np.zeros((seeds, len(Ms))) for k in ("acc", "hinge") for h in heads for e in ("", "_se")}
    total = seeds * len(heads) * sum(-(-n // _blocks(problem, m)) for m in Ms)
    bar = progress_bar(total, progress, _OWNER, unit="block")
    for s in range(seeds):
        gen = make_generator(seed + s, dev)
        G = _dictionary(problem.d, gen, dev, dt)
        for i, m in enumerate(Ms):
            for name, (a, V) in heads.items():
                marg = _margins(problem, *_heads_in_basis(a, V, G), G, gen, n, m, 0.0, flip, bar)
                for key, x in (("acc", (marg > 0).to(dt) + 0.5 * (marg == 0).to(dt)), ("hinge", torch.relu(1 - marg))):
                    obs[f"{key}_{name}"][s, i] = float(x.mean())
                    obs[f"{key}_{name}_se"][s, i] = float(x.std() / math.sqrt(n))
    bar.close()
    meta = dict(problem=repr(problem), run=dict(device=str(dev), dtype=str(dt)))
    return Simulation(t=None, observables=obs, meta=meta, coords={"test_context": np.array(Ms)})


def fresh_hinge(problem, a, W, G, *, context, prompts=20_000, seed=0, pT=None, flip=0.0, progress=False):
    """Mean hinge ``[1 - y_q g]_+`` of heads (a, W) on ``prompts`` fresh prompts of ``context`` examples: (mean, SE).

    ``a`` (m,), ``W`` (m, d, d) and ``G`` (d, d) are tensors on one device; ``pT`` defaults to the problem's.
    ``context`` is N in the paper; ``progress`` shows one step per block of prompts.
    """
    owner = "icl.fresh_hinge"
    _check_problem(problem, owner)
    N, n = as_int(owner, "context", context, 1), as_int(owner, "prompts", prompts, 2)
    pT = problem.pT if pT is None else check(owner, "pT", pT, Interval(0, 1))
    gen = make_generator(as_int(owner, "seed", seed, 0), G.device)
    flip = check(owner, "flip", flip, Interval(0, 1))
    bar = progress_bar(-(-n // _blocks(problem, N)), progress, owner, unit="block")
    with torch.no_grad():
        loss = torch.relu(1 - _margins(problem, a, W, G, gen, n, N, pT, flip, bar))
    bar.close()
    return float(loss.mean()), float(loss.std() / math.sqrt(n))


def _check_train(m, context, steps, lr, batch, weight_decay, init_scale, n_points):
    pos = Interval(0, np.inf, closed="neither")
    return dict(m=as_int("icl.train", "m", m, 1), context=as_int("icl.train", "context", context, 1),
                steps=as_int("icl.train", "steps", steps, 1), lr=check("icl.train", "lr", lr, pos),
                batch=as_int("icl.train", "batch", batch, 1),
                weight_decay=check("icl.train", "weight_decay", weight_decay, Interval(0, np.inf)),
                init_scale=check("icl.train", "init_scale", init_scale, pos),
                n_points=as_int("icl.train", "n_points", n_points, 2))


def train(problem, *, m, context=64, steps=2000, lr=1e-2, batch=256, weight_decay=1e-4, init_scale=1.0, seeds=1,
          seed=0, n_points=50, device="cpu", dtype=None, progress=False):
    """Train m heads by Adam on the hinge loss + ``weight_decay sum ||W||_F^2``, fresh prompts of ``context`` examples.

    Every seed has its own G, initial weights (``W ~ N(0, init_scale^2 / d)`` entrywise, ``a ~ U[-1, 1]``)
    and prompts; seeds are trained together as a batch; ``context`` is N in the paper. ``a`` is projected on
    [-1, 1] after each step.
    Observables: ``train_loss`` (seeds, T) (batch hinge + penalty), final ``a`` (seeds, m), ``W`` and
    ``V = G^T W G`` (seeds, m, d, d), ``G`` (seeds, d, d).
    """
    _check_problem(problem, "icl.train")
    o = _check_train(m, context, steps, lr, batch, weight_decay, init_scale, n_points)
    S, d = as_int("icl.train", "seeds", seeds, 1), problem.d
    dev, dt = resolve_device(device, "icl.train"), resolve_dtype(dtype, "icl.train")
    gens = [make_generator(as_int("icl.train", "seed", seed, 0) + s, dev) for s in range(S)]
    G = torch.stack([_dictionary(d, g, dev, dt) for g in gens])
    W = torch.stack([torch.randn(o["m"], d, d, generator=g, device=dev, dtype=dt) for g in gens])
    W = (W * (o["init_scale"] / math.sqrt(d))).requires_grad_()
    a = torch.stack([torch.rand(o["m"], generator=g, device=dev, dtype=dt) * 2 - 1 for g in gens]).requires_grad_()
    opt = torch.optim.Adam([W, a], lr=o["lr"])
    t = np.unique(np.round(np.linspace(0, o["steps"], min(o["n_points"], o["steps"] + 1))).astype(np.int64))
    losses, bar = np.zeros((S, len(t))), progress_bar(o["steps"], progress, "icl.train", unit="step")
    for step in range(o["steps"] + 1):
        batches = [_prompts(problem, g, o["batch"], o["context"], problem.pT, 0.0, G[s]) for s, g in enumerate(gens)]
        hinge = torch.stack([torch.relu(1 - yq * _output(a[s], W[s], X, y, xq)).mean()
                             for s, (X, y, xq, yq) in enumerate(batches)])
        loss = hinge + o["weight_decay"] * (W * W).sum((1, 2, 3))
        if step in t:
            losses[:, np.searchsorted(t, step)] = to_numpy(loss)
        if step == o["steps"]:
            break
        opt.zero_grad()
        loss.sum().backward()
        opt.step()
        with torch.no_grad():
            a.clamp_(-1, 1)
        bar.update()
    bar.close()
    W, a = W.detach(), a.detach()
    V = torch.einsum("sab,snac,scd->snbd", G, W, G)
    obs = {"train_loss": losses, "a": to_numpy(a), "W": to_numpy(W), "V": to_numpy(V), "G": to_numpy(G)}
    meta = dict(problem=repr(problem), options=dict(o, seeds=S, seed=seed, device=str(dev), dtype=str(dt)),
                t_unit="steps")
    return Simulation(t=t, observables=obs, meta=meta)
