"""popdyn.sim.gradient_features: the written gradients against torch autograd (hinge, base-2 logistic, square loss;
network and NTK linearisation), the symmetric init (g^(0) = 0, mirror identities of the first step), the first step
equal to -eta1 times the sample gradient (no additive W^(0)) and, on a large sample, to the population closed form
within a stated z, the exact uniform-parity first step on the whole hypercube, what each method trains and freezes,
Algorithm 7's preprocessing and bias re-draw, reproducibility, option errors naming the option."""
import math
from itertools import product

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import popdyn  # noqa: E402
from popdyn._validate import InvalidParameterError  # noqa: E402
from popdyn.models.gradient_features import xor_mixture  # noqa: E402
from popdyn.models.gradient_features.multi_index import MultiIndexPolynomial  # noqa: E402
from popdyn.models.gradient_features.parity import UniformParity  # noqa: E402
from popdyn.models.gradient_features import Problem  # noqa: E402
from popdyn.models.gradient_features.framework import first_step, loss_slope, nice_set, opt_frozen  # noqa: E402
from popdyn.sim import gradient_features as sg  # noqa: E402


class Cube(UniformParity):
    """Uniform parity on the WHOLE hypercube {+-1}^d: ``sample`` ignores n and rng and returns all 2^d points, so a
    sample step is the population step exactly."""

    def sample(self, n, rng):
        X = np.array(list(product([-1.0, 1.0], repeat=self.d)))
        return X, np.prod(X[:, self.subset], axis=1)


def quadratic(d):
    """Multi-index target y = He_2(x_0) + x_0 x_1 + 0.5 + x_2 (constant and linear parts for Algorithm 7 to remove)."""
    return MultiIndexPolynomial(np.eye(d)[:3], {(2, 0, 0): math.sqrt(2), (1, 1, 0): 1.0, (0, 0, 0): 0.5,
                                                (0, 0, 1): 1.0})


XOR = xor_mixture(12, 1.5)


def _params(S, M, d, rng):
    """Generic parameters (not symmetric), so that g != 0 and the hinge indicator takes both values."""
    t = lambda *shape, sd=1.0: torch.tensor(sd * rng.standard_normal(shape))
    return t(S, M, sd=2.0), t(S, M, d, sd=0.5), t(S, M, sd=0.5)


def _autograd(X, y, a, W, b, loss, a0=None, W0=None):
    """Gradients of the mean loss by autograd of the network written directly (its linearisation when a0, W0)."""
    a, W = a.clone().requires_grad_(True), W.clone().requires_grad_(True)
    if a0 is None:
        g = (torch.relu(X @ W.mT - b[:, None, :]) * a[:, None, :]).sum(-1)
    else:
        Z0 = X @ W0.mT - b[:, None, :]
        g = (torch.relu(Z0) * a[:, None, :]).sum(-1) + (torch.heaviside(Z0, Z0.new_zeros(())) * a0[:, None, :]
                                                         * (X @ (W - W0).mT)).sum(-1)
    if loss == "hinge":
        L = torch.relu(1 - y * g)
    elif loss == "logistic":
        L = torch.log2(1 + torch.exp(-y * g))
    else:
        L = (g - y) ** 2
    L.mean(1).sum().backward()
    return L.detach().mean(1), a.grad, W.grad


# ---- gradients -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("loss", ["hinge", "logistic", "mse"])
@pytest.mark.parametrize("linear", [False, True])
def test_written_gradients_equal_autograd(loss, linear):
    rng = np.random.default_rng(0)
    S, n, M = 2, 300, 10
    X, y = sg._sample(XOR, S, n, 1, "train", 0, torch.float64, "cpu")
    X = X / math.sqrt(XOR.dim)
    a, W, b = _params(S, M, XOR.dim, rng)
    net = sg._Net(a, W, b, linear)
    if linear:                       # move away from the linearisation point, so both of its terms count
        net.a, net.W = a + 0.3, W + 0.2 * torch.tensor(rng.standard_normal(W.shape))
    L, ga, gW = sg._gradients(net, X, y, loss, chunk=70, want_W=True)
    ref = _autograd(X, y, net.a, net.W, b, loss, *((a, W) if linear else ()))
    if loss == "hinge":
        g = y * net.output(X, *net.features(X))
        assert 0.1 < float((g < 1).double().mean()) < 0.9      # the hinge indicator takes both values
    for got, want in zip((L, ga, gW), ref):
        # 1e-12: the same sums in another order, |terms| <= ~10
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=1e-12)


