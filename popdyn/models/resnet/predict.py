"""``popdyn.predict`` for the kernel-error problem: the exact population test error of kernel ridge regression."""
from __future__ import annotations

import numpy as np

from ...api import predict
from ...results import Prediction
from .hypercube import captured_coefficients, exact_test_error, krr_fit, lemma_e2_bound
from .problem import Problem
from .theory import thm2_lower_bound

__all__ = []


@predict.register(Problem)
def _predict(problem):
    r"""Exact test error per output of the KRR predictor fitted on the problem's N points (Parseval, sample-free).

    .. math:: \mathbb E_x(f_i-\mathfrak K_i)^2 = \sum_S\hat f_S^2 - 2\sum_j\beta_{ji}\sum_S\hat f_S\lambda^2_{|S|}
              \chi_S(x^{(j)}) + \beta_{\cdot i}^\top M\beta_{\cdot i}

    Returns
    -------
    Prediction
        Static; ``test_error`` (k,), ``lemma_e2`` (k,) (the Parseval lower bound from the target's own sets),
        ``captured_F`` and ``captured_G`` (k,) (the Walsh coefficients the predictor puts on ``{S_i}`` and on ``S``),
        ``G_not_learned`` = the error of the predictor F (k alpha^2 in total), ``thm2_bound`` = alpha^2/4 (per output,
        the theorem's lower bound in its N range).

    References
    ----------
    .. [src] seed 004 L354-366, L1100-1151; specs/resnet_kernels.md §2.7.
    """
    X = problem.X
    target = problem.target.walsh()
    Y = problem.target(X)
    beta = krr_fit(problem.kappa, X, Y, problem.lam)
    F_sets = [tuple(sorted(problem.target.F_sets[i])) for i in range(problem.k)]
    G_set = tuple(sorted(problem.target.GF_sets[0]))
    cap = captured_coefficients(problem.kappa, X, beta, F_sets + [G_set])
    obs = {"test_error": exact_test_error(problem.kappa, X, beta, target),
           "lemma_e2": lemma_e2_bound(problem.kappa, X, beta, target),
           "captured_F": np.array([cap[i, i] for i in range(problem.k)]),
           "captured_G": np.asarray(cap[-1], dtype=float),
           "G_not_learned": np.array(problem.target.error_G_not_learned),
           "thm2_bound": np.array(thm2_lower_bound(problem.alpha))}
    return Prediction(t=None, observables=obs, status=0, message="exact population error (Parseval)",
                      meta={"problem": repr(problem), "method": "exact"})
