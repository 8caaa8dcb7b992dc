"""Training the k-input modular-addition network ([Shi24], Ch. 4) in torch: ``popdyn.simulate`` of
:class:`popdyn.models.modular.Problem` (registered in ``popdyn/models/modular/predict.py``).

Public names
------------
simulate
    ``simulate(problem, *, steps, width, optimizer, ...)`` (every option of ``modular.Problem.options``, resolved
    by ``popdyn.simulate``) -> :class:`popdyn.results.Simulation` with observables ``loss``, ``train_acc``,
    ``test_acc`` (with a train fraction < 1), ``normalized_margin`` (on the full D_p), ``margin_ratio`` (the
    same over gamma*), ``margin_ratio_train``, ``max_power`` (median over neurons), ``neuron_power`` (per
    neuron), ``single_freq_fraction``, ``coverage``, and with ``weights=True`` the initial and final weights
    ``U0``, ``W0``, ``U``, ``W`` and the ``train_mask``. All seeds train batched on one device in one loop.
logits
    The network (4.2) in torch for a batch of seeds: ``logits(U, W, A)``.

The network ([Shi24, eq. (4.2)]) is ``f(a)[c] = sum_i (sum_j u_ij(a_j))^k w_i[c]`` with
``U`` of shape (width, k, p) and ``W`` of shape (width, p); inputs are one-hot, so the first layer is an
embedding look-up (the same code on CPU and GPU). The paper's settings (App. C.10.1): AdamW,
lr 5e-3, weight decay 0.005, betas (0.9, 0.98), 10 warm-up steps, batch 1024.
See docs/modular_training.md.
"""
from __future__ import annotations

import time

import numpy as np
import torch

from ...models.modular import all_inputs, construction_width, max_margin
from ...models.modular.diagnostics import _constant_level
from ...results import Simulation
from .._torch import make_generator, progress as open_bar, resolve_device, resolve_dtype, serial_if_small, to_numpy
from ._training import batches, make_optimizer, record_steps, split, train_mask, train_size

__all__ = ["simulate", "logits"]

_OWNER = "modular.simulate"
_EVAL_ELEMENTS = 2**22   # evaluation chunk: at most 32 MB of float64 hidden activations (seeds x points x width)
_SINGLE_FREQ = 0.9       # a neuron is single-frequency when its max normalized power exceeds 0.9
#: lr and weight decay when the option is None: the paper's AdamW ([Shi24, App. C.10.1]); plain SGD with a
#: small coupled L2 decay (an extension).
RATES = {"adamw": {"lr": 5e-3, "weight_decay": 5e-3}, "sgd": {"lr": 0.5, "weight_decay": 1e-4}}


class _Embed(torch.autograd.Function):
    """``pre[r] = sum_j table[index[r, j]]`` for flat row indices ``index`` (R, k); the backward is one
    ``index_add_`` per summand (torch's embedding backward on CPU sorts the indices: 6x slower here)."""

    @staticmethod
    def forward(ctx, table, index):
        ctx.save_for_backward(index)
        ctx.rows = table.shape[0]
        pre = table.index_select(0, index[:, 0])
        for j in range(1, index.shape[1]):
            pre.add_(table.index_select(0, index[:, j]))
        return pre

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        out = grad.new_zeros((ctx.rows, grad.shape[1]))
        for j in range(index.shape[1]):
            out.index_add_(0, index[:, j], grad)
        return out, None


def logits(U, W, A):
    r"""Logits of the k-input network (4.2) for every seed: ``(S, n, p)``.

    .. math:: f(\theta, \mathbf a)[c] = \sum_{i=1}^m \Big(\sum_{j=1}^k u_{i,j}(a_j)\Big)^k w_i[c]

    ``U`` (S, m, k, p), ``W`` (S, m, p); ``A`` the integer inputs, (n, k) shared by all seeds or
    (S, n, k), entries in [0, p - 1]. The first layer is a row look-up (its backward an index-add),
    O(S n k m) work instead of a one-hot product's O(S n k p m).
    """
    S, m, k, p = U.shape
    table = U.permute(0, 2, 3, 1).reshape(S * k * p, m)            # row (s k + j) p + a holds u_{., j}(a)
    offset = (torch.arange(S, device=A.device)[:, None] * k + torch.arange(k, device=A.device)) * p
    index = (A + offset[:, None, :]).reshape(-1, k)                # (S n, k)
    pre = _Embed.apply(table, index).reshape(S, -1, m)             # (S, n, m)
    return torch.matmul(pre.pow(k), W)


