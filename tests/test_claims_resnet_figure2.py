"""Falsification tests of the Figure 2 claims: the true plateau and a trained ResNet pass; a wrong plateau
constant, a ResNet whose second block stays at init, or no training at all FAIL."""
import numpy as np
import pytest

from popdyn.models.resnet import fig2_target
from popdyn.models.resnet.targets import CompositionTarget
from popdyn.sim.resnet import networks as resnet_nets

from .falsify import falsifies, memoise, run_claim

#: the claims at a size that runs in seconds (one training per method; one kernel)
_FIG2 = {"N": [2000], "m": 300, "m_fc3": 100, "epochs": [30, 5], "lr": {"resnet": [0.5], "fc3": [0.5], "fc2": [0.5]},
         "wd": 0.0, "kernels": ["relu_nngp"], "lam": [1e-4], "records": 41, "test": 2000}
_BETA = {"beta": [1.0, 0.2], "N": 2000, "m": 300, "epochs": [30, 5], "lr": [0.5], "wd": 0.0, "records": 11,
         "test": 2000}
_TRAIN = "popdyn.validation.claims.resnet_figure2._train"
_KERNELS = "popdyn.validation.claims.resnet_figure2._kernel_errors"


def _key(a):
    """Memo key: an array by its bytes (its repr is truncated), anything else by its repr."""
    return (a.shape, a.tobytes()) if isinstance(a, np.ndarray) else repr(a)


def _memo(monkeypatch):
    """One training (and one exact kernel fit) per configuration across the tests: the theory does not change them."""
    memoise(monkeypatch, _TRAIN)
    memoise(monkeypatch, _KERNELS, key=_key)


def _plateau(monkeypatch, factor):
    """A wrong 'G not learned' plateau: k alpha^2 times ``factor``."""
    true = CompositionTarget.error_G_not_learned
    monkeypatch.setattr(CompositionTarget, "error_G_not_learned", property(lambda self: factor * true.fget(self)))


# wrong plateau constants: 1/4 is the printed G's (k/q) alpha^2 = 0.18 (two outputs) applied to the cyclic target,
# so the ResNet's ~0.27 is far above it (measured ~1.5 > 1); 2 k alpha^2 = 1.44 is above the 2-layer net's ~0.96, so
# that check fails. True: measured ~0.37 (0.27 / 0.72), every check holds.
@pytest.mark.slow
@falsifies("resnet.figure2")
@pytest.mark.parametrize("factor", [1.0, 0.25, 2.0])
def test_figure2_fails_a_wrong_plateau(factor, monkeypatch, tmp_path):
    _memo(monkeypatch)
    if factor != 1.0:
        _plateau(monkeypatch, factor)
    verdict, res = run_claim("resnet.figure2", tmp_path, **_FIG2)
    assert verdict == ("PASS" if factor == 1.0 else "FAIL"), (res.measured, res.checks, res.message)
    if factor == 0.25:
        assert res.measured > 1.0
    if factor == 2.0:
        assert not res.checks["2layer error >= k alpha^2 at every N"]


# broken mechanisms: the second block V left at its init (only W trained: the ResNet is a 2-layer net plus fixed random
# features of out1, error ~0.95 > 0.72) and no training (lr 1e-9: the init's error ~14).
@falsifies("resnet.figure2")
@pytest.mark.parametrize("broken", ["V at init", "lr 1e-9"])
def test_figure2_fails_a_broken_training(broken, monkeypatch, tmp_path):
    _memo(monkeypatch)
    size = dict(_FIG2)
    if broken == "V at init":
        monkeypatch.setattr(resnet_nets.Net, "params", property(lambda self: {"W": self.W}))
        size["m"] = 301          # another key for the memo: this ResNet is not the true one
    else:
        size["lr"] = {"resnet": [1e-9], "fc3": [0.5], "fc2": [0.5]}
    verdict, res = run_claim("resnet.figure2", tmp_path, **size)
    assert verdict == "FAIL" and res.measured > 1.0, (res.measured, res.checks, res.message)


