"""``popdyn.predict`` for the kernel-error problem (the exact population test error of kernel ridge regression) and
for the network problem (the same exact errors of the infinite-width kernels, on the networks' training set)."""
from __future__ import annotations

import numpy as np

from ...api import register
from ..._validate import InvalidParameterError
from ...results import Prediction
from .hypercube import captured_coefficients, exact_test_error, krr_fit, lemma_e2_bound
from .problem import KERNELS, NetworkProblem, Problem, check_training, check_kernel_inputs
from .theory import thm2_lower_bound

__all__ = []


def _predict(problem):
    r"""Exact test error per output of the KRR predictor fitted on the problem's n_train points (Parseval, sample-free).

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
    .. [src] [AllenZhu19, Section 7, Theorem 2, App. E]; the exact test error derived in docs/resnet.md.
    """
    X = problem.X
    target = problem.target.walsh()
    Y = problem.target(X)
    beta = krr_fit(problem.kappa, X, Y, problem.ridge)
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
                      meta={"method": "exact"})


def _predict_network(problem, *, X, kernels, ridges, protocol, lr, weight_decay, epochs):
    r"""The kernel side of a network problem: exact test errors of infinite-width kernels fitted on the same
    n_train points.

    .. math:: \mathrm{err}_K=\min_{\lambda}\ \mathbb E_x\|\mathcal H(x)-\mathfrak K_\lambda(x)\|_2^2,\qquad
              \mathfrak K_\lambda=K(\cdot,X)(K+N\lambda I)^{-1}\mathcal H(X)\ \text{(Parseval, no test sample)};\qquad
              \mathbb E\|\alpha\mathcal G(\mathcal F)\|^2=k\alpha^2,\quad \mathbb E\|\mathcal H\|^2,\quad
              \text{Thm 2: } \mathrm{err}_K>\alpha^2/4

    Parameters
    ----------
    problem : NetworkProblem
    X : ndarray, shape (n_train, d), entries ±1, or None
        The training inputs; None is ``problem.X``. Pass a network's own set
        (``popdyn.sim.resnet.training_inputs(problem, seeds)[s]``) to hold network s against the kernels on the
        same points (a simulation to compare with takes the same ``X`` for its kernels).
    kernels : tuple of str
        Names in ``resnet.KERNELS`` (with bias: the ReLU NTK ``relu_ntk``, its NNGP ``relu_nngp`` (the conjugate
        kernel; ``relu_ck`` its earlier name), ...).
    ridges : tuple of float
        Ridges ``> 0`` (lambda in the paper); each kernel's error is the best over them (the oracle ridge, in the
        kernels' favour).
    protocol, lr, weight_decay, epochs
        The networks' training (see ``NetworkProblem.options``): the kernels do not depend on it; it is checked and
        recorded so that ``compare`` holds the prediction against a simulation of the same training.

    Returns
    -------
    Prediction
        Static, ``coords["kernel"]`` the kernel names, ``coords["ridge"]`` the ridges. ``kernel_error`` (kernels,)
        the total error (summed over the k outputs) at the best ridge, ``kernel_error_output`` (kernels, k) its
        outputs, ``kernel_ridge`` (kernels,) that ridge, ``kernel_c_F`` and ``kernel_c_G`` (kernels, k) the Walsh
        coefficients the kernel predictor of output i puts on the sets of F_i and of G_i(F) (the networks' ``c_F``,
        ``c_G``), ``lemma_e2`` (kernels,) Lemma E.2's Parseval lower bound (total); ``G_not_learned`` = k alpha^2
        (the error of beta F; the plateau), ``nothing_learned`` = E||H||^2 (the zero predictor); thm2 target only:
        ``thm2_bound`` = alpha^2/4.

    Notes
    -----
    Regime: x uniform on {±1}^d, dot-product kernels. Theorem 2's bound is proved only for N up to
    (d/(20 k^2 log^2 d))^(k/2) (empty at simulable d; :func:`thm2_N_range`); the exact errors hold for every N and sit
    near k alpha^2 + (the linear part's error) while N << C(d, k) (docs/resnet.md). Cost: one N x N ``eigh`` per
    kernel and O(N^2) per ridge (N = n_train).

    References
    ----------
    .. [src] [AllenZhu19, Section 3 (program (3.1)), Section 7 (Theorem 2), Prop. E.1, Lemma E.2, Section 6 (the
       plateau k alpha^2)]; the exact test error derived in docs/resnet.md.
    """
    owner = "resnet.network.predict"
    check_training(owner, protocol, weight_decay)
    X = check_kernel_inputs(owner, problem, X)
    kernels, ridges = list(kernels), np.array(ridges, dtype=float)
    H = problem.H
    target, Y = H.walsh(), H(X)
    F_sets = [tuple(sorted(S)) for S in H.F_sets]
    G_sets = [tuple(sorted(S)) for S in H.GF_sets]
    err, best, cF, cG, e2 = [], [], [], [], []
    for name in kernels:
        kappa = KERNELS[name](problem.d)
        betas = krr_fit(kappa, X, Y, ridges)
        per_ridge = [exact_test_error(kappa, X, b, target) for b in betas]
        j = int(np.argmin([e.sum() for e in per_ridge]))
        cap = captured_coefficients(kappa, X, betas[j], F_sets + G_sets)
        err.append(per_ridge[j])
        best.append(ridges[j])
        cF.append(np.diagonal(cap[:problem.k]))
        cG.append(np.diagonal(cap[problem.k:]))
        e2.append(lemma_e2_bound(kappa, X, betas[j], target).sum())
    err = np.array(err)
    obs = {"kernel_error": err.sum(1), "kernel_error_output": err, "kernel_ridge": np.array(best),
           "kernel_c_F": np.array(cF), "kernel_c_G": np.array(cG), "lemma_e2": np.array(e2),
           "G_not_learned": np.array(H.error_G_not_learned), "nothing_learned": np.array(H.error_zero_predictor)}
    if problem.target == "thm2":
        obs["thm2_bound"] = np.array(thm2_lower_bound(problem.alpha))
    return Prediction(t=None, observables=obs, coords={"kernel": np.array(kernels), "ridge": ridges}, status=0,
                      message="exact population error of the kernels (Parseval), best ridge", meta={"method": "exact"})


register(Problem, name="resnet", predict=_predict, simulate="popdyn.sim.resnet.kernel_regression:simulate",
         summary="exact population test error (Parseval) of kernel ridge regression of Theorem 2's target")
register(NetworkProblem, name="resnet.network", predict=_predict_network,
         simulate="popdyn.sim.resnet.network_vs_kernels:simulate",
         summary="exact test errors of the infinite-width kernels the trained networks are held against")