def _init_params(S, m, k, p, scale, gen, dtype, device):
    """U ~ U(-1, 1) scale/sqrt(k p), W ~ U(-1, 1) scale/sqrt(m): torch's Linear init, scaled."""
    U = (torch.rand((S, m, k, p), generator=gen, dtype=dtype, device=device) * 2 - 1) * (scale / np.sqrt(k * p))
    W = (torch.rand((S, m, p), generator=gen, dtype=dtype, device=device) * 2 - 1) * (scale / np.sqrt(m))
    return U.requires_grad_(), W.requires_grad_()


def _loss(U, W, A, y, idx):
    """Sum over seeds of the mean cross-entropy on the points ``idx`` (S, B): per-seed gradients are exact."""
    S, B = idx.shape
    out = logits(U, W, A[idx])                                    # (S, B, p)
    return torch.nn.functional.cross_entropy(out.reshape(S * B, -1), y[idx].reshape(-1), reduction="sum") / B


def _margins(U, W, A, y, chunk):
    """Per seed and point: margin ``f[y] - max_{c != y} f[c]``, correctness and cross-entropy, in chunks."""
    g, ok, ce = [], [], []
    for s in range(0, len(y), chunk):
        out = logits(U, W, A[s:s + chunk])                         # (S, n, p)
        yy = y[s:s + chunk].expand(out.shape[0], -1).unsqueeze(2)
        right = out.gather(2, yy)
        wrong = out.scatter(2, yy, -torch.inf).amax(2, keepdim=True)
        g.append((right - wrong)[..., 0])
        ok.append(out.argmax(2) == yy[..., 0])
        ce.append((torch.logsumexp(out, 2, keepdim=True) - right)[..., 0])
    return torch.cat(g, 1), torch.cat(ok, 1), torch.cat(ce, 1)


def _norm_power(U, W):
    r"""``||theta||_{2,k+1}^{k+1} = sum_i (sum_j ||u_ij||^2 + ||w_i||^2)^{(k+1)/2}`` per seed (S,)."""
    k = U.shape[2]
    sq = U.square().sum((2, 3)) + W.square().sum(2)
    return sq.pow((k + 1) / 2).sum(1)


def _diagnostics(U, W, data, gamma, chunk):
    """Recorded observables at one step, each of shape (S,) except ``neuron_power`` (S, width).

    Spectra follow :func:`popdyn.models.modular.fourier_diagnostics`: one-sided power per component
    (u_1..u_k, w) over the frequencies 1..(p-1)/2 (p is an odd prime here, every bin a pair +-j), as a share of
    its centred energy (the constant is no frequency; 0 for a constant component); a neuron's max normalized
    power is the least over its k + 1 components (``max_power`` is its median over the neurons without a
    constant component, 0 when there is none, as in :func:`popdyn.models.modular.diagnostics`); its dominant
    frequency the argmax over bins 1..(p-1)/2 of its non-constant components' summed power (none: no frequency,
    not in ``coverage``).
    """
    A, y, tr, te = data
    g, ok, ce = _margins(U, W, A, y, chunk)
    norm = _norm_power(U, W)
    P = torch.fft.rfft(torch.cat([U, W.unsqueeze(2)], 2), dim=3).abs().square()      # (S, m, k+1, h+1)
    cen = P[..., 1:].sum(3)
    const = 2 * cen <= _constant_level(U.shape[3]) * (P[..., 0] + 2 * cen)   # as modular.power_spectrum
    power = torch.where(const, 0.0, P[..., 1:].amax(3) / cen.clamp_min(torch.finfo(cen.dtype).tiny)).amin(2)
    dom = torch.where(const.unsqueeze(3), 0.0, P[..., 1:]).sum(2).argmax(2)
    live = ~const.all(2)                                                              # a neuron with a frequency
    seen = torch.zeros((U.shape[0], P.shape[3] - 1), dtype=U.dtype, device=U.device).scatter_add_(
        1, dom, live.to(U.dtype)) > 0
    rec = {"loss": torch.gather(ce, 1, tr).mean(1), "normalized_margin": g.amin(1) / norm,
           "margin_ratio": g.amin(1) / (norm * gamma),
           "margin_ratio_train": torch.gather(g, 1, tr).amin(1) / (norm * gamma),
           "train_acc": torch.gather(ok, 1, tr).to(U.dtype).mean(1), "max_power": _median(power),
           "neuron_power": power, "single_freq_fraction": (power > _SINGLE_FREQ).to(U.dtype).mean(1),
           "coverage": seen.to(U.dtype).mean(1)}
    if te.shape[1]:
        rec["test_acc"] = torch.gather(ok, 1, te).to(U.dtype).mean(1)
    return rec


