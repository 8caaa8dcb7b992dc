"""Falsification tests of the ResNet-vs-kernels claims: each passes with popdyn's theory and FAILS with a wrong one."""
import pytest

from .falsify import falsifies, measure, perturb, scaled


# wrong theory: the exact kernel error 5 % too large (a perturbed constant in the Parseval sum): the Monte Carlo SE of
# the mean is ~2e-4 against errors ~0.1, so |z| ~ 20-50 against 4.5 (true: ~3).
@falsifies("resnet.exact_kernel_error")
@pytest.mark.parametrize("wrong", [False, True])
def test_exact_kernel_error_fails_a_perturbed_error(wrong, monkeypatch, tmp_path):
    if wrong:
        perturb(monkeypatch, "popdyn.models.resnet.predict.exact_test_error", scaled(1.05))
    verdict, measured, checks = measure("resnet.exact_kernel_error", tmp_path, n_train=[100, 300], n_test=10_000)
    assert verdict == ("FAIL" if wrong else "PASS"), (measured, checks)
    assert (measured > 10) if wrong else (measured < 4.5)
