"""Diagnostics of any network (trained or constructed) against the max-margin theory (``predict`` is in predict.py).

One-sided spectra (``numpy.fft.rfft``, bins 0..(p-1)/2) are used throughout: the paper's two-sided
"max normalized power" is at most 1/2 for a real cosine, yet the paper reports ~1 (docs/modular.md).
"""
from __future__ import annotations

import math

import numpy as np

from ..._validate import InvalidParameterError
from .fourier import margin_dft
from .network import _pow2, check_network, class_weighted_margin, margin, norm
from .problem import _check_pk, max_margin

__all__ = ["power_spectrum", "fourier_diagnostics", "circuit_table", "diagnostics"]

_PHASE_POWER = 1e-12  # 1e-12: relative one-sided power below which a phase is undefined


def _pow2_scale(v):
    """Per vector (last axis) the power of 2 that brings max|v| into [1/2, 1) (1 where v = 0): exact scaling."""
    top = np.max(np.abs(v), axis=-1, keepdims=True)
    return np.ldexp(1.0, -np.frexp(np.where(top > 0, top, 1.0))[1])


def _nonzero(owner, U, W):
    """``(U, W)`` checked to be a network with a non-zero weight (its norm divides), and the power of 2 that brings
    max|theta| into [1/2, 1) (every ratio below is scale-free: evaluated there, nothing under/overflows)."""
    U, W = check_network(owner, U, W)
    if not (np.any(U) or np.any(W)):
        raise InvalidParameterError(f"The 'U' and 'W' parameters of {owner} must have a non-zero entry (the norm "
                                    f"||theta|| divides). Got all zeros of shapes {U.shape}, {W.shape} instead.")
    return U, W, _pow2(U, W)


def power_spectrum(v):
    r"""One-sided power spectrum of real vectors over Z_p, bins ``0..(p-1)/2``, normalised to sum 1.

    .. math:: P_v(j) = \frac{|\hat v(j)|^2}{\sum_{l=0}^{(p-1)/2}|\hat v(l)|^2},\qquad
              \hat v(j) = \sum_{x=0}^{p-1} v(x)\,e^{-2\pi i jx/p}

    Parameters
    ----------
    v : ndarray of shape (..., p)
        Real vectors (e.g. ``U`` of shape (m, k, p) or ``W``).

    Returns
    -------
    ndarray of shape (..., (p+1)//2)
        ``max_j P_v(j)`` is the "max normalized power" of Fig. 4.2: 1 for a pure cosine (0 for v = 0).

    Notes
    -----
    Accuracy: absolute error <= 4 (log2 p + 2) eps per bin at any scale (exact power-of-2 rescaling per vector;
    before: all 0 at 1e-170, NaN at 1e200) (measured: 0.062 of the declared bound).
    Regime: any real vectors; the two-sided definition of Section 4.4.1 (Fig. 4.2) caps a cosine at 1/2.

    References
    ----------
    .. [src] [Shi24, Section 4.4.1, Fig. 4.2]; the one-sided form in docs/modular.md.

    Examples
    --------
    >>> x = np.arange(7)
    >>> power_spectrum(np.cos(2 * np.pi * 2 * x / 7 + 0.3)).round(12).tolist()
    [0.0, 0.0, 1.0, 0.0]
    """
    v = np.asarray(v, dtype=np.float64)
    P = np.abs(np.fft.rfft(v, axis=-1)) ** 2
    tot = P.sum(axis=-1, keepdims=True)
    if tot.size and not (1e-200 < tot.min() and tot.max() < 1e200):   # possible under/overflow (or v = 0):
        P = np.abs(np.fft.rfft(v * _pow2_scale(v), axis=-1)) ** 2      # per vector max|v| in [1/2, 1), exact
        tot = P.sum(axis=-1, keepdims=True)
    return np.divide(P, tot, out=np.zeros_like(P), where=tot > 0)


