"""``popdyn.predict`` for kernel learning on the hypercube: the eigenlearning learning curve."""
from __future__ import annotations

import numpy as np

from ...api import register
from ...results import Prediction
from .learning_curve import eigenlearning
from .problem import Problem

__all__ = []


def _predict(problem, *, n_train):
    r"""The eigenlearning prediction of the expected test error over random training sets of each size.

    .. math:: \mathbb E\,\mathcal E=\mathcal E_0\Big(\sum_\ell(1-\mathcal L_\ell)^2P_\ell+\sigma^2\Big)-\sigma^2,
              \qquad\mathcal L_\ell=\frac{\lambda_\ell N}{\lambda_\ell N+\kappa},\qquad
              \kappa=N\lambda_r+\sum_\ell\binom d\ell\frac{\lambda_\ell\kappa}{\lambda_\ell N+\kappa}

    Parameters
    ----------
    problem : Problem
    n_train : tuple of int
        Training-set sizes N.

    Returns
    -------
    Prediction
        Static, ``coords["n_train"]`` the sizes and ``coords["level"]`` the target's levels; ``test_error`` (n,),
        ``learnability`` (n, levels) (the expected share of each target level the predictor captures), ``e0`` and
        ``kappa`` (n,).

    References
    ----------
    .. [src] [Bordelon20], [Canatar21], [Simon23]; the cube's levels [AllenZhu19, Prop. E.1].
    """
    out = eigenlearning(problem.eigenvalues, problem.target.level_power(), n_train, problem.ridge, problem.noise,
                        problem.multiplicity)
    levels = problem.target_levels
    obs = {"test_error": out.test_error, "learnability": out.learnability[:, levels], "e0": out.e0,
           "kappa": out.kappa}
    return Prediction(t=None, observables=obs, coords={"n_train": np.array(n_train), "level": levels}, status=0,
                      message="eigenlearning (omniscient risk) prediction", meta={"method": "eigenlearning"})


register(Problem, name="kernels", predict=_predict, simulate="popdyn.sim.kernels:simulate",
         summary="eigenlearning learning curve of a wide network's kernel on a Walsh target over the hypercube")
