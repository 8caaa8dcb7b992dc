"""Sparse-parity ICL theory (popdyn.models.icl.parity): brute-force oracles, Monte Carlo, properties."""
import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import popdyn
from popdyn import InvalidParameterError, RegimeWarning
from popdyn.models import icl


def _orthonormal(d, rng):
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def _brute_force_loss(problem, a, W, G):
    """N -> inf hinge by enumerating every phi_q in {+-1}^d with its probability, in the x-basis:
    y^T X / N -> E[y x] = G E[y phi] = 2 gamma G (e_i + e_j), x_q = G phi_q, W the heads in x-space."""
    d, g = problem.d, problem.gamma
    S1, S2 = icl.task_sets(d, problem.k)
    prob = {(1, 1): 0.25 + g, (1, -1): 0.25, (-1, 1): 0.25, (-1, -1): 0.25 - g}
    phis = np.array(list(itertools.product([-1.0, 1.0], repeat=d)))
    out = []
    for S in (S1, S2):
        total = 0.0
        for i, j in S:
            w = np.array([prob[(int(p[i]), int(p[j]))] for p in phis]) / 2 ** (d - 2)
            z = 2 * g * G @ (np.eye(d)[i] + np.eye(d)[j])
            pre = np.einsum("a,nab,pb->pn", z, W, phis @ G.T)
            total += w @ np.maximum(1 - phis[:, i] * phis[:, j] * (np.maximum(pre, 0) @ a), 0)
        out.append(total / max(len(S), 1))
    return out


# ---- oracles ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("d,k,diag", [(4, 2, True), (5, 3, True), (5, 3, False), (6, 2, False)])
def test_population_hinge_equals_brute_force_enumeration(d, k, diag):
    rng = np.random.default_rng(d * 10 + k)
    p = icl.ParityProblem(d=d, k=k, gamma=0.15, pT=0.3)
    m = 5
    a = rng.uniform(-1, 1, m)
    V = rng.standard_normal((m, d)) * 3 if diag else rng.standard_normal((m, d, d)) * 3
    Vf = np.stack([np.diag(v) for v in V]) if diag else V
    G = _orthonormal(d, rng)
    W = np.einsum("ab,nbc,dc->nad", G, Vf, G)  # W = G V G^T
    l1, l2 = _brute_force_loss(p, a, W, G)
    got = icl.population_hinge(p, a, V, split=True)
    np.testing.assert_allclose(got, (l1, l2), rtol=1e-12, atol=1e-14)  # 1e-12: float64 sums of <= 2^6 * 30 terms
    assert icl.population_hinge(p, a, V) == pytest.approx((1 - p.pT) * l1 + p.pT * l2, rel=1e-12)


@pytest.mark.parametrize("diag", [True, False])
def test_population_hinge_against_monte_carlo(diag):
    rng = np.random.default_rng(7)
    p = icl.ParityProblem(d=8, k=4, gamma=0.1, pT=0.2)
    a = rng.uniform(-1, 1, 6)
    V = rng.standard_normal((6, 8)) * 4 if diag else rng.standard_normal((6, 8, 8)) * 2
    exact = icl.population_hinge(p, a, V)
    mean, se = icl.mc_population_hinge(p, a, V, prompts=200_000, seed=3)
    assert abs(mean - exact) <= 5 * se  # 5 SE, n = 2e5, seed 3
    assert exact > 0.05  # a random network is not a zero-loss one: the check is not vacuous


def test_full_heads_with_zero_off_diagonal_equal_diagonal_heads():
    rng = np.random.default_rng(1)
    p = icl.ParityProblem(d=6, k=3, gamma=0.2, pT=0.1)
    a, V = rng.uniform(-1, 1, 4), rng.standard_normal((4, 6)) * 3
    Vf = np.stack([np.diag(v) for v in V])
    Vf[:, 0, 1] = 1e-3  # forces the enumeration path
    # 1e-3 * 2 gamma * 4 heads bounds the change of any pre-activation, hinge is 1-Lipschitz
    assert icl.population_hinge(p, a, Vf) == pytest.approx(icl.population_hinge(p, a, V), abs=4 * 2e-4)


