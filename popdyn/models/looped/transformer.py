"""The looped linear transformer and gradient descent on the prompt ([Shi24] ch. 8, Defs 8.5-8.12, Lemma 8.13,
Thm 8.14; extensions in docs/looped.md).

Public names
------------
prompt and weights
    :func:`build_prompt`, :func:`attention_weights_gd`
the transformer
    :func:`linear_attention` (full masked form, or the last row only), :func:`looped_forward`, :func:`forward`
regression
    :func:`gd`, :func:`condition_number`, :func:`step_schedule`
"""
from __future__ import annotations

import numbers

import numpy as np

from ..._validate import FiniteArray, InvalidParameterError, as_int, check

__all__ = ["build_prompt", "attention_weights_gd", "linear_attention", "looped_forward", "forward", "gd",
           "condition_number", "step_schedule"]

_NAMED_STEPS = ("1/L", "2/(L+mu)")


def _matrix(owner, name, value, shape=None):
    a = check(owner, name, value, FiniteArray(2))
    if shape is not None and a.shape != shape:
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must have shape {shape}. "
                                    f"Got shape {a.shape} instead.")
    return a


def _prompt_data(owner, X, y):
    """X as a finite (n, d) array and y as a finite (n,) array, or InvalidParameterError naming them."""
    X = _matrix(owner, "X", X)
    y = check(owner, "y", y, FiniteArray(1))
    if y.shape != (X.shape[0],):
        raise InvalidParameterError(f"The 'y' parameter of {owner} must have shape ({X.shape[0]},) (n = rows of X). "
                                    f"Got shape {y.shape} instead.")
    return X, y


def _alpha(owner, alpha):
    a = check(owner, "alpha", alpha, FiniteArray(0))
    if a == 0:
        raise InvalidParameterError(f"The 'alpha' parameter of {owner} must be a non-zero finite float. Got {alpha!r} instead.")
    return float(a)


def step_schedule(lam, T, eta, owner="looped.step_schedule"):
    r"""The residual weights eta^(0..T-1) for Gram eigenvalues ``lam`` (ascending, batched on leading axes).

    .. math:: \eta^{(t)} = 1/L,\ \ 2/(L+\mu),\ \ \text{a constant, or a given schedule};\quad
              L = \lambda_{\max}(X^\top X),\ \mu = \lambda_{\min}(X^\top X)

    Parameters
    ----------
    lam : ndarray of shape (..., d)
        Eigenvalues of X^T X in ascending order.
    T : int
        Number of loops (>= 0).
    eta : {"1/L", "2/(L+mu)"} or float or array_like of shape (T,)
        "1/L" is the theorem's prompt-dependent step (Thm 8.25); a float is one fixed network's step;
        an array is a per-loop schedule (Def 8.7). Numbers must be finite and > 0.
    owner : str
        Name used in error messages.

    Returns
    -------
    ndarray of shape lam.shape[:-1] + (T,)

    Notes
    -----
    Regime: "1/L" depends on the prompt, so it describes one network per prompt (docs/looped.md).

    Accuracy: one rounding: "1/L" is 1/lam[-1] and "2/(L+mu)" 2/(lam[-1] + lam[0]) of the eigenvalues given
    (tested).

    References
    ----------
    .. [src] [Shi24, Definition 8.7, Theorem 8.25].

    Examples
    --------
    >>> step_schedule(np.array([1.0, 4.0]), 2, "1/L")
    array([0.25, 0.25])
    """
    T = as_int(owner, "T", T, low=0)
    lam = np.asarray(lam, dtype=np.float64)
    batch = lam.shape[:-1] + (T,)
    if isinstance(eta, str):
        if eta not in _NAMED_STEPS:
            raise InvalidParameterError(f"The 'eta' parameter of {owner} must be one of {list(_NAMED_STEPS)}, a float "
                                        f"> 0 or an array of {T} floats > 0. Got {eta!r} instead.")
        L, mu = lam[..., -1:], lam[..., :1]
        return np.broadcast_to(1.0 / L if eta == "1/L" else 2.0 / (L + mu), batch).copy()
    e = np.asarray(eta, dtype=np.float64) if isinstance(eta, (numbers.Real, list, tuple, np.ndarray)) else None
    if e is None or e.ndim > 1 or (e.ndim == 1 and e.shape != (T,)) or not np.all((e > 0) & np.isfinite(e)):
        raise InvalidParameterError(f"The 'eta' parameter of {owner} must be one of {list(_NAMED_STEPS)}, a float "
                                    f"> 0 or an array of {T} floats > 0. Got {eta!r} instead.")
    return np.broadcast_to(e, batch).copy()


