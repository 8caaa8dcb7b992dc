r"""Correlation kernels on the uniform hypercube {±1}^d: exact level eigenvalues, KRR, Parseval test error.

Docs: docs/resnet.md ([AllenZhu19, Prop. E.1, Lemma E.2 (App. E), program (3.1) (Section 3)]).
Conventions: x in {±1}^d (rows of ``X``, entries exactly ±1); a dot-product kernel is
given by its *profile* :math:`\kappa_t = K(x,y)` at Hamming distance :math:`t=0..d` (shape ``(d+1,)``); a target
is a list with one Walsh expansion per output, a dict from a sorted 0-based coordinate tuple (``()`` for the
constant) to its coefficient. Points of the whole cube are enumerated by :func:`hypercube_points` (row ``i`` has
:math:`x_j=(-1)^{\text{bit } j \text{ of } i}`), so that :func:`fwht` puts the coefficient of
:math:`\chi_S` at index :func:`walsh_index` ``(S)``.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numba
import numpy as np
import scipy.linalg

from popdyn._exact import two_prod_jit as _two_prod, two_sum_jit as _two_sum
from popdyn._jit import serial_and_parallel
from popdyn._validate import FiniteArray, Integer, InvalidParameterError, Interval, Options, check

__all__ = ["krawtchouk", "level_eigenvalues", "profile_from_eigenvalues", "dot_product_profile", "relu_nngp",
           "relu_ntk_hidden", "relu_ntk", "gaussian", "arcsin", "polynomial", "hypercube_points",
           "hamming_matrix", "kernel_matrix", "krr_fit", "exact_test_error", "captured_coefficients",
           "lemma_e2_bound", "walsh_index", "fwht", "fc2_kernel_limit", "kernel_eigenvalues", "D_MAX", "FWHT_D_MAX",
           "relu_ck", "relu_ntk_full"]   # the last two: the earlier names of relu_nngp and relu_ntk (aliases)

D_MAX = 60  # float64 level eigenvalues: Krawtchouk entries up to C(60,30) ~ 1.2e17 stay exact in int64
FWHT_D_MAX = 22  # 2^22 points: 32 MiB per output column


def _d(owner, d, high=D_MAX):
    return check(owner, "d", d, Integer(1, high))


def _profile(owner, kappa, d=None):
    kappa = check(owner, "kappa", kappa, FiniteArray(1))
    if kappa.size < 2 or (d is not None and kappa.size != d + 1):
        want = "d+1 entries" if d is None else f"{d + 1} entries (d+1)"
        raise InvalidParameterError(f"The 'kappa' parameter of {owner} must be a Hamming profile with "
                                    f"{want}, d >= 1. Got shape {kappa.shape} instead.")
    _d(owner, kappa.size - 1)
    return kappa


def _points(owner, X, d=None, name="X"):
    X = check(owner, name, X, FiniteArray(2))
    if X.shape[0] < 1 or X.shape[1] < 1 or not np.all(np.abs(X) == 1.0) or (d is not None and X.shape[1] != d):
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must be an (N, d) array of ±1 entries, "
                                    f"N >= 1" + (f", d = {d}" if d is not None else "") + f". Got shape {X.shape}.")
    return X


def _beta(owner, beta, N):
    beta = check(owner, "beta", beta, FiniteArray(np.ndim(beta) if np.ndim(beta) in (1, 2) else 2))
    if beta.shape[0] != N:
        raise InvalidParameterError(f"The 'beta' parameter of {owner} must have {N} rows (one per sample). "
                                    f"Got shape {beta.shape} instead.")
    return beta.reshape(N, -1)


def _sets(owner, sets, d, name="sets"):
    out = []
    for S in sets:
        try:
            S = tuple(int(j) for j in S)
        except TypeError:
            S = None
        if S is None or list(S) != sorted(set(S)) or any(j < 0 or j >= d for j in S):
            raise InvalidParameterError(f"The {name!r} parameter of {owner} must hold sorted tuples of distinct "
                                        f"coordinates in [0, {d - 1}]. Got {S!r} instead.")
        out.append(S)
    return out


def _target(owner, target, d):
    if not isinstance(target, (list, tuple)) or not target:
        raise InvalidParameterError(f"The 'target' parameter of {owner} must be a non-empty list of dicts "
                                    f"(one Walsh expansion per output). Got {target!r} instead.")
    out = []
    for f in target:
        if not isinstance(f, dict):
            raise InvalidParameterError(f"The 'target' parameter of {owner} must be a list of dicts. Got "
                                        f"{f!r} as an output.")
        sets = _sets(owner, f.keys(), d, "target")
        coef = check(owner, "target", list(f.values()), FiniteArray(1))
        out.append((sets, coef))
    return out


# ---- Krawtchouk polynomials and level eigenvalues ---------------------------------------------------------

def krawtchouk(d):
    r"""Binary Krawtchouk table :math:`\mathcal K_\ell(t)`, exact integers, ``K[l, t]`` for ``l, t = 0..d``.

    .. math::

        \mathcal K_\ell(t)=\sum_j(-1)^j\binom tj\binom{d-t}{\ell-j}
        =\sum_{|S|=\ell}\chi_S(x)\chi_S(y)\quad(t=d_H(x,y)),

    built by the three-term recurrence
    :math:`(\ell+1)\mathcal K_{\ell+1}(t)=(d-2t)\mathcal K_\ell(t)-(d-\ell+1)\mathcal K_{\ell-1}(t)` in Python
    integers (exact; no alternating float sums).

    Parameters
    ----------
    d : int
        Dimension, 1 <= d <= 60 (the entries then fit int64).

    Returns
    -------
    ndarray of int64, shape (d+1, d+1)

    Notes
    -----
    Regime: exact for every d <= 60. Orthogonality :math:`\sum_t\binom dt\mathcal K_\ell(t)\mathcal K_m(t)
    =2^d\binom d\ell\delta_{\ell m}`, symmetry :math:`\binom dt\mathcal K_\ell(t)=\binom d\ell\mathcal K_t(\ell)`
    and :math:`\mathcal K^2=2^dI` hold exactly.
    Accuracy: exact (integers), checked against the explicit binomial form in the tests.

    References
    ----------
    .. [src] [AllenZhu19, Prop. E.1]; the Krawtchouk form derived in docs/resnet.md.

    Examples
    --------
    >>> krawtchouk(2)
    array([[ 1,  1,  1],
           [ 2,  0, -2],
           [ 1, -1,  1]])
    """
    d = _d("resnet.krawtchouk", d)
    rows = [[1] * (d + 1), [d - 2 * t for t in range(d + 1)]]
    for ell in range(1, d):
        rows.append([((d - 2 * t) * a - (d - ell + 1) * b) // (ell + 1)
                     for t, (a, b) in enumerate(zip(rows[ell], rows[ell - 1]))])
    return np.array(rows[:d + 1], dtype=np.int64)


def _exact_matvec(K, v):
    """``K.T @ v`` in exact rational arithmetic (integer K, float v), rounded once per entry."""
    v = [Fraction(x) for x in v]
    return np.array([float(sum(int(K[t, ell]) * v[t] for t in range(len(v)))) for ell in range(K.shape[1])])


def level_eigenvalues(kappa, d=None):
    r"""Level eigenvalues :math:`\lambda_\ell^2` of a dot-product kernel on {±1}^d from its Hamming profile.

    .. math::

        \lambda_\ell^2=\mathbb E_{x,y}[K(x,y)\chi_S(x)\chi_S(y)]
        =\frac{1}{2^d\binom d\ell}\sum_{t=0}^d\binom dt\kappa_t\mathcal K_\ell(t)
        =2^{-d}\sum_{t=0}^d\mathcal K_t(\ell)\,\kappa_t\qquad(|S|=\ell),

    so that :math:`K(x,y)=\sum_S\lambda_{|S|}^2\chi_S(x)\chi_S(y)` (Prop. E.1). The last form (Krawtchouk
    symmetry) needs no binomials; it is summed in exact rational arithmetic and rounded once, so the result is
    exact for the float64 profile given (the alternating sum cancels up to :math:`\binom{d}{d/2}2^{-d}`).

    Parameters
    ----------
    kappa : array_like, shape (d+1,)
        :math:`\kappa_t=K(x,y)` at Hamming distance ``t``.
    d : int, optional
        Dimension; checked against ``len(kappa) - 1`` when given.

    Returns
    -------
    ndarray, shape (d+1,)
        :math:`\lambda_\ell^2` per set of size :math:`\ell` (not summed over the :math:`\binom d\ell` sets).

    Notes
    -----
    Regime: any kernel that depends on x, y only through the Hamming distance (every correlation kernel on the
    cube with a dot-product form), d <= 60. The result is >= 0 up to rounding iff the kernel is PSD on the cube.
    Accuracy: relative error <= 2^-53 (one rounding of the exact rational sum) of the eigenvalue of the float64
    profile given, every d <= 60 and level, 0 exactly when that sum is 0; it is not the eigenvalue of an exact
    kernel whose profile was rounded: there the absolute error is up to :math:`2^{-d}\sum_t|\mathcal
    K_t(\ell)||\delta\kappa_t|` (5e-5 relative at level 30 of relu_nngp(30), +-1e-17 at structural zero levels), for
    which use :func:`kernel_eigenvalues`. Measured: 0.98 of the declared bound (tests/test_accuracy_resnet.py).

    References
    ----------
    .. [src] [AllenZhu19, Prop. E.1]; the Krawtchouk form derived in docs/resnet.md.

    Examples
    --------
    >>> level_eigenvalues([1.0, 0.0, 0.0])  # the delta kernel 1[x = y] is flat: 2^-d on every level
    array([0.25, 0.25, 0.25])
    """
    kappa = _profile("resnet.level_eigenvalues", kappa, None if d is None else _d("resnet.level_eigenvalues", d))
    d = kappa.size - 1
    return _exact_matvec(krawtchouk(d), kappa) / 2.0 ** d


def profile_from_eigenvalues(lambda2):
    r"""The Hamming profile of the kernel with level eigenvalues :math:`\lambda_\ell^2` (inverse of
    :func:`level_eigenvalues`).

    .. math::

        \kappa_t=\sum_{\ell=0}^d\lambda_\ell^2\,\mathcal K_\ell(t).

    Parameters
    ----------
    lambda2 : array_like, shape (d+1,)

    Returns
    -------
    ndarray, shape (d+1,)

    Notes
    -----
    Regime: d <= 60. With ``lambda2**2`` it gives the radial profile
    :math:`m_t=\mathbb E_x[K(x,a)K(x,b)]` (:math:`t=d_H(a,b)`) used by :func:`exact_test_error`.
    Accuracy: relative error <= 2^-53 (one rounding of the exact rational sum). Measured: 0.98 of the declared
    bound.

    References
    ----------
    .. [src] [AllenZhu19, Prop. E.1]; derived in docs/resnet.md.

    Examples
    --------
    >>> profile_from_eigenvalues([0.25, 0.25, 0.25])
    array([1., 0., 0.])
    """
    lambda2 = _profile("resnet.profile_from_eigenvalues", lambda2)
    return _exact_matvec(krawtchouk(lambda2.size - 1), lambda2)


_KERNELS_MP = ("relu_nngp", "relu_ntk_hidden", "relu_ntk", "arcsin", "gaussian", "polynomial")
#: earlier names of the ReLU kernels, accepted wherever a kernel is named: the same functions
_KERNEL_ALIASES = {"relu_ck": "relu_nngp", "relu_ntk_full": "relu_ntk"}


def _mp_profile(mp, kernel, d, bias, h, q, c):
    n = d + 1 if bias else d
    out = []
    for t in range(d + 1):
        rho = mp.mpf(n - 2 * t) / n
        phi = mp.pi - mp.acos(rho)
        if kernel in ("relu_nngp", "relu_ntk"):
            k1 = (mp.sqrt(1 - rho * rho) + phi * rho) / (2 * mp.pi)
        if kernel == "relu_nngp":
            out.append(k1)
        elif kernel == "relu_ntk_hidden":
            out.append(rho * phi / (2 * mp.pi))
        elif kernel == "relu_ntk":
            out.append(rho * phi / (2 * mp.pi) + k1)
        elif kernel == "arcsin":
            out.append(mp.asin(rho))
        elif kernel == "gaussian":
            out.append(mp.exp(-4 * mp.mpf(t) / mp.mpf(h)))
        else:
            out.append((rho + mp.mpf(c)) ** q)
    return out


def kernel_eigenvalues(kernel, d, bias=None, *, h=None, q=2, c=1.0):
    r"""Level eigenvalues :math:`\lambda_\ell^2` of a named kernel, to full relative accuracy (exact zeros included).

    .. math::

        \lambda_\ell^2=2^{-d}\sum_{t=0}^d\mathcal K_t(\ell)\,K(\rho_t),\qquad \rho_t=\frac{n-2t}{n},\ n=d\ (d+1
        \text{ with bias}),

    with :math:`K(\rho)` the exact closed form at the exact rational :math:`\rho_t` (not the float64 profile):
    mpmath at a working precision raised until each sum is resolved, then rounded once.

    Parameters
    ----------
    kernel : {"relu_nngp", "relu_ntk_hidden", "relu_ntk", "arcsin", "gaussian", "polynomial"}
        The profile functions of this module of the same name (``"relu_ck"``, ``"relu_ntk_full"``: the earlier
        names of ``"relu_nngp"``, ``"relu_ntk"``).
    d : int
        Dimension, 1 <= d <= 60.
    bias : bool, optional
        As the profile function (default: its default, True for the relu kernels, False otherwise; ignored by
        ``gaussian``).
    h, q, c
        Bandwidth of ``gaussian`` (default d), degree and offset of ``polynomial``.

    Returns
    -------
    ndarray, shape (d+1,)

    Notes
    -----
    Regime: every d <= 60 and level, including the high levels whose eigenvalue is far below the rounding of the
    profile (:func:`level_eigenvalues` of ``relu_nngp(30)`` is exact for the rounded profile but only 5e-5 relative
    to the kernel's own :math:`\lambda_{30}^2\approx1e-13`; without bias, its zero levels come out as
    :math:`\pm1e-17`). Accuracy: relative error <= 2^-52 (one rounding) for every non-zero eigenvalue; a level is
    returned as exactly 0 when the sum is not resolved at 400 digits, i.e. :math:`|\lambda_\ell^2|<10^{-390}
    \max_t|K(\rho_t)|` (the structural zeros: odd :math:`\ell\ge3` of the relu kernels and even :math:`\ell` of
    arcsin without bias, :math:`\ell>q` of polynomial). Never negative for these PSD kernels. Cost: 5 ms at d = 30
    (mpmath), 60 ms at d = 60 with structural zeros. Measured: 0.46 of the declared bound
    (tests/test_accuracy_resnet.py).

    References
    ----------
    .. [src] [AllenZhu19, Prop. E.1]; the Krawtchouk form derived in docs/resnet.md.

    Examples
    --------
    >>> lam = kernel_eigenvalues("relu_nngp", 5, bias=False)
    >>> float(lam[3]), float(lam[5])   # structural zeros
    (0.0, 0.0)
    """
    import mpmath

    owner = "resnet.kernel_eigenvalues"
    kernel = _KERNEL_ALIASES.get(kernel, kernel) if isinstance(kernel, str) else kernel
    check(owner, "kernel", kernel, Options(_KERNELS_MP))
    d = _d(owner, d)
    bias = (kernel.startswith("relu") if bias is None else bool(bias)) and kernel != "gaussian"
    if kernel == "gaussian":
        h = float(d) if h is None else check(owner, "h", h, Interval(0.0, np.inf, "neither"))
    if kernel == "polynomial":
        q = check(owner, "q", q, Integer(0, 60))
        c = check(owner, "c", c, Interval(0.0, np.inf))
    K = krawtchouk(d)
    out = np.full(d + 1, np.nan)
    for dps in (40 + d, 120 + d, 400):
        with mpmath.workdps(dps):
            kap = _mp_profile(mpmath, kernel, d, bias, h, q, c)
            tol = mpmath.mpf(10) ** (8 - dps)
            for ell in np.flatnonzero(np.isnan(out)):
                terms = [int(K[t, ell]) * kap[t] for t in range(d + 1)]
                val = mpmath.fsum(terms)
                if abs(val) > tol * mpmath.fsum(abs(x) for x in terms):
                    out[ell] = float(mpmath.ldexp(val, -d))
        if not np.isnan(out).any():
            break
    out[np.isnan(out)] = 0.0
    return out


# ---- kernel profiles ---------------------------------------------------------------------------------------

def dot_product_profile(fn, d, bias=False):
    r"""Hamming profile of :math:`K(x,y)=f(\rho)` with :math:`\rho` the cosine of the (bias-augmented) inputs.

    .. math::

        \rho_t=1-\frac{2t}{d}\ \text{(no bias)},\qquad
        \rho_t=\frac{d-2t+1}{d+1}\ \text{(bias: }\tilde x=(x,1)/\sqrt{d+1}\text{)}.

    Parameters
    ----------
    fn : callable
        Vectorized :math:`f:[-1,1]\to\mathbb R`.
    d : int
        Dimension, 1 <= d <= 60.
    bias : bool
        Append a constant input 1 before normalizing (the paper's networks take (x, 1)).

    Returns
    -------
    ndarray, shape (d+1,)

    Notes
    -----
    Regime: any f; the kernel is PSD on every sphere iff f has non-negative Taylor coefficients (Schoenberg).
    Accuracy: that of ``fn`` at :math:`\rho_t` rounded once (relative 2^-53); the named profiles below use exact
    angle forms instead.

    References
    ----------
    .. [src] [AllenZhu19, Section 3] (correlation kernels).
    """
    d = _d("resnet.dot_product_profile", d)
    t = np.arange(d + 1.0)
    rho = (d - 2.0 * t + 1.0) / (d + 1.0) if bias else (d - 2.0 * t) / d   # one rounding (1 - 2t/d cancelled)
    out = np.asarray(fn(rho), dtype=np.float64)
    if out.shape != rho.shape or not np.all(np.isfinite(out)):
        raise InvalidParameterError(f"The 'fn' parameter of resnet.dot_product_profile must map a ({d + 1},) "
                                    "array of cosines to finite values of the same shape.")
    return out


# sin(phi) - phi cos(phi) = sum_k>=1 (-1)^(k+1) 2k phi^(2k+1)/(2k+1)!, for phi < 1.5 (13 terms: < 1e-19 relative)
_SPC = np.array([(-1.0) ** (k + 1) * 2 * k / math.factorial(2 * k + 1) for k in range(1, 14)])


def _angles(owner, d, bias):
    """Exact halves u = (1 + rho)/2, v = (1 - rho)/2 (one rounding each), rho = u - v, and the angle
    phi = pi - arccos(rho) = 2 atan2(sqrt u, sqrt v) (accurate to an ulp at rho = +-1, where arccos is not)."""
    d = _d(owner, d)
    t = np.arange(d + 1.0)
    n = d + 1.0 if bias else float(d)
    u, v = (n - t) / n, t / n
    rho = (n - 2.0 * t) / n
    return u, v, rho, 2.0 * np.arctan2(np.sqrt(u), np.sqrt(v))


def _relu_nngp_scaled(u, v, rho, phi):
    """2 pi kappa_1 = sin(phi) - phi cos(phi) = 2 sqrt(uv) + phi rho, by its series where it cancels (phi < 1.5)."""
    p2 = phi * phi
    acc = np.polyval(_SPC[::-1], p2)         # Horner in phi^2 over the whole (d+1,) array: cheaper than masking
    return np.where(phi < 1.5, acc * p2 * phi, 2.0 * np.sqrt(u * v) + phi * rho)


def relu_nngp(d, bias=True):
    r"""NNGP kernel of one ReLU layer (infinite width, unit-variance Gaussian weights) as a Hamming profile.

    .. math::

        K(x,y)=\mathbb E_{w\sim N(0,I)}[\sigma(\langle w,\tilde x\rangle)\sigma(\langle w,\tilde y\rangle)]
        =\frac{\sqrt{1-\rho^2}+(\pi-\arccos\rho)\rho}{2\pi},

    the covariance over random initialisations of the output of a two-layer ReLU net whose readout has unit-variance
    weights: the kernel of its hidden features, which [AllenZhu19] calls the conjugate kernel ("last": only the
    readout trained). It is ``popdyn.kernels.fc(1, "relu").profile(d, "nngp")`` without bias. ``relu_ck`` is an
    alias (the earlier name).

    Parameters
    ----------
    d : int
    bias : bool
        Use :math:`\tilde x=(x,1)/\sqrt{d+1}` (default; removes the zero odd levels, docs/resnet.md).

    Returns
    -------
    ndarray, shape (d+1,)

    Notes
    -----
    Regime: unit-norm inputs (:math:`\|\tilde x\|=1`); other scales multiply the kernel by
    :math:`\|\tilde x\|\|\tilde y\|`. Without bias :math:`\lambda_\ell^2=0` for odd :math:`\ell\ge3`.
    Accuracy: relative error <= 4 eps at every t including :math:`\rho=\pm1` (the angle
    :math:`\pi-\arccos\rho=2\,\mathrm{atan2}(\sqrt u,\sqrt v)` from the exact halves :math:`u,v=(1\pm\rho)/2`, and
    :math:`\sin\phi-\phi\cos\phi` by its series below 1.5: was 4e-14 relative near :math:`\rho=-1`). Measured: 0.5
    of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Section 3, footnote 5]; the closed form is standard (docs/resnet.md).

    Examples
    --------
    >>> float(relu_nngp(4)[0])  # rho = 1: E[relu(g)^2] = 1/2
    0.5
    """
    u, v, rho, phi = _angles("resnet.relu_nngp", d, bias)
    return _relu_nngp_scaled(u, v, rho, phi) / (2.0 * np.pi)


def relu_ntk_hidden(d, bias=True):
    r"""NTK of a two-layer ReLU net w.r.t. the hidden weights only, as a Hamming profile.

    .. math::

        K(x,y)=\rho\,\frac{\pi-\arccos\rho}{2\pi}

    (:func:`relu_ntk` minus :func:`relu_nngp`: the readout's share of the NTK left out; [AllenZhu19]'s "(NTK)", the
    hidden layer trained and the readout fixed).

    Parameters
    ----------
    d : int
    bias : bool

    Returns
    -------
    ndarray, shape (d+1,)

    Notes
    -----
    Regime: unit-norm inputs, infinite width. Without bias :math:`\lambda_\ell^2=0` for odd :math:`\ell\ge3`.
    Accuracy: relative error <= 4 eps at every t. Measured: 0.3 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, footnote 5]; the closed form is standard (docs/resnet.md).
    """
    _, _, rho, phi = _angles("resnet.relu_ntk_hidden", d, bias)
    return rho * phi / (2.0 * np.pi)


def relu_ntk(d, bias=True):
    r"""NTK of a two-layer ReLU net, both layers trained, as a Hamming profile.

    .. math::

        K(x,y)=\rho\,\frac{\pi-\arccos\rho}{2\pi}+\frac{\sqrt{1-\rho^2}+(\pi-\arccos\rho)\rho}{2\pi}

    (:func:`relu_ntk_hidden` + :func:`relu_nngp`: hidden weights and readout, equal learning rates). It is
    ``popdyn.kernels.fc(1, "relu").profile(d, "ntk")`` without bias. ``relu_ntk_full`` is an alias (the earlier
    name).

    Parameters
    ----------
    d : int
    bias : bool

    Returns
    -------
    ndarray, shape (d+1,)

    Notes
    -----
    Regime: unit-norm inputs, infinite width, equal learning rates of the two layers.
    Accuracy: absolute error <= 4 eps (:math:`|\rho\kappa_0|+\kappa_1`) (it changes sign for :math:`\rho<0`;
    relative 4 eps away from that root; was 3.7e-14 relative near :math:`\rho=-1`). Measured: 0.33 of the declared
    bound.

    References
    ----------
    .. [src] [AllenZhu19, footnote 5]; the closed form is standard (docs/resnet.md).
    """
    u, v, rho, phi = _angles("resnet.relu_ntk", d, bias)
    return (rho * phi + _relu_nngp_scaled(u, v, rho, phi)) / (2.0 * np.pi)


#: the earlier names: the same function objects
relu_ck = relu_nngp
relu_ntk_full = relu_ntk


def arcsin(d, bias=False):
    r"""Arcsine kernel :math:`K(x,y)=\arcsin\rho` as a Hamming profile.

    .. math::

        \kappa_t=\arcsin\rho_t.

    Parameters
    ----------
    d : int
    bias : bool

    Returns
    -------
    ndarray, shape (d+1,)

    Notes
    -----
    Regime: unit-norm inputs. Without bias the kernel is odd in :math:`\rho`, so :math:`\lambda_\ell^2=0` for
    every even :math:`\ell`.
    Accuracy: relative error <= 4 eps (atan2 of exact halves, no :math:`1-\rho^2` cancellation). Measured: 0.23 of
    the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Section 3] ("arcsin kernel").
    """
    u, v, rho, _ = _angles("resnet.arcsin", d, bias)
    return np.arctan2(rho, 2.0 * np.sqrt(u * v))   # arcsin(rho), 1 - rho^2 = 4uv without cancellation


def gaussian(d, h=None):
    r"""Gaussian kernel :math:`e^{-\|x-y\|^2/h}` on :math:`x,y\in\{\pm1\}^d` as a Hamming profile.

    .. math::

        \kappa_t=e^{-4t/h}\qquad(\|x-y\|^2=4t).

    Parameters
    ----------
    d : int
    h : float, optional
        Bandwidth > 0; default ``d`` (the bandwidth of docs/resnet.md's exact kernel errors).

    Returns
    -------
    ndarray, shape (d+1,)

    Notes
    -----
    Regime: inputs in {±1}^d (for the paper's :math:`\{\pm1/\sqrt d\}^d` use ``h/d``).
    Accuracy: relative error <= (4t/h + 2) eps. Measured: 0.41 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Section 3].

    Examples
    --------
    >>> gaussian(2, h=4.0)
    array([1.        , 0.36787944, 0.13533528])
    """
    d = _d("resnet.gaussian", d)
    h = float(d) if h is None else check("resnet.gaussian", "h", h, Interval(0.0, np.inf, "neither"))
    return np.exp(-4.0 * np.arange(d + 1.0) / h)


def polynomial(d, q, c=1.0, bias=False):
    r"""Polynomial kernel :math:`(\rho+c)^q` as a Hamming profile.

    .. math::

        \kappa_t=(\rho_t+c)^q.

    Parameters
    ----------
    d : int
    q : int
        Degree, 0 <= q <= 60.
    c : float
        Offset >= 0 (PSD for every c >= 0).
    bias : bool

    Returns
    -------
    ndarray, shape (d+1,)

    Notes
    -----
    Regime: unit-norm inputs. Without bias and with c = 0, :math:`\lambda_\ell^2=0` for :math:`\ell>q` and for
    :math:`\ell\not\equiv q \pmod 2`.
    Accuracy: absolute error <= (q + 2) eps :math:`(|\rho|+c)^q` + q eps :math:`|\rho+c|^{q-1}(|\rho|+c)`
    (:math:`\rho_t` rounded once; relative (q + 3) eps for c = 0). Measured: 0.19 of the declared bound.

    References
    ----------
    .. [src] standard (not in [AllenZhu19]); docs/resnet.md.
    """
    q = check("resnet.polynomial", "q", q, Integer(0, 60))
    c = check("resnet.polynomial", "c", c, Interval(0.0, np.inf))
    return dot_product_profile(lambda r: (r + c) ** q, d, bias)


# ---- points, Hamming distances, Walsh transform ------------------------------------------------------------

def hypercube_points(d):
    r"""All :math:`2^d` points of {±1}^d; row ``i`` has :math:`x_j=(-1)^{\lfloor i/2^j\rfloor\bmod 2}`.

    Parameters
    ----------
    d : int
        1 <= d <= 22.

    Returns
    -------
    ndarray, shape (2^d, d), float64

    Notes
    -----
    Regime: enumeration; with this order :math:`\chi_S(x_i)=(-1)^{|i\wedge\mathrm{mask}(S)|}`, the Hadamard
    matrix of :func:`fwht`.
    Accuracy: exact.

    References
    ----------
    .. [src] popdyn's own (the ordering of :func:`fwht`); docs/resnet.md.

    Examples
    --------
    >>> hypercube_points(2)
    array([[ 1.,  1.],
           [-1.,  1.],
           [ 1., -1.],
           [-1., -1.]])
    """
    d = _d("resnet.hypercube_points", d, FWHT_D_MAX)
    i = np.arange(2 ** d)[:, None]
    return 1.0 - 2.0 * ((i >> np.arange(d)) & 1)


def _pack(X):
    bits = np.packbits(X < 0, axis=1, bitorder="little")
    pad = (-bits.shape[1]) % 8
    bits = np.pad(bits, ((0, 0), (0, pad)))
    return np.ascontiguousarray(bits).view(np.uint64)


_M1, _M2, _M4, _H01 = (np.uint64(0x5555555555555555), np.uint64(0x3333333333333333),
                       np.uint64(0x0F0F0F0F0F0F0F0F), np.uint64(0x0101010101010101))


@numba.njit(cache=True)
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return (x * _H01) >> np.uint64(56)


def _hamming(A, B, out):  # pragma: no cover - compiled
    for i in numba.prange(A.shape[0]):
        for j in range(B.shape[0]):
            s = np.uint64(0)
            for w in range(A.shape[1]):
                s += _popcount(A[i, w] ^ B[j, w])
            out[i, j] = s


_hamming_serial, _hamming_parallel = serial_and_parallel(_hamming)
_PARALLEL_PAIRS = 1 << 22  # pairs of points from which the pair loops run in parallel (their compile is 2x longer)


def hamming_matrix(X, Y=None):
    r"""Hamming distances :math:`t_{ij}=|\{l: X_{il}\ne Y_{jl}\}|=(d-\langle x_i,y_j\rangle)/2` (numba,
    bit-packed 64-bit words and popcount).

    Parameters
    ----------
    X : array_like, shape (N, d), entries ±1
    Y : array_like, shape (M, d), entries ±1, optional (default ``X``)

    Returns
    -------
    ndarray of int64, shape (N, M)

    Notes
    -----
    Regime: any N, M, d; memory N·M int64.
    Accuracy: exact (integers).

    References
    ----------
    .. [src] popdyn's own (numba); docs/resnet.md.

    Examples
    --------
    >>> hamming_matrix([[1, 1, -1]], [[1, -1, 1], [1, 1, -1]])
    array([[2, 0]])
    """
    X = _points("resnet.hamming_matrix", X)
    Y = X if Y is None else _points("resnet.hamming_matrix", Y, X.shape[1], "Y")
    out = np.empty((X.shape[0], Y.shape[0]), dtype=np.int64)
    (_hamming_parallel if out.size >= _PARALLEL_PAIRS else _hamming_serial)(_pack(X), _pack(Y), out)
    return out


def walsh_index(S):
    r"""Index :math:`\sum_{j\in S}2^j` of :math:`\chi_S` in the output of :func:`fwht`.

    Parameters
    ----------
    S : iterable of int
        Distinct 0-based coordinates.

    Returns
    -------
    int

    Notes
    -----
    Regime: bookkeeping.
    Accuracy: exact (Python integers).

    References
    ----------
    .. [src] popdyn's own; docs/resnet.md.

    Examples
    --------
    >>> walsh_index((0, 2))
    5
    """
    return sum(1 << int(j) for j in S)


@numba.njit(cache=True)
def _fwht(a):
    n = a.shape[0]
    h = 1
    while h < n:
        for i in range(0, n, 2 * h):
            for j in range(i, i + h):
                for c in range(a.shape[1]):
                    x = a[j, c]
                    y = a[j + h, c]
                    a[j, c] = x + y
                    a[j + h, c] = x - y
        h *= 2


def fwht(values):
    r"""Walsh coefficients of a function tabulated on :func:`hypercube_points` (fast Walsh-Hadamard, numba).

    .. math::

        \hat f_S=2^{-d}\sum_{i}f(x_i)\chi_S(x_i)\quad\text{at index } \mathrm{mask}(S)=\sum_{j\in S}2^j.

    Parameters
    ----------
    values : array_like, shape (2^d,) or (2^d, k)
        Values on the points of :func:`hypercube_points` ``(d)``, d <= 22; columns are transformed separately.

    Returns
    -------
    ndarray, same shape as ``values``

    Notes
    -----
    Regime: exact up to rounding, O(d 2^d) per column.
    Accuracy: absolute error <= d eps :math:`2^{-d}\sum_i|f(x_i)|` per coefficient (d butterfly levels; the division
    by 2^d is exact).

    References
    ----------
    .. [src] standard fast Walsh-Hadamard transform; docs/resnet.md.

    Examples
    --------
    >>> X = hypercube_points(3)
    >>> c = fwht(X[:, 0] * X[:, 2] + 0.5)
    >>> float(c[walsh_index((0, 2))]), float(c[0])
    (1.0, 0.5)
    """
    v = check("resnet.fwht", "values", values, FiniteArray(np.ndim(values) if np.ndim(values) in (1, 2) else 1))
    n = v.shape[0]
    if n < 2 or n & (n - 1) or n > 2 ** FWHT_D_MAX:
        raise InvalidParameterError(f"The 'values' parameter of resnet.fwht must have 2^d rows, "
                                    f"1 <= d <= {FWHT_D_MAX}. Got {n} rows instead.")
    a = np.array(v.reshape(n, -1), dtype=np.float64)
    _fwht(a)
    return (a / n).reshape(v.shape)


# ---- kernel ridge regression and its exact population error -------------------------------------------------

def kernel_matrix(kappa, X, Y=None):
    r"""Gram matrix :math:`K_{ij}=\kappa_{t(x_i,y_j)}` of a Hamming profile.

    Parameters
    ----------
    kappa : array_like, shape (d+1,)
    X : array_like, shape (N, d), entries ±1
    Y : array_like, shape (M, d), optional

    Returns
    -------
    ndarray, shape (N, M)

    Notes
    -----
    Regime: any dot-product kernel on the cube.
    Accuracy: exact (a gather of the profile).

    References
    ----------
    .. [src] [AllenZhu19, program (3.1)].
    """
    kappa = _profile("resnet.kernel_matrix", kappa)
    X = _points("resnet.kernel_matrix", X, kappa.size - 1)
    return kappa[hamming_matrix(X, Y)]


def krr_fit(kappa, X, Y, lam):
    r"""Kernel ridge regression weights, the minimizer of program (3.1).

    .. math::

        \min_\beta\frac1N\sum_i\Big\|\sum_jK(x^{(i)},x^{(j)})\beta_j-y^{(i)}\Big\|^2+\lambda\,\mathrm{Tr}(\beta K
        \beta^\top)\ \Longrightarrow\ \beta=(K+N\lambda I)^{-1}Y.

    Parameters
    ----------
    kappa : array_like, shape (d+1,)
        Hamming profile of a PSD kernel.
    X : array_like, shape (N, d), entries ±1
    Y : array_like, shape (N,) or (N, k)
    lam : float or array_like of floats
        Ridge :math:`\lambda>0`; a float is solved by Cholesky, an array by one ``eigh`` for all values.

    Returns
    -------
    ndarray
        Shape of ``Y``, with a leading axis over ``lam`` when ``lam`` is an array.

    Notes
    -----
    Regime: any PSD kernel and :math:`\lambda>0`; the ridge is :math:`N\lambda` because (3.1) averages the loss.
    Accuracy: :math:`\|\beta-\beta^*\|\le8N\epsilon\,\mathrm{cond}(K+N\lambda I)\|\beta^*\|` (backward-stable
    Cholesky or eigh); a numerically indefinite :math:`K+N\lambda I` is refused (InvalidParameterError), never
    returned. Measured: 0.18 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, program (3.1)]; its closed-form minimiser derived in docs/resnet.md.

    Examples
    --------
    >>> X = hypercube_points(3)
    >>> beta = krr_fit(gaussian(3), X, X[:, 0], 1e-3)
    >>> bool(np.allclose(kernel_matrix(gaussian(3), X) @ beta, X[:, 0], atol=1e-2))
    True
    """
    owner = "resnet.krr_fit"
    kappa = _profile(owner, kappa)
    X = _points(owner, X, kappa.size - 1)
    N = X.shape[0]
    Yc = check(owner, "Y", Y, FiniteArray(np.ndim(Y) if np.ndim(Y) in (1, 2) else 2))
    if Yc.shape[0] != N:
        raise InvalidParameterError(f"The 'Y' parameter of {owner} must have {N} rows. Got shape {Yc.shape}.")
    lams = np.atleast_1d(np.asarray(lam, dtype=object))
    if lams.ndim != 1 or not lams.size:
        raise InvalidParameterError(f"The 'lam' parameter of {owner} must be a float > 0 or a 1-d array of them. "
                                    f"Got {lam!r} instead.")
    lams = np.array([check(owner, "lam", v, Interval(0.0, np.inf, "neither")) for v in lams])
    K = kappa[hamming_matrix(X)]
    if not np.ndim(lam):  # one ridge: Cholesky (about 3x cheaper than eigh)
        try:
            return scipy.linalg.cho_solve(scipy.linalg.cho_factor(K + N * lams[0] * np.eye(N)), Yc)
        except np.linalg.LinAlgError:
            raise InvalidParameterError(f"The 'kappa' parameter of {owner} must be a PSD kernel on the cube "
                                        f"(K + N lam I is not positive definite).") from None
    w, V = np.linalg.eigh(K)
    if w.min() < -1e-8 * max(w.max(), 1.0):
        raise InvalidParameterError(f"The 'kappa' parameter of {owner} must be a PSD kernel on the cube. "
                                    f"Got a Gram eigenvalue {w.min():.3g}.")
    proj = V.T @ Yc.reshape(N, -1)
    return np.stack([V @ (proj / (w + N * lv)[:, None]) for lv in lams]).reshape((lams.size,) + Yc.shape)


def captured_coefficients(kappa, X, beta, sets):
    r"""Walsh coefficients :math:`c_S` of the kernel predictor :math:`\mathfrak K(x)=\sum_j\beta_jK(x,x^{(j)})`.

    .. math::

        c_S=\langle\mathfrak K,\chi_S\rangle=\lambda_{|S|}^2\sum_j\beta_j\chi_S(x^{(j)})=\lambda_{|S|}u_S.

    Parameters
    ----------
    kappa : array_like, shape (d+1,)
    X : array_like, shape (N, d), entries ±1
    beta : array_like, shape (N,) or (N, k)
    sets : list of tuples
        Sorted 0-based coordinate tuples.

    Returns
    -------
    ndarray, shape (len(sets),) or (len(sets), k)

    Notes
    -----
    Regime: any dot-product kernel on the uniform cube; :math:`u_S` is Prop. E.1's reparameterization.
    Accuracy: absolute error <= 4 (N + 2) eps :math:`|\lambda^2_{|S|}|\sum_j|\beta_j|` per coefficient. Measured:
    0.034 of the declared bound.

    References
    ----------
    .. [src] [AllenZhu19, Prop. E.1 and its proof (App. E.2)]; the exact test error derived in docs/resnet.md.
    """
    owner = "resnet.captured_coefficients"
    kappa = _profile(owner, kappa)
    d = kappa.size - 1
    X = _points(owner, X, d)
    b = _beta(owner, beta, X.shape[0])
    sets = _sets(owner, sets, d)
    lambda2 = level_eigenvalues(kappa)
    chi = np.stack([np.prod(X[:, list(S)], axis=1) for S in sets], axis=0) if sets else np.zeros((0, X.shape[0]))
    c = lambda2[[len(S) for S in sets]][:, None] * (chi @ b)
    return c if np.ndim(beta) == 2 else c[:, 0]


_EPS = np.finfo(float).eps


@numba.njit(cache=True, inline="always")
def _dd_add(hi, lo, x_hi, x_lo):
    s, e = _two_sum(hi, x_hi)
    e += lo + x_lo
    return _two_sum(s, e)


def _pair_sums(H, b, d):  # pragma: no cover - compiled
    """Per Hamming distance t: sum over pairs (j, k) at distance t of b_j b_k, in double-double, and of |b_j b_k|
    (rows in parallel, then reduced in double-double)."""
    n = b.size
    rh = np.zeros((n, d + 1))
    rl = np.zeros((n, d + 1))
    ra = np.zeros((n, d + 1))
    for j in numba.prange(n):
        for k in range(n):
            t = H[j, k]
            p, e = _two_prod(b[j], b[k])
            rh[j, t], rl[j, t] = _dd_add(rh[j, t], rl[j, t], p, e)
            ra[j, t] += abs(p)
    hi = np.zeros(d + 1)
    lo = np.zeros(d + 1)
    ab = np.zeros(d + 1)
    for j in range(n):
        for t in range(d + 1):
            hi[t], lo[t] = _dd_add(hi[t], lo[t], rh[j, t], rl[j, t])
            ab[t] += ra[j, t]
    return hi, lo, ab


_pair_sums_serial, _pair_sums_parallel = serial_and_parallel(_pair_sums)


@numba.njit(cache=True)
def _dd_dot(w, w_lo, v_hi, v_lo):
    """sum_i (w_i + w_lo_i)(v_hi_i + v_lo_i) in double-double (the lo x lo products dropped)."""
    hi = 0.0
    lo = 0.0
    for i in range(w.size):
        p, e = _two_prod(w[i], v_hi[i])
        hi, lo = _dd_add(hi, lo, p, e + w[i] * v_lo[i] + w_lo[i] * v_hi[i])
    return hi, lo


@numba.njit(cache=True)
def _signed_sum(chi, b):
    """sum_j chi_j b_j (chi = +-1) in double-double, and sum_j |b_j|."""
    hi = 0.0
    lo = 0.0
    ab = 0.0
    for j in range(b.size):
        hi, lo = _dd_add(hi, lo, chi[j] * b[j], 0.0)
        ab += abs(b[j])
    return hi, lo, ab


def exact_test_error(kappa, X, beta, target, *, return_accuracy=False):
    r"""Exact population squared error of the kernel predictor per output (Parseval; no 1/2, no sampling).

    .. math::

        \mathbb E_x(f-\mathfrak K)^2=\sum_S\hat f_S^2-2\sum_{S:\hat f_S\ne0}\hat f_S\lambda_{|S|}u_S
        +\sum_\ell\lambda_\ell^2\,q_\ell,\qquad u_S=\sum_j\beta_j\chi_S(x^{(j)}),\quad
        q_\ell=\sum_{j,l}\beta_j\beta_l\mathcal K_\ell\big(d_H(x^{(j)},x^{(l)})\big),

    with :math:`\lambda_\ell` the kernel's level eigenvalues (:func:`level_eigenvalues`) and
    :math:`\lambda_\ell^2 q_\ell` the squared norm of the predictor's level-:math:`\ell` part.

    Parameters
    ----------
    kappa : array_like, shape (d+1,)
    X : array_like, shape (N, d), entries ±1
    beta : array_like, shape (N,) or (N, k)
        Column ``i`` for output ``i``.
    target : list of dict
        One Walsh expansion per output (``{(): c0, (0, 3): c, ...}``), ``k`` of them.
    return_accuracy : bool
        Also return the achieved absolute accuracy (a rounding-error bound) per output.

    Returns
    -------
    ndarray, shape (k,)
        Never negative; with ``return_accuracy``, ``(error, accuracy)``.

    Notes
    -----
    Regime: x uniform on {±1}^d, any dot-product kernel, d <= 60; O(N^2) after an O(d^2) table. Accuracy: each
    level's squared norm is an O(1) number that a huge ``beta`` (a tiny ridge, a target on a level the kernel
    does not see) writes as a sum of terms of size :math:`\lVert\beta\rVert_1^2`. The pair sums, the exact
    integer Krawtchouk contraction and the :math:`u_S` are therefore accumulated in double-double arithmetic,
    so the absolute error is at most about :math:`8\epsilon^2\sum_\ell\lambda_\ell^2\sum_t|\mathcal K_\ell(t)|
    \sum_{d_H=t}|\beta_j\beta_l| + 8\epsilon\,(\text{size of the three terms})`, returned with
    ``return_accuracy`` (it is 1e-16 to 1e-6 where the plain quadratic form was off by 1e2 at ridge 1e-12; a
    ``RuntimeWarning`` names it when it exceeds 1e-6 relative). Checked against the whole-cube average for
    d <= 16 in the tests.
    Measured: 0.066 of the returned accuracy (tests/test_accuracy_resnet.py, against the whole-cube average in exact
    rationals for d <= 6, ridges to 1e-300, whole-cube training sets with a rank-deficient kernel).

    References
    ----------
    .. [src] [AllenZhu19, Prop. E.1, Lemma E.2]; derived in docs/resnet.md.
    """
    owner = "resnet.exact_test_error"
    kappa = _profile(owner, kappa)
    d = kappa.size - 1
    X = _points(owner, X, d)
    b = _beta(owner, beta, X.shape[0])
    target = _target(owner, target, d)
    if b.shape[1] != len(target):
        raise InvalidParameterError(f"The 'beta' parameter of {owner} must have one column per target output "
                                    f"({len(target)}). Got shape {np.shape(beta)} instead.")
    lam = level_eigenvalues(kappa)
    K = krawtchouk(d)
    K_hi = K.astype(float)
    K_lo = (K - K_hi.astype(np.int64)).astype(float)  # exact split of integers beyond 2^53
    H = hamming_matrix(X)
    err, acc = np.empty(len(target)), np.empty(len(target))
    for i, (sets, coef) in enumerate(target):
        bi = np.ascontiguousarray(b[:, i])
        p_hi, p_lo, p_abs = (_pair_sums_parallel if H.size >= _PARALLEL_PAIRS else _pair_sums_serial)(H, bi, d)
        norm2, small, big = 0.0, 0.0, 0.0
        for l in range(d + 1):
            if lam[l] == 0.0:
                continue
            q_hi, q_lo = _dd_dot(K_hi[l], K_lo[l], p_hi, p_lo)
            norm2 += lam[l] ** 2 * (q_hi + q_lo)
            small += lam[l] ** 2 * np.abs(K[l]).astype(float) @ p_abs
            big += abs(lam[l] ** 2 * q_hi)
        cross, cross_abs = 0.0, 0.0
        for S, c in zip(sets, coef):
            u_hi, u_lo, u_abs = _signed_sum(np.prod(X[:, list(S)], axis=1), bi)
            cross += c * lam[len(S)] * (u_hi + u_lo)
            cross_abs += abs(c * lam[len(S)]) * u_abs
        f2 = math.fsum(coef ** 2)
        err[i] = f2 - 2.0 * cross + norm2
        acc[i] = 8 * _EPS ** 2 * (small + 2 * cross_abs) + 8 * _EPS * (f2 + 2 * abs(cross) + big)
    if np.any(acc > 1e-6 * np.maximum(np.abs(err), 1e-300)):
        import warnings
        warnings.warn(f"{owner}: achieved accuracy {acc.max():.3g} (absolute) on an error of {err.min():.3g}; "
                      "the ridge is too small for double-double accumulation", RuntimeWarning, stacklevel=2)
    err = np.maximum(err, 0.0)
    return (err, acc) if return_accuracy else err


def lemma_e2_bound(kappa, X, beta, target):
    r"""Lemma E.2's Parseval lower bound on the test error: only the target's own Walsh sets are kept.

    .. math::

        \mathbb E_x(f-\mathfrak K)^2\ \ge\ \sum_{S:\hat f_S\ne0}(c_S-\hat f_S)^2,
        \qquad\text{Theorem 2 target: }(c_{\{i\}}-1)^2+(c_{S^*}-\alpha)^2.

    Parameters
    ----------
    kappa, X, beta, target
        As in :func:`exact_test_error`.

    Returns
    -------
    ndarray, shape (k,)

    Notes
    -----
    Regime: as :func:`exact_test_error`; equality iff the predictor has no Walsh mass off the target's sets.
    Accuracy: absolute error <= 2 |c_S - f_S| times the error of :func:`captured_coefficients` + 2 eps of the sum,
    per set.

    References
    ----------
    .. [src] [AllenZhu19, Lemma E.2].
    """
    owner = "resnet.lemma_e2_bound"
    kappa = _profile(owner, kappa)
    X = _points(owner, X, kappa.size - 1)
    target = _target(owner, target, kappa.size - 1)
    b = _beta(owner, beta, X.shape[0])
    if b.shape[1] != len(target):
        raise InvalidParameterError(f"The 'beta' parameter of {owner} must have one column per target output "
                                    f"({len(target)}). Got shape {np.shape(beta)} instead.")
    return np.array([np.sum((captured_coefficients(kappa, X, b[:, i], sets) - coef) ** 2)
                     for i, (sets, coef) in enumerate(target)])


#: fc2_kernel_limit's kernel names -> field names: "ntk" and "ck" are popdyn.sim.resnet's names of the same kernels
#: (its empirical_ntk trains the hidden weights only, its conjugate_kernel is the readout's, the NNGP)
_FC2_KERNELS = {"ntk_hidden": "ntk_hidden", "nngp": "nngp", "ntk": "ntk_hidden", "ck": "nngp"}


def fc2_kernel_limit(kernel, d, w_var=None):
    r"""Exact infinite-width Hamming profile of the fc2 net's kernel at init (Gaussian W with the bias column).

    .. math::

        K^{\mathrm{ntk\_hidden}}_\infty(x,y)=\langle\tilde x,\tilde y\rangle\,\frac{\pi-\arccos\rho}{2\pi}
        =(d+1)\,\mathrm{relu\_ntk\_hidden}_d,\qquad
        K^{\mathrm{nngp}}_\infty(x,y)=s^2\|\tilde x\|\|\tilde y\|\,\frac{\sqrt{1-\rho^2}+(\pi-\arccos\rho)\rho}{2\pi}
        =s^2(d+1)\,\mathrm{relu\_nngp}_d,

    with :math:`\tilde x=(x,1)`, :math:`\|\tilde x\|^2=d+1`, :math:`\rho=\langle\tilde x,\tilde y\rangle/(d+1)`.

    Parameters
    ----------
    kernel : {"ntk_hidden", "nngp"}
        The NTK of the hidden weights W only (``popdyn.sim.resnet.networks.empirical_ntk`` of fc2, the paper's
        "(NTK)") or the NNGP, the kernel of the hidden features (``popdyn.sim.resnet.networks.conjugate_kernel``,
        the paper's conjugate kernel "(last)"). ``"ntk"`` and ``"ck"``, the simulation's names of the same two
        kernels, are accepted as aliases.
    d : int
        Input dimension, 1 <= d <= 60.
    w_var : float or None
        Variance :math:`s^2` of W's entries (bias column included): None for the experiment init's 1/d (App. A),
        sigma_w^2 for the theory init. The hidden NTK does not depend on it.

    Returns
    -------
    ndarray, shape (d+1,)

    Notes
    -----
    Regime: m -> infinity at init, A_{aj} ~ N(0, 1/m). Both finite-width kernels are sums of m i.i.d. terms whose
    mean is this profile at every width (the NTK's :math:`\frac1k\sum_aA_{aj}^2` has mean 1/m and is independent of
    the indicators, which are scale free), so :math:`K_m-K_\infty=O_P(m^{-1/2})` entrywise. The NTK is not the
    relu_ntk_hidden profile itself (unit-norm inputs): the factor d+1 changes KRR at a fixed ridge.
    Accuracy: relative error <= 6 eps (the relu profiles' 4 eps and one product). Measured: 0.55 of the declared
    bound.

    References
    ----------
    .. [src] [AllenZhu19, footnote 5, Fig. 2, App. A]; the infinite-width profiles are standard (docs/resnet.md).

    Examples
    --------
    >>> float(fc2_kernel_limit("ntk_hidden", 4)[0]), float(fc2_kernel_limit("nngp", 4)[0])  # (d+1)/2, (d+1)/(2d)
    (2.5, 0.625)
    """
    owner = "resnet.fc2_kernel_limit"
    kernel = _FC2_KERNELS[check(owner, "kernel", kernel, Options(tuple(_FC2_KERNELS)))]
    d = check(owner, "d", d, Integer(1, 60))
    s2 = 1.0 / d if w_var is None else check(owner, "w_var", w_var, Interval(0, np.inf, closed="neither"))
    if kernel == "ntk_hidden":
        return (d + 1) * relu_ntk_hidden(d, bias=True)
    return s2 * (d + 1) * relu_nngp(d, bias=True)
