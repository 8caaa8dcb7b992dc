"""Falsification tests of the network claims of [AllenZhu19]: each passes with the theory and FAILS with a wrong one."""
import pytest

from .falsify import falsifies, measure, memoise, perturb, run_claim, scaled

_SMALL = {"n_train": [800], "archs": ["resnet"], "epochs": 30, "seeds": 1, "n_test": 2000}


# wrong theories: (kernel) the exact kernel error halved (a kernel that half-learned G: ~0.22 < 0.9 k alpha^2 = 0.32);
# (untrained) the network's steps 1e-12 (never trained: error ~5, ratio ~10 against 1/16; true: ratio ~0.03).
@falsifies("resnet.thm2_networks")
@pytest.mark.parametrize("wrong", [None, "kernel", "untrained"])
def test_thm2_networks_fails_a_learning_kernel_and_an_untrained_network(wrong, monkeypatch, tmp_path):
    if wrong == "untrained":
        perturb(monkeypatch, "popdyn.sim.resnet.network_vs_kernels.train",
                lambda f: lambda net, target, **kw: f(net, target, **{**kw, "lr": 1e-12}))
    else:                                   # the training does not depend on the kernel theory: train once
        memoise(monkeypatch, "popdyn.simulate")
    if wrong == "kernel":
        perturb(monkeypatch, "popdyn.models.resnet.predict.exact_test_error", scaled(0.5))
    verdict, res = run_claim("resnet.thm2_networks", tmp_path, **_SMALL)
    measured, checks = res.measured, res.checks
    assert verdict == ("PASS" if wrong is None else "FAIL"), (measured, checks, res.nulls)
    if wrong is None:                       # the untrained null (the ResNet at init) is rejected
        assert res.nulls["untrained"] > 1
    if wrong == "untrained":
        assert measured > 1
    if wrong == "kernel":
        assert not checks["every exact kernel error >= 0.9 k alpha^2"]


# wrong theories: (captured) the kernel predictor's Walsh coefficients 5x too large (a kernel that captures G well
# below C(d, k): c_S/alpha ~0.15 at C/10 against 0.1; true ~0.03, the Gaussian kernel's); (error) the exact error
# halved (below k alpha^2 at C/10).
@pytest.mark.slow
@falsifies("resnet.kernel_transition")
@pytest.mark.parametrize("wrong", [None, "captured", "error"])
def test_kernel_transition_fails_a_kernel_that_learns_G_early(wrong, monkeypatch, tmp_path):
    if wrong == "captured":
        perturb(monkeypatch, "popdyn.models.resnet.predict.captured_coefficients", scaled(5.0))
    if wrong == "error":
        perturb(monkeypatch, "popdyn.models.resnet.predict.exact_test_error", scaled(0.5))
    verdict, measured, checks = measure("resnet.kernel_transition", tmp_path, n_train=[57, 114, 1140, 2280])
    assert verdict == ("PASS" if wrong is None else "FAIL"), (measured, checks)
    assert (measured > 0.1) if wrong == "captured" else (measured < 0.1)
