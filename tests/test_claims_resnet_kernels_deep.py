"""Falsification test of resnet.deep_finite_width_kernels: the derived infinite-width profiles pass, wrong ones FAIL."""
import pytest

from popdyn.sim.resnet.networks import Net

from .falsify import falsifies, measure, memoise, perturb, scaled


def _key(a):
    """Exact identity of the arguments of the cube error (a Net's repr truncates its tensors)."""
    if isinstance(a, Net):
        return (a.arch, a.W.numpy().tobytes(), a.A.numpy().tobytes())
    return a.tobytes() if hasattr(a, "tobytes") else repr(a)


def _no_skip(f):
    """The free-U ResNet's kernels without the residual terms (fc3's)."""
    return lambda arch, *a, **k: f("fc3" if arch == "resnet_free_u" else arch, *a, **k)


def _shallower(f):
    """fc3's kernels replaced by fc2's at the same kappa(0) (one block too shallow)."""
    def wrong(arch, kernel, d):
        if arch != "fc3":
            return f(arch, kernel, d)
        right, shallow = f(arch, kernel, d), f("fc2", kernel, d)
        return shallow * right[0] / shallow[0]
    return wrong


# wrong theories, each moving a case's m -> infinity error by >= 6 intercept SE at this size (recorded quick run:
# true max |z| 1.24; no_skip >= 21, fc2's shape for fc3 >= 15, and a kernel 2x too large shifts the ridge's weight)
@pytest.mark.slow
@falsifies("resnet.deep_finite_width_kernels")
@pytest.mark.parametrize("wrong", [None, _no_skip, _shallower, scaled(2.0)])
def test_deep_finite_width_kernels_fails_a_wrong_limit(wrong, monkeypatch, tmp_path):
    memoise(monkeypatch, "popdyn.validation.claims.resnet_kernels_deep._cube_error", key=_key)
    if wrong is not None:
        perturb(monkeypatch, "popdyn.models.resnet.network_kernel_limit", wrong)
    verdict, measured, checks = measure("resnet.deep_finite_width_kernels", tmp_path)
    assert verdict == ("PASS" if wrong is None else "FAIL"), (measured, checks)
    assert (measured < 4.0) if wrong is None else (measured > 8.0)
