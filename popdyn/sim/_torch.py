"""Torch helpers shared by every simulation module: device, dtype, generator, activations, progress.

Public names
------------
resolve_device, resolve_dtype
    ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a ``torch.device``; float64 (default) or float32.
serial_if_small
    One intra-op CPU thread while the per-step tensors are small.
make_generator, standard_normal_
    A ``torch.Generator`` on the device, seeded: the same seed gives the same numbers; Gaussian draws
    from it (a faster exact path for float64 on CPU).
torch_activation
    sigma and sigma' as torch functions, for every named activation of :mod:`popdyn.activations`.
progress, to_numpy
    A tqdm bar when asked for (and installed); tensors back to float64 numpy.

This module, like all of ``popdyn.sim``, is the only place that imports torch.
"""
from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass

import numpy as np
import torch

from .. import activations
from .._validate import InvalidParameterError

__all__ = ["resolve_device", "resolve_dtype", "make_generator", "standard_normal_", "serial_if_small", "TorchActivation",
           "torch_activation", "progress", "to_numpy"]

_SERIAL_ELEMENTS = 2**18  # 2 MB of float64 per step: below this, one thread beats two (measured, see serial_if_small)
_DTYPES = {"float64": torch.float64, "float32": torch.float32, "double": torch.float64, "float": torch.float32,
           torch.float64: torch.float64, torch.float32: torch.float32,
           np.float64: torch.float64, np.float32: torch.float32}


def resolve_device(device, owner):
    """``torch.device`` for ``device``; raise naming the parameter when it is unknown or absent.

    Examples
    --------
    >>> resolve_device("cpu", "lora.simulate")
    device(type='cpu')
    """
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise InvalidParameterError(
            f"The 'device' parameter of {owner} must be 'cpu', 'cuda' or 'cuda:N'. Got {device!r} instead.") from e
    if dev.type == "cpu":
        return dev
    if dev.type != "cuda":
        raise InvalidParameterError(
            f"The 'device' parameter of {owner} must be 'cpu', 'cuda' or 'cuda:N'. Got {device!r} instead.")
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if n == 0:
        raise InvalidParameterError(
            f"The 'device' parameter of {owner} asks for CUDA ({device!r}), but torch sees no CUDA device "
            f"(torch {torch.__version__}, torch.cuda.is_available() is False). Use device='cpu'.")
    if dev.index is not None and not (0 <= dev.index < n):
        raise InvalidParameterError(
            f"The 'device' parameter of {owner} must name one of the {n} CUDA devices (cuda:0..cuda:{n - 1}). "
            f"Got {device!r} instead.")
    return dev


def resolve_dtype(dtype, owner):
    """``torch.float64`` when ``dtype`` is None, else float64 or float32 (name, torch or numpy type)."""
    if dtype is None:
        return torch.float64
    try:
        return _DTYPES[dtype]
    except (KeyError, TypeError):
        raise InvalidParameterError(
            f"The 'dtype' parameter of {owner} must be one of ['float64', 'float32'] (or None for float64). "
            f"Got {dtype!r} instead.") from None


@contextlib.contextmanager
def serial_if_small(device, elements):
    """Run the block with one intra-op CPU thread when each step touches fewer than 2**18 elements.

    Per-step kernels of a simulation are small: thread hand-offs cost more than they save, and on a
    busy machine a parallel matrix-vector product can stall for milliseconds (measured: 8 x 2000
    ``bmm`` 4 us on one thread, up to 8 ms on two contended ones). The previous setting is restored
    (``torch.set_num_threads`` is process-wide). No effect on CUDA.
    """
    old = torch.get_num_threads()
    serial = device.type == "cpu" and elements < _SERIAL_ELEMENTS
    if serial:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if serial:
            torch.set_num_threads(old)


def make_generator(seed, device):
    """A ``torch.Generator`` on ``device`` seeded with ``seed``: one per run, so runs never share a stream."""
    return torch.Generator(device=device).manual_seed(int(seed))


def standard_normal_(out, generator):
    """Fill ``out`` in place with independent N(0, 1) draws from ``generator``; returns ``out``.

    On CPU in float64 by the inverse CDF of a 53-bit uniform u in {0, 2^-53, ..., 1 - 2^-53}:
    ``z = sqrt(2) erfinv(2u - 1 + 2^-53)``, exactly symmetric, |z| <= 8.29, with torch's erfinv within
    4.4e-16 (relative) of scipy's; 1.6x faster than torch's float64 ``randn`` (10 vs 17 ns a number on
    one core, measured), which is most of a step's cost at d = 2000. Elsewhere ``torch.randn``.
    """
    if out.device.type != "cpu" or out.dtype != torch.float64:
        return torch.randn(out.shape, generator=generator, out=out)
    out.uniform_(generator=generator).mul_(2).sub_(1 - 2.0**-53)
    return torch.special.erfinv(out, out=out).mul_(math.sqrt(2))


@dataclass(frozen=True)
class TorchActivation:
    """sigma and sigma' as torch callables; ``native`` is False for the numpy fallback (host round trip)."""
    name: str
    f: object
    df: object
    native: bool = True


