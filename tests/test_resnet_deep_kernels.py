"""Infinite-width kernels of fc3 and the ResNets (popdyn.models.resnet.deep_kernels) against Monte Carlo over random
networks of the paper (popdyn.sim.resnet.networks) at several widths, exact enumeration of the cube and the fc2
profiles."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from popdyn._validate import InvalidParameterError
from popdyn.models import resnet as R
from popdyn.sim.resnet.networks import conjugate_kernel, empirical_ntk, init_net

CASES = [(a, k) for a, ks in R.NETWORK_KERNELS.items() for k in ks]


def _finite(net, kernel, X):
    if kernel == "ck":
        return conjugate_kernel(net, X)
    if kernel == "ntk_W":
        return empirical_ntk(net, X, which=("W",))
    return empirical_ntk(net, X) / (1.0 if net.arch == "fc2" else net.A.shape[2])


def test_fc2_and_first_layers_are_the_fc2_profiles():
    """fc2's kernels (and the U = VA ResNet's ck and first-layer NTK) are fc2_kernel_limit's (independent code)."""
    for d in (3, 10, 30):
        for arch in ("fc2", "resnet"):
            np.testing.assert_allclose(R.network_kernel_limit(arch, "ck", d), R.fc2_kernel_limit("nngp", d),
                                       rtol=1e-14)
            np.testing.assert_allclose(R.network_kernel_limit(arch, "ntk_W", d), R.fc2_kernel_limit("ntk", d),
                                       rtol=1e-14, atol=1e-14 * d)


# Monte Carlo over 24 inits at two widths: the seed mean of K_m - K_inf is within 5 SE plus the bias allowance B/m
# (B/sqrt m for the U = VA ResNet's ck, whose residual branch adds an O(m^-1/2) mean), at both widths; a wrong limit
# (the residual terms dropped, or the other kernel) is outside it at the larger width
@pytest.mark.slow
@pytest.mark.parametrize("arch, kernel", [c for c in CASES if c[0] != "fc2"])
def test_limit_against_random_networks(arch, kernel):
    d, S = 6, 24
    X = np.random.default_rng(0).choice([-1.0, 1.0], size=(10, d))
    H = R.hamming_matrix(X)
    kappa = R.network_kernel_limit(arch, kernel, d)
    rate = (lambda m: 2.0 * kappa[0] / math.sqrt(m)) if (arch, kernel) == ("resnet", "ck") else (
        lambda m: 4.0 * (kappa[0] + R.network_kernel_limit("resnet_free_u", "ntk_W", d)[0]) / m)
    wrong = {"ck": "ntk" if arch != "resnet" else "ntk_W"}.get(kernel, "ck")
    wrong_kappa = (R.network_kernel_limit("fc3", kernel, d) if arch == "resnet_free_u" and kernel != "ntk"
                   else R.network_kernel_limit(arch, wrong, d))
    for m in (256, 2048):
        K = _finite(init_net(arch, d, 3, m, seeds=S, seed=m), kernel, X)
        mean, se = K.mean(0), K.std(0, ddof=1) / math.sqrt(S)
        iu = np.triu_indices(X.shape[0])
        assert np.all(np.abs(mean - kappa[H])[iu] <= 5 * se[iu] + rate(m)), (m, np.abs(mean - kappa[H]).max())
    assert np.any(np.abs(mean - wrong_kappa[H])[iu] > 5 * se[iu] + rate(m))


@pytest.mark.parametrize("arch, kernel", CASES)
def test_parseval_equals_cube_enumeration(arch, kernel):
    """The profile as a kernel on all of {±1}^5: KRR's error by enumerating the 32 points equals the Parseval error,
    and every level eigenvalue is >= 0 (a PSD dot-product kernel)."""
    d = 5
    kappa = R.network_kernel_limit(arch, kernel, d)
    assert np.all(R.level_eigenvalues(kappa) >= -1e-12 * kappa[0])
    target = R.thm2_target(d, 2, 0.3, rng=1)
    X = np.random.default_rng(2).choice([-1.0, 1.0], size=(12, d))
    beta = R.krr_fit(kappa, X, target(X), 1e-2 * kappa[0])
    cube = R.hypercube_points(d)
    enum = ((R.kernel_matrix(kappa, cube, X) @ beta - target(cube)) ** 2).mean(0)
    np.testing.assert_allclose(R.exact_test_error(kappa, X, beta, target.walsh()), enum, rtol=1e-10, atol=1e-13)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(CASES), st.integers(1, 60))
def test_profiles_psd_and_monotone(case, d):
    """Every profile is PSD on the cube and, except the first layer's NTK (its <x~, y~> changes sign), decreasing in
    t, the Hamming distance."""
    kappa = R.network_kernel_limit(*case, d)
    assert np.all(np.isfinite(kappa)) and kappa.shape == (d + 1,)
    assert np.all(R.level_eigenvalues(kappa) >= -1e-12 * abs(kappa[0]))
    if case[1] == "ck" or case[0] != "fc2" and case[1] == "ntk":
        assert np.all(np.diff(kappa) <= 1e-14 * kappa[0])


def test_residual_block_terms():
    """The free-U ResNet against fc3: ck adds Sigma1 + 2 mu0 mu1, the first layer's NTK the fc2 NTK; NTK / m equal."""
    d = 9
    q0 = (d + 1) / d
    f = R.network_kernel_limit
    np.testing.assert_allclose(f("resnet_free_u", "ck", d) - f("fc3", "ck", d),
                               f("fc2", "ck", d) + q0 / (math.sqrt(2) * math.pi), rtol=1e-14)
    np.testing.assert_allclose(f("resnet_free_u", "ntk_W", d) - f("fc3", "ntk_W", d), f("fc2", "ntk_W", d),
                               rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(f("resnet_free_u", "ntk", d), f("fc3", "ntk", d))


def test_bad_input():
    with pytest.raises(InvalidParameterError, match="'arch'"):
        R.network_kernel_limit("fc4", "ck", 5)
    with pytest.raises(InvalidParameterError, match="'kernel'.*U = VA"):
        R.network_kernel_limit("resnet", "ntk", 5)
    with pytest.raises(InvalidParameterError, match="'d'"):
        R.network_kernel_limit("fc3", "ck", 0)
