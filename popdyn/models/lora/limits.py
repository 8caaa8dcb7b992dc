"""Limits and special constructions of the LoRA model ([Dayi25, Remark 15, App. C.3, App. F]).

Public names
------------
limits of h
    :func:`glm_h` (xi -> inf / GLM), :func:`lazy_h` (xi -> 0), :func:`lazy_solution`
constructions
    :func:`claim2_instance`, :func:`separation_instance`, :func:`example_f1`
after u is learned (App. F.2) and the lazy baseline
    :func:`refit_error`, :func:`thm36_bound`, :func:`lazy_floor`
"""
from __future__ import annotations

import math

import numpy as np

from ... import activations
from ..._validate import FiniteArray, Interval, InvalidParameterError, check
from .problem import Problem, check_overlap

__all__ = ["glm_h", "lazy_h", "lazy_solution", "claim2_instance", "separation_instance", "example_f1",
           "refit_error", "thm36_bound", "lazy_floor"]

_PINV_RTOL = 1e-12  # eigenvalues of a PSD Gram below 1e-12 * max are rank deficiency, not signal
_MIXED_TOL = 1e-15  # truncation of the mixed Hermite series: rho^P <= 1e-15 (float64 resolution)
_MIXED_P_MAX = 2000  # cap on that series' degree (reached only for r -> 1, i.e. xi^2/k < 3.5e-5)
_REAL = Interval(-np.inf, np.inf, closed="neither")
_OPEN_UNIT = Interval(-1, 1, closed="neither")


def glm_h(activation, m):
    r"""Drift of the GLM (single-index) limit: h(m) = 2 K'(m) = 2 sum_p p mu_p^2 m^(p-1).

    .. math:: h_{\rm GLM}(m) = 2K'(m) = 2\sum_{l\ge0}(l+1)\,\mu_{l+1}^2\,m^l

    Parameters
    ----------
    activation : str or Activation
        sigma.
    m : float or ndarray
        Overlaps in [-1, 1].

    Returns
    -------
    float or ndarray of shape m.shape

    Notes
    -----
    Regime: W = 0, c = c_hat = 1/sqrt(k), lam = 1/k, xi = sqrt(k) (the teacher is s(<u, x>)), or the
    limit xi -> inf with W fixed and c = c_hat. Remark 15 (App. C) prints ``sum_l l mu_(l+1)^2 m^l``: it
    misses the factor 2 and has l for l + 1 (docs/errata.md).

    Accuracy: twice that of ``Activation.Kprime``: relative 32 eps for relu and erf, ``12 eps (n^1.5 + 10) n``
    absolute for he_n; measured 0.031 (mpmath, m within 1e-16 of +-1 and 1e-300 included).

    References
    ----------
    .. [src] [Dayi25, Section 1.2, Section 3.1, Remark 15 (App. C); Remark 15's formula corrected].

    Examples
    --------
    >>> import numpy as np
    >>> from popdyn.models import lora
    >>> round(lora.glm_h("relu", 0.0), 12)   # 2 K'(0) = 2 * 1/4 for ReLU
    0.5
    """
    act = activations.get(activation)
    m = check_overlap(m)
    out = 2 * np.asarray(act.Kprime(m), dtype=np.float64)
    return float(out) if m.ndim == 0 else out


