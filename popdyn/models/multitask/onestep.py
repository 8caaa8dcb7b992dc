r"""The exact one-step population map of multi-task pretraining, its reduced and leading-order forms.

In the linear regime of the hinge (``eta y f < 1`` a.s.) the head after one step, the post-head
loss and the fixed-head first-layer gradient are exact finite sums over the 2^r sign patterns of the
sign-conditioned moments of :mod:`.moments`; the map decouples across neurons and depends on a neuron only
through ``(w_par, s = ||w_perp||)`` (derived in docs/multitask.md).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..._validate import (Either, FiniteArray, Interval, InvalidParameterError, Options, RegimeWarning, as_int,
                          check)
from .moments import conditional_moments
from .tasks import TaskSet, pattern_index, sign_patterns

__all__ = ["A_matrix", "A_blocks_leading", "head_after_step", "post_head_loss", "population_gradient",
           "one_step_map", "one_step_map_reduced", "leading_order_map", "decay_factor", "lambda_w_paper",
           "lambda_w_adaptive", "kappa_par", "kappa_hat", "subspace_ratio", "margin_bound", "check_linear_regime"]

def _eta2_ldexp(eta, c, e):
    """``c eta^2 2^e`` with one rounding of the mantissa product: no overflow or underflow of ``eta^2`` or ``2^e``
    before the (representable) result is formed."""
    m, x = math.frexp(eta)
    try:
        return math.ldexp(c * (m * m), 2 * x + e)
    except OverflowError:
        return math.inf


_LAM_W = Either((Options(("paper", "adaptive")), Interval(-np.inf, np.inf, closed="neither")))
_POS = Interval(0, np.inf, closed="neither")


# ---- argument handling ----------------------------------------------------------------------------------------

def _tasks(owner, tasks, r):
    """A TaskSet on r coordinates, or None for the Hadamard universe (beta_bar = I exactly, the T = infinity
    algorithm), which is handled analytically: its 2^r x 2^r table is never built."""
    if tasks is None:
        return None
    ts = tasks if isinstance(tasks, TaskSet) else TaskSet(tasks)
    if ts.r != r:
        raise InvalidParameterError(f"The 'tasks' parameter of {owner} must label the 2^r = {2 ** r} sign patterns "
                                    f"(r = {r}). Got a table with {ts.F.shape[1]} columns instead.")
    return ts


def _stats(ts, r):
    """Walsh statistics (TaskSet.stats); the universe's are B = 2^-r, K = 2^-r I, c = 0, C2 = 0."""
    if ts is None:
        return {"B": 2.0 ** -r, "K": np.eye(r) * 2.0 ** -r, "c": np.zeros(r), "C2": np.zeros((r, r))}
    return ts.stats()


def _split(owner, W, r, name="W0", r_from_tasks=False):
    """``(W, r, w_par, s)`` of a (m, d) layer; errors name ``name`` (and ``'W0'`` when r comes from the tasks)."""
    W = check(owner, name, W, FiniteArray(2))
    if r_from_tasks and W.shape[1] <= r:
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must have more than r = {r} columns (r from "
                                    f"the tasks' 2^r patterns). Got shape {W.shape} instead.")
    r = as_int(owner, "r", r, 1, W.shape[1] - 1)
    s = np.linalg.norm(W[:, r:], axis=1)
    if not np.all(s > 0):
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must have rows with a non-zero spurious part "
                                    f"[:, r:] (s = ||w_perp|| > 0). Got a row with s = 0 instead.")
    return W, r, W[:, :r], s


def _heads(owner, S, ts, eta, lam_a, A0):
    """a^+ = (1 - eta lam_a) A0 + eta F S^T / P (T, m); lam_a None is the paper's 1/eta, with which A0 drops out."""
    P = ts.F.shape[1]
    plus = eta * ts.F @ S.T / P
    if lam_a is None:
        return plus
    lam_a = check(owner, "lam_a", lam_a, Interval(-np.inf, np.inf, closed="neither"))
    if A0 is None:
        raise InvalidParameterError(f"The 'A0' parameter of {owner} must be the (T, m) initial heads when lam_a is "
                                    f"given (lam_a = 1/eta, the paper's choice, is lam_a=None). Got None instead.")
    A0 = check(owner, "A0", A0, FiniteArray(2, (ts.n_tasks, S.shape[0])))
    return (1.0 - eta * lam_a) * A0 + plus


def _head_inputs(owner, W0, tasks, eta):
    """``(TaskSet, S (m, 2^r), eta)`` of the head-step functions, each argument checked under ``owner``."""
    eta = check(owner, "eta", eta, _POS)
    ts = tasks if isinstance(tasks, TaskSet) else TaskSet(tasks)
    _, _, w_par, s = _split(owner, W0, ts.r, r_from_tasks=True)
    return ts, conditional_moments(w_par, s)[2], eta


# ---- A(w) -----------------------------------------------------------------------------------------------------

