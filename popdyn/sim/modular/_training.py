"""The training protocol both modular-addition simulations share ([Shi24, App. C.10.1]): the train split,
AdamW or SGD with a linear warm-up, shuffled minibatch epochs and the recorded steps.

Used by :mod:`popdyn.sim.modular.network` and :mod:`popdyn.sim.modular.transformer`; all seeds of a run are
batched, so every helper works on a leading seed axis S.
"""
from __future__ import annotations

import numpy as np
import torch

from ..._validate import InvalidParameterError

__all__ = ["train_size", "split", "make_optimizer", "batches", "record_steps", "train_mask"]


def train_size(owner, train_fraction, n):
    """Number of train points ``round(train_fraction * n)``; InvalidParameterError naming ``train_fraction`` when
    it leaves the train set empty."""
    n_train = int(round(train_fraction * n))
    if not 1 <= n_train <= n:
        raise InvalidParameterError(f"The 'train_fraction' parameter of {owner} must leave at least one of the "
                                    f"{n} points in the train set. Got {train_fraction!r} instead.")
    return n_train


def split(S, n, n_train, gen, device):
    """Per seed, a random train subset of size ``n_train`` and its complement: two (S, .) index tensors."""
    if n_train == n:
        idx = torch.arange(n, device=device).expand(S, n)
        return idx, idx[:, :0]
    perm = torch.argsort(torch.rand((S, n), generator=gen, device=device), dim=1)
    return perm[:, :n_train], perm[:, n_train:]


def train_mask(train_idx, n):
    """(S, n) bool numpy array, True where the input is in the seed's train set."""
    S = train_idx.shape[0]
    mask = torch.zeros((S, n), dtype=torch.bool, device=train_idx.device).scatter_(1, train_idx, True)
    return mask.cpu().numpy()


def make_optimizer(params, *, optimizer, lr, weight_decay, betas, momentum, warmup):
    """AdamW (decoupled decay) or SGD (coupled L2 decay), with a linear warm-up over ``warmup`` steps."""
    if optimizer == "adamw":
        opt = torch.optim.AdamW(params, lr=lr, betas=betas, eps=1e-8, weight_decay=weight_decay)
    else:
        opt = torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup) if warmup else 1.0)
    return opt, sched


def batches(train_idx, batch, gen):
    """Endless (S, B) index batches: per seed, shuffled epochs of the train set (full batch when B >= n_train)."""
    S, n = train_idx.shape
    if batch >= n:
        while True:
            yield train_idx
    while True:
        perm = torch.gather(train_idx, 1, torch.argsort(torch.rand((S, n), generator=gen, device=train_idx.device), 1))
        for s in range(0, n - batch + 1, batch):
            yield perm[:, s:s + batch]


def record_steps(steps, n_points, spacing):
    """Recorded steps from 0 to ``steps``: ``n_points`` evenly spaced, or log-spaced after step 0 (int64)."""
    if spacing == "log":
        t = np.concatenate([[0], np.geomspace(1, steps, n_points - 1)])
    else:
        t = np.linspace(0, steps, n_points)
    return np.unique(np.round(t).astype(np.int64))
