"""popdyn.sim.lora: one SGD step against a plain numpy version of the algorithm, the drift against the
population recursion, the online loss against population_loss, reproducibility, validation."""
import numpy as np
import pytest
import scipy.linalg
from hypothesis import given
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import popdyn  # noqa: E402
from popdyn import activations  # noqa: E402
from popdyn._validate import InvalidParameterError  # noqa: E402
from popdyn.models import lora  # noqa: E402
from popdyn.sim import _torch  # noqa: E402
from popdyn.sim import lora as sim_lora  # noqa: E402

G_CORR = np.array([[1, .3, -.2, .1], [.3, 1, .25, -.4], [-.2, .25, 1, .05], [.1, -.4, .05, 1]])  # the golden-value Gram
G_RANK2 = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])  # w_1 = w_2: rank 2


def _problem(G, act="relu", normalisation="N1", seed=0, quantised=True):
    k = G.shape[0]
    rng = np.random.default_rng(seed)
    lam = rng.uniform(0.5, 1.5, k) * rng.choice([-1.0, 1.0], k)
    if quantised:
        c, c_hat = rng.choice([-1.0, 1.0], size=(2, k)) / np.sqrt(k)
    else:
        c, c_hat = rng.standard_normal((2, k))
        c, c_hat = c / np.linalg.norm(c), c_hat / np.linalg.norm(c_hat)
    return lora.Problem(G, lam, c, c_hat, 1.3, act, normalisation)


def _numpy_step(problem, W, u, U, X, eta, s, ds, c_hat=None):
    """Spec A.3 for one step, per-neuron norms: QR/SVD projector on span(W)^perp, then on u_hat^perp."""
    xi, lam, c = problem.xi, problem.lam, problem.c
    c_hat = problem.c_hat if c_hat is None else c_hat
    n1 = problem.normalisation == "N1"
    r = np.sqrt(1 + xi**2 * c**2) if n1 else np.ones_like(c)
    rh = np.sqrt(1 + xi**2 * c_hat**2) if n1 else np.ones_like(c)
    Q = scipy.linalg.orth(W.T)                              # orthonormal basis of span W (any rank)
    V = (W + xi * np.outer(c, u)) / r[:, None]
    Vh = (W + xi * np.outer(c_hat, U)) / rh[:, None]
    res = s(X @ V.T) @ lam - s(X @ Vh.T) @ lam              # (B,)
    g = ((-2 * res * (ds(X @ Vh.T) @ (lam * xi * c_hat / rh)))[:, None] * X).mean(0)
    g -= Q @ (Q.T @ g)
    g -= (g @ U) * U
    Un = U - eta * g
    return Un / np.linalg.norm(Un), res


def _setup(problem, d, seeds, seed=0):
    opts = sim_lora._check(problem, d, 0.1, 5, 0.3, seeds, 1, False, None, seed)
    gen = _torch.make_generator(seed, torch.device("cpu"))
    consts, state, q = sim_lora._init(problem, opts, torch.device("cpu"), torch.float64, gen)
    W = np.zeros((problem.k, d))
    W[:, :q] = sim_lora._factor(problem.G)
    return consts, state, q, W, np.eye(d)[q]


def _full(U, q):
    """u_hat of shape (S, 1, n) or (S, n) in span(W)^perp coordinates, as (S, d) in the full frame."""
    U = U.reshape(U.shape[0], -1)
    return np.concatenate([np.zeros((U.shape[0], q)), U], axis=1)


@pytest.mark.parametrize("G", [np.eye(4), G_CORR, G_RANK2], ids=["orth", "corr", "rank2"])
def test_factor_reproduces_gram_and_rank(G):
    F = sim_lora._factor(G)
    assert F.shape[1] == np.linalg.matrix_rank(G)
    np.testing.assert_allclose(F @ F.T, G, atol=1e-13)  # 1e-13: eigh reconstruction of a unit-diagonal Gram, k <= 4


@pytest.mark.parametrize("G,act,normalisation,batch", [
    (np.eye(4), "relu", "N1", 1), (G_CORR, "tanh", "N1", 3), (G_RANK2, "erf", "N1", 2),
    (G_CORR, "relu", "N0", 1), (np.eye(4), "he3", "N0", 2)])