def A_matrix(w, r, reduced=True, method="auto"):
    r"""The matrix ``A(w) = E_u[M(u) M(u)^T]`` of one neuron (eqs. (29)-(32) with (30)/(31) corrected).

    .. math:: A(w) = \mathbb E_u\,\mathbb E_{x,x'}\big[\sigma'(w^\top x)\sigma'(w^\top x')\,xx'^\top\,\big|\,
              \mathrm{sign}\,x_\| = \mathrm{sign}\,x'_\| = u\big] = \mathbb E_u[M(u)M(u)^\top]

    Parameters
    ----------
    w : array_like of shape (d,)
        One neuron, ``||w[r:]|| > 0``.
    r : int
        Ground-truth coordinates, ``1 <= r < d``.
    reduced : bool
        True: the (r+1, r+1) matrix in the basis ``(e_1, .., e_r, w_perp/s)``; False: the (d, d) matrix.
    method : {"auto", "arcsin", "quad"}
        As in :func:`sign_moments`.

    Returns
    -------
    ndarray
        Symmetric PSD, rank <= r + 1, 0-homogeneous in w; ``A(w) w = E_u[S(u) M(u)]``.

    Notes
    -----
    Accuracy: each entry within 1e-12 of its absolute scale ``E_u[|M_a||M_b|]`` (M at its absolute scale,
    :func:`conditional_moments`) for r <= 3, ||w_par||/s in 1e-3..1e8 (measured: 0.00064 of the declared bound).
    Regime: exact for any w with ``s > 0``. r = 1: ``A = (e_1 e_1^T + w_hat w_hat^T)/(2 pi)`` for every d.

    References
    ----------
    .. [src] [Collins24, Lemma A.6, eqs. (28)-(32), Lemmas A.7-A.9]; A = E_u[M M^T] derived in docs/multitask.md.

    Examples
    --------
    >>> A = A_matrix([0.0, 1.0], 1)            # r = 1, w = e_2: A = (e_1 e_1^T + e_2 e_2^T)/(2 pi)
    >>> bool(np.allclose(A, np.eye(2) / (2 * np.pi)))
    True
    """
    owner = "multitask.A_matrix"
    w = check(owner, "w", w, FiniteArray(1))
    W, r, w_par, s = _split(owner, w[None, :], r, "w")
    M_par, m_perp, _ = conditional_moments(w_par, s, method)
    Mred = np.concatenate([M_par[0], m_perp[0][:, None]], axis=1)           # (P, r + 1)
    Ared = Mred.T @ Mred / Mred.shape[0]
    if reduced:
        return Ared
    E = np.zeros((r + 1, w.shape[0]))
    E[np.arange(r), np.arange(r)] = 1.0
    E[r, r:] = w[r:] / s[0]
    return E.T @ Ared @ E


def A_blocks_leading(w, r, corrected=True):
    r"""Leading-order blocks of A(w) as ``eps = ||w_par||/s -> 0``, in the reduced basis ``(e_1..e_r, w_perp/s)``.

    .. math:: A_{\|\|} \to \frac{I_r}{2\pi}\ (\text{paper: } \tfrac14 I_r),\qquad
              A_{\|\perp} = \frac{w_\|}{2\pi s},\qquad A_{\perp\perp} = \frac{1-\epsilon^2}{2\pi}

    Parameters
    ----------
    w : array_like of shape (d,)
    r : int
    corrected : bool
        True: ``I_r/(2 pi)``; False: the paper's ``I_r/4`` (Lemma A.7, eq. (39)), wrong by ``1/4 - 1/(2 pi) = 0.0908``
        (eq. (42) takes the second moment of one half-normal vector where x and x' are independent).

    Returns
    -------
    ndarray of shape (r + 1, r + 1)

    Notes
    -----
    Accuracy: relative error <= 4 eps per entry; the perp-perp entry absolute <= 4 eps (1 + eps_w^2)/(2 pi)
    (measured: 0.36 of the declared bound).
    Regime: errors O(eps^2) (par-par, par-perp relative) and O(eps^4) (perp-perp); ``eps ~ sqrt(r/d)`` at init.

    References
    ----------
    .. [src] [Collins24, Lemma A.7, eqs. (39)-(42); Lemma A.8, eq. (52); Lemma A.9, eq. (61)]; correction in
       docs/errata.md.

    Examples
    --------
    >>> A_blocks_leading([0.0, 0.0, 1.0], 2, corrected=False)[:2, :2].tolist()
    [[0.25, 0.0], [0.0, 0.25]]
    """
    owner = "multitask.A_blocks_leading"
    w = check(owner, "w", w, FiniteArray(1))
    _, r, w_par, s = _split(owner, w[None, :], r, "w")
    w_par, s = w_par[0], s[0]
    A = np.zeros((r + 1, r + 1))
    A[:r, :r] = np.eye(r) * (1.0 / (2 * math.pi) if corrected else 0.25)
    A[:r, r] = A[r, :r] = w_par / (2 * math.pi * s)
    A[r, r] = (1.0 - (w_par @ w_par) / s ** 2) / (2 * math.pi)
    return A


# ---- head, loss, gradient -------------------------------------------------------------------------------------

