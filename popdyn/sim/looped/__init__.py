"""The looped linear transformer in torch, batched over prompts: the simulation of ``looped.Problem``.

Public names
------------
LoopedTransformer
    ``torch.nn.Module`` with tied (Q, P) of shape (d+1, d+1) and one residual weight per loop; ``init_gd()``
    sets the construction of Lemma 8.13. ``forward(Z0)`` iterates the masked attention on the query row only
    (rows 1..context never change, Lemma 8.13), ``full_attention`` is the unmasked-by-shortcut check.
sample_prompts
    Prompts ``(Z0, theta*)`` drawn on the device from a seeded torch generator.
step_schedule
    Per-prompt residual weights (B, loops) for "1/L", "2/(L+mu)", a float or a schedule.
curves
    Signed error and squared distance recorded loop by loop.
simulate
    ``popdyn.simulate(problem, loops=..., lr="1/L", seeds=..., prompts=..., ...)`` ->
    :class:`popdyn.results.Simulation` with observables ``error``, ``abs_error``, ``sq_dist`` (means over prompts,
    one row per seed).
train
    Adam on the query-prediction loss ||TF/alpha - theta*||^2 at the last loop over fresh random prompts.
"""
from __future__ import annotations

import numpy as np
import torch

from ..._validate import Interval, InvalidParameterError, Options, as_int, check
from ...models.looped import check_lr
from ...results import Simulation
from .. import _torch
from .._torch import make_generator, resolve_device, resolve_dtype, serial_if_small, standard_normal_, to_numpy

__all__ = ["LoopedTransformer", "sample_prompts", "step_schedule", "curves", "simulate", "train"]

_OWNER = "looped.simulate"


class LoopedTransformer(torch.nn.Module):
    r"""T loops of one masked linear attention layer with tied (Q, P) and per-loop residual weights (Def 8.7).

    .. math:: Z^{(t)} = Z^{(t-1)} - \eta^{(t-1)}(M\circ(Z^{(t-1)}QZ^{(t-1)\top}))Z^{(t-1)}P

    ``eta`` is a learnable vector of length T; ``forward(Z0, eta=None)`` may override it with a per-prompt
    schedule of shape (B, T) (the theorem's prompt-dependent 1/L). Returns the query rows of shape
    (B, T + 1, d + 1) for t = 0..T.
    """

    def __init__(self, d, T, *, dtype=torch.float64, device="cpu"):
        super().__init__()
        self.d, self.T = d, T
        kw = {"dtype": dtype, "device": device}
        self.Q = torch.nn.Parameter(torch.eye(d + 1, **kw))
        self.P = torch.nn.Parameter(torch.eye(d + 1, **kw))
        self.eta = torch.nn.Parameter(torch.full((T,), 0.0, **kw))
        self.init_gd()

    @torch.no_grad()
    def init_gd(self, eta=0.0, Gamma=None):
        """Set Q = I, P = diag(Gamma, 0) (Gamma = I: Lemma 8.13) and every residual weight to ``eta``."""
        self.Q.copy_(torch.eye(self.d + 1))
        self.P.zero_()
        self.P[:self.d, :self.d] = torch.eye(self.d) if Gamma is None else torch.as_tensor(Gamma)
        self.eta.fill_(eta)
        return self

    def step(self, row, Zx, ZxP, eta_t):
        """One loop on the query rows ``row`` (B, 1, d+1): ``row - eta_t (row Q Zx^T) Zx P`` (Zx P precomputed)."""
        return row - eta_t[:, None, None] * (((row @ self.Q) @ Zx.mT) @ ZxP)

    def forward(self, Z0, eta=None):
        Zx = Z0[:, :-1]                                   # example rows, frozen by the mask (B, n, d+1)
        eta = self.eta.expand(Z0.shape[0], -1) if eta is None else eta
        ZxP = Zx @ self.P
        row, rows = Z0[:, -1:], [Z0[:, -1]]
        for t in range(self.T):
            row = self.step(row, Zx, ZxP, eta[:, t])
            rows.append(row[:, 0])
        return torch.stack(rows, dim=1)

    def full_attention(self, Z):
        """The full masked product (M o (Z Q Z^T)) Z P of Def 8.6, O(n^2 d), for checking the fast path."""
        n1 = Z.shape[-2]
        M = torch.zeros(n1, n1, dtype=Z.dtype, device=Z.device)
        M[-1, :-1] = 1
        return (M * (Z @ self.Q @ Z.mT)) @ Z @ self.P


