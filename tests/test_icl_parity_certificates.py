"""Certified minimum-norm zero-loss heads (validation/icl_parity_certificates.py, docs/errata.md Thm 5.5.1 item 4).

The stored networks are checked with popdyn's own public functions (``icl.margins``, ``icl.population_hinge``,
``icl.frobenius_cost``), independently of the script that found them; the exact values against their rationals;
the branch and bound against popdyn's exhaustive four-head enumeration and against itself without the symmetry
reduction; the weak-duality bound against SLSQP; and the smallest case is re-solved (and by SCIP when PySCIPOpt is
installed).
"""
import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from popdyn.models import icl
from popdyn.models.icl import parity_minnorm as pm
from popdyn.validation import icl_parity_certificates as cert

STORED = cert.load()
GAMMA = cert.GAMMA
# exact values: 7/gamma^2 (four_head_counterexample's norm), 19/(8 gamma^2), 269/(144 gamma^2)
EXACT = {"d4_m4_diagonal": 7 / GAMMA**2, "d4_m4_full": 19 / (8 * GAMMA**2), "d4_m6_diagonal": 269 / (144 * GAMMA**2)}


def _heads(entry):
    return np.array(entry["a"]), np.array(entry["V"])


def test_every_case_is_stored_by_the_branch_and_bound():
    assert {f"{case}/bb" for case in cert.CASES} <= set(STORED)


@pytest.mark.parametrize("key", sorted(STORED))
def test_stored_network_has_zero_loss_and_the_stored_norm(key):
    # popdyn's exact N -> inf hinge (a finite sum for diagonals, Gray-code enumeration for full heads) is 0, every
    # margin is >= 1 (the script rescales by 1 + 4 eps after the exact QP; 1e-12 allows popdyn's own rounding of a
    # margin, <= (d + m + 8) eps (1 + ...) per its Notes), and the norm is the stored value (one float sum).
    entry = STORED[key]
    case = entry["case"]
    problem = cert.problem_of(case)
    assert repr(problem) == entry["problem"]
    a, V = _heads(entry)
    assert set(np.abs(a)) == {1.0} and (a > 0).sum() >= 2 and (a < 0).sum() >= 2
    assert icl.population_hinge(problem, a, V) == 0.0
    if entry["full"]:
        assert V.shape == (entry["heads"], problem.d, problem.d)
        marg = cert.margins_of(problem, a, V, full=True)
    else:
        assert V.shape == (entry["heads"], problem.d)
        marg = icl.margins(problem, a, V)[1]
    assert marg.min() >= 1 - 1e-12
    assert icl.frobenius_cost(V) == pytest.approx(entry["value"], rel=1e-12)


@pytest.mark.parametrize("key", sorted(STORED))
def test_stored_bounds_are_consistent(key):
    entry = STORED[key]
    assert entry["lower_bound"] <= entry["value"] * (1 + 1e-12)
    assert entry["gap"] == pytest.approx((entry["value"] - entry["lower_bound"]) / entry["value"], abs=1e-15)
    assert all(s["lower_bound"] >= entry["lower_bound"] * (1 - 1e-12) for s in entry["splits"])
    assert sorted(s["positive_heads"] for s in entry["splits"]) == list(range(2, entry["heads"] - 1))
    if entry["certified"]:
        assert entry["gap"] <= 1e-6 and all(s["status"] == "optimal" for s in entry["splits"])


@pytest.mark.parametrize("case", sorted(EXACT))
def test_certified_values_are_the_exact_rationals(case):
    # 1e-12: the stored norm is a float sum of squares of QP vertices (measured ~1e-15 relative)
    entry = STORED[f"{case}/bb"]
    assert entry["certified"] and entry["gap"] <= 1e-6
    assert entry["value"] == pytest.approx(EXACT[case], rel=1e-12)


@pytest.mark.parametrize("case, den, squares", [("d4_m4_diagonal", 4, 112), ("d4_m4_full", 8, 152),
                                                 ("d4_m6_diagonal", 48, 4304)])