def head_after_step(W0, tasks, eta, lam_a=None, A0=None):
    r"""Heads after one step (eq. (7)), exact in the linear regime (Lemma A.3).

    .. math:: a_{ij}^+ = (1-\eta\lambda_a)a_{ij}^0 + \eta\,\mathbb E_x[f_i^*(x)\sigma(w_j^\top x)]
              \overset{\lambda_a = 1/\eta}{=} \eta\,2^{-r}\sum_u \bar f_i(u)\,S_j(u)

    Parameters
    ----------
    W0 : array_like of shape (m, d)
        First layer at init; the ground-truth coordinates are the first ``r = log2(tasks columns)``.
    tasks : TaskSet or array_like of shape (T, 2**r)
    eta : float
        Step size > 0.
    lam_a : float or None
        Head weight decay; None is the paper's ``1/eta`` (one step lands on the linearised minimiser and the
        initial heads drop out).
    A0 : array_like of shape (T, m) or None
        Initial heads, needed when ``lam_a`` is given.

    Returns
    -------
    ndarray of shape (T, m)

    Notes
    -----
    Accuracy (lambda_a = 1/eta): absolute error <= 1e-12 eta 2^-r sum_u |S(u)| (S at its absolute scale,
    :func:`conditional_moments`) (measured: 0.00041 of the declared bound).
    Regime: the hinge gradient at init is ``-E[f_i sigma(Wx)]`` because the symmetric init gives ``f = 0``.

    References
    ----------
    .. [src] [Collins24, eq. (7), Lemma A.3].

    Examples
    --------
    >>> a = head_after_step([[0.0, 1.0], [0.0, 1.0]], [[-1.0, 1.0]], eta=1.0)   # r = 1, f(u) = u
    >>> bool(np.allclose(a, 0.5 / np.sqrt(2 * np.pi) * 0))                       # w_1 = 0: no signal
    True
    """
    owner = "multitask.head_after_step"
    ts, S, eta = _head_inputs(owner, W0, tasks, eta)
    return _heads(owner, S, ts, eta, lam_a, A0)


def post_head_loss(W0, tasks, eta, lam_a=None, A0=None):
    r"""Multi-task hinge loss after the head step, without regularisers (Lemma A.4: a supervised-contrastive loss).

    .. math:: \mathcal L = 1 - \frac1T\sum_{i,j} a_{ij}^+\,\mathbb E[f_i^*\sigma(w_j^\top x)]
              \overset{\lambda_a = 1/\eta}{=} 1 - \eta\,4^{-r}\sum_j S_j^\top\bar\beta S_j \le 1

    Parameters
    ----------
    W0, tasks, eta, lam_a, A0
        As in :func:`head_after_step`.

    Returns
    -------
    float

    Notes
    -----
    Accuracy: absolute error <= 1e-12 (1 + the absolute scale of the subtracted sum) (measured: 0.00032 of the
    declared bound). A negative value (E[y f] > 1, outside the linear regime) warns with RegimeWarning.
    Regime: linear regime of the hinge (the threshold correction is exponentially small in d^2, Lemma A.6's
    proof, eqs. (37)-(38)).

    References
    ----------
    .. [src] [Collins24, eqs. (16)-(17), with {a^+} and the factor eta restored; Lemma A.4].
    """
    owner = "multitask.post_head_loss"
    ts, S, eta = _head_inputs(owner, W0, tasks, eta)
    a = _heads(owner, S, ts, eta, lam_a, A0)
    loss = float(1.0 - np.sum(a * (ts.F @ S.T)) / (ts.n_tasks * ts.F.shape[1]))
    if loss < 0.0:   # E[y f] > 1: y f >= 1 on inputs of positive probability, where the hinge is flat
        warnings.warn(f"{owner}: the linear-regime loss is {loss:.3g} < 0, so the hinge reaches its threshold "
                      f"([Collins24, Lemma A.3]) and the closed form is not the hinge loss; use a smaller eta, nu_w "
                      f"or width (check_linear_regime).", RegimeWarning, stacklevel=2)
    return loss


def _gradient_parts(owner, W0, ts, r, eta, lam_a, A0, method, r_from_tasks=False):
    """Fixed-head gradient in reduced coordinates: (g_par (m, r), g_perp (m,)) with grad_perp = g_perp w_perp/s."""
    W0, r, w_par, s = _split(owner, W0, r, r_from_tasks=r_from_tasks)
    M_par, m_perp, S = conditional_moments(w_par, s, method)
    P = 2 ** r
    if lam_a is None:                                                     # (1/T) sum_i a_ij F_iu = eta (S beta_bar)/P
        V = eta * (S if ts is None else S @ ts.beta_bar()) / P
    else:
        ts = TaskSet.hadamard(r) if ts is None else ts
        V = (_heads(owner, S, ts, eta, lam_a, A0).T @ ts.F) / ts.n_tasks
    g_par = -np.einsum("mp,mpk->mk", V, M_par) / P
    g_perp = -np.einsum("mp,mp->m", V, m_perp) / P
    return W0, r, w_par, s, g_par, g_perp


