r"""Population risk of a general two-layer network, exact where the data model allows (docs/gradient_features.md).

.. math:: \mathcal L_{\mathcal D}(g)=\mathbb E\,\ell(y\,g(\mathbf x)),\qquad
          g(\mathbf x)=\sum_{i=1}^Ma_i\,\sigma(\langle\mathbf w_i,\mathbf x\rangle-b_i)

* **Hypercube data** (:class:`UniformParity`, :class:`StructuredParity`): :math:`\mathbf x=M\phi` with a finite law of
  the relevant block :math:`\phi_A` (which fixes y) and iid symmetric coordinates :math:`\phi_l\in\{-1,0,1\}` off A.
  The pre-activations are :math:`\mathbf u=W M_A\phi_A-\mathbf b+\sum_{l\notin A}\phi_l\mathbf v_l`,
  :math:`\mathbf v_l=WM_l`. Columns equal up to sign form a class c of size :math:`n_c`, which enters only through
  :math:`T_c=\sum_{l\in c}\pm\phi_l` (a law on :math:`\{-n_c..n_c\}`), so the risk is a finite sum over
  :math:`|\mathrm{supp}\,\phi_A|\prod_c|\mathrm{supp}\,T_c|` configurations (``"exact"``; brute force over
  :math:`2^d` points is the case of classes of size 1). ``"lattice"`` rounds every :math:`\mathbf v_l` to a grid
  :math:`h_i\mathbb Z` per neuron and propagates the law of the rounded sum on that grid coordinate by coordinate
  (dynamic programming), with the bound
  :math:`|\mathcal L(g)-\mathcal L(\tilde g)|\le\mathrm{Lip}(\ell)\sum_i|a_i|\,(\mathbb E\Delta u_i^2)^{1/2}`,
  :math:`\mathbb E\Delta u_i^2=2p\,\|\Delta\mathbf v_{i\cdot}\|^2` (Jensen; p the probability of each of
  :math:`\pm1`).
* **Gaussian data** (:class:`GaussianMixture`, :class:`LinearSeparable`): given the component,
  :math:`\mathbf u=\mathbf m_c+s_cL\xi`, :math:`\xi\sim\mathcal N(0,I_q)`, q = rank of W on the noise space. For
  q = 1, g is piecewise linear in :math:`\xi` with knots :math:`-m_i/L_i`, so the hinge and 0-1 risks are sums of
  Gaussian partial moments in closed form (the logistic by adaptive quadrature on each piece); for q = 2 an outer
  adaptive quadrature over :math:`\xi_2` of the q = 1 form. For q >= 3 the risk is a Gaussian integral over the
  cells of an arrangement of M hyperplanes in :math:`\mathbb R^q` (polyhedral Gaussian probabilities and moments,
  no closed form beyond orthants of dimension 3): Monte Carlo.
* **Multi-index polynomials** (real labels, Gaussian x): Monte Carlo only.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import integrate, special

from ..._validate import FiniteArray, Integer, Interval, InvalidParameterError, Options, check
from .bounds import LIPSCHITZ
from .data import LOSSES, GaussianMixture, LinearSeparable, _as_biases, _gauss_linear_moment, _zero_one
from .parity import StructuredParity, UniformParity

__all__ = ["Risk", "population_risk"]

_EPS = 2.0 ** -52
_RANK_TOL = 1e-13          # relative singular value treated as 0 (its effect enters the returned bound)
_T_MAX = 38.0             # Gaussian coordinates beyond are dropped (mass < 1e-313)
_METHODS = ("auto", "exact", "lattice", "mc")


class Risk(NamedTuple):
    """A population risk: ``value``, its Monte Carlo standard error ``se`` (0 for deterministic methods), a
    deterministic bound ``bound`` on ``|value - exact|`` (inf for Monte Carlo) and the ``method`` used."""
    value: float
    se: float
    bound: float
    method: str


# ---- hypercube data ------------------------------------------------------------------------------------------------

def _hypercube(model, W, b):
    """(head pre-activations U0 (H, M), labels y (H,), probabilities p (H,), tail columns V (M, n), P(phi_l = 1))."""
    if isinstance(model, UniformParity):
        A = model.subset
        k = len(A)
        signs = 1.0 - 2.0 * ((np.arange(2 ** k)[:, None] >> np.arange(k)) & 1)       # (2^k, k)
        rest = np.setdiff1d(np.arange(model.d), A)
        return signs @ W[:, A].T - b, np.prod(signs, axis=1), np.full(2 ** k, 2.0 ** -k), W[:, rest], 0.5
    rk = model._rk
    Wm = W if model.M is None else W @ model.M                        # columns W M_l
    phiA, probs = model._head_support()
    return phiA @ Wm[:, :rk].T - b, model._label(phiA), probs, Wm[:, rk:], model.p_o


def _sum_law(n, p1):
    """Law of the sum of n iid values in {-1, 0, 1} with P(+-1) = p1 each, on -n..n (zeros kept)."""
    step = np.array([p1, 1.0 - 2.0 * p1, p1])
    out = np.ones(1)
    for _ in range(n):                        # n small in practice (a class of equal columns)
        out = np.convolve(out, step)
    return np.arange(-n, n + 1), out


def _classes(V):
    """Columns of V (M, n) grouped up to sign: (representatives (M, C), counts (C,)); zero columns dropped."""
    V = V[:, np.any(V != 0, axis=0)]
    if V.shape[1] == 0:
        return np.zeros((V.shape[0], 0)), np.zeros(0, dtype=np.int64)
    lead = V[np.argmax(V != 0, axis=0), np.arange(V.shape[1])]
    V = V * np.sign(lead)
    reps, counts = np.unique(V.T, axis=0, return_counts=True)
    return reps.T, counts


def _head_sum(U0, y, p, U, P, a, loss):
    """sum_h p_h sum_t P_t l(y_h g(U0_h + U_t)) and the same sum of |terms| + Lip sum_i |a_i u_i| (for the bound)."""
    ell = LOSSES.get(loss, _zero_one)
    total, scale = 0.0, 0.0
    absa = np.abs(a)
    for u0, yh, ph in zip(U0, y, p):
        pre = u0 + U
        val = ell(yh * (np.maximum(pre, 0.0) @ a))
        total += ph * float(P @ val)
        scale += ph * float(P @ (val + np.abs(pre) @ absa))
    return total, scale


def _hypercube_exact(model, a, W, b, loss, max_points):
    U0, y, p, V, p1 = _hypercube(model, W, b)
    reps, counts = _classes(V)
    size = len(p) * math.prod(int(1 if p1 == 0 else c + 1 if p1 == 0.5 else 2 * c + 1) for c in counts)
    if size * W.shape[0] > max_points:
        raise InvalidParameterError(
            f"population_risk(method='exact') of {model!r}: {size} configurations x {W.shape[0]} neurons exceed "
            f"max_points = {max_points} (columns of W equal up to sign: {len(counts)} classes); use method='lattice' "
            "or 'mc', or raise max_points")
    U, P = np.zeros((1, W.shape[0])), np.ones(1)
    for v, c in zip(reps.T, counts):
        t, pt = _sum_law(int(c), p1)
        keep = pt > 0
        t, pt = t[keep], pt[keep]
        U = (U[:, None, :] + t[None, :, None] * v).reshape(-1, W.shape[0])
        P = np.outer(P, pt).ravel()
    value, scale = _head_sum(U0, y, p, U, P, a, loss)
    terms = size + W.shape[0] + W.shape[1] + 2 * len(counts) + 8
    return Risk(value, 0.0, terms * _EPS * scale, "exact")


def _shift_add(out, src, shift, weight):
    """out += weight * src shifted by the integer vector ``shift`` (no wrap-around; the grid is large enough)."""
    dst, org = [], []
    for s, n in zip(shift, src.shape):
        dst.append(slice(max(s, 0), n + min(s, 0)))
        org.append(slice(max(-s, 0), n - max(s, 0)))
    out[tuple(dst)] += weight * src[tuple(org)]


def _sparse_walk(model, K, p1, heads, max_points):
    """Occupied points (N, M) of the rounded sum sum_l phi_l K_l and their probabilities, coordinate by coordinate."""
    pts, P = np.zeros((1, K.shape[0]), dtype=np.int64), np.ones(1)
    for col in K.T:
        if not col.any():
            continue
        parts = [pts + col, pts - col] + ([pts] if p1 < 0.5 else [])
        probs = [p1 * P, p1 * P] + ([(1.0 - 2.0 * p1) * P] if p1 < 0.5 else [])
        pts, inv = np.unique(np.concatenate(parts), axis=0, return_inverse=True)
        P = np.bincount(inv.ravel(), weights=np.concatenate(probs))
        if len(P) * heads > max_points:
            raise InvalidParameterError(
                f"population_risk(method='lattice') of {model!r}: more than {max_points // heads} occupied grid "
                "points; raise tol or max_points, or use 'mc'")
    return pts, P


def _hypercube_lattice(model, a, W, b, loss, tol, max_points):
    if loss == "error":
        raise InvalidParameterError("The 'loss' parameter of population_risk(method='lattice') must be 'hinge' or "
                                    "'logistic' (the 0-1 error is not Lipschitz). Got 'error' instead.")
    U0, y, p, V, p1 = _hypercube(model, W, b)
    M, lip = W.shape[0], LIPSCHITZ[loss]
    absa = np.abs(a)
    live = absa > 0
    # grid step per neuron: a rounding budget tol / M each, |Delta v_il| <= h_i / 2 on every column
    nrm = math.sqrt(2 * p1 * V.shape[1]) / 2.0
    live &= nrm > 0
    h = np.ones(M)
    h[live] = tol / (M * lip * absa[live] * nrm)
    K = np.rint(V / h[:, None]).astype(np.int64)
    K[~live] = 0
    bound = lip * float(absa @ np.sqrt(2 * p1 * np.sum((V - K * h[:, None]) ** 2, axis=1)))
    ext = np.sum(np.abs(K), axis=1)
    shape = tuple(int(2 * e + 1) for e in ext)
    if math.prod(shape) * len(p) <= max_points:                  # dense grid: shift-add per column
        law = np.zeros(shape)
        law[tuple(ext)] = 1.0
        for col in K.T:
            if col.any():
                new = (1.0 - 2.0 * p1) * law
                _shift_add(new, law, col, p1)
                _shift_add(new, law, -col, p1)
                law = new
        idx = np.nonzero(law)
        pts, P = np.stack(idx, axis=1) - ext, law[idx]
    else:                                                         # sparse: only the occupied grid points
        pts, P = _sparse_walk(model, K, p1, len(p), max_points)
    U = pts * h
    value, scale = _head_sum(U0, y, p, U, P, a, loss)
    return Risk(value, 0.0, bound + (U.shape[0] + M + V.shape[1] + 8) * _EPS * scale, "lattice")


# ---- Gaussian data -------------------------------------------------------------------------------------------------

def _gaussian(model, W, b):
    """Components (means m (C, M) of the pre-activations, scales s (C,), labels y (C,), probabilities p (C,)) and
    the noise map N (M, d): u = m_c + s_c N z, z ~ N(0, I_d)."""
    if isinstance(model, GaussianMixture):
        return model.mus @ W.T - b, model.sigmas, model.labels, model.weights, W
    ys = np.concatenate([model.signal, -model.signal])
    q = 0.5 * np.concatenate([model.signal_probs, model.signal_probs])
    alpha = W @ model.w_star
    return np.outer(ys, alpha) - b, np.ones(len(ys)), np.sign(ys), q, W - np.outer(alpha, model.w_star)


def _line_pieces(m, L, a):
    """g(t) = sum a_i relu(m_i + L_i t) = alpha_j + beta_j t on (edges_j, edges_{j+1})."""
    nz = L != 0
    knots = -m[nz] / L[nz]
    order = np.argsort(knots)
    knots, an, mn, Ln = knots[order], a[nz][order], m[nz][order], L[nz][order]
    on0 = (L < 0) | ((L == 0) & (m > 0))                                  # active as t -> -inf
    sgn = np.where(Ln > 0, 1.0, -1.0)                                      # crossing upward switches on / off
    alpha = np.concatenate([[a[on0] @ m[on0]], a[on0] @ m[on0] + np.cumsum(sgn * an * mn)])
    beta = np.concatenate([[a[on0] @ L[on0]], a[on0] @ L[on0] + np.cumsum(sgn * an * Ln)])
    edges = np.concatenate([[-np.inf], knots, [np.inf]])
    return edges[:-1], edges[1:], alpha, beta


def _inside(lo, hi):
    """A point inside each interval (lo, hi), finite for half-lines."""
    mid = 0.5 * (lo + hi)
    mid = np.where(np.isneginf(lo), hi - 1.0, mid)
    mid = np.where(np.isposinf(hi), lo + 1.0, mid)
    return np.where(np.isneginf(lo) & np.isposinf(hi), 0.0, mid)


def _line_risk(m, L, a, y, loss, tol):
    r""":math:`\mathbb E\,\ell(y\,g(t))`, t ~ N(0, 1), :math:`g(t)=\sum_ia_i\sigma(m_i+L_it)` (piecewise linear)."""
    lo, hi, al, be = _line_pieces(m, L, a)
    if loss == "logistic":
        ell = LOSSES["logistic"]
        f = lambda t, A, B: float(ell(y * (A + B * t))) * math.exp(-0.5 * t * t) / math.sqrt(2 * math.pi)
        eps = tol / len(lo)
        return sum(integrate.quad(f, l, h_, args=(A, B), epsabs=eps, epsrel=0.0, limit=200)[0]
                   for l, h_, A, B in zip(lo, hi, al, be) if l < h_)
    z0 = 1.0 if loss == "hinge" else 0.0                                   # the loss's kink in z = y g
    with np.errstate(divide="ignore", invalid="ignore"):
        root = np.where(be != 0, (y * z0 - al) / be, lo)
    cut = np.clip(root, lo, hi)
    total = 0.0
    for plo, phi in ((lo, cut), (cut, hi)):
        ok = plo < phi
        t = _inside(plo, phi)
        with np.errstate(invalid="ignore"):                              # empty pieces at +-inf: masked by ok
            z = y * (al + be * t)
        if loss == "hinge":
            w = ok & (z < 1.0)
            total += float(np.sum(_gauss_linear_moment(1.0 - y * al[w], -y * be[w], plo[w], phi[w], 0.0, 1.0)))
        else:
            c = np.where(z < 0, 1.0, np.where((z == 0) & (be == 0), 0.5, 0.0)) * ok
            total += float(np.sum(c * (special.ndtr(phi) - special.ndtr(plo))))
    return total


def _low_rank(model, N):
    """A factor L (M, q <= 2) with N N^T = L L^T up to the dropped singular directions, and the rows' residual
    norms; the range of N from a seeded sketch N Omega (exact for rank <= 3 almost surely), so a high-rank N is
    refused at O(M d)."""
    Y = N @ np.random.default_rng(0).standard_normal((N.shape[1], 3))
    Uy, Sy, _ = np.linalg.svd(Y, full_matrices=False)
    q = int(np.sum(Sy > _RANK_TOL * Sy[0])) if Sy.size and Sy[0] > 0 else 0
    if q > 2:
        raise InvalidParameterError(
            f"population_risk(method='exact') of {model!r}: W has rank >= 3 on the noise space; exact only for rank "
            "<= 2 (beyond, the risk is a Gaussian integral over a hyperplane arrangement: use method='mc')")
    Q = Uy[:, :q]
    B = Q.T @ N                                                              # (q, d)
    Ub, Sb, _ = np.linalg.svd(B, full_matrices=False)
    resid = np.linalg.norm(N - Q @ B, axis=1)
    resid[resid <= _RANK_TOL * float(np.max(np.linalg.norm(N, axis=1), initial=0.0))] = 0.0   # rounding of Q Q^T N
    return Q @ (Ub * Sb), resid


def _crossings(m, L1, L2):
    """Where the inner (q = 1) integrand changes form along xi_2: two neurons' knots cross, or a neuron with
    L1_i = 0 switches; the outer quadrature is split there (within |xi_2| <= 38, beyond which phi < 1e-313)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        num = np.outer(L1, m) - np.outer(m, L1)                                         # m_j L1_i - m_i L1_j
        den = np.outer(L2, L1) - np.outer(L1, L2)                                       # L2_i L1_j - L2_j L1_i
        t = np.concatenate([(num / den)[np.triu_indices(len(m), 1)], (-m / L2)[L1 == 0]])
    t = np.unique(t[np.isfinite(t) & (np.abs(t) < _T_MAX)])
    return np.concatenate([[-_T_MAX], t, [_T_MAX]])


