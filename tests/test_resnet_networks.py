"""The network problem of AllenZhu19: NetworkProblem, its kernel side (``predict``) and its networks (``simulate``)."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import popdyn
from popdyn._validate import InvalidParameterError
from popdyn.models import resnet
from popdyn.models.resnet import problem as problem_module
from popdyn.models.resnet.problem import NETWORK_ARCHS, NetworkProblem
from popdyn.sim.resnet import networks as resnet_nets, training_inputs


@pytest.mark.parametrize("field,value,extra", [
    ("arch", "resnet4", {}), ("target", "parity", {}), ("d", 61, {}), ("k", 0, {}), ("k", 9, {}),
    ("k", 3, {"target": "fig2", "d": 16}), ("k", 5, {"target": "fig2", "d": 9}), ("alpha", -0.1, {}),
    ("beta", 0.5, {}), ("width", 0, {}), ("n_train", 0, {}), ("seed", -1, {})])
def test_bad_fields_name_themselves(field, value, extra):
    with pytest.raises(InvalidParameterError, match=f"'{field}'"):
        NetworkProblem(**{"d": 8, "k": 4, **extra, field: value})


@pytest.mark.parametrize("option,value,extra", [
    ("protocol", "sgd", {}), ("lr", 0.0, {}), ("weight_decay", -1e-4, {}),
    ("weight_decay", 1e-4, {"protocol": "online"}), ("epochs", 0, {})])
@pytest.mark.parametrize("call", [popdyn.predict, popdyn.simulate])
def test_bad_training_options_name_themselves(option, value, extra, call):
    with pytest.raises(InvalidParameterError, match=f"'{option}'"):
        call(NetworkProblem(d=8, k=4), **{**extra, option: value})


@pytest.mark.parametrize("p", [NetworkProblem(), NetworkProblem.thm2("fc2", d=12, k=3, n_train=40, seed=5),
                               NetworkProblem.fig2("fc3", beta=0.5), NetworkProblem(width=7)])
def test_repr_evals_back(p):
    q = eval(repr(p), {"resnet": problem_module})
    assert repr(q) == repr(p) and q.H.walsh() == p.H.walsh() and np.array_equal(q.X, p.X)


def test_constructors_hold_the_papers_sizes():
    t, f = NetworkProblem.thm2(), NetworkProblem.fig2()
    assert (t.target, t.d, t.k, t.alpha) == ("thm2", 30, 4, 0.3)                                # docs/resnet.md
    assert (f.target, f.d, f.k, f.alpha, f.n_train) == ("fig2", 30, 8, 0.3, 1000)                     # Section 6
    assert t.H.error_G_not_learned == pytest.approx(4 * 0.09) and f.H.error_G_not_learned == pytest.approx(0.72)


def test_archs_are_the_networks_of_resnet_nets():
    assert NETWORK_ARCHS == tuple(resnet_nets.ARCHS)


def test_predict_kernel_error_equals_the_hypercube_functions_and_enumeration():
    """predict's best-ridge error is exact_test_error at that ridge, and the mean over all 2^d test points (1e-10)."""
    p = NetworkProblem(d=10, k=3, n_train=80, seed=2)
    pred = popdyn.predict(p)
    Xall, H = resnet.hypercube_points(p.d), p.H
    for i, name in enumerate(pred.coords["kernel"]):
        kappa = resnet.KERNELS[name](p.d)
        errs = []
        for lam in pred.coords["ridge"]:
            beta = resnet.krr_fit(kappa, p.X, H(p.X), lam)
            errs.append(resnet.exact_test_error(kappa, p.X, beta, H.walsh()))
        j = int(np.argmin([e.sum() for e in errs]))
        assert pred["kernel_ridge"][i] == pred.coords["ridge"][j]
        np.testing.assert_allclose(pred["kernel_error_output"][i], errs[j], rtol=1e-12)
        beta = resnet.krr_fit(kappa, p.X, H(p.X), pred["kernel_ridge"][i])
        f = resnet.kernel_matrix(kappa, Xall, p.X) @ beta
        np.testing.assert_allclose(pred["kernel_error_output"][i], ((H(Xall) - f) ** 2).mean(0), rtol=1e-10)
        chi_G = np.stack([Xall[:, list(S)].prod(1) for S in H.GF_sets], 1)
        np.testing.assert_allclose(pred["kernel_c_G"][i], (f * chi_G).mean(0), atol=1e-12)
    assert pred["G_not_learned"] == pytest.approx(3 * 0.09) and pred["thm2_bound"] == pytest.approx(0.09 / 4)
    assert pred["nothing_learned"] == pytest.approx(3 * (1 + 0.09))


