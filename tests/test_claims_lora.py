"""Falsification tests of the LoRA claims (issue 7): each claim PASSES with popdyn's theory and FAILS with a
deliberately wrong one, at a reduced size.

The SGD runs of a claim are seeded and do not depend on the theory, so this module memoises
``popdyn.simulate`` (:func:`_simulate_once`): the ``wrong=True`` run reuses the simulations of the
``wrong=False`` run and only the theory changes. Each test's comment names the wrong theory and its
margin (measured value of the claim with it, against the tolerance) at the size used.
"""
import math
from pathlib import Path

import numpy as np
import pytest

import popdyn
from popdyn.validation import claims
from tests.falsify import falsifies, perturb, run_claim, scaled

pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::popdyn.RegimeWarning")  # the paper's ODE at delta > 0.01

ODE_H = "popdyn.models.lora.dynamics.h"  # where the overlap ODE (popdyn.predict) looks h up
_SIMS = {}


@pytest.fixture
def _simulate_once(monkeypatch):
    """``popdyn.simulate`` memoised on (problem repr, options) for this module's tests."""
    simulate = popdyn.simulate

    def once(problem, **kw):
        key = (repr(problem), tuple(sorted(kw.items())))
        if key not in _SIMS:
            _SIMS[key] = simulate(problem, **kw)
        return _SIMS[key]
    monkeypatch.setattr(popdyn, "simulate", once)


def _paper_ode(monkeypatch):
    """Every ``popdyn.predict`` call answers with the paper's population ODE (App. C.1) instead of the corrected one."""
    perturb(monkeypatch, "popdyn.predict", lambda f: lambda problem, **kw: f(problem, **{**kw, "convention": "paper"}))


def _verdict(claim_id, tmp_path, wrong, **size):
    verdict, res = run_claim(claim_id, tmp_path, **size)
    print(f"{claim_id} wrong={wrong}: measured {res.measured:.4g}, checks {res.checks}")
    assert verdict == ("FAIL" if wrong else "PASS"), f"{claim_id}: measured {res.measured:.4g}; {res.message}"
    assert res.figure and Path(res.figure).exists() and res.table
    (c,) = claims.select([claim_id])
    assert c.kind in claims.KINDS and c.nulls and set(res.nulls) == set(c.nulls)
    if not wrong:  # every declared null is measured on the same SGD runs and rejected
        assert all(claims.null_rejected(c, v) for v in res.nulls.values()), res.nulls
    return res


# ---- the claims' own pieces ------------------------------------------------------------------------------

def test_mc_gradient_matches_prop4_at_a_golden_point():
    from popdyn.models import lora
    from popdyn.validation.claims.lora import mc_gradient_loss
    p = lora.Problem.orthonormal(4, 1.5, "tanh", seed=1)  # h(0.5) = 0.107, h(-0.5) = -0.011
    g, g_se, loss, loss_se = mc_gradient_loss(p, 0.5, 200_000, seed=7)
    assert abs(g - (-float(lora.h(p, 0.5)) * 0.75)) < 5 * g_se  # 5 SE, n = 2e5, seed 7
    assert abs(loss - float(lora.population_loss(p, 0.5))) < 5 * loss_se  # 5 SE
    # the MC is not vacuous: a wrong sign of m (h(-m) != h(m) here) is many SE away
    assert abs(g - (-float(lora.h(p, -0.5)) * 0.75)) > 5 * g_se


def test_mc_gradient_is_exactly_zero_when_student_is_teacher():
    from popdyn.models import lora
    from popdyn.validation.claims.lora import mc_gradient_loss
    p = lora.Problem.orthonormal(4, 1.5, "relu", seed=2)
    p = lora.Problem(p.G, p.lam, p.c, p.c, p.xi, activation="relu")  # c_hat = c, m = 1: student = teacher
    assert mc_gradient_loss(p, 1.0, 10_000, seed=0) == (0.0, 0.0, 0.0, 0.0)  # residual is exactly 0


def test_paper_glm_formula_is_off_by_the_errata_factor():
    from popdyn.models import lora
    from popdyn.validation.claims.lora import paper_glm_h
    m = np.linspace(-1, 1, 7)
    # He3: only mu_3 = 1; printed sum_l l mu_(l+1)^2 m^l = 2 m^2, corrected 2 K'(m) = 6 m^2 (docs/errata.md)
    np.testing.assert_allclose(paper_glm_h("he3", m), 2 * m ** 2, atol=1e-12)  # 1e-12: Hermite coeffs of He3
    np.testing.assert_allclose(lora.glm_h("he3", m), 3 * paper_glm_h("he3", m), atol=1e-12)