# ---- the paper's construction (Thm 5.5.1) ---------------------------------------------------------------

@st.composite
def paper_problems(draw):
    nu2 = draw(st.integers(2, 5))
    nu1 = draw(st.integers(1, nu2 - 1))
    gamma = draw(st.floats(0.01, 0.24))
    frac = draw(st.floats(0.01, 0.99))
    return icl.ParityProblem.paper(nu1, nu2, gamma, pT=frac * icl.pT_max(2**nu2, gamma))


_ULP_LOSS = 1e-14  # margin 1 computed as 2 gamma * 1/(4 gamma) * 2 may round a few ulp below 1


def _hamming(tasks):
    return np.array([bin(int(i) ^ int(j)).count("1") for i, j in tasks], dtype=float)


@given(paper_problems())
def test_construction_zero_loss_and_tight_margins(p):
    note(repr(p))
    a, V = icl.paper_construction(p.nu2, p.gamma)
    assert icl.population_hinge(p, a, V) <= _ULP_LOSS
    tasks, vals = icl.margins(p, a, V)
    # y_q g = Hamming distance of (i-1, j-1) on every pattern (docs/icl.md); 1e-12: float64 with 1/(4 gamma) scales
    np.testing.assert_allclose(vals, np.repeat(_hamming(tasks)[:, None], 4, 1), rtol=1e-12)
    assert vals.min() == pytest.approx(1.0, rel=1e-13)
    assert icl.frobenius_cost(V) == pytest.approx(p.d * p.nu2 * (p.nu2 + 1) / (8 * p.gamma**2), rel=1e-12)


@given(paper_problems(), st.floats(1e-3, 0.5))
def test_shrunk_construction_has_positive_loss(p, eps):
    a, V = icl.paper_construction(p.nu2, p.gamma)
    assert icl.population_hinge(p, a, (1 - eps) * V) > 0


@given(paper_problems())
def test_small_model_fits_S1_and_is_a_subset(p):
    note(repr(p))
    a1, V1 = icl.paper_construction(p.nu2, p.gamma, nu1=p.nu1)
    a2, V2 = icl.paper_construction(p.nu2, p.gamma)
    l_s1, l_s2 = icl.population_hinge(p, a1, V1, split=True)
    assert l_s1 <= _ULP_LOSS and l_s2 > 0.01  # fits the important tasks only
    heads = icl.small_model_heads(p.nu1, p.nu2)
    scale = np.where(a2[heads] > 0, p.nu1 / p.nu2, 1.0)  # positive heads: nu1/(4 gamma) instead of nu2/(4 gamma)
    np.testing.assert_array_equal(a1, a2[heads])
    np.testing.assert_allclose(V1, V2[heads] * scale[:, None], rtol=1e-15)


@given(paper_problems())
def test_rank_and_noise_energy_ratio(p):
    V1 = icl.paper_construction(p.nu2, p.gamma, nu1=p.nu1)[1]
    V2 = icl.paper_construction(p.nu2, p.gamma)[1]
    assert np.linalg.matrix_rank(V1.T) == p.nu1 + 1 and np.linalg.matrix_rank(V2.T) == p.nu2 + 1
    ratio = icl.noise_energy(V1, 16) / icl.noise_energy(V2, 16)
    assert ratio == icl.noise_energy_ratio(p.nu1, p.nu2) == (p.nu1 + 1) / (p.nu2 + 1)