def sample_prompts(problem, prompts, generator, dtype=torch.float64, device="cpu"):
    """Prompts Z0 of shape (B, context+1, d+1) (q^(0) = 0) and unit task vectors theta* (B, d) of ``problem``."""
    n, d = problem.context, problem.d
    X = standard_normal_(torch.empty(prompts, n, d, dtype=torch.float64, device=device), generator)
    X = X * torch.as_tensor(np.sqrt(problem.cov), device=device)
    th = standard_normal_(torch.empty(prompts, d, dtype=torch.float64, device=device), generator)
    th = th / torch.linalg.vector_norm(th, dim=1, keepdim=True)
    y = (X @ th[:, :, None])[..., 0]
    if problem.noise > 0:
        y = y + problem.noise * standard_normal_(torch.empty_like(y), generator)
    Z = torch.zeros(prompts, n + 1, d + 1, dtype=torch.float64, device=device)
    Z[:, :n, :d], Z[:, :n, d], Z[:, n, d] = X, y, problem.alpha
    return Z.to(dtype), th.to(dtype)


def step_schedule(Z, T, eta, dtype=torch.float64):
    r"""Per-prompt residual weights eta^(0..T-1) of shape (B, T) for a batch of prompts Z0 (torch twin of
    :func:`popdyn.models.looped.step_schedule`).

    .. math:: \eta^{(t)}_b = 1/L_b\ \text{or}\ 2/(L_b+\mu_b),\qquad L_b = \lambda_{\max}(X_b^\top X_b),\
              \mu_b = \lambda_{\min}(X_b^\top X_b);\quad \text{a float or a (T,) schedule: the same for every b}

    Parameters
    ----------
    Z : torch.Tensor of shape (B, n + 1, d + 1)
        Prompts as built by :func:`sample_prompts` (X = Z[:, :n, :d]).
    T : int
        Number of loops (>= 0).
    eta : {"1/L", "2/(L+mu)"} or float or array_like of shape (T,)
        The named steps are computed per prompt in float64 (``torch.linalg.eigvalsh``); numbers are broadcast.
    dtype : torch.dtype
        dtype of the result.

    Returns
    -------
    torch.Tensor of shape (B, T)

    Notes
    -----
    Regime: "1/L" depends on the prompt (one network per prompt, docs/looped.md); it is Thm 8.25's step. Arguments are
    not validated here (:func:`simulate` does).

    References
    ----------
    .. [src] [Shi24, Definition 8.7, Theorem 8.25].

    Examples
    --------
    >>> Z = torch.zeros(1, 3, 3, dtype=torch.float64)
    >>> Z[0, :2, :2] = torch.diag(torch.tensor([1.0, 2.0]))  # X^T X = diag(1, 4)
    >>> step_schedule(Z, 2, "1/L")
    tensor([[0.2500, 0.2500]], dtype=torch.float64)
    """
    if isinstance(eta, str):
        X = Z[:, :-1, :-1].to(torch.float64)
        lam = torch.linalg.eigvalsh(X.mT @ X)
        L, mu = lam[:, -1:], lam[:, :1]
        e = 1 / L if eta == "1/L" else 2 / (L + mu)
        return e.expand(-1, T).to(dtype)
    return torch.as_tensor(np.broadcast_to(eta, (T,)).copy(), dtype=dtype, device=Z.device).expand(Z.shape[0], T)


def curves(model, Z0, theta, alpha, eta=None):
    """Signed error <TF_t, theta*> - alpha and ||TF_t/alpha - theta*||^2, each (B, T + 1), recorded loop by loop."""
    d = theta.shape[1]
    Zx = Z0[:, :-1]
    eta = model.eta.expand(Z0.shape[0], -1) if eta is None else eta
    ZxP = Zx @ model.P
    row, err, sq = Z0[:, -1:], [], []
    for t in range(model.T + 1):
        TF = -row[:, 0, :d]
        err.append((TF * theta).sum(1) - alpha)
        sq.append(torch.linalg.vector_norm(TF / alpha - theta, dim=1) ** 2)
        if t < model.T:
            row = model.step(row, Zx, ZxP, eta[:, t])
    return torch.stack(err, 1), torch.stack(sq, 1)


