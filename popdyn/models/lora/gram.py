r"""B0 and B1 for a general Gram matrix G, ReLU family: sums of Gaussian orthant moments (derived in docs/lora.md).

With the 2k fields ``f = (s_1..s_k, p_1..p_k)`` (student pre-activations ``s_j = <v_hat_j, x>``, teacher ones
``p_i = <v_i, x>``; unit variances, correlations from G, c, c_hat, xi and m), ``sigma = cc relu - B x`` and

.. math:: X = \sum_\alpha u_\alpha\sigma(f_\alpha),\ u = (-\lambda, \lambda),\qquad
          Y = \sum_j \mu_j\sigma'(s_j),\ \mu_j = \lambda_j\xi\hat c_j/\hat r_j,

``B0 = E[X^2 Y^2]`` is a sum of orthant moments ``E[x_a x_b 1(x_T > 0)]`` of at most four fields (the committee
machine's eta^2 term, :func:`popdyn.orthant._family_moments`). ``B1 = E[X^2 Y^2 eps^2]`` with ``eps = e.x`` a unit
field correlated only with the teachers, ``Cov(eps, p_i) = v_i = xi c_i sqrt(1-m^2)/r_i``; Stein's lemma twice gives

.. math:: B_1 = B_0 + 2\,\mathbb E[Y^2Z^2] + 2\,cc\sum_i \frac{v_i^2\lambda_i}{\sqrt{2\pi}}\,\mathbb E[Y^2X\mid p_i = 0],
          \qquad Z = \sum_i v_i\lambda_i\sigma'(p_i),

orthant probabilities of four fields and first moments of three (given ``p_i = 0``). Plackett's 1-D integral is
the only quadrature: exact to its Gauss-Legendre accuracy; cost O(k^4) orthant moments per overlap.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from ...orthant import _family_moments, _given_zero, _plackett_nodes, _same_fields, _signed_moment, _unit

__all__ = []

_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_EPS = np.finfo(np.float64).eps
_NODES = 8  # Gauss-Legendre nodes per panel of Plackett's integral (committee: <= 4e-14 per orthant probability)
_COARSE_NODES = 6  # the error estimate is the change from 6 nodes (<= 3e-11 per orthant probability)
K_MAX = 6  # "auto" takes this path up to k = 6: O(k^4) orthant moments, the ODE table 0.05 s at k = 5, 0.34 s at k = 8


def _fields(problem, m):
    """Covariance of (s, p, y) at overlap m, y = sum u_a f_a (the linear part of X), and the weights u, mu, v."""
    k, G, xi = problem.k, problem.G, problem.xi
    c, ch, r, rh = problem.c, problem.c_hat, problem.r, problem.r_hat
    C = np.empty((2 * k + 1, 2 * k + 1))
    C[:k, :k] = (G + xi**2 * np.outer(ch, ch)) / np.outer(rh, rh)
    C[k:2 * k, k:2 * k] = (G + xi**2 * np.outer(c, c)) / np.outer(r, r)
    C[:k, k:2 * k] = (G + xi**2 * m * np.outer(ch, c)) / np.outer(rh, r)
    C[k:2 * k, :k] = C[:k, k:2 * k].T
    u = np.concatenate((-problem.lam, problem.lam))
    C[2 * k, :2 * k] = C[:2 * k, 2 * k] = C[:2 * k, :2 * k] @ u
    C[2 * k, 2 * k] = u @ C[:2 * k, :2 * k] @ u
    v = xi * c * math.sqrt(max(1.0 - m * m, 0.0)) / r
    return C, u, problem.lam * xi * ch / rh, v


@numba.njit(cache=True)
def _yyzz(R, sd, lab, sg, mu, nu, cc, B, s, ws):  # pragma: no cover - compiled
    """E[Y^2 Z^2], Y = sum_j mu_j sigma'(f_j) (fields 0..k-1), Z = sum_i nu_i sigma'(f_{k+i}), sigma' = cc 1(> 0) - B."""
    k = mu.size
    thr = np.zeros(4, dtype=np.int64)
    idx = np.zeros(4, dtype=np.int64)
    tot = 0.0
    for j in range(k):
        for l in range(j, k):
            for i in range(k):
                for i2 in range(i, k):
                    w = mu[j] * mu[l] * nu[i] * nu[i2] * (1.0 if j == l else 2.0) * (1.0 if i == i2 else 2.0)
                    if w == 0.0:
                        continue
                    idx[0], idx[1], idx[2], idx[3] = j, l, k + i, k + i2
                    for mask in range(16):
                        coef, nt = 1.0, 0
                        for f in range(4):
                            if (mask >> f) & 1:
                                coef *= cc
                                thr[nt] = idx[f]
                                nt += 1
                            else:
                                coef *= -B
                        if coef != 0.0:
                            tot += w * coef * _signed_moment(R, sd, lab, sg, thr, nt, -1, -1, s, ws)
    return tot