# ---- the first step ----------------------------------------------------------------------------------------------

def _train_sample(model, sim, n, s=0):
    """The sample (X, y) of step 1 of replicate s of ``sim`` (numpy)."""
    X, y = sg._sample(model, s + 1, n, sim.meta["options"]["seed"], "train", 0, torch.float64, "cpu")
    return X[s].numpy(), y[s].numpy()


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_first_step_is_eta1_lprime0_times_the_sample_gradient_and_keeps_the_mirror_identities(loss):
    m, n = 6, 500
    sim = sg.train(XOR, width=m, method="alg1", steps=1, n_train=n, lr_first=0.3, loss=loss, b_tilde=2.0, sigma_w=0.5,
                   sigma_a=2.0, seeds=2, seed=5, n_test=200)
    for s in range(2):
        X, y = _train_sample(XOR, sim, n, s)
        a0, W0 = sim["a0"][s], sim["W0"][s]
        a1, W1 = first_step(XOR, a0, W0, sim["b0"][s], 0.3, loss, X=X, y=y)     # numpy, popdyn's framework
        g0 = np.maximum(X @ W0.T - sim["b0"][s], 0) @ a0
        assert np.abs(g0).max() < 1e-12                                   # symmetric init: g^(0) = 0
        # 1e-13: no additive W^(0) term survives (the decay factor is exactly 0), values O(1)
        np.testing.assert_allclose(sim["W1"][s], W1, rtol=0, atol=1e-13)
        np.testing.assert_allclose(sim["a1"][s], a1, rtol=0, atol=1e-13)
        W1s = sim["W1"][s]
        np.testing.assert_array_equal(W1s[2 * m:], -W1s[:2 * m])          # w_{i+2m} = -w_i exactly
        np.testing.assert_array_equal(sim["a1"][s][2 * m:], sim["a1"][s][:2 * m])
        Eyx = (y[:, None] * X).mean(0)                                    # w_{i+m} = w_i - eta1 |l'(0)| a_i E^[yx]
        twin = W1s[:m] - 0.3 * loss_slope(loss) * a0[:m, None] * Eyx
        np.testing.assert_allclose(W1s[m:2 * m], twin, rtol=0, atol=1e-13)


@given(m=st.integers(1, 3), d=st.integers(2, 5), loss=st.sampled_from(["hinge", "logistic"]),
       power=st.integers(-4, 4), eta1=st.floats(0.01, 10.0), seed=st.integers(0, 2**20))
def test_first_step_is_invariant_to_the_joint_scale_of_w_and_b(m, d, loss, power, eta1, seed):
    """G(c w, c b) = G(w, b) and A(c w, c b) = c A(w, b) for c > 0 ; c = 2^power makes every
    product exact: the init scales exactly, and the step only sees the rounding residue of g^(0) (~1e-16 c)
    through the logistic l'(y g^(0)), so W^(1) agrees to 1e-13 relative (bitwise for the hinge)."""
    model, c = xor_mixture(d, 1.0), 2.0 ** power
    kw = dict(width=m, method="alg1", steps=1, n_train=64, lr_first=eta1, loss=loss, n_test=1, seed=seed)
    one = sg.train(model, sigma_w=0.7, b_tilde=0.4, **kw)
    scaled = sg.train(model, sigma_w=0.7 * c, b_tilde=0.4 * c, **kw)
    np.testing.assert_array_equal(scaled["W0"], c * one["W0"])
    exact = dict(rtol=0, atol=0) if loss == "hinge" else dict(rtol=1e-13, atol=0)
    np.testing.assert_allclose(scaled["W1"], one["W1"], **exact)
    np.testing.assert_allclose(scaled["a1"], c * one["a1"], **exact)


def test_weight_decay_other_than_one_over_eta1_keeps_the_init():
    """lam1 = 0: W^(1) = W^(0) - eta1 grad, the init is not erased (the test above would fail)."""
    kw = dict(width=3, method="alg1", steps=1, n_train=300, lr_first=0.2, b_tilde=1.0, n_test=50, seed=2)
    erased, kept = sg.train(XOR, **kw), sg.train(XOR, lam1=0.0, **kw)
    np.testing.assert_allclose(kept["W1"] - erased["W1"], kept["W0"], rtol=0, atol=1e-13)