def simulate(problem, *, loops, lr, prompts, seed, model, seeds, device, dtype, progress):
    """Run the looped transformer (GD construction, or ``model``) on fresh prompts; means over prompts per seed.

    Seed s draws its ``prompts`` prompts from ``torch.Generator().manual_seed(seed + s)``. With ``model`` (a
    trained :class:`LoopedTransformer` of ``loops`` loops) its own residual weights are used and ``lr`` is unused.
    """
    lr = check_lr(_OWNER, lr, loops)
    if model is not None and (not isinstance(model, LoopedTransformer) or model.T != loops or model.d != problem.d):
        raise InvalidParameterError(f"The 'model' parameter of {_OWNER} must be a LoopedTransformer with d = "
                                    f"{problem.d} and {loops} loops (popdyn.sim.looped.train), or None. Got {model!r} "
                                    "instead.")
    dev, dt = resolve_device(device, _OWNER), resolve_dtype(dtype, _OWNER)
    obs = {"error": [], "abs_error": [], "sq_dist": []}
    bar = _torch.progress(seeds, progress, _OWNER, unit="seed")
    with torch.no_grad(), serial_if_small(dev, prompts * (problem.context + 1) * (problem.d + 1)):
        net = LoopedTransformer(problem.d, loops, dtype=dt, device=dev) if model is None else model
        for s in range(seeds):
            Z0, th = sample_prompts(problem, prompts, make_generator(seed + s, dev), dt, dev)
            err, sq = curves(net, Z0, th, problem.alpha,
                             None if model is not None else step_schedule(Z0, loops, lr, dt))
            for k, v in (("error", err), ("abs_error", err.abs()), ("sq_dist", sq)):
                obs[k].append(to_numpy(v.mean(0)))
            bar.update()
    bar.close()
    meta = {"t_unit": "loops", "seeds": [seed + s for s in range(seeds)], "device": str(dev), "dtype": str(dt),
            "trained_model": model is not None}
    return Simulation(t=np.arange(loops + 1), observables={k: np.array(v) for k, v in obs.items()}, meta=meta)


def train(problem, *, loops, steps=2000, batch=256, lr=1e-2, seed=0, init="random", device="cpu", dtype=None,
          progress=False):
    """Adam on the mean of ||TF_loops/alpha - theta*||^2 (the query-prediction loss) over fresh prompts.

    ``init="random"``: Q, P = I + N(0, 0.3^2/(d+1)) entries and every eta = 0.1 / (context E x^2);
    ``init="gd"``: Lemma 8.13's weights with the same eta. The residual weights start spread over [0.5, 1.5] eta0
    and get Adam's lr times 30 eta0; the lr decays linearly to 0. Returns ``(model, losses)`` (losses per step).
    ``progress`` shows a tqdm bar over the steps (when tqdm is installed).
    """
    loops = as_int("looped.train", "loops", loops, 1)
    steps, batch = as_int("looped.train", "steps", steps, 1), as_int("looped.train", "batch", batch, 1)
    lr = check("looped.train", "lr", lr, Interval(0, np.inf, closed="neither"))
    check("looped.train", "init", init, Options(("random", "gd")))
    dev, dt = resolve_device(device, "looped.train"), resolve_dtype(dtype, "looped.train")
    # one thread for the whole run, set-up included: with only the loop on one thread, 200 steps (context 32, d = 4,
    # 4 loops, batch 128) took 15-19 s on a loaded 2-core machine, against 5.8 s with the whole run inside
    with serial_if_small(dev, batch * (problem.context + 1) * (problem.d + 1)):
        return _adam(problem, loops, steps, batch, lr, seed, init, dev, dt, progress)


def _adam(problem, T, steps, batch, lr, seed, init, dev, dt, show):
    """The set-up and the loop of :func:`train` (validated arguments)."""
    gen = make_generator(seed, dev)
    torch.manual_seed(seed)
    model = LoopedTransformer(problem.d, T, dtype=dt, device=dev)
    eta0 = 0.1 / (problem.context * float(np.mean(problem.cov)))
    model.init_gd(eta0)
    with torch.no_grad():  # distinct starting steps: Adam moves equal coordinates with equal-sign gradients alike
        model.eta.mul_(torch.linspace(0.5, 1.5, T, dtype=dt, device=dev))
    if init == "random":
        with torch.no_grad():
            for W in (model.Q, model.P):
                W.copy_(torch.eye(problem.d + 1) + 0.3 / np.sqrt(problem.d + 1)
                        * standard_normal_(torch.empty_like(W), gen))
    # Adam's steps are ~lr per coordinate: the residual weights (size ~1/n) get lr scaled to their size
    opt = torch.optim.Adam([{"params": [model.Q, model.P]}, {"params": [model.eta], "lr": lr * eta0 * 30}], lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: 1 - i / steps)  # linear decay to 0: a settled end point
    losses = np.empty(steps)
    bar = _torch.progress(steps, show, "looped.train", unit="step")
    for i in range(steps):
        Z0, th = sample_prompts(problem, batch, gen, dt, dev)
        loss = curves(model, Z0, th, problem.alpha)[1][:, -1].mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses[i] = loss.item()
        bar.update()
    bar.close()
    return model, losses
