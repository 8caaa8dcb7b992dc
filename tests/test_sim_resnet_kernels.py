"""KRR with a network's finite-width kernel (popdyn.sim.resnet.kernels) against explicit kernel matrices, enumeration
and Monte Carlo over inits."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from popdyn._validate import InvalidParameterError
from popdyn.models.resnet import (fc2_kernel_limit, hamming_matrix, hypercube_points, relu_nngp, relu_ntk_hidden,
                                  thm2_target)
from popdyn.sim.resnet import kernels as rk
from popdyn.sim.resnet.networks import conjugate_kernel, empirical_ntk, init_net, ridge_fit

_PAIRS = [("fc2", "ntk"), ("fc2", "ck"), ("fc3", "ntk"), ("fc3", "ck"), ("resnet", "ntk"), ("resnet_free_u", "ntk")]


def _signs(rng, n, d):
    return rng.choice([-1.0, 1.0], size=(n, d))


def _matrix(net, kernel, Z, X):
    return empirical_ntk(net, Z, X) if kernel == "ntk" else conjugate_kernel(net, Z, X)


# the predictor through the linearization equals the explicit (n, N) kernel matrix times beta (independent: the
# per-point gradients of empirical_ntk, the features of conjugate_kernel)
@pytest.mark.parametrize("arch, kernel", _PAIRS)
def test_predictor_equals_kernel_matrix_times_beta(arch, kernel):
    rng = np.random.default_rng(3)
    net = init_net(arch, 5, 3, 24, seeds=2, seed=4)
    X, Z, beta = _signs(rng, 7, 5), _signs(rng, 9, 5), rng.normal(size=(2, 7, 2))
    want = np.einsum("snN,sNi->sni", _matrix(net, kernel, Z, X), beta)
    np.testing.assert_allclose(rk.kernel_predictor(net, kernel, X, beta, Z), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rk.kernel_predictor(net, kernel, X, beta[..., 0], Z), want[..., 0], rtol=1e-12,
                               atol=1e-12)


# the fc2 closed form (masks and v_l) and the generic forward-mode path agree
@pytest.mark.parametrize("kernel", rk.KERNELS)
def test_fc2_closed_form_equals_forward_mode(kernel):
    rng = np.random.default_rng(5)
    net = init_net("fc2", 6, 2, 40, seeds=3, seed=1)
    X, Z = torch.tensor(_signs(rng, 8, 6)), torch.tensor(_signs(rng, 11, 6))
    beta = torch.tensor(rng.normal(size=(3, 8, 2)))
    np.testing.assert_allclose(rk._fc2_predictor(net, kernel, X, beta)(Z).numpy(),
                               rk._jvp_predictor(net, kernel, X, beta)(Z).numpy(), rtol=1e-12, atol=1e-12)


# the exact cube error equals a brute-force evaluation: the explicit (2^d, N) kernel matrix on every point
@pytest.mark.parametrize("arch, kernel", [("fc2", "ntk"), ("fc2", "ck"), ("fc3", "ntk"), ("resnet", "ntk")])
def test_cube_error_equals_brute_force(arch, kernel):
    d, N, lam = 5, 12, 1e-2
    target = thm2_target(d, 2, 0.4, S=[1, 3])
    X = _signs(np.random.default_rng(2), N, d)
    net = init_net(arch, d, 2, 16, seeds=2, seed=9)
    cube = hypercube_points(d)
    beta = ridge_fit(_matrix(net, kernel, X, X), target(X), lam)
    f = np.einsum("snN,sNi->sni", _matrix(net, kernel, cube, X), beta)
    want = ((f - target(cube)[None]) ** 2).mean(1)
    np.testing.assert_allclose(rk.cube_krr_error(net, kernel, target, X, lam), want, rtol=1e-10)


# the cube sweep in blocks gives the same error as one block
def test_cube_error_independent_of_the_block_size(monkeypatch):
    d, target = 7, thm2_target(7, 2, 0.3, S=[0, 5])
    X = _signs(np.random.default_rng(0), 20, d)
    net = init_net("fc2", d, 2, 32, seeds=2)
    one = rk.cube_krr_error(net, "ntk", target, X, 1e-3)
    monkeypatch.setattr(rk, "_CHUNK", 64)
    np.testing.assert_allclose(rk.cube_krr_error(net, "ntk", target, X, 1e-3), one, rtol=1e-12)


# fc2_kernel_limit against Monte Carlo over inits: both finite-width kernels are unbiased at every width (their mean
# is the limit profile), so the mean over 400 nets at m = 32 must match every entry within 5 SE; the experiment
# init (W ~ N(0, 1/d)) and a theory init (W ~ N(0, sigma_w^2)) for the CK
@pytest.mark.parametrize("kernel, init, sigma_w", [("ntk", "experiment", None), ("ck", "experiment", None),
                                                   ("ck", "theory", 0.7), ("ntk", "theory", 0.7)])
def test_limit_profile_is_the_mean_over_inits(kernel, init, sigma_w):
    d, S = 6, 400
    X = _signs(np.random.default_rng(1), 10, d)
    net = init_net("fc2", d, 2, 32, seeds=S, seed=11, init=init, sigma_w=sigma_w)
    K = _matrix(net, kernel, X, X)
    want = fc2_kernel_limit(kernel, d, None if sigma_w is None else sigma_w ** 2)[hamming_matrix(X)]
    z = (K.mean(0) - want) / (K.std(0, ddof=1) / math.sqrt(S))
    assert np.abs(z).max() < 5, np.abs(z).max()
    wrong = 2 * want                                             # an init scale off by sqrt 2
    assert np.abs((K.mean(0) - wrong) / (K.std(0, ddof=1) / math.sqrt(S))).max() > 20


def test_limit_profile_closed_forms():
    d = 9
    np.testing.assert_allclose(fc2_kernel_limit("ntk", d), (d + 1) * relu_ntk_hidden(d))
    np.testing.assert_allclose(fc2_kernel_limit("ck", d), (d + 1) / d * relu_nngp(d))
    np.testing.assert_allclose(fc2_kernel_limit("ck", d, 0.25), 0.25 * (d + 1) * relu_nngp(d))
    # t = 0: <x~, x~> = d + 1, rho = 1: NTK (d+1)/2, CK s^2 (d+1)/2
    assert fc2_kernel_limit("ntk", d)[0] == pytest.approx((d + 1) / 2)
    assert fc2_kernel_limit("ck", d)[0] == pytest.approx((d + 1) / (2 * d))


def test_limit_profile_is_the_theory_function():
    """The simulation package re-exports the theory's (torch-free) function, not a copy."""
    import popdyn.models.resnet.hypercube as hypercube
    assert rk.fc2_kernel_limit is fc2_kernel_limit is hypercube.fc2_kernel_limit