@given(paper_problems(), st.integers(0, 2**31 - 1))
def test_symmetries_swap_and_head_permutation(p, seed):
    a, V = icl.paper_construction(p.nu2, p.gamma)
    rng = np.random.default_rng(seed)
    V = V * rng.uniform(0.5, 1.0, V.shape[0])[:, None]  # generic heads (nonzero loss), same sign pattern
    tasks, vals = icl.margins(p, a, V)
    swapped = {(int(i), int(j)): v for (i, j), v in zip(tasks, vals)}
    for (i, j), v in zip(tasks, vals):  # (i, j) -> (j, i) swaps the patterns (1,-1) and (-1,1)
        np.testing.assert_allclose(swapped[(j, i)], v[[0, 2, 1, 3]], rtol=1e-14)
    perm = rng.permutation(len(a))
    assert icl.population_hinge(p, a[perm], V[perm]) == pytest.approx(icl.population_hinge(p, a, V), rel=1e-12)


def test_dictionary_invariance_of_the_loss():
    rng = np.random.default_rng(2)
    p = icl.ParityProblem(d=4, k=2, gamma=0.1, pT=0.25)
    a, V = rng.uniform(-1, 1, 3), rng.standard_normal((3, 4, 4))
    losses = []
    for _ in range(2):
        G = _orthonormal(4, rng)
        losses.append(_brute_force_loss(p, a, np.einsum("ab,nbc,dc->nad", G, V, G), G))
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-12)  # 1e-12: float64 rotation round trip


@given(st.integers(2, 60), st.floats(0.01, 0.24))
def test_pT_max_decreasing_in_d_and_gamma(d, gamma):
    assert icl.pT_max(d + 1, gamma) < icl.pT_max(d, gamma)
    assert icl.pT_max(d, gamma + 0.005) < icl.pT_max(d, gamma)
    p = icl.pT_max(d, gamma)  # App. D.3.1: the condition equals d(d-1)/2 pT (1/4+g) < (1-pT)(1/4-g), equality at pT_max
    assert d * (d - 1) / 2 * p * (0.25 + gamma) == pytest.approx((1 - p) * (0.25 - gamma), rel=1e-12)


def test_paper_example_matrices():
    a, V = icl.paper_construction(3, 0.1)
    s = 1 / (4 * 0.1)
    np.testing.assert_allclose(V[0], s * np.array([-1, 1, -1, 1, -1, 1, -1, 1]))   # Section 5.5.1, V^(1)
    np.testing.assert_allclose(V[1], s * np.array([-1, -1, 1, 1, -1, -1, 1, 1]))   # V^(2)
    np.testing.assert_allclose(V[2], s * np.array([-1, -1, -1, -1, 1, 1, 1, 1]))   # V^(3)
    np.testing.assert_allclose(V[3], -3 * s * np.ones(8))                          # V^(4)
    np.testing.assert_allclose(V[4:], -V[:4])
    assert a.tolist() == [-1, -1, -1, 1] * 2
    assert (icl.small_model_heads(1, 3) + 1).tolist() == [1, 4, 5, 8]              # Section 5.5.1


def _g1_loss_by_enumeration(nu1, nu2, gamma):
    """Exact (rational) N -> inf losses (L_S2, pT L_S2) of g1*, enumerating every S2 task and pattern with heads
    built from the words of Thm 5.5.1 (Section 5.5.1), in Fractions: an oracle independent of popdyn's code."""
    d, k = 2**nu2, 2**nu1
    four_g = 4 * gamma
    heads = [(-1, [Fraction(2 * ((l >> n) & 1) - 1) / four_g for l in range(d)]) for n in range(nu1)]
    heads.append((1, [Fraction(-nu1) / four_g] * d))
    heads += [(a, [-v for v in V]) for a, V in heads]                   # the mirrors
    prob = {(1, 1): Fraction(1, 4) + gamma, (1, -1): Fraction(1, 4), (-1, 1): Fraction(1, 4),
            (-1, -1): Fraction(1, 4) - gamma}
    S2 = [(i, j) for i in range(d) for j in range(d) if i != j and not (i < k and j < k)]
    total = Fraction(0)
    for i, j in S2:
        for (fi, fj), w in prob.items():
            g = sum(a * max(Fraction(0), 2 * gamma * (V[i] * fi + V[j] * fj)) for a, V in heads)
            total += w * max(Fraction(0), 1 - fi * fj * g)
    l_s2 = total / len(S2)
    pT = (Fraction(1, 4) - gamma) / (Fraction(d * (d - 1), 2) * (Fraction(1, 4) + gamma) + Fraction(1, 4) - gamma) / 2
    return l_s2, pT * l_s2