def _gaussian_exact(model, a, W, b, loss, tol):
    mean, scale, y, p, N = _gaussian(model, W, b)
    L, resid = _low_rank(model, N)
    q = L.shape[1]
    if q == 2 and loss == "error":
        raise InvalidParameterError(
            f"population_risk(method='exact') of {model!r}: the 0-1 error of a rank-2 network is not covered (its outer "
            "integrand jumps where the network vanishes on a piece; the quadrature missed 5e-4): use method='mc'")
    bound = LIPSCHITZ.get(loss, math.inf) * float(np.abs(a) @ resid) * float(scale.max()) if resid.any() else 0.0
    bound += 16 * tol
    total = 0.0
    for mc, sc, yc, pc in zip(mean, scale, y, p):
        if q == 0:
            total += pc * float(LOSSES.get(loss, _zero_one)(yc * (np.maximum(mc, 0.0) @ a)))
        elif q == 1:
            total += pc * _line_risk(mc, sc * L[:, 0], a, yc, loss, tol)
        else:
            f = lambda t: _line_risk(mc + sc * L[:, 1] * t, sc * L[:, 0], a, yc, loss, tol) \
                * math.exp(-0.5 * t * t) / math.sqrt(2 * math.pi)
            cuts = _crossings(mc, sc * L[:, 0], sc * L[:, 1])
            total += pc * sum(integrate.quad(f, lo, hi, epsabs=tol / len(cuts), epsrel=0.0, limit=400)[0]
                              for lo, hi in zip(cuts[:-1], cuts[1:]))
    return Risk(float(total), 0.0, bound, "exact")