def build_prompt(X, y, alpha, q0=None):
    r"""The input matrix Z^(0) of the looped transformer (Def 8.5).

    .. math:: Z^{(0)} = \begin{bmatrix} X & y \\ q^{(0)\top} & \alpha \end{bmatrix}\in\mathbb R^{(n+1)\times(d+1)}

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    alpha : float
        Query scalar, non-zero.
    q0 : ndarray of shape (d,), optional
        Initial query row (default 0, as in the theorem).

    Returns
    -------
    ndarray of shape (n + 1, d + 1)

    Notes
    -----
    Regime: any prompt.

    Accuracy: exact (the entries are copied).

    References
    ----------
    .. [src] [Shi24, Definition 8.5].

    Examples
    --------
    >>> build_prompt(np.eye(2), np.ones(2), 3.0)
    array([[1., 0., 1.],
           [0., 1., 1.],
           [0., 0., 3.]])
    """
    X, y = _prompt_data("looped.build_prompt", X, y)
    n, d = X.shape
    Z = np.zeros((n + 1, d + 1))
    Z[:n, :d], Z[:n, d], Z[n, d] = X, y, _alpha("looped.build_prompt", alpha)
    if q0 is not None:
        Z[n, :d] = check("looped.build_prompt", "q0", q0, FiniteArray(1, (d,)))
    return Z


def attention_weights_gd(d, Gamma=None):
    r"""Weights (Q, P) under which one loop is one (preconditioned) GD step (Lemma 8.13; extended).

    .. math:: Q = I_{d+1},\qquad P = \begin{bmatrix}\Gamma & 0\\ 0^\top & 0\end{bmatrix}\quad(\Gamma = I_d
              \text{ in the paper})

    Parameters
    ----------
    d : int
        Feature dimension (>= 1).
    Gamma : ndarray of shape (d, d), optional
        Preconditioner; the update becomes theta <- theta - eta Gamma^T (A theta - X^T y).

    Returns
    -------
    Q, P : ndarray of shape (d + 1, d + 1)

    Notes
    -----
    Regime: any prompt; Gamma = I is the chapter's plain GD, other Gamma are popdyn's extension.

    Accuracy: exact (0, 1 and the entries of Gamma).

    References
    ----------
    .. [src] [Shi24, Lemma 8.13]; the preconditioned extension derived in docs/looped.md.

    Examples
    --------
    >>> Q, P = attention_weights_gd(2)
    >>> np.diag(P)
    array([1., 1., 0.])
    """
    d = as_int("looped.attention_weights_gd", "d", d, low=1)
    P = np.zeros((d + 1, d + 1))
    P[:d, :d] = np.eye(d) if Gamma is None else _matrix("looped.attention_weights_gd", "Gamma", Gamma, (d, d))
    return np.eye(d + 1), P


def linear_attention(Z, Q, P, *, last_row=False):
    r"""Masked linear attention (Def 8.6): only the query row attends, and only to the n example rows.

    .. math:: \mathrm{Attn}(Z; Q, P) = (M\circ(ZQZ^\top))\,ZP,\qquad
              M = \begin{bmatrix}0_{n\times n} & 0\\ 1_{1\times n} & 0\end{bmatrix}

    Parameters
    ----------
    Z : ndarray of shape (n + 1, d + 1)
    Q, P : ndarray of shape (d + 1, d + 1)
    last_row : bool
        False: the full (n+1, d+1) product, O(n^2 d) (for checking). True: only its last row
        ``(z_q Q Z_x^T) Z_x P`` with ``Z_x = Z[:n]``, O(n d) (every other row is zero).

    Returns
    -------
    ndarray of shape (n + 1, d + 1), or (d + 1,) with ``last_row``

    Notes
    -----
    Regime: any Z, Q, P. Dimensions as used, not as printed (Def 8.6 says d x d; Appendix T).

    Accuracy: every entry within (n + d + 3) eps of the same product taken of absolute values (the standard bound
    of a matrix product), full form and last row; measured 0.19 of it (tests/test_accuracy_looped.py, exact
    rationals).

    References
    ----------
    .. [src] [Shi24, Definition 8.6]; the last-row fast path in docs/looped.md.

    Examples
    --------
    >>> Z = build_prompt(np.eye(2), np.ones(2), 1.0)
    >>> Q, P = attention_weights_gd(2)
    >>> linear_attention(Z, Q, P)[-1]  # q^T X^T X + alpha y^T X with q = 0 (Lemma 8.13)
    array([1., 1., 0.])
    """
    owner = "looped.linear_attention"
    Z = _matrix(owner, "Z", Z)
    k = Z.shape[1]
    Q, P = _matrix(owner, "Q", Q, (k, k)), _matrix(owner, "P", P, (k, k))
    if last_row:
        Zx = Z[:-1]
        return ((Z[-1] @ Q) @ Zx.T) @ Zx @ P
    M = np.zeros((Z.shape[0], Z.shape[0]))
    M[-1, :-1] = 1.0
    return (M * (Z @ Q @ Z.T)) @ Z @ P


