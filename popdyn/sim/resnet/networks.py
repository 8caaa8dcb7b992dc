"""ResNet vs kernels ([AllenZhu19]): the torch networks of the paper, their training and their finite-width kernels.

Public names
------------
ARCHS
    ``"resnet"`` (the re-parameterized three-layer ResNet, U = V A), ``"resnet_free_u"`` (form (2.1) with a free
    U in R^{m x (m+1)}), ``"fc3"`` and ``"fc2"`` (fully connected, hidden weights only).
Net, init_net
    The weights of ``seeds`` independent networks batched on one device (float64 by default), with the paper's
    inits: ``"experiment"`` (A, V ~ N(0, 1/m), W ~ N(0, 1/d); App. A) or ``"theory"`` (A ~ N(0, 1/m),
    W0 ~ N(0, sigma_w^2), V0 ~ N(0, sigma_v^2/m); Section 6).
train
    Algorithm 1 (online SGD, a fresh sample per step, separate eta_w, eta_v) or the paper's minibatch protocol
    (momentum 0.9, batch 50, epochs at lr then at lr/10, weight decay) on a target of
    :mod:`popdyn.models.resnet.targets`; test error and the hierarchy coefficients c_F, c_G over time.
preactivation_flips
    The ReLU signs of a layer flipped between init and the current weights, per input, with Prop. C.4's exact
    worst case for the measured perturbation size.
empirical_ntk, conjugate_kernel, ridge_fit
    Finite-width kernels of a network at its current weights as (seeds, n, n') matrices, and the ridge fit
    beta = (K + N lam I)^{-1} Y of program (3.1) on such a matrix.

The trained tensors are the full weights W0 + W and V0 + V (footnote 10: SGD on W0 + W is SGD on W); A is
never trained. Gradients are torch autograd; the tests hold them against the written gradient of Fact D.4 and
finite differences. See docs/resnet.md.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from ..._validate import FiniteArray, Interval, InvalidParameterError, Options, as_int, check
from ...models.resnet.coupling import worst_case_flips
from ...results import Simulation
from .._torch import (make_generator, progress as progress_bar, resolve_device, resolve_dtype, serial_if_small,
                      standard_normal_, to_numpy)

__all__ = ["ARCHS", "Net", "init_net", "train", "preactivation_flips", "empirical_ntk", "conjugate_kernel", "ridge_fit"]

#: architecture -> (trained layers, the second hidden layer reads (out1, 1) (True) or (h, 1) (False), residual)
ARCHS = {
    "resnet": (("W", "V"), True, True),
    "resnet_free_u": (("W", "V"), False, True),
    "fc3": (("W", "V"), False, False),
    "fc2": (("W",), None, False),
}
_POS = Interval(0, np.inf, closed="neither")
_NONNEG = Interval(0, np.inf, closed="left")
#: the random streams of a seed: generator ``seed * 4 + STREAMS[name]``
STREAMS = {"init": 0, "train": 1, "test": 2, "order": 3}


def _tilde(Z):
    """``(z, 1)``: the bias coordinate appended on the last axis."""
    return torch.cat([Z, Z.new_ones(Z.shape[:-1] + (1,))], dim=-1)


@dataclass
class Net:
    r"""``seeds`` networks with weights batched on a leading axis.

    .. math:: h=\sigma(W\tilde x),\quad \mathrm{out}_1=Ah,\quad
              \mathrm{out}=\mathrm{out}_1+A\,\sigma\big(V(\mathrm{out}_1,1)\big)\ \text{(resnet)},\
              \mathrm{out}_1+A\,\sigma\big(V(h,1)\big)\ \text{(resnet\_free\_u)},\
              A\,\sigma\big(V(h,1)\big)\ \text{(fc3)},\ \mathrm{out}_1\ \text{(fc2)}

    with :math:`\tilde x=(x,1)`, A (seeds, k, m) fixed, W (seeds, m, d+1) and V (seeds, m, k+1) or (seeds, m, m+1)
    (None for fc2) the full trained weights, W0 and V0 their values at init.

    References
    ----------
    .. [src] [AllenZhu19, eq. (2.1), Section 6, App. A].
    """
    arch: str
    A: torch.Tensor
    W: torch.Tensor
    V: torch.Tensor | None
    W0: torch.Tensor
    V0: torch.Tensor | None

    @property
    def seeds(self):
        return self.A.shape[0]

    @property
    def params(self):
        """The trained tensors by layer name."""
        return {"W": self.W} if self.V is None else {"W": self.W, "V": self.V}

    def forward(self, X, W=None, V=None):
        """Outputs (seeds, n, k) on inputs X (n, d) shared by the seeds or (seeds, n, d); W, V override the weights."""
        return self._layers(X, W, V)[0]

    def _layers(self, X, W=None, V=None):
        """Outputs and, per trained layer, (its input (z, 1), its pre-activation), each (seeds, n, .)."""
        W = self.W if W is None else W
        V = self.V if V is None else V
        Xt = _tilde(X.to(W.dtype))
        pre = torch.matmul(Xt, W.transpose(1, 2))                     # (s, n, m)
        h = torch.relu(pre)
        out1 = torch.matmul(h, self.A.transpose(1, 2))                # (s, n, k)
        if V is None:
            return out1, {"W": (Xt, pre)}
        _, reads_out1, residual = ARCHS[self.arch]
        Zt = _tilde(out1 if reads_out1 else h)
        pre_v = torch.matmul(Zt, V.transpose(1, 2))
        second = torch.matmul(torch.relu(pre_v), self.A.transpose(1, 2))
        return (out1 + second if residual else second), {"W": (Xt, pre), "V": (Zt, pre_v)}

    __call__ = forward


def init_net(arch, d, k, m, *, seeds=1, seed=0, init="experiment", sigma_w=None, sigma_v=None, device="cpu",
             dtype=None):
    r"""``seeds`` independent networks of [AllenZhu19] at initialization.

    .. math:: \text{experiment: } A_{ij},V_{ij}\sim\mathcal N(0,1/m),\ W_{ij}\sim\mathcal N(0,1/d);\qquad
              \text{theory: } A_{ij}\sim\mathcal N(0,1/m),\ W^{(0)}_{ij}\sim\mathcal N(0,\sigma_w^2),\
              V^{(0)}_{ij}\sim\mathcal N(0,\sigma_v^2/m)

    (bias columns drawn like the other entries of their row).

    Parameters
    ----------
    arch : {"resnet", "resnet_free_u", "fc3", "fc2"}
    d, k, m : int
        Input dimension, outputs, width (all >= 1).
    seeds : int
        Independent networks, >= 1.
    seed : int
        Seed of the init stream.
    init : {"experiment", "theory"}
    sigma_w, sigma_v : float or None
        Theory init only; default sigma_w = m^(-1/8) (Table 1) and sigma_v = 1 (Table 1 ties it to 1/tau_v^2,
        a constant the paper leaves open).
    device, dtype
        CPU or CUDA; float64 (default) or float32.

    Returns
    -------
    Net

    Notes
    -----
    Regime: any sizes. The experiment init's "N(1, 1/m)" (App. A) is read as N(0, 1/m) (an extraction artifact); the
    theory init makes out1 ~ 0 at init (docs/resnet.md).

    References
    ----------
    .. [src] [AllenZhu19, Section 6, Section 6.1, App. A].

    Examples
    --------
    >>> net = init_net("resnet", d=6, k=2, m=16, seeds=3)
    >>> tuple(net(torch.ones(5, 6, dtype=torch.float64)).shape)
    (3, 5, 2)
    """
    owner = "resnet.networks.init_net"
    check(owner, "arch", arch, Options(tuple(ARCHS)))
    check(owner, "init", init, Options(("experiment", "theory")))
    d, k, m = as_int(owner, "d", d, 1), as_int(owner, "k", k, 1), as_int(owner, "m", m, 1)
    seeds, seed = as_int(owner, "seeds", seeds, 1), as_int(owner, "seed", seed, 0, 2 ** 63 - 1)
    if init == "experiment" and (sigma_w is not None or sigma_v is not None):
        raise InvalidParameterError(f"The 'sigma_w' and 'sigma_v' parameters of {owner} apply to init='theory' "
                                    f"only. Got sigma_w={sigma_w!r}, sigma_v={sigma_v!r} with init='experiment'.")
    sw = m ** -0.125 if sigma_w is None else check(owner, "sigma_w", sigma_w, _POS)
    sv = 1.0 if sigma_v is None else check(owner, "sigma_v", sigma_v, _POS)
    dev, dt = resolve_device(device, owner), resolve_dtype(dtype, owner)
    gen = make_generator(seed * 4 + STREAMS["init"], dev)

    def gauss(shape, std):
        return standard_normal_(torch.empty(shape, device=dev, dtype=dt), gen).mul_(std)

    A = gauss((seeds, k, m), 1 / math.sqrt(m))
    W = gauss((seeds, m, d + 1), 1 / math.sqrt(d) if init == "experiment" else sw)
    V = None
    if arch != "fc2":
        width_in = k if ARCHS[arch][1] else m
        V = gauss((seeds, m, width_in + 1), (1.0 if init == "experiment" else sv) / math.sqrt(m))
    return Net(arch, A, W, V, W.clone(), None if V is None else V.clone())


def _walsh_torch(target, dev):
    """Per output, the list of (column index tensor, coefficient) of the target's Walsh expansion."""
    return [[(torch.as_tensor(S, dtype=torch.long, device=dev), float(c)) for S, c in w.items()]
            for w in target.walsh()]