def test_first_step_on_a_large_sample_matches_the_population_closed_form_within_z():
    """Per entry, (W1_sim - W1_pop) / SE is a mean-zero CLT variable: SE from the sample's own variance of
    eta1 a_i y x 1[w.x > b]. 64 neurons x 12 coordinates = 768 z's, all |z| < 4.5 (each fails w.p. 7e-6: < 1% in
    all; measured max 2.9), every neuron active on > 30% of the samples and |G| up to ~0.6, so the check is not
    vacuous; the same check with the factor |l'(0)| dropped for the logistic loss fails (max |z| ~ 25)."""
    m, n, eta1 = 16, 40_000, 0.5
    sim = sg.train(XOR, width=m, method="alg1", steps=1, n_train=n, lr_first=eta1, loss="logistic", b_tilde=1.0,
                   n_test=10)
    a0, W0, b = sim["a0"][0], sim["W0"][0], sim["b0"][0]
    X, y = _train_sample(XOR, sim, n)
    act = (X @ W0.T - b > 0)
    terms = (act * y[:, None])[:, :, None] * X[:, None, :]                 # (n, M, d) samples of y x 1[w.x > b]
    se = eta1 * loss_slope("logistic") * np.abs(a0)[:, None] * terms.std(0) / math.sqrt(n)
    G = XOR.simplified_gradient(W0, b)                                     # closed form (docs/gradient_features.md)
    pred = eta1 * loss_slope("logistic") * a0[:, None] * G
    z = (sim["W1"][0] - pred) / se
    assert np.abs(z).max() < 4.5
    assert np.abs(G).max() > 0.5 and act.mean(0).min() > 0.3
    wrong = eta1 * a0[:, None] * G                              # |l'(0)| = 1 instead of 1/(2 ln 2)
    assert np.abs((sim["W1"][0] - wrong) / se).max() > 10


def test_uniform_parity_first_step_on_the_whole_cube_is_the_exact_majority_formula():
    """Algorithm 6 with the B.479 init on all 2^9 points of {+-1}^9 (k = 4): W1 = eta1 a_i G(w_i, b_i) and
    a1 = eta1 A(w_i, b_i) with UniformParity's exact G (factor 1/2 restored, docs/errata.md), eta1 = 1/(k |xi_3|); the
    paper's B.548-B.549 as printed (no 1/2) fail."""
    cube = Cube(9, 4)
    sim = sg.train(cube, width=20, method="alg6", steps=1, n_train=1, n_test=1, seed=3)
    a0, W0, b = sim["a0"][0], sim["W0"][0], sim["b0"][0]
    assert set(np.unique(W0)) == {-1.0, 1.0} and set(np.unique(a0)) <= {-1.0, 1.0}
    assert np.all(np.isin(np.round(b * 4), np.arange(-3, 4))) and np.abs(b).max() < 1
    eta1 = 1 / (4 * abs(cube.xi(3)))
    assert sim.meta["options"]["lr_first"] == pytest.approx(eta1, rel=1e-15)
    # 1e-12 on entries of size <= 1/8 x 4 (eta1 G_j = +-1/8 in A): means over 512 exact +-1 products
    np.testing.assert_allclose(sim["W1"][0], eta1 * a0[:, None] * cube.simplified_gradient(W0, b), rtol=0, atol=1e-12)
    np.testing.assert_allclose(sim["a1"][0], eta1 * cube.A(W0, b), rtol=0, atol=1e-12)
    paper = eta1 * a0[:, None] * cube.simplified_gradient(W0, b, convention="paper")
    assert np.abs(sim["W1"][0] - paper).max() > 0.1


def test_uniform_parity_first_step_on_a_sample_matches_the_exact_gradient_within_z():
    """d = 11, k = 4, n = 40000 uniform samples: per entry, (W1 - eta1 a G) / SE with SE = eta1 sqrt(Var(y x_j
    1[w.x > b]) / n) from the sample; 40 x 11 = 440 z's, all |z| < 4.5 (each fails w.p. 7e-6; measured 2.7). The
    paper's printed G (no 1/2) gives max |z| ~ 12, G = 0 gives ~ 6.5: at d = 31 and this n the signal
    eta1 G_j = 1/8 is below one SE and the check would not discriminate."""
    up, n = UniformParity(11, 4), 40_000
    sim = sg.train(up, width=10, method="alg6", steps=1, n_train=n, n_test=1, seed=1)
    a0, W0, b = sim["a0"][0], sim["W0"][0], sim["b0"][0]
    X, y = _train_sample(up, sim, n)
    act = (X @ W0.T - b > 0)
    terms = (act * y[:, None])[:, :, None] * X[:, None, :]
    eta1 = sim.meta["options"]["lr_first"]
    se = eta1 * terms.std(0) / math.sqrt(n)
    z = (sim["W1"][0] - eta1 * a0[:, None] * up.simplified_gradient(W0, b)) / se
    assert np.abs(z).max() < 4.5
    paper = eta1 * a0[:, None] * up.simplified_gradient(W0, b, convention="paper")
    assert np.abs((sim["W1"][0] - paper) / se).max() > 8