def looped_forward(Z0, Q, P, T, eta, *, return_trajectory=False, full=False):
    r"""The looped transformer (Def 8.7): T residual loops of one weight-tied attention layer.

    .. math:: Z^{(t)} = Z^{(t-1)} - \eta^{(t-1)}\,\mathrm{Attn}(Z^{(t-1)}; Q, P),\quad t = 1..T

    Parameters
    ----------
    Z0 : ndarray of shape (n + 1, d + 1)
    Q, P : ndarray of shape (d + 1, d + 1)
    T : int
        Number of loops (>= 0).
    eta : {"1/L", "2/(L+mu)"} or float or array_like of shape (T,)
        Residual weights; a named step is computed from X = Z0[:n, :d] (see :func:`step_schedule`).
    return_trajectory : bool
        Also return the query rows Z^(t)[n] for t = 0..T, shape (T + 1, d + 1).
    full : bool
        Iterate the full masked attention (O(n^2 d) per loop) instead of the last-row fast path (O(n d)).

    Returns
    -------
    Z_T : ndarray of shape (n + 1, d + 1), and the trajectory when asked

    Notes
    -----
    Regime: any (Q, P). Rows 1..n never change (the mask), so the fast path is exact.

    Accuracy: the query row's first d entries equal -theta^(T) of :func:`gd` to 4 eps (T + 1)(n + d) |alpha| max_t
    ||theta^(t)|| (fast and full paths; steps in (0, 2/L)); measured 0.022 of it (tests/test_accuracy_looped.py,
    GD in mpmath at 60 digits).

    References
    ----------
    .. [src] [Shi24, Definition 8.7, Lemma 8.13]; the general (Q, P) map derived in docs/looped.md.

    Examples
    --------
    >>> Z = build_prompt(np.eye(2), np.ones(2), 1.0)
    >>> looped_forward(Z, *attention_weights_gd(2), 1, "1/L")[-1]  # X^T X = I: GD solves in one loop
    array([-1., -1.,  1.])
    """
    owner = "looped.looped_forward"
    Z = _matrix(owner, "Z0", Z0).copy()
    k = Z.shape[1]
    Q, P = _matrix(owner, "Q", Q, (k, k)), _matrix(owner, "P", P, (k, k))
    Xp = Z[:-1, :-1]
    etas = step_schedule(np.linalg.eigvalsh(Xp.T @ Xp), T, eta, owner)
    rows = [Z[-1].copy()]
    for e in etas:
        if full:
            Z -= e * linear_attention(Z, Q, P)
        else:
            Z[-1] -= e * linear_attention(Z, Q, P, last_row=True)
        rows.append(Z[-1].copy())
    return (Z, np.array(rows)) if return_trajectory else Z


def forward(X, y, alpha, T, eta, Q=None, P=None):
    r"""Transformer output TF = -q^(T) of the looped transformer on the prompt (X, y, alpha) (Def 8.7).

    .. math:: \mathrm{TF}(Z^{(0)}; Q, P) = -\big(Z^{(T)}_{n+1, 1:d}\big)^\top = \alpha\,\theta^{(T)}
              \ \text{(GD weights, Thm 8.14)}

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    alpha : float
        Query scalar, non-zero.
    T : int
        Number of loops (>= 0).
    eta : {"1/L", "2/(L+mu)"} or float or array_like of shape (T,)
        Residual weights (see :func:`step_schedule`).
    Q, P : ndarray of shape (d + 1, d + 1), optional
        Attention weights; both None gives the GD construction of Lemma 8.13.

    Returns
    -------
    ndarray of shape (d,)

    Notes
    -----
    Regime: any prompt and weights; TF = alpha theta^(T) needs the GD weights and q^(0) = 0.

    Accuracy: ||TF - alpha theta^(T)_exact|| <= 4 eps (T + 1)(n + d) |alpha| max_t ||theta^(t)|| for the GD
    weights and steps in (0, 2/L); measured 0.021 of it (tests/test_accuracy_looped.py, GD in mpmath at 60
    digits).

    References
    ----------
    .. [src] [Shi24, Definition 8.7, Theorem 8.14].

    Examples
    --------
    >>> X, y = np.eye(2), np.array([0.6, 0.8])
    >>> forward(X, y, 2.0, 1, "1/L")  # = alpha theta* after one loop when X^T X = I
    array([1.2, 1.6])
    """
    X, y = _prompt_data("looped.forward", X, y)
    d = X.shape[1]
    if (Q is None) != (P is None):
        raise InvalidParameterError("The 'Q' and 'P' parameters of looped.forward must be given together "
                                    "(or both None for the GD construction).")
    if Q is None:
        Q, P = attention_weights_gd(d)
    return -looped_forward(build_prompt(X, y, alpha), Q, P, T, eta)[-1, :d]