def population_gradient(W0, tasks, eta, lam_a=None, A0=None):
    r"""Population gradient of the multi-task loss in W with the heads held fixed at ``a^+`` (eq. (8)).

    .. math:: \nabla_{w_j} = -\frac1T\sum_i a_{ij}^+\,\mathbb E[f_i^*(x)\sigma'(w_j^\top x)x]
              \overset{\lambda_a=1/\eta}{=} -\eta\,4^{-r}\sum_{u,u'}\bar\beta(u,u')S_j(u')M_j(u)

    Parameters
    ----------
    W0, tasks, eta, lam_a, A0
        As in :func:`head_after_step`.

    Returns
    -------
    ndarray of shape (m, d)

    Notes
    -----
    Accuracy (lambda_a = 1/eta): absolute error <= 1e-12 eta 4^-r sum_u |v(u)| |M(u)| at the absolute scale (v =
    |beta_bar| S) (measured: 0.00053 of the declared bound).
    Regime: linear regime. The heads are not differentiated through: the gradient of the contrastive loss of
    :func:`post_head_loss` through ``a^+(W)`` is twice this (the factor-2 pitfall, docs/multitask.md).

    References
    ----------
    .. [src] [Collins24, eq. (8), Lemma A.6 (with its sign and eta fixed)].
    """
    owner = "multitask.population_gradient"
    eta = check(owner, "eta", eta, _POS)
    W0 = check(owner, "W0", W0, FiniteArray(2))
    ts = tasks if isinstance(tasks, TaskSet) else TaskSet(tasks)
    W0, r, w_par, s, g_par, g_perp = _gradient_parts(owner, W0, ts, ts.r, eta, lam_a, A0, "auto", True)
    return np.concatenate([g_par, (g_perp / s)[:, None] * W0[:, r:]], axis=1)


# ---- weight decay and kappa -----------------------------------------------------------------------------------

def lambda_w_paper(r, eta):
    r"""The paper's first-layer weight decay (Prop. 4.1), which cancels the perp part at leading order.

    .. math:: \lambda_w = \big(1 + \eta^2 2^{-r-1}/\pi\big)/\eta

    Notes
    -----
    Accuracy: relative error <= 4 eps wherever the result is a normal float, eta in 1e-300..1e300, any r (formed as
    1/eta + eta 2^(-r-1)/pi by ldexp) (measured: 0.17 of the declared bound).
    Regime: beta_bar = I (Assumption 2.1 with T = infinity); use :func:`decay_factor` for ``1 - eta lambda_w``.

    References
    ----------
    .. [src] [Collins24, Proposition 4.1, Lemma A.10, Proposition A.11] (Theorem B.5 and Corollary B.6 print it
       garbled).

    Examples
    --------
    >>> round(lambda_w_paper(1, 1.0), 12)
    1.079577471546
    """
    r = as_int("multitask.lambda_w_paper", "r", r, 1)
    eta = check("multitask.lambda_w_paper", "eta", eta, _POS)
    return 1.0 / eta + math.ldexp(eta / math.pi, -r - 1)


def lambda_w_adaptive(B, eta):
    r"""Adaptive weight decay that cancels the leading perp leakage for any task set (derived in docs/multitask.md).

    .. math:: \lambda_w = \big(1 + \eta^2 B_T/(2\pi)\big)/\eta,\qquad B_T = \tfrac1T\sum_i \hat f_i(\emptyset)^2

    Notes
    -----
    Accuracy: relative error <= 4 eps wherever the result is a normal float, eta in 1e-300..1e300 (1/eta + eta B/(2
    pi): eta^2 is never formed) (measured: 0.25 of the declared bound).
    Regime: any finite task set; cancels the perp leakage at leading order in eps (measured: ratio 0.307 -> 0.0137).

    References
    ----------
    .. [src] derived in docs/multitask.md (not in [Collins24]).
    """
    B = check("multitask.lambda_w_adaptive", "B", B, Interval(0, 1))
    eta = check("multitask.lambda_w_adaptive", "eta", eta, _POS)
    return 1.0 / eta + eta * B / (2 * math.pi)