# ---- what each method trains ------------------------------------------------------------------------------------

@pytest.mark.parametrize("method", list(sg.METHODS))
def test_every_method_runs_and_freezes_what_it_should(method):
    model = quadratic(6) if method == "alg7" else (Cube(5, 2) if method == "alg6" else xor_mixture(6, 1.0))
    kw = {} if method in ("alg6", "alg7") else {"b_tilde": 1.0}
    sim = sg.train(model, width=3, method=method, steps=4, n_train=64, lr_first=0.1, lr=0.01, seeds=2, n_test=64, **kw)
    assert sim.success and sim.t.tolist() == [0, 1, 2, 3, 4]
    assert sim["loss"].shape == sim["error"].shape == sim["train_loss"].shape == (2, 5)
    assert sim["a_t"].shape == (2, 5, 12)
    np.testing.assert_array_equal(sim["a_t"][:, -1], sim["aT"])
    step1 = sg.METHODS[method].step1 is not None
    trains_W_later = "W" in sg.METHODS[method].layers
    first = sim["W1"] if step1 else sim["W0"]
    assert np.array_equal(sim["WT"], first) != trains_W_later
    assert not np.array_equal(sim["aT"], sim["a1"] if step1 else sim["a0"])
    if step1:
        assert not np.array_equal(sim["W1"], sim["W0"])


def test_alg4_descends_its_training_loss_and_cached_features_change_nothing():
    kw = dict(width=4, method="alg4", steps=30, n_train=400, lr_first=0.5, lr=0.05, b_tilde=1.0, seeds=2, n_test=100,
              n_points=31)
    sim = sg.train(XOR, **kw)
    cached = sg.train(XOR, chunk=150, **kw)
    assert np.all(np.diff(sim["train_loss"][:, 1:], axis=1) <= 1e-12)        # GD on a convex loss, small eta
    np.testing.assert_allclose(cached["aT"], sim["aT"], rtol=0, atol=1e-12)


def test_alg4_average_loss_obeys_the_subgradient_bound_against_the_frozen_optimum():
    """Theorem B.2's core (B.12) for the non-smooth hinge: K = T - 1 GD steps on the fixed sample give
    (1/K) sum_{t<T} L(a_t) - OPT_{W1,b,R} <= ||a_1 - a*_R||^2 / (2 eta K) + eta Gmax^2 / 2 with
    Gmax = E^||relu(W1 x - b)|| >= every subgradient norm and a*_R from ``opt_frozen`` (R = 1). Measured: gap/bound
    0.07; a never updated (gap L(a_1) - OPT) would be 3.6 times the bound, so the check discriminates."""
    n, T, eta = 100, 400, 0.01
    sim = sg.train(XOR, width=4, method="alg4", steps=T, n_train=n, lr_first=0.5, lr=eta, b_tilde=1.0, n_test=10,
                   n_points=T + 1, seed=4)
    X, y = _train_sample(XOR, sim, n)
    W1, b = sim["W1"][0], sim["b1"][0]
    a_star, opt, _ = opt_frozen(X, y, W1, b, B_a2=1.0)
    gmax = np.linalg.norm(np.maximum(X @ W1.T - b, 0), axis=1).mean()
    bound = np.sum((sim["a1"][0] - a_star) ** 2) / (2 * eta * (T - 1)) + eta * gmax**2 / 2
    assert sim["train_loss"][0, 1:T].mean() - opt <= bound < sim["train_loss"][0, 1] - opt