def test_joint_frozen_ratio_and_its_standard_error():
    from popdyn.validation.claims.lora_figures import _bonferroni_z, joint_frozen_ratio
    assert [round(_bonferroni_z(n), 2) for n in (1, 2, 4)] == [3.0, 3.21, 3.4]
    assert [round(_bonferroni_z(n, seeds=8), 2) for n in (1, 2, 4)] == [4.53, 5.13, 5.78]  # Student t, 7 d.o.f.
    # identical runs: ratio exactly 1, SE from the recording resolution only: dt/sqrt(12) sqrt(2)/t/sqrt(R)
    r, se = joint_frozen_ratio([100.0, 200.0], [100.0, 200.0], dt=10.0, horizon=1000)
    assert r == 1.0 and np.isclose(se, np.sqrt((100 / 12 * 2 / 100**2 + 100 / 12 * 2 / 200**2) / 4))
    # paired log ratios log(1/2), log(1/2): geometric mean 1/2, no seed spread
    r, se = joint_frozen_ratio([50.0, 100.0], [100.0, 200.0], dt=0.0, horizon=1000)
    assert np.isclose(r, 0.5) and se == 0.0
    # a frozen run that never escapes counts at the horizon (conservative); a joint one makes r infinite
    assert np.isclose(joint_frozen_ratio([50.0], [None], dt=0.0, horizon=100)[0], 0.5)
    assert joint_frozen_ratio([None, 50.0], [100.0, 100.0], dt=0.0, horizon=100) == (math.inf, math.inf)


# ---- lora.py: Prop. 4, the ODE, the plateau, the GLM limit ---------------------------------------------

@falsifies("lora.prop4_gradient")
@pytest.mark.parametrize("wrong", [False, True])
def test_prop4_fails_h_five_percent_off(wrong, monkeypatch, tmp_path):
    # h 5 % too large: the u-component of the gradient moves by 0.05 |h|(1-m^2), ~7 MC standard errors
    # at n = 2e5 for tanh (measured max |z| 8.4 vs tolerance 4; right theory 1.5)
    if wrong:
        perturb(monkeypatch, "popdyn.models.lora.h", scaled(1.05))
    _verdict("lora.prop4_gradient", tmp_path, wrong, activations=["tanh"], features=["random"], m=[0.0, 0.5],
             n=200_000)


@falsifies("lora.prop4_gradient")
@pytest.mark.parametrize("wrong", [False, True])
def test_prop4_fails_phi_five_percent_off(wrong, monkeypatch, tmp_path):
    # Phi 5 % too large: the loss is ~12 MC standard errors off at n = 2e5 (measured max |z| 12.1 vs 4;
    # right theory 1.4)
    if wrong:
        perturb(monkeypatch, "popdyn.models.lora.population_loss", scaled(1.05))
    _verdict("lora.prop4_gradient", tmp_path, wrong, activations=["tanh"], features=["random"], m=[0.5],
             n=200_000)


@falsifies("lora.ode_vs_sgd")
@pytest.mark.parametrize("wrong", [False, True])
def test_ode_vs_sgd_fails_the_papers_ode(wrong, monkeypatch, tmp_path, _simulate_once):
    # the paper's population ODE (no normalisation drift) in place of the corrected one: at delta = 0.5 it runs
    # ahead of SGD by 0.16 in m by tau = 2 (measured excess 0.117 vs tolerance 0.01; right theory -0.010,
    # q SE with q the Student-t quantile)
    if wrong:
        _paper_ode(monkeypatch)
    _verdict("lora.ode_vs_sgd", tmp_path, wrong, d=[1000], tau=2.0)


@falsifies("lora.plateau")
@pytest.mark.parametrize("wrong", [False, True])
def test_plateau_fails_a_ten_percent_plateau_error(wrong, monkeypatch, tmp_path, _simulate_once):
    # 1 - |m*| 10 % too large: 0.023 off, against the allowed q SE + 2 % at 8 seeds, d = 500
    # (measured 1.27 vs tolerance 1; right theory 0.24)
    if wrong:
        def wrong_plateau(f):
            def m_star(*a, **k):
                m = f(*a, **k)
                return math.copysign(1 - 1.1 * (1 - abs(m)), m)
            return m_star
        perturb(monkeypatch, "popdyn.models.lora.plateau_overlap", wrong_plateau)
    _verdict("lora.plateau", tmp_path, wrong, delta=[0.5], tau=15.0)


@falsifies("lora.plateau")
@pytest.mark.parametrize("wrong", [False, True])
def test_plateau_fails_the_papers_ode(wrong, monkeypatch, tmp_path, _simulate_once):
    # the paper's ODE has no plateau (m* = sign(h(0))): SGD stays 0.23 below it (measured 22.7 vs 1)
    if wrong:
        perturb(monkeypatch, "popdyn.models.lora.plateau_overlap",
                lambda f: lambda problem, *a, **k: float(np.sign(f(problem, *a, **k))))
    _verdict("lora.plateau", tmp_path, wrong, delta=[0.5], tau=15.0)