@settings(max_examples=15, deadline=None)
@given(arch=st.sampled_from(["fc2", "fc3", "resnet", "resnet_free_u"]), d=st.integers(1, 6), k=st.integers(1, 3),
       m=st.integers(1, 12), n=st.integers(1, 6), seed=st.integers(0, 2 ** 31))
def test_predictor_is_the_kernel_matrix_property(arch, d, k, m, n, seed):
    rng = np.random.default_rng(seed)
    net = init_net(arch, d, k, m, seeds=2, seed=seed)
    X, Z, beta = _signs(rng, n, d), _signs(rng, n + 1, d), rng.normal(size=(2, n, 2))
    for kernel in (("ntk", "ck") if arch in ("fc2", "fc3") else ("ntk",)):
        want = np.einsum("snN,sNi->sni", _matrix(net, kernel, Z, X), beta)
        np.testing.assert_allclose(rk.kernel_predictor(net, kernel, X, beta, Z), want, rtol=1e-10, atol=1e-10)
        # linear in beta
        np.testing.assert_allclose(rk.kernel_predictor(net, kernel, X, 2 * beta, Z), 2 * want, rtol=1e-10,
                                   atol=1e-10)


def test_bad_inputs_name_the_parameter():
    net, X = init_net("fc2", 4, 2, 8, seeds=2), np.ones((3, 4))
    target = thm2_target(4, 2, 0.3, S=[0, 1])
    cases = [(lambda: rk.kernel_predictor(net, "gauss", X, np.ones((2, 3)), X), "kernel"),
             (lambda: rk.kernel_predictor("net", "ntk", X, np.ones((2, 3)), X), "net"),
             (lambda: rk.kernel_predictor(init_net("resnet", 4, 2, 8), "ck", X, np.ones((1, 3)), X), "kernel"),
             (lambda: rk.kernel_predictor(net, "ntk", X, np.ones((3, 3)), X), "beta"),
             (lambda: rk.kernel_predictor(net, "ntk", X, np.full((2, 3), np.nan), X), "beta"),
             (lambda: rk.kernel_predictor(net, "ntk", 0.5 * X, np.ones((2, 3)), X), "X"),
             (lambda: rk.kernel_predictor(net, "ntk", X, np.ones((2, 3)), np.ones((2, 5))), "Z"),
             (lambda: rk.cube_krr_error(net, "ntk", target, X, 0.0), "lam"),
             (lambda: rk.cube_krr_error(net, "ntk", thm2_target(5, 2, 0.3), X, 0.1), "target"),
             (lambda: rk.cube_krr_error(init_net("fc2", 23, 1, 2), "ntk", target, X, 0.1), "d"),
             (lambda: fc2_kernel_limit("ntk", 0), "d"),
             (lambda: fc2_kernel_limit("ck", 4, -1.0), "w_var"),
             (lambda: fc2_kernel_limit("last", 4), "kernel")]
    for call, name in cases:
        with pytest.raises(InvalidParameterError, match=f"'{name}'"):
            call()
