"""Falsification tests of the kernels claims: the eigenlearning theory passes, wrong theories FAIL."""
import dataclasses

import numpy as np
import pytest

from .falsify import falsifies, measure, memoise, perturb


def _scaled_curve(factor):
    """The eigenlearning test error times ``factor`` (a perturbed constant)."""
    def wrong(f):
        def g(*a, **k):
            out = f(*a, **k)
            return dataclasses.replace(out, test_error=factor * out.test_error)
        return g
    return wrong


def _no_e0(f):
    """The overfitting coefficient dropped: E0 = 1."""
    return lambda learnability, n_train, multiplicity=None: np.ones(np.size(n_train))


def _no_multiplicity(f):
    """Each level counted once, not C(d, l) times (the level eigenvalues taken for single modes)."""
    return lambda d: np.ones(d + 1)


# at this size (d = 30, N = 30 to 300, 16 sets) the theory sits at ~0.2 error units; E0 dropped is 5-30 % off (~3
# units), a 10 % scale ~2 units, forgetting the multiplicities moves kappa by orders of magnitude (> 10 units)
@pytest.mark.slow
@falsifies("kernels.eigenlearning_curves")
@pytest.mark.parametrize("wrong", [None, "no_e0", "scaled", "no_multiplicity"])
def test_eigenlearning_curves_fails_a_wrong_theory(wrong, monkeypatch, tmp_path):
    memoise(monkeypatch, "popdyn.sim.kernels.simulate")
    if wrong == "no_e0":
        perturb(monkeypatch, "popdyn.models.kernels.learning_curve.overfitting_coefficient", _no_e0)
    elif wrong == "scaled":
        perturb(monkeypatch, "popdyn.models.kernels.predict.eigenlearning", _scaled_curve(1.1))
    elif wrong == "no_multiplicity":
        perturb(monkeypatch, "popdyn.models.kernels.problem.level_multiplicities", _no_multiplicity)
    verdict, measured, _ = measure("kernels.eigenlearning_curves", tmp_path, n_train=[30, 100, 300], seeds=16)
    assert verdict == ("PASS" if wrong is None else "FAIL"), measured
    assert (measured < 0.5) if wrong is None else (measured > 1.5)


# the finding (the theory underestimates the ReLU NTKs' error by > 25 % at N = 2^d, d = 6) fails for a prediction
# that does not underestimate: eigenlearning x 10 sits above the mean exact error (ratios 6 and 10 measured)
@falsifies("kernels.small_cube_breakdown")
@pytest.mark.parametrize("wrong", [None, "scaled"])
def test_small_cube_breakdown_fails_a_theory_that_does_not_underestimate(wrong, monkeypatch, tmp_path):
    memoise(monkeypatch, "popdyn.sim.kernels.simulate")
    if wrong == "scaled":
        perturb(monkeypatch, "popdyn.models.kernels.predict.eigenlearning", _scaled_curve(10.0))
    verdict, measured, _ = measure("kernels.small_cube_breakdown", tmp_path, seeds=32)
    assert verdict == ("PASS" if wrong is None else "FAIL"), measured
    assert (measured < 0.5) if wrong is None else (measured > 1.5)