def test_certified_networks_are_rational_with_margins_exactly_one(case, den, squares):
    # V = K / (den gamma) with an integer K (a vertex of the region QP): the margins y sum_n a_n ReLU(2 <K, x> / den)
    # (gamma cancels) are >= 1 with equality somewhere, and sum K^2 / den^2 = value gamma^2, all in exact rationals
    from fractions import Fraction
    entry = STORED[f"{case}/bb"]
    a, V = _heads(entry)
    K = np.rint(V * den * GAMMA).astype(int).reshape(len(a), -1)
    np.testing.assert_allclose(V.reshape(len(a), -1) * den * GAMMA, K, atol=1e-8)
    X, y, w = pm.query_design(cert.problem_of(case), full=entry["full"])
    X = X[w > 0].astype(int)
    margins = [int(lab) * sum(int(an) * max(Fraction(2 * int(k @ x), den), 0) for an, k in zip(a, K))
               for x, lab in zip(X, y[w > 0])]
    assert min(margins) == 1
    assert int(np.sum(K**2)) == squares and Fraction(squares, den**2) * 100 == Fraction(EXACT[case]).limit_denominator()


def test_the_four_head_minimum_of_700_holds_for_diagonal_heads_only():
    # docs/errata.md: full heads (the paper's W^(n) in R^{d x d}) reach loss 0 at 237.5 < 700 with 4 heads, and
    # the certified 6-head values lie below the paper's g2* (300 at d = 4; 1200 at d = 8 for 8 heads)
    assert STORED["d4_m4_full/bb"]["value"] < STORED["d4_m4_diagonal/bb"]["value"]
    assert STORED["d4_m6_diagonal/bb"]["value"] < icl.frobenius_cost(icl.paper_construction(2, GAMMA)[1])
    assert STORED["d4_m6_full/bb"]["value"] <= STORED["d4_m6_diagonal/bb"]["value"]
    assert STORED["d8_m8_diagonal/bb"]["value"] < icl.frobenius_cost(icl.paper_construction(3, GAMMA)[1])


def test_dual_bound_never_exceeds_the_ldp_optimum():
    # Weak duality: (h^T lam)_+^2 / ||G^T lam||^2 <= min ||x||^2 s.t. G x >= h for every lam >= 0, with equality at
    # the optimal multipliers. Oracle: SLSQP to ftol 1e-15 on random feasible systems, some rank-deficient (copies
    # and negations of rows, where scipy's NNLS can stall); 1e-8 relative is SLSQP's accuracy here.
    rng = np.random.default_rng(0)
    for trial in range(20):
        n = int(rng.integers(3, 9))
        G = rng.normal(size=(int(rng.integers(2, 12)), n))
        if trial % 2:
            G = np.vstack([G, G[:2], -G[:1] * 0.5])
        h = G @ rng.normal(size=n) - rng.uniform(0, 1, len(G))        # feasible: a point with slack
        res = minimize(lambda v: (v @ v, 2 * v), np.zeros(n), jac=True, method="SLSQP",
                       constraints=[{"type": "ineq", "fun": lambda v: G @ v - h, "jac": lambda v: G}],
                       options={"maxiter": 1000, "ftol": 1e-15})
        x, lower = cert._ldp(G, h)
        assert (G @ x - h).min() >= -1e-9
        assert lower <= res.fun * (1 + 1e-8) + 1e-12
        assert x @ x == pytest.approx(res.fun, rel=1e-7, abs=1e-10)
        assert lower == pytest.approx(res.fun, rel=1e-7, abs=1e-10)
        for _ in range(5):
            assert cert._dual_bound(G, h, rng.uniform(0, 1, len(h))) <= res.fun * (1 + 1e-8) + 1e-12


def test_infeasible_ldp_has_an_infinite_bound():
    G = np.array([[1.0, 0.0], [-1.0, 0.0]])
    x, lower = cert._ldp(G, np.array([1.0, 1.0]))   # x_1 >= 1 and -x_1 >= 1
    assert x is None and lower > 1e12


@pytest.mark.slow
@pytest.mark.parametrize("d, capacity", [(3, False), (3, True), (4, True)])   # (4, False): 2 more minutes
def test_branch_and_bound_matches_the_four_head_enumeration(d, capacity):
    # popdyn's four_head_min_norm enumerates every chamber quadruple (an independent exhaustive method); the
    # branch and bound, with and without the symmetry reduction and the capacity bounds, finds the same minimum
    # from a loose incumbent (an invalid bound would prune the optimum and leave a larger value).
    problem = icl.ParityProblem(d=d, k=2, gamma=GAMMA, pT=0.05)
    X, y, partner = cert.design(problem, full=False)
    enum = pm.four_head_min_norm(problem).norm
    for symmetry in (True, False) if d == 3 or not capacity else (True,):   # d = 4 without either: ~1 min
        out = cert.branch_and_bound(X, y, partner, np.array([1.0, 1.0, -1.0, -1.0]), 2 * GAMMA,
                                    (10 * enum, None), full=False, symmetry=symmetry, time_limit=120,
                                    capacity=capacity)
        assert out["status"] == "optimal" and out["x"] is not None
        assert out["value"] == pytest.approx(enum, rel=1e-9)
        assert out["lower_bound"] == pytest.approx(enum, rel=1e-7)


