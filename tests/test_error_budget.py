"""The validation suite's error budget (popdyn.validation.error_budget): every claim has an entry, the probabilities are
computed right (against mpmath and Monte Carlo), and the suite's false-failure bound is below 1 %."""
import math

import numpy as np
import pytest
from scipy import stats

from popdyn.validation import claims
from popdyn.validation import error_budget as eb

REGISTRY = claims.discover()


def test_every_registered_claim_has_an_entry():
    without, stale = eb.missing()
    assert not without, f"claims without an error-budget entry: {without}"
    assert not stale, f"budget entries without a registered claim: {stale}"


@pytest.mark.parametrize("cid", sorted(REGISTRY))
def test_entries_give_probabilities(cid):
    entry = eb.BUDGET[cid]
    assert entry.why.strip() and "\n" not in entry.why
    for size in eb.SIZES:
        p = eb.false_failure(cid, size)
        if isinstance(entry.criterion, eb.Unmodelled):
            assert math.isnan(p)
        else:
            assert 0.0 <= p <= 1.0


def _t_two_sided_mpmath(x, df):
    """P(|T_df| > x) by the regularised incomplete beta function, I_{df/(df + x^2)}(df/2, 1/2)."""
    import mpmath
    return float(mpmath.betainc(df / 2, 0.5, 0, df / (df + x * x), regularized=True))


def test_max_abs_z_against_mpmath():
    """resnet.exact_kernel_error at quick size: n max |t_{S-1}| comparisons at the claim's tolerance."""
    mpmath = pytest.importorskip("mpmath")
    c = REGISTRY["resnet.exact_kernel_error"]
    s = c.quick
    n, df = len(s["kernels"]) * len(s["n_train"]) * s["k"], s["seeds"] - 1
    assert eb.false_failure(c.id, "quick") == pytest.approx(n * _t_two_sided_mpmath(c.tolerance, df), rel=1e-9)
    crit = eb.MaxAbsZ(7)                                          # the Gaussian case: 7 P(|Z| > tol)
    assert crit.prob(3.0, {}) == pytest.approx(7 * float(mpmath.erfc(3 / mpmath.sqrt(2))), rel=1e-9)


def test_max_abs_t_against_monte_carlo():
    """Max of n independent |t| statistics, each from S Gaussian draws (mean over SE): the union bound n p is above
    the Monte Carlo frequency and 1 - (1 - p)^n (exact for independent comparisons) matches it."""
    c = REGISTRY["resnet.exact_kernel_error"]
    S, n, tol = c.quick["seeds"], 18, c.tolerance
    rng = np.random.default_rng(0)
    reps = 200_000
    x = rng.standard_normal((reps, n, S))
    t = x.mean(-1) / (x.std(-1, ddof=1) / math.sqrt(S))
    freq = float(np.mean(np.abs(t).max(-1) > tol))
    se = math.sqrt(freq * (1 - freq) / reps)
    p = 2 * stats.t.sf(tol, S - 1)
    assert abs(freq - (1 - (1 - p) ** n)) < 4 * se
    bound = eb.MaxAbsZ(n, df=S - 1).prob(tol, {})
    assert bound >= freq - 4 * se
    assert eb.false_failure(c.id, "quick") == pytest.approx(bound)


def test_family_wise_is_its_level():
    for df in (None, 7):
        assert eb.FamilyWise(0.01, df, 40).prob(1.0, {}) == pytest.approx(0.01, rel=1e-9)
    level = eb.BUDGET["committee.order1"].criterion.alpha
    assert eb.false_failure("committee.order1", "quick") == pytest.approx(level, rel=1e-9)


def test_pilot_single_draw_is_the_cauchy_ratio():
    """One pilot |Z| and one fresh |Z|: P(|Z'| > r |Z|) = (2/pi) arctan(1/r)."""
    for r in (2.0, 10.0):
        assert eb.Pilot(1.0, 1, 1).prob(r, {}) == pytest.approx(2 / math.pi * math.atan(1 / r), rel=1e-6)


