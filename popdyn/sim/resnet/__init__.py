"""ResNet vs kernels ([AllenZhu19]): the torch twin of :mod:`popdyn.models.resnet`.

Modules
-------
kernel_regression
    ``simulate`` for :class:`popdyn.models.resnet.Problem`: the fitted KRR predictor evaluated on fresh uniform test
    points (Monte Carlo over x), with ``predict``'s observable names.
network_vs_kernels
    ``simulate`` for :class:`popdyn.models.resnet.NetworkProblem`: ``seeds`` networks trained by
    :func:`networks.train`; test error and c_F, c_G over epochs, beside the Monte Carlo error of ``predict``'s
    kernels; ``training_inputs``, the training sets of those networks (to fit the kernels of ``predict`` on the same
    points).
networks
    The networks of the paper (the three-layer ResNet, the fully connected nets), Algorithm 1 and the minibatch
    protocol, pre-activation flips, the finite-width empirical NTK and conjugate kernel.
kernels
    Kernel ridge regression with a network's finite-width kernel and its exact test error on the cube.
minnorm
    Appendix A.1: the min-norm Pareto solver and SGD on the sparse parity.

``popdyn.simulate`` imports the two simulations through the paths registered in :mod:`popdyn.models.resnet.predict`.
"""
from __future__ import annotations

from .network_vs_kernels import training_inputs

__all__ = ["training_inputs"]