def _hermite(p):
    """Normalised Hermite ``h_p = He_p / sqrt(p!)`` by ``h_{q+1} = (z h_q - sqrt(q) h_{q-1}) / sqrt(q+1)``."""
    def h(z, p=p):
        prev, cur = torch.ones_like(z), z
        if p == 0:
            return prev
        for q in range(1, p):
            prev, cur = cur, (z * cur - math.sqrt(q) * prev) / math.sqrt(q + 1)
        return cur
    return h


def _heaviside(z):
    return torch.heaviside(z, z.new_zeros(()))   # relu' with relu'(0) = 0, one kernel


_SQRT_2_PI = math.sqrt(2 * math.pi)
_NATIVE = {
    "relu": (torch.relu, _heaviside),
    "abs": (torch.abs, torch.sign),
    "linear": (lambda z: z, torch.ones_like),
    "quadratic": (torch.square, lambda z: 2 * z),
    "sign": (torch.sign, torch.zeros_like),
    "erf": (torch.erf, lambda z: torch.exp(-z * z) * (2 / math.sqrt(math.pi))),
    "tanh": (torch.tanh, lambda z: 1 - torch.tanh(z) ** 2),
    "sigmoid": (torch.sigmoid, lambda z: torch.sigmoid(z) * torch.sigmoid(-z)),
    "gelu": (lambda z: z * 0.5 * torch.erfc(-z / math.sqrt(2)),
             lambda z: 0.5 * torch.erfc(-z / math.sqrt(2)) + z * torch.exp(-0.5 * z * z) / _SQRT_2_PI),
    "softplus": (lambda z: torch.logaddexp(z, torch.zeros_like(z)), torch.sigmoid),
    "exp": (torch.exp, torch.exp),
}


def _leaky(alpha):
    return ((lambda z: torch.where(z > 0, z, alpha * z)),
            (lambda z: torch.where(z > 0, z.new_tensor(1.0), z.new_tensor(alpha))))


def _base(act):
    """Torch (sigma, sigma') of popdyn's own activation that ``act`` rescales, or None.

    ``act`` is native when it equals ``base.rescaled(act.r)``: same family object and scale, so a user
    callable that merely reuses a name ("relu") is not mistaken for popdyn's.
    """
    name = act.name.rsplit("(r=", 1)[0] if act.r != 1.0 else act.name
    leaky = re.fullmatch(r"leaky_relu(?:\((.+)\))?", name)
    try:
        base = activations.leaky_relu(float(leaky.group(1))) if leaky and leaky.group(1) else activations.get(name)
    except (ValueError, TypeError):
        return None
    if base.rescaled(act.r) != act:
        return None
    if leaky:
        return _leaky(float(leaky.group(1) or 0.01))
    he = re.fullmatch(r"he(\d+)", name)
    if he:
        p = int(he.group(1))
        hp, hq = _hermite(p), _hermite(p - 1)
        return hp, lambda z: math.sqrt(p) * hq(z)
    return _NATIVE[name]


def _rescale(f, df, r):
    """``sigma(r z)`` and its derivative ``r sigma'(r z)``."""
    if r == 1.0:
        return f, df
    return (lambda z: f(r * z)), (lambda z: r * df(r * z))


def _numpy_fallback(act):
    """sigma, sigma' evaluated by the numpy ``Activation`` on the host, then copied back to the device."""
    def wrap(fn):
        def g(z):
            return torch.as_tensor(np.asarray(fn(z.detach().cpu().numpy()), dtype=np.float64),
                                   dtype=z.dtype, device=z.device)
        return g
    return wrap(act), wrap(act.deriv)


def torch_activation(activation):
    """sigma and sigma' in torch for an activation name or :class:`popdyn.activations.Activation`.

    popdyn's named activations (relu, abs, leaky_relu, linear, quadratic, sign, erf, tanh, sigmoid,
    gelu, softplus, exp, heK) and their ``rescaled`` versions get torch kernels; ``heK`` uses the
    normalised Hermite recurrence and ``he_K' = sqrt(K) he_{K-1}``. Any other activation (e.g.
    ``Activation.from_callable``) falls back to its numpy ``__call__`` and ``deriv`` on the host:
    exact, but each call copies to the CPU and back (a host sync per step on CUDA, and slower on
    CPU). Autograd is not used: a numpy function has no torch graph.

    Examples
    --------
    >>> act = torch_activation("relu")
    >>> act.f(torch.tensor([-1.0, 2.0])).tolist(), act.df(torch.tensor([-1.0, 2.0])).tolist()
    ([0.0, 2.0], [0.0, 1.0])
    """
    act = activations.get(activation)
    pair = _base(act)
    if pair is None:
        return TorchActivation(act.name, *_numpy_fallback(act), native=False)
    return TorchActivation(act.name, *_rescale(*pair, act.r))


class _NoBar:
    def update(self, n=1):
        pass

    def close(self):
        pass


def progress(total, enabled, desc, unit="step"):
    """A tqdm progress bar over ``total`` units ("step", "seed", "lambda", ...) when ``enabled`` and tqdm is
    installed, else a no-op; the bar stays on screen when done."""
    if not enabled:
        return _NoBar()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, desc=desc, unit=unit, leave=True)


def to_numpy(x):
    """A tensor (any device) as a float64 numpy array of its own: never a view of a live CPU float64 tensor, so a
    record taken during training keeps its value while the weights move on."""
    return x.detach().to("cpu", torch.float64).numpy().copy()
