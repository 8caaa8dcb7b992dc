"""Falsification tests of the Appendix A.1 claims (seed 004): popdyn's solver passes, a wrong one FAILS."""
import functools

import numpy as np
import pytest

from .falsify import falsifies, measure, memoise, perturb, scaled


# wrong theories: (1) a Pareto "solver" without weight decay or refinement (plain full-batch fitting: its level norms
# are ~33 % above the paper's); (2) norms 15 % too large (a perturbed constant; our frontier sits 5-8 % below the
# paper's points at quick size, so +15 % exceeds the one-sided 5 % tolerance while +10 % may not); (3) the wrong unit
# ||W||_F instead of ||W||_F / sqrt d (x sqrt 6).
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


# wrong theory: SGD told the support of the parity (the easy 6-dimensional problem behind the constructions) reaches
# test MSE ~ 0, far below the paper's 0.69: the claim that SGD stays above 0.69 must fail.
@falsifies("resnet.sgd_not_min_norm")
@pytest.mark.parametrize("wrong", [False, True])
def test_sgd_not_min_norm_fails_sgd_told_the_support(wrong, monkeypatch, tmp_path):
    if wrong:
        perturb(monkeypatch, "popdyn.sim.resnet.minnorm.sgd", lambda f: functools.partial(f, oracle_support=True))
    verdict, measured, checks = measure("resnet.sgd_not_min_norm", tmp_path)
    assert verdict == ("FAIL" if wrong else "PASS"), (measured, checks)
    assert (measured > 0.5) if wrong else (measured < -0.2)
