"""Training the transformer of the modular-addition chapter ([Shi24] Section 4.5, Figs. 4.3, 4.4) in torch:
``popdyn.simulate`` of :class:`popdyn.models.modular.TransformerProblem` (registered in
``popdyn/models/modular/predict.py``).

Public names
------------
simulate
    ``simulate(problem, *, steps, lr, weight_decay, ...)`` (every option of ``modular.TransformerProblem.options``,
    resolved by ``popdyn.simulate``) -> :class:`popdyn.results.Simulation` with the accuracies, the Fourier
    diagnostics of the MLP neurons (through their maps ``U``, ``W`` in the form of the network (4.2)), of the first
    layer's attention heads (Fig. 4.3) and of the embedding, and with ``weights=True`` the final weights.
forward
    The transformer for a batch of seeds: ``forward(weights, A, activation)`` -> logits and the last MLP's
    pre-activations at the read-out position.

The architecture is :class:`~popdyn.models.modular.TransformerProblem`'s (tokens a_1..a_k, learned positions,
causal multi-head attention, bias-free MLP, no layer norm, logits at the last position). Training follows
App. C.10.1 for the one-layer transformer: AdamW, betas (0.9, 0.98), 10 warm-up steps, batch 1024;
all seeds train batched in one loop, on CPU or CUDA unchanged. Splits, minibatches and recorded steps are those of
:mod:`popdyn.sim.modular._training`, shared with the network (4.2).
"""
from __future__ import annotations

import math
import time

import numpy as np
import torch

from ...models.modular import all_inputs, attention_diagnostics, embedding_spectrum, fourier_diagnostics
from ...models.modular.diagnostics import _median_power
from ...results import Simulation
from .._torch import make_generator, progress as open_bar, resolve_device, resolve_dtype, serial_if_small, to_numpy
from ._training import batches, make_optimizer, record_steps, split, train_mask, train_size

__all__ = ["simulate", "forward"]

_OWNER = "modular.transformer.simulate"
_EVAL_ELEMENTS = {"cpu": 2**23, "cuda": 2**28}   # evaluation chunk: seeds x points x per-point activations
                                                 # (64 MB float64 on CPU; 1-2 GB on a GPU: Fig. 4.3's D_p in ~70)
_SINGLE_FREQ = 0.9       # a neuron / head is single-frequency above this max normalized power (as the network's)
_NAMES = ("E", "P", "WQ", "WK", "WV", "WO", "W_in", "W_out", "W_U")
_ACT = {"relu": torch.relu, "gelu": torch.nn.functional.gelu}


def _shapes(problem):
    """Weight shapes without the seed axis, and each one's fan-in (the init's 1/sqrt(fan_in) scale)."""
    p, k, L, H, D, dh, M = (problem.p, problem.k, problem.layers, problem.heads, problem.d_model, problem.d_head,
                            problem.d_mlp)
    return {"E": ((p, D), D), "P": ((k, D), D), "WQ": ((L, H, D, dh), D), "WK": ((L, H, D, dh), D),
            "WV": ((L, H, D, dh), D), "WO": ((L, H, dh, D), H * dh), "W_in": ((L, D, M), D),
            "W_out": ((L, M, D), M), "W_U": ((D, p), D)}


def _init_weights(problem, S, scale, gen, dtype, device):
    """Every weight ~ N(0, scale^2 / fan_in) (fan-in d_model for E and P: unit-norm token embeddings)."""
    out = {}
    for name, (shape, fan) in _shapes(problem).items():
        w = torch.randn((S, *shape), generator=gen, dtype=dtype, device=device) * (scale / math.sqrt(fan))
        out[name] = w.requires_grad_()
    return out


