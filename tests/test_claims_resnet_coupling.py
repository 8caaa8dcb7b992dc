"""Falsification tests of the ResNet coupling / existential-weights claims: each passes with popdyn's theory and
FAILS with a wrong one."""
import numpy as np
import pytest

from popdyn.models.resnet.existential import Phi

from .falsify import falsifies, measure, memoise, perturb, scaled

_FLIP_CHECK = "flips <= Prop. C.4's exact worst case for every seed and input"
_LAW_CHECK = "exact worst case on W0 x~ within 5% of its m -> inf law, every seed"


def _adversarial(f):
    """Wrong theory: SGD's perturbation is Prop. C.4's worst case (the random-direction count replaced by it)."""
    from popdyn.models.resnet import worst_case_flip_fraction
    return worst_case_flip_fraction


# true: R within 0.06 of 1 (quick size). Wrong theories: (a) "SGD attains Prop. C.4's worst case": R ~ 0.2, |R-1| ~ 0.8;
# (b) the m -> inf worst-case law at delta/2 (2^(-2/3) = 0.63 of the count): the law check is off by ~60 %;
# (c) the exact worst case at delta/10 (0.22 of the count; measured flips are <= 0.3 of the true worst case, so
# delta/2 would still pass this check): some input flips more than the "worst case".
@falsifies("resnet.sign_flips")
@pytest.mark.parametrize("wrong", [None, "adversarial", "law_half_delta", "exact_tenth_delta"])
def test_sign_flips_fails_wrong_flip_theories(wrong, monkeypatch, tmp_path):
    memoise(monkeypatch, "popdyn.validation.claims.resnet_coupling._trained_net")
    if wrong == "adversarial":
        perturb(monkeypatch, "popdyn.models.resnet.random_flip_fraction", _adversarial)
    elif wrong == "law_half_delta":
        perturb(monkeypatch, "popdyn.models.resnet.worst_case_flip_fraction", lambda f: lambda d, **k: f(d / 2, **k))
    elif wrong == "exact_tenth_delta":
        perturb(monkeypatch, "popdyn.sim.resnet.networks.worst_case_flips", lambda f: lambda g, d: f(g, d / 10))
    verdict, measured, checks = measure("resnet.sign_flips", tmp_path, m=[256, 512])
    assert verdict == ("PASS" if wrong is None else "FAIL"), (measured, checks)
    if wrong is None:
        assert measured < 0.1 and all(checks.values())
    elif wrong == "adversarial":
        assert measured > 0.5
    else:
        assert not checks[_LAW_CHECK if wrong == "law_half_delta" else _FLIP_CHECK]


def _p3_sign_flipped(f):
    """Wrong theory: p'_3 = +1/sqrt(2 pi) instead of -1/sqrt(2 pi) (a sign error in Claim F.3's constant)."""
    return lambda i: f(i) * np.where(np.asarray(i) == 3, -1.0, 1.0)


# true: max |z| ~ 2-3 against 5. Wrong theories: (a) p'_3 with the wrong sign: h's cubic term flips, G is biased by
# 2 c_3 x1^3 <w2, x> ~ 0.1-0.5 against an s.e. ~ 5e-3 (|z| ~ 20); (b) the closed form of E m||W*||_F^2 10 % too large:
# ~2.5 against an s.e. ~0.1 (|z| > 10).
@falsifies("resnet.indicator_construction")
@pytest.mark.parametrize("wrong", [None, "p3_sign", "frobenius"])
def test_indicator_construction_fails_wrong_constants(wrong, monkeypatch, tmp_path):
    if wrong == "p3_sign":
        perturb(monkeypatch, "popdyn.models.resnet.indicator.p_prime", _p3_sign_flipped)
    elif wrong == "frobenius":
        monkeypatch.setattr(Phi, "frobenius_limit", scaled(1.1)(Phi.frobenius_limit))
    verdict, measured, checks = measure("resnet.indicator_construction", tmp_path, m=[100, 1000], terms=100_000)
    assert verdict == ("PASS" if wrong is None else "FAIL"), (measured, checks)
    if wrong == "p3_sign":
        assert measured > 10
    elif wrong == "frobenius":
        assert measured < 5 and not checks["m ||W*||_F^2 within 5.0 s.e. of its closed form at every m"]
