"""Falsification test of resnet.finite_width_kernels: the true infinite-width profiles pass, wrong ones FAIL."""
import pytest

from popdyn.sim.resnet.networks import Net

from .falsify import falsifies, measure, memoise, perturb, scaled


def _key(a):
    """Exact identity of the arguments of cube_krr_error (a Net's repr truncates its tensors)."""
    if isinstance(a, Net):
        return (a.arch, a.W.numpy().tobytes(), a.A.numpy().tobytes())
    return a.tobytes() if hasattr(a, "tobytes") else repr(a)


def _swap(f):
    """The conjugate kernel's limit for the NTK and vice versa."""
    return lambda kernel, d, *a, **k: f({"ntk": "ck", "ck": "ntk"}[kernel], d, *a, **k)


def _unit_norm(f):
    """The profiles of unit-norm inputs (relu_ntk_hidden, relu_nngp as tabulated: K(x, x) = 1/2), without the
    ||x~||^2 = d + 1 and the W variance 1/d of the network."""
    return lambda *a, **k: 0.5 * f(*a, **k) / f(*a, **k)[0]


# wrong theories, each moving the m -> infinity error by 0.01-0.5 against an intercept SE of ~1e-3 (measured at this
# size: true |z| <= 0.4; CK for NTK z = 560, init scale off by sqrt 2 (kernel x 2) z = 53, unit-norm profiles z = 570)
@falsifies("resnet.finite_width_kernels")
@pytest.mark.parametrize("wrong", [None, _swap, scaled(2.0), _unit_norm])
def test_finite_width_kernels_fails_a_wrong_limit(wrong, monkeypatch, tmp_path):
    memoise(monkeypatch, "popdyn.sim.resnet.kernels.cube_krr_error", key=_key)
    if wrong is not None:
        perturb(monkeypatch, "popdyn.models.resnet.fc2_kernel_limit", wrong)
    verdict, measured, checks = measure("resnet.finite_width_kernels", tmp_path, m=[256, 512, 1024, 2048])
    assert verdict == ("PASS" if wrong is None else "FAIL"), (measured, checks)
    assert (measured < 4.0) if wrong is None else (measured > 8.0)