def decay_factor(r, eta, lam_w="paper", tasks=None):
    r"""The factor ``1 - eta lambda_w`` of the first-layer update, computed without cancellation.

    .. math:: 1 - \eta\lambda_w = -\eta^2 2^{-r-1}/\pi\ (\text{paper}),\quad -\eta^2 B_T/(2\pi)\ (\text{adaptive}),
              \quad 1 - \eta\lambda_w\ (\text{a number})

    Parameters
    ----------
    r : int
    eta : float
    lam_w : {"paper", "adaptive"} or float
    tasks : TaskSet, array_like or None
        For "adaptive" (None: the Hadamard universe, ``B_T = 2^-r``).

    Returns
    -------
    float

    Notes
    -----
    Accuracy: relative error <= 4 eps for "paper" and "adaptive" wherever the result is a normal float (-inf past
    it), eta in 1e-300..1e300, r to 2000 (eta^2 2^-r by frexp/ldexp: before, NaN at eta = 1e200, r = 1100); a number
    lam_w: absolute <= 2 eps (1 + |eta lam_w|) (measured: 0.24 of the declared bound).
    Regime: the perp cancellation ``1 - eta lam_w + eta^2 B/(2 pi) ~ 0`` is catastrophic in floating point:
    forming ``1 - eta*lam_w`` from the rounded lam_w leaves an error of order 1e-16 against a signal of order
    ``eta^2 2^-r`` (docs/multitask.md).

    References
    ----------
    .. [src] [Collins24, proof of Lemma A.10] (weight decay in the update).

    Examples
    --------
    >>> decay_factor(1, 1.0) == -0.25 / np.pi
    True
    """
    owner = "multitask.decay_factor"
    r = as_int(owner, "r", r, 1)
    eta = check(owner, "eta", eta, _POS)
    lam_w = check(owner, "lam_w", lam_w, _LAM_W)
    if lam_w == "paper":
        return -_eta2_ldexp(eta, 1 / math.pi, -r - 1)
    if lam_w == "adaptive":
        return -_eta2_ldexp(eta, _stats(_tasks(owner, tasks, r), r)["B"] / (2 * math.pi), 0)
    return 1.0 - eta * lam_w


def kappa_par(r, eta, corrected=True):
    r"""Scale of the ground-truth part after the step with the paper's lambda_w and beta_bar = I.

    .. math:: w_\|^+ \approx \kappa_\|\,w_\|,\qquad \kappa_\| = \frac{\eta^2 2^{-r}}{2\pi}
              \quad(\text{paper: } \eta^2 2^{-r-2},\ \text{Lemma A.10})

    Parameters
    ----------
    r : int
    eta : float
    corrected : bool
        False returns the paper's constant (from its ``A_par_par -> I/4``).

    Notes
    -----
    Accuracy: relative error <= 4 eps wherever the result is a normal float (inf past it), eta in 1e-300..1e300, r
    to 2000 (before: NaN at eta = 1e200, r = 1100) (measured: 0.24 of the declared bound).
    Regime: leading order in ``eps = ||w_par||/s``; exact for r = 1 (``eta^2/(4 pi)``), O(eps^2) otherwise.

    References
    ----------
    .. [src] [Collins24, Lemma A.10 and its proof, proof of Theorem A.12]; corrected in docs/errata.md.

    Examples
    --------
    >>> round(kappa_par(1, 1.0) * 4 * np.pi, 15), kappa_par(2, 2.0, corrected=False)
    (1.0, 0.25)
    """
    r = as_int("multitask.kappa_par", "r", r, 1)
    eta = check("multitask.kappa_par", "eta", eta, _POS)
    return _eta2_ldexp(eta, 1 / (2 * math.pi), -r) if corrected else _eta2_ldexp(eta, 1.0, -r - 2)


def kappa_hat(W0, W_plus, r):
    r"""Measured kappa: least-squares scale of the ground-truth parts.

    .. math:: \hat\kappa = \frac{\sum_j \langle w^+_{j\|}, w^0_{j\|}\rangle}{\sum_j \|w^0_{j\|}\|^2}

    Notes
    -----
    Accuracy: relative error <= (2 m r + 4) eps (|kappa| + sum|W+ W0|/sum W0^2) at entries 1e-200..1e200 (exact
    power-of-2 scaling; before: NaN at 1e-200) (measured: 0.08 of the declared bound).
    Regime: any W0, W+ of the same shape with a non-zero ground-truth block; equals kappa_par when
    ``w+_par = kappa_par w0_par`` exactly (r = 1, beta_bar = I).

    References
    ----------
    .. [src] popdyn's own (the E1/E2 reproductions of docs/multitask.md).
    """
    W0 = check("multitask.kappa_hat", "W0", W0, FiniteArray(2))
    W_plus = check("multitask.kappa_hat", "W_plus", W_plus, FiniteArray(2, W0.shape))
    r = as_int("multitask.kappa_hat", "r", r, 1, W0.shape[1] - 1)
    A, B = W0[:, :r], W_plus[:, :r]
    a, b = np.abs(A).max(), np.abs(B).max()   # scaled by powers of 2 (exact): no under/overflow of the sums
    sa, sb = (math.ldexp(1.0, -math.frexp(x)[1]) if 0 < x < math.inf else 1.0 for x in (a, b))
    return float(np.sum((B * sb) * (A * sa)) / np.sum((A * sa) ** 2) * (sa / sb))