@pytest.mark.parametrize("nu1,nu2,want", [(1, 2, 1.3333e-2), (1, 3, 3.3501e-3), (2, 3, 1.3705e-3), (2, 4, 3.7460e-4)])
def test_small_model_has_positive_loss_on_S2(nu1, nu2, want):
    """errata (Thm 5.5.1): g1*'s loss pT L_S2 > 0 (docs/icl.md), two computations: the finite sum of
    population_hinge and an exact enumeration in rationals; both equal the closed form of the fraction of S2
    pairs that agree on their lowest nu1 bits (g1*'s margin is that Hamming distance), d(d/k-1)/(d(d-1)-k(k-1))."""
    gamma = Fraction(1, 10)
    l_s2, loss = _g1_loss_by_enumeration(nu1, nu2, gamma)
    d, k = 2**nu2, 2**nu1
    assert l_s2 == Fraction(d * (d // k - 1), d * (d - 1) - k * (k - 1))
    p = icl.ParityProblem.paper(nu1, nu2, 0.1)
    g1 = icl.paper_construction(nu2, 0.1, nu1=nu1)
    l1, l2 = icl.population_hinge(p, *g1, split=True)
    assert l1 == 0.0 and l2 == pytest.approx(float(l_s2), rel=1e-12)  # 1e-12: float64 sums of <= 4 d^2 terms
    assert icl.population_hinge(p, *g1) == pytest.approx(float(loss), rel=1e-12)
    assert float(loss) == pytest.approx(want, rel=1e-4)  # the errata numbers, 5 digits
    # the 4-head network (padded with zero heads to g1*'s 2(nu1+1)) has loss 0 < L(g1*): g1* is not the
    # lambda -> 0+ optimum of Thm 5.5.1 for m = 2(nu1+1) under either reading of its argmin
    a4, V4 = icl.four_head_counterexample(d, 0.1)
    m = 2 * (nu1 + 1)
    a4, V4 = np.r_[a4, np.zeros(m - 4)], np.vstack([V4, np.zeros((m - 4, d))])
    assert icl.population_hinge(p, a4, V4) == 0.0 < icl.population_hinge(p, *g1)


# ---- the refuted claim (docs/icl.md) ------------------------------------------------------------------

@pytest.mark.parametrize("d,frob_spec,frob_paper", [(4, 1050, 300), (8, 8500, 1200), (16, 6.8e4, 4000),
                                                    (32, 5.5e5, 12000), (5, None, None), (12, None, None)])
def test_four_heads_fit_every_task(d, frob_spec, frob_paper):
    p = icl.ParityProblem(d=d, k=2, gamma=0.1, pT=0.4)
    a, V = icl.four_head_counterexample(d, 0.1)
    assert icl.population_hinge(p, a, V, split=True) == (0.0, 0.0)
    assert icl.margins(p, a, V)[1].min() >= 1 - 1e-12  # 1e-12: float64 rounding of 1/(2 gamma) products
    assert icl.population_hinge(p, a, 0.99 * V) > 0  # margins are tight here too
    if frob_spec is not None:
        # a reference script printed the norms with max |x_i + x_j| over i = j too; the max over
        # i != j (the construction's formula) is smaller and still fits every task, so the cost is below those
        x, C = np.arange(d) - (d - 1) / 2, (1 + (d - 2) / 2 * 2) / (4 * 0.1)
        assert icl.frobenius_cost(V) == pytest.approx(2 * x @ x / (4 * 0.1**2) + 2 * d * C**2, rel=1e-12)
        assert frob_paper < icl.frobenius_cost(V) < frob_spec
        assert icl.frobenius_cost(icl.paper_construction(int(np.log2(d)), 0.1)[1]) == pytest.approx(frob_paper)


def _sign_code_heads(d, gamma):
    """Zero-loss heads that satisfy the paper's own sign-covering notion (proof of Thm 5.5.1) with fewer negative heads
    than that proof allows: r negative heads whose sign patterns over the d coordinates are d distinct
    r//2-subsets of [r] (an antichain, so each ordered pair (i, j) has a head with V_ii > 0 > V_jj; Sperner:
    r = min{r : C(r, r//2) >= d}), scale 1/(4 gamma), and two positive heads +-C I with C = (1 + r)/(4 gamma)."""
    r = 2
    while math.comb(r, r // 2) < d:
        r += 1
    S = -np.ones((r, d))
    for l, code in enumerate(itertools.islice(itertools.combinations(range(r), r // 2), d)):
        S[list(code), l] = 1
    C = (1 + r) / (4 * gamma)
    return np.r_[-np.ones(r), 1.0, 1.0], np.vstack([S / (4 * gamma), np.full((2, d), C) * [[1], [-1]]])


@pytest.mark.parametrize("d,heads", [(4, 6), (8, 7), (16, 8), (32, 9), (64, 10)])
def test_sign_covering_codes_need_fewer_heads_than_the_counting_says(d, heads):
    """errata (Thm 5.5.1 proof): "2 nu2 - 1 negative neurons are not enough" fails for nu2 >= 3 even within the paper's
    own covering notion: d = 8 needs 5 = 2 nu2 - 1, d = 16 needs 6 < 7 (plus two positive heads)."""
    gamma = 0.1
    a, V = _sign_code_heads(d, gamma)
    assert len(a) == heads <= 2 * (int(np.log2(d)) + 1)
    neg = V[a < 0]
    covered = all(np.any((np.sign(neg[:, i]) == z) & (np.sign(neg[:, j]) == -z))
                  for i in range(d) for j in range(d) if i != j for z in (1, -1))
    assert covered  # every negative pattern (-1, {(i, z), (j, -z)}) is covered in the sense of the proof of Thm 5.5.1
    p = icl.ParityProblem(d=d, k=2, gamma=gamma, pT=0.4)
    assert icl.population_hinge(p, a, V, split=True) == (0.0, 0.0)
    assert icl.margins(p, a, V)[1].min() >= 1 - 1e-12  # 1e-12: float64 rounding of 2 gamma / (4 gamma)


def _three_head_networks(rng):
    """Networks with at most 3 heads: drop-one subnetworks of the zero-loss 4-head network, and random ones
    (diagonal and full V, any signs of a)."""
    for d in (2, 4, 5):
        a, V = icl.four_head_counterexample(d, 0.1)
        for n in range(4):
            yield d, np.delete(a, n), np.delete(V, n, 0)
    for _ in range(20):
        d = int(rng.integers(3, 7))
        m = int(rng.integers(1, 4))
        shape = (m, d) if rng.random() < 0.5 else (m, d, d)
        yield d, rng.uniform(-1, 1, m), rng.standard_normal(shape) * rng.choice([1.0, 10.0])


def test_three_heads_cannot_fit_any_task():
    """errata: 4 heads are the minimum for every d (proof; this test checks the bound it gives). Suppose at most
    one head has a_n > 0. A query phi with y = +1 and -phi (same label, also in the support) have opposite
    pre-activations L_n(-phi) = -L_n(phi), so the positive head is active on at most one of them and y g <= 0
    on the other: hinge >= 1 on one of each pair, probability >= (1/4 - gamma) 2^-(d-2) per pair, >= 1/4 - gamma
    per task. Likewise with at most one negative head (pairs with y = -1, >= 1/4). So m <= 3 heads leave every
    task set a loss >= 1/4 - gamma (diagonal or full V); four_head_counterexample reaches 0 with 4."""
    gamma, rng = 0.1, np.random.default_rng(11)
    tight = []
    for d, a, V in _three_head_networks(rng):
        p = icl.ParityProblem(d=d, k=2, gamma=gamma, pT=0.4)
        l1, l2 = icl.population_hinge(p, a, V, split=True)
        assert l1 >= 0.25 - gamma - 1e-12 and (d == 2 or l2 >= 0.25 - gamma - 1e-12)  # S2 is empty at d = 2
        tight.append(l1)
    assert min(tight) == pytest.approx(0.25 - gamma, abs=1e-12)  # attained (d = 2, one positive head dropped)


# ---- finite-M evaluation (Thm 5.5.2) --------------------------------------------------------------------

def test_noise_energy_monte_carlo_and_singular_gram():
    V = icl.paper_construction(3, 0.1, nu1=1)[1]
    D = V.T
    assert np.linalg.matrix_rank(D.T @ D) < D.shape[1]  # the printed D (D^T D)^-1 D^T is undefined (Section 5.5.2)
    rng, M, n = np.random.default_rng(0), 16, 20_000
    Xi = (2.0 * rng.binomial(M, 0.5, size=(n, 8)) - M) / M
    P = D @ np.linalg.pinv(D)
    e = np.sum((Xi @ P) ** 2, 1)
    assert abs(e.mean() - icl.noise_energy(V, M)) <= 5 * e.std() / np.sqrt(n)  # 5 SE, n = 2e4, seed 0


def test_mc_eval_against_full_prompt_sampling():
    """The exact sampler of z = y^T Phi / M against drawing every example of every prompt (numpy)."""
    p = icl.ParityProblem.paper(1, 3, 0.1)
    a, V = icl.paper_construction(3, 0.1, nu1=1)
    M, n, flip = 16, 20_000, 0.25
    rng = np.random.default_rng(5)
    S1, _ = icl.task_sets(8, 2)
    t = S1[rng.integers(0, len(S1), n)]
    pats, probs = icl.pattern_probs(0.1)
    phi = rng.choice([-1.0, 1.0], size=(n, M + 1, 8))
    f = pats[rng.choice(4, size=(n, M + 1), p=probs)]
    rows = np.arange(n)[:, None]
    phi[rows, np.arange(M + 1), t[:, :1]], phi[rows, np.arange(M + 1), t[:, 1:]] = f[..., 0], f[..., 1]
    y = f[..., 0] * f[..., 1]
    yc = y[:, :M].copy()
    yc[:, :round(flip * M)] *= -1
    z = np.einsum("nl,nld->nd", yc, phi[:, :M]) / M
    g = np.maximum((z * phi[:, M]) @ V.T, 0) @ a
    hinge = np.maximum(1 - y[:, M] * g, 0)
    r = icl.mc_eval(p, a, V, M, prompts=n, seed=6, flip=flip)
    se = np.hypot(hinge.std() / np.sqrt(n), r["hinge_se"])
    assert abs(hinge.mean() - r["hinge"]) <= 5 * se  # 5 SE of the difference, two independent samples


def test_gap_decays_like_inverse_sqrt_M_and_small_model_is_more_robust():
    p = icl.ParityProblem.paper(1, 3, 0.1)
    small, large = icl.paper_construction(3, 0.1, nu1=1), icl.paper_construction(3, 0.1)
    Ms = np.array([64, 256, 1024, 4096])
    gaps = np.array([icl.mc_eval(p, *small, m, prompts=4000, seed=1)["gap"] for m in Ms])
    slope = np.polyfit(np.log(Ms), np.log(gaps), 1)[0]
    assert abs(slope + 0.5) < 0.05  # theory -1/2 (App. D.3.2); 0.05 >> the MC error of the slope (~0.01)
    for m in (64, 256, 1024):
        rs, rl = (icl.mc_eval(p, *h, m, prompts=4000, seed=2) for h in (small, large))
        assert rs["hinge"] + 3 * rs["hinge_se"] < rl["hinge"] - 3 * rl["hinge_se"]
    assert icl.mc_eval(p, *large, 10**8, prompts=2000)["acc"] == 1.0  # M -> inf: signal only (Thm 5.5.2)


def test_predict_observables_and_regime():
    pred = popdyn.predict(icl.ParityProblem.paper(1, 3, 0.1), test_context=[16, 256], prompts=2000)
    assert pred.t is None and pred["loss_large"] == 0 and pred["loss_small_S1"] == 0
    assert pred.coords["test_context"].tolist() == [16, 256] and "test_context" not in pred.observables
    assert pred["hinge_small"].shape == (2,) and np.all(pred["hinge_small"] < pred["hinge_large"])
    assert pred.meta["regime"][0]["holds"]
    with pytest.warns(RegimeWarning, match="pT_max"):
        popdyn.predict(icl.ParityProblem(d=8, k=2, gamma=0.1, pT=0.0), test_context=[16], prompts=10)


# ---- bad input --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,name", [(dict(d=4, k=5, gamma=0.1, pT=0.1), "k"),
                                         (dict(d=4, k=2, gamma=0.25, pT=0.1), "gamma"),
                                         (dict(d=4, k=2, gamma=0.1, pT=0.5), "pT"),
                                         (dict(d=1.5, k=2, gamma=0.1, pT=0.1), "d"),
                                         (dict(d=4, k=2, gamma=float("nan"), pT=0.1), "gamma")])
def test_bad_problem_names_the_parameter(kwargs, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of icl.ParityProblem"):
        icl.ParityProblem(**kwargs)


def test_bad_heads_and_options_name_the_parameter():
    p = icl.ParityProblem(d=4, k=2, gamma=0.1, pT=0.1)
    with pytest.raises(InvalidParameterError, match="'a' parameter"):
        icl.population_hinge(p, [2.0], np.zeros((1, 4)))
    with pytest.raises(InvalidParameterError, match="'V' parameter"):
        icl.population_hinge(p, [0.5], np.zeros((1, 3)))
    with pytest.raises(InvalidParameterError, match="'V' parameter"):
        icl.population_hinge(p, [0.5], np.full((1, 4), np.nan))
    with pytest.raises(InvalidParameterError, match="mc_population_hinge"):
        big = icl.ParityProblem(d=24, k=2, gamma=0.1, pT=0.1)
        icl.population_hinge(big, [0.5], np.ones((1, 24, 24)))
    with pytest.raises(InvalidParameterError, match="'M' parameter"):
        icl.mc_eval(p, [0.5], np.ones((1, 4)), 0)
    with pytest.raises(InvalidParameterError, match="'flip' parameter"):
        icl.mc_eval(p, [0.5], np.ones((1, 4)), 4, flip=1.5)
    with pytest.raises(InvalidParameterError, match="'nu1' parameter"):
        icl.paper_construction(2, 0.1, nu1=3)
    with pytest.raises(InvalidParameterError, match="'problem' parameter"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RegimeWarning)
            popdyn.predict(icl.ParityProblem(d=6, k=2, gamma=0.1, pT=0.01))


def test_population_hinge_with_k_equal_d_is_the_S1_loss_that_the_sampler_draws():
    # k = d leaves S2 empty: every task is drawn from S1 (mc_population_hinge's sampler), so the loss is L_S1 for any
    # pT; weighting L_S1 by 1 - pT (the old form) would be 0.7 L_S1 here and fail the Monte Carlo at > 50 SE
    rng = np.random.default_rng(11)
    p = icl.ParityProblem(d=4, k=4, gamma=0.1, pT=0.3)
    a, V = rng.uniform(-1, 1, 5), rng.standard_normal((5, 4)) * 3
    l1, l2 = icl.population_hinge(p, a, V, split=True)
    assert l2 == 0.0 and icl.population_hinge(p, a, V) == pytest.approx(l1, rel=1e-14)
    mean, se = icl.mc_population_hinge(p, a, V, prompts=100_000, seed=5)
    assert abs(mean - l1) <= 5 * se and l1 > 0.05