def _median(x):
    """numpy's median over the last axis of the positive values (the mean of the two middle values for an even
    count; 0 where there is none): a neuron with a constant component (power 0) is left out, as
    :func:`popdyn.models.modular.diagnostics` takes it."""
    x = torch.where(x > 0, x, torch.nan)
    s = x.sort(-1).values                                   # NaN sorts last
    n = (~x.isnan()).sum(-1, keepdim=True)
    lo, hi = ((n - 1).clamp(min=0) // 2), (n // 2).clamp(max=x.shape[-1] - 1)
    med = 0.5 * (s.gather(-1, lo) + s.gather(-1, hi))[..., 0]
    return torch.where(n[..., 0] > 0, med, 0.0)


def _run(params, data, opts, t, gamma, gen, bar):
    """The training loop over steps 0..steps; records the diagnostics at the steps ``t``."""
    U, W = params
    A, y, tr, _ = data
    opt, sched = make_optimizer([U, W], **{k: opts[k] for k in ("optimizer", "lr", "weight_decay", "betas",
                                                                  "momentum", "warmup")})
    chunk = max(1, _EVAL_ELEMENTS // (U.shape[0] * U.shape[1]))
    rec, slot = [], set(int(s) for s in t)
    stream = batches(tr, opts["batch"], gen)
    for step in range(opts["steps"] + 1):
        if step in slot:
            with torch.no_grad():
                rec.append(_diagnostics(U, W, data, gamma, chunk))
        if step == opts["steps"]:
            break
        opt.zero_grad(set_to_none=True)
        _loss(U, W, A, y, next(stream)).backward()
        opt.step()
        sched.step()
        bar.update(1)
    return {name: torch.stack([r[name] for r in rec], 1) for name in rec[0]}


def simulate(problem, *, steps, width, optimizer, lr, weight_decay, betas, momentum, warmup, batch, train_fraction,
             init_scale, n_points, spacing, weights, seeds, seed, device, dtype, progress):
    r"""Train the k-input network (4.2) on (a_1 + ... + a_k) mod p, all seeds batched, and record its circuit.

    .. math:: \min_\theta \frac{1}{|D|}\sum_{(\mathbf a, c)\in D}\mathrm{CE}(f(\theta,\mathbf a), c),\qquad
              R(\theta) = \frac{h(\theta)}{\lVert\theta\rVert_{2,k+1}^{k+1}\,\gamma^*(p, k)} \le 1

    with the paper's AdamW (decoupled weight decay, an L2 penalty rather than the ``||theta||_{2,k+1}``
    regulariser of Def. 4.1) or SGD with coupled L2 decay; ``h`` is the minimum margin over D_p.

    Parameters
    ----------
    problem : modular.Problem
        p (odd prime modulus) and k (number of summands).
    steps, width, optimizer, lr, weight_decay, betas, momentum, warmup, batch, train_fraction, init_scale, \
n_points, spacing, weights, seeds, seed, device, dtype, progress
        The options of ``modular.Problem.options``, resolved by ``popdyn.simulate`` (constraints, defaults and
        one line of help each there). ``width`` is the paper's m (None: the construction width
        ``2^(2k-2) (p - 1)``, Lemma C.18); ``lr`` and ``weight_decay`` None take the optimizer's defaults
        (AdamW: the paper's 5e-3 and 5e-3; SGD: 0.5 and 1e-4); with ``train_fraction`` 1 (the theory's setting)
        there is no ``test_acc``.

    Returns
    -------
    Simulation
        ``t`` (steps) and, of shape (seeds, len(t)): ``loss`` (train cross-entropy), ``train_acc``,
        ``test_acc`` (only with ``train_fraction < 1``), ``normalized_margin`` (``h / ||theta||_{2,k+1}^{k+1}``
        on the full D_p, no theory in it), ``margin_ratio`` (R, the same over gamma*),
        ``margin_ratio_train`` (R on the train set), ``max_power`` (median over neurons of ``neuron_power``),
        ``single_freq_fraction`` (fraction of neurons whose max normalized power exceeds 0.9), ``coverage``
        (fraction of the frequencies 1..(p-1)/2 that are some neuron's dominant frequency); ``neuron_power``
        (seeds, len(t), width): per neuron, the least over its k + 1 components of the max normalized one-sided
        power (``modular.power_spectrum``). With ``weights=True``, per run without a time axis: ``U0``, ``U``
        (seeds, width, k, p) and ``W0``, ``W`` (seeds, width, p), initial and final weights, and ``train_mask``
        (seeds, p^k), bool, only with ``train_fraction < 1``: True where the input (in ``modular.all_inputs``
        order) is in the seed's train set. ``status`` is -1 when a run diverged.

    Notes
    -----
    Regime: Lemma 4.7 links training to gamma* only as the regulariser tends to 0 (no rate), and
    for the ``||theta||_{2,k+1}`` regulariser on the full D_p; with AdamW's L2 decay at finite steps R
    stays below 1 and need not be monotone (a reference run: 0.82 -> 0.89 at k = 3, p = 11, wd 0.1).
    The x^k activation makes outputs scale like pre^k: a large ``init_scale`` or ``lr`` diverges, and at
    small init the gradients scale like pre^(k-1), so plain SGD first sits on a plateau (k = 3, p = 11,
    lr 0.5: the loss leaves log p after about 1500 steps; AdamW normalises this away).
    Use float64: in float32 the softmax saturates once the train margins are large (the correct class's
    gradient rounds to 0) and the max-margin phase is lost (measured at k = 3, p = 11, width 160, wd 0.1,
    10k steps: R = 0.09 in float32 against 0.84 in float64; single-frequency neurons 36 % against 88 %).

    References
    ----------
    .. [src] [Shi24, Section 4.3 (setting, margins), Lemma 4.7, Section 4.4.1 (normalized power), App. C.10.1
       (training configuration)].

    Examples
    --------
    >>> import popdyn
    >>> from popdyn.models import modular
    >>> sim = popdyn.simulate(modular.Problem(p=5, k=2), width=8, steps=20, n_points=3, seeds=1, weights=True)
    >>> sim.t.tolist(), sim["U"].shape, bool((sim["margin_ratio"] <= 1).all())
    ([0, 10, 20], (1, 8, 2, 5), True)
    """
    rates = RATES[optimizer]
    opts = dict(steps=steps, optimizer=optimizer, lr=rates["lr"] if lr is None else lr,
                weight_decay=rates["weight_decay"] if weight_decay is None else weight_decay, betas=tuple(betas),
                momentum=momentum, warmup=warmup, batch=batch, train_fraction=train_fraction, init_scale=init_scale,
                n_points=n_points, spacing=spacing, seeds=seeds, seed=seed,
                width=construction_width(problem.p, problem.k) if width is None else width,
                n_train=train_size(_OWNER, train_fraction, problem.n_inputs))
    dev, dt = resolve_device(device, _OWNER), resolve_dtype(dtype, _OWNER)
    p, k, S, M = problem.p, problem.k, seeds, opts["width"]
    t = record_steps(steps, n_points, spacing)
    gen = make_generator(seed, dev)
    start = time.perf_counter()
    with serial_if_small(dev, S * min(batch, opts["n_train"]) * M):
        A = torch.as_tensor(all_inputs(p, k), device=dev)
        y = A.sum(1) % p
        tr, te = split(S, len(y), opts["n_train"], gen, dev)
        U, W = _init_params(S, M, k, p, init_scale, gen, dt, dev)
        U0, W0 = U.detach().clone(), W.detach().clone()
        bar = open_bar(steps, progress, _OWNER, unit="step")
        try:
            rec = _run((U, W), (A, y, tr, te), opts, t, float(max_margin(p, k)), gen, bar)
        finally:
            bar.close()
        obs = {name: to_numpy(v) for name, v in rec.items()}
        if weights:
            obs.update(U0=to_numpy(U0), W0=to_numpy(W0), U=to_numpy(U), W=to_numpy(W))
            if te.shape[1]:
                obs["train_mask"] = train_mask(tr, len(y))
    wall = time.perf_counter() - start
    ok = all(np.all(np.isfinite(v)) for v in obs.values())
    meta = {"problem": repr(problem), "options": opts, "t_unit": "steps", "device": str(dev),
            "dtype": str(dt).replace("torch.", ""), "torch_version": torch.__version__, "seeds": S,
            "seed": seed, "gamma_star": float(max_margin(p, k)), "wall_time_s": wall, "steps_per_s": steps / wall}
    message = "" if ok else (f"non-finite values: the run diverged at lr={opts['lr']} ({meta['dtype']}); "
                             "lower lr or init_scale")
    return Simulation(t=t, observables=obs, status=0 if ok else -1, message=message, meta=meta)