def subspace_ratio(W, r):
    r"""The quantity of Theorem 4.2: spurious energy over the r-th singular value of the ground-truth block.

    .. math:: \mathrm{ratio}(W) = \frac{\|\Pi_\perp(W)\|_2}{\sigma_r(\Pi_\|(W))}

    Returns ``inf`` when ``sigma_r = 0`` (fewer than r independent rows). Duplicated rows (symmetric init) leave
    it unchanged.

    Notes
    -----
    Accuracy: relative error <= 8 (m + d) eps (1 + sigma_1/sigma_r) (backward-stable SVD), entries 1e-200..1e200;
    inf where sigma_r <= max(m, r) eps sigma_1 (measured: 0.021 of the declared bound).
    Regime: any W; on a simulated W+ the spurious block carries Monte Carlo noise of order sqrt(d/n), which the
    norm turns into an upward bias: compare simulated ratios only where the leakage dominates that noise.

    References
    ----------
    .. [src] [Collins24, Theorem 4.2, Theorem A.12].

    Examples
    --------
    >>> subspace_ratio(np.array([[1.0, 0.0, 0.1], [0.0, 2.0, 0.0]]), 2)
    0.1
    """
    W = check("multitask.subspace_ratio", "W", W, FiniteArray(2))
    r = as_int("multitask.subspace_ratio", "r", r, 1, W.shape[1] - 1)
    sig = np.linalg.svd(W[:, :r], compute_uv=False)
    sr = sig[r - 1] if len(sig) >= r and sig[r - 1] > sig[0] * max(W.shape[0], r) * np.finfo(float).eps else 0.0
    perp = np.linalg.norm(W[:, r:], 2)
    return float(perp / sr) if sr > 0 else float("inf")


# ---- the one-step map -----------------------------------------------------------------------------------------

def leading_order_map(w_par, s, eta=1.0, tasks=None, lam_w="paper"):
    r"""Leading-order ("Walsh") one-step map for any finite task set (derived in docs/multitask.md).

    .. math:: w_\|^+ = (1-\eta\lambda_w)w_\| + \frac{\eta^2}{2\pi}\Big[s\,c + \big(BI_r + K + \tfrac2\pi C_2\big)
              w_\|\Big],\qquad c_\perp = 1-\eta\lambda_w + \frac{\eta^2}{2\pi}\big(B + c^\top w_\|/s\big)

    Parameters
    ----------
    w_par : array_like of shape (m, r)
    s : array_like of shape (m,)
    eta : float
    tasks : TaskSet, array_like or None
        None: the Hadamard universe (``B = 2^-r``, ``K = 2^-r I``, ``c = 0``, ``C_2 = 0``).
    lam_w : {"paper", "adaptive"} or float

    Returns
    -------
    w_par_plus : ndarray of shape (m, r)
    c_perp : ndarray of shape (m,)

    Notes
    -----
    Accuracy: w_par^+ and c_perp within 8 eps of their absolute scale |dec w| + eta^2/(2 pi) (s|c| + |L||w|), eta in
    1e-150..1e150 (before: NaN at eta = 1e150) (measured: 0.13 of the declared bound), for entries of W that are 0
    or normal floats (a subnormal entry, |x| < 2.2e-308, can lose every digit of the terms at its own scale).
    Regime: ``s -> infinity`` with ``w_par`` fixed; error O(eta^2 ||w_par|| eps) in general, O(eps^2) for
    beta_bar = I, exact for single-coordinate tasks. Tasks with no degree-0/1 Walsh content learn nothing at
    this order.

    References
    ----------
    .. [src] derived in docs/multitask.md (not in [Collins24]).
    """
    owner = "multitask.leading_order_map"
    eta = check(owner, "eta", eta, _POS)
    from .moments import _check_neurons
    w_par, s = _check_neurons(owner, w_par, s)
    r = w_par.shape[1]
    ts = _tasks(owner, tasks, r)
    st = _stats(ts, r)
    dec = decay_factor(r, eta, lam_w, ts)
    c2 = _eta2_ldexp(eta, 1 / (2 * math.pi), 0)
    L = st["B"] * np.eye(r) + st["K"] + (2 / math.pi) * st["C2"]
    wp = dec * w_par + c2 * (s[:, None] * st["c"][None, :] + w_par @ L.T)
    return wp, dec + c2 * (st["B"] + w_par @ st["c"] / s)