def test_one_step_matches_numpy_reference(G, act, normalisation, batch):
    p = _problem(G, act, normalisation)
    d, S, eta = 11, 3, 0.07
    consts, state, q, W, u = _setup(p, d, S)
    U0 = _full(state.U.numpy().copy(), q)
    X = np.random.default_rng(5).standard_normal((S, batch, d))
    Xt = torch.tensor(X)
    fstar, Wx = sim_lora._teacher(consts, Xt, q)
    res = sim_lora._sgd_step(consts, state, Xt[..., q:], Wx * state.scale, fstar, eta)
    a = activations.get(act)
    for i in range(S):
        U1, res_ref = _numpy_step(p, W, u, U0[i], X[i], eta, a, a.deriv)
        # 1e-12: float64, d = 11, one step through two different projection formulas
        np.testing.assert_allclose(_full(state.U.numpy(), q)[i], U1, atol=1e-12)
        np.testing.assert_allclose(res[i, :, 0].numpy(), res_ref, atol=1e-12)


def test_projected_gradient_orthogonal_to_u_hat_and_span_w():
    p = _problem(G_CORR, "tanh")
    d, S, B = 13, 4, 3
    consts, state, q, W, u = _setup(p, d, S)
    rng = np.random.default_rng(1)
    X, coef = torch.tensor(rng.standard_normal((S, B, d))), torch.tensor(rng.standard_normal((S, B, 1)))
    U = state.U
    b = torch.bmm(X[..., q:], U.mT)
    g = _full(sim_lora._projected_gradient(U, X[..., q:], coef, b)[:, 0].numpy(), q)
    Uf = _full(state.U.numpy(), q)
    scale = np.abs(g).max()
    assert np.abs(np.einsum("sd,sd->s", g, Uf)).max() < 1e-13 * scale   # 1e-13: float64 dot products, d = 13
    assert np.abs(g @ W.T).max() < 1e-13 * scale
    raw = np.einsum("sb,sbd->sd", coef[..., 0].numpy(), X.numpy())
    Q = scipy.linalg.orth(W.T)
    ref = raw - raw @ Q @ Q.T
    ref -= np.einsum("sd,sd->s", ref, Uf)[:, None] * Uf
    np.testing.assert_allclose(g, ref, atol=1e-12 * scale)  # 1e-12: same, through a different projector


def test_u_hat_stays_unit_and_in_span_w_perp():
    p = _problem(G_CORR, "relu")
    d, S = 20, 5
    consts, state, q, _, _ = _setup(p, d, S)
    rng = np.random.default_rng(2)
    for _ in range(50):
        X = torch.tensor(rng.standard_normal((S, 2, d)))
        fstar, Wx = sim_lora._teacher(consts, X, q)
        sim_lora._sgd_step(consts, state, X[..., q:], Wx * state.scale, fstar, 0.3)
    # 1e-13: renormalised every step in float64; the error does not accumulate
    np.testing.assert_allclose(torch.linalg.vector_norm(state.U, dim=-1).numpy(), 1.0, atol=1e-13)
    assert state.U.shape == (S, 1, d - q)   # u_hat has no coordinates in span W at all


def test_joint_c_hat_step_is_the_gradient_of_the_sample_loss():
    p = _problem(G_CORR, "tanh", quantised=False)
    d, S, B, lr_c = 9, 2, 3, 0.05
    consts, state, q, W, u = _setup(p, d, S)
    U0, c0 = _full(state.U.numpy().copy(), q), state.c_hat[:, 0].numpy().copy()
    X = np.random.default_rng(3).standard_normal((S, B, d))
    Xt = torch.tensor(X)
    fstar, Wx = sim_lora._teacher(consts, Xt, q)
    sim_lora._sgd_step(consts, state, Xt[..., q:], Wx * state.scale, fstar, 0.1, lr_c)
    a = activations.get("tanh")

    def loss(i, ch):
        return np.mean(_numpy_step(p, W, u, U0[i], X[i], 0.0, a, a.deriv, c_hat=ch)[1] ** 2)

    eps = 1e-5
    for i in range(S):
        fd = np.array([(loss(i, c0[i] + eps * e) - loss(i, c0[i] - eps * e)) / (2 * eps) for e in np.eye(p.k)])
        step = (c0[i] - state.c_hat[i, 0].numpy()) / lr_c
        # 1e-7: central difference, eps = 1e-5: truncation eps^2 |L'''| ~ 1e-9, rounding 1e-16/eps ~ 1e-11
        np.testing.assert_allclose(step, fd, rtol=1e-7, atol=1e-9)
        U1, _ = _numpy_step(p, W, u, U0[i], X[i], 0.1, a, a.deriv, c_hat=c0[i])
        np.testing.assert_allclose(_full(state.U.numpy(), q)[i], U1, atol=1e-12)  # 1e-12: as the one-step test


