"""Diagnostics of any network (trained or constructed, here or elsewhere) against the max-margin theory
(``predict`` is in predict.py).

Spectra are one-sided (``numpy.fft.rfft``) with Parseval's weights: the constant (bin 0) and, for an even p, the
Nyquist bin p/2 once, every other bin (the pair of frequencies +-j) twice, so the bins of a vector sum to its energy
``||v||^2``. The paper's two-sided "max normalized power" is at most 1/2 for a real cosine, yet the paper reports
~1 (docs/modular.md). The constant is no frequency: powers are shares of a vector's centred energy
``||v - mean(v)||^2`` over the bins ``1..floor(p/2)``, so a class-constant offset of ``w`` (which softmax ignores)
moves no power, and a constant vector has power 0 in every bin (its centred energy is 0). Any p >= 2.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..._validate import InvalidParameterError
from .fourier import margin_dft
from .network import (_check_inputs, _check_nonzero, _margin_of, _norm, _unit_scale, class_weighted_margin,
                      resolve_activation, resolve_network)
from .problem import sqrt_ratio

__all__ = ["power_spectrum", "fourier_diagnostics", "circuit_table", "diagnostics"]

_PHASE_POWER = 1e-12  # 1e-12: share of a component's centred power below which its phase at zeta is undefined
_EPS = np.finfo(np.float64).eps


def _constant_level(p):
    """Centred-energy share below which a vector counts as constant: where the declared error of its powers,
    4 (log2 p + 2) eps / sqrt(share), would exceed 1/4 (FFT rounding of its mean alone reaches ~eps^2 log2(p)^2)."""
    return (16 * (math.log2(p) + 2) * _EPS) ** 2


def _check_p(owner, name, p):
    """p (the last axis of ``name``) an integer >= 2, or InvalidParameterError naming p and the parameter."""
    if not p >= 2:
        raise InvalidParameterError(
            f"The 'p' of {owner} (the length of the last axis of {name!r}) must be an integer >= 2 (the vectors are "
            f"functions on Z_p). Got p = {p} instead.")


def _weights(p):
    """Parseval's weights of the one-sided bins 0..floor(p/2): 1 for the constant and (p even) the Nyquist bin p/2,
    2 for every pair +-j, so that ``sum_j weight_j |v^(j)|^2 = p ||v||^2``."""
    w = np.full(p // 2 + 1, 2.0)
    w[0] = 1.0
    if p % 2 == 0:
        w[-1] = 1.0
    return w


def _pow2_scale(v):
    """Per vector (last axis) the power of 2 that brings max|v| into [1/2, 1) (1 where v = 0): exact scaling."""
    top = np.max(np.abs(v), axis=-1, keepdims=True)
    return np.ldexp(1.0, -np.frexp(np.where(top > 0, top, 1.0))[1])


def _spectra(v):
    """|rfft|^2 of real vectors (last axis), each rescaled by an exact power of 2 where the powers could
    under/overflow (the shares are scale-free)."""
    with np.errstate(over="ignore"):                                   # an overflow is caught just below
        power = np.abs(np.fft.rfft(v, axis=-1)) ** 2
    tot = power.sum(axis=-1)
    if tot.size and not (1e-200 < tot.min() and tot.max() < 1e200):   # possible under/overflow (or v = 0)
        power = np.abs(np.fft.rfft(v * _pow2_scale(v), axis=-1)) ** 2
    return power


def _shares(power, p):
    """Weighted bins ``weight_j |v^(j)|^2``, the centred shares (bins 1..floor(p/2); bin 0 and every bin of a
    constant vector 0) and the constant flag of each vector."""
    E = power * _weights(p)
    cen = E[..., 1:].sum(axis=-1, keepdims=True)
    const = (cen <= _constant_level(p) * (E[..., :1] + cen))[..., 0]   # share of ||v - mean||^2 in ||v||^2
    P = np.zeros_like(E)
    P[..., 1:] = np.divide(E[..., 1:], cen, out=np.zeros_like(E[..., 1:]), where=cen > 0)
    P[const] = 0.0
    return E, P, const


def _energy(v):
    """One-sided energy spectrum ``weight_j |v^(j)|^2 / p`` at the scale of v (inf or 0 only where ||v||^2 is)."""
    c = _pow2_scale(v)
    inv = 1.0 / c                                                      # a power of 2: exact
    with np.errstate(over="ignore", under="ignore"):
        return np.abs(np.fft.rfft(v * c, axis=-1)) ** 2 * _weights(v.shape[-1]) / v.shape[-1] * inv * inv


def power_spectrum(v, *, normalize=True):
    r"""One-sided power spectrum of real vectors over Z_p: the share of the centred energy at each frequency.

    .. math:: E_v(j) = \frac{c_j}{p}|\hat v(j)|^2,\qquad \sum_{j=0}^{\lfloor p/2\rfloor}E_v(j) = \|v\|_2^2,\qquad
              P_v(j) = \frac{E_v(j)}{\sum_{l\ge1}E_v(l)} = \frac{E_v(j)}{\|v - \bar v\|_2^2}\ (j \ge 1),
              \qquad P_v(0) = 0

    with :math:`\hat v(j) = \sum_{x=0}^{p-1} v(x)\,e^{-2\pi i jx/p}` and Parseval's weights :math:`c_0 = 1`,
    :math:`c_{p/2} = 1` (p even: the Nyquist bin has no pair), :math:`c_j = 2` otherwise (the pair :math:`\pm j`).

    Parameters
    ----------
    v : ndarray of shape (..., p)
        Real vectors (e.g. ``U`` of shape (m, k, p) or ``W``); p >= 2.
    normalize : bool
        True (default): the centred shares ``P_v``; False: the energies ``E_v`` (bin 0 is ``p mean(v)^2``).

    Returns
    -------
    ndarray of shape (..., p//2 + 1)
        Indexed by frequency j = 0..floor(p/2). normalize=True: bins 1.. sum to 1 and bin 0 (the mean) is 0:
        ``P_v`` is the spectrum of ``v - mean(v)``, so adding a constant to v changes nothing; ``max_j P_v(j)`` is the
        "max normalized power" of Fig. 4.2, 1 for a pure cosine of any phase and offset. A constant v (v = 0
        included) has no centred energy and gets 0 in every bin: it has no frequency (never NaN).
        normalize=False: ``E_v``, which sums to ``||v||^2`` (Parseval).

    Notes
    -----
    Accuracy: normalize=True: absolute error <= 4 (log2 p + 2) eps / sqrt(e) per bin, e = ||v - mean v||^2 / ||v||^2
    the centred share, at any scale (exact power-of-2 rescaling per vector; before: all 0 at 1e-170, NaN at 1e200);
    a vector with e <= (16 (log2 p + 2) eps)^2, where that bound passes 1/4, counts as constant (0 in every bin)
    (measured: 0.053 of the declared bound). normalize=False: absolute error <= 4 (log2 p + 2) eps ||v||^2 per bin
    while ||v||^2 is a normal float (inf or 0 only where ||v||^2 itself over- or underflows) (measured: 0.33 of the
    declared bound).
    Regime: any real vectors and any p >= 2, prime or not (for p composite a frequency j with gcd(j, p) = g > 1 is a
    vector of period p/g). The paper's two-sided formula (Section 4.4.1, Fig. 4.2) caps a cosine at 1/2 and counts
    the mean as a frequency.

    References
    ----------
    .. [src] [Shi24, Section 4.4.1, Fig. 4.2]; the one-sided, centred form in docs/modular.md.

    Examples
    --------
    >>> x = np.arange(7)
    >>> power_spectrum(3 + np.cos(2 * np.pi * 2 * x / 7 + 0.3)).round(12).tolist()
    [0.0, 0.0, 1.0, 0.0]
    >>> power_spectrum(np.ones(5)).tolist()   # a constant has no frequency
    [0.0, 0.0, 0.0]
    >>> power_spectrum(np.array([1.0, -1.0, 1.0, -1.0]) + 2, normalize=False).round(12).tolist()   # Nyquist, once
    [16.0, 0.0, 4.0]
    """
    v = np.asarray(v, dtype=np.float64)
    if v.ndim < 1:
        raise InvalidParameterError(f"The 'v' parameter of modular.power_spectrum must be an array of shape (..., p). "
                                    f"Got shape {v.shape} instead.")
    if not np.all(np.isfinite(v)):
        raise InvalidParameterError(f"The 'v' parameter of modular.power_spectrum must be finite. Got "
                                    f"{int(np.sum(~np.isfinite(v)))} non-finite entries instead.")
    _check_p("modular.power_spectrum", "v", v.shape[-1])
    if not isinstance(normalize, (bool, np.bool_)):
        raise InvalidParameterError(f"The 'normalize' parameter of modular.power_spectrum must be a bool. Got "
                                    f"{normalize!r} instead.")
    return _shares(_spectra(v), v.shape[-1])[1] if normalize else _energy(v)


def fourier_diagnostics(U, W, *, k=None, embedding=None):
    r"""Per-neuron Fourier diagnostics: dominant frequency, max normalized power, phase residual, balance.

    .. math:: P_{i,v} = \max_{1 \le j \le \lfloor p/2\rfloor} P_v(j),\qquad
              \mathrm{power}_i = \min_{v \in \theta_i} P_{i,v},\qquad
              \zeta_i = \arg\max_{1 \le j \le \lfloor p/2\rfloor}\sum_{v \in \theta_i} E_v(j),\qquad
              r_i = \Big(\sum_{l=1}^k \arg\hat u_{i,l}(\zeta_i) - \arg\hat w_i(\zeta_i)\Big) \bmod 2\pi

    with :math:`P_v` the centred one-sided shares and :math:`E_v` the one-sided energies of :func:`power_spectrum`
    (constant maps left out of the sum) and :math:`\theta_i = (u_{i,1}, \dots, u_{i,k}, w_i)` the neuron's maps
    over Z_p. The power and the dominant frequency range over the same bins, the constant (bin 0) never among them.

    Parameters
    ----------
    U : ndarray of shape (m, k, p)
        First layer; (m, p) with ``k`` given: tied across the inputs; with an ``embedding``, (m, k, d) or (m, d).
    W : ndarray of shape (m, p)
        Output layer (a torch ``Linear(m, p)``'s weight, transposed).
    k : int or None
        Number of inputs; needed only for a tied ``U``.
    embedding : ndarray of shape (p, d) or None
        Token embedding E; the maps are then ``u_{i,j}(a) = U[i, j] . E[a]``.

    Returns
    -------
    dict
        ``dominant_frequency`` (m,) in 1..floor(p/2), 0 for a neuron without a frequency (every map constant);
        ``component_power`` (m, k+1), the max normalized power of each map (u_1..u_k, w), bin 0 excluded, 0 for a
        constant map; ``max_power`` (m,), its least over the neuron's k+1 maps (as ``popdyn.simulate`` records
        it): in [1/floor(p/2), 1] for a neuron whose maps all carry a frequency, 0 (the sentinel, never NaN) when
        one of them is constant; ``constant_fraction`` (m, k+1), the share ``p mean(v)^2 / ||v||^2`` of each map
        in its constant (1 for v = 0, which counts as constant); ``coverage`` (floor(p/2),) neuron counts per
        frequency; ``coverage_fraction`` (frequencies used / floor(p/2)); ``phase_residual`` (m,) in (-pi, pi], NaN
        where a map has no power at zeta_i (no phase to read); ``balance`` (m,) min/max norm of the raw maps (1 at
        the optimum).

    Notes
    -----
    Accuracy: ``component_power`` as :func:`power_spectrum` (measured: 0.052 of the declared bound);
    ``phase_residual`` absolute <= 8 (k + 1)(log2 p + 2) eps sqrt(p) max_v ||v||/|v^(zeta)| (measured: 0.017 of the
    declared bound); ``balance`` relative <= 4 p eps (measured: 0.066 of the declared bound); any scale (per-neuron
    power-of-2 rescaling; before: residual NaN at 1e-201).
    Regime: any network and any p >= 2 (the DFT over Z_p needs no primality: for composite p a neuron at a
    frequency zeta with gcd(zeta, p) = g > 1 reads the inputs mod p/g only; for even p the Nyquist bin p/2 is a
    frequency of its own, real, with phase 0 or pi). The power is that of each map less its mean: the constant of
    a map is no frequency (in ``w`` a class-constant logit shift that softmax ignores, in ``u`` a bias of the
    neuron; ``constant_fraction`` reports it). At a max-margin optimum (Thm 4.9, p odd) every neuron has power 1,
    residual 0 and balance 1, and every frequency is used (Lemma C.20).

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
    >>> d = fourier_diagnostics(np.ones((1, 2, 5)), np.ones((1, 5)))   # a constant neuron: no frequency
    >>> d["dominant_frequency"].tolist(), d["max_power"].tolist()
    ([0], [0.0])
    """
    net = resolve_network("modular.fourier_diagnostics", U, W, k, embedding)
    U, W = net.U, net.W
    m, k, p = U.shape
    _check_p("modular.fourier_diagnostics", "W", p)
    comps = np.concatenate([U, W[:, None, :]], axis=1)  # (m, k+1, p)
    c = np.ones((m, 1, 1))
    tot = np.einsum("ijc,ijc->i", comps, comps)
    if not (1e-200 < tot.min() and tot.max() < 1e200):   # possible under/overflow: per neuron, an exact power of 2
        c = _pow2_scale(comps.reshape(m, -1))[:, :, None]  # (powers, phases and the balance are scale-free;
        comps = comps * c                                  # norms are divided back below)
    spec = np.fft.rfft(comps, axis=-1)
    E, P, const = _shares(np.abs(spec) ** 2, p)            # (m, k+1, p//2+1) twice, (m, k+1)
    none = const.all(axis=1)
    summed = np.where(const[:, :, None], 0.0, E[:, :, 1:]).sum(axis=1)
    zeta = np.where(none, 0, 1 + np.argmax(summed, axis=1))
    at = spec[np.arange(m), :, zeta]  # (m, k+1)
    ok = (E[np.arange(m), :, zeta] > _PHASE_POWER * E[:, :, 1:].sum(axis=-1)) & ~const
    res = np.angle(np.exp(1j * (np.angle(at[:, :k]).sum(axis=1) - np.angle(at[:, k]))))
    norms = np.linalg.norm(comps, axis=-1) / c[:, :, 0]
    energy = E.sum(axis=-1)
    n_freq = p // 2
    coverage = np.bincount(zeta[zeta > 0] - 1, minlength=n_freq)[:n_freq]
    component = P[:, :, 1:].max(axis=-1)
    return {"dominant_frequency": zeta, "component_power": component, "max_power": component.min(axis=1),
            "constant_fraction": np.divide(E[:, :, 0], energy, out=np.ones((m, k + 1)), where=energy > 0),
            "coverage": coverage, "coverage_fraction": float(np.mean(coverage > 0)),
            "phase_residual": np.where(ok.all(axis=1) & (zeta > 0), res, np.nan),
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
        One row per frequency zeta = 1..floor(p/2). Keys ``zeta``, ``neurons``, ``norm_share``, ``median_power``
        (median over the neurons of their ``max_power``, neurons with a constant map left out; 0 when none is
        left), ``max_abs_phase_residual`` (largest over the neurons with a phase; NaN when none has one), ``dft``
        (``gamma*`` at every zeta for a max-margin network, p odd, Lemma C.20).

    Notes
    -----
    Accuracy: that of :func:`fourier_diagnostics` and :func:`margin_dft` (normalised); ``norm_share`` relative <= 2
    (k + 1) p eps, at any scale (evaluated at max|theta| in [1/2, 1); before: NaN shares at 1e-200 and 1e200). A
    zero network raises ValueError (nothing to normalise by). Measured: 0.093 of the declared bound (dft).
    Regime: the paper's network (4.2) (x^k, untied, no embedding: ``norm_share`` uses ``||theta_i||^{k+1}``) and any
    p >= 2; the rows of the explicit construction are identical (``2^(2k-1)`` neurons each).

    References
    ----------
    .. [src] [Shi24, Sections 4.4.1-4.5, Lemmas C.19-C.20 (App. C.8)].

    Examples
    --------
    >>> from popdyn.models.modular import max_margin_network
    >>> [r["neurons"] for r in circuit_table(*max_margin_network(5, 2))]
    [8, 8]
    """
    owner = "modular.circuit_table"
    net = resolve_network(owner, U, W)
    _check_nonzero(owner, net)
    net = _unit_scale(net)[0]           # exact: the shares, powers, phases and normalised dft are scale-free
    U, W = net.U, net.W
    m, k, p = U.shape
    d = fourier_diagnostics(U, W)
    per = (np.einsum("ijc,ijc->i", U, U) + np.einsum("ic,ic->i", W, W)) ** ((k + 1) / 2)
    dft = margin_dft(U, W).real
    rows = []
    for zeta in range(1, p // 2 + 1):
        sel = d["dominant_frequency"] == zeta
        res = np.abs(d["phase_residual"][sel])
        rows.append({"zeta": zeta, "neurons": int(sel.sum()), "norm_share": float(per[sel].sum() / per.sum()),
                     "median_power": _median_power(d["max_power"][sel]),
                     "max_abs_phase_residual": float(np.nanmax(res)) if not np.isnan(res).all() else np.nan,
                     "dft": float(dft[zeta - 1])})
    return rows


def _nanmedian(x):
    """Median of the non-NaN values (NaN when there are none), without numpy's all-NaN warning."""
    x = np.asarray(x, dtype=np.float64)
    x = x[~np.isnan(x)]
    return float(np.median(x)) if x.size else np.nan


def _median_power(power, axis=-1):
    """Median of per-neuron ``max_power`` over the neurons with a frequency in every map (power > 0; the sentinel 0
    of a neuron with a constant map is left out), 0 where no neuron has one. The one median of ``diagnostics``,
    ``circuit_table`` and ``popdyn.simulate``."""
    x = np.asarray(power, dtype=np.float64)
    with warnings.catch_warnings():                                    # numpy's all-NaN / empty warnings
        warnings.simplefilter("ignore", RuntimeWarning)
        med = np.nanmedian(np.where(x > 0, x, np.nan), axis=axis)
    out = np.where(np.isnan(med), 0.0, med)
    return float(out) if out.ndim == 0 else out


def diagnostics(U, W, inputs=None, *, activation="x^k", degree=None, k=None, embedding=None):
    r"""Scalar summary of a network against the max-margin theory (the observables of ``predict``).

    .. math:: \bar h = \frac{h(\theta)}{\|\theta\|_{2,L}^{L}},\qquad
              R = \frac{h(\theta)}{\|\theta\|_{2,k+1}^{k+1}\,\gamma^*} \le 1,\qquad
              R' = \frac{\sum_i\Psi(\theta_i)}{\|\theta\|_{2,k+1}^{k+1}\,\gamma^*} \le 1

    Parameters
    ----------
    U : ndarray of shape (m, k, p)
        First layer; (m, p) with ``k`` given: tied across the inputs; with an ``embedding``, (m, k, d) or (m, d).
    W : ndarray of shape (m, p)
    inputs : ndarray of shape (n, k), int, or None
        Inputs of the margin h (e.g. a training split); None: all of D_p.
    activation : str or callable
        ``"x^k"`` (the paper's), a name of :mod:`popdyn.activations` or a callable (see :func:`margin`).
    degree : float or None
        Homogeneity degree of a callable activation (see :func:`normalized_margin`).
    k : int or None
        Number of inputs; needed only for a tied ``U``.
    embedding : ndarray of shape (p, d) or None
        Token embedding E (rows are tokens).

    Returns
    -------
    dict of float
        Always: ``margin`` h (the network evaluated on every input), ``max_power`` (median over neurons of their
        ``max_power``, neurons with a constant map left out; 0 when every neuron has one), ``coverage`` (fraction
        of frequencies used), ``phase_residual`` (median |residual| over the neurons with a phase; NaN when none
        has one), ``balance`` (median). A homogeneous
        activation adds ``degree`` L (f(t theta) = t^L f(theta)), ``norm`` ``||theta||_{2,L}`` (:func:`norm`, each
        parameter once) and ``normalized_margin`` ``h / ||theta||_{2,L}^L``; a non-homogeneous one has no
        scale-free margin and gets h alone. The paper's network (x^k, untied, no embedding) with p odd adds
        ``margin_ratio`` R,
        ``weighted_ratio`` R' and ``dft_ratio`` (min over j of the normalised ``Re f^(j,..,j,-j) / gamma*``), each
        capped at its bound 1. Theory: R, R', dft_ratio, max_power, coverage, balance 1 and phase_residual 0.

    Notes
    -----
    Accuracy: that of :func:`margin` (inf or 0 only past float64), :func:`norm`, :func:`normalized_margin`,
    :func:`class_weighted_margin` and :func:`margin_dft` (normalised; ratios also / gamma*, + 4 eps) and
    :func:`fourier_diagnostics`, at any scale (evaluated at max|theta| in [1/2, 1) by an exact power-of-2
    rescaling, the margin of the network given by ldexp; before: ZeroDivisionError at 1e-200, OverflowError at
    1e200); the three ratios are capped at their bound 1 (before: weighted_ratio 1 + 4e-16 at the optimum);
    ``phase_residual`` NaN when no neuron has a phase; a network without a non-zero parameter raises ValueError.
    Measured: 0.063 of the declared bound.
    Regime: any network and any p >= 2; the margin is over all p^k inputs (``inputs=None``, the domain D_p of
    Def. 4.3) or over the inputs given, as :func:`margin` (cost there). gamma* (Thm 4.9) and R <= 1 hold for every
    odd p, prime or not (the derivation in docs/modular.md uses only Plancherel and the vanishing sum of the p-th
    roots of unity); an even p has a Nyquist frequency p/2 on which one neuron's class-weighted margin reaches
    2^((k-1)/2) gamma*, and the other activations, tied layers and embeddings have no gamma*: no ratios for them.
    R -> 1 only in the max-margin
    limit (Lemma 4.7, no rate; reference runs give 0.6-0.9 after 1e4 AdamW steps). The Fourier diagnostics read
    the maps ``u_{i,j}`` over Z_p (through E with an embedding).

    References
    ----------
    .. [src] [Shi24, Definitions 4.3-4.4, Lemma 4.7, Theorem 4.9, Sections 4.4.1-4.5]; other activations, tied
       layers and embeddings in docs/modular.md.

    Examples
    --------
    >>> from popdyn.models.modular import max_margin_network
    >>> d = diagnostics(*max_margin_network(5, 3))
    >>> round(d["margin_ratio"], 12), round(d["dft_ratio"], 12), d["coverage"]
    (1.0, 1.0, 1.0)
    >>> sorted(diagnostics(*max_margin_network(5, 3), activation="tanh"))   # not homogeneous: h alone
    ['balance', 'coverage', 'margin', 'max_power', 'phase_residual']
    """
    owner = "modular.diagnostics"
    net = resolve_network(owner, U, W, k, embedding)
    act = resolve_activation(owner, activation, degree, net)
    m, k, p = net.U.shape
    _check_p(owner, "W", p)
    inputs = None if inputs is None else _check_inputs(owner, inputs, k, p)
    _check_nonzero(owner, net)
    scaled, c = _unit_scale(net)
    f = fourier_diagnostics(net.first, net.W, k=k, embedding=net.E)
    res = np.abs(f["phase_residual"])
    if act.L is None:
        out = {"margin": _margin_of(owner, net, act, inputs)}
    else:                                          # f and ||theta||^L both L-homogeneous: ratios at the scaled net
        h, n = _margin_of(owner, scaled, act, inputs), _norm(scaled, act.L)
        scale = n ** act.L
        e = (1 - math.frexp(c)[1]) * act.L         # h of the network given is h / c^L = h 2^e (c = 2^(1 - frexp))
        with np.errstate(over="ignore"):           # inf or 0 only past float64; exact for an integer L
            given = float(np.ldexp(h * 2.0 ** (e - math.floor(e)), math.floor(e)))
        out = {"margin": given, "degree": float(act.L), "norm": n / c, "normalized_margin": h / scale}
        if act.fn is None and not net.tied and net.E is None and p % 2 == 1:
            gamma = _gamma_star(p, k)              # the ratios are <= 1 for every network: capped at rounding
            out.update(margin_ratio=min(h / scale / gamma, 1.0),
                       weighted_ratio=min(class_weighted_margin(scaled.U, scaled.W) / scale / gamma, 1.0),
                       dft_ratio=min(float(margin_dft(scaled.U, scaled.W).real.min() / gamma), 1.0))
    return {**out, "max_power": _median_power(f["max_power"]), "coverage": f["coverage_fraction"],
            "phase_residual": _nanmedian(res), "balance": float(np.median(f["balance"]))}


def _gamma_star(p, k):
    """gamma*(p, k) of :func:`max_margin` for any odd p >= 3 (the formula needs no primality)."""
    return sqrt_ratio(4 * math.factorial(k) ** 2, (2 * k + 2) ** (k + 1) * (p - 1) ** 2 * p ** (k - 1))