# panel (c) at a size that runs in seconds: beta = 1 judged (ratio ~0.37), beta = 0.2 (alpha/beta = 1.5) reported; the
# (k/q) alpha^2 plateau or no training fail. The edge alpha/beta = 1 is measured at the quick and full sizes.
@falsifies("resnet.figure2_beta")
@pytest.mark.parametrize("wrong", [None, "plateau / 4", "lr 1e-9"])
def test_figure2_beta_fails_a_wrong_plateau_or_no_training(wrong, monkeypatch, tmp_path):
    _memo(monkeypatch)
    size = dict(_BETA)
    if wrong == "plateau / 4":
        _plateau(monkeypatch, 0.25)
    elif wrong == "lr 1e-9":
        size["lr"], size["beta"] = [1e-9], [1.0]
    verdict, res = run_claim("resnet.figure2_beta", tmp_path, **size)
    assert verdict == ("PASS" if wrong is None else "FAIL"), (res.measured, res.checks, res.message)


def test_training_set_is_the_one_train_draws(monkeypatch):
    """The exact kernels are fitted on the networks' own training set: the claim's copy equals train's draw."""
    from popdyn.validation.claims import resnet_figure2
    seen = []
    true = resnet_nets._evaluate

    def spy(walsh, X):
        seen.append(X.detach().clone().numpy())
        return true(walsh, X)

    monkeypatch.setattr(resnet_nets, "_evaluate", spy)
    net = resnet_nets.init_net("resnet", 30, 8, 8, seeds=2, seed=0)
    resnet_nets.train(net, fig2_target(), method="minibatch", N=60, epochs=(1, 0), test=10, records=2, seed=3)
    (Xtr,) = [X for X in seen if X.shape == (2, 60, 30)]
    np.testing.assert_array_equal(Xtr, resnet_figure2._training_set(60, 30, 2, 3))


def test_parallel_runs_equal_the_serial_ones():
    """The runs of the lr grid give the same numbers on two processes (the GPU path) as one after another, and the
    best lr is picked per case."""
    from popdyn.validation.claims import resnet_figure2
    size = {"m": 40, "m_fc3": 20, "epochs": [2, 1], "lr": {"resnet": [0.5, 1e-9], "fc2": [0.5]}, "wd": 0.0,
            "seeds": 1, "seed": 0, "test": 300, "records": 3}
    cases = [("resnet", fig2_target(), 100), ("fc2", fig2_target(), 100)]
    serial = resnet_figure2._best_runs(cases, size, "cpu", processes=1)
    parallel = resnet_figure2._best_runs(cases, size, "cpu", processes=2)
    assert [lrs for _, lrs, _, _ in serial] == [[0.5], [0.5]]
    for (a, lr_a, e_a, g_a), (b, lr_b, e_b, g_b) in zip(serial, parallel):
        assert lr_a == lr_b and e_a == e_b and g_a == g_b
        np.testing.assert_array_equal(a["test_error"], b["test_error"])


def test_each_seed_gets_its_own_lr(monkeypatch):
    """A seed that diverges at an lr costs that lr only for itself: with final errors (0.3, 0.5) at lr 0.5 and
    (0.2, diverged) at lr 1, seed 0 takes lr 1 and seed 1 lr 0.5 (mean 0.35; the whole-run rule gave lr 0.5, 0.4),
    and the returned Simulation holds each seed's own run."""
    from popdyn.results import Simulation
    from popdyn.validation.claims import resnet_figure2
    finals = {0.5: [0.3, 0.5], 1.0: [0.2, np.nan]}

    def fake(arch, target, N, size, lr, device):
        e = np.array([[1.0, f] for f in finals[lr]])
        return Simulation(t=[0.0, 1.0], observables={"test_error": e, "c_G": e + lr}, status=int(np.isnan(e).any()))

    monkeypatch.setattr(resnet_figure2, "_train", fake)
    ((sim, lrs, err, lr_errors),) = resnet_figure2._best_runs([("resnet", None, 10)], {"lr": {"resnet": [0.5, 1.0]}},
                                                               "cpu")
    assert lrs == [1.0, 0.5] and err == pytest.approx(0.35) and sim.status == 0
    assert lr_errors == {"0.5": [0.3, 0.5], "1": [0.2, np.inf]}
    np.testing.assert_array_equal(sim["c_G"][:, -1], [1.2, 1.0])
    np.testing.assert_array_equal(sim.meta["lr"], [1.0, 0.5])