def test_alg7_removes_constant_and_linear_parts_and_redraws_the_biases():
    model, n, eta1 = quadratic(8), 2000, 0.7
    sim = sg.train(model, width=5, method="alg7", steps=1, n_train=n, lr_first=eta1, n_test=10, seed=4)
    X, y = _train_sample(model, sim, n)
    yc = y - y.mean() - X @ (y[:, None] * X).mean(0)
    a0, W0 = sim["a0"][0], sim["W0"][0]
    assert np.all(sim["b0"] == 0) and np.all(np.abs(a0) == 1)
    np.testing.assert_array_equal(sim["a1"], sim["a0"])                        # a is not updated at step 1
    W1 = 2 * eta1 * a0[:, None] * (((X @ W0.T > 0) * yc[:, None]).T @ X) / n   # square loss: l' = 2(g - y)
    np.testing.assert_allclose(sim["W1"][0], W1, rtol=0, atol=1e-12)
    b1 = sim["b1"][0]
    # re-drawn i.i.d. N(0, 1): 20 draws, mean within 4 SE of 0 and SD in the 1e-4..1-1e-4 chi^2_19 range
    assert abs(b1.mean()) < 4 / math.sqrt(b1.size) and 0.45 < b1.std(ddof=1) < 1.64


def test_alg7_first_step_matches_the_hermite_closed_form_within_z():
    """Algorithm 7 on a degree-2 two-index target plus constant and linear parts (d = 8, n = 40000): W1 against
    2 eta1 a_i G(w_i, 0) of the population-preprocessed labels (MultiIndexPolynomial). The sample
    centering y - rho^ - beta^.x is part of the estimator, so SE comes from its influence function
    psi = y_c x 1 - (y - rho) E^[x 1] - E^[x x^T 1](y x - beta); 160 z's, all |z| < 4.5 (measured 2.5, mean z^2
    0.96). Without the preprocessing (max |z| ~ 50) or without the factor 2 of the square loss (~ 25) it fails."""
    rng = np.random.default_rng(0)
    d, n, eta1 = 8, 40_000, 0.7
    U = np.linalg.qr(rng.standard_normal((d, 2)))[0].T
    terms = {(2, 0): 0.6, (1, 1): 0.5, (0, 2): -0.4, (1, 0): 0.3, (0, 0): 0.2}
    model, centred = MultiIndexPolynomial(U, terms), MultiIndexPolynomial(U, terms, preprocess=True)
    sim = sg.train(model, width=5, method="alg7", steps=1, n_train=n, lr_first=eta1, n_test=10, seed=2)
    a0, W0 = sim["a0"][0], sim["W0"][0]
    X, y = _train_sample(model, sim, n)
    act = (X @ W0.T > 0).astype(float)
    yc = y - y.mean() - X @ (y[:, None] * X).mean(0)
    m1, M2 = act.T @ X / n, np.einsum("nm,ni,nj->mij", act, X, X) / n
    psi = ((act * yc[:, None])[:, :, None] * X[:, None, :] - (y - model.rho)[:, None, None] * m1
           - np.einsum("mij,nj->nmi", M2, y[:, None] * X - model.beta))
    se = 2 * eta1 * np.abs(a0)[:, None] * psi.std(0) / math.sqrt(n)
    G = centred.first_step_direction(W0)
    assert np.abs((sim["W1"][0] - 2 * eta1 * a0[:, None] * G) / se).max() < 4.5
    assert np.abs((sim["W1"][0] - 2 * eta1 * a0[:, None] * model.first_step_direction(W0)) / se).max() > 10
    assert np.abs((sim["W1"][0] - eta1 * a0[:, None] * G) / se).max() > 10


def test_mask_removes_the_other_neurons_after_the_first_step():
    mask = np.zeros(16, bool)
    mask[[0, 5, 9]] = True
    sim = sg.train(XOR, width=4, method="alg4", steps=5, n_train=100, lr_first=0.5, lr=0.05, b_tilde=1.0, mask=mask,
                   n_test=20)
    assert np.all(sim["aT"][0, ~mask] == 0) and np.all(sim["aT"][0, mask] != 0)
    assert np.any(sim["a1"][0, ~mask] != 0)                                  # a^(1) is recorded before the mask


# ---- reproducibility ---------------------------------------------------------------------------------------------