def test_symmetry_reduction_keeps_the_optimum_of_full_heads():
    # d = 3, 4 full heads: the sorted negative head and the paired positive heads remove no optimum
    problem = icl.ParityProblem(d=3, k=2, gamma=GAMMA, pT=0.05)
    X, y, partner = cert.design(problem, full=True)
    values = [cert.branch_and_bound(X, y, partner, np.array([1.0, 1.0, -1.0, -1.0]), 2 * GAMMA, (1e4, None),
                                    full=True, symmetry=s, time_limit=120) for s in (True, False)]
    assert all(v["status"] == "optimal" for v in values)
    assert values[0]["value"] == pytest.approx(values[1]["value"], rel=1e-7)


@pytest.mark.slow
@pytest.mark.parametrize("full, m, n_pos", [(False, 6, 4), (True, 5, 2)])
def test_head_order_rows_keep_the_optimum(full, m, n_pos):
    # d = 3 with interchangeable heads left after the symmetry reduction (positive heads 3-4 of a diagonal
    # network, negative heads 2-3 of a full one), so the head-order rows are active: same minimum without them
    problem = icl.ParityProblem(d=3, k=2, gamma=GAMMA, pT=0.05)
    X, y, partner = cert.design(problem, full=full)
    signs = np.r_[np.ones(n_pos), -np.ones(m - n_pos)]
    split = cert._Split(X, y, partner, signs, 2 * GAMMA)
    cert._break_symmetry(split, X, y, partner, full)
    assert len(split.G_sym) == 4       # 3 sorting rows and 1 head-order row
    outs = [cert.branch_and_bound(X, y, partner, signs, 2 * GAMMA, (1e4, None), full=full, symmetry=s,
                                  time_limit=np.inf, capacity=True) for s in (True, False)]
    assert all(o["status"] == "optimal" for o in outs)
    assert outs[0]["value"] == pytest.approx(outs[1]["value"], rel=1e-7)


def _node_bounds(case, x_star, signs, rng, trials):
    """(LDP bound, capacity bound) at random nodes containing the network ``x_star`` (its own signs fixed on a
    random subset of (head, pair)), no symmetry rows."""
    entry = STORED[f"{case}/bb"]
    X, y, partner = cert.design(cert.problem_of(case), full=entry["full"])
    split = cert._Split(X, y, partner, signs, 2 * GAMMA)
    own = np.where(split.z(x_star)[split.first] >= 0, 1, -1).T.astype(np.int8)   # (m, pairs)
    out = []
    for _ in range(trials):
        fixed = own * (rng.uniform(size=own.shape) < rng.uniform(0.2, 0.9))
        x, lower = split.relax(fixed)
        assert x is not None
        out.append((lower, split.capacity_bound(fixed, x)))
    return np.array(out)


@pytest.mark.parametrize("case", ["d4_m6_diagonal", "d4_m4_full", "d8_m8_diagonal"])
def test_capacity_bound_never_exceeds_a_network_of_the_node(case):
    # Weak duality of the capacity relaxation: at any node, the bound is <= the norm of every zero-loss network
    # in it. Networks: the stored optimum and random perturbations of it rescaled to margin 1 (each in the node
    # of its own signs); 1e-9 relative covers the float evaluation of (h^T lam)^2 / sum a_n^2. The bound must
    # also beat the LDP bound somewhere (else the test could not fail for a bound that is always 0).
    entry = STORED[f"{case}/bb"]
    a, V = _heads(entry)
    problem = cert.problem_of(case)
    rng = np.random.default_rng(1)
    improved = 0
    for trial in range(4):
        W = V.reshape(len(a), -1) * (1 + (0.3 * rng.normal(size=V.reshape(len(a), -1).shape) if trial else 0))
        marg = cert.margins_of(problem, a, W, full=entry["full"])
        if marg.min() <= 0:
            continue
        W = W / marg.min()
        bounds = _node_bounds(case, W.ravel(), a, rng, 6)
        assert np.all(bounds[:, 1] <= np.sum(W * W) * (1 + 1e-9))
        improved += int(np.sum(bounds[:, 1] > bounds[:, 0] * (1 + 1e-6)))
    assert improved > 0


