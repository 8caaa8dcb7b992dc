"""The kernel-error problem: ``predict`` (exact Parseval error) against enumeration and against ``simulate``."""
import numpy as np
import pytest

import popdyn
from popdyn._validate import InvalidParameterError
from popdyn.models import resnet


@pytest.mark.parametrize("kernel,d,k,normalized", [("relu_ntk", 10, 3, False), ("gaussian", 9, 2, True),
                                                   ("arcsin", 11, 4, False)])
def test_predict_equals_enumeration_of_every_test_point(kernel, d, k, normalized):
    """The exact error equals the mean over all 2^d test points (1e-10), captured coefficients included."""
    p = resnet.Problem(kernel=kernel, d=d, k=k, n_train=60, ridge=1e-3, normalized=normalized, seed=3)
    pred = popdyn.predict(p)
    Xall = resnet.hypercube_points(d)
    beta = resnet.krr_fit(p.kappa, p.X, p.target(p.X), p.ridge)
    f = resnet.kernel_matrix(p.kappa, Xall, p.X) @ beta
    np.testing.assert_allclose(pred["test_error"], ((p.target(Xall) - f) ** 2).mean(0), rtol=1e-10, atol=1e-12)
    S = list(p.target.GF_sets[0])
    np.testing.assert_allclose(pred["captured_G"], (f * Xall[:, S].prod(1)[:, None]).mean(0), atol=1e-12)
    assert np.all(pred["test_error"] >= pred["lemma_e2"] - 1e-12)


def test_simulate_agrees_with_predict_within_its_standard_error():
    p = resnet.Problem(d=14, k=3, n_train=200, seed=1)
    pred, sim = popdyn.predict(p), popdyn.simulate(p, n_test=20_000, seeds=4)
    se = sim["test_error"].std(0, ddof=1) / 2
    assert np.all(np.abs(sim["test_error"].mean(0) - pred["test_error"]) < 4.5 * se)      # |z| < 4.5


def test_a_kernel_does_not_learn_G_at_small_N_and_learns_F():
    """Below C(d, k) samples the predictor captures F (c_{S_i} near 1) but not G (c_S << alpha): error ~ alpha^2."""
    p = resnet.Problem(d=16, k=3, alpha=0.3, n_train=300, ridge=1e-4)
    pred = popdyn.predict(p)
    assert np.all(np.abs(pred["captured_F"] - 1) < 0.1) and np.all(np.abs(pred["captured_G"]) < 0.1)
    assert np.all(pred["test_error"] > 0.5 * p.alpha ** 2)


@pytest.mark.parametrize("field,value", [("k", 5), ("ridge", 0.0), ("kernel", "rbf"), ("n_train", 0), ("d", 100)])
def test_bad_fields_name_themselves(field, value):
    args = dict(d=4, k=2) | {field: value}
    with pytest.raises(InvalidParameterError, match=f"'{field}'"):
        resnet.Problem(**args)


def test_simulate_rejects_bad_options():
    with pytest.raises(InvalidParameterError, match="'n_test'"):
        popdyn.simulate(resnet.Problem(d=4, k=2, n_train=5), n_test=1)