def test_predict_fits_the_points_it_is_given():
    p = NetworkProblem(d=8, k=2, n_train=30)
    X = training_inputs(p)[0]
    assert not np.array_equal(X, p.X)
    a, b = popdyn.predict(p, X=X), popdyn.predict(p)
    assert not np.allclose(a["kernel_error"], b["kernel_error"])
    with pytest.raises(InvalidParameterError, match="'X'"):
        popdyn.predict(p, X=X[:-1])
    with pytest.raises(InvalidParameterError, match="'X'"):
        popdyn.predict(p, X=0.5 * X)
    with pytest.raises(InvalidParameterError, match="'kernels'"):
        popdyn.predict(p, kernels=["rbf"])
    with pytest.raises(InvalidParameterError, match="'ridges'"):
        popdyn.predict(p, ridges=[0.0])


@settings(max_examples=12, deadline=None)
@given(d=st.integers(4, 9), k=st.integers(1, 4), n_train=st.integers(1, 40), seed=st.integers(0, 100))
def test_kernel_error_is_above_lemma_e2_and_sums_its_outputs(d, k, n_train, seed):
    pred = popdyn.predict(NetworkProblem(d=d, k=min(k, d), n_train=n_train, seed=seed))
    assert np.all(pred["kernel_error"] >= pred["lemma_e2"] - 1e-10)
    np.testing.assert_allclose(pred["kernel_error_output"].sum(1), pred["kernel_error"], rtol=1e-12)


def test_training_inputs_are_the_points_train_uses():
    """One full-batch step without momentum or decay from the replayed set moves W exactly as train does."""
    p = NetworkProblem("fc2", d=6, k=2, width=8, n_train=20)
    X = torch.as_tensor(training_inputs(p, seeds=2, seed=3))
    net = resnet_nets.init_net("fc2", p.d, p.k, p.width, seeds=2, seed=3)
    W = net.W.clone().requires_grad_(True)
    Y = torch.as_tensor(p.H(X.reshape(-1, p.d).numpy()).reshape(2, p.n_train, p.k))
    (0.5 * ((net.forward(X, W=W) - Y) ** 2).sum(-1).mean(-1)).sum().backward()
    resnet_nets.train(net, p.H, method="minibatch", N=p.n_train, minibatch=p.n_train, lr=0.1, momentum=0.0,
                      epochs=(1, 0), test=10, records=2, seed=3)
    torch.testing.assert_close(net.W, W.detach() - 0.1 * W.grad, rtol=1e-12, atol=1e-14)


def test_simulate_is_reproducible_by_seed_and_lowers_the_error():
    p = NetworkProblem(d=8, k=2, width=32, n_train=100)
    run = {"epochs": 15, "seeds": 2, "n_test": 1000, "n_points": 3}
    a, b = popdyn.simulate(p, **run), popdyn.simulate(p, **run)
    c = popdyn.simulate(p, **run | {"seed": 1})
    for name in a.observables:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert not np.array_equal(a["test_error"], c["test_error"])
    assert a.t.tolist() == [0.0, 15.0, 30.0] and a.meta["t_unit"] == "epochs" and a.status == 0
    assert np.all(a["test_error"][:, -1] < 0.2 * a["test_error"][:, 0])
    # the per-output errors sum to the total (the same test points)
    np.testing.assert_allclose(a["test_error_output"][:, -1].sum(1), a["test_error"][:, -1], rtol=1e-12)


def test_simulate_online_counts_samples():
    sim = popdyn.simulate(NetworkProblem(d=6, k=2, width=16, n_train=40), protocol="online", weight_decay=0.0,
                          seeds=1, n_test=200, n_points=2)
    assert sim.t.tolist() == [0.0, 40.0] and sim.meta["t_unit"] == "samples"


@pytest.mark.parametrize("option,value", [("seeds", 0), ("n_test", 1), ("n_points", 1), ("device", "tpu")])
def test_simulate_rejects_bad_options(option, value):
    with pytest.raises(InvalidParameterError, match=f"'{option}'"):
        popdyn.simulate(NetworkProblem(d=4, k=2, n_train=5), **{option: value})
