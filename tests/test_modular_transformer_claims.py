"""Falsification tests of the transformer claims (validation/claims/modular_transformer.py).

The claims' quick size is k = 3, p = 11 with half the data (the regime of Fig. 4.3; ~90 s on one core), where both
claims FAIL: the MLP neurons' median power ends at 0.58 and the heads' at 0.26, against the predicted 1. The tests
below keep that failure visible, and show on a k = 2, full-data run (p = 23, the size where the neurons are
single-frequency, ~25 s) that the metric separates the theory from a wrong one. Both claims read one memoised training
per size, so each size trains once."""
import numpy as np
import pytest

from popdyn.models.modular import TransformerProblem

from .falsify import falsifies, measure, perturb, run_claim

pytest.importorskip("torch")

#: k = 2 on all of D_p: the size where the theory's single-frequency neurons appear
_K2 = {"p": 23, "k": 2, "train_fraction": 1.0}


def _two_sided(name, value):
    """Wrong theory: the prediction ``name`` under the paper's two-sided spectrum (Fig. 4.2), not the one-sided one."""
    def wrong(f):
        def predict(problem, **kw):
            pred = f(problem, **kw)
            if isinstance(problem, TransformerProblem):
                pred.observables[name] = np.asarray(value)
            return pred
        return predict
    return wrong


# wrong theory: a single-frequency neuron's max normalized power is the two-sided 1/2 instead of the one-sided
# 1. At k = 2 on full data the trained MLP neurons' median power is 0.94 (one-sided), so the gap is 0.44 against the
# tolerance 0.1 and the true theory's 0.06; the untrained null (median power at init) is rejected too.
@pytest.mark.slow
@falsifies("modular.transformer_neurons")
@pytest.mark.parametrize("wrong", [False, True])
def test_transformer_neurons_fail_the_two_sided_power(wrong, monkeypatch, tmp_path):
    if wrong:
        perturb(monkeypatch, "popdyn.predict", _two_sided("max_power", 0.5))
    verdict, measured, checks = measure("modular.transformer_neurons", tmp_path, **_K2)
    assert verdict == ("FAIL" if wrong else "PASS"), (measured, checks)
    assert (measured > 0.3) if wrong else (measured < 0.09)


# the claim at its quick size (k = 3, half the data): the neurons are NOT single-frequency (median power 0.58, gap
# 0.42 against 0.1): the claim FAILS, as at the full size (k = 4: 0.67), though training moved them (untrained null
# rejected: the power rose from 0.36).
@pytest.mark.slow
def test_transformer_neurons_fail_at_k3_with_half_the_data(tmp_path):
    verdict, res = run_claim("modular.transformer_neurons", tmp_path)
    assert verdict == "FAIL", res
    assert res.measured > 0.3 and res.nulls["untrained"] > 0.1


# the attention heads: at k = 2 on full data the median share on one frequency ends at 0.69 (gap 0.31 to the predicted
# 1, against the tolerance 0.1: the claim FAILS), yet the theory is closer than the wrong two-sided 2-D value 1/4 (gap
# 0.44) and than the untrained heads (0.02 at init). The former metric (the fraction of the init gap left open,
# tolerance 0.5) passed any constant prediction in [0.47, 1.36].
@pytest.mark.slow
@falsifies("modular.transformer_attention")
def test_transformer_attention_separates_the_theory_but_fails(monkeypatch, tmp_path):
    verdict, res = run_claim("modular.transformer_attention", tmp_path, **_K2)
    perturb(monkeypatch, "popdyn.predict", _two_sided("attention_power", 0.25))
    verdict_wrong, res_wrong = run_claim("modular.transformer_attention", tmp_path, **_K2)
    assert verdict == verdict_wrong == "FAIL", (res.measured, res_wrong.measured)
    assert 0.1 < res.measured < res_wrong.measured
    assert res.nulls["untrained"] > res.measured


# at the quick size (k = 3, half the data) the heads barely concentrate (median share 0.26): the claim FAILS and the
# two-sided and uniform nulls are not rejected (they are closer to the trained heads than the theory).
@pytest.mark.slow
def test_transformer_attention_fails_at_k3_with_half_the_data(tmp_path):
    verdict, res = run_claim("modular.transformer_attention", tmp_path)
    assert verdict == "FAIL" and res.measured > 0.5, res.measured