def lazy_h(problem):
    r"""Leading order of h as xi -> 0 (lazy limit): a constant, independent of m.

    .. math:: h(m) = 2\xi^2\sum_{i,j}\lambda_i\lambda_jc_i\hat c_j\,K'(G_{ij})\,\big(1 + O(\xi^2)\big)

    Parameters
    ----------
    problem : Problem

    Returns
    -------
    float

    Notes
    -----
    Regime: xi^2 max(1, k c_i c_hat_j) << 1; uses the activation itself (r -> 1, so N0 = N1 here).
    The relative correction is O(xi^2) for smooth sigma but only O(xi) for ReLU: the diagonal
    overlaps sit O(xi^2) below rho = 1, where the ReLU K' has a square-root singularity (measured:
    7.6e-4, 7.6e-5, 7.6e-6 at xi = 1e-2, 1e-3, 1e-4; docs/errata.md).

    Accuracy: ``|d| <= 4 (k + 8) eps sum_ij |2 xi^2 lam_i lam_j c_i c_hat_j K'(G_ij)|`` (plus the K' bound of the
    polynomial activations); measured 0.031.

    References
    ----------
    .. [src] derived in docs/lora.md (expansion in xi of the kernel form of h, [Dayi25, App. D.1]).

    Examples
    --------
    >>> import numpy as np
    >>> from popdyn.models import lora
    >>> p = lora.Problem.orthonormal(k=4, xi=1e-3, seed=1, activation="tanh")
    >>> bool(abs(lora.h(p, 0.7) / lora.lazy_h(p) - 1) < 1e-5)   # relative O(xi^2) = 2e-6
    True
    """
    A = np.outer(problem.lam * problem.c, problem.lam * problem.c_hat)
    return float(2 * problem.xi**2 * np.sum(A * problem.activation.Kprime(problem.G)))


def lazy_solution(h0, m0, tau):
    r"""Solution of dm/dtau = h0 (1 - m^2) with constant drift (the lazy limit of the overlap ODE).

    .. math:: m(\tau) = \tanh\big(h_0\tau + \operatorname{artanh} m_0\big)

    Parameters
    ----------
    h0 : float
        Constant drift (e.g. :func:`lazy_h`).
    m0 : float
        Initial overlap in (-1, 1).
    tau : float or ndarray
        Times (units of eta t).

    Returns
    -------
    float or ndarray of shape tau.shape

    Notes
    -----
    Regime: h constant on the path (xi -> 0, or a GLM with information exponent 1 near m = 0).

    Accuracy: ``|dm| <= 4 eps |m| + 4 eps (1 - m^2)(|h0 tau| + |artanh m0|)`` (the argument's rounding through
    tanh' = 1 - m^2), always in [-1, 1]; h0 in [-1e3, 1e3], tau in [0, 1e3], m0 within 1e-16 of +-1; measured
    0.13.

    References
    ----------
    .. [src] derived in docs/lora.md (the population ODE of [Dayi25, App. C.1] with h constant).

    Examples
    --------
    >>> from popdyn.models import lora
    >>> float(lora.lazy_solution(1.0, 0.0, 0.0))
    0.0
    """
    h0 = check("lora.lazy_solution", "h0", h0, _REAL)
    m0 = check("lora.lazy_solution", "m0", m0, _OPEN_UNIT)
    t = np.asarray(tau, dtype=np.float64)
    if not np.all(np.isfinite(t)):
        raise InvalidParameterError(f"The 'tau' parameter of lora.lazy_solution must be finite. Got {tau!r} instead.")
    out = np.tanh(h0 * t + np.arctanh(m0))
    return float(out) if t.ndim == 0 else out


