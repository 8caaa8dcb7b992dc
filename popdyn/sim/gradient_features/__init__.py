"""Gradient-feature learning ([Shi24], ch. 3): the two-layer ReLU network trained on finite samples.

Public names
------------
train
    ``train(model, *, width, method, steps, n_train, lr_first, lr, ...)`` -> :class:`popdyn.results.Simulation`:
    Algorithm 1 (one step of size lr_first = eta^(1) with weight decay 1/eta^(1) that erases the init, then online
    GD of step size lr with a fresh batch per step),
    Algorithm 4 (the same first step, then GD on ``a`` on one fixed sample), its uniform-parity (Algorithm 6) and
    multi-index (Algorithm 7) cases, and the random-features and NTK baselines at equal width (4 width neurons); all
    seeds batched on one device (CPU or CUDA), float64 by default.
simulate
    ``popdyn.simulate`` for :class:`popdyn.models.gradient_features.Problem`: the first step from the problem's own
    init on n_train samples per seed, with ``predict``'s names (``a1``, ``W1``, ``cos_features``, ``nice_fraction``),
    then optionally the training of a method.
METHODS, LOSSES
    The method table and the loss names.

The network is ``g(x) = sum_i a_i relu(<w_i, x> - b_i)`` (minus b, b never trained; [Shi24, (3.1)]) with W (4m, d), one
row per neuron, and the symmetric init (3.9): neurons [0, m) drawn, [m, 2m) = (-a, -w, -b), [2m, 4m) = (-a, w, b)
copies of the first 2m, so ``g^(0) = 0`` exactly. Gradients are written out (Lemma B.70):
``dL/da_i = E^[l'(y g) y relu(w_i.x - b_i)]`` and ``dL/dw_i = a_i E^[l'(y g) y 1[w_i.x > b_i] x]`` (strict
indicator); the tests hold them against torch autograd. The first step uses ``lambda^(1) = 1/eta^(1)``, so its
decay factor ``1 - eta^(1) lambda^(1)`` is taken as exactly 0: ``W^(1) = -eta^(1) grad_W``, with no additive
``W^(0)`` (Remark B.13). See docs/gradient_features.md.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from ..._validate import FiniteArray, Interval, InvalidParameterError, Options, as_int, check
from ...models.gradient_features.framework import nice_set, symmetric_init
from ...results import Simulation
from .._torch import progress as make_bar, resolve_device, resolve_dtype, serial_if_small, to_numpy

__all__ = ["train", "simulate", "METHODS", "LOSSES"]

_OWNER = "gradient_features.train"
_BOOL = Options((True, False))
_POS = Interval(0, np.inf, closed="neither")
_NONNEG = Interval(0, np.inf, closed="left")
_LN2 = math.log(2.0)
_CHUNK_ELEMENTS = 2**22          # seeds x samples x neurons of one pre-activation block (32 MB in float64)
_CACHE_ELEMENTS = 2**26          # frozen features of a fixed sample are kept when they fit in 512 MB (float64)
#: the l(0) = 1 losses of Assumption 3.1 ("logistic" is base 2) and the square loss of Algorithm 7
LOSSES = ("hinge", "logistic", "mse")
_STREAMS = {"init": 0, "test": 1, "train": 2, "bias": 3}


@dataclass(frozen=True)
class _Method:
    """One training procedure: the first step (None, "aW" or "W"), the layers trained after it, fresh batches by
    default, linearised at init (NTK), the default init law and loss."""
    step1: str | None
    layers: tuple
    fresh: bool
    linear: bool
    init: str
    loss: str
    reinit_b: bool = False


#: method -> procedure ([Shi24, Algorithms 1, 4, 6, 7])
METHODS = {
    "alg1": _Method("aW", ("a", "W"), True, False, "gauss", "hinge"),
    "alg4": _Method("aW", ("a",), False, False, "gauss", "hinge"),
    "alg6": _Method("aW", ("a",), False, False, "parity", "hinge"),
    "alg7": _Method("W", ("a",), False, False, "multi_index", "mse", reinit_b=True),
    "rf": _Method(None, ("a",), False, False, "gauss", "hinge"),
    "ntk": _Method(None, ("a", "W"), False, True, "gauss", "hinge"),
}
_INITS = ("gauss", "parity", "multi_index")


# ---- network and gradients ---------------------------------------------------------------------------------------

def _loss_terms(kind, g, y):
    """Per-sample loss and its derivative in g: hinge ``max(0, 1 - yg)`` with ``-y 1[yg < 1]``, base-2 logistic
    ``log2(1 + e^{-yg})`` with ``-y sigmoid(-yg)/ln 2``, square ``(g - y)^2`` with ``2(g - y)``."""
    if kind == "mse":
        r = g - y
        return r * r, 2.0 * r
    z = y * g
    if kind == "hinge":
        return torch.relu(1.0 - z), -y * (z < 1.0).to(g.dtype)
    return torch.logaddexp(torch.zeros_like(z), -z) / _LN2, -y * torch.sigmoid(-z) / _LN2


class _Net:
    """Parameters on the device (a, W, b: (seeds, M), (seeds, M, d), (seeds, M)) and, for the NTK, the init
    (a0, W0) at which the network is linearised: ``g = sum_i a_i relu(z0_i) + a0_i 1[z0_i > 0] <w_i - w0_i, x>``."""

    def __init__(self, a, W, b, linear=False):
        self.a, self.W, self.b = a, W, b
        self.a0, self.W0 = (a.clone(), W.clone()) if linear else (None, None)

    def features(self, X):
        """Pre-activations ``z = W_src x - b`` (seeds, n, M) of the source layer (W0 for the NTK) and relu(z)."""
        Z = torch.baddbmm(-self.b[:, None, :], X, (self.W if self.W0 is None else self.W0).mT)
        return Z, torch.relu(Z)

    def output(self, X, Z, F):
        g = (F @ self.a[..., None])[..., 0]
        if self.W0 is not None:
            g = g + ((X @ (self.W - self.W0).mT) * (Z > 0).to(X.dtype) * self.a0[:, None, :]).sum(-1)
        return g


def _chunks(n, seeds, neurons, chunk):
    size = chunk or max(1, _CHUNK_ELEMENTS // max(1, seeds * neurons))
    return [slice(i, min(i + size, n)) for i in range(0, n, size)]


def _gradients(net, X, y, loss, chunk, want_W, cache=None):
    r"""Mean loss and its gradients in a and W over the batch (X (seeds, n, d), y (seeds, n)), in chunks.

    .. math:: \partial_{a_i}\hat L = \hat{\mathbb E}[u\,\sigma(z_i)],\quad
              \partial_{\mathbf w_i}\hat L = c_i\,\hat{\mathbb E}[u\,\mathbb 1[z_i > 0]\,\mathbf x],\quad
              u = \partial_g\ell,\ c_i = a_i\ (a^{(0)}_i\text{ for the NTK})

    ``cache`` (the features F per chunk) holds relu(z) of a fixed sample when W is frozen (never for the NTK).
    """
    S, n, _ = X.shape
    M = net.a.shape[1]
    ga = torch.zeros_like(net.a)
    gW = torch.zeros_like(net.W) if want_W else None
    total = torch.zeros(S, dtype=X.dtype, device=X.device)
    for j, r in enumerate(_chunks(n, S, M, chunk)):
        Xc, yc = X[:, r], y[:, r]
        Z, F = net.features(Xc) if cache is None else (None, cache[j])
        l, u = _loss_terms(loss, net.output(Xc, Z, F), yc)
        total += l.sum(1)
        ga += (F.mT @ u[..., None])[..., 0]
        if want_W:                       # Z is this chunk's own (never cached when W moves): reuse it in place
            gW += Z.gt_(0).mul_(u[..., None]).mT @ Xc
    coef = net.a if net.a0 is None else net.a0
    return total / n, ga / n, None if gW is None else gW * (coef[..., None] / n)


def _evaluate(net, X, y, loss, chunk):
    """Mean loss and error ``P[y g < 0] + P[g = 0]/2`` per seed (for the square loss the sign disagreement)."""
    S, n, _ = X.shape
    total = torch.zeros(S, dtype=torch.float64, device=X.device)
    err = torch.zeros_like(total)
    for r in _chunks(n, S, net.a.shape[1], chunk):
        Z, F = net.features(X[:, r])
        g = net.output(X[:, r], Z, F)
        total += _loss_terms(loss, g, y[:, r])[0].double().sum(1)
        yg = y[:, r] * g
        err += ((yg < 0).double() + 0.5 * (yg == 0).double()).sum(1)
    return total / n, err / n


# ---- data and init -------------------------------------------------------------------------------------------------

def _rng(seed, replicate, stream, t=0):
    return np.random.default_rng(np.random.SeedSequence([seed, replicate, _STREAMS[stream], t]))


def _sample(model, seeds, n, seed, stream, t, dtype, device):
    """(X (seeds, n, d), y (seeds, n)): replicate s draws ``model.sample(n, rng)`` with rng seeded by (seed, s, stream,
    t), so every batch is reproducible on its own and independent of the others."""
    X, Y = [], []
    for s in range(seeds):
        x, yy = model.sample(n, _rng(seed, s, stream, t))
        X.append(np.asarray(x, dtype=np.float64))
        Y.append(np.asarray(yy, dtype=np.float64))
    return (torch.as_tensor(np.stack(X), dtype=dtype, device=device),
            torch.as_tensor(np.stack(Y), dtype=dtype, device=device))


def _draw_init(law, d, m, opts, rng):
    """The symmetric init (3.9) of one seed (:func:`~popdyn.models.gradient_features.framework.symmetric_init`), its
    first m neurons by law: "gauss" a ~ N(0, sigma_a^2), w ~ N(0, sigma_w^2 I), b = b_tilde; "parity" (B.479)
    a ~ U{+-1}, w ~ U{+-1}^d, b ~ U{-1 + 1/k, ..., 1 - 1/k}; "multi_index" (B.561) a ~ U{+-1} (the sign of a
    N(0, 1) draw, which keeps the mirror structure), w ~ N(0, I/d), b = 0."""
    if law == "gauss":
        return symmetric_init(d, m, opts["sigma_a"], opts["sigma_w"], opts["b_tilde"], rng)
    if law == "parity":
        k = opts["k"]
        return symmetric_init(d, m, 1.0, 1.0, (rng.integers(1, 2 * k, m) - k) / k, rng, law="sign")
    a, W, b = symmetric_init(d, m, 1.0, 1.0 / math.sqrt(d), np.zeros(m), rng)
    return np.sign(a), W, b


def _initial(opts, d, dtype, device):
    """(a0, W0, b) stacked over seeds: the given arrays for every seed, or a fresh symmetric init per seed."""
    S, m = opts["seeds"], opts["width"]
    if not isinstance(opts["init"], str):
        per_seed = [opts["init"]] * S
    else:
        per_seed = [_draw_init(opts["init"], d, m, opts, _rng(opts["seed"], s, "init")) for s in range(S)]
    return [torch.as_tensor(np.stack([p[i] for p in per_seed]), dtype=dtype, device=device) for i in range(3)]


# ---- options -------------------------------------------------------------------------------------------------------

def _check(model, opts):
    """Validate the options (in place) against each other and the model; returns the method and the dimension."""
    o = opts
    o["width"] = as_int(_OWNER, "width", o["width"], 1)
    o["method"] = check(_OWNER, "method", o["method"], Options(tuple(METHODS)))
    meth = METHODS[o["method"]]
    o["steps"] = as_int(_OWNER, "steps", o["steps"], 0)
    o["n_train"] = as_int(_OWNER, "n_train", o["n_train"], 1)
    o["seeds"] = as_int(_OWNER, "seeds", o["seeds"], 1)
    o["seed"] = as_int(_OWNER, "seed", o["seed"], 0, 2**63 - 1)
    o["n_test"] = as_int(_OWNER, "n_test", o["n_test"], 1)
    o["n_points"] = as_int(_OWNER, "n_points", o["n_points"], 2)
    if o["chunk"] is not None:
        o["chunk"] = as_int(_OWNER, "chunk", o["chunk"], 1)
    for name in ("train_W", "record_params", "progress"):
        o[name] = check(_OWNER, name, o[name], _BOOL)
    o["fresh"] = meth.fresh if o["fresh"] is None else check(_OWNER, "fresh", o["fresh"], _BOOL)
    o["loss"] = check(_OWNER, "loss", meth.loss if o["loss"] is None else o["loss"], Options(LOSSES))
    if (o["loss"] == "mse") != (o["method"] == "alg7"):
        raise InvalidParameterError(f"The 'loss' parameter of {_OWNER} must be 'mse' for method 'alg7' (regression, "
                                    f"B.562) and one of ['hinge', 'logistic'] otherwise. Got {o['loss']!r} instead.")
    needs_first = meth.step1 is not None and o["steps"] >= 1
    if o["lr_first"] is None and needs_first and o["method"] == "alg6":
        k = as_int(_OWNER, "model.k", getattr(model, "k", None), 1)
        o["lr_first"] = 1.0 / (k * abs(float(model.xi(k - 1))))                 # Theorem B.56: 1/(k |xi_{k-1}|)
    if needs_first:
        if o["lr_first"] is None:
            raise InvalidParameterError(f"The 'lr_first' parameter of {_OWNER} must be a float in (0, inf) for method "
                                        f"{o['method']!r} (its first step). Got None instead.")
        o["lr_first"] = check(_OWNER, "lr_first", o["lr_first"], _POS)
    if o["lam1"] is not None:
        o["lam1"] = check(_OWNER, "lam1", o["lam1"], _NONNEG)
    first_gd = 2 if meth.step1 is not None else 1
    if o["steps"] >= first_gd or o["lr"] is not None:
        if o["lr"] is None:
            raise InvalidParameterError(f"The 'lr' parameter of {_OWNER} must be a float in (0, inf) when steps >= "
                                        f"{first_gd} (the gradient steps after the first). Got None instead.")
        o["lr"] = check(_OWNER, "lr", o["lr"], _POS)
    d = as_int(_OWNER, "model.dim", getattr(model, "dim", None), 1)
    o["init"] = _check_init(model, o, meth, d)
    if o["mask"] is not None:
        mask = np.asarray(o["mask"])
        if mask.dtype != bool or mask.shape != (4 * o["width"],):
            raise InvalidParameterError(f"The 'mask' parameter of {_OWNER} must be None or a boolean array of shape "
                                        f"(4 width,) = ({4 * o['width']},). Got {o['mask']!r} instead.")
        o["mask"] = mask
    return meth, d


def _check_init(model, o, meth, d):
    """The init law name (with its scales checked) or three fixed arrays (a0 (4m,), W0 (4m, d), b (4m,))."""
    init = meth.init if o["init"] is None else o["init"]
    if isinstance(init, str):
        init = check(_OWNER, "init", init, Options(_INITS))
        if init == "gauss":
            o["sigma_a"] = check(_OWNER, "sigma_a", o["sigma_a"], _POS)
            o["sigma_w"] = check(_OWNER, "sigma_w", o["sigma_w"], _POS)
            if o["b_tilde"] is None:
                raise InvalidParameterError(f"The 'b_tilde' parameter of {_OWNER} must be a float in (0, inf) for the "
                                            f"Gaussian init (3.9). Got None instead.")
            o["b_tilde"] = check(_OWNER, "b_tilde", o["b_tilde"], _POS)
        if init == "parity":
            o["k"] = as_int(_OWNER, "model.k", getattr(model, "k", None), 1)
        return init
    try:
        a0, W0, b = init
    except (TypeError, ValueError):
        raise InvalidParameterError(f"The 'init' parameter of {_OWNER} must be one of {list(_INITS)} or arrays "
                                    f"(a0, W0, b). Got {init!r} instead.") from None
    M = 4 * o["width"]
    return (check(_OWNER, "init[0] (a0)", a0, FiniteArray(1, (M,))),
            check(_OWNER, "init[1] (W0)", W0, FiniteArray(2, (M, d))),
            check(_OWNER, "init[2] (b)", b, FiniteArray(1, (M,))))


# ---- training ------------------------------------------------------------------------------------------------------

def _update(net, grads, eta, layers, mask, decay=1.0):
    """``theta <- decay theta - eta grad`` on the trained layers; masked neurons keep a = 0."""
    _, ga, gW = grads
    if "a" in layers:
        net.a = (0.0 if decay == 0.0 else decay * net.a) - eta * ga
        if mask is not None:
            net.a = net.a * mask
    if "W" in layers:
        net.W = (0.0 if decay == 0.0 else decay * net.W) - eta * gW


def train(model, *, width, method="alg1", steps, n_train, lr_first=None, lr=None, loss=None, init=None, sigma_a=1.0,
          sigma_w=1.0, b_tilde=None, lam1=None, train_W=True, fresh=None, mask=None, seeds=1, seed=0,
          n_test=10_000, n_points=21, record_params=True, device="cpu", dtype=None, chunk=None, progress=False):
    r"""Train the two-layer ReLU network of the gradient-feature framework (or a baseline) on finite samples.

    .. math:: \mathbf a^{(1)} = -\eta^{(1)}\nabla_{\mathbf a}\tilde{\mathcal L}_{\mathcal Z^{(0)}}(g_{\Xi^{(0)}}),
              \quad \mathbf W^{(1)} = -\eta^{(1)}\nabla_{\mathbf W}\tilde{\mathcal L}_{\mathcal Z^{(0)}}(g_{\Xi^{(0)}})
              \quad(\lambda^{(1)} = 1/\eta^{(1)}),

              \theta^{(t)} = \theta^{(t-1)}
              - \eta\,\nabla_\theta\tilde{\mathcal L}_{\mathcal Z^{(t-1)}}(g_{\Xi^{(t-1)}})\quad(t \ge 2)

    with :math:`g_\Xi(\mathbf x) = \sum_{i<4m} a_i\,\mathrm{relu}(\langle\mathbf w_i,\mathbf x\rangle - b_i)`,
    b never trained, and the symmetric init (3.9), so that :math:`g_{\Xi^{(0)}} = 0` and the first step is
    :math:`\mathbf w^{(1)}_i = \eta^{(1)}|\ell'(0)|a^{(0)}_i\tilde G(\mathbf w^{(0)}_i, b_i)` exactly (B.16-B.17).

    Parameters
    ----------
    model : data model
        Anything with ``.sample(n, rng) -> (X (n, d), y (n,))`` and ``.dim`` (``GaussianMixture``,
        ``StructuredParity``, ``UniformParity``, ``MultiIndexPolynomial``, ...); "alg6" and the "parity" init also
        read ``.k`` (and ``.xi`` for the default lr_first).
    width : int
        Base width m in the paper, ``>= 1``: the network has 4m neurons (3.9); every method has the same width.
    method : {"alg1", "alg4", "alg6", "alg7", "rf", "ntk"}
        "alg1": Algorithm 1: the first step, then GD on a and W (W only if ``train_W``) with a fresh batch of
        n_train samples per step. "alg4": Algorithm 4: the first step on one sample Z, W frozen, GD on a on the
        same Z. "alg6": Algorithm 6, uniform parity: "alg4" with the init (B.479) and by default
        ``lr_first = 1/(k |xi_{k-1}|)`` (Theorem B.56). "alg7": Algorithm 7, multi-index: labels preprocessed
        to ``y - rho - <beta, x>`` (rho, beta the sample means of y and y x on the first sample, applied to every
        batch and the test set), a first step on W only (a stays a^(0)), then b re-drawn i.i.d. N(0, 1), then GD
        on a with the square loss. "rf": random features, W^(0) frozen and GD on a from a^(0) (no first step).
        "ntk": the network linearised at its init, GD on a and W of the linearisation (no first step).
    steps : int
        T ``>= 0``: the first step counts as step 1 (methods with one); "rf" and "ntk" take T GD steps.
    n_train : int
        Samples per batch (fresh per step) or of the one fixed sample, ``>= 1`` (n in the paper).
    lr_first : float, optional
        Step size of the first step, eta^(1) in the paper, ``> 0``; its weight decay is ``lam1`` (default exactly
        1/eta^(1)).
    lr : float, optional
        Step size ``> 0`` of every later step (eta in the paper; lambda = 0), needed when there is one.
    loss : {"hinge", "logistic", "mse"}, optional
        Default "hinge" ("mse" for "alg7", the only method that takes it). "logistic" is base 2,
        ``log2(1 + e^{-z})``, so that l(0) = 1 and l'(0) = -1/(2 ln 2) (Assumption 3.1).
    init : {"gauss", "parity", "multi_index"} or (a0, W0, b), optional
        The law of the first m neurons, mirrored by (3.9): "gauss" a ~ N(0, sigma_a^2), w ~ N(0, sigma_w^2 I),
        b = b_tilde (default of "alg1", "alg4", "rf", "ntk"); "parity" (B.479; "alg6"); "multi_index" (B.561;
        "alg7"). Or fixed arrays a0 (4m,), W0 (4m, d), b (4m,) used by every seed (e.g. the init of
        ``popdyn.predict``, so that theory and simulation share it).
    sigma_a, sigma_w, b_tilde : float
        Scales of the "gauss" init, ``> 0`` (b_tilde has no default).
    lam1 : float, optional
        Weight decay of the first step ``>= 0``; None is 1/lr_first with the decay factor taken as exactly 0.
    train_W : bool
        "alg1" only: update W after the first step (the paper), or freeze it (Theorem 3.4's simple setting).
    fresh : bool, optional
        A fresh batch per step (default for "alg1") or one fixed sample (default otherwise).
    mask : bool array (4m,), optional
        Neurons kept after the first step (from t = 0 for "rf", "ntk"); the others get a = 0 and are not trained
        (the lottery ticket of Prop. B.1 is ``mask = a_tilde != 0``).
    seeds : int
        Independent runs (init unless fixed, samples, test set), batched on one device.
    seed : int
        Seed of everything drawn: replicate s draws its init, test set, batch t and re-drawn biases from
        ``numpy.random.SeedSequence([seed, s, stream, t])`` (the same draws on CPU and CUDA).
    n_test : int
        Test samples per seed (one fixed set).
    n_points : int
        Number of recorded steps, evenly spaced on [0, T] (rounded), ``>= 2``; step 1 (the first step) is always
        recorded as well.
    record_params : bool
        Keep the parameters at t = 0, 1 and T (``a0``, ``W0``, ``b0``, ``a1``, ``W1``, ``b1``, ``aT``, ``WT``).
    device : str or torch.device
        "cpu", "cuda" or "cuda:N".
    dtype : {None, "float64", "float32"}
        Working precision; None is float64.
    chunk : int, optional
        Samples per block of every pass (default: blocks of ~2^22 seeds x samples x neurons).
    progress : bool
        A tqdm bar over the steps.

    Returns
    -------
    Simulation
        ``t`` the recorded steps; (seeds, len(t)): ``loss`` and ``error`` (test loss and ``P[y g < 0] +
        P[g = 0]/2``; the error is also recorded for "mse"), ``train_loss`` (the loss of Xi^(t) on the batch of step
        t + 1, at t = T on one more batch or the fixed sample); ``a_t`` (seeds, len(t), 4m) the second layer at the
        recorded steps (with W frozen, e.g. "alg4", the whole network over time); with ``record_params`` the
        parameters above ((seeds, 4m) and (seeds, 4m, d); ``b1`` is b after the re-draw of "alg7"). ``meta``
        holds the options, the resolved lr_first, device, dtype, wall time and steps per second.

    Notes
    -----
    Regime: any data model with a sampler; the population first step of ``popdyn.predict`` is the n -> inf limit
    of step 1 (deviation O(n^{-1/2}) per neuron). The hinge derivative at the kink yg = 1 is taken
    as 0 (torch's relu convention, as autograd). At t = 0, g is 0 only up to rounding (~1e-16): the recorded
    error there is 1/2 up to the signs of the rounding. Float32 loses the uniform-parity scale
    xi_{k-1} ~ d^{-(k-1)/2} and the first step's small W^(1) against b: keep float64 for first-step comparisons.

    References
    ----------
    .. [src] [Shi24, (3.1), Algorithm 1, init (3.9), Algorithm 4, (B.16)-(B.17), (B.479), Algorithm 6,
       (B.561)-(B.562), Algorithm 7].

    Examples
    --------
    >>> class Sign:   # y = sign(x_1), x ~ N(0, I_3)
    ...     dim = 3
    ...     def sample(self, n, rng):
    ...         x = rng.standard_normal((n, 3))
    ...         return x, np.sign(x[:, 0])
    >>> sim = train(Sign(), width=8, method="alg1", steps=3, n_train=200, lr_first=0.1, lr=0.05, b_tilde=0.5,
    ...             n_test=500)
    >>> sim.t.tolist(), sim["loss"].shape, sim["W1"].shape
    ([0, 1, 2, 3], (1, 4), (1, 32, 3))
    >>> round(float(sim["loss"][0, 0]), 12)      # g^(0) = 0 (up to rounding): hinge 1
    1.0
    """
    opts = dict(width=width, method=method, steps=steps, n_train=n_train, lr_first=lr_first, lr=lr, loss=loss,
                init=init, sigma_a=sigma_a, sigma_w=sigma_w, b_tilde=b_tilde, lam1=lam1, train_W=train_W, fresh=fresh,
                mask=mask, seeds=seeds, seed=seed, n_test=n_test, n_points=n_points, record_params=record_params,
                chunk=chunk, progress=progress)
    meth, d = _check(model, opts)
    dev, dt = resolve_device(device, _OWNER), resolve_dtype(dtype, _OWNER)
    S, T, M, L = opts["seeds"], opts["steps"], 4 * opts["width"], opts["loss"]
    start = time.perf_counter()
    a0, W0, b0 = _initial(opts, d, dt, dev)
    net = _Net(a0, W0, b0, meth.linear)
    mask = None if opts["mask"] is None else torch.as_tensor(opts["mask"], dtype=dt, device=dev).expand(S, M)
    if mask is not None and meth.step1 is None:
        net.a = net.a * mask
    layers = tuple(x for x in meth.layers if x != "W" or opts["train_W"])
    draw = lambda stream, t, size: _sample(model, S, size, opts["seed"], stream, t, dt, dev)
    Xtest, ytest = draw("test", 0, opts["n_test"])
    X, y = draw("train", 0, opts["n_train"])
    shift = None
    if opts["method"] == "alg7":                                 # rho = E^[y], beta = E^[y x] on the first sample
        shift = (y.mean(1), (y[..., None] * X).mean(1))
        center = lambda X_, y_: y_ - shift[0][:, None] - (X_ @ shift[1][..., None])[..., 0]
        y, ytest = center(X, y), center(Xtest, ytest)
    record = set(np.unique(np.round(np.linspace(0, T, opts["n_points"])).astype(int)).tolist()) | {min(1, T)}
    out = {"t": [], "loss": [], "error": [], "train_loss": [], "a_t": []}
    params = {}

    def keep(tag, names):
        if opts["record_params"]:
            params.update({f"{k}{tag}": to_numpy(getattr(net, k)) for k in names})

    keep("0", ("a", "W", "b"))
    cache = None
    bar = make_bar(T, opts["progress"], _OWNER, unit="step")
    try:
        with torch.inference_mode(), serial_if_small(dev, S * min(opts["n_train"], 4096) * M):
            for t in range(T + 1):
                if t > 0 and opts["fresh"]:
                    X, y = draw("train", t, opts["n_train"])
                    if shift is not None:
                        y = center(X, y)
                first = t == 0 and meth.step1 is not None
                want_W = (first and "W" in meth.step1) or (not first and "W" in layers)
                if t == T:
                    l_tr = _evaluate(net, X, y, L, opts["chunk"])[0]
                else:
                    if cache is None and not want_W and not opts["fresh"] and not meth.linear \
                            and S * opts["n_train"] * M <= _CACHE_ELEMENTS:
                        cache = [net.features(X[:, r])[1] for r in _chunks(opts["n_train"], S, M, opts["chunk"])]
                    grads = _gradients(net, X, y, L, opts["chunk"], want_W, None if want_W else cache)
                    l_tr = grads[0]
                if t in record:
                    l_te, e_te = _evaluate(net, Xtest, ytest, L, opts["chunk"])
                    for key, v in (("loss", l_te), ("error", e_te), ("train_loss", l_tr), ("a_t", net.a)):
                        out[key].append(to_numpy(v))
                    out["t"].append(t)
                if t == T:
                    break
                if first:
                    decay = 0.0 if opts["lam1"] is None else 1.0 - opts["lr_first"] * opts["lam1"]
                    _update(net, grads, opts["lr_first"], ("a", "W") if meth.step1 == "aW" else ("W",), None, decay)
                    if meth.reinit_b:
                        net.b = torch.as_tensor(np.stack([_rng(opts["seed"], s, "bias").standard_normal(M)
                                                          for s in range(S)]), dtype=dt, device=dev)
                    keep("1", ("a", "W", "b"))
                    if mask is not None:
                        net.a = net.a * mask
                else:
                    _update(net, grads, opts["lr"], layers, mask)
                bar.update()
    finally:
        bar.close()
    keep("T", ("a", "W"))
    wall = time.perf_counter() - start
    obs = {k: np.stack(v, axis=1) for k, v in out.items() if k != "t"}
    obs |= {k: v for k, v in params.items() if v is not None}
    meta = {"model": repr(model), "method": opts["method"],
            "options": {k: v for k, v in opts.items() if k not in ("init", "mask")},
            "init": opts["init"] if isinstance(opts["init"], str) else "fixed arrays",
            "mask": None if opts["mask"] is None else int(opts["mask"].sum()),
            "layers_after_step1": list(layers), "device": str(dev), "dtype": str(dt).replace("torch.", ""),
            "torch_version": torch.__version__, "seeds": S, "seed": opts["seed"], "wall_time_s": wall,
            "steps_per_s": T / wall if wall > 0 else None, "t_unit": "steps"}
    ok = all(np.all(np.isfinite(v)) for v in obs.values())
    return Simulation(t=np.array(out["t"]), observables=obs, status=0 if ok else -1,
                      message="" if ok else "non-finite parameters or losses: overflow; lower lr or use float64",
                      meta=meta)


def simulate(problem, *, n_train, n_test, method, steps, lr, init, n_points, record_params, chunk, seeds, seed,
             device, dtype, progress):
    r"""``popdyn.simulate`` for :class:`~popdyn.models.gradient_features.Problem`: the first step on ``n_train``
    samples from the problem's own init, with ``popdyn.predict``'s names, then (``steps > 1``) the training of
    ``method``. The options are resolved by ``popdyn.simulate`` (``Problem.options``).

    .. math:: \mathbf w_i^{(1)} = \eta^{(1)}|\ell'(0)|\,a_i^{(0)}\tilde G(\mathbf w_i^{(0)}, b_i),\qquad
              \frac{|G_{(D,s),\rm Nice}|}{m}\ \text{of}\ \mathbf W^{(1)}

    By default every seed starts at ``problem.params0`` (the init of ``predict``) with the first step size
    ``problem.step_size`` (the field ``lr_first`` or its default) and the problem's loss; the seeds then vary the
    samples only, so the spread over seeds is the finite-n noise of the step. ``init="random"`` draws a fresh init
    per seed at the problem's scales (3.9 with ``problem.init_scale``, ``problem.sigma_w``, ``problem.b_tilde``;
    B.479 for uniform parity): the nice fraction over seeds is then Binomial(m, p/2)/m (Lemma B.5). ``method``,
    ``steps``, ``lr`` (the later steps' size), ``n_test``, ``n_points``, ``record_params``, ``chunk`` are as in
    :func:`train` ("rf" and "ntk" have no first step: their ``a1``, ``W1`` are the init).

    Returns
    -------
    Simulation
        Static (``t`` None), with ``predict``'s names: ``a1`` (seeds, 4m), ``W1`` (seeds, 4m, d),
        ``cos_features`` (seeds, 4m, F) = ``cos(w_i^(1), D_f)`` for the F (feature, sign) pairs of ``g*``,
        ``nice_fraction`` (seeds, F) = ``|Nice|/m`` (3.14) at the problem's cone; and the training record of
        :func:`train` on the coordinate ``step``: ``loss``, ``error``, ``train_loss`` (seeds, len(step)),
        ``a_t``, and the parameters (``record_params``).

    Notes
    -----
    Regime: the finite-n twin of ``predict``'s population step: per neuron the deviation is O(n^{-1/2})
    (E1); ``nice_fraction`` differs from the population one only through neurons near the cone or
    norm thresholds.

    References
    ----------
    .. [src] [Shi24, Algorithm 1, (3.9), (3.14), (B.16)-(B.17)].

    Examples
    --------
    >>> import popdyn
    >>> from popdyn.models.gradient_features import Problem
    >>> sim = popdyn.simulate(Problem.xor(d=16, width=8), n_train=500, seeds=2, n_test=200)
    >>> sim["W1"].shape, sim["nice_fraction"].shape, sim.t is None
    ((2, 32, 16), (2, 4), True)
    """
    first_gd = 2 if METHODS[method].step1 is not None else 1
    if lr is None and steps >= first_gd:
        raise InvalidParameterError(f"The 'lr' parameter of gradient_features.simulate must be a float in (0, inf) "
                                    f"when steps >= {first_gd} with method {method!r} (the step size of the gradient "
                                    f"steps after the first; the first step's is the problem's lr_first). Got None "
                                    f"instead.")
    if init == "problem":
        law = dict(init=problem.params0)
    elif problem.data == "uniform_parity":
        law = dict(init="parity")                    # a, w in {+-1} (sigma_a = sigma_w = 1 for uniform parity)
    else:
        law = dict(init="gauss", sigma_a=problem.init_scale, sigma_w=problem.sigma_w, b_tilde=problem.b_tilde)
    sim = train(problem.model, width=problem.width, method=method, steps=steps, n_train=n_train,
                lr_first=problem.step_size, lr=lr, loss=problem.loss, seeds=seeds, seed=seed, n_test=n_test,
                n_points=n_points, record_params=True, device=device, dtype=dtype, chunk=chunk, progress=progress,
                **law)
    obs = dict(sim.observables)
    tag = "1" if METHODS[method].step1 is not None else "0"
    W1 = obs[f"W{tag}"]
    D, s = problem.features
    gamma, B_G, norm, _ = problem.cone
    nw = np.linalg.norm(W1, axis=-1, keepdims=True)
    new = {"a1": obs[f"a{tag}"], "W1": W1, "cos_features": (W1 @ D.T) / np.where(nw > 0, nw, 1.0),
           "nice_fraction": np.array([[len(nice_set(W, a0, b, Df, sf, gamma, B_G, problem.step_size, problem.loss,
                                                    norm)) / problem.width for Df, sf in zip(D, s)]
                                      for W, a0, b in zip(W1, obs["a0"], obs["b0"])])}
    keep = ("loss", "error", "train_loss", "a_t") + (tuple(k for k in obs if k[0] in "aWb" and k[1:] in "01T")
                                                     if record_params else ())
    new |= {k: obs[k] for k in keep if k not in new}
    meta = sim.meta | {"init": init, "cone": {"gamma": gamma, "B_G": B_G, "norm": norm}}
    return Simulation(t=None, observables=new, status=sim.status, message=sim.message, meta=meta,
                      coords={"step": sim.t})