@pytest.mark.parametrize("m0", [0.0, -0.5])
def test_mean_drift_follows_population_recursion(m0):
    """E[m_T - m_0] = sum_t eta h(m_t)(1 - m_t^2) + normalisation drift, with eta d = delta small."""
    p = lora.Problem.orthonormal(k=4, xi=1.5, activation="relu", seed=3)
    d, S, T, delta = 200, 1000, 200, 0.005
    eta = delta / d
    sim = popdyn.simulate(p, d=d, lr=eta, steps=T, m0=m0, seeds=S, n_points=2, seed=11)
    dm = sim["m"][:, -1] - sim["m"][:, 0]
    se = dm.std(ddof=1) / np.sqrt(S)
    m = m0
    for _ in range(T):                                       # the paper's population recursion, [Dayi25, App. C.1]
        m = m + eta * float(lora.h(p, m)) * (1 - m * m)
    # normalisation drift per step: (eta^2/2) |m| E||L||^2 <= 2 eta^2 d |m| B0, and for ReLU (|s'| <= 1)
    # B0 <= (xi sum_j |lam_j c_hat_j| / r_hat_j)^2 * max Phi on the path (docs/lora.md)
    b0 = (p.xi * np.sum(np.abs(p.lam * p.c_hat) / p.r_hat)) ** 2 * lora.population_loss(p, np.linspace(-1, 1, 41)).max()
    bias = T * 2 * eta**2 * d * max(abs(m0), abs(m)) * b0
    assert abs(dm.mean() - (m - m0)) < 4 * se + bias          # 4 SE: two-sided z-test, seed fixed
    assert abs(m - m0) > 4 * (4 * se + bias)                  # the test resolves the drift itself


@pytest.mark.parametrize("normalisation,act", [("N1", "relu"), ("N0", "relu"), ("N1", "erf"), ("N0", "tanh")])
def test_online_loss_matches_population_loss(normalisation, act):
    p = lora.Problem.orthonormal(k=4, xi=1.5, activation=act, seed=1, normalisation=normalisation)
    S, m0 = 40, 0.4
    sim = popdyn.simulate(p, d=30, lr=1e-12, steps=99, m0=m0, seeds=S, batch=50, n_points=2, seed=4)
    per_seed = sim["loss"].mean(axis=1)                      # both windows hold 50 of the 100 steps
    se = per_seed.std(ddof=1) / np.sqrt(S)
    assert abs(sim["m"][:, -1] - m0).max() < 1e-9            # lr = 1e-12: u_hat is fixed
    assert abs(per_seed.mean() - float(lora.population_loss(p, m0))) < 4 * se  # 4 SE, seed fixed


def test_same_seed_same_numbers_and_seeds_differ():
    p = _problem(G_CORR, "relu")
    kw = dict(d=40, lr=0.01, steps=60, seeds=3, n_points=7)
    a, b, c = (popdyn.simulate(p, seed=s, **kw) for s in (7, 7, 8))
    for name in ("m", "loss"):
        np.testing.assert_array_equal(a[name], b[name])
        assert not np.array_equal(a[name], c[name])
    assert len(np.unique(a["m"][:, -1])) == 3                # the seeds of one run are independent


def test_result_shapes_meta_and_default_m0():
    p = lora.Problem.orthonormal(k=3, xi=1.0, activation="tanh", seed=2)
    sim = popdyn.simulate(p, d=25, lr=0.02, steps=50, seeds=2, n_points=4)
    assert isinstance(sim, popdyn.Simulation) and sim.status == 0
    np.testing.assert_array_equal(sim.t, [0, 17, 33, 50])
    assert sim["m"].shape == sim["loss"].shape == (2, 4)
    m0 = np.sign(lora.h0(p)) * 0.5 / np.sqrt(25)
    np.testing.assert_allclose(sim["m"][:, 0], m0, rtol=1e-14)  # 1e-14: m0 e_0 + sqrt(1-m0^2) e in float64
    for key in ("problem", "options", "t_unit", "device", "dtype", "torch_version", "seeds", "wall_time_s"):
        assert key in sim.meta
    assert sim.meta["t_unit"] == "steps" and sim.meta["dtype"] == "float64"