def claim2_instance(c):
    r"""Claim 2 construction: unit w_i with <w_i, w_j> = -c_i c_j and u orthogonal to them (lam = 1, xi = 1).

    .. math:: \frac{\langle w_i + c_iu,\, w_j + c_ju\rangle}{\lVert w_i + c_iu\rVert\lVert w_j + c_ju\rVert} = \delta_{ij}

    Coordinate i <= k of w_i is 1/sqrt(k); each pair (i, j) owns one further coordinate, with entries
    1/sqrt(k) in w_i and -sqrt(k) c_i c_j in w_j; the last coordinate is u.

    Parameters
    ----------
    c : ndarray of shape (k,)
        Teacher direction in {+-1/sqrt(k)}^k.

    Returns
    -------
    W : ndarray of shape (k, d), d = k + k(k-1)/2 + 1
    u : ndarray of shape (d,)

    Notes
    -----
    Regime: A1-A3 with xi = 1. The paper's k = 4 example (App. C.3) states c_i = (-1/2)^i, which is not a
    unit vector and breaks orthogonality by 0.24; its matrix needs c_i = (-1)^i / 2 (docs/errata.md).

    Accuracy: each entry of W within 1 ulp (relative eps) of ``1/sqrt(k)`` or ``-sqrt(k) c_i c_j``, u exact, so
    ``|(W W^T)_ij - (delta_ij - c_i c_j (1 - delta_ij))| <= 4 eps``; measured 0.61 and 0.30 (exact rationals, k <= 16).

    References
    ----------
    .. [src] [Dayi25, Claim 2 (App. C.3); the k = 4 example corrected].

    Examples
    --------
    >>> import numpy as np
    >>> from popdyn.models import lora
    >>> W, u = lora.claim2_instance(np.array([-1, 1, -1, 1]) / 2)
    >>> V = W + np.outer(np.array([-1, 1, -1, 1]) / 2, u)
    >>> V /= np.linalg.norm(V, axis=1, keepdims=True)
    >>> bool(np.allclose(V @ V.T, np.eye(4), atol=1e-15))
    True
    """
    c = check("lora.claim2_instance", "c", c, FiniteArray(1))
    k = c.size
    if k < 1 or not np.allclose(np.abs(c), 1 / math.sqrt(k), rtol=0, atol=1e-12):
        raise InvalidParameterError(f"The 'c' parameter of lora.claim2_instance must lie in {{+-1/sqrt(k)}}^k. "
                                    f"Got {c!r} instead.")
    d = k + k * (k - 1) // 2 + 1
    W = np.zeros((k, d))
    W[np.arange(k), np.arange(k)] = 1 / math.sqrt(k)
    col = k
    for i in range(k):
        for j in range(i + 1, k):
            W[i, col], W[j, col] = 1 / math.sqrt(k), -math.sqrt(k) * c[i] * c[j]
            col += 1
    u = np.zeros(d)
    u[-1] = 1.0
    return W, u


def separation_instance(c, c_hat, activation="he3"):
    r"""The separation example of App. C.3: Claim 2 features, lam = 1, xi = 1, so the teacher neurons are orthonormal.

    .. math:: G = WW^\top,\quad G_{ij} = \delta_{ij} - c_ic_j(1-\delta_{ij}),\quad
              h(m) = 2p\Big(\frac{k}{k+1}\Big)^p\sum_{ij}c_i\hat c_j(G_{ij}+c_i\hat c_jm)^{p-1}\ \ (\sigma = h_p)

    Parameters
    ----------
    c : ndarray of shape (k,)
        Teacher direction in {+-1/sqrt(k)}^k.
    c_hat : ndarray of shape (k,)
        Student direction in {+-1/sqrt(k)}^k.
    activation : str or Activation
        sigma; Prop. 18 takes a Hermite polynomial h_p with p > 2.

    Returns
    -------
    Problem

    Notes
    -----
    Regime: A1-A3, xi = 1. Learning the teacher from scratch needs d^(p/2) CSQ queries (Thm 19).

    Accuracy: ``|G_ij - (delta_ij - c_i c_j (1 - delta_ij))| <= 4 eps``; measured 0.03 (exact rationals, k <= 16).

    References
    ----------
    .. [src] [Dayi25, Claim 2, Proposition 18, Theorem 19 (App. C.3)].

    Examples
    --------
    >>> import numpy as np
    >>> from popdyn.models import lora
    >>> c, ch = np.array([1, 1, -1]) / np.sqrt(3), np.array([1, -1, -1]) / np.sqrt(3)
    >>> p = lora.separation_instance(c, ch, "he3")
    >>> A = np.outer(c, ch)
    >>> prop18 = 2 * 3 * (3 / 4)**3 * np.sum(A * (p.G + A * 0.4)**2)   # Prop. 18 at m = 0.4, p = 3
    >>> bool(abs(lora.h(p, 0.4) - prop18) < 1e-12)
    True
    """
    W, _ = claim2_instance(c)
    k = W.shape[0]
    G = W @ W.T
    np.fill_diagonal(G, 1.0)
    return Problem(G, np.ones(k), c, c_hat, 1.0, activation)


