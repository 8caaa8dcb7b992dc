"""Falsification test of ``modular.transformer_grokking`` (validation/claims/modular_transformer.py): it passes with the
theory's construction width and FAILS with a width that lacks Thm 4.9's factor 2^(2k-2). The training (k = 2, p = 31
and k = 4, p = 5, half the data, one layer, 1000 steps, ~35 s on one core) is memoised: the two runs train once."""
import pytest

from .falsify import falsifies, measure, memoise, perturb

pytest.importorskip("torch")


# wrong theory: the width without the exponential factor, p - 1 (30 at k = 2, p = 31; 4 at k = 4, p = 5), orders the
# two settings the other way round. The measured delays (k = 2 never generalises in 1000 steps; k = 4 generalises
# ~380 steps after fitting) then rise with the width: the one pair is discordant, 1 against the tolerance 0.2
# (the true width, 120 and 256, gives 0).
@falsifies("modular.transformer_grokking")
@pytest.mark.parametrize("wrong", [False, True])
def test_transformer_grokking_fails_a_width_without_the_exponential_factor(wrong, monkeypatch, tmp_path):
    memoise(monkeypatch, "popdyn.simulate")
    if wrong:
        perturb(monkeypatch, "popdyn.models.modular.construction_width", lambda f: lambda p, k: p - 1)
    verdict, measured, checks = measure("modular.transformer_grokking", tmp_path)
    assert checks["every run fits its train set"], checks
    assert verdict == ("FAIL" if wrong else "PASS"), measured
    assert measured == (1.0 if wrong else 0.0)