def gd(X, y, T, eta, *, theta0=None, Gamma=None, return_trajectory=False):
    r"""Gradient descent on the prompt's least squares loss l(theta) = ||y - X theta||^2 / 2 (Def 8.9).

    .. math:: \theta^{(t)} = \theta^{(t-1)} - \eta^{(t-1)}\,\Gamma^\top\big(X^\top X\theta^{(t-1)} - X^\top y\big)

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    T : int
        Number of steps (>= 0).
    eta : {"1/L", "2/(L+mu)"} or float or array_like of shape (T,)
        Step sizes (see :func:`step_schedule`).
    theta0 : ndarray of shape (d,), optional
        Start (default 0, i.e. q^(0) = 0).
    Gamma : ndarray of shape (d, d), optional
        Preconditioner (default I: the chapter's plain GD).
    return_trajectory : bool
        Return all iterates, shape (T + 1, d).

    Returns
    -------
    ndarray of shape (d,) (theta^(T)) or (T + 1, d)

    Notes
    -----
    Regime: converges for constant eta in (0, 2/L) when X^T X is invertible; "1/L" is Thm 8.25's step.

    Accuracy: ||theta^(T) - theta^(T)_exact|| <= 4 eps (T + 1)(n + d) max_t ||theta^(t)|| for steps in (0, 2/L),
    the rounding of each step adding up (GD is stable there); measured 0.022 of it (tests/test_accuracy_looped.py,
    the same iteration in mpmath at 60 digits, kappa up to 1e8).

    References
    ----------
    .. [src] [Shi24, Definition 8.9, eq. (8.2), Theorem 8.25].

    Examples
    --------
    >>> gd(np.eye(2), np.array([0.6, 0.8]), 0, "1/L")  # T = 0: theta^(0) = 0
    array([0., 0.])
    """
    owner = "looped.gd"
    X, y = _prompt_data(owner, X, y)
    d = X.shape[1]
    A, b = X.T @ X, X.T @ y
    G = np.eye(d) if Gamma is None else _matrix(owner, "Gamma", Gamma, (d, d))
    th = np.zeros(d) if theta0 is None else check(owner, "theta0", theta0, FiniteArray(1, (d,))).copy()
    out = [th.copy()]
    for e in step_schedule(np.linalg.eigvalsh(A), T, eta, owner):
        th = th - e * (G.T @ (A @ th - b))
        out.append(th)
    return np.array(out) if return_trajectory else th


def condition_number(X):
    r"""Condition number of X^T X (Def 8.12), inf when X^T X is singular (n < d or dependent columns).

    .. math:: \kappa = \lambda_{\max}(X^\top X)/\lambda_{\min}(X^\top X)

    Parameters
    ----------
    X : ndarray of shape (..., n, d)
        One prompt or a stack of prompts.

    Returns
    -------
    float or ndarray of shape X.shape[:-2], in [1, inf]

    Notes
    -----
    Regime: any X. From the singular values of X (accurate where the Gram's eigenvalues are not); kappa = inf
    when n < d or sigma_min <= sigma_max max(n, d) eps (numpy's matrix_rank threshold); never a division by zero.

    Accuracy: relative error <= 4 max(n, d) eps sqrt(kappa) (the smallest singular value carries eps of the
    largest), inf exactly when n < d or sigma_min <= max(n, d) eps sigma_max (up to the rounding of that
    comparison); measured 0.49 of it (tests/test_accuracy_looped.py, mpmath.svd_r at 40 digits).

    References
    ----------
    .. [src] [Shi24, Definition 8.12] (inf when rank deficient).

    Examples
    --------
    >>> condition_number(np.ones((3, 2)))  # rank 1
    inf
    >>> float(condition_number(np.diag([1.0, 2.0])))
    4.0
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim < 2 or not np.all(np.isfinite(X)):
        raise InvalidParameterError(f"The 'X' parameter of looped.condition_number must be a finite array of shape "
                                    f"(..., n, d). Got shape {X.shape} instead.")
    if X.shape[-2] < X.shape[-1]:
        kappa = np.full(X.shape[:-2], np.inf)
    else:
        sv = np.linalg.svd(X, compute_uv=False)
        lo, hi = sv[..., -1], sv[..., 0]
        singular = ~(lo > hi * max(X.shape[-2:]) * np.finfo(float).eps)
        kappa = np.where(singular, np.inf, (hi / np.where(singular, 1.0, lo)) ** 2)
    return float(kappa) if kappa.ndim == 0 else kappa