def example_f1():
    r"""Example 1 of App. F.1: two rank-one updates of the quadratic network that give the same teacher.

    .. math:: \sum_{i=1}^2 (w_i + c_iu)(w_i + c_iu)^\top = \sum_{i=1}^2 (w_i + c'_iu')(w_i + c'_iu')^\top

    with ``w_i = e_i`` in R^2, ``lam = (1, 1)``, ``sigma(z) = z^2``, ``u = (1, 1)/sqrt(2)``,
    ``u' = (1/sqrt(3), sqrt(6)/3)``, ``c = (-(1+sqrt2)(2+sqrt3), (1+sqrt2)(sqrt2+sqrt3))`` and ``c' = -c``.

    Returns
    -------
    c, u, c_prime, u_prime : ndarray of shape (2,)

    Notes
    -----
    Regime: A2 violated (u in span W): the closed forms of this package do not apply and the global
    optimum is not unique. Note ||c|| = 11.78, far from the unit c of the main text.

    Accuracy: each entry relative ``4 eps`` of its closed form; measured 0.15 (mpmath at 40 digits, where the two
    teachers agree to 1e-35).

    References
    ----------
    .. [src] [Dayi25, Example 1 (App. F.1)].

    Examples
    --------
    >>> import numpy as np
    >>> from popdyn.models import lora
    >>> c, u, c2, u2 = lora.example_f1()
    >>> M = lambda c, u: sum(np.outer(w + ci * u, w + ci * u) for w, ci in zip(np.eye(2), c))
    >>> bool(np.allclose(M(c, u), M(c2, u2), rtol=0, atol=1e-12))
    True
    """
    s2, s3 = math.sqrt(2), math.sqrt(3)
    c = np.array([-(1 + s2) * (2 + s3), (1 + s2) * (s2 + s3)])
    u = np.array([1.0, 1.0]) / s2
    u_prime = np.array([1 / s3, math.sqrt(6) / 3])
    return c, u, -c, u_prime


def _feature_grams(problem, m):
    """Grams of the 2k refit features z = (w_i +- xi/sqrt(k) u_hat)/r0 and their overlaps with the teacher."""
    k, xi = problem.k, problem.xi
    r0 = math.sqrt(1 + xi**2 / k)
    s = np.repeat([1.0, -1.0], k)  # feature a = (i, sign): i = a mod k
    Gz = np.tile(problem.G, (2, 2))
    Z = (Gz + np.outer(s, s) * xi**2 / k) / r0**2
    X = (np.tile(problem.G, (1, 2)) + xi**2 * np.outer(problem.c, s) * m / math.sqrt(k)) / np.outer(problem.r, np.full(2 * k, r0))
    return np.clip(Z, -1, 1), np.clip(X, -1, 1)


def _teacher_energy(problem):
    """E f*(x)^2 = lam^T K(T) lam, T_ij = (G_ij + xi^2 c_i c_j)/(r_i r_j)."""
    T = (problem.G + problem.xi**2 * np.outer(problem.c, problem.c)) / np.outer(problem.r, problem.r)
    return float(problem.lam @ problem.sigma.K(np.clip(T, -1, 1)) @ problem.lam)


def _quad_form_pinv(M, b):
    """b^T M^+ b for a PSD M, dropping eigenvalues below _PINV_RTOL * max (b lies in range(M))."""
    w, V = np.linalg.eigh(M)
    keep = w > _PINV_RTOL * max(w[-1], 0.0)
    y = V[:, keep].T @ b
    return float(np.sum(y**2 / w[keep]))