def test_same_seed_same_numbers_other_seed_other_numbers_and_replicates_are_separate_runs():
    kw = dict(width=3, method="alg1", steps=3, n_train=100, lr_first=0.3, lr=0.1, b_tilde=1.0, n_test=50)
    a, b = sg.train(XOR, seeds=2, seed=7, **kw), sg.train(XOR, seeds=2, seed=7, **kw)
    for k in a.observables:
        np.testing.assert_array_equal(a[k], b[k])
    other = sg.train(XOR, seeds=2, seed=8, **kw)
    assert not np.array_equal(a["W1"], other["W1"])
    alone = sg.train(XOR, seeds=1, seed=7, **kw)                               # replicate 0 of a batched run
    np.testing.assert_allclose(alone["loss"][0], a["loss"][0], rtol=0, atol=1e-13)
    assert not np.array_equal(a["W0"][0], a["W0"][1])


def test_float32_follows_float64():
    kw = dict(width=4, method="alg1", steps=5, n_train=300, lr_first=0.5, lr=0.05, b_tilde=1.0, n_test=300, seed=1)
    lo, hi = sg.train(XOR, dtype="float32", **kw), sg.train(XOR, **kw)
    assert lo.meta["dtype"] == "float32" and hi.meta["dtype"] == "float64"
    # float32 rounding (6e-8 relative) over sums of 300 terms and 5 steps, entries O(1)
    np.testing.assert_allclose(lo["W1"], hi["W1"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(lo["loss"], hi["loss"], rtol=0, atol=1e-5)


def test_fixed_init_is_shared_by_every_seed():
    one = sg.train(XOR, width=2, method="alg1", steps=1, n_train=50, lr_first=0.3, b_tilde=1.0, n_test=10)
    init = (one["a0"][0], one["W0"][0], one["b0"][0])
    sim = sg.train(XOR, width=2, method="alg1", steps=1, n_train=50, lr_first=0.3, init=init, seeds=3, n_test=10)
    assert all(np.array_equal(sim["W0"][s], init[1]) for s in range(3))
    np.testing.assert_array_equal(sim["W1"][0], one["W1"][0])


# ---- popdyn.simulate -----------------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::popdyn._validate.RegimeWarning")   # the bounds' regime fails at toy sizes
@pytest.mark.parametrize("problem", [Problem.xor(d=16, width=8), Problem.uniform_parity(d=11, k=4, width=8),
                                     Problem.structured_parity(d=12, width=8)], ids=["xor", "uniform", "structured"])
def test_simulate_is_the_sample_step_from_predicts_init_with_predicts_names(problem):
    """popdyn.simulate: every seed starts at problem.params0; its W1 is framework.first_step on that seed's sample
    (1e-12), nice_fraction is nice_set of that W1, the names shared with predict are compared, and the gap to the
    population step shrinks like n^{-1/2} (x 10 from n = 500 to 50000; checked > x 4)."""
    pred = popdyn.predict(problem, n_train=100, n_mc=100, n_test=500)
    a0, W0, b = problem.params0
    gaps = []
    for n in (500, 50_000):
        sim = popdyn.simulate(problem, n_train=n, seeds=2, seed=1, n_test=10)
        assert sim.t is None and sim.coords["step"].tolist() == [0, 1]
        for s in range(2):
            np.testing.assert_array_equal(sim["W0"][s], W0)
            X, y = _train_sample(problem.model, sim, n, s)
            a1, W1 = first_step(problem.model, a0, W0, b, problem.step_size, problem.loss, X=X, y=y)
            np.testing.assert_allclose(sim["W1"][s], W1, rtol=0, atol=1e-12 * max(1.0, np.abs(W1).max()))
            np.testing.assert_allclose(sim["a1"][s], a1, rtol=0, atol=1e-12 * max(1.0, np.abs(a1).max()))
            gamma, B_G, norm, _ = problem.cone
            nice = [len(nice_set(sim["W1"][s], a0, b, D, sign, gamma, B_G, problem.step_size, problem.loss, norm))
                    for D, sign in zip(*problem.features)]
            np.testing.assert_array_equal(sim["nice_fraction"][s], np.array(nice) / problem.width)
        cmp = popdyn.compare(pred, sim)
        assert {"a1", "W1", "cos_features", "nice_fraction"} <= set(cmp.metrics)
        gaps.append(np.abs(sim["W1"] - pred["W1"]).max())
    assert gaps[1] < gaps[0] / 4


# ---- options -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, value", [("width", 0), ("method", "alg2"), ("steps", -1), ("n_train", 0),
                                         ("lr_first", -1.0), ("loss", "square"), ("b_tilde", 0.0), ("sigma_w", -1.0), ("seeds", 0),
                                         ("init", "uniform"), ("dtype", "float16"), ("device", "tpu"),
                                         ("mask", np.ones(3, bool)), ("fresh", "yes"), ("lam1", -0.1)])