# ---- dispatcher ----------------------------------------------------------------------------------------------------

def population_risk(model, a, W, b, loss="hinge", method="auto", tol=1e-9, n=200_000, seed=0, max_points=1 << 22):
    r"""Population risk :math:`\mathcal L_{\mathcal D}(g)=\mathbb E\,\ell(y\,g(\mathbf x))` of a two-layer network,
    exact where the data model allows (module docstring), else Monte Carlo.

    Parameters
    ----------
    model : DataModel
        The data.
    a : array_like (M,)
        Second layer.
    W : array_like (M, d)
        First layer (rows; zero rows allowed).
    b : array_like (M,) or float
        Biases.
    loss : {"hinge", "logistic", "error"}
        The loss (logistic base 2), or the 0-1 error ``P[y g < 0] + P[g = 0]/2``.
    method : {"auto", "exact", "lattice", "mc"}
        "exact": hypercube data by enumeration of the column classes; Gaussian data when W has rank <= 2 on the
        noise space. "lattice": hypercube data with W rounded to a grid (declared bound ``tol``; hinge and
        logistic). "mc": :meth:`DataModel.network_loss_mc`. "auto": "exact" when it applies within ``max_points``
        (hypercube) or rank <= 2 (Gaussian), else "mc".
    tol : float
        Absolute accuracy target of the quadratures (Gaussian data) and of the lattice rounding, > 0.
    n, seed : int
        Monte Carlo samples (>= 2) and seed.
    max_points : int
        Largest configurations x neurons of the hypercube enumeration (memory ~ 8 bytes each per head atom).

    Returns
    -------
    Risk
        ``(value, se, bound, method)``: ``se`` the Monte Carlo standard error (0 otherwise), ``bound`` a bound on
        ``|value - exact|`` (inf for Monte Carlo).

    Notes
    -----
    Accuracy: hypercube "exact": |error| <= ``bound`` = (configurations + M + d + 8) eps E[l + Lip sum |a_i u_i|]
    (float summation; measured against exact rationals over all 2^d points, d <= 9); "lattice": the rounding bound
    Lip sum_i |a_i| (2 p ||Delta v_i||^2)^(1/2) <= tol plus the summation term (measured against "exact").
    Gaussian "exact", rank <= 1, hinge and 0-1: closed form, absolute error <= 16 tol (measured against mpmath
    quadrature at 30 digits); logistic and rank 2: adaptive quadrature with ``epsabs = tol``, declared bound 16 tol
    (measured against mpmath, the exact XOR g* hinge risk and Monte Carlo). Monte Carlo: statistical (``se``).
    Regime: hypercube "exact" while configurations x M <= ``max_points`` (classes of columns equal up to sign; all
    of {+-1}^d for d <= ~20); "lattice" while the grid (prod_i (2 sum_l |v_il| / h_i + 1)) x head <= max_points,
    in practice M <= 2; Gaussian "exact" for rank(W on the noise space) <= 2 (any M; the 0-1 error only rank <= 1); multi-index: "mc" only.

    References
    ----------
    .. [src] [Shi24, (3.1), Section 3.3]; the exact forms derived in docs/gradient_features.md
    """
    owner = "gradient_features.population_risk"
    W = check(owner, "W", W, FiniteArray(2))
    a, b = check(owner, "a", a, FiniteArray(1, (W.shape[0],))), _as_biases(owner, b, W.shape[0])
    if W.shape[1] != model.dim:
        raise InvalidParameterError(f"The 'W' parameter of {owner} must have {model.dim} columns (the data's "
                                    f"dimension). Got shape {W.shape} instead.")
    loss = check(owner, "loss", loss, Options(tuple(LOSSES) + ("error",)))
    method = check(owner, "method", method, Options(_METHODS))
    tol = check(owner, "tol", tol, Interval(0.0, math.inf, "neither"))
    n, seed = check(owner, "n", n, Integer(2)), check(owner, "seed", seed, Integer(0))
    max_points = check(owner, "max_points", max_points, Integer(1))
    cube = isinstance(model, (UniformParity, StructuredParity))
    gauss = isinstance(model, (GaussianMixture, LinearSeparable))
    if method == "lattice" and not cube:
        raise InvalidParameterError(f"The 'method' parameter of {owner} may be 'lattice' only for hypercube data "
                                    f"(UniformParity, StructuredParity). Got it for {model!r}.")
    if method == "exact" and not (cube or gauss):
        raise InvalidParameterError(f"The 'method' parameter of {owner} may be 'exact' only for UniformParity, "
                                    f"StructuredParity, GaussianMixture, LinearSeparable. Got it for {model!r}.")
    if method == "auto":
        try:
            return population_risk(model, a, W, b, loss, "exact", tol, n, seed, max_points) if cube or gauss \
                else population_risk(model, a, W, b, loss, "mc", tol, n, seed, max_points)
        except InvalidParameterError:
            return population_risk(model, a, W, b, loss, "mc", tol, n, seed, max_points)
    if method == "mc":
        value, se = model.network_loss_mc(a, W, b, loss, n, seed)
        return Risk(value, se, math.inf, "mc")
    if method == "lattice":
        return _hypercube_lattice(model, a, W, b, loss, tol, max_points)
    if cube:
        return _hypercube_exact(model, a, W, b, loss, max_points)
    return _gaussian_exact(model, a, W, b, loss, tol)
