"""``popdyn.predict`` for the kernel-error problem (the exact population test error of kernel ridge regression) and
for the network problem (the same exact errors of the infinite-width kernels, on the networks' training set)."""
from __future__ import annotations

import numpy as np

from ...api import predict
from ..._validate import FiniteArray, Interval, InvalidParameterError, Options, check
from ...results import Prediction
from .hypercube import captured_coefficients, exact_test_error, krr_fit, lemma_e2_bound
from .problem import KERNELS, NetworkProblem, Problem
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


#: ridges over which ``predict(NetworkProblem)`` takes each kernel's best exact error (one eigh for all)
NETWORK_LAMS = (1e-8, 1e-6, 1e-4, 1e-2)


@predict.register(NetworkProblem)
def _predict_network(problem, *, X=None, kernels=("relu_ntk", "relu_ck"), lams=NETWORK_LAMS):
    r"""The kernel side of a network problem: exact test errors of infinite-width kernels fitted on the same N points.

    .. math:: \mathrm{err}_K=\min_{\lambda}\ \mathbb E_x\|\mathcal H(x)-\mathfrak K_\lambda(x)\|_2^2,\qquad
              \mathfrak K_\lambda=K(\cdot,X)(K+N\lambda I)^{-1}\mathcal H(X)\ \text{(Parseval, no test sample)};\qquad
              \mathbb E\|\alpha\mathcal G(\mathcal F)\|^2=k\alpha^2,\quad \mathbb E\|\mathcal H\|^2,\quad
              \text{Thm 2: } \mathrm{err}_K>\alpha^2/4

    Parameters
    ----------
    problem : NetworkProblem
    X : array_like, shape (N, d), entries ±1, or None
        The training inputs; default ``problem.X``. Pass a network's own set
        (``popdyn.sim.resnet.training_inputs(problem, seeds)[s]``) to hold network s against the kernels on the
        same points.
    kernels : sequence of str
        Names in ``resnet.KERNELS`` (with bias: the ReLU NTK ``relu_ntk``, conjugate kernel ``relu_ck``, ...).
    lams : sequence of float
        Ridges ``> 0``; each kernel's error is the best over them (the oracle ridge, in the kernels' favour).

    Returns
    -------
    Prediction
        Static, ``coords["kernel"]`` the kernel names. ``kernel_error`` (kernels,) the total error (summed over the
        k outputs) at the best ridge, ``kernel_error_output`` (kernels, k) its outputs, ``kernel_lam`` (kernels,)
        that ridge, ``kernel_c_F`` and ``kernel_c_G`` (kernels, k) the Walsh coefficients the kernel predictor of
        output i puts on the sets of F_i and of G_i(F) (the networks' ``c_F``, ``c_G``), ``lemma_e2`` (kernels,)
        Lemma E.2's Parseval lower bound (total); ``G_not_learned`` = k alpha^2 (the error of beta F; the plateau),
        ``nothing_learned`` = E||H||^2 (the zero predictor); thm2 target only: ``thm2_bound`` = alpha^2/4.

    Notes
    -----
    Regime: x uniform on {±1}^d, dot-product kernels. Theorem 2's bound is proved only for N up to
    (d/(20 k^2 log^2 d))^(k/2) (empty at simulable d; :func:`thm2_N_range`); the exact errors hold for every N and sit
    near k alpha^2 + (the linear part's error) while N << C(d, k) (spec §2.7 V6). Cost: one N x N ``eigh`` per
    kernel and O(N^2) per ridge.

    References
    ----------
    .. [src] seed 004 L122-155 (program 3.1), L354-366 (Theorem 2), L1106-1151 (Prop. E.1, Lemma E.2), L241 (the
       plateau k alpha^2); specs/resnet_kernels.md §2.7, §4.1 item 3, §4.2.
    """
    owner = "resnet.predict"
    X = problem.X if X is None else check(owner, "X", X, FiniteArray(2, (problem.N, problem.d)))
    if not np.all(np.abs(X) == 1):
        raise InvalidParameterError(f"The 'X' parameter of {owner} must have entries ±1. Got other values.")
    kernels = [check(owner, "kernels", name, Options(tuple(KERNELS))) for name in np.atleast_1d(kernels).tolist()]
    lams = np.array([check(owner, "lams", v, Interval(0.0, np.inf, "neither")) for v in np.atleast_1d(lams).tolist()])
    if not kernels or not lams.size:
        raise InvalidParameterError(f"The 'kernels' and 'lams' parameters of {owner} must be non-empty. Got "
                                    f"{kernels!r}, {lams.tolist()!r} instead.")
    H = problem.H
    target, Y = H.walsh(), H(X)
    F_sets = [tuple(sorted(S)) for S in H.F_sets]
    G_sets = [tuple(sorted(S)) for S in H.GF_sets]
    err, best, cF, cG, e2 = [], [], [], [], []
    for name in kernels:
        kappa = KERNELS[name](problem.d)
        betas = krr_fit(kappa, X, Y, lams)
        per_lam = [exact_test_error(kappa, X, b, target) for b in betas]
        j = int(np.argmin([e.sum() for e in per_lam]))
        cap = captured_coefficients(kappa, X, betas[j], F_sets + G_sets)
        err.append(per_lam[j])
        best.append(lams[j])
        cF.append(np.diagonal(cap[:problem.k]))
        cG.append(np.diagonal(cap[problem.k:]))
        e2.append(lemma_e2_bound(kappa, X, betas[j], target).sum())
    err = np.array(err)
    obs = {"kernel_error": err.sum(1), "kernel_error_output": err, "kernel_lam": np.array(best),
           "kernel_c_F": np.array(cF), "kernel_c_G": np.array(cG), "lemma_e2": np.array(e2),
           "G_not_learned": np.array(H.error_G_not_learned), "nothing_learned": np.array(H.error_zero_predictor)}
    if problem.target == "thm2":
        obs["thm2_bound"] = np.array(thm2_lower_bound(problem.alpha))
    return Prediction(t=None, observables=obs, coords={"kernel": np.array(kernels)}, status=0,
                      message="exact population error of the kernels (Parseval), best ridge",
                      meta={"problem": repr(problem), "method": "exact", "lams": lams.tolist()})