def test_bad_options_name_the_option(name, value):
    kw = dict(width=2, method="alg1", steps=2, n_train=10, lr_first=0.1, lr=0.1, b_tilde=1.0, n_test=10) | {name: value}
    with pytest.raises(InvalidParameterError, match=repr(name)):
        sg.train(XOR, **kw)


def test_missing_step_sizes_and_wrong_losses_are_named():
    with pytest.raises(InvalidParameterError, match="'lr_first'"):
        sg.train(XOR, width=2, steps=1, n_train=10, b_tilde=1.0)
    with pytest.raises(InvalidParameterError, match="'lr'"):
        sg.train(XOR, width=2, steps=2, n_train=10, lr_first=0.1, b_tilde=1.0)
    with pytest.raises(InvalidParameterError, match="'loss'"):
        sg.train(quadratic(4), width=2, method="alg7", steps=1, n_train=10, lr_first=0.1, loss="hinge")
    with pytest.raises(InvalidParameterError, match="'init\\[1\\] \\(W0\\)'"):
        sg.train(XOR, width=2, steps=1, n_train=10, lr_first=0.1, init=(np.ones(8), np.ones((8, 3)), np.ones(8)))


@pytest.mark.filterwarnings("ignore::popdyn._validate.RegimeWarning")
def test_simulate_with_random_inits_gives_the_binomial_nice_fraction_of_predicts_p():
    """init="random": a fresh init (3.9) per seed at the problem's scales; the nice count over 40 seeds x m = 32 is
    Binomial(1280, p/2) (Lemma B.5) with p from predict's feature_probability (20000 draws): per feature
    z = (mean - p^/2) / sqrt(q(1-q)/1280 + p^(1-p^)/(4 * 20000)) within 4 (measured |z| <= 1.9; the sample step at
    n = 5000 moves only neurons at the cone and norm thresholds); p instead of p/2 fails (z ~ -7)."""
    problem = Problem.xor(d=16, width=32)
    pred = popdyn.predict(problem, n_train=100, n_mc=20_000, n_test=500)
    sim = popdyn.simulate(problem, n_train=5000, seeds=40, init="random", n_test=10)
    assert len({w.tobytes() for w in sim["W0"]}) == 40 and np.all(np.abs(sim["b0"]) == problem.b_tilde)
    N, p = 40 * problem.width, pred["p_hat"]
    se = np.sqrt(p / 2 * (1 - p / 2) / N + p * (1 - p) / (4 * 20_000))
    nice = sim["nice_fraction"].mean(0)
    assert np.all(np.abs(nice - p / 2) < 4 * se) and np.all(np.abs(nice - p) > 4 * se)


def test_simulate_random_inits_of_uniform_parity_follow_b479():
    sim = popdyn.simulate(Problem.uniform_parity(d=11, k=4, width=8), n_train=64, seeds=3, init="random", n_test=10)
    assert set(np.unique(sim["W0"])) == {-1.0, 1.0} and set(np.unique(sim["a0"])) == {-1.0, 1.0}
    assert np.all(np.isin(np.round(sim["b0"] * 4), np.arange(-3, 4))) and not np.array_equal(*sim["W0"][:2])


@pytest.mark.parametrize("name, value", [("method", "alg7"), ("steps", 0), ("n_train", 0), ("seeds", 0)])
def test_simulate_rejects_bad_options(name, value):
    with pytest.raises(InvalidParameterError, match=repr(name)):
        popdyn.simulate(Problem.xor(d=8, width=2), **{name: value})
    with pytest.raises(InvalidParameterError, match="'lr'"):
        popdyn.simulate(Problem.xor(d=8, width=2), steps=3)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_cpu():
    kw = dict(width=8, method="alg1", steps=5, n_train=500, lr_first=0.3, lr=0.05, b_tilde=1.0, seeds=2, n_test=300)
    cpu, gpu = sg.train(XOR, **kw), sg.train(XOR, device="cuda", **kw)
    for k in ("W1", "a1", "aT", "WT", "loss"):
        np.testing.assert_allclose(gpu[k], cpu[k], rtol=1e-9, atol=1e-12)