def _evaluate(walsh, X):
    """Target values (..., k) from Walsh terms on ±1 inputs X (..., d)."""
    cols = []
    for terms in walsh:
        y = X.new_zeros(X.shape[:-1])
        for S, c in terms:
            y = y + c * (X[..., S].prod(-1) if S.numel() else 1.0)
        cols.append(y)
    return torch.stack(cols, dim=-1)


def signs(shape, gen, dev, dt):
    """Uniform ±1 entries of ``shape`` from the generator ``gen`` (the draw of every input of :func:`train`)."""
    return torch.randint(0, 2, shape, generator=gen, device=dev).to(dt).mul_(2).sub_(1)


def train(net, target, *, method="online", steps=1000, eta_w=0.1, eta_v=None, batch=1, N=1000, lr=0.1, wd=0.0,
          epochs=(400, 400), minibatch=50, momentum=0.9, test=4000, records=21, seed=0, hierarchy=True,
          progress=False):
    r"""Train ``net`` in place on ``target`` with x uniform on {±1}^d; test error and c_F, c_G over time.

    .. math:: \mathrm{Obj}=\tfrac12\|y-\mathrm{out}(x)\|^2,\qquad
              \widehat{\mathrm{err}}=\frac1n\sum_x\|\mathrm{out}(x)-\mathcal H(x)\|^2,\qquad
              c_{F,i}=\frac1n\sum_x\mathrm{out}_i(x)\chi_{A_i}(x),\quad c_{G,i}=\frac1n\sum_x\mathrm{out}_i(x)
              \chi_{B_i}(x)

    with :math:`A_i` the set of F_i and :math:`B_i` that of G_i(F) (``target.F_sets``, ``target.GF_sets``; a
    Monte Carlo estimate of the Walsh coefficients over the test set).

    Parameters
    ----------
    net : Net
        Trained in place (the seeds independently).
    target : popdyn.models.resnet.CompositionTarget
        E.g. ``thm2_target(d, k, alpha)`` or ``fig2_target()``; its d and k must match the net.
    method : {"online", "minibatch"}
        "online": Algorithm 1, ``steps`` SGD steps on a fresh batch of ``batch`` samples (1 in the paper), step
        ``eta_w`` on W and ``eta_v`` on V (default eta_w), no momentum, no decay. "minibatch": the paper's
        experiment protocol on one training set of ``N`` points per seed: SGD with ``momentum``, weight decay
        ``wd``, batches of ``minibatch``, ``epochs[0]`` epochs at ``lr`` then ``epochs[1]`` at ``lr / 10``.
    test : int
        Monte Carlo test points (shared by the seeds, drawn once).
    records : int
        Number of evaluations, evenly spaced from step 0 to the last step (>= 2).
    seed : int
        Seed of the training samples and the test set.
    hierarchy : bool
        Also record c_F and c_G.
    progress : bool
        Show a progress bar over the steps.

    Returns
    -------
    Simulation
        ``t`` (records,) the step counts; ``test_error`` (seeds, records) and its outputs ``test_error_output``
        (seeds, records, k); with ``hierarchy`` ``c_F`` and ``c_G`` (seeds, records, k) (c_G is NaN for an output
        whose G is absent). ``status`` 1 and a message when the loss of some seed became non-finite (the
        ResNet can diverge at a large lr where fc2 does not); the records after it are NaN for that seed.

    Notes
    -----
    Regime: any sizes. Algorithm 1 is the object of Theorem 1 (sample complexity = steps x batch); the minibatch
    protocol is the experiments' (App. A), whose (lr, wd) the paper tuned on the test error: choose them yourself.

    References
    ----------
    .. [src] [AllenZhu19, eq. (6.1), Algorithm 1, footnote 10, App. A].

    Examples
    --------
    >>> from popdyn.models.resnet import thm2_target
    >>> net = init_net("fc2", 6, 2, 32, seeds=2)
    >>> sim = train(net, thm2_target(6, 2, 0.3, rng=0), steps=10, test=100, records=3)
    >>> sim["test_error"].shape, sim.t.tolist()
    ((2, 3), [0.0, 5.0, 10.0])
    """
    owner = "resnet.networks.train"
    if not isinstance(net, Net):
        raise InvalidParameterError(f"The 'net' parameter of {owner} must be a Net (init_net). Got {net!r} instead.")
    d, k = net.W.shape[2] - 1, net.A.shape[1]
    if getattr(target, "d", None) != d or getattr(target, "k", None) != k:
        raise InvalidParameterError(f"The 'target' parameter of {owner} must be a CompositionTarget with d = {d} and "
                                    f"k = {k} (the net's). Got {target!r} instead.")
    check(owner, "method", method, Options(("online", "minibatch")))
    test, records = as_int(owner, "test", test, 2), as_int(owner, "records", records, 2)
    seed = as_int(owner, "seed", seed, 0, 2 ** 63 - 1)
    dev, dt = net.W.device, net.W.dtype
    layers = ARCHS[net.arch][0]
    if method == "online":
        steps, batch = as_int(owner, "steps", steps, 1), as_int(owner, "batch", batch, 1)
        eta_w = check(owner, "eta_w", eta_w, _POS)
        eta_v = eta_w if eta_v is None else check(owner, "eta_v", eta_v, _POS)
        groups = [{"params": [net.W], "lr": eta_w}] + ([{"params": [net.V], "lr": eta_v}] if "V" in layers else [])
        opt = torch.optim.SGD(groups, lr=eta_w)
        total = steps
    else:
        N, minibatch = as_int(owner, "N", N, 1), as_int(owner, "minibatch", minibatch, 1)
        lr, wd = check(owner, "lr", lr, _POS), check(owner, "wd", wd, _NONNEG)
        momentum = check(owner, "momentum", momentum, Interval(0, 1, closed="left"))
        epochs = tuple(as_int(owner, "epochs", e, 0) for e in epochs)
        if len(epochs) != 2 or sum(epochs) == 0:
            raise InvalidParameterError(f"The 'epochs' parameter of {owner} must be two counts (at lr, at lr/10), "
                                        f"not both 0. Got {epochs!r} instead.")
        per_epoch = -(-N // minibatch)
        total = sum(epochs) * per_epoch
        opt = torch.optim.SGD(list(net.params.values()), lr=lr, momentum=momentum, weight_decay=wd)
    walsh = _walsh_torch(target, dev)
    gen = make_generator(seed * 4 + STREAMS["train"], dev)
    Xtest = signs((test, d), make_generator(seed * 4 + STREAMS["test"], dev), dev, dt)
    Ytest = _evaluate(walsh, Xtest)
    chi_F = torch.stack([Xtest[:, list(S)].prod(1) for S in target.F_sets], 1)
    chi_G = torch.stack([Xtest[:, list(S)].prod(1) if S is not None else torch.full_like(Xtest[:, 0], math.nan)
                         for S in target.GF_sets], 1)
    at = np.unique(np.round(np.linspace(0, total, records)).astype(np.int64))
    err = np.full((net.seeds, at.size, k), np.nan)
    cF, cG = np.full((net.seeds, at.size, k), np.nan), np.full((net.seeds, at.size, k), np.nan)
    alive = torch.ones(net.seeds, dtype=torch.bool, device=dev)

    def record(j):
        with torch.no_grad():
            out = net(Xtest)
            err[:, j] = to_numpy(((out - Ytest) ** 2).mean(-2))
            if hierarchy:
                cF[:, j], cG[:, j] = to_numpy((out * chi_F).mean(1)), to_numpy((out * chi_G).mean(1))
            dead = to_numpy(~alive).astype(bool)
            err[dead, j], cF[dead, j], cG[dead, j] = np.nan, np.nan, np.nan

    if method == "minibatch":
        Xtr = signs((net.seeds, N, d), gen, dev, dt)
        Ytr = _evaluate(walsh, Xtr)
    start, j = time.perf_counter(), 0
    elements = net.seeds * (batch if method == "online" else minibatch) * net.W.shape[1]
    for q in net.params.values():
        q.requires_grad_(True)
    bar = progress_bar(total, progress, f"resnet {net.arch}", unit="step")
    with serial_if_small(dev, elements):
        for step in range(total + 1):
            if step == at[j]:
                record(j)
                j += 1
            if step == total:
                break
            bar.update(1)
            if method == "online":
                Xb = signs((net.seeds, batch, d), gen, dev, dt)
                Yb = _evaluate(walsh, Xb)
            else:
                epoch, b = divmod(step, per_epoch)
                if b == 0:
                    order = torch.argsort(torch.rand((net.seeds, N), generator=gen, device=dev), dim=1)
                    if epoch == epochs[0]:
                        for g in opt.param_groups:
                            g["lr"] = lr / 10
                idx = order[:, b * minibatch:(b + 1) * minibatch]
                Xb = torch.gather(Xtr, 1, idx[..., None].expand(-1, -1, d))
                Yb = torch.gather(Ytr, 1, idx[..., None].expand(-1, -1, k))
            per_seed = 0.5 * ((net(Xb) - Yb) ** 2).sum(-1).mean(-1)
            alive &= torch.isfinite(per_seed)
            opt.zero_grad(set_to_none=False)
            per_seed.sum().backward()
            with torch.no_grad():
                for q in net.params.values():
                    q.grad[~alive] = 0        # a diverged seed stops; a NaN gradient marks its seed at the next step
            opt.step()
    bar.close()
    for q in net.params.values():
        q.requires_grad_(False)
        q.grad = None
    bad = int((~alive).sum())
    obs = {"test_error": err.sum(-1), "test_error_output": err}
    if hierarchy:
        obs.update(c_F=cF, c_G=cG)
    meta = {"arch": net.arch, "method": method, "seed": seed, "test": test, "device": str(dev),
            "dtype": str(dt).removeprefix("torch."), "wall_time_s": time.perf_counter() - start,
            "target": repr(target)}
    meta.update({"steps": steps, "batch": batch, "eta_w": eta_w, "eta_v": eta_v} if method == "online" else
                {"N": N, "lr": lr, "wd": wd, "epochs": list(epochs), "minibatch": minibatch, "momentum": momentum})
    msg = f"{bad} seed(s) diverged (non-finite loss); their later records are NaN" if bad else ""
    return Simulation(t=at.astype(np.float64), observables=obs, status=int(bad > 0), message=msg, meta=meta)


def _inputs(owner, name, X, d, dev, dt):
    X = check(owner, name, X, FiniteArray(2, (None, d)))
    if not np.all(np.abs(X) == 1):
        raise InvalidParameterError(f"The '{name}' parameter of {owner} must have entries ±1. Got other values.")
    return torch.tensor(X, dtype=dt, device=dev)


def preactivation_flips(net, X, layer="W"):
    r"""Flipped ReLU signs of one layer between init and the current weights, and Prop. C.4's exact worst case.

    .. math:: g^{(0)} = W^{(0)}\tilde x,\quad g' = (W - W^{(0)})\tilde x,\quad
              \|D'\|_0 = \#\{j: 1[(g^{(0)}+g')_j\ge0]\ne1[g^{(0)}_j\ge0]\},\quad
              \delta = \frac{\|g'\|_2}{\|g^{(0)}\|_2}

    (layer "V": :math:`g^{(0)} = V^{(0)}(\mathrm{out}_1(x),1)`, :math:`g' = (V-V^{(0)})(\mathrm{out}_1(x),1)` with the
    current W, i.e. :math:`\|D_{V^{(0)},W} - D_{V,W}\|_0` of Lemma D.1(d)).

    Parameters
    ----------
    net : Net
    X : array_like of shape (n, d)
        ±1 inputs.
    layer : {"W", "V"}
        "V" needs an architecture with a second layer.

    Returns
    -------
    dict of ndarray, each (seeds, n)
        ``flips`` (int), ``fraction`` = flips / m, ``delta`` (:math:`\|g'\|/\|g^{(0)}\|`, the radius of Prop. C.4
        once :math:`g^{(0)}` is scaled to :math:`N(0, I/m)`, :math:`\mathbb E\|g^{(0)}\|^2 = 1`) and ``worst``
        (int) = :func:`popdyn.models.resnet.worst_case_flips` :math:`(g^{(0)}, \|g'\|)`, the exact maximum over all
        perturbations of that norm (scale-free), so ``flips <= worst`` always.

    Notes
    -----
    Regime: any net; for a fixed x, :math:`g^{(0)}` is exactly Gaussian with i.i.d. entries under both inits, so
    :func:`popdyn.models.resnet.worst_case_flip_fraction` (delta) and
    :func:`popdyn.models.resnet.random_flip_fraction` (delta) are its m -> inf worst-case and random-direction
    fractions.

    References
    ----------
    .. [src] [AllenZhu19, Prop. C.4, App. D, Lemma D.1(a), (d)].

    Examples
    --------
    >>> net = init_net("resnet", d=4, k=2, m=64, seeds=2)
    >>> X = np.array([[1.0, -1.0, 1.0, 1.0]])
    >>> preactivation_flips(net, X)["flips"].tolist()          # nothing trained yet
    [[0], [0]]
    >>> net.W += 0.05
    >>> r = preactivation_flips(net, X)
    >>> bool((r["flips"] <= r["worst"]).all())
    True
    """
    owner = "resnet.networks.preactivation_flips"
    if not isinstance(net, Net):
        raise InvalidParameterError(f"The 'net' parameter of {owner} must be a Net (init_net). Got {net!r} instead.")
    check(owner, "layer", layer, Options(("W", "V") if net.V is not None else ("W",)))
    Xt = _inputs(owner, "X", X, net.W.shape[2] - 1, net.W.device, net.W.dtype)
    with torch.no_grad():
        z, pre = net._layers(Xt)[1][layer]
        pre0 = torch.matmul(z, (net.W0 if layer == "W" else net.V0).transpose(1, 2))
        g0, gp = to_numpy(pre0), to_numpy(pre - pre0)
        flips = to_numpy(((pre >= 0) != (pre0 >= 0)).sum(-1)).astype(np.int64)
    size = np.linalg.norm(gp, axis=-1)
    worst = np.array([[worst_case_flips(g0[s, i], size[s, i]) for i in range(g0.shape[1])]
                      for s in range(g0.shape[0])], dtype=np.int64)
    return {"flips": flips, "fraction": flips / g0.shape[-1], "delta": size / np.linalg.norm(g0, axis=-1),
            "worst": worst}


def _ntk_factors(net, X, which):
    """Per layer in ``which``: its input (seeds, n, p) and d out_a / d pre-activation (seeds, n, k, m).

    d out_a / d theta = (d out_a / d pre) (z, 1)^T for a layer pre = theta (z, 1), and the points do not interact,
    so k backward passes of the summed outputs give every per-point gradient.
    """
    with torch.enable_grad():
        W, V = net.W.detach().requires_grad_(True), None if net.V is None else net.V.detach().requires_grad_(True)
        out, layers = net._layers(X, W, V)
        pres = [layers[name][1] for name in which]
        grads = [torch.autograd.grad(out[..., a].sum(), pres, retain_graph=True) for a in range(out.shape[-1])]
    return [(layers[name][0].detach(), torch.stack([g[i] for g in grads], 2)) for i, name in enumerate(which)]


def empirical_ntk(net, X, Y=None, which=None):
    r"""Finite-width NTK of ``net`` at its current weights, w.r.t. the hidden layers ``which``.

    .. math:: \Theta_{ab}(x,y)=\sum_{\theta\in\text{which}}\big\langle\partial_\theta\mathrm{out}_a(x),
              \partial_\theta\mathrm{out}_b(y)\big\rangle

    Parameters
    ----------
    net : Net
    X : array_like, shape (n, d), entries ±1
    Y : array_like, shape (n', d), or None for X
    which : tuple of {"W", "V"} or None
        Default: every trained layer of the architecture (the paper's "(NTK)", Fig. 2).

    Returns
    -------
    ndarray, shape (seeds, n, n') for k = 1 or the output-diagonal block average
        :math:`\frac1k\sum_a\Theta_{aa}` otherwise (the scalar kernel used for each output in a KRR fit).

    Notes
    -----
    Regime: any width; at init with the experiment init, the fc2 NTK w.r.t. W tends as m -> inf to
    (d+1) relu_ntk_hidden(d, bias=True) (the :math:`\sigma'` indicator is scale free and :math:`E a^2 = 1/m`).
    Cost: k backward passes, memory seeds x n x k x m per layer, and O(seeds n n' k m) for the kernel.

    References
    ----------
    .. [src] [AllenZhu19, footnote 5, Fig. 2]; the ResNet's empirical NTK derived in docs/resnet.md.

    Examples
    --------
    >>> net = init_net("fc2", 4, 1, 8)
    >>> empirical_ntk(net, [[1, 1, -1, 1], [-1, 1, 1, 1]]).shape
    (1, 2, 2)
    """
    owner = "resnet.networks.empirical_ntk"
    layers = ARCHS[net.arch][0]
    which = layers if which is None else tuple(which)
    if not which or any(w not in layers for w in which):
        raise InvalidParameterError(f"The 'which' parameter of {owner} must be a non-empty subset of {layers} for "
                                    f"arch {net.arch!r}. Got {which!r} instead.")
    d, dev, dt = net.W.shape[2] - 1, net.W.device, net.W.dtype
    Xt = _inputs(owner, "X", X, d, dev, dt)
    fx = _ntk_factors(net, Xt, which)
    fy = fx if Y is None else _ntk_factors(net, _inputs(owner, "Y", Y, d, dev, dt), which)
    K = sum(torch.matmul(zx, zy.transpose(-1, -2)) * torch.einsum("sikm,sjkm->sij", gx, gy)
            for (zx, gx), (zy, gy) in zip(fx, fy))
    K = K / net.A.shape[1]
    return to_numpy(K)


def conjugate_kernel(net, X, Y=None):
    r"""Conjugate kernel of ``net``: the Gram matrix of its last hidden layer (the paper's "(last)": train A only).

    .. math:: K(x,y)=\frac1m\langle z(x),z(y)\rangle,\qquad z=\sigma(W\tilde x)\ \text{(fc2)},\
              \sigma\big(V(\cdot,1)\big)\ \text{(fc3, resnet, resnet\_free\_u; plus } h \text{ for the resnets'
              residual branch)}

    Parameters
    ----------
    net : Net
    X : array_like, shape (n, d), entries ±1
    Y : array_like, shape (n', d), or None for X

    Returns
    -------
    ndarray, shape (seeds, n, n')

    Notes
    -----
    Regime: any width. For the resnets out = A (h + z), so the features read by A are h + z. With W of variance
    1/(d+1) the fc2 kernel tends to relu_nngp(d, bias=True) as m -> inf (:math:`\|\tilde x\|^2=d+1`).

    References
    ----------
    .. [src] [AllenZhu19, footnote 5, Fig. 2].
    """
    owner = "resnet.networks.conjugate_kernel"
    d, dev, dt = net.W.shape[2] - 1, net.W.device, net.W.dtype

    def feats(Z):
        with torch.no_grad():
            h = torch.relu(torch.matmul(_tilde(Z), net.W.transpose(1, 2)))
            if net.V is None:
                return h
            _, reads_out1, residual = ARCHS[net.arch]
            src = torch.matmul(h, net.A.transpose(1, 2)) if reads_out1 else h
            z = torch.relu(torch.matmul(_tilde(src), net.V.transpose(1, 2)))
            return h + z if residual else z

    Fx = feats(_inputs(owner, "X", X, d, dev, dt))
    Fy = Fx if Y is None else feats(_inputs(owner, "Y", Y, d, dev, dt))
    return to_numpy(torch.matmul(Fx, Fy.transpose(1, 2)) / net.A.shape[2])


def ridge_fit(K, Y, lam):
    r"""Ridge weights of program (3.1) on a kernel matrix: :math:`\beta=(K+N\lambda I)^{-1}Y`.

    Parameters
    ----------
    K : array_like, shape (N, N) or (seeds, N, N)
        Symmetric PSD kernel matrix (e.g. :func:`empirical_ntk`).
    Y : array_like, shape (N,) or (N, k)
    lam : float
        lambda > 0.

    Returns
    -------
    ndarray, shape of Y with K's leading seed axis.

    Notes
    -----
    Regime: lambda > 0; the same fit as :func:`popdyn.models.resnet.krr_fit`, for a matrix instead of a profile.
    Predict with ``K_test_train @ beta``.

    References
    ----------
    .. [src] [AllenZhu19, program (3.1)].

    Examples
    --------
    >>> ridge_fit(np.eye(2), [1.0, 2.0], 0.5).tolist()
    [0.5, 1.0]
    """
    owner = "resnet.networks.ridge_fit"
    K = np.asarray(K, dtype=np.float64)
    K = check(owner, "K", K, FiniteArray(K.ndim if K.ndim in (2, 3) else 2))
    if K.shape[-1] != K.shape[-2]:
        raise InvalidParameterError(f"The 'K' parameter of {owner} must be square, shape (N, N) or (seeds, N, N). "
                                    f"Got shape {K.shape} instead.")
    N = K.shape[-1]
    Y = np.asarray(Y, dtype=np.float64)
    Y = check(owner, "Y", Y, FiniteArray(Y.ndim if Y.ndim in (1, 2) else 1, (N,) + (None,) * (Y.ndim - 1)))
    lam = check(owner, "lam", lam, _POS)
    A = K + N * lam * np.eye(N)
    if K.ndim == 2:
        return np.linalg.solve(A, Y)
    rhs = np.broadcast_to(Y.reshape(N, -1), (K.shape[0], N, Y.reshape(N, -1).shape[1]))
    return np.linalg.solve(A, rhs).reshape((K.shape[0],) + Y.shape)