def one_step_map_reduced(w_par, s, eta=1.0, tasks=None, lam_w="paper", method="auto"):
    r"""Exact one-step map of each neuron in its reduced coordinates ``(w_par, s)`` (lambda_a = 1/eta).

    .. math:: w_\|^+ = (1-\eta\lambda_w)w_\| + \eta^2 4^{-r}\sum_u v(u)M_\|(u),\qquad
              c_\perp = 1-\eta\lambda_w + \frac{\eta^2 4^{-r}}{s}\sum_u v(u)q(u),\qquad v = \bar\beta S

    and ``w_perp^+ = c_perp w_perp``.

    Parameters
    ----------
    w_par : array_like of shape (m, r)
    s : array_like of shape (m,)
        ``||w_perp|| > 0``.
    eta : float
    tasks : TaskSet, array_like or None
        None: beta_bar = I.
    lam_w : {"paper", "adaptive"} or float
    method : {"auto", "arcsin", "quad"}

    Returns
    -------
    w_par_plus : ndarray of shape (m, r)
    c_perp : ndarray of shape (m,)

    Notes
    -----
    Accuracy (r <= 3): w_par^+ and c_perp within 1e-12 of their absolute scale |dec| |w| + eta^2 4^-r sum_u |v(u)|
    |M(u)| (c_perp: the same over s, with q) (measured: 0.00064 of the declared bound).
    Regime: linear regime of the hinge; any r, d, T. 1-homogeneous in (w_par, s). With the paper's lambda_w
    and beta_bar = I: r = 1 gives ``c_perp = 0`` and ``w_1^+ = eta^2 w_1/(4 pi)`` exactly.

    References
    ----------
    .. [src] [Collins24, Lemma A.10, Proposition 4.1]; the exact map derived in docs/multitask.md.

    Examples
    --------
    >>> wp, c = one_step_map_reduced([[0.2]], [1.0])
    >>> bool(np.allclose(wp, 0.2 / (4 * np.pi))), bool(abs(c[0]) < 1e-15)
    (True, True)
    """
    owner = "multitask.one_step_map_reduced"
    eta = check(owner, "eta", eta, _POS)
    from .moments import _check_neurons
    w_par, s = _check_neurons(owner, w_par, s)
    r = w_par.shape[1]
    ts = _tasks(owner, tasks, r)
    W = np.concatenate([w_par, s[:, None]], axis=1)
    _, _, _, _, g_par, g_perp = _gradient_parts(owner, W, ts, r, eta, None, None, method)
    dec = decay_factor(r, eta, lam_w, ts)
    return dec * w_par - eta * g_par, dec - eta * g_perp / s


def one_step_map(W0, r, tasks=None, eta=1.0, lam_w="paper", lam_a=None, A0=None, method="exact"):
    r"""First layer after the head step and one population step (eqs. (7)-(8) with weight decay), per neuron.

    .. math:: w_j^+ = (1-\eta\lambda_w)\,w_j + \eta^2\,4^{-r}\sum_{u,u'}\bar\beta(u,u')\,S_j(u')\,M_j(u)
              \quad(\lambda_a = 1/\eta)

    Parameters
    ----------
    W0 : array_like of shape (m, d)
    r : int
        ``1 <= r < d``.
    tasks : TaskSet, array_like of shape (T, 2**r) or None
        None: the Hadamard universe (beta_bar = I, the T = infinity algorithm).
    eta : float
    lam_w : {"paper", "adaptive"} or float
        The paper's ``(1 + eta^2 2^-r-1/pi)/eta``, the adaptive ``(1 + eta^2 B_T/(2 pi))/eta``, or a number;
        ``1 - eta lam_w`` is formed analytically (:func:`decay_factor`).
    lam_a : float or None
        None: the paper's ``1/eta``.
    A0 : array_like of shape (T, m) or None
        Initial heads (needed with ``lam_a``).
    method : {"exact", "leading"}
        "exact": the sign-pattern sums; "leading": :func:`leading_order_map` (lam_a must be None).

    Returns
    -------
    ndarray of shape (m, d)

    Notes
    -----
    Accuracy (method="exact", r <= 3): as :func:`one_step_map_reduced`, per entry (the perp entries relative to
    |w_perp,l|) (measured: 0.00059 of the declared bound).
    Regime: linear regime of the hinge (``nu_w ~ d^-1.25``, ``m = O(d)``; :func:`check_linear_regime`);
    outside it the threshold term of Lemma A.4 is missing. Neurons do not interact; duplicated neurons get
    identical updates.

    References
    ----------
    .. [src] [Collins24, Section 3, Lemma A.10, Proposition 4.1]; the exact map derived in docs/multitask.md.

    Examples
    --------
    >>> W0 = np.array([[0.3, 0.4, 1.2], [0.3, 0.4, 1.2]])
    >>> Wp = one_step_map(W0, 1)                              # r = 1: w_perp^+ = 0, w_1^+ = w_1/(4 pi)
    >>> bool(np.allclose(Wp, [[0.3 / (4 * np.pi), 0, 0]] * 2, atol=1e-15))
    True
    """
    owner = "multitask.one_step_map"
    eta = check(owner, "eta", eta, _POS)
    method = check(owner, "method", method, Options(("exact", "leading")))
    W0, r, w_par, s = _split(owner, W0, r)
    ts = _tasks(owner, tasks, r)
    dec = decay_factor(r, eta, lam_w, ts)
    if method == "leading":
        if lam_a is not None:
            raise InvalidParameterError(f"The 'lam_a' parameter of {owner} must be None (1/eta) with "
                                        f"method='leading'. Got {lam_a!r} instead.")
        wp, c = leading_order_map(w_par, s, eta, ts, lam_w)
        return np.concatenate([wp, c[:, None] * W0[:, r:]], axis=1)
    *_, g_par, g_perp = _gradient_parts(owner, W0, ts, r, eta, lam_a, A0, "auto")
    return np.concatenate([dec * w_par - eta * g_par, (dec - eta * g_perp / s)[:, None] * W0[:, r:]], axis=1)