def forward(weights, A, activation="relu"):
    r"""Logits of the transformer for every seed, and the last MLP's pre-activations at the read-out position.

    .. math:: f(\mathbf a) = W_U^{\top} x^{(L)}_k,\qquad h = W_{in}^{(L)\top} x'^{(L)}_k

    ``weights``: dict of tensors with a leading seed axis S (names and shapes of :func:`simulate`'s outputs);
    ``A`` (S, n, k) integer inputs in [0, p - 1]. Returns ``(logits (S, n, p), h (S, n, d_mlp))``. The last
    layer computes its query at the read-out position only (the other positions do not reach the logits).
    """
    E, WQ, WK, WV, WO = (weights[n] for n in ("E", "WQ", "WK", "WV", "WO"))
    S, p, _ = E.shape
    k, L, dh = A.shape[-1], WQ.shape[1], WQ.shape[-1]
    act = _ACT[activation]
    x = E.reshape(S * p, -1)[A + p * torch.arange(S, device=A.device)[:, None, None]] + weights["P"][:, None]
    causal = torch.ones((k, k), dtype=torch.bool, device=A.device).tril()
    for l in range(L):
        xq = x[:, :, -1:] if l == L - 1 else x
        q = torch.einsum("sbtd,shde->sbhte", xq, WQ[:, l])
        kk = torch.einsum("sbtd,shde->sbhte", x, WK[:, l])
        v = torch.einsum("sbtd,shde->sbhte", x, WV[:, l])
        score = torch.matmul(q, kk.transpose(-1, -2)) / math.sqrt(dh)
        if l < L - 1:
            score = score.masked_fill(~causal, -torch.inf)
        z = torch.matmul(torch.softmax(score, dim=-1), v)
        x = xq + torch.einsum("sbhte,shed->sbtd", z, WO[:, l])
        h = torch.einsum("sbtd,sdm->sbtm", x, weights["W_in"][:, l])
        x = x + torch.einsum("sbtm,smd->sbtd", act(h), weights["W_out"][:, l])
    return torch.einsum("sbd,sdc->sbc", x[:, :, -1], weights["W_U"]), h[:, :, -1]


def _loss(weights, A, y, idx, activation):
    """Sum over seeds of the mean cross-entropy on the points ``idx`` (S, B): per-seed gradients are exact."""
    S, B = idx.shape
    out, _ = forward(weights, A[idx], activation)
    return torch.nn.functional.cross_entropy(out.reshape(S * B, -1), y[idx].reshape(-1), reduction="sum") / B


def _evaluate(weights, A, y, problem, chunk):
    """Over all of D_p, per seed: correctness, cross-entropy, and the first-order maps of the last MLP's
    pre-activations (the moments of :func:`popdyn.models.modular.neuron_maps`, accumulated in chunks)."""
    S, p, k, M = weights["E"].shape[0], problem.p, problem.k, problem.d_mlp
    ok, ce = [], []
    marg = weights["E"].new_zeros((S, k, p, M))
    total, square = weights["E"].new_zeros((S, M)), weights["E"].new_zeros((S, M))
    for s in range(0, len(y), chunk):
        a = A[s:s + chunk]
        out, h = forward(weights, a.expand(S, -1, -1), problem.activation)
        yy = y[s:s + chunk].expand(S, -1)
        ok.append(out.argmax(2) == yy)
        ce.append(torch.logsumexp(out, 2) - out.gather(2, yy[..., None])[..., 0])
        total += h.sum(1)
        square += h.square().sum(1)
        for j in range(k):
            marg[:, j].index_add_(1, a[:, j], h)
    n = len(y)
    mean = total / n
    U = marg * (p / n) - mean[:, None, None, :]                       # E[h | a_j = a] - E[h]
    var = square / n - mean.square()
    rho = U.square().mean(2).sum(1) / var.clamp_min(torch.finfo(var.dtype).tiny)
    return torch.cat(ok, 1), torch.cat(ce, 1), U.permute(0, 3, 1, 2), rho


def _diagnostics(weights, data, problem, chunk):
    """Recorded observables at one step (numpy, leading seed axis)."""
    A, y, tr, te = data
    ok, ce, U, rho = _evaluate(weights, A, y, problem, chunk)
    W = torch.matmul(weights["W_out"][:, -1], weights["W_U"])          # (S, d_mlp, p): each neuron's logit map,
    W = W - W.mean(2, keepdim=True)                                    # less its softmax-invariant constant
    U, W, rho = to_numpy(U), to_numpy(W), to_numpy(rho)
    E, WQ, WK = (to_numpy(weights[n]) for n in ("E", "WQ", "WK"))
    rec = {"loss": to_numpy(torch.gather(ce, 1, tr).mean(1)),
           "train_acc": to_numpy(torch.gather(ok, 1, tr).to(ce.dtype).mean(1))}
    if te.shape[1]:
        rec["test_acc"] = to_numpy(torch.gather(ok, 1, te).to(ce.dtype).mean(1))
    fd = [fourier_diagnostics(U[s], W[s]) for s in range(len(U))]
    att = [attention_diagnostics(E[s], WQ[s, 0], WK[s, 0])["frequency_power"] for s in range(len(U))]
    power, heads = np.stack([d["max_power"] for d in fd]), np.stack(att)
    rec.update(max_power=_median_power(power, axis=1), neuron_power=power,
               single_freq_fraction=np.mean(power > _SINGLE_FREQ, axis=1),
               coverage=np.array([d["coverage_fraction"] for d in fd]),
               additive_fraction=np.nanmedian(rho, axis=1), neuron_additive_fraction=rho,
               attention_power=np.median(heads, axis=1), head_power=heads,
               embedding_power=np.stack([embedding_spectrum(e) for e in E]))
    return rec, (U, W)