def fourier_diagnostics(U, W):
    r"""Per-neuron Fourier diagnostics: dominant frequency, max normalized power, phase residual, balance.

    .. math:: \zeta_i = \arg\max_{1 \le j \le (p-1)/2}\sum_{v \in \theta_i}|\hat v(j)|^2,\qquad
              r_i = \Big(\sum_{l=1}^k \arg\hat u_{i,l}(\zeta_i) - \arg\hat w_i(\zeta_i)\Big) \bmod 2\pi

    Parameters
    ----------
    U : ndarray of shape (m, k, p)
    W : ndarray of shape (m, p)

    Returns
    -------
    dict
        ``dominant_frequency`` (m,) in 1..(p-1)/2 (bin 0 excluded); ``component_power`` (m, k+1), the max
        normalized one-sided power of each component (u_1..u_k, w); ``max_power`` (m,), its least over a
        neuron's k+1 components (as ``popdyn.simulate`` records it); ``coverage`` ((p-1)/2,) neuron counts per
        frequency;
        ``coverage_fraction`` (frequencies used / (p-1)/2); ``phase_residual`` (m,) in (-pi, pi], NaN where
        a component has no power at zeta_i; ``balance`` (m,) min/max component norm (1 at the optimum).

    Notes
    -----
    Accuracy: ``component_power`` as :func:`power_spectrum` (measured: 0.065 of the declared bound);
    ``phase_residual`` absolute <= 8 (k + 1)(log2 p + 2) eps sqrt(p) max_v ||v||/|v^(zeta)| (measured: 0.017 of the
    declared bound); ``balance`` relative <= 4 p eps (measured: 0.066 of the declared bound); any scale (per-neuron
    power-of-2 rescaling; before: residual NaN at 1e-201).
    Regime: any network. At a max-margin optimum (Thm 4.9) every neuron has power 1, residual 0 and
    balance 1, and every frequency is used (Lemma C.20).

    References
    ----------
    .. [src] [Shi24, Sections 4.4.1-4.5 (Figs. 4.1, 4.2), eq. (C.16) (phase condition), Lemmas C.19-C.20];
       diagnostics in docs/modular.md.

    Examples
    --------
    >>> from popdyn.models.modular import max_margin_network
    >>> d = fourier_diagnostics(*max_margin_network(7, 2))
    >>> d["coverage"].tolist(), float(d["max_power"].min()), float(np.abs(d["phase_residual"]).max()) < 1e-12
    ([8, 8, 8], 1.0, True)
    """
    U, W = check_network("modular.fourier_diagnostics", U, W)
    m, k, p = U.shape
    comps = np.concatenate([U, W[:, None, :]], axis=1)  # (m, k+1, p)
    spec = np.fft.rfft(comps, axis=-1)
    power = np.abs(spec) ** 2
    c = np.ones((m, 1, 1))
    tot = power.sum(axis=(1, 2))
    if not (1e-200 < tot.min() and tot.max() < 1e200):   # possible under/overflow: per neuron, an exact power of 2
        c = _pow2_scale(comps.reshape(m, -1))[:, :, None]  # (powers, phases and the balance are scale-free;
        comps = comps * c                                  # norms are divided back below)
        spec = np.fft.rfft(comps, axis=-1)
        power = np.abs(spec) ** 2
    zeta = 1 + np.argmax(power[:, :, 1:].sum(axis=1), axis=1)
    at = spec[np.arange(m), :, zeta]  # (m, k+1)
    ok = np.abs(at) ** 2 > _PHASE_POWER * power.sum(axis=-1)
    res = np.angle(np.exp(1j * (np.angle(at[:, :k]).sum(axis=1) - np.angle(at[:, k]))))
    norms = np.linalg.norm(comps, axis=-1) / c[:, :, 0]
    coverage = np.bincount(zeta - 1, minlength=(p - 1) // 2)[: (p - 1) // 2]
    component = power_spectrum(comps).max(axis=-1)
    return {"dominant_frequency": zeta, "component_power": component, "max_power": component.min(axis=1),
            "coverage": coverage, "coverage_fraction": float(np.mean(coverage > 0)),
            "phase_residual": np.where(ok.all(axis=1), res, np.nan),
            "balance": np.divide(norms.min(axis=1), norms.max(axis=1), out=np.zeros(m), where=norms.max(axis=1) > 0)}


def circuit_table(U, W):
    r"""Fourier "circuit" summary: one row per frequency zeta of the neurons whose dominant frequency is zeta.

    .. math:: \mathrm{share}(\zeta) = \frac{\sum_{i:\zeta_i=\zeta}\|\theta_i\|^{k+1}}{\|\theta\|_{2,k+1}^{k+1}},
              \qquad \mathrm{dft}(\zeta) = \frac{\mathrm{Re}\,\hat f(\zeta,\dots,\zeta,-\zeta)}{p^k\|\theta\|_{2,k+1}^{k+1}}

    Parameters
    ----------
    U : ndarray of shape (m, k, p)
    W : ndarray of shape (m, p)

    Returns
    -------
    list of dict
        Keys ``zeta``, ``neurons``, ``norm_share``, ``median_power`` (median over the neurons of their
        smallest component power), ``max_abs_phase_residual`` (NaN when no neuron or no phase), ``dft``
        (``gamma*`` at every zeta for a max-margin network, Lemma C.20).

    Notes
    -----
    Accuracy: that of :func:`fourier_diagnostics` and :func:`margin_dft` (normalised); ``norm_share`` relative <= 2
    (k + 1) p eps, at any scale (evaluated at max|theta| in [1/2, 1); before: NaN shares at 1e-200 and 1e200). A
    zero network raises ValueError (nothing to normalise by). Measured: 0.093 of the declared bound (dft).
    Regime: any network; the rows of the explicit construction are identical (``2^(2k-1)`` neurons each).

    References
    ----------
    .. [src] [Shi24, Sections 4.4.1-4.5, Lemmas C.19-C.20 (App. C.8)].

    Examples
    --------
    >>> from popdyn.models.modular import max_margin_network
    >>> [r["neurons"] for r in circuit_table(*max_margin_network(5, 2))]
    [8, 8]
    """
    U, W, c = _nonzero("modular.circuit_table", U, W)
    U, W = U * c, W * c                 # exact: the shares, powers, phases and normalised dft are scale-free
    m, k, p = U.shape
    d = fourier_diagnostics(U, W)
    per = (np.einsum("ijc,ijc->i", U, U) + np.einsum("ic,ic->i", W, W)) ** ((k + 1) / 2)
    dft = margin_dft(U, W).real
    rows = []
    for zeta in range(1, (p - 1) // 2 + 1):
        sel = d["dominant_frequency"] == zeta
        res = np.abs(d["phase_residual"][sel])
        rows.append({"zeta": zeta, "neurons": int(sel.sum()), "norm_share": float(per[sel].sum() / per.sum()),
                     "median_power": float(np.median(d["max_power"][sel])) if sel.any() else np.nan,
                     "max_abs_phase_residual": float(np.max(res)) if res.size and not np.isnan(res).all() else np.nan,
                     "dft": float(dft[zeta - 1])})
    return rows


def diagnostics(U, W, inputs=None):
    r"""Scalar summary of a network against the max-margin theory (the observables of ``predict``).

    .. math:: R = \frac{h(\theta)}{\|\theta\|_{2,k+1}^{k+1}\,\gamma^*} \le 1,\qquad
              R' = \frac{\sum_i\Psi(\theta_i)}{\|\theta\|_{2,k+1}^{k+1}\,\gamma^*} \le 1

    Parameters
    ----------
    U : ndarray of shape (m, k, p)
    W : ndarray of shape (m, p)
    inputs : ndarray of shape (n, k), int, or None
        Inputs of the margin h (e.g. a training split); None: all of D_p.

    Returns
    -------
    dict of float
        ``margin`` h, ``norm`` ``||theta||_{2,k+1}``, ``normalized_margin``, ``margin_ratio`` R,
        ``weighted_ratio`` R', ``dft_ratio`` (min over j of the normalised ``Re f^(j,..,j,-j) / gamma*``),
        ``max_power`` (median over neurons of their ``max_power``), ``coverage`` (fraction of frequencies
        used), ``phase_residual`` (median |residual|), ``balance`` (median). Theory: 1, 1, 1, 1, 1, 0, 1.

    Notes
    -----
    Accuracy: that of :func:`margin` (inf or 0 only past float64), :func:`norm`, :func:`normalized_margin`,
    :func:`class_weighted_margin` and :func:`margin_dft` (normalised; ratios also / gamma*, + 4 eps) and
    :func:`fourier_diagnostics`, at any scale (evaluated at max|theta| in [1/2, 1); before: ZeroDivisionError at
    1e-200, OverflowError at 1e200); the three ratios are capped at their bound 1 (before: weighted_ratio 1 + 4e-16
    at the optimum); ``phase_residual`` NaN when no neuron has a phase; a zero network raises ValueError. Measured:
    0.063 of the declared bound.
    Regime: any network with p an odd prime; R <= 1 always (docs/modular.md); R -> 1 only in the
    max-margin limit (Lemma 4.7, no rate; reference runs give 0.6-0.9 after 1e4 AdamW steps).

    References
    ----------
    .. [src] [Shi24, Definitions 4.3-4.4, Lemma 4.7, Theorem 4.9, Sections 4.4.1-4.5].

    Examples
    --------
    >>> from popdyn.models.modular import max_margin_network
    >>> d = diagnostics(*max_margin_network(5, 3))
    >>> round(d["margin_ratio"], 12), round(d["dft_ratio"], 12), d["coverage"]
    (1.0, 1.0, 1.0)
    """
    U, W, c = _nonzero("modular.diagnostics", U, W)
    m, k, p = U.shape
    gamma = max_margin(*_check_pk("modular.diagnostics", p, k))
    U, W = U * c, W * c                 # exact; f is (k+1)-homogeneous: the ratios are scale-free
    scale = norm(U, W) ** (k + 1)
    h = margin(U, W, inputs)
    f = fourier_diagnostics(U, W)
    res = np.abs(f["phase_residual"])
    with np.errstate(over="ignore"):    # h of the network given (c = 2^j): inf or 0 only past float64
        h_given = float(np.ldexp(h, -(k + 1) * (math.frexp(c)[1] - 1)))
    return {"margin": h_given, "norm": norm(U, W) / c, "normalized_margin": h / scale,
            "margin_ratio": min(h / scale / gamma, 1.0),    # <= 1 for every network: rounding at the optimum
            "weighted_ratio": min(class_weighted_margin(U, W) / scale / gamma, 1.0),    # could pass 1 by an ulp
            "dft_ratio": min(float(margin_dft(U, W).real.min() / gamma), 1.0),
            "max_power": float(np.median(f["max_power"])), "coverage": f["coverage_fraction"],
            "phase_residual": float(np.nanmedian(res)) if not np.isnan(res).all() else np.nan,
            "balance": float(np.median(f["balance"]))}
