"""One-step multi-task pretraining with finite samples ([Collins24], eqs. (6)-(8)) in torch.

Public names
------------
simulate
    ``popdyn.simulate(problem, n_train=..., seeds=..., stratified=..., lr=...)`` ->
    :class:`popdyn.results.Simulation` with
    observables ``W_plus``, ``heads``, ``loss``, ``kappa``, ``ratio`` (the names of ``popdyn.predict``) and
    ``threshold_hits``, ``pattern_counts``; one row per seed.
downstream
    The random two-layer embedding on top of ``alpha W_bar^+`` and a linear probe fitted by L-BFGS on
    hypercube data (App. B): test 0-1 error and hinge loss.

The algorithm is the paper's with empirical means over ``n = n_train`` Gaussian samples, shared by every
task and by both steps: the head step (7) with ``lambda_a = 1/eta``, then the first-layer step (8)
with the heads held fixed at ``a^+`` and the weight decay ``1 - eta lambda_w`` formed analytically
(:func:`popdyn.models.multitask.decay_factor`). The hinge subgradients carry their threshold indicators.

How it is computed. Neurons with equal rows of W0 (the symmetric init pairs them) have equal activations,
so every output is computed from the distinct rows; heads act through the sums of their columns within a
group. Without a hinge threshold (the linear regime) the two steps need only per-pattern sums of the
samples: ``sum_x relu(W0 x)`` (P, g) and ``sum_x 1{W0 x > 0} x^T`` (P, g, d), accumulated in one pass
over chunks (P = 2^r patterns, g distinct neurons), so the cost is independent of the number of tasks.
The thresholds are screened exactly by Cauchy-Schwarz, ``|f_i(x)| <= ||a_i|| ||relu(W0 x)||``: samples whose
bound reaches 1 get their exact ``y f`` and their terms corrected; when the bound over all samples reaches
1 after the head step, a second pass regenerates the same chunks (one seeded generator per chunk) for the
W step. See docs/multitask.md.
"""
from __future__ import annotations

import math
import time
import warnings

import numpy as np
import torch

from ..._validate import FiniteArray, Interval, InvalidParameterError, as_int, check
from ...models.multitask import decay_factor, kappa_hat, sign_patterns, subspace_ratio
from ...results import Simulation
from .._torch import make_generator, progress as _progress, resolve_device, resolve_dtype, standard_normal_, to_numpy

__all__ = ["simulate", "downstream"]

_OWNER = "multitask.simulate"
_SLACK = 1e-9      # a row is screened when its bound is >= 1 - 1e-9: rounding of y f (1e-16 relative) stays clear
_POS = Interval(0, np.inf, closed="neither")
_NONNEG = Interval(0, np.inf, closed="left")


# ---- sampling ---------------------------------------------------------------------------------------------------

def _chunk_generator(seed, replicate, chunk, device):
    """The generator of one chunk: seeded from (seed, replicate, chunk), so a second pass redraws the same rows."""
    state = np.random.SeedSequence([seed, replicate, chunk]).generate_state(2, np.uint32)
    return make_generator((int(state[0]) << 31) ^ int(state[1]), device)