def margin_bound(W0, heads, delta):
    r"""Linear-regime certificate: a bound on :math:`y_i f_i(x)` that holds for all tasks at all but a fraction
    ``delta`` of Gaussian inputs.

    .. math:: y_if_i(x) \le \max_i\|a_i^+\|\,\|W^0x\|,\qquad
              P\Big(\|W^0x\|^2 \ge \mathrm{tr}\Sigma + 2\sqrt{\mathrm{tr}(\Sigma^2)\,t} + 2\|\Sigma\|t\Big)
              \le e^{-t},\quad \Sigma = W^{0\top}W^0,\ t = \log(1/\delta)

    (Cauchy-Schwarz, ``relu(z) <= |z|``, and the Laurent-Massart chi-square tail.)

    Parameters
    ----------
    W0 : array_like of shape (m, d)
    heads : array_like of shape (T, m)
        Heads after the step (:func:`head_after_step`).
    delta : float
        Exceptional probability, in (0, 1).

    Returns
    -------
    float
        The bound; below 1 certifies the linear regime (up to probability delta) in which the closed forms are exact.

    Notes
    -----
    Accuracy: relative error <= 8 (m + d) eps against the singular values in mpmath (measured: 0.075 of the declared
    bound).
    Regime: any W0; deterministic and O(m^2 d), where sampling x would cost O(n m d) and certify nothing about
    unseen inputs. With nu_w = d^-1.25 and m = O(d) it is below 1 (0.26 at the E1 problem, delta = 1e-9).

    References
    ----------
    .. [src] [Collins24, proof of Lemma A.6, eqs. (37)-(38)] (the paper's high-probability linear regime).
    """
    owner = "multitask.margin_bound"
    W0 = check(owner, "W0", W0, FiniteArray(2))
    heads = check(owner, "heads", heads, FiniteArray(2, (None, W0.shape[0])))
    delta = check(owner, "delta", delta, Interval(0, 1, closed="neither"))
    sv2 = np.linalg.svd(W0, compute_uv=False) ** 2
    t = np.log(1.0 / delta)
    q = sv2.sum() + 2.0 * np.sqrt((sv2 ** 2).sum() * t) + 2.0 * sv2.max() * t
    return float(np.linalg.norm(heads, axis=1).max() * np.sqrt(q))


def check_linear_regime(W0, tasks, eta, lam_a=None, A0=None, n_mc=100_000, seed=0):
    r"""Monte Carlo certificate of the linear regime: ``max_{i,x} y_i f_i(x; W0, a^+)`` over Gaussian x.

    .. math:: \text{linear regime} \iff f_i^*(x)\,a_i^{+\top}\sigma(W^0x) < 1\ \text{a.s.}

    Returns a dict ``max_margin`` (the largest ``y f`` seen), ``frac_active`` (fraction of (task, sample)
    pairs with ``y f >= 1``) and ``bound`` (the crude a-priori bound ``sum_j |a_ij| ||w_j|| E-max ||x||``).
    Warns with :class:`~popdyn.RegimeWarning` when a threshold is reached: the closed forms then miss the
    threshold term (Lemma A.4).

    Notes
    -----
    Accuracy: a sampled maximum (no standard error: it is not an estimator of a mean); ``frac_active`` is a Monte
    Carlo proportion with SE sqrt(f (1 - f)/(n_mc T)) (not calibration-tested).
    Regime: a sampled maximum, not a proof; with ``nu_w = d^-1.25`` and ``m <= sqrt(2 pi) d/eta`` the margin is
    far below 1 (docs/multitask.md).

    References
    ----------
    .. [src] [Collins24, Section 5 (Step 1), proof of Lemma A.6, eqs. (37)-(38)].
    """
    owner = "multitask.check_linear_regime"
    n_mc = as_int(owner, "n_mc", n_mc, 1)
    ts, S, eta = _head_inputs(owner, W0, tasks, eta)
    W0 = np.asarray(W0, dtype=np.float64)
    a = _heads(owner, S, ts, eta, lam_a, A0)
    rng = np.random.default_rng(seed)
    top, hits, done = -np.inf, 0, 0
    while done < n_mc:
        X = rng.standard_normal((min(65_536, n_mc - done), W0.shape[1]))
        yf = ts.F[:, pattern_index(X, ts.r)] * (a @ np.maximum(X @ W0.T, 0.0).T)
        top, hits, done = max(top, float(yf.max())), hits + int((yf >= 1.0).sum()), done + len(X)
    bound = float(np.abs(a).sum(1).max() * np.linalg.norm(W0, axis=1).max() * (math.sqrt(W0.shape[1]) + 6.0))
    if top >= 1.0:
        warnings.warn(f"{owner}: the hinge reaches its threshold (max y f = {top:.3g} >= 1 on {hits} of "
                      f"{n_mc * ts.n_tasks} pairs): the closed forms miss the threshold term "
                      f"([Collins24, Lemma A.3]); use a smaller nu_w (the paper: d^-1.25) or width.", RegimeWarning,
                      stacklevel=2)
    return {"max_margin": top, "frac_active": hits / (n_mc * ts.n_tasks), "bound": bound}