def test_sub_design_is_the_smaller_problem_and_its_bound_holds():
    # The tasks inside 3 of 4 coordinates are the d = 3 problem (diagonal heads; the 4th column 0), and
    # (d / k) OPT_k <= OPT_d: 4/3 of the certified 3-coordinate minimum with 4 heads is <= 700
    problem = cert.problem_of("d4_m4_diagonal")
    Xs, ys, ps = cert.sub_design(problem, False, 3)
    X3, y3, _ = cert.design(icl.ParityProblem(d=3, k=2, gamma=GAMMA, pT=0.05), False)
    assert np.all(Xs[:, 3] == 0) and np.all(Xs[ps] == -Xs) and np.all(ys[ps] == ys)
    assert sorted(map(tuple, np.c_[Xs[:, :3], ys])) == sorted(map(tuple, np.c_[X3, y3]))
    out = cert.branch_and_bound(Xs, ys, ps, np.array([1.0, 1.0, -1.0, -1.0]), 2 * GAMMA, (1e4, None), full=False,
                                time_limit=60, capacity=True, k=3)
    enum3 = pm.four_head_min_norm(icl.ParityProblem(d=3, k=2, gamma=GAMMA, pT=0.05)).norm
    assert out["status"] == "optimal" and out["value"] == pytest.approx(enum3, rel=1e-9)
    assert 4 / 3 * out["lower_bound"] <= STORED["d4_m4_diagonal/bb"]["value"] * (1 + 1e-9)
    # full heads: the tasks inside rows 0-2 (all 4 columns of phi), 3 tasks x 16 queries
    Xf, yf, pf = cert.sub_design(problem, True, 3)
    assert Xf.shape == (48, 16) and np.all(Xf.reshape(-1, 4, 4)[:, 3, :] == 0)


@pytest.mark.slow
def test_certify_reproduces_the_stored_smallest_case():
    # the generator's output, not only its helpers (4 diagonal heads, d = 4: about 20 s on one core, so slow)
    stored = STORED["d4_m4_diagonal/bb"]
    fresh = cert.certify("d4_m4_diagonal", time_limit=60)
    assert fresh["certified"] and fresh["value"] == pytest.approx(stored["value"], rel=1e-12)
    # ... and with the sub-problem of 3 coordinates first (its bound times 4/3 joins the split's bound)
    via_sub = cert.certify("d4_m4_diagonal", time_limit=60, subset_k=3)
    assert via_sub["certified"] and via_sub["splits"][0]["subproblem"]["k"] == 3
    assert fresh["lower_bound"] == pytest.approx(stored["lower_bound"], rel=1e-9)
    np.testing.assert_allclose(np.sort(np.abs(np.ravel(fresh["V"]))), np.sort(np.abs(np.ravel(stored["V"]))),
                               rtol=1e-9, atol=1e-9)


def test_scip_miqp_resolves_the_smallest_case():
    pytest.importorskip("pyscipopt")
    problem = cert.problem_of("d4_m4_diagonal")
    X, y, partner = cert.design(problem, full=False)
    out = cert.miqp_scip(X, y, partner, np.array([1.0, 1.0, -1.0, -1.0]), 2 * GAMMA, 700.0, time_limit=30)
    assert out["status"] == "optimal"
    # SCIP's tolerances: feasibility 1e-6 on the margin rows, so value and bound within ~2e-6 relative of 700
    assert out["lower_bound"] == pytest.approx(700.0, rel=1e-5)
    assert out["value"] == pytest.approx(700.0, rel=1e-5)


def test_save_round_trips_and_replaces_atomically(tmp_path):
    """save writes the whole file or nothing (no temporary left beside it) and load reads back what was saved."""
    path = tmp_path / "sub" / "certificates.json"
    cert.save({"a": {"value": 1.5}}, path)
    cert.save({"b": {"value": 2.5}}, path)
    assert cert.load(path) == {"b": {"value": 2.5}}
    assert [p.name for p in path.parent.iterdir()] == ["certificates.json"]
    assert cert.load(tmp_path / "absent.json") == {}


# ---- the symmetric Lagrangian bound (method "dual") ----

@pytest.mark.parametrize("d", [3, 4, 5, 6])
def test_sorted_sign_patterns_are_every_pattern_of_a_sorted_vector(d):
    # the bound takes S+ as the largest of sum sigma (u_i + u_j) over these patterns: a pattern of a sorted vector
    # that is missing would let g+ come out too small and the bound too large. Vectors: mixed scales and integers
    # with ties (sign(0) = +1, as the patterns' convention); 2^(d-1) patterns
    pats = {tuple(p) for p in cert._sorted_sign_patterns(d).astype(int)}
    assert len(pats) == 2 ** (d - 1)
    rng = np.random.default_rng(d)
    pairs = list(itertools.combinations(range(d), 2))
    seen = set()
    for _ in range(20000):
        u = rng.normal(size=d) * rng.choice([0.1, 1.0, 10.0], size=d)
        if rng.uniform() < 0.3:
            u = np.rint(u)
        u = np.sort(u)[::-1]
        pat = tuple(1 if u[i] + u[j] >= 0 else -1 for i, j in pairs)
        assert pat in pats
        seen.add(pat)
    assert seen == pats