def test_progress_does_not_change_the_numbers(capsys):
    pytest.importorskip("tqdm")
    p = lora.Problem.orthonormal(k=2, xi=1.0, seed=0)
    kw = dict(d=10, lr=0.05, steps=300, seeds=2, m0=0.1, seed=1)
    a, b = popdyn.simulate(p, progress=True, **kw), popdyn.simulate(p, progress=False, **kw)
    np.testing.assert_array_equal(a["m"], b["m"])
    assert "lora.simulate" in capsys.readouterr().err


def test_joint_records_c_overlap():
    p = _problem(np.eye(4), "relu", normalisation="N0")
    sim = popdyn.simulate(p, d=20, lr=0.01, steps=30, seeds=2, joint=True, lr_c=0.05, n_points=4)
    assert sim["c_overlap"].shape == (2, 4)
    np.testing.assert_allclose(sim["c_overlap"][:, 0], p.c @ p.c_hat, atol=1e-14)  # 1e-14: unit vectors, k = 4
    assert np.all(np.abs(sim["c_overlap"]) <= 1 + 1e-14)


def test_joint_with_zero_lr_c_is_frozen():
    # lr_c = 0 is the "joint == frozen" baseline of lora.fig2_joint_speedup's falsification test
    p = lora.Problem.orthonormal(k=3, xi=1.0, seed=2)
    kw = dict(d=12, lr=0.02, steps=50, seeds=2, n_points=6)
    a, b = popdyn.simulate(p, joint=True, lr_c=0.0, **kw), popdyn.simulate(p, **kw)
    np.testing.assert_array_equal(a["m"], b["m"])
    np.testing.assert_array_equal(a["loss"], b["loss"])


def test_float32_and_rank_deficient_run():
    p = _problem(G_RANK2, "sigmoid")
    sim = popdyn.simulate(p, d=15, lr=0.05, steps=40, seeds=2, dtype="float32", n_points=5)
    assert sim.meta["dtype"] == "float32" and sim.meta["rank_G"] == 2 and sim.status == 0
    assert np.all(np.abs(sim["m"]) <= 1 + 1e-6)              # 1e-6: float32 renormalisation


def test_overflow_sets_status():
    p = lora.Problem.orthonormal(k=2, xi=3000.0, activation="exp", normalisation="N0")
    with np.errstate(all="ignore"):
        sim = popdyn.simulate(p, d=6, lr=0.1, steps=3, seeds=1, n_points=2)
    assert sim.status == -1 and "lr" in sim.message


@pytest.mark.parametrize("kw,name", [
    ({"d": 5}, "d"), ({"d": 10.5}, "d"), ({"lr": 0.0}, "lr"), ({"lr": -1.0}, "lr"), ({"lr": np.nan}, "lr"),
    ({"lr": np.inf}, "lr"), ({"steps": 0}, "steps"), ({"seeds": 0}, "seeds"), ({"batch": 0}, "batch"),
    ({"m0": 1.5}, "m0"), ({"m0": np.nan}, "m0"), ({"device": "tpu"}, "device"), ({"device": 3.0}, "device"),
    ({"dtype": "float16"}, "dtype"), ({"n_points": 1}, "n_points"), ({"joint": "yes"}, "joint"),
    ({"lr_c": 0.1}, "lr_c"), ({"joint": True, "lr_c": -0.1}, "lr_c"), ({"seed": -1}, "seed")])
def test_bad_input_names_the_parameter(kw, name):
    p = lora.Problem.orthonormal(k=4, xi=1.0, seed=0)
    args = {"d": 10, "lr": 0.1, "steps": 10, "m0": 0.1, **kw}
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of lora.simulate"):
        popdyn.simulate(p, **args)


@pytest.mark.parametrize("old,new", [("record_every", "n_points"), ("progress_bar", "progress")])
def test_retired_option_names_the_new_one(old, new):
    p = lora.Problem.orthonormal(k=4, xi=1.0, seed=0)
    with pytest.raises(InvalidParameterError, match=f"lora.simulate has no option '{old}': it is now {new}"):
        popdyn.simulate(p, d=10, lr=0.1, steps=10, **{old: 1})