def _sample(gen, U, rows, d, stratified, dtype):
    """``rows`` draws of x ~ N(0, I_d) as a (P, nb, d) block grouped by sign pattern, and the counts (P,).

    Stratified: ``rows / P`` samples of each pattern u, ``x_par = u |g|`` with g standard normal. Otherwise
    i.i.d. x sorted by pattern into the block, padded with zero rows (a zero row adds nothing to any sum:
    ``relu(0) = 0`` and ``1{0 > 0} = 0``).
    """
    P, r = U.shape
    X = standard_normal_(torch.empty((rows, d), dtype=dtype, device=U.device), gen)
    if stratified:
        X = X.view(P, rows // P, d)
        X[..., :r] = X[..., :r].abs() * U[:, None, :]
        return X, torch.full((P,), rows // P, dtype=torch.int64, device=U.device)
    bits = 1 << torch.arange(r - 1, -1, -1, device=U.device)
    idx = ((X[:, :r] > 0).long() * bits).sum(1)              # pattern_index order: coordinate 0 most significant
    counts = torch.bincount(idx, minlength=P)
    order = torch.argsort(idx, stable=True)
    start = torch.cumsum(counts, 0) - counts
    ids = idx[order]
    block = X.new_zeros((P, int(counts.max()), d))
    block[ids, torch.arange(rows, device=U.device) - start[ids]] = X[order]
    return block, counts


def _chunks(opts, replicate, U, d, dtype):
    """The chunks of one replicate, in order: (P, nb, d) blocks and their pattern counts."""
    n, C = opts["n_train"], opts["chunk"]
    for c in range(-(-n // C)):
        gen = _chunk_generator(opts["seed"], replicate, c, U.device)
        yield _sample(gen, U, min(C, n - c * C), d, opts["stratified"], dtype)


# ---- the two steps ----------------------------------------------------------------------------------------------

class _Net:
    """Constants of one problem on the device: distinct rows of W0, the grouping of neurons, tasks, patterns.

    ``Vd`` (g, d) are the distinct rows, ``group`` (width,) maps neuron j to its row, ``E`` (width, g) is the one-hot
    membership, so ``f_i(x) = (a_i E) . relu(Vd x)`` exactly; ``F`` (T, P) and ``U`` (P, r) the tasks and patterns.
    """

    def __init__(self, problem, lr, device, dtype):
        Vd, group = np.unique(problem.W0, axis=0, return_inverse=True)
        group = group.reshape(-1)
        E = np.zeros((problem.width, len(Vd)))
        E[np.arange(problem.width), group] = 1.0
        as_t = lambda a, dt=torch.float64: torch.as_tensor(np.array(a), dtype=dt, device=device)
        self.Vd, self.U = as_t(Vd, dtype), as_t(sign_patterns(problem.r), dtype)
        self.group, self.E = as_t(group, torch.int64), as_t(E)
        self.F, self.W0, self.A0 = as_t(problem.task_set.F), as_t(problem.W0), as_t(problem.A0)
        self.eta, self.r, self.d = lr, problem.r, problem.d


def _screen(H, A_eff):
    """Rows of the block ``H`` (P, nb, g) whose bound ``max_i ||a_i|| ||h(x)||`` reaches 1: (pattern, row) indices."""
    bound = torch.linalg.vector_norm(A_eff, dim=1).max() * torch.linalg.vector_norm(H, dim=2)
    return torch.nonzero(bound >= 1 - _SLACK, as_tuple=True)


def _inactive(net, H, rows, A_eff):
    """For screened rows: the labels y (k, T), ``y f`` (k, T) and the mask of pairs past the threshold ``y f >= 1``."""
    h = H[rows].double()
    Y = net.F[:, rows[0]].T
    yf = Y * (h @ A_eff.T)
    return h, Y, yf, yf >= 1


def _first_pass(net, opts, replicate, bar):
    """Per-pattern sums of one replicate, with the head step's threshold corrections.

    Returns ``Hsum`` (P, g) = sum_x relu(Vd x), ``Q`` (P, g, d) = sum_x 1{Vd x > 0} x^T, ``hmax`` = max_x
    ||relu(Vd x)||, ``G0`` (T, g) = sum over pairs past the threshold at init of ``y relu(Vd x)``, their count,
    and the pattern counts.
    """
    P, g, d = net.U.shape[0], net.Vd.shape[0], net.d
    f64 = dict(dtype=torch.float64, device=net.Vd.device)
    Hsum, Q, G0 = torch.zeros((P, g), **f64), torch.zeros((P, g, d), **f64), torch.zeros((net.F.shape[0], g), **f64)
    counts, hmax, hits = torch.zeros(P, dtype=torch.int64, device=net.Vd.device), torch.zeros((), **f64), 0
    A0_eff = net.A0 @ net.E                       # exactly 0 for the symmetric init: f(x; W0, a0) = 0
    screen = bool(A0_eff.abs().max() > 0)
    for X, cnt in _chunks(opts, replicate, net.U, d, net.Vd.dtype):
        Z = X @ net.Vd.T                                             # (P, nb, g)
        H = torch.relu(Z)
        Hsum += H.sum(1).double()
        Q += ((Z > 0).to(X.dtype).mT @ X).double()
        hmax = torch.maximum(hmax, torch.linalg.vector_norm(H, dim=2).max().double())
        rows = _screen(H, A0_eff) if screen else ()
        if rows and rows[0].numel():
            h, Y, _, off = _inactive(net, H, rows, A0_eff)
            G0 += (Y * off).T @ h
            hits += int(off.sum())
        counts += cnt
        bar.update()
    return Hsum, Q, float(hmax), G0, hits, counts


def _second_pass(net, opts, replicate, heads):
    """W-step threshold corrections of one replicate (regenerating its chunks): ``sum over pairs past the
    threshold of y a_ij 1{w_j x > 0} x`` (m, d), of ``y f - 1`` (the loss terms that are 0, not 1 - y f), and
    their count."""
    A_eff = heads @ net.E
    GW = torch.zeros_like(net.W0)
    excess, hits = 0.0, 0
    for X, _ in _chunks(opts, replicate, net.U, net.d, net.Vd.dtype):
        Z = X @ net.Vd.T
        H = torch.relu(Z)
        rows = _screen(H, A_eff)
        if not rows[0].numel():
            continue
        _, Y, yf, off = _inactive(net, H, rows, A_eff)
        coef = (Z[rows][:, net.group] > 0).double() * ((Y * off) @ heads)   # (k, m)
        GW += coef.T @ X[rows].double()
        excess += float((yf - 1)[off].sum())
        hits += int(off.sum())
    return GW, excess, hits


def _replicate(net, opts, replicate, dec, bar):
    """Both steps on one sample set: heads (T, m), W+ (m, d), post-head loss, threshold hits, counts, bound."""
    n, eta, F, T = opts["n_train"], net.eta, net.F, net.F.shape[0]
    Hsum, Q, hmax, G0, hits, counts = _first_pass(net, opts, replicate, bar)
    FH = F @ Hsum                                                    # sum_x y_i(x) relu(Vd x), (T, g)
    # head step (7): (1 - eta lam_a) a0 = 0 exactly with lam_a = 1/eta, and grad_a L_i = -(FH - G0)_i / n
    heads = eta * ((FH - G0) / n)[:, net.group]
    A_eff = heads @ net.E
    V = F.T @ heads                                                  # sum_i y_i a_ij on pattern u, (P, m)
    GW = torch.einsum("pj,pjd->jd", V, Q[:, net.group])            # sum_x sum_i y_i a_ij 1{w_j x > 0} x
    loss_sum = n * T - float((A_eff * FH).sum())                     # sum_{x,i} (1 - y_i f_i(x))
    bound = float(torch.linalg.vector_norm(A_eff, dim=1).max()) * hmax
    if bound >= 1 - _SLACK:
        GW_off, excess, hits_w = _second_pass(net, opts, replicate, heads)
        GW, loss_sum, hits = GW - GW_off, loss_sum + excess, hits + hits_w
    W_plus = dec * net.W0 + (eta / (T * n)) * GW                    # eq. (8) with weight decay, heads fixed
    return heads, W_plus, loss_sum / (T * n), hits, counts, bound


# ---- options and the public entry point ---------------------------------------------------------------------------

def _run_options(problem, n_train, stratified, chunk, seed):
    """The sampling options of one run: chunk rounded up to a multiple of 2^r, and n_train too when stratified
    (with a warning)."""
    P = 2 ** problem.r
    opts = {"n_train": n_train, "stratified": stratified, "seed": seed,
            "chunk": -(-chunk // P) * P}   # whole patterns per chunk (the non-stratified block too)
    if stratified and n_train % P:
        rounded = -(-n_train // P) * P
        warnings.warn(f"{_OWNER}: n_train={n_train} is not a multiple of 2^r = {P} (equal counts per sign "
                      f"pattern); rounded up to {rounded}.", UserWarning)
        opts["n_train_requested"], opts["n_train"] = n_train, rounded
    return opts


def simulate(problem, *, lr, n_train, stratified, chunk, seeds, seed, device, dtype, progress):
    r"""Multi-task pretraining on finite samples: the head step, then one first-layer step with fixed heads.

    .. math:: a_i^+ = (1-\eta\lambda_a)a_i^0 - \eta\nabla_a\hat{\mathcal L}_i(W^0, a_i^0),\qquad
              W^+ = (1-\eta\lambda_w)W^0 - \frac{\eta}{T}\sum_{i=1}^T\nabla_W\hat{\mathcal L}_i(W^0, a_i^+),

              \hat{\mathcal L}_i(W, a) = \frac1n\sum_{l=1}^n\max\big(1 - f_i^*(x_l)\,a^\top\sigma(Wx_l),\,0\big),
              \quad x_l \sim \mathcal N(0, I_d),\ \lambda_a = 1/\eta

    Parameters
    ----------
    problem : multitask.Problem
        W0 (symmetric init), the initial heads A0, the task table and lambda_w (every seed shares them).
    lr : float
        Step size eta of both steps.
    n_train : int
        Samples n per seed, shared by all tasks and by both steps. With ``stratified`` a multiple of 2^r
        (rounded up, with a warning).
    seeds : int
        Independent sample sets ``>= 1``.
    stratified : bool
        n/2^r samples of each sign pattern u (``x_par = u |g|``), the same law conditioned on u;
        False draws i.i.d. x, so the pattern counts are multinomial.
    seed : int
        Seed of the samples: chunk c of seed s is drawn from a generator seeded with (seed, s, c).
    device : str or torch.device
        "cpu", "cuda" or "cuda:N".
    dtype : {None, "float64", "float32"}
        Working precision of the samples and activations; sums accumulate in float64, and the weight decay
        factor is exact. None is float64.
    chunk : int
        Samples per chunk (rounded up to a multiple of 2^r): the memory bound, about ``chunk * (d + 2 m)``
        numbers.
    progress : bool
        A tqdm bar over the chunks of the first pass (when tqdm is installed).

    Returns
    -------
    Simulation
        ``t = None``; observables with a leading seed axis: ``W_plus`` (seeds, width, d), ``heads`` (seeds, T, width),
        ``loss`` (seeds,) the post-head multi-task hinge loss ``(1/T) sum_i L_i(W0, a_i^+)`` without
        regularisers, ``kappa`` (:func:`~popdyn.models.multitask.kappa_hat`), ``ratio``
        (:func:`~popdyn.models.multitask.subspace_ratio`, Thm 4.2), ``threshold_hits`` (pairs (x, i) with
        ``y f >= 1`` in either step: 0 in the linear regime) and ``pattern_counts`` (seeds, 2^r).
        ``meta["margin_bound"]`` is ``max_i ||a_i^+|| max_x ||relu(W0 x)||`` per seed (< 1 certifies the
        linear regime of the W step on these samples).

    Notes
    -----
    Regime: any problem; the threshold indicators are exact (screened by Cauchy-Schwarz, corrected where
    reached). The heads are held fixed in the W step: differentiating through ``a^+(W)`` doubles the
    gradient (docs/multitask.md). The Monte Carlo error of W+ per neuron is about ``3.6 * 2^r sqrt(d/n)`` relative
    (docs/multitask.md). CUDA draws other numbers than the CPU for the same seed.

    References
    ----------
    .. [src] [Collins24, eqs. (2)-(8), Proposition 4.1, proof of Lemma A.10 (weight decay)].

    Examples
    --------
    >>> import popdyn
    >>> from popdyn.models import multitask
    >>> sim = popdyn.simulate(multitask.Problem(d=8, r=1, width=4), n_train=2**12, seeds=2)
    >>> sim["W_plus"].shape, sim["threshold_hits"].tolist(), sim["pattern_counts"].tolist()
    ((2, 4, 8), [0, 0], [[2048, 2048], [2048, 2048]])
    """
    opts = _run_options(problem, n_train, stratified, chunk, seed)
    dev, dt = resolve_device(device, _OWNER), resolve_dtype(dtype, _OWNER)
    dec = decay_factor(problem.r, lr, problem.lam_w, problem.task_set)
    start = time.perf_counter()
    out = {k: [] for k in ("W_plus", "heads", "loss", "threshold_hits", "pattern_counts")}
    bounds = []
    bar = _progress(seeds * -(-opts["n_train"] // opts["chunk"]), progress, _OWNER, unit="chunk")
    try:
        with torch.inference_mode():
            net = _Net(problem, lr, dev, dt)
            for s in range(seeds):
                heads, W_plus, loss, hits, counts, bound = _replicate(net, opts, s, dec, bar)
                for k, v in (("W_plus", to_numpy(W_plus)), ("heads", to_numpy(heads)), ("loss", loss),
                             ("threshold_hits", hits), ("pattern_counts", counts.cpu().numpy())):
                    out[k].append(v)
                bounds.append(bound)
    finally:
        bar.close()
    wall = time.perf_counter() - start
    obs = {k: np.array(v) for k, v in out.items()}
    obs["kappa"] = np.array([kappa_hat(problem.W0, W, problem.r) for W in obs["W_plus"]])
    obs["ratio"] = np.array([subspace_ratio(W, problem.r) for W in obs["W_plus"]])
    meta = {"options": opts, "device": str(dev), "dtype": str(dt).replace("torch.", ""),
            "torch_version": torch.__version__, "seeds": seeds, "seed": seed, "decay_factor": dec,
            "distinct_neurons": int(net.Vd.shape[0]), "margin_bound": bounds, "wall_time_s": wall,
            "samples_per_s": seeds * opts["n_train"] / wall}
    ok = all(np.all(np.isfinite(v)) for k, v in obs.items() if k != "ratio")
    return Simulation(t=None, observables=obs, status=0 if ok else -1,
                      message="" if ok else "non-finite W_plus or heads: overflow; use float64", meta=meta)


# ---- downstream ---------------------------------------------------------------------------------------------------

def _target_table(owner, target, r):
    """The target as a +-1 table on the 2^r patterns: a callable fbar(u) on each pattern u, or the table itself."""
    if callable(target):
        table = np.array([float(target(u)) for u in sign_patterns(r)])
    else:
        table = check(owner, "target", target, FiniteArray(1, (2 ** r,)))
    if table.shape != (2 ** r,) or not np.all(np.abs(table) == 1.0):
        raise InvalidParameterError(f"The 'target' parameter of {owner} must be a callable fbar(u) -> +-1 or a table "
                                    f"of 2^r = {2 ** r} labels +-1 (sign_patterns order). Got {target!r} instead.")
    return table


def _hypercube(gen, n, d, table, r, dtype, device):
    """v ~ Unif{-1, 1}^d (n, d) and the labels ``fbar(v_{1:r})`` (n,)."""
    V = torch.randint(0, 2, (n, d), generator=gen, device=device).to(dtype) * 2 - 1
    bits = 1 << torch.arange(r - 1, -1, -1, device=device)
    return V, table[((V[:, :r] > 0).long() * bits).sum(1)]


def _fit_probe(G, y, lam, max_iter):
    """Squared hinge + ridge on a (the bias tau free) by full-batch L-BFGS; returns (a, tau, objective, grad norm)."""
    a = torch.zeros(G.shape[1], dtype=G.dtype, device=G.device, requires_grad=True)
    tau = torch.zeros((), dtype=G.dtype, device=G.device, requires_grad=True)
    opt = torch.optim.LBFGS([a, tau], lr=1, max_iter=max_iter, history_size=20, tolerance_grad=1e-10,
                            tolerance_change=1e-15, line_search_fn="strong_wolfe")

    def objective():
        opt.zero_grad()
        val = torch.relu(1 - y * (G @ a + tau)).square().mean() + 0.5 * lam * a.square().sum()
        val.backward()
        return val

    opt.step(objective)
    val = objective().detach()
    grad = float(torch.sqrt(a.grad.square().sum() + tau.grad.square()))
    return a.detach(), tau.detach(), float(val), grad


def downstream(W_plus, r, *, m_hat, gamma, gamma_hat, alpha, target, n_train, n_test=4096, lam=1e-4, seed=0,
               device="cpu", dtype=None, max_iter=1000):
    r"""Downstream task on hypercube inputs: the random embedding on top of ``alpha W_bar^+``, a linear probe.

    .. math:: g(v) = \sigma\big(\hat W\sigma(\alpha\bar W^+v + b) + \hat b\big),\qquad
              \min_{a,\tau}\ \frac1n\sum_{l=1}^n \max\big(0, 1 - y_l(a^\top\tilde g(v_l) + \tau)\big)^2
              + \frac\lambda2\|a\|^2

    with ``v ~ Unif{-1, 1}^d``, ``y = fbar(v_{1:r})``, ``b ~ Unif[-sqrt2 gamma/sqrt(m_bar), +]^m_bar``,
    ``w_hat_j ~ N(0, (2/m_hat) I_m_bar)``, ``b_hat ~ Unif[-sqrt2 gamma_hat/sqrt(m_hat), +]^m_hat`` and
    ``g~`` the features standardised on the training set.

    Parameters
    ----------
    W_plus : array_like of shape (m, d)
        The pretrained first layer; its first ``m_bar = m/2`` rows are the distinct neurons ([Collins24, App. B]).
    r : int
        Ground-truth coordinates, ``1 <= r < d``.
    m_hat : int
        Width of the random layer, ``>= 1``.
    gamma, gamma_hat : float
        Bias ranges of the two layers, ``>= 0`` (the paper: Theta(sqrt(r) log r) and Theta(r^3 log^4 r),
        constants unspecified).
    alpha : float
        Rescaling ``> 0``; the corrected paper choice is ``alpha_hat/kappa_par`` with ``alpha_hat =
        2/(nu_w sqrt(m_bar))`` (docs/multitask.md), or the measured kappa in place of kappa_par.
    target : callable or array_like of shape (2**r,)
        ``fbar(u) -> +-1`` on a sign pattern u (ndarray (r,)), or its table in ``sign_patterns`` order.
    n_train : int
        Training samples n, ``>= 2``.
    n_test : int
        Fresh test samples, ``>= 1``.
    lam : float
        Ridge on a, ``> 0`` (the bias is not penalised).
    seed : int
        Seed of the random layer and of the samples.
    device, dtype
        As in :func:`simulate`.
    max_iter : int
        L-BFGS iterations, ``>= 1``.

    Returns
    -------
    dict
        ``test_error`` (0-1, ``y F <= 0`` counts as an error), ``test_hinge`` (mean ``max(0, 1 - y F)``),
        ``train_error``, ``objective`` and ``grad_norm`` of the probe at its end point, ``a`` (m_hat,) and ``tau``
        (on the standardised features).

    Notes
    -----
    Regime: the paper's guarantee (Thm 4.3) needs exp(r^5)-sized widths and samples; at practical sizes compare
    trends (E6 of docs/multitask.md). The squared hinge makes the probe smooth for L-BFGS; the evaluation uses
    the hinge of eq. (11).

    References
    ----------
    .. [src] [Collins24, Section 3, eqs. (9)-(11); App. B: m_bar, random parameters, alpha].

    Examples
    --------
    >>> W = np.zeros((4, 6)); W[[0, 2], 0] = W[[1, 3], 1] = 1.0                 # neurons on v_1 and v_2
    >>> out = downstream(W, 2, m_hat=64, gamma=1.0, gamma_hat=1.0, alpha=1.0, target=[1, -1, -1, 1],
    ...                  n_train=200, n_test=500)
    >>> out["test_error"]
    0.0
    """
    owner = "multitask.downstream"
    W = check(owner, "W_plus", W_plus, FiniteArray(2))
    m, d = W.shape
    if m % 2:
        raise InvalidParameterError(f"The 'W_plus' parameter of {owner} must have an even number of rows (the "
                                    f"symmetric init pairs neurons). Got shape {W.shape} instead.")
    r = as_int(owner, "r", r, 1, d - 1)
    m_hat, n_train = as_int(owner, "m_hat", m_hat, 1), as_int(owner, "n_train", n_train, 2)
    n_test, max_iter, seed = as_int(owner, "n_test", n_test, 1), as_int(owner, "max_iter", max_iter, 1), as_int(
        owner, "seed", seed, 0, 2**63 - 1)
    gamma, gamma_hat = check(owner, "gamma", gamma, _NONNEG), check(owner, "gamma_hat", gamma_hat, _NONNEG)
    alpha, lam = check(owner, "alpha", alpha, _POS), check(owner, "lam", lam, _POS)
    table = _target_table(owner, target, r)
    dev, dt = resolve_device(device, owner), resolve_dtype(dtype, owner)
    m_bar = m // 2
    gen = make_generator(seed, dev)
    Wbar = torch.as_tensor(np.array(W[:m_bar]), dtype=dt, device=dev) * alpha
    b = (torch.rand(m_bar, generator=gen, dtype=dt, device=dev) * 2 - 1) * (math.sqrt(2) * gamma / math.sqrt(m_bar))
    W_hat = standard_normal_(torch.empty((m_hat, m_bar), dtype=dt, device=dev), gen) * math.sqrt(2 / m_hat)
    b_hat = (torch.rand(m_hat, generator=gen, dtype=dt, device=dev) * 2 - 1) * (math.sqrt(2) * gamma_hat
                                                                                 / math.sqrt(m_hat))
    embed = lambda V: torch.relu(torch.relu(V @ Wbar.T + b) @ W_hat.T + b_hat)
    tab = torch.as_tensor(np.array(table), dtype=dt, device=dev)
    V, y = _hypercube(gen, n_train, d, tab, r, dt, dev)
    Vt, yt = _hypercube(gen, n_test, d, tab, r, dt, dev)
    G = embed(V)
    mu, sd = G.mean(0), G.std(0)
    sd = torch.where(sd > 0, sd, torch.ones_like(sd))                # a constant feature standardises to 0
    a, tau, val, grad = _fit_probe((G - mu) / sd, y, lam, max_iter)
    F_train = (G - mu) / sd @ a + tau
    F_test = (embed(Vt) - mu) / sd @ a + tau
    return {"test_error": float((yt * F_test <= 0).to(dt).mean()),
            "test_hinge": float(torch.relu(1 - yt * F_test).mean()),
            "train_error": float((y * F_train <= 0).to(dt).mean()), "objective": val, "grad_norm": grad,
            "a": to_numpy(a), "tau": float(tau)}