@pytest.mark.parametrize("d, rho", [(3, 0.3), (4, 0.5), (4, 2.0), (5, 0.4)])
def test_dual_maxima_are_the_maxima_over_the_sphere(d, rho):
    # g+ and g- are upper bounds by construction (any y, theta); they must also be the maxima themselves (exact
    # projections): brute force over 2e4 directions, the best 20 refined by Nelder-Mead, lies below each and within
    # 1e-4 relative of it
    pairs = list(itertools.combinations(range(d), 2))
    P = np.array([[1.0 if k in (i, j) else 0.0 for k in range(d)] for i, j in pairs])
    M = np.array([[1.0 if k == i else -1.0 if k == j else 0.0 for k in range(d)] for i, j in pairs])
    f_pos = lambda u: (rho * np.abs(P @ u).sum() - np.abs(M @ u).sum()) / np.linalg.norm(u)
    f_neg = lambda u: (np.abs(M @ u).sum() - rho * np.abs(P @ u).sum()) / np.linalg.norm(u)
    out = cert.symmetric_dual_bound(d, 2, 2, GAMMA, rho=rho)
    rng = np.random.default_rng(0)
    U = rng.normal(size=(20_000, d))
    for f, g in ((f_pos, out["g_pos"]), (f_neg, out["g_neg"])):
        vals = np.array([f(u) for u in U])
        starts = U[np.argsort(vals)[-20:]]
        best = max(max(vals.max(), 0.0), max(-minimize(lambda u: -f(u), u0, method="Nelder-Mead",
                                                        options={"xatol": 1e-12, "fatol": 1e-14,
                                                                 "maxiter": 20_000}).fun for u0 in starts))
        assert best <= g * (1 + 1e-9) + 1e-12
        assert g <= best * (1 + 1e-4) + 1e-9


def test_dual_bound_is_below_the_exhaustive_four_head_minimum():
    # popdyn's four_head_min_norm enumerates every chamber quadruple: the exact 2 + 2 split optimum at d = 3 (d = 4
    # takes 3.5 minutes). The bound is below it (validity) and above a quarter of it (not vacuous)
    problem = icl.ParityProblem(d=3, k=2, gamma=GAMMA, pT=0.05)
    enum = pm.four_head_min_norm(problem).norm
    bound = cert.symmetric_dual_bound(3, 2, 2, GAMMA)["lower_bound"]
    assert 0.25 * enum <= bound <= enum * (1 + 1e-12)


@pytest.mark.parametrize("case", ["d4_m4_diagonal", "d4_m6_diagonal"])
def test_dual_bound_is_below_the_certified_optima(case):
    # the least bound over the splits is below the certified global minimum (700, 186.81)
    entry = STORED[f"{case}/bb"]
    assert entry["certified"]
    m, d = entry["heads"], entry["d"]
    bound = min(cert.symmetric_dual_bound(d, k, m - k, GAMMA)["lower_bound"] for k in range(2, m - 1))
    assert 0.25 * entry["value"] <= bound <= entry["value"] * (1 + 1e-12)


@pytest.mark.parametrize("case", ["d4_m6_diagonal", "d8_m8_diagonal"])
def test_dual_bound_is_below_every_zero_loss_network_of_its_split(case):
    # the stored network and random perturbations of it rescaled to margin 1: each norm is >= the bound of the
    # network's own split (1e-12 relative for the float evaluation)
    entry = STORED[f"{case}/bb"]
    a, V = _heads(entry)
    problem = cert.problem_of(case)
    bound = cert.symmetric_dual_bound(problem.d, int((a > 0).sum()), int((a < 0).sum()), GAMMA)["lower_bound"]
    rng = np.random.default_rng(2)
    norms = []
    for trial in range(50):
        W = V * (1 + (trial > 0) * rng.normal(scale=0.05, size=V.shape))
        low = icl.margins(problem, a, W)[1].min()
        if low > 0:
            norms.append(icl.frobenius_cost(W / low))
    assert len(norms) >= 10 and min(norms) >= bound * (1 - 1e-12)