@falsifies("lora.glm_limit")
@pytest.mark.parametrize("wrong", [False, True])
def test_glm_limit_fails_the_papers_l588_form(wrong, monkeypatch, tmp_path):
    # Remark 15 as printed, sum_l l mu_(l+1)^2 m^l (a third of 2K' for He3, a missing factor 2 and the wrong l):
    # off by O(1) against a derived bound of 1e-7 (ReLU 1.4e-4) at xi = 1e4 (measured 3e6 bounds, and the
    # check that Remark 15 misses fails; right theory 0.70)
    if wrong:
        from popdyn.validation.claims.lora import paper_glm_h
        perturb(monkeypatch, "popdyn.models.lora.glm_h", lambda f: paper_glm_h)
    _verdict("lora.glm_limit", tmp_path, wrong, activations=["relu", "he3"])


@falsifies("lora.glm_limit")
@pytest.mark.parametrize("wrong", [False, True])
def test_glm_limit_fails_one_percent_on_2k_prime(wrong, monkeypatch, tmp_path):
    # 2K'(m) 1 % too large: 1e-2 against bounds of ~1e-7 (smooth) and 1.4e-4 (ReLU) (measured 5e4 vs 1)
    if wrong:
        perturb(monkeypatch, "popdyn.models.lora.glm_h", scaled(1.01))
    _verdict("lora.glm_limit", tmp_path, wrong, activations=["relu", "he3"])


# ---- lora_figures.py: the paper's figures --------------------------------------------------------------

@falsifies("lora.fig2b_overlap_ode")
@pytest.mark.parametrize("wrong", [False, True])
def test_fig2b_fails_the_papers_ode(wrong, monkeypatch, tmp_path, _simulate_once):
    # the paper's population ODE: at delta = 0.1 it is 0.075 ahead of SGD by tau = 6, against 3 SE + 0.01 ~ 0.03
    # (measured 1.24 vs tolerance 1 with the Student-t band; right theory 0.12)
    if wrong:
        _paper_ode(monkeypatch)
    _verdict("lora.fig2b_overlap_ode", tmp_path, wrong, instances=1, tau=6.0)


@falsifies("lora.fig6_he3_plateau")
@pytest.mark.parametrize("wrong", [False, True])
def test_fig6_fails_h_without_its_factor_2(wrong, monkeypatch, tmp_path, _simulate_once):
    # h/2 in the ODE (the paper's h(0) in App. D.3.2, D.4 and D.5.1 drops the factor 2): escape times double,
    # |log 2| = 0.69 against q SE + eps^2 at 8 seeds (measured 1.45 vs 1; right theory 0.13).
    # The theory's plateau checks (ratios of escape times, d = 1000) are unchanged by a constant factor.
    if wrong:
        perturb(monkeypatch, ODE_H, scaled(0.5))
    _verdict("lora.fig6_he3_plateau", tmp_path, wrong, instances=9, xis=[1.0, 128.0], sgd_d=400)


@falsifies("lora.fig3a_lazy_floor")
@pytest.mark.parametrize("wrong", [False, True])
def test_fig3a_fails_the_papers_ode(wrong, monkeypatch, tmp_path, _simulate_once):
    # the paper's ODE: Phi(m_t) falls below SGD's loss, against q SE + 0.01|h| (q the Student-t quantile with
    # Bonferroni over times) (measured 2.31 vs 1 at the quick size; right theory 0.25)
    if wrong:
        _paper_ode(monkeypatch)
    _verdict("lora.fig3a_lazy_floor", tmp_path, wrong)


@falsifies("lora.fig3a_lazy_floor")
@pytest.mark.parametrize("wrong", [False, True])
def test_fig3a_fails_h_ten_percent_off(wrong, monkeypatch, tmp_path, _simulate_once):
    # h 10 % too large in the ODE: the loss curve leads SGD's (measured 1.25 vs 1 at the quick size, d = 1000;
    # at d = 500, 8 seeds the Student-t band hides it: 0.97)
    if wrong:
        perturb(monkeypatch, ODE_H, scaled(1.1))
    _verdict("lora.fig3a_lazy_floor", tmp_path, wrong)


@falsifies("lora.fig2_joint_speedup")
@pytest.mark.parametrize("wrong", [False, True])
def test_joint_speedup_fails_when_joint_is_frozen(wrong, tmp_path, _simulate_once):
    # joint == frozen (lr_c = 0): every paired seed has ratio exactly 1, so r + z SE = 1 + z x (recording
    # resolution) > 1; with lr_c = 0.1 lr joint is 12 % faster, r + z SE < 1 (d = 150, 32 paired seeds, z the
    # Student-t quantile with 31 d.o.f.)
    _verdict("lora.fig2_joint_speedup", tmp_path, wrong, d=150, tau=30.0, seeds=32,
             lr_c_factors=[0.0] if wrong else [0.1])