def test_pilot_against_monte_carlo():
    """A norm over 6 components: the fresh max of 3 exceeds 2x the pilot max of 3 (both sigma sqrt(chi^2_6 / 6))."""
    rng = np.random.default_rng(2)
    reps = 400_000
    pilot = np.sqrt(rng.chisquare(6, (reps, 3)) / 6).max(1)
    fresh = np.sqrt(rng.chisquare(6, (reps, 3)) / 6).max(1)
    freq = float(np.mean(fresh > 2.0 * pilot))
    assert eb.Pilot(1.0, 3, 3, dof=6).prob(2.0, {}) == pytest.approx(freq, abs=4 * math.sqrt(freq / reps))


def test_range_against_monte_carlo():
    crit, tol = eb.Range(sd_log=0.3, cells=4), 2.5
    rng = np.random.default_rng(1)
    z = rng.standard_normal((400_000, 4)) * 0.3
    freq = float(np.mean(np.ptp(z, axis=1) > math.log(tol)))
    assert crit.prob(tol, {}) == pytest.approx(freq, abs=4 * math.sqrt(freq / 400_000) + 1e-4)
    # cell means spread by 0.4 in log: the bound (noise range > log tol - spread) is above the frequency
    spread = eb.Range(sd_log=0.3, cells=4, spread=0.4)
    freq = float(np.mean(np.ptp(z + np.array([0.0, 0.4, 0.1, 0.2]), axis=1) > math.log(tol)))
    assert freq <= spread.prob(tol, {}) + 4 * math.sqrt(freq / 400_000)


def test_null_inside_against_monte_carlo():
    """Two independent pair log-ratios, both below log(tol): the product of their normal CDFs."""
    crit, tol = eb.NullInside((1.2, 0.97), sd=0.15), 2.5
    rng = np.random.default_rng(3)
    x = rng.standard_normal((400_000, 2)) * 0.15 + np.array([1.2, 0.97])
    freq = float(np.mean(np.all(x < math.log(tol), axis=1)))
    assert crit.prob(tol, {}) == pytest.approx(freq, abs=4 * math.sqrt(freq / 400_000))


def test_binomial_worst_case_of_a_probabilistic_bound():
    """emergence.fixed_feature_bound: each of S draws fails with probability 1/t at worst; two families of draws
    (D^(0), D^mix), each failing when more than a fraction ``tolerance`` of its draws do."""
    c = REGISTRY["emergence.fixed_feature_bound"]
    S, p = c.quick["seeds"], 1 / c.quick["t"]
    tail = sum(math.comb(S, k) * p ** k * (1 - p) ** (S - k) for k in range(math.floor(c.tolerance * S) + 1, S + 1))
    assert eb.false_failure(c.id, "quick") == pytest.approx(2 * tail, rel=1e-9)


def test_changes_are_evaluated_without_editing_the_claim():
    """A lower tolerance, fewer seeds or a replaced entry, evaluated without touching the registry."""
    base = eb.false_failure("icl.lemma51_thm542_mc", "quick")
    assert eb.false_failure("icl.lemma51_thm542_mc", "quick", tolerance=3.0) > 100 * base
    seeds = REGISTRY["resnet.exact_kernel_error"].quick["seeds"]
    assert eb.false_failure("resnet.exact_kernel_error", "quick", changes={"seeds": seeds // 4}) > \
        eb.false_failure("resnet.exact_kernel_error", "quick")
    assert eb.false_failure("icl.rank_gap", "quick", entry=eb.Entry(eb.Exact(), "")) == 0.0
    assert eb.false_failure("icl.lemma51_thm542_mc", "quick") == base


def test_pilots_name_registered_claims_and_confirm_their_entries():
    """Each pending pilot is the claim's own Pilot criterion over more values; recording them lowers the bound."""
    assert set(eb.PILOTS) <= set(REGISTRY)
    for cid, entry in eb.PILOTS.items():
        assert isinstance(entry.criterion, eb.Pilot)
        assert entry.criterion.pilot_comparisons > eb.BUDGET[cid].criterion.pilot_comparisons
        for size in eb.SIZES:
            assert eb.piloted_false_failure(cid, size) <= eb.false_failure(cid, size)


def test_markdown_has_every_claim_and_the_statement():
    md = eb.markdown()
    assert eb.statement() in md
    assert "Under a correct theory the whole suite fails by chance with probability at most" in md
    for cid in REGISTRY:
        assert f"| {cid} |" in md


def test_suite_false_failure_below_one_percent():
    for size in eb.SIZES:
        assert eb.suite_false_failure(size)["total"] < 0.01, size