@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_cuda_without_gpu_is_a_clear_error(device, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    p = lora.Problem.orthonormal(k=2, xi=1.0, seed=0)
    with pytest.raises(InvalidParameterError, match="no CUDA device"):
        popdyn.simulate(p, d=6, lr=0.1, steps=2, device=device)


_ACTS = [a for a in activations.names() if a != "he<K>"] + [f"he{p}" for p in range(1, 6)]
_SCALED = [activations.leaky_relu(0.2), activations.get("relu").rescaled(1.5),
           activations.get("tanh").rescaled(0.7), activations.get("he3").rescaled(2.0)]


@pytest.mark.parametrize("act", _ACTS + _SCALED, ids=lambda a: getattr(a, "name", a))
def test_torch_activation_matches_numpy(act):
    a = activations.get(act)
    ta = _torch.torch_activation(a)
    z = np.linspace(-4, 4, 100)                              # even count: no point on the kinks at 0
    assert ta.native
    # 1e-12: the same function by two float64 formulas (torch vs numpy/scipy), |z| <= 4
    np.testing.assert_allclose(ta.f(torch.tensor(z)).numpy(), a(z), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(ta.df(torch.tensor(z)).numpy(), a.deriv(z), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name", ["myabs", "relu"])
def test_callable_activation_falls_back_to_numpy(name):
    a = activations.Activation.from_callable(np.abs, deriv=np.sign, kinks=(0.0,), name=name)
    ta = _torch.torch_activation(a)
    z = torch.linspace(-2, 2, 10, dtype=torch.float64)
    assert not ta.native                                     # a user callable named "relu" is not relu
    np.testing.assert_array_equal(ta.f(z).numpy(), np.abs(z.numpy()))
    np.testing.assert_array_equal(ta.df(z).numpy(), np.sign(z.numpy()))
    p = lora.Problem(np.eye(2), np.ones(2), np.ones(2) / np.sqrt(2), np.ones(2) / np.sqrt(2), 1.0, a)
    assert popdyn.simulate(p, d=8, lr=0.05, steps=5, seeds=2, m0=0.2).meta["activation_native"] is False


@given(steps=st.integers(1, 400), n=st.integers(2, 300))
def test_record_grid_windows_are_nearest_and_nonempty(steps, n):
    t, window = sim_lora._record_grid(steps, n)
    assert t[0] == 0 and t[-1] == steps and np.all(np.diff(t) > 0)
    s = np.arange(steps + 1)
    assert np.all(np.abs(s - t[window]) <= np.abs(s[:, None] - t[None, :]).min(axis=1))
    assert np.all(np.bincount(window, minlength=len(t)) >= 1)


def test_longer_run_extends_shorter_one():
    p = _problem(np.eye(4), "tanh")
    kw = dict(d=30, lr=0.02, seeds=2, seed=5)
    short, long = popdyn.simulate(p, steps=50, n_points=6, **kw), popdyn.simulate(p, steps=100, n_points=11, **kw)
    np.testing.assert_array_equal(long["m"][:, :6], short["m"])
    np.testing.assert_array_equal(long["loss"][:, :5], short["loss"][:, :5])  # the last window is cut at 50


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_standard_normal_is_standard_normal(dtype):
    import scipy.stats
    n = 2**18
    z = _torch.standard_normal_(torch.empty(n, dtype=dtype), _torch.make_generator(3, torch.device("cpu")))
    z = z.double().numpy()
    assert scipy.stats.kstest(z, "norm").statistic < 1.95 / np.sqrt(n)  # 1.95/sqrt(n): KS critical value, alpha=1e-3
    for p, mom in ((2, 1.0), (4, 3.0)):                     # 5 SE of the sample moment, SD = sqrt(E z^2p - mom^2)
        se = np.sqrt({2: 2.0, 4: 96.0}[p] / n)
        assert abs(np.mean(z**p) - mom) < 5 * se
    again = _torch.standard_normal_(torch.empty(n, dtype=dtype), _torch.make_generator(3, torch.device("cpu")))
    np.testing.assert_array_equal(again.double().numpy(), z)