@numba.njit(cache=True)
def _yyx(R, sd, lab, sg, mu, u, cc, B, s, ws):  # pragma: no cover - compiled
    """E[Y^2 X] (fields as :func:`_yyzz`, X = cc sum_a u_a f_a^+ - B y with y the last field)."""
    k, P = mu.size, u.size
    thr = np.zeros(4, dtype=np.int64)
    tot = 0.0
    for j in range(k):
        for l in range(j, k):
            w = mu[j] * mu[l] * (1.0 if j == l else 2.0)
            for mask in range(4):
                coef, nt = w, 0
                for f in range(2):
                    if (mask >> f) & 1:
                        coef *= cc
                        thr[nt] = j if f == 0 else l
                        nt += 1
                    else:
                        coef *= -B
                if coef == 0.0:
                    continue
                part = 0.0
                if cc != 0.0:
                    for a in range(P):
                        if u[a] != 0.0 and sd[a] > 0.0:
                            thr[nt] = a
                            part += cc * u[a] * _signed_moment(R, sd, lab, sg, thr, nt + 1, a, -1, s, ws)
                if B != 0.0:
                    part -= B * _signed_moment(R, sd, lab, sg, thr, nt, P, -1, s, ws)
                tot += coef * part
    return tot


def _normalise(C):
    R, sd = _unit(C)
    lab, sg = _same_fields(R)
    return R, sd, lab, sg


def family(pl):
    """(cc, B) with sigma = cc relu(z) - B z from (sa, sb) with sigma = sa relu(z) + sb relu(-z)."""
    return pl[0] + pl[1], pl[1]


def exact(problem, m, pl, estimate=True):
    """B0, B1 at the overlaps m (flat) for the ReLU family ``pl = (sa, sb)``, shape (2, m.size), and the error
    estimate: the change from the coarser Plackett rule plus 64 eps S (S the scale of the terms, the rounding of
    their sum). ``estimate=False``: the coarser rule alone, no estimate (the ODE's table)."""
    fam = family(pl)
    rule = _NODES if estimate else _COARSE_NODES
    val = np.array([orthant_b(problem, mm, fam, rule) for mm in m]).T.reshape(2, -1)
    if not estimate:
        return val, None
    coarse = np.array([orthant_b(problem, mm, fam, _COARSE_NODES) for mm in m]).T.reshape(2, -1)
    lam, mu = np.abs(problem.lam), np.abs(problem.lam * problem.xi * problem.c_hat / problem.r_hat)
    scale = max(abs(fam[0]), abs(fam[1])) ** 2 * (2 * lam.sum()) ** 2 * mu.sum() ** 2
    return val, np.abs(val - coarse) + 64 * _EPS * scale


def orthant_b(problem, m, family, n_nodes):
    """(B0, B1) at one overlap m for sigma = cc relu - B x (``family = (cc, B)``), Plackett's rule of n_nodes."""
    cc, B = family
    k = problem.k
    C, u, mu, v = _fields(problem, float(m))
    s, ws = _plackett_nodes(n_nodes)
    R, sd, lab, sg = _normalise(C)
    A = _family_moments(R, sd, lab, sg, u, k, cc, B, s, ws)[0]
    b0 = float(mu @ A @ mu)
    nu, w = v * problem.lam, v * v * problem.lam
    if not np.any(nu):
        return b0, b0
    b1 = b0 + 2 * _yyzz(R, sd, lab, sg, mu, nu, cc, B, s, ws)
    for i in np.flatnonzero(w):
        Ci = _given_zero(C, k + i)
        b1 += 2 * cc * w[i] * _INV_SQRT_2PI * _yyx(*_normalise(Ci), mu, u, cc, B, s, ws)
    return b0, b1
