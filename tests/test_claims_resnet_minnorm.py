"""Falsification tests of the Appendix A.1 claims ([AllenZhu19]): popdyn's solver passes, a wrong one FAILS."""
import functools

import numpy as np
import pytest

from .falsify import falsifies, measure, memoise, perturb, run_claim, scaled


# wrong theories: (1) a Pareto "solver" without weight decay or refinement (plain full-batch fitting: its level norms
# are ~33 % above the paper's); (2) norms 15 % too large (a perturbed constant; our frontier sits 5-8 % below the
# paper's points at quick size, so +15 % exceeds the one-sided 5 % tolerance while +10 % may not); (3) the wrong unit
# ||W||_F instead of ||W||_F / sqrt d (x sqrt 6).
@pytest.mark.slow
@falsifies("resnet.min_norm_pareto")
@pytest.mark.parametrize("wrong", [None, "no_weight_decay", "norm_x1.15", "frobenius_unit"])
def test_min_norm_pareto_fails_a_wrong_solver_or_norm(wrong, monkeypatch, tmp_path):
    memoise(monkeypatch, "popdyn.sim.resnet.minnorm.pareto")
    size = {"lams": [0.0], "refine_steps": 0} if wrong == "no_weight_decay" else {}
    if wrong == "norm_x1.15":
        perturb(monkeypatch, "popdyn.models.resnet.minnorm.paper_norm", scaled(1.15))
    if wrong == "frobenius_unit":
        perturb(monkeypatch, "popdyn.models.resnet.minnorm.paper_norm", lambda f: lambda W: float(np.linalg.norm(W)))
    verdict, measured, checks = measure("resnet.min_norm_pareto", tmp_path, **size)
    assert verdict == ("PASS" if wrong is None else "FAIL"), (measured, checks)
    assert (measured < 0.0) if wrong is None else (measured > 0.08)


# wrong theories: (oracle) SGD told the support of the parity (the easy 6-dimensional problem behind the
# constructions) fits and generalises (test MSE ~ 0, far below the paper's 0.69): the check that no SGD run beats 0.69
# fails; (untrained) steps of 1e-12: the network never fits (train MSE ~1 against 0.12). The true SGD fits (train MSE
# ~0.09) at ~5x the min-norm W's norm with test MSE ~1, and the nulls (untrained, zero predictor) are rejected.
@pytest.mark.slow
@falsifies("resnet.sgd_not_min_norm")
@pytest.mark.parametrize("wrong", [None, "oracle", "untrained"])
def test_sgd_not_min_norm_fails_sgd_told_the_support_or_untrained(wrong, monkeypatch, tmp_path):
    memoise(monkeypatch, "popdyn.sim.resnet.minnorm.pareto")
    if wrong == "oracle":
        perturb(monkeypatch, "popdyn.sim.resnet.minnorm.sgd", lambda f: functools.partial(f, oracle_support=True))
    if wrong == "untrained":
        perturb(monkeypatch, "popdyn.sim.resnet.minnorm.sgd",
                lambda f: lambda **kw: f(**{**kw, "lrs": [1e-12] * len(kw["lrs"])}))
    verdict, res = run_claim("resnet.sgd_not_min_norm", tmp_path)
    assert verdict == ("PASS" if wrong is None else "FAIL"), (res.measured, res.checks, res.nulls)
    if wrong is None:
        assert res.measured < 0.12 and min(res.nulls.values()) > 0.5
    elif wrong == "oracle":
        assert not res.checks["no SGD run has test MSE below the paper's SGD best 0.69"]
    else:
        assert res.measured > 0.5
