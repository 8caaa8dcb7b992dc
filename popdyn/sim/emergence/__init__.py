"""Feature emergence from input structure ([Shi22]): the two-layer network trained on finite samples in torch.

Public names
------------
smooth_trunc_relu, window
    Torch twins of the smoothed truncated ReLU ``E sigma(z + s xi)`` and its derivative ``win_s`` (Section 3.1).
sample
    Finite samples of a pattern model (its own ``sample``), stacked over seeds: normalised pattern coordinates
    ``phi`` and labels, optionally class-balanced; reproducible per (seed, replicate, stream).
train
    ``train(model, *, width, method, schedule, ...)`` -> :class:`popdyn.results.Simulation`: the three-stage
    schedule on n_train samples (full batch in steps 1-2, mini-batches after), in pattern coordinates or in R^d with a
    dictionary M, with the baselines of [Shi22, App. E.1] (random features, NTK, one step, two step, no structure); all
    seeds batched on one device; "gd" trains every layer from given parameters (full batch with
    ``batch = n_train``).
simulate
    The simulation of :class:`popdyn.models.emergence.Problem` (registered in ``popdyn.models.emergence.predict``,
    called by ``popdyn.simulate``), with the observable names of its ``predict``.

The network is ``g(x) = sum_i a_i sigma_s(<w_i, x> + b_i)`` with the smoothed truncated ReLU (the injected
neuron noise xi ~ N(0, s^2) integrated out, [Shi22, Section 3.1]), the hinge loss and the regulariser
``lam_a a_i^2 + lam_w ||w_i||^2`` (biases free). Gradients are written out ([Shi24, eqs. (A.19)-(A.21)]) with
the hinge indicator ``1[y g <= 1]`` as in the paper; the tests hold them against torch autograd. Inputs are
``x = M phi`` with ``phi = (phi~ - E phi~)/sigma~`` ([Shi22, Section 3]); in pattern coordinates M = I_D, and in R^d the
pre-activations are computed as ``<M^T w, phi>`` (exact, since x lies in span M) while w keeps its d
coordinates, so the part of w outside span M is carried and decays as the regulariser dictates. See
docs/emergence.md.
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from ..._validate import Interval, InvalidParameterError, Options, RegimeWarning, as_int, check
from ...models.emergence.data import GaussianParityMixture, no_structure, random_dictionary
from ...models.emergence.schedule import theory_schedule
from ...results import Simulation
from .._torch import (make_generator, resolve_device, resolve_dtype, serial_if_small, standard_normal_,
                     to_numpy)
from .._torch import progress as _progress

__all__ = ["smooth_trunc_relu", "window", "sample", "train", "simulate", "METHODS"]

_OWNER = "emergence.train"
_BOOL = Options((True, False))
_NONNEG = Interval(0, np.inf, closed="left")
_POS = Interval(0, np.inf, closed="neither")
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

#: method -> (structure kept, full-batch schedule steps before the last stage, layers trained in the last stage,
#:            linearised at init)
METHODS = {
    "network": (True, 2, ("W", "b", "a"), False),
    "no_structure": (False, 2, ("W", "b", "a"), False),
    "one_step": (True, 1, ("a",), False),
    "two_step": (True, 2, ("a",), False),
    "rf": (True, 0, ("a",), False),
    "ntk": (True, 0, ("W", "b", "a"), True),
    "gd": (True, 0, ("W", "b", "a"), False),
}


# ---- activation ---------------------------------------------------------------------------------------------------

def _activation(z, s):
    """sigma_s(z) and win_s(z) from one pair of normal CDFs: ``Phi0 = Phi(z/s)``, ``Phi1 = Phi((z-1)/s)``,
    ``sigma_s = z Phi0 - (z-1) Phi1 + s (phi(z/s) - phi((z-1)/s))`` and ``win_s = Phi0 - Phi1``."""
    if s == 0:
        return torch.clamp(z, 0.0, 1.0), ((z > 0) & (z < 1)).to(z.dtype)
    v0 = z / s
    v1 = v0 - 1.0 / s
    P0, P1 = torch.special.ndtr(v0), torch.special.ndtr(v1)
    dens = (torch.exp(-0.5 * v0 * v0) - torch.exp(-0.5 * v1 * v1)) * (s * _INV_SQRT_2PI)
    return z * P0 - (z - 1.0) * P1 + dens, P0 - P1


def smooth_trunc_relu(z, s):
    r"""Smoothed truncated ReLU on a tensor: :math:`\tilde\sigma_s(z) = r_s(z) - r_s(z-1)`, :math:`s = 0` the clamp.

    .. math:: \tilde\sigma_s(z) = \mathbb E\,\min(1,\max(0, z + s\xi)),\quad
              r_s(u) = u\,\Phi(u/s) + s\,\varphi(u/s),\ \xi\sim\mathcal N(0,1)

    Parameters
    ----------
    z : torch.Tensor
        Pre-activations.
    s : float
        Noise level sigma_xi ``>= 0`` (not validated here; :func:`train` does).

    Returns
    -------
    torch.Tensor
        Same shape as ``z``, values in [0, 1].

    Notes
    -----
    Regime: any z; torch twin of :func:`popdyn.models.emergence.smooth_trunc_relu`.

    References
    ----------
    .. [src] [Shi22, Section 3.1, eq. (3)].

    Examples
    --------
    >>> z = torch.tensor([-0.3, 0.5, 1.4], dtype=torch.float64)
    >>> (smooth_trunc_relu(z, 0.2) + smooth_trunc_relu(1 - z, 0.2)).round(decimals=12).tolist()   # symmetry
    [1.0, 1.0, 1.0]
    """
    return _activation(z, s)[0]


def window(z, s):
    r"""Derivative of the smoothed truncated ReLU: :math:`\mathrm{win}_s(z) = \Pr[z + s\xi \in (0, 1)]`.

    .. math:: \mathrm{win}_s(z) = \Phi\big(\tfrac{1-z}{s}\big) - \Phi\big(\tfrac{-z}{s}\big),
              \qquad \mathrm{win}_0(z) = \mathbb 1[0 < z < 1]

    Parameters
    ----------
    z : torch.Tensor
        Pre-activations.
    s : float
        Noise level ``>= 0``.

    Returns
    -------
    torch.Tensor
        Same shape as ``z``, values in [0, 1].

    Notes
    -----
    Regime: any z; at s = 0 the open interval of the paper (the kinks get 0).

    References
    ----------
    .. [src] [Shi22, Lemma 12 (App. B.3)].

    Examples
    --------
    >>> window(torch.tensor([0.0, 0.5, 1.0]), 0.0).tolist()
    [0.0, 1.0, 0.0]
    """
    return _activation(z, s)[1]


# ---- data ---------------------------------------------------------------------------------------------------------

def sample(model, seeds, n, seed, *, balanced=False, stream=0, coords="pattern", dtype=torch.float64, device="cpu"):
    """Samples ``phi`` (seeds, n, D) (or ``x`` (seeds, n, d) with ``coords="input"``) and labels y (seeds, n).

    Replicate s draws ``model.sample(n, rng, balanced=balanced, coords=coords)``
    (:meth:`popdyn.models.emergence.PatternModel.sample`; a :class:`~popdyn.models.emergence.GaussianParityMixture`
    draws its inputs x in R^d whatever ``coords``) with ``rng`` seeded by (seed, s, stream): the training set
    is stream 0 and the test set stream 1, so they are independent and each is reproducible on its own.
    """
    X, Y = [], []
    for s in range(seeds):
        rng = np.random.default_rng(np.random.SeedSequence([seed, s, stream]))
        if isinstance(model, GaussianParityMixture):            # inputs x in R^d (no pattern coordinates)
            x, y = model.sample(n, rng, balanced=balanced)
        else:
            x, y, _ = model.sample(n, rng, balanced=balanced, coords=coords)
        X.append(x)
        Y.append(y)
    return (torch.as_tensor(np.stack(X), dtype=dtype, device=device),
            torch.as_tensor(np.stack(Y), dtype=dtype, device=device))


# ---- network ------------------------------------------------------------------------------------------------------

class _Data:
    """One device-resident sample set: pattern coordinates phi (seeds, n, D), labels (seeds, n), dictionary M."""

    def __init__(self, phi, y, M):
        self.phi, self.y, self.M = phi, y, M

    def inputs(self, rows):
        """phi of ``rows``: a slice, or (seeds, b) indices (one mini-batch per seed)."""
        if isinstance(rows, slice):
            return self.phi[:, rows]
        return torch.gather(self.phi, 1, rows[..., None].expand(-1, -1, self.phi.shape[2]))

    def labels(self, rows):
        return self.y[:, rows] if isinstance(rows, slice) else torch.gather(self.y, 1, rows)


def _pattern_weights(W, M):
    """Pattern coordinates ``Q = W M`` (seeds, 2m, D) of first-layer rows W in R^d (M None: W itself)."""
    return W if M is None else W @ M


def _forward(phi, P, P0, M, s):
    """Output g (seeds, b), the coefficient ``a_i win_s(z_i)`` of the W and b gradients and the features sigma_s(z).

    ``P0`` (the initial parameters) makes the network its linearisation at init (NTK): the activation pattern and
    the features stay those of ``P0`` and g is affine in ``P - P0``.
    """
    src = P if P0 is None else P0
    Z = phi @ _pattern_weights(src["W"], M).mT + src["b"][:, None, :]
    F, coef = _activation(Z, s)
    coef.mul_(src["a"][:, None, :])
    if P0 is None:
        return F @ P["a"][..., None], coef, F
    dZ = phi @ _pattern_weights(P["W"] - P0["W"], M).mT + (P["b"] - P0["b"])[:, None, :]
    return (dZ * coef).sum(-1, keepdim=True) + F @ P["a"][..., None], coef, F     # g(P0) + <grad g(P0), P - P0>


def _gradients(data, rows, P, P0, s, chunk, alpha=None, first_layer=True):
    r"""Hinge-loss gradients (no regulariser) over ``rows`` (a slice covering the full batch, or (seeds, b) indices),
    accumulated over chunks of ``chunk`` samples; also the mean hinge loss and max |g| per seed. ``alpha``
    (alpha_-, alpha_+) weighs each sample's loss by its class (App. F's ``E[alpha_y l]``). ``first_layer=False``
    skips the W gradient (returned as zeros) when W is frozen.

    .. math:: \partial_{w_i}L = -\hat{\mathbb E}\big[y\,\mathbb 1[yg\le1]\,a_i\mathrm{win}_s(z_i)\,x\big],\
              \partial_{b_i}L = -\hat{\mathbb E}\big[y\,\mathbb 1[yg\le1]\,a_i\mathrm{win}_s(z_i)\big],\
              \partial_{a_i}L = -\hat{\mathbb E}\big[y\,\mathbb 1[yg\le1]\,\tilde\sigma_s(z_i)\big]
    """
    sW, sb, sa = torch.zeros_like(P["W"]), torch.zeros_like(P["b"]), torch.zeros_like(P["a"])
    loss = torch.zeros(P["a"].shape[0], dtype=P["a"].dtype, device=P["a"].device)
    gmax = torch.zeros_like(loss)
    blocks = [rows] if not isinstance(rows, slice) else [
        slice(i, min(i + chunk, rows.stop)) for i in range(rows.start or 0, rows.stop, chunk)]
    total = sum(_size(r) for r in blocks)
    for r in blocks:
        phi, y = data.inputs(r), data.labels(r)
        g, coef, F = _forward(phi, P, P0, data.M, s)
        yg = y * g[..., 0]
        act = y * (yg <= 1).to(y.dtype)                                # y 1[y g <= 1], (seeds, b)
        hinge = torch.relu(1 - yg)
        if alpha is not None:
            wy = torch.where(y > 0, y.new_tensor(alpha[1]), y.new_tensor(alpha[0]))
            act, hinge = act * wy, hinge * wy
        act = act[..., None]
        G = act * coef                                                 # (seeds, b, 2m)
        if first_layer:
            sq = G.mT @ phi                                            # (seeds, 2m, D)
            sW += sq if data.M is None else sq @ data.M.mT             # chain rule through Q = W M
        sb += G.sum(1)
        sa += (act * F).sum(1)
        loss += hinge.sum(1)
        gmax = torch.maximum(gmax, g[..., 0].abs().amax(1))
    return -sW / total, -sb / total, -sa / total, loss / total, gmax


def _size(rows):
    return rows.stop - rows.start if isinstance(rows, slice) else rows.shape[1]


def _update(P, grads, step, trained):
    """``theta <- theta - eta (grad L + 2 lam theta)`` on the trained layers (biases unregularised)."""
    gW, gb, ga = grads[:3]
    eta = float(step.eta)
    if "W" in trained:
        P["W"] = (1.0 - 2.0 * eta * float(step.lam_w)) * P["W"] - eta * gW
    if "b" in trained:
        P["b"] = P["b"] - eta * gb
    if "a" in trained:
        eta = eta if step.eta_a is None else float(step.eta_a)
        P["a"] = (1.0 - 2.0 * eta * float(step.lam_a)) * P["a"] - eta * ga
    return P


def _initial(seeds, m, M, D, k, init, gen, dtype, device):
    """Initial parameters: the symmetric init at scales ``init`` = (sigma_w, sigma_b, sigma_a), or the fixed
    parameters ``init`` = (Q, b, a) (all 2m neurons as given) for every seed.

    Symmetric init: w_i ~ N(0, sigma_w^2 I), b_i ~ N(0, sigma_b^2), a_i ~ N(0, sigma_a^2) for i <= m, then the
    mirror (w_{m+i}, b_{m+i}, a_{m+i}) = (w_i, b_i, -a_i), so g^(0) = 0 ([Shi22, Section 3.1]). The pattern
    coordinates ``M^T w`` are drawn first, then b and a, then (in R^d) the part of w orthogonal to span M (sigma_w,
    mirrored when the pattern part is): a run in R^d has the pattern-coordinate init of the run in pattern
    coordinates with the same seed.
    """
    draw = lambda *shape: standard_normal_(torch.empty(shape, dtype=torch.float64, device=device), gen)
    if np.ndim(init[0]) == 2:
        W, b, a = (torch.tensor(v, dtype=torch.float64, device=device).expand(seeds, *v.shape) for v in init)
        sw, mirrored = 1.0 / k, np.array_equal(init[0][:m], init[0][m:])
    else:
        sw, sb, sa = init
        W, b, a = sw * draw(seeds, m, D), sb * draw(seeds, m), sa * draw(seeds, m)
        W, b, a, mirrored = torch.cat([W, W], 1), torch.cat([b, b], 1), torch.cat([a, -a], 1), True
    if M is not None:           # w = Q rho^-1 M^T + (I - P_M) g, so that w M = Q (rho = M^T M; I if orthonormal)
        M64 = M.to(torch.float64)
        G = sw * draw(seeds, m if mirrored else 2 * m, M.shape[0])
        G = torch.cat([G, G], 1) if mirrored else G
        Minv = torch.linalg.solve(M64.T @ M64, M64.T)              # rho^-1 M^T, (D, d)
        W = W @ Minv + G - (G @ M64) @ Minv
    return {"W": W.to(dtype), "b": b.to(dtype), "a": a.to(dtype)}


# ---- options ------------------------------------------------------------------------------------------------------

_STEP_FIELDS = (("eta", _POS), ("lam_a", _NONNEG), ("lam_w", _NONNEG), ("s", _NONNEG))


@dataclass(frozen=True)
class _Step:
    """One step's hyperparameters: step size (and the second layer's, when it differs), weight decays of a and w,
    smoothing sigma_xi."""
    eta: float
    lam_a: float
    lam_w: float
    s: float
    weighted: bool = False
    eta_a: float | None = None


def _schedule(model, m, steps, schedule, lr, lam, lr_a=None):
    """The schedule as a list of :class:`_Step` (>= 3 entries: steps 1, 2 and the last stage), with the last-stage
    overrides ``lr``, ``lam`` and ``lr_a`` applied from the third entry on."""
    if schedule is None:
        if isinstance(model, GaussianParityMixture):
            raise InvalidParameterError(f"The 'schedule' parameter of {_OWNER} must be given for a "
                                        f"GaussianParityMixture (the theory schedule needs gamma > 0). Got None.")
        schedule = theory_schedule(model, m, steps=max(steps, 2))
    try:
        entries = list(schedule)
    except TypeError:
        entries = None
    if entries is None or len(entries) < 3:
        raise InvalidParameterError(
            f"The 'schedule' parameter of {_OWNER} must be None (theory_schedule(model, width)) or a sequence of at "
            f"least 3 steps with attributes eta, lam_a, lam_w, s (steps 1, 2 and the last stage). Got {schedule!r} "
            f"instead.")
    out = []
    for i, e in enumerate(entries):
        vals = {}
        for name, c in _STEP_FIELDS:
            v = getattr(e, name, None) if not isinstance(e, dict) else e.get(name)
            vals[name] = check(_OWNER, f"schedule[{i}].{name}", v, c)
        vals["weighted"] = bool(check(_OWNER, f"schedule[{i}].weighted", getattr(e, "weighted", False) if not
                                      isinstance(e, dict) else e.get("weighted", False), _BOOL))
        if i >= 2 and lr is not None:
            vals["eta"] = lr
        if i >= 2 and lam is not None:
            vals["lam_a"] = vals["lam_w"] = lam
        if i >= 2 and lr_a is not None:
            vals["eta_a"] = lr_a
        out.append(_Step(**vals))
    factor = lambda e: min(1.0 - 2.0 * e.eta * e.lam_w, 1.0 - 2.0 * (e.eta if e.eta_a is None else e.eta_a) * e.lam_a)
    bad = [(i + 1, e) for i, e in enumerate(out[:steps]) if factor(e) < -1e-12]
    if bad:
        t, e = bad[0]
        warnings.warn(f"{_OWNER}: the weight-decay factor 1 - 2 eta lam = {factor(e):.4g} is negative at step {t} "
                      f"(eta = {e.eta:.4g}, eta_a = {e.eta_a}, lam = {max(e.lam_a, e.lam_w):.4g}): the parameters flip "
                      f"sign every step; lower 'lr', 'lr_a' or 'lam'.", RegimeWarning, stacklevel=4)
    return out


def _times(steps, n_points, start=0):
    """The recorded steps: ``n_points`` evenly spaced on [start, steps] (rounded), with steps 0, 1, 2 and ``steps``
    where they lie in [start, steps]."""
    grid = np.rint(np.linspace(start, steps, min(n_points, steps - start + 1))).astype(int)
    return set(grid.tolist()) | {t for t in (0, 1, 2, steps) if start <= t <= steps}


def _step_at(schedule, t, full):
    """Hyperparameters of step t (1-based): the schedule's own entry in the full-batch steps, the last-stage
    entries (index >= 2) after them."""
    return schedule[min(t - 1 if t <= full else max(t - 1, 2), len(schedule) - 1)]


def _check(model, m, method, n, batch, steps, seeds, seed, balanced, coords, d, test, eval_samples, n_points,
           init, chunk, progress_on):
    opts = {"m": as_int(_OWNER, "width", m, 1), "method": check(_OWNER, "method", method, Options(tuple(METHODS))),
            "n": as_int(_OWNER, "n_train", n, 2), "steps": as_int(_OWNER, "steps", steps, 0),
            "seeds": as_int(_OWNER, "seeds", seeds, 1), "seed": as_int(_OWNER, "seed", seed, 0, 2**63 - 1),
            "balanced": check(_OWNER, "balanced", balanced, _BOOL),
            "coords": check(_OWNER, "coords", coords, Options(("pattern", "input"))),
            "test": as_int(_OWNER, "n_test", test, 1), "chunk": as_int(_OWNER, "chunk", chunk, 1),
            "progress": check(_OWNER, "progress", progress_on, _BOOL)}
    if opts["balanced"] and opts["n"] % 2:
        raise InvalidParameterError(f"The 'n_train' parameter of {_OWNER} must be even with balanced=True (n_train/2 "
                                    f"samples per class). Got {n!r} instead.")
    opts["batch"] = as_int(_OWNER, "batch", batch, 1, opts["n"])
    opts["eval_samples"] = as_int(_OWNER, "eval_samples", min(opts["n"], 10_000) if eval_samples is None
                                  else eval_samples, 1, opts["n"])
    opts["n_points"] = as_int(_OWNER, "n_points", 21 if n_points is None else n_points, 2)
    if isinstance(model, GaussianParityMixture):
        return opts | _check_gmm(model, opts, d, init)
    D = int(model.D)
    M = getattr(model, "M", None)
    if opts["coords"] == "input":
        d_model = getattr(model, "d", None) if M is None else np.asarray(M).shape[0]
        opts["d"] = as_int(_OWNER, "d", d if d is not None else d_model, D)
        if M is not None and opts["d"] != np.asarray(M).shape[0]:
            raise InvalidParameterError(f"The 'd' parameter of {_OWNER} must equal the rows of the model's dictionary "
                                        f"M ({np.asarray(M).shape[0]}). Got {d!r} instead.")
    elif d is not None:
        raise InvalidParameterError(f"The 'd' parameter of {_OWNER} must be None with coords='pattern' (inputs are "
                                    f"the D = {D} pattern coordinates). Got {d!r} instead.")
    opts["init"] = _check_init(init, opts["m"], D)
    return opts


def _check_gmm(model, opts, d, init):
    """The options specific to the Gaussian-mixture parity: inputs in R^d (``coords="input"``, d = the model's),
    no 'no_structure' method, initial scales given (its gamma is 0, so the paper's sigma_a is undefined)."""
    if opts["coords"] != "input":
        raise InvalidParameterError(f"The 'coords' parameter of {_OWNER} must be 'input' for a GaussianParityMixture "
                                    f"(its inputs are x in R^d; it has no pattern coordinates). Got "
                                    f"{opts['coords']!r} instead.")
    if d is not None and d != model.d:
        raise InvalidParameterError(f"The 'd' parameter of {_OWNER} must be None or the model's d = {model.d} for a "
                                    f"GaussianParityMixture. Got {d!r} instead.")
    if opts["method"] == "no_structure":
        raise InvalidParameterError(f"The 'method' parameter of {_OWNER} must not be 'no_structure' for a "
                                    f"GaussianParityMixture (no pattern structure to remove). Got 'no_structure'.")
    if init is None:
        raise InvalidParameterError(f"The 'init' parameter of {_OWNER} must be given ((sigma_w, sigma_b, sigma_a) or "
                                    f"parameters) for a GaussianParityMixture: its gamma is 0, so the paper's "
                                    f"sigma_a = sigma~^2/(gamma k^2) is undefined. Got None.")
    return {"d": model.d, "init": _check_init(init, opts["m"], model.d)}


def _check_init(init, m, D):
    """None, three positive scales, or fixed parameters (Q (2m, D), b, a) shared by every seed."""
    if init is None:
        return None
    if all(hasattr(init, f) for f in ("Q", "b", "a")):
        Q, b, a = (np.asarray(getattr(init, f), dtype=np.float64) for f in ("Q", "b", "a"))
        if Q.shape != (2 * m, D) or b.shape != (2 * m,) or a.shape != (2 * m,) or not all(
                np.all(np.isfinite(v)) for v in (Q, b, a)):
            raise InvalidParameterError(f"The 'init' parameter of {_OWNER} must hold finite Q of shape (2m, D) = "
                                        f"({2 * m}, {D}) and b, a of shape ({2 * m},). Got {init!r} instead.")
        return Q, b, a
    try:
        scales = tuple(init)
    except TypeError:
        scales = ()
    if len(scales) != 3:
        raise InvalidParameterError(f"The 'init' parameter of {_OWNER} must be None, (sigma_w, sigma_b, sigma_a) or "
                                    f"parameters with Q, b, a (e.g. emergence.TwoLayerParams). Got {init!r} instead.")
    return tuple(check(_OWNER, f"init[{i}]", v, _POS) for i, v in enumerate(scales))


def _init_scales(model, init):
    """``init`` (scales or fixed parameters), else the paper's scales sigma_w = 1/k, sigma_b = 1/k^2,
    sigma_a = sigma~^2/(gamma k^2) ([Shi22, Section 3.1])."""
    if init is not None:
        return init
    k, mom = int(model.k), model.moments()
    gamma = float(np.mean(mom.gamma))
    if not (gamma > 0):
        raise InvalidParameterError(f"The 'init' parameter of {_OWNER} must be given (sigma_w, sigma_b, sigma_a) when "
                                    f"the model has gamma <= 0 (sigma_a = sigma~^2/(gamma k^2)). Got gamma = {gamma}.")
    return 1.0 / k, 1.0 / k**2, float(mom.sigt) ** 2 / (gamma * k**2)


def _dictionary(model, opts, device, dtype):
    """M (d, D): the model's (orthonormal or incoherent), or ``random_dictionary(d, D, seed)``; None in pattern
    coords and for the Gaussian-mixture parity (its samples are the inputs themselves)."""
    if opts["coords"] == "pattern" or isinstance(model, GaussianParityMixture):
        return None
    M = model.M
    if M is None:
        M = random_dictionary(opts["d"], int(model.D), np.random.SeedSequence([opts["seed"], 2**31]))
    return torch.tensor(np.asarray(M, dtype=np.float64), dtype=dtype, device=device)


# ---- training -----------------------------------------------------------------------------------------------------

def _evaluate(data, rows_eval, P, P0, chunk):
    """Accuracy ``P[y g > 0] + P[g = 0]/2`` and hinge loss of the noiseless network (sigma_xi = 0, the paper's L_D) on the first
    ``rows_eval`` samples of ``data``, per seed."""
    correct = torch.zeros(data.y.shape[0], dtype=torch.float64, device=data.y.device)
    loss = torch.zeros_like(correct)
    for i in range(0, rows_eval, chunk):
        r = slice(i, min(i + chunk, rows_eval))
        y = data.labels(r)
        yg = y * _forward(data.inputs(r), P, P0, data.M, 0.0)[0][..., 0]
        correct += ((yg > 0).double() + 0.5 * (yg == 0).double()).sum(1)      # a tie g = 0 is half an error
        loss += torch.relu(1 - yg).double().sum(1)
    return correct / rows_eval, loss / rows_eval


def _cos(W, M, k):
    """max_i cos(w_i, sum_A M_j) and max_i |cos| per seed (A = the first k patterns)."""
    Q = _pattern_weights(W, M)
    norm = torch.linalg.vector_norm(W, dim=2)
    c = Q[..., :k].sum(2) / (math.sqrt(k) * torch.where(norm > 0, norm, torch.ones_like(norm)))
    return c.amax(1), c.abs().amax(1)


class _Batches:
    """Mini-batch row indices (seeds, batch): an independent permutation per seed and epoch, remainder dropped;
    the whole sample (a slice) when ``batch == n``."""

    def __init__(self, seeds, n, batch, gen, device):
        self.seeds, self.n, self.batch, self.gen, self.device = seeds, n, batch, gen, device
        self.perm, self.pos = None, n

    def next(self):
        if self.batch == self.n:                 # full batch: every sample, no permutation needed
            return slice(0, self.n)
        if self.pos + self.batch > self.n:
            self.perm = torch.argsort(torch.rand((self.seeds, self.n), generator=self.gen, device=self.device), dim=1)
            self.pos = 0
        rows = self.perm[:, self.pos:self.pos + self.batch]
        self.pos += self.batch
        return rows


def _centre_cos(W, C):
    """min over the cluster centres c (rows of C) of max_i |cos(w_i, c)|, per seed: every centre covered by some
    neuron ([Shi22, App. E.3.2, Figure 16])."""
    norm = torch.linalg.vector_norm(W, dim=2, keepdim=True)
    c = (W / torch.where(norm > 0, norm, torch.ones_like(norm))) @ (C / torch.linalg.vector_norm(C, dim=1,
                                                                                                 keepdim=True)).T
    return c.abs().amax(1).amin(1)


def _record(out, t, train, test, opts, P, P0, M, k, centres=None):
    acc, loss = _evaluate(train, opts["eval_samples"], P, P0, opts["chunk"])
    tacc, tloss = _evaluate(test, opts["test"], P, P0, opts["chunk"])
    cos, acos = _cos(P["W"], M, k)
    if centres is not None:
        out.setdefault("centre_cos", []).append(to_numpy(_centre_cos(P["W"], centres)))
    for name, v in (("train_acc", acc), ("train_loss", loss), ("test_acc", tacc), ("test_loss", tloss),
                    ("cos", cos), ("abs_cos", acos)):
        out[name].append(to_numpy(v))
    out["t"].append(t)


def train(model, *, width, method="network", schedule=None, steps=600, n_train=50_000, batch=1000, seeds=4, seed=0,
          balanced=False, coords="pattern", d=None, lr=None, lam=None, lr_a=None, n_test=10_000, eval_samples=None,
          n_points=None, init=None, device="cpu", dtype=None, chunk=10_000, progress=False):
    r"""Train the two-layer network (or a baseline) on n_train samples of a pattern model: steps 1-2 full batch,
    then mini-batches (the paper's protocol), all seeds batched.

    .. math:: \theta^{(t)} = \theta^{(t-1)} - \eta^{(t)}\nabla_\theta\Big[\hat L(g^{(t-1)};\sigma_\xi^{(t)})
              + \sum_i\lambda_a^{(t)}a_i^2 + \lambda_w^{(t)}\|w_i\|^2\Big],\qquad
              g(x) = \sum_{i=1}^{2m}a_i\tilde\sigma_{\sigma_\xi}(\langle w_i,x\rangle+b_i)

    with :math:`\hat L` the hinge loss on the full sample (steps 1-2) or on a batch, and the symmetric init
    :math:`(w_{m+i}, b_{m+i}, a_{m+i}) = (w_i, b_i, -a_i)` so that :math:`g^{(0)} = 0`.

    Parameters
    ----------
    model : emergence.PatternModel, ExchangeablePatternModel or GaussianParityMixture
        The data law (sampled by its ``sample``); A is the first k patterns. With App. F input noise
        (``sigma_zeta > 0``) and ``coords="input"`` the samples are drawn in R^d (noise outside span M included).
        The Gaussian-mixture parity ([Shi22, App. E.3.2]) is trained on its inputs x in R^d as drawn (no
        normalisation): ``coords="input"``, ``schedule`` and ``init`` given (its gamma is 0), every method but
        "no_structure"; ``Q_t`` are then the weights w in R^d and the population twin of its full-batch steps is
        :func:`popdyn.models.emergence.population_step`.
    width : int
        Half the width (``2 width`` neurons), ``>= 1``; m in the paper.
    method : {"network", "no_structure", "one_step", "two_step", "rf", "ntk", "gd"}
        "network": steps 1-2 of the schedule on the full sample, then every layer by mini-batch SGD with the
        last-stage hyperparameters. "no_structure": the same on ``no_structure(model)`` (A1': every pattern
        Bernoulli(1/2), same labelling rule; train and test). "one_step" / "two_step": 1 or 2 full-batch
        schedule steps, then the first layer and biases frozen and only ``a`` trained. "rf": the first layer
        frozen at init, ``a`` trained for all ``steps``. "ntk": the network linearised at init (its neural
        tangent features), all its parameters trained for all ``steps``. "gd": every layer trained from ``init``
        with the last-stage hyperparameters (no steps 1-2; with ``batch = n_train`` full-batch GD, the finite-sample
        twin of the reduced population GD of docs/emergence.md). Every method takes ``steps`` updates.
    schedule : sequence, optional
        Steps with attributes (or keys) ``eta, lam_a, lam_w, s`` (and optionally ``weighted``: App. F's
        class-weighted hinge ``E[alpha_y l]``, alpha_y = 1/(2 P[y])): entries 0 and 1 are steps 1 and 2, entries
        2, 3, ... the last stage (the last entry repeats). None: ``popdyn.models.emergence.theory_schedule(model,
        m, T=steps)`` (Lemma 23 values, Thm 26's stage 3 with lambda = k^3/(sigma~ m^{1/3})).
    steps : int
        Updates ``>= 0``, T in the paper (its E1: 600).
    n_train : int
        Training samples per seed, n in the paper (50000).
    batch : int
        Mini-batch size of the last stage, in [1, n_train] (paper: 1000); each seed reshuffles per epoch.
    seeds : int
        Independent runs (data, init, batches), batched on one device.
    seed : int
        Seed of everything drawn (data, init, dictionary, batches).
    balanced : bool
        Exactly n_train/2 training samples per class (the class-conditional laws of the model; the population
        limit b^(2) = b^(0) needs it, docs/emergence.md). The test set is always i.i.d. from the model.
    coords : {"pattern", "input"}
        Train in pattern coordinates (w in R^D, M = I) or in R^d with the dictionary M.
    d : int, optional
        Input dimension ``>= D`` for ``coords="input"`` (default the model's); M is the model's or a random one.
    lr, lam : float, optional
        Override the last-stage step size and weight decay (``lam_a = lam_w = lam``): the paper does not report
        its values ([Shi22, App. E.1]). A RegimeWarning is given when ``1 - 2 eta lam < 0`` at some step (Thm 26's
        lambda is large: ~3.7 at k = 5, m = 300, so a larger ``lr`` needs a smaller ``lam``).
    lr_a : float, optional
        Last-stage step size of the second layer ``a`` when it should differ from ``lr`` (the paper's Table 1
        protocol is unreported; after the theory's steps 1-2 the features vary by ~1e-3 across inputs, so the
        second layer needs a far larger step than the first, see ``validation/claims/emergence_table.py``).
    n_test : int
        Fresh test samples per seed.
    eval_samples : int, optional
        Training samples (the first ones) on which train accuracy and loss are recorded; default
        min(n_train, 10000).
    n_points : int, optional
        Recorded steps: ``n_points`` evenly spaced on [0, steps] (rounded), and steps 0, 1, 2 and ``steps``;
        default 21.
    init : tuple of 3 floats or TwoLayerParams, optional
        Scales (sigma_w, sigma_b, sigma_a), drawn afresh per seed; default (1/k, 1/k^2, sigma~^2/(gamma k^2)) of
        the structured model ([Shi22, Section 3.1]). Or fixed symmetric parameters (``Q`` (2m, D) in pattern
        coordinates, ``b``, ``a``; all 2m neurons as given) shared by every seed, e.g. ``Problem.params0`` or
        ``two_step_limit(...)`` (in R^d the part of w outside span M is drawn with sigma_w = 1/k).
    device : str or torch.device
        "cpu", "cuda" or "cuda:N".
    dtype : {None, "float64", "float32"}
        Working precision; None is float64.
    chunk : int
        Samples per block of the full-batch steps and of the evaluations (memory bound).
    progress : bool
        A progress bar over the steps.

    Returns
    -------
    Simulation
        ``t`` the recorded steps; observables (seeds, len(t)) of the noiseless network (sigma_xi = 0):
        ``train_acc``, ``test_acc`` (``P[y g > 0] + P[g = 0]/2``), ``train_loss``, ``test_loss`` (hinge),
        ``cos`` = max_i cos(w_i, sum_A M_j) (the paper's metric) and ``abs_cos``;
        the parameters in pattern coordinates (Q = W M) after each full-batch step t (and at init, t = 0):
        ``Q_t`` (seeds, 2m, D), ``b_t``, ``a_t`` (seeds, 2m); after step 1, ``g1_max`` (seeds,) = max |g^(1)|
        over the training samples (< 1: the hinge indicator of step 2 is 1 everywhere, Lemma 19) and
        ``loss_step1`` (seeds,) the training hinge of g^(1) at step 2's sigma_xi; the parameters after the last step,
        ``Q_final`` (seeds, 2m, D) in pattern coordinates, ``b_final``, ``a_final`` (seeds, 2m). On the
        Gaussian-mixture parity also ``centre_cos`` (seeds, len(t)): the min over the 2^k cluster centres M eps of
        max_i |cos(w_i, M eps)| (every centre covered by a neuron, [Shi22, Figure 16]); ``cos`` is against
        ``sum_j M_j``, the centre eps = (1, ..., 1).

    Notes
    -----
    Regime: any pattern model; the population theory (steps 1-2, docs/emergence.md) is the n_train -> inf limit
    of the full-batch steps. The kill steps (``lam = 1/(2 eta)``) use the factor ``1 - 2 eta lam`` as computed
    (0 up to rounding). ``eta^(1)`` is ~1e-9 at k = 5, m = 300, so in float32 ``w^(1)`` is lost against b:
    keep float64 for the steps-1-2 comparisons. CUDA draws other numbers than the CPU for a seed.

    References
    ----------
    .. [src] [Shi22, Section 3.1 (network, init, update (4)), Lemma 23 (schedule), App. E.1 (protocol and
       baselines)].
    """
    opts = _check(model, width, method, n_train, batch, steps, seeds, seed, balanced, coords, d, n_test,
                  eval_samples, n_points, init, chunk, progress)
    return _train(model, opts, schedule, lr, lam, lr_a, device, dtype, _times(opts["steps"], opts["n_points"]))


def _train(model, opts, schedule, lr, lam, lr_a, device, dtype, record):
    """:func:`train` with checked options ``opts`` (:func:`_check`), recording at the steps in ``record``."""
    structure, full, trained, linear = METHODS[opts["method"]]
    sched = _schedule(model, opts["m"], opts["steps"], schedule, None if lr is None else check(_OWNER, "lr", lr, _POS),
                      None if lam is None else check(_OWNER, "lam", lam, _NONNEG),
                      None if lr_a is None else check(_OWNER, "lr_a", lr_a, _POS))
    dev, dt = resolve_device(device, _OWNER), resolve_dtype(dtype, _OWNER)
    scales = _init_scales(model, opts["init"])
    if not structure:
        model = no_structure(model)
    start = time.perf_counter()
    S, T, k = opts["seeds"], opts["steps"], int(model.k)
    gen = make_generator(opts["seed"], dev)
    gmm = isinstance(model, GaussianParityMixture)
    # the Gaussian-mixture parity's classes balance: its class weights alpha_y are 1
    alpha = (model.moments().class_weights(_OWNER, "schedule") if any(e.weighted for e in sched) and not gmm
             else None)
    M = _dictionary(model, opts, dev, dt)
    kw = dict(dtype=dt, device=dev)
    M_cos = torch.tensor(model.M, dtype=dt, device=dev) if gmm else M     # cos(w, sum_j M_j): M's columns
    centres = (torch.tensor(model.centers()[0] @ model.M.T, dtype=dt, device=dev) if gmm else None)
    if M is not None and getattr(model, "sigma_zeta", 0.0):
        # App. F input noise has a part outside span M: the samples live in R^d (seeds x n x d numbers)
        if model.M is None:
            raise InvalidParameterError(
                f"The 'coords' parameter of {_OWNER} must be 'pattern' for a model with sigma_zeta > 0 and no "
                f"dictionary M (its sigma~ depends on d = M.shape[0]); give the model an M. Got 'input' instead.")
        kw["coords"], M_in = "input", None
    else:
        M_in = M              # pattern-coordinate samples, mapped through M in the forward pass
    train_data = _Data(*sample(model, S, opts["n"], opts["seed"], balanced=opts["balanced"], stream=0, **kw), M_in)
    test_data = _Data(*sample(model, S, opts["test"], opts["seed"], stream=1, **kw), M_in)
    P = _initial(S, opts["m"], M, model.d if gmm else int(model.D), k, scales, gen, dt, dev)
    P0 = {key: v.clone() for key, v in P.items()} if linear else None
    batches = _Batches(S, opts["n"], opts["batch"], make_generator(int(np.random.SeedSequence(
        [opts["seed"], 1]).generate_state(1)[0]), dev), dev)     # own stream: same batches in R^d and pattern coords
    out = {key: [] for key in ("t", "train_acc", "train_loss", "test_acc", "test_loss", "cos", "abs_cos")}
    extra = {}
    bar = _progress(T, opts["progress"], _OWNER, unit="step")
    try:
        with torch.inference_mode(), serial_if_small(dev, S * opts["batch"] * 2 * opts["m"]):
            for t in range(T + 1):
                if t > 0:
                    step = _step_at(sched, t, full)
                    rows = slice(0, opts["n"]) if t <= full else batches.next()
                    layers = ("W", "b", "a") if t <= full else trained
                    grads = _gradients(train_data, rows, P, P0, step.s, opts["chunk"],
                                       alpha if step.weighted else None, "W" in layers)
                    if t == 2 and full >= 2:
                        extra["g1_max"], extra["loss_step1"] = to_numpy(grads[4]), to_numpy(grads[3])
                    P = _update(P, grads, step, layers)
                    bar.update()
                if t <= full:
                    extra |= {f"Q_{t}": to_numpy(_pattern_weights(P["W"], M)),
                              f"b_{t}": to_numpy(P["b"]), f"a_{t}": to_numpy(P["a"])}
                if t in record:
                    _record(out, t, train_data, test_data, opts, P, P0, M_cos, k, centres)
    finally:
        bar.close()
    extra |= {"Q_final": to_numpy(_pattern_weights(P["W"], M)), "b_final": to_numpy(P["b"]), "a_final": to_numpy(P["a"])}
    wall = time.perf_counter() - start
    t_axis = np.array(out.pop("t"))
    obs = {key: np.stack(v, axis=1) for key, v in out.items()} | extra
    meta = {"model": repr(model), "method": opts["method"], "options": {key: v for key, v in opts.items() if key != "init"},
            "schedule": [vars(e) for e in sched[:3]],
            "init": "fixed parameters" if np.ndim(scales[0]) == 2 else {"sigma_w": scales[0], "sigma_b": scales[1],
                                                                        "sigma_a": scales[2]}, "device": str(dev),
            "dtype": str(dt).replace("torch.", ""), "torch_version": torch.__version__, "seeds": S,
            "seed": opts["seed"], "wall_time_s": wall, "steps_per_s": T / wall if wall > 0 else None,
            "t_unit": "steps"}
    ok = all(np.all(np.isfinite(v)) for v in obs.values())
    return Simulation(t=t_axis, observables=obs, status=0 if ok else -1,
                      message="" if ok else "non-finite parameters or losses: overflow; lower lr or use float64",
                      meta=meta)


_STAGE3 = {"all": "network", "second_layer": "two_step"}


def simulate(problem, *, steps, lr, n_train, batch, n_test, balanced, init, n_points, eval_samples, chunk, seeds,
             seed, device, dtype, progress):
    r"""``popdyn.simulate`` for :class:`~popdyn.models.emergence.Problem`: the problem's schedule on n_train samples.

    .. math:: \theta^{(t)} = \theta^{(t-1)} - \eta^{(t)}\nabla_\theta\big[\hat L(g^{(t-1)};\sigma_\xi^{(t)})
              + R(\theta^{(t-1)};\lambda_a^{(t)},\lambda_w^{(t)})\big],\quad t = 1..T

    Runs :func:`train` with ``problem.schedule(steps, lr)``, on ``problem.model`` (without structure when
    ``problem.structure`` is False), stage 3 on every layer or the second layer only (``problem.stage3``), in
    pattern coordinates or in R^d (``problem.d``), steps 1-2 on the full sample and mini-batches after. Every
    option is resolved by ``popdyn.simulate`` from ``Problem.options`` (``init="problem"``: every seed starts at
    ``problem.params0``, the init of ``popdyn.predict``, and the seeds vary the samples and batches only).

    Returns
    -------
    Simulation
        ``t``: ``n_points`` recorded steps in [2, steps] (the stage-3 axis of ``predict``); with
        ``popdyn.predict``'s names, (seeds, len(t)): ``loss`` and ``error`` (test hinge loss and
        ``P[y g < 0] + P[g = 0]/2`` of the noiseless network), ``cos`` (``max_i |cos(w_i, sum_A M_j)|``, in R^d
        with the part of w outside span M); and ``train_loss``, ``train_error`` (on ``eval_samples`` training
        samples). ``meta["steps_1_2"]``, per seed: ``cos_step1``, ``cos_step2`` (after steps 1 and 2, pattern
        coordinates), ``loss_step1`` (training hinge of ``g^(1)`` at ``sigma_xi^(2)``) and ``g1_max``
        (max |g^(1)| on the training set; the population ``hinge_certificate`` of ``predict`` bounds it). The
        parameters after each step are :func:`train`'s.

    Notes
    -----
    Regime: the finite-n_train twin of ``predict``: steps 1-2 converge to the population steps at rate
    n_train^{-1/2} (docs/emergence.md); stage 3 is mini-batch SGD where the theory is full population GD.

    References
    ----------
    .. [src] [Shi22, Section 3.1, App. E.1]; the finite-sample prediction derived in docs/emergence.md.

    Examples
    --------
    >>> import popdyn
    >>> from popdyn.models.emergence import Problem
    >>> sim = popdyn.simulate(Problem(D=12, k=3, width=4), steps=6, seeds=2, n_train=2000, batch=100, n_test=500)
    >>> sim.t.tolist(), sim["error"].shape, min(sim.meta["steps_1_2"]["cos_step2"]) > 0.99
    ([2, 3, 4, 5, 6], (2, 5), True)
    """
    width, method = problem.width, _STAGE3[problem.stage3]
    opts = _check(problem.model, width, method, n_train, batch, steps, seeds, seed, balanced,
                  "pattern" if problem.d is None else "input", problem.d, n_test, eval_samples, n_points,
                  problem.params0 if init == "problem" else _init_scales(problem.structured_model, None), chunk,
                  progress)
    sim = _train(problem.model, opts, problem.schedule(steps, lr), None, None, None, device, dtype,
                 _times(steps, n_points, start=2))
    obs, k = sim.observables, problem.k
    cos = {f"cos_step{t}": np.abs(obs[f"Q_{t}"][..., :k].sum(-1) / (np.sqrt(k) * np.maximum(
        np.linalg.norm(obs[f"Q_{t}"], axis=-1), np.finfo(float).tiny))).max(-1) for t in (1, 2)}
    new = {"loss": obs["test_loss"], "error": 1.0 - obs["test_acc"], "cos": obs["abs_cos"],
           "train_loss": obs["train_loss"], "train_error": 1.0 - obs["train_acc"]}
    stages = cos | {key: obs[key] for key in ("loss_step1", "g1_max")}
    meta = sim.meta | {"init": init, "steps_1_2": stages}
    return Simulation(t=sim.t, observables=new, status=sim.status, message=sim.message, meta=meta)