def refit_error(problem, m):
    r"""Exact population least-squares error of the App. F.2 refit with 2k features, at overlap m.

    .. math:: \mathrm{LS}(m) = \mathbb E f^{*2} - b^\top M^{+} b,\quad M_{ab} = K(\langle z_a,z_b\rangle),\quad
              b_a = \sum_i\lambda_iK(\langle v_i,z_a\rangle),\quad z_{i,\pm} = \frac{w_i\pm\frac{\xi}{\sqrt k}\hat u}{\sqrt{1+\xi^2/k}}

    Parameters
    ----------
    problem : Problem
        The teacher (c_hat is not used: the refit replaces the frozen head).
    m : float or ndarray
        Overlaps <u, u_hat> in [-1, 1].

    Returns
    -------
    float or ndarray of shape m.shape, >= 0

    Notes
    -----
    Regime: A1-A2 (any c). LS(m) <= Phi_{c_hat = c}(|m|) <= :func:`thm36_bound`, and LS(+-1) = 0 under A3.

    Accuracy: ``|dLS| <= 64 k eps (1 + kappa) E f*^2``, kappa the condition number of ``M`` on the range its
    pseudo-inverse keeps (LS cancels to 0 as |m| -> 1); never negative. Measured 0.012 (relu, erf, he3, k <= 5,
    xi in [1e-8, 1e8], near-parallel features; mpmath at 40 digits).

    References
    ----------
    .. [src] derived in docs/lora.md (exact version of [Dayi25, Theorem 36 (App. F.2)]).

    Examples
    --------
    >>> from popdyn.models import lora
    >>> p = lora.Problem.orthonormal(k=4, xi=1.0, seed=0)
    >>> bool(lora.refit_error(p, 1.0) < 1e-12)   # u learned: the 2k features contain the teacher
    True
    """
    m = check_overlap(m)
    energy, sigma, lam = _teacher_energy(problem), problem.sigma, problem.lam
    out = np.empty(m.size)
    for n, mm in enumerate(m.reshape(-1)):
        Z, X = _feature_grams(problem, float(mm))
        out[n] = energy - _quad_form_pinv(sigma.K(Z), lam @ sigma.K(X))
    out = np.maximum(out, 0.0)
    return float(out[0]) if m.ndim == 0 else out.reshape(m.shape)


def thm36_bound(problem, m):
    r"""Theorem 36's bound on the refit error: C_sigma lam_max^2 k 2 xi^2 (1 - |m|) / r^2 with C_sigma = K'(1).

    .. math:: \mathbb E(f^* - \tilde f)^2 \le K'(1)\,\lambda_{\max}^2\,k\,\frac{2\xi^2(1-|m|)}{1+\xi^2/k}

    Parameters
    ----------
    problem : Problem
    m : float or ndarray
        Overlaps in [-1, 1].

    Returns
    -------
    float or ndarray of shape m.shape

    Notes
    -----
    Regime: A1-A3. C_sigma = K'(1) = E[sigma'(g)^2] is a valid constant (|K'| <= K'(1)), which the
    paper leaves unspecified. The candidate of the proof has error exactly Phi_{c_hat = c}(|m|).

    Accuracy: relative 16 eps; measured 0.093.

    References
    ----------
    .. [src] [Dayi25, Definition 35, Theorem 36 and its proof (App. F.2)].

    Examples
    --------
    >>> from popdyn.models import lora
    >>> p = lora.Problem.orthonormal(k=4, xi=1.0, seed=0)
    >>> float(lora.thm36_bound(p, 1.0))
    0.0
    """
    m = check_overlap(m)
    k, xi2 = problem.k, problem.xi**2
    out = problem.sigma.Kprime1 * np.max(problem.lam**2) * k * 2 * xi2 * (1 - np.abs(m)) / (1 + xi2 / k)
    return float(out) if m.ndim == 0 else out


