"""popdyn.kernels.fc against the empirical kernels of wide torch networks of the same architecture: the error falls like
width^-1/2.

Networks in the NTK parameterisation, ``h = W_std W a / sqrt(fan_in) + b_std b`` with every entry of W and b standard
normal and trained, ``depth`` hidden layers and a scalar readout of the same form. Per network, the empirical NNGP is
the readout's conditional covariance given the hidden layers, ``W_std^2 a(x).a(y)/n + b_std^2`` (its mean over random
readouts of f(x) f(y)), and the empirical NTK is the Gram matrix of the Jacobian of f with respect to all parameters
(``torch.func.jacrev``). Both fluctuate around the infinite-width kernels by O(n^-1/2) (central limit over the n units
of each hidden layer; the O(1/n) bias is smaller), so the RMS over networks of the relative Frobenius error, fitted
against log width, has slope -1/2. A wrong theory (W_std off by 5 %, or the NTK without the readout's share) leaves a
width-independent error, and its slope is flat: the same samples reject it.
"""
import functools
import math

import numpy as np
import pytest

from popdyn import kernels

torch = pytest.importorskip("torch")
from torch.func import jacrev  # noqa: E402

WIDTHS = (64, 256, 1024)
SEED = 20261129
NETS = 40             # networks per width: the RMS of 40 errors is within ~12 % (one SE), the slope within ~0.06
BAND = (-0.75, -0.3)  # the slope -1/2 of a fluctuation, with room for the O(1/n) bias at width 64 and the RMS's noise
#: architectures: name, depth, activation (torch), W_std, b_std
ARCHS = {"relu_depth2": (2, "relu", torch.relu, math.sqrt(2.0), 0.1),
         "erf_depth1": (1, "erf", torch.erf, 1.5, 0.3)}


def _inputs():
    X = np.random.default_rng(5).standard_normal((5, 6))
    X[4] = -X[0]                                   # an antipodal pair
    return X


def _init(depth, d0, width, gen):
    shapes = []
    fan = d0
    for _ in range(depth):
        shapes += [(fan, width), (width,)]
        fan = width
    shapes += [(width,), ()]
    return [torch.randn(s, generator=gen, dtype=torch.float64) for s in shapes]


def _forward(params, X, depth, act, W_std, b_std):
    """(f(X), last hidden activations)."""
    a = X
    for layer in range(depth):
        W, b = params[2 * layer], params[2 * layer + 1]
        a = act(W_std * (a @ W) / math.sqrt(W.shape[0]) + b_std * b)
    w, b = params[-2], params[-1]
    return W_std * (a @ w) / math.sqrt(w.shape[0]) + b_std * b, a


@functools.lru_cache(maxsize=None)
def _errors(arch):
    """Per width: the empirical NNGP and NTK of NETS networks (float64), as arrays (NETS, N, N)."""
    depth, _, act, W_std, b_std = ARCHS[arch]
    X = torch.tensor(_inputs())
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        gen = torch.Generator().manual_seed(SEED)
        out = {}
        for width in WIDTHS:
            nngp, ntk = [], []
            for _ in range(NETS):
                params = _init(depth, X.shape[1], width, gen)
                _, a = _forward(params, X, depth, act, W_std, b_std)
                nngp.append((W_std ** 2 * (a @ a.T) / width + b_std ** 2).numpy())
                J = jacrev(lambda p: _forward(p, X, depth, act, W_std, b_std)[0])(params)
                J = torch.cat([j.reshape(X.shape[0], -1) for j in J], dim=1)
                ntk.append((J @ J.T).numpy())
            out[width] = {"nngp": np.array(nngp), "ntk": np.array(ntk)}
        return out
    finally:
        torch.set_num_threads(threads)


def _slope(samples, theory):
    """Slope of log RMS relative Frobenius error against log width, and the RMS errors."""
    rms = [math.sqrt(np.mean([np.sum((k - theory) ** 2) / np.sum(theory ** 2) for k in samples[w]]))
           for w in WIDTHS]
    return np.polyfit(np.log(WIDTHS), np.log(rms), 1)[0], rms


def _theory(arch, W_scale=1.0):
    depth, name, _, W_std, b_std = ARCHS[arch]
    net = kernels.fc(depth, name, W_std * W_scale, b_std)
    X = _inputs()
    return net.nngp(X), net.ntk(X)


@pytest.mark.parametrize("arch", sorted(ARCHS))
@pytest.mark.parametrize("kind", ["nngp", "ntk"])
def test_empirical_kernels_approach_fc_like_width_to_minus_half(arch, kind):
    """Measured slopes (seed 20261129, 40 networks per width): relu_depth2 nngp -0.50, ntk -0.51; erf_depth1 nngp
    -0.48, ntk -0.48 (seeds 1 to 4: -0.43 to -0.54); RMS relative error at width 1024: 4.2 % to 9.2 %."""
    nngp, ntk = _theory(arch)
    samples = {w: _errors(arch)[w][kind] for w in WIDTHS}
    slope, rms = _slope(samples, nngp if kind == "nngp" else ntk)
    assert BAND[0] <= slope <= BAND[1], (slope, rms)
    assert rms[-1] < 0.15, rms                     # and it is small at width 1024 (measured <= 9.2 %)


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_the_width_check_rejects_wrong_kernels(arch):
    """The same samples against a wrong theory: W_std 5 % too large (both kernels), or the NTK without the readout's
    share (hidden weights only, ntk - nngp): the error stops falling and the slope leaves the band (measured -0.03
    to -0.18 over seeds 1 to 4 and 20261129)."""
    nngp, ntk = _theory(arch)
    wrong_nngp, wrong_ntk = _theory(arch, W_scale=1.05)
    data = _errors(arch)
    for kind, theory in (("nngp", wrong_nngp), ("ntk", wrong_ntk), ("ntk", ntk - nngp)):
        slope, rms = _slope({w: data[w][kind] for w in WIDTHS}, theory)
        assert slope > BAND[1], (kind, slope, rms)
