r"""Exact kernel learning on the hypercube for wide fully-connected networks, and its eigenlearning theory.

Docs: docs/kernels.md ("Kernels on the hypercube"). Conventions: x uniform on {±1}^d; a network is
:func:`popdyn.kernels.fc` (its NTK or NNGP at infinite width); a target is a :class:`WalshTarget`
:math:`f=\sum_Sv_S\chi_S`; the ridge :math:`\lambda` is that of the averaged loss, :math:`N\lambda` on the Gram diagonal
(as :func:`popdyn.models.resnet.krr_fit`).

* The cube (``cube.py``): :func:`cube_eigenvalues` (a network's kernel on each Walsh level),
  :func:`level_multiplicities`; :class:`WalshTarget` (a Walsh expansion that also evaluates on points);
  :class:`KernelRegression` (fit on a training set, predict, the exact population test error by Parseval, the
  captured Walsh coefficients and the learned share of each level).
* Eigenlearning (``learning_curve.py``): :func:`effective_regularization` (the self-consistent kappa),
  :func:`learnabilities`, :func:`overfitting_coefficient` (E0), :func:`eigenlearning` (the expected test error over
  random training sets, :class:`Eigenlearning`).
* :class:`Problem` (``problem.py``) and ``popdyn.predict`` (``predict.py``): the learning curve over
  ``n_train``; ``popdyn.simulate`` fits KRR on independent training sets and takes each fit's exact error.
"""
from .cube import KERNELS, KernelRegression, WalshTarget, cube_eigenvalues, level_multiplicities
from .learning_curve import (Eigenlearning, effective_regularization, eigenlearning, learnabilities,
                            overfitting_coefficient)
from .problem import ACTIVATIONS, Problem
from . import predict  # noqa: F401  (registers Problem with popdyn.api)

__all__ = ["cube_eigenvalues", "level_multiplicities", "WalshTarget", "KernelRegression", "KERNELS",
           "effective_regularization", "learnabilities", "overfitting_coefficient", "eigenlearning", "Eigenlearning",
           "Problem", "ACTIVATIONS"]