def _mixed_kernels(problem, rho):
    """E[s(r g1) s(g2)] and E[s'(r g1) s'(g2)] at correlation rho (|rho| <= 1/r < 1), N0 scale r."""
    r = math.sqrt(1 + problem.xi**2 / problem.k)
    act = problem.activation
    if act.name == "relu":  # positively homogeneous: s(r z) = r s(z), s'(r z) = s'(z)
        return r * act.K(rho), act.Kprime(rho)
    rmax = max(float(np.max(np.abs(rho))), 1e-300)
    P = min(_MIXED_P_MAX, max(8, int(math.ceil(math.log(_MIXED_TOL) / math.log(rmax))) if rmax < 1 else _MIXED_P_MAX))
    a = np.asarray(problem.sigma.hermite_coeffs(P), dtype=np.float64)[:P + 1]
    b = np.asarray(act.hermite_coeffs(P), dtype=np.float64)[:P + 1]
    p = np.arange(1, P + 1)
    K = np.polynomial.polynomial.polyval(rho, a * b)
    Kp = np.polynomial.polynomial.polyval(rho, p * a[1:] * b[1:]) / r
    return K, Kp


def lazy_floor(problem):
    r"""Best loss of the model linearised in Delta (the lazy / NTK-like baseline of Fig. 3a), N0 normalisation.

    .. math:: \min_{a}\mathbb E(f^* - f_{\rm lin})^2 = \mathbb E(f^*-f_0)^2 - q^\top N^{+}q,\quad
              N_{jj'} = \lambda_j\lambda_{j'}K'(G_{jj'}),\quad
              q_j = \lambda_j\xi\sum_i\lambda_ic_i\,\mathbb E[\sigma'(\langle w_i+\xi c_iu,x\rangle)\sigma'(\langle w_j,x\rangle)]

    with ``f_lin = f_0 + sum_j lam_j a_j s'(<w_j, x>) <u_hat, x>`` (a free), at u_hat = u.

    Parameters
    ----------
    problem : Problem
        Convention "N0" (the main-text model, [Dayi25, eqs. (2)-(3)], that the linearisation expands).

    Returns
    -------
    float, >= 0

    Notes
    -----
    Regime: A1-A3, N0. For ReLU the mixed expectations are closed forms (homogeneity); for other
    activations a Hermite series in ``G_ij / r`` (|.| <= 1/r < 1, geometric).

    Accuracy: ``|d| <= 64 k eps (1 + kappa)(E f*^2 + E f_0^2)``, kappa the condition number of ``N`` on the range its
    pseudo-inverse keeps; never negative. Measured 0.07 (relu and erf, k <= 5, xi in [1e-8, 1e8]; mpmath at 40
    digits from the pair expectations of the raw neurons).

    References
    ----------
    .. [src] derived in docs/lora.md (context of [Dayi25, Fig. 3(a), App. B]).

    Examples
    --------
    >>> from popdyn.models import lora
    >>> p = lora.Problem.orthonormal(k=4, xi=1.0, seed=0, normalisation="N0", activation="linear")
    >>> bool(lora.lazy_floor(p) < 1e-12)   # a linear network is its own linearisation
    True
    """
    if problem.normalisation != "N0":
        raise InvalidParameterError("The 'normalisation' parameter of lora.Problem must be 'N0' for "
                                    "lora.lazy_floor (the linearisation of the main-text model). "
                                    f"Got {problem.normalisation!r} instead.")
    lam, G, xi, c = problem.lam, problem.G, problem.xi, problem.c
    r = math.sqrt(1 + xi**2 / problem.k)
    Kx, Kpx = _mixed_kernels(problem, G / r)  # teacher neuron i against base neuron j
    T = np.clip((G + xi**2 * np.outer(c, c)) / r**2, -1, 1)
    base = problem.activation
    gap = lam @ problem.sigma.K(T) @ lam - 2 * lam @ Kx @ lam + lam @ base.K(G) @ lam
    N = np.outer(lam, lam) * base.Kprime(G)
    q = lam * xi * ((lam * c) @ Kpx)
    return max(float(gap - _quad_form_pinv(N, q)), 0.0)