def _run(problem, weights, data, opts, t, gen, bar):
    """The training loop over steps 0..steps; records the diagnostics at the steps ``t``."""
    A, y, tr, _ = data
    opt, sched = make_optimizer(list(weights.values()), optimizer="adamw", momentum=0.0,
                                **{k: opts[k] for k in ("lr", "weight_decay", "betas", "warmup")})
    per_point = max(problem.heads * problem.d_head * problem.k, problem.d_mlp, problem.d_model * problem.k)
    chunk = max(1, _EVAL_ELEMENTS[A.device.type] // (tr.shape[0] * per_point))
    rec, slot, maps = [], set(int(s) for s in t), None
    stream = batches(tr, opts["batch"], gen)
    for step in range(opts["steps"] + 1):
        if step in slot:
            with torch.no_grad():
                r, maps = _diagnostics(weights, data, problem, chunk)
                rec.append(r)
        if step == opts["steps"]:
            break
        opt.zero_grad(set_to_none=True)
        _loss(weights, A, y, next(stream), problem.activation).backward()
        opt.step()
        sched.step()
        bar.update(1)
    return {name: np.stack([r[name] for r in rec], 1) for name in rec[0]}, maps


def simulate(problem, *, steps, lr, weight_decay, betas, warmup, batch, train_fraction, init_scale, n_points, spacing,
             weights, seeds, seed, device, dtype, progress):
    r"""Train the transformer on (a_1 + ... + a_k) mod p, all seeds batched, and record its Fourier circuit.

    .. math:: \min_\theta \frac{1}{|D|}\sum_{(\mathbf a, c)\in D}\mathrm{CE}(f(\theta,\mathbf a), c),\qquad
              u_{i,j}(a) = \mathbb E[h_i \mid a_j = a] - \mathbb E[h_i],\quad
              w_i(c) = (W_{out}[i]\,W_U)_c - \frac1p\sum_{c'}(W_{out}[i]\,W_U)_{c'}

    AdamW (decoupled weight decay on every weight) with a linear warm-up; ``h_i`` is MLP neuron i's
    pre-activation at the read-out position, so that ``(U, W)`` is the MLP in the form of the network (4.2); a constant
    added to every logit does not change the softmax, so ``w_i`` is centred over the classes.

    Parameters
    ----------
    problem : modular.TransformerProblem
        The task (p, k) and the architecture.
    steps, lr, weight_decay, betas, warmup, batch, train_fraction, init_scale, n_points, spacing, weights, seeds, \
seed, device, dtype, progress
        The options of ``modular.TransformerProblem.options``, resolved by ``popdyn.simulate`` (constraints, defaults
        and one line of help each there). On CUDA the embedding's backward and the evaluation's sums use atomic
        adds, so runs with the same ``seed`` agree only up to round-off there (exactly on CPU).

    Returns
    -------
    Simulation
        ``t`` (steps) and, with a leading seed axis S and T = len(t): ``loss`` (train cross-entropy), ``train_acc``,
        ``test_acc`` (only with ``train_fraction < 1``), of shape (S, T); ``neuron_power`` (S, T, d_mlp): per MLP
        neuron of the last layer, the least over its maps u_1..u_k, w of the max normalized one-sided power
        (``modular.fourier_diagnostics``; 0 for a neuron with a constant map, e.g. a dead one), and ``max_power`` (S, T)
        its median over the other neurons (0 when none is left); ``single_freq_fraction``
        and ``coverage`` (S, T) as in the network's simulation; ``neuron_additive_fraction`` (S, T, d_mlp): the
        variance share of each neuron's pre-activation that is additive over the summands
        (``modular.neuron_maps``), and ``additive_fraction`` (S, T) its median; ``head_power`` (S, T, heads): the
        share of each first-layer head's centred matrix ``E^T W^K W^{Q T} E`` on its dominant frequency (the
        ``frequency_power`` of ``modular.attention_diagnostics``, Fig. 4.3), and ``attention_power`` (S, T) its
        median over heads; ``embedding_power`` (S, T, (p+1)/2): ``modular.embedding_spectrum`` of E. With
        ``weights=True``, per run without a time axis: final weights ``E`` (S, p, d_model), ``P`` (S, k, d_model),
        ``WQ``, ``WK``, ``WV`` (S, layers, heads, d_model, d_head), ``WO`` (S, layers, heads, d_head, d_model),
        ``W_in`` (S, layers, d_model, d_mlp), ``W_out`` (S, layers, d_mlp, d_model), ``W_U`` (S, d_model, p); the
        final maps ``U`` (S, d_mlp, k, p) and ``W`` (S, d_mlp, p); ``train_mask`` (S, p^k) with a split.
        ``status`` is -1 when a run diverged.

    Notes
    -----
    Regime: no theorem covers the transformer; the paper's statements (Figs. 4.3, 4.4) are empirical, at p^k of
    order 10^4-10^6 with 160 heads on an A100 (App. C.10.1). The maps ``U`` are exact first-order (ANOVA) components on
    the full D_p; they describe the neuron completely only when its additive fraction is 1.

    References
    ----------
    .. [src] [Shi24, Section 4.5 (Figs. 4.3, 4.4), App. C.10.1 (training), App. C.10.3 (Figs. C.5, C.6)].

    Examples
    --------
    >>> import popdyn
    >>> from popdyn.models.modular import TransformerProblem
    >>> pb = TransformerProblem(p=5, k=2, heads=2, d_model=8, d_head=4, d_mlp=16)
    >>> sim = popdyn.simulate(pb, steps=4, n_points=2, seeds=1, weights=True)
    >>> sim.t.tolist(), sim["U"].shape, sim["head_power"].shape
    ([0, 4], (1, 16, 2, 5), (1, 2, 2))
    """
    opts = dict(steps=steps, lr=lr, weight_decay=weight_decay, betas=tuple(betas), warmup=warmup, batch=batch,
                train_fraction=train_fraction, init_scale=init_scale, n_points=n_points, spacing=spacing, seeds=seeds,
                seed=seed, n_train=train_size(_OWNER, train_fraction, problem.n_inputs))
    dev, dt = resolve_device(device, _OWNER), resolve_dtype(dtype, _OWNER)
    p, k, S = problem.p, problem.k, seeds
    t = record_steps(steps, n_points, spacing)
    gen = make_generator(seed, dev)
    start = time.perf_counter()
    size = S * min(batch, opts["n_train"]) * k * max(problem.d_model, problem.heads * problem.d_head)
    with serial_if_small(dev, size):
        A = torch.as_tensor(all_inputs(p, k), device=dev)
        y = A.sum(1) % p
        tr, te = split(S, len(y), opts["n_train"], gen, dev)
        params = _init_weights(problem, S, init_scale, gen, dt, dev)
        bar = open_bar(steps, progress, _OWNER, unit="step")
        try:
            obs, (U, W) = _run(problem, params, (A, y, tr, te), opts, t, gen, bar)
        finally:
            bar.close()
        if weights:
            obs.update({name: to_numpy(w) for name, w in params.items()}, U=U, W=W)
            if te.shape[1]:
                obs["train_mask"] = train_mask(tr, len(y))
    wall = time.perf_counter() - start
    ok = all(np.all(np.isfinite(v)) for v in obs.values())
    meta = {"problem": repr(problem), "options": opts, "t_unit": "steps", "device": str(dev),
            "dtype": str(dt).replace("torch.", ""), "torch_version": torch.__version__, "seeds": S,
            "seed": seed, "wall_time_s": wall, "steps_per_s": steps / wall}
    message = "" if ok else f"non-finite values: the run diverged at lr={lr} ({meta['dtype']}); lower lr"
    return Simulation(t=t, observables=obs, status=0 if ok else -1, message=message, meta=meta)
