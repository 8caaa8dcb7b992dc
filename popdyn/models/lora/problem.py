"""The LoRA fine-tuning problems (Dayi & Chen, [Dayi25]): base features G, head lam, teacher c, student c_hat.

:class:`Problem` is the paper's setting (u and u_hat orthogonal to span W, Assumption A2);
:class:`GeneralProblem` adds the teacher's overlaps ``p = W u`` with the features (Figs 4-5). Each declares
its run options (``options``: what ``popdyn.predict`` and ``popdyn.simulate`` accept), its observables and
a small ``example()``.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ... import activations
from ..._options import Observable, Option, OptionTable, common, options_table
from ..._validate import FiniteArray, Integer, Interval, InvalidParameterError, Options, as_int, check, validate

__all__ = ["Problem", "GeneralProblem", "overlaps"]

_cache = weakref.WeakKeyDictionary()  # problem -> {key: value}: B0/B1 tables, splines, grid nodes, regime pieces
_UNIT_TOL = 1e-10  # 1e-10: unit-norm check for c, c_hat, diag(G); far above float64 rounding
_N_TABLE = 1 << 13  # RQMC size of the B0/B1 table of the corrected ODE when G != I: B0 rel. SE ~ 1 % (relu, k = 8)
_N_GRID = 8193  # nodes cos(pi j/8192) of predict's method "grid": error <= ~1e-7 in m, O(n_grid^-2) (tests)
_N_MC = 1 << 12  # scrambled-Sobol points of the general normalisation term: ~1 % spread over scrambles (relu, k = 8)
_RANK_TOL = 1e-10  # eigenvalues of the Gram of (W, u, u_hat) below this (times its scale) are rank deficiency

_OWNER = "lora.GeneralProblem"
_POSITIVE = Interval(0, np.inf, closed="neither")
_BOOL = Options((True, False))
_LR_C_HELP = "step size of c_hat when joint; None is lr, 0 keeps c_hat frozen"


def _run_options(m0_help, *extra, n_mc, n_mc_help, rtol):
    """The options both LoRA problems share (``extra`` after the matched ones), then the common run options."""
    return options_table(
        Option("d", Integer(1), help="input dimension d, at least k + 3", match=True),
        Option("lr", _POSITIVE, help="SGD step size eta (the paper's delta/d)", match=True),
        Option("steps", Integer(1), help="number of online SGD steps", match=True),
        Option("m0", Interval(-1, 1), None, m0_help, match=True),
        *extra,
        Option("convention", Options(("corrected", "paper")), "corrected",
               "corrected adds the normalisation drift of finite lr*d to the paper's population recursion (Section C.1), paper drops it",
               calls=("predict",)),
        Option("n_points", Integer(2), 200, "number of recorded step numbers on [0, steps]"),
        Option("n_mc", Integer(2), n_mc, n_mc_help, calls=("predict",)),
        Option("seed", Integer(0), 0, "first seed of the simulation's runs, and of predict's Monte Carlo draws"),
        Option("rtol", Interval(0, 1, closed="neither"), rtol[0], rtol[1], calls=("predict",)),
        Option("batch", Integer(1), 1, "fresh samples per SGD step (gradient averaged); 1 is the paper's online "
               "SGD, which predict describes", calls=("simulate",)),
        *common("seeds", "device", "dtype", "progress"))


_OBSERVABLES = {
    "m": Observable("overlap <u_hat, u>"),
    "loss": Observable("population loss"),
    "c_overlap": Observable("cosine of c_hat and c"),
}


@dataclass(frozen=True, eq=False)
class Problem:
    r"""Population LoRA problem: teacher ``lam^T s(V x)``, student ``lam^T s(V_hat x)``, x ~ N(0, I_d).

    .. math:: v_i = \frac{w_i + \xi c_i u}{r_i},\quad \hat v_j = \frac{w_j + \xi \hat c_j \hat u}{\hat r_j},
              \quad r_i^2 = 1 + \xi^2 c_i^2

    Under A1-A2 (unit ``w_i``, ``u, u_hat`` orthogonal to span W) every population quantity depends on
    W only through its Gram matrix ``G = W W^T``, so the problem carries ``G`` and no dimension d.

    Parameters
    ----------
    G : ndarray of shape (k, k)
        Gram matrix of the pretrained features: symmetric, PSD, unit diagonal (A1).
    lam : ndarray of shape (k,)
        Frozen second layer.
    c : ndarray of shape (k,)
        Teacher direction, unit norm (A3 takes entries +-1/sqrt(k)).
    c_hat : ndarray of shape (k,)
        Frozen student direction, unit norm.
    xi : float
        Scale of the rank-one update ``Delta = xi c u^T``, in (0, inf).
    activation : str or Activation
        sigma; a name for :func:`popdyn.activations.get` or an ``Activation``.
    normalisation : {"N1", "N0"}
        How the fine-tuned neurons are scaled (not the SGD step's normalisation of u_hat). "N1": unit
        neurons ``s(<v_i, x>)`` with ``v_i = (w_i + xi c_i u)/||w_i + xi c_i u||`` (the paper's target model
        (11) of Appendix D.1, used by every proof and Prop. 4; [Dayi25, eq. (11)]). "N0": the rows of
        ``W* = W + xi c u^T`` as they stand, ``s(<w_i + xi c_i u, x>)`` (main text, [Dayi25, eqs. (2)-(3)]), which
        equals N1 with ``s(r z)``; it needs quantised c, c_hat so that every ``r_i`` is equal (derived in
        docs/lora.md).

    References
    ----------
    .. [src] [Dayi25, Sections 1.1-1.2 (setting, Assumptions 1-4), App. D.1 (N1)].
    """
    G: np.ndarray
    lam: np.ndarray
    c: np.ndarray
    c_hat: np.ndarray
    xi: float
    activation: object = "relu"
    normalisation: str = "N1"

    _constraints = {
        "G": FiniteArray(2),
        "lam": FiniteArray(1),
        "c": FiniteArray(1),
        "c_hat": FiniteArray(1),
        "xi": Interval(0, np.inf, closed="neither"),
        "normalisation": Options(("N1", "N0")),
    }

    options: ClassVar[OptionTable] = _run_options(
        "initial overlap <u_hat_0, u>, exact on every seed; None is sign(h(0)) 0.5/sqrt(d)",
        Option("method", Options(("grid", "solve_ivp")), "grid",
               "grid flows the drift tabulated on n_grid nodes exactly; solve_ivp integrates the exact drift "
               "(LSODA)", calls=("predict",)),
        Option("n_grid", Integer(3), _N_GRID, "nodes of method grid, clustered at m = +-1", calls=("predict",)),
        Option("joint", _BOOL, False, "also train c_hat by plain SGD with step lr_c (Figs 2-4); predict "
               "describes frozen c_hat (lora.general predicts joint training)", calls=("simulate",)),
        Option("lr_c", Interval(0, np.inf, closed="left"), None, _LR_C_HELP, calls=("simulate",)),
        n_mc=_N_TABLE, n_mc_help="Monte Carlo size of the B0/B1 table for G other than I (G = I uses quadrature)",
        rtol=(1e-8, "relative tolerance of method solve_ivp (atol = 1e-3 rtol)"))
    observables: ClassVar[dict] = _OBSERVABLES
    # measured with example() and simulate(seeds=2, seed=0 or 2): m sup_gap 0.041, 0.039; loss mean_gap 0.106,
    # 0.104 (the online loss of single samples is noisy: mean, not sup); bounds about 2x the worst
    example_agreement: ClassVar[dict] = {"m": ("sup_gap", 0.08), "loss": ("mean_gap", 0.2)}

    def __post_init__(self):
        validate(self)
        object.__setattr__(self, "activation", activations.get(self.activation))
        k, owner = self.k, "lora.Problem"
        for name in ("G", "c", "c_hat"):
            a = getattr(self, name)
            if a.shape[0] != k or (name == "G" and a.shape != (k, k)):
                raise InvalidParameterError(
                    f"The {name!r} parameter of {owner} must have shape {(k, k) if name == 'G' else (k,)} "
                    f"(k = len(lam) = {k}). Got shape {a.shape} instead.")
        for name in ("c", "c_hat"):
            nrm = float(np.linalg.norm(getattr(self, name)))
            if not abs(nrm - 1) <= _UNIT_TOL:
                raise InvalidParameterError(
                    f"The {name!r} parameter of {owner} must be a unit vector (||{name}|| = 1). "
                    f"Got norm {nrm!r} instead.")
        G = self.G
        if not (np.allclose(G, G.T, atol=_UNIT_TOL) and np.allclose(np.diag(G), 1, atol=_UNIT_TOL)):
            raise InvalidParameterError(
                f"The 'G' parameter of {owner} must be symmetric with unit diagonal (A1: ||w_i|| = 1). Got {G!r} instead.")
        if np.linalg.eigvalsh((G + G.T) / 2)[0] < -1e-8 * k:  # 1e-8 k: eigvalsh rounding of a Gram matrix
            raise InvalidParameterError(f"The 'G' parameter of {owner} must be positive semi-definite (a Gram matrix).")
        if self.normalisation == "N0" and not self.quantised:
            raise InvalidParameterError(
                f"The 'normalisation' parameter of {owner} may be 'N0' only with c, c_hat in {{+-1/sqrt(k)}}^k. Got 'N0' instead.")

    def __repr__(self):
        f = lambda a: repr(a.tolist())  # shortest round-trip repr of each float; 10x array2string(precision=17)
        return (f"lora.Problem(G=np.array({f(self.G)}), lam=np.array({f(self.lam)}), c=np.array({f(self.c)}), "
                f"c_hat=np.array({f(self.c_hat)}), xi={self.xi!r}, activation={self.activation.name!r}, "
                f"normalisation={self.normalisation!r})")

    # ---- derived quantities -------------------------------------------------------------------
    @property
    def k(self):
        """Width k (number of neurons)."""
        return self.lam.shape[0]

    @property
    def quantised(self):
        """True when c and c_hat lie in {+-1/sqrt(k)}^k (Assumption A3)."""
        q = 1 / np.sqrt(self.k)
        return bool(np.all(np.abs(np.abs(self.c) - q) <= _UNIT_TOL) and np.all(np.abs(np.abs(self.c_hat) - q) <= _UNIT_TOL))

    @property
    def r(self):
        """Per-neuron teacher norms ``r_i = sqrt(1 + xi^2 c_i^2)`` (all ``sqrt(1 + xi^2/k)`` under A3)."""
        return np.sqrt(1 + self.xi**2 * self.c**2)

    @property
    def r_hat(self):
        """Per-neuron student norms ``sqrt(1 + xi^2 c_hat_j^2)``."""
        return np.sqrt(1 + self.xi**2 * self.c_hat**2)

    @property
    def sigma(self):
        """The activation of the N1 formulas: sigma itself (N1), or ``sigma(r z)`` (N0)."""
        if self.normalisation == "N0":
            return self.activation.rescaled(float(np.sqrt(1 + self.xi**2 / self.k)))
        return self.activation

    # ---- constructors -------------------------------------------------------------------------
    @classmethod
    def orthonormal(cls, k, xi, activation="relu", seed=0, *, lam=None, normalisation="N1"):
        """Orthonormal features (A4, G = I_k), c and c_hat drawn from Unif{+-1/sqrt(k)}^k (A3).

        ``lam`` defaults to all ones. The same ``seed`` gives the same problem.

        Parameters
        ----------
        k : int
            Number of fine-tuned neurons (the rank of the features), >= 1.
        xi : float
            Scale of the rank-one update, > 0.
        seed : int
            Seed of the signs of c and c_hat; the same seed gives the same problem.
        """
        k = as_int("lora.Problem.orthonormal", "k", k, low=1)
        rng = np.random.default_rng(seed)
        c, c_hat = rng.choice([-1.0, 1.0], size=(2, k)) / np.sqrt(k)
        lam = np.ones(k) if lam is None else lam
        return cls(np.eye(k), lam, c, c_hat, xi, activation, normalisation)

    @classmethod
    def random_features(cls, k, xi, activation="relu", seed=0, *, d_w=None, lam=None, normalisation="N1"):
        """Features w_i uniform on the sphere of R^{d_w} (d_w = 4k by default): near-orthogonal G.

        Parameters
        ----------
        k : int
            Number of fine-tuned neurons, >= 1.
        xi : float
            Scale of the rank-one update, > 0.
        seed : int
            Seed of the features and of the signs of c and c_hat.
        d_w : int
            Dimension the features are drawn in (4k by default); smaller d_w, larger overlaps.
        """
        k = as_int("lora.Problem.random_features", "k", k, low=1)
        d_w = 4 * k if d_w is None else as_int("lora.Problem.random_features", "d_w", d_w, low=1)
        rng = np.random.default_rng(seed)
        W = rng.standard_normal((k, d_w))
        W /= np.linalg.norm(W, axis=1, keepdims=True)
        G = W @ W.T
        np.fill_diagonal(G, 1.0)
        c, c_hat = rng.choice([-1.0, 1.0], size=(2, k)) / np.sqrt(k)
        lam = np.ones(k) if lam is None else lam
        return cls(G, lam, c, c_hat, xi, activation, normalisation)

    @classmethod
    def example(cls):
        """A small instance and options that ``popdyn.predict`` and ``popdyn.simulate`` both take: ReLU,
        orthonormal k = 4, xi = 1, d = 200, delta = lr d = 0.2, 10 d steps (m from 0.035 to 0.82 in size),
        21 recorded steps (100 online losses per recorded step).

        Examples
        --------
        >>> problem, options = Problem.example()
        >>> problem.k, options["d"]
        (4, 200)
        """
        return (cls.orthonormal(k=4, xi=1.0, activation="relu", seed=0),
                dict(d=200, lr=0.2 / 200, steps=2000, n_points=21))


@dataclass(frozen=True, eq=False)
class GeneralProblem:
    r"""A LoRA problem whose teacher direction u has overlaps ``p = W u`` with the features (A2 fails).

    .. math:: \alpha = \lVert\Pi_W u\rVert = \sqrt{p^\top G^{+} p},\qquad
              v_i = \frac{w_i + \xi c_i u}{r_i},\quad \hat v_j = \frac{w_j + \xi\hat c_j\hat u}{\hat r_j}

    The scales ``r_i = sqrt(1 + xi^2 c_i^2)`` of normalisation N1 are kept (as in the simulation), so the
    neurons are no longer unit vectors when ``p`` or ``q = W u_hat`` is not 0.

    Parameters
    ----------
    problem : Problem
        G, lam, c, c_hat, xi, activation; normalisation "N1".
    p : ndarray of shape (k,)
        ``<w_i, u>``; must lie in the range of G with ``p^T G^+ p < 1`` (u keeps a part orthogonal to W).
    project : bool
        True: the paper's algorithm ([Dayi25, eq. (4), Section 2]) projects the gradient on span(W)^perp, u_hat stays
        orthogonal to W (``q = 0``) and ``|m| <= sqrt(1 - alpha^2)``. False: Fig. 4's variant
        ([Dayi25, App. B]), u_hat moves on the whole sphere.

    Notes
    -----
    Regime: any ``alpha`` in [0, 1); ``p = 0`` is Assumption A2, where every quantity reduces to
    :mod:`popdyn.models.lora.theory` (tests).

    References
    ----------
    .. [src] [Dayi25, App. B, Figs 4-5] (u not orthogonal to W), [Dayi25, Assumption 2]; theory derived in docs/lora.md.
    """
    #: what the CLI and the property suite read; ``__post_init__`` checks them (and p's range and norm)
    _constraints = {"p": FiniteArray(1), "project": Options((True, False))}

    problem: Problem
    p: np.ndarray
    project: bool = True

    options: ClassVar[OptionTable] = _run_options(
        "initial <u_hat_0, u>, exact on every seed; None is s 0.5/sqrt(d), s the sign of the population "
        "dm/dt at (m, q) = 0 (projected: |m0| <= sqrt(1 - alpha^2))",
        Option("q0", FiniteArray(1), None, "initial W u_hat, exact on every seed (project=False only); None is 0",
               match=True),
        Option("joint", _BOOL, False, "also train c_hat by plain SGD with step lr_c (Fig. 4)", match=True),
        Option("lr_c", Interval(0, np.inf, closed="left"), None, _LR_C_HELP, match=True),
        Option("method", Options(("ode", "diffusion")), "ode",
               "ode: the population ODE of (m, q, c_hat) (d -> infinity); diffusion: plus the O(lr^2 d) fluctuations "
               "of the SGD step, means over Euler-Maruyama paths (docs/lora.md)", calls=("predict",)),
        Option("paths", Integer(1), 16, "paths of method diffusion", calls=("predict",)),
        Option("dtau", Interval(0, np.inf, closed="neither"), 0.1,
               "largest Euler-Maruyama step of method diffusion, in tau = t/d", calls=("predict",)),
        n_mc=_N_MC, n_mc_help="Monte Carlo size of the normalisation term (scrambled Sobol draws)",
        rtol=(1e-6, "relative tolerance of the ODE solver (RK45; atol = 1e-3 rtol)"))
    observables: ClassVar[dict] = {**_OBSERVABLES, "q_norm": Observable("norm of u_hat in span W")}
    # measured with example() and simulate(seeds=2, seed=0 or 2): m sup_gap 0.038, 0.027; loss mean_gap 0.118,
    # 0.120 (the online loss of single samples is noisy: mean, not sup); bounds about 2x the worst
    example_agreement: ClassVar[dict] = {"m": ("sup_gap", 0.08), "loss": ("mean_gap", 0.25)}

    def __post_init__(self):
        if not isinstance(self.problem, Problem):
            raise InvalidParameterError(f"The 'problem' parameter of {_OWNER} must be a lora.Problem. "
                                        f"Got {self.problem!r} instead.")
        if self.problem.normalisation != "N1":
            raise InvalidParameterError(f"The 'problem' parameter of {_OWNER} must have normalisation 'N1'. "
                                        f"Got {self.problem.normalisation!r} instead.")
        p = np.asarray(self.p, dtype=np.float64)
        if p.shape != (self.problem.k,) or not np.all(np.isfinite(p)):
            raise InvalidParameterError(f"The 'p' parameter of {_OWNER} must be a finite array of shape "
                                        f"({self.problem.k},). Got {self.p!r} instead.")
        object.__setattr__(self, "p", p)
        if not isinstance(self.project, (bool, np.bool_)):
            raise InvalidParameterError(f"The 'project' parameter of {_OWNER} must be a bool. Got {self.project!r}.")
        G = self.problem.G
        resid = float(np.linalg.norm(G @ (self.G_pinv @ p) - p))
        if resid > 1e-8 * (1 + np.linalg.norm(p)) or not self.alpha < 1:
            raise InvalidParameterError(
                f"The 'p' parameter of {_OWNER} must be W u for a unit u with a part outside span W: p in the "
                f"range of G and alpha^2 = p^T G^+ p in [0, 1). Got alpha = {self.alpha!r} "
                f"(range residual {resid:.3g}) instead.")
        act = self.problem.activation
        if act.name != "relu" and act._family.kinks:
            raise InvalidParameterError(f"The 'problem' parameter of {_OWNER} must have relu or a smooth "
                                        f"activation (2-D Gauss-Hermite). Got {act.name!r} instead.")

    @property
    def k(self):
        return self.problem.k

    @property
    def G_pinv(self):
        """Pseudo-inverse of G (cached)."""
        return _cached(self.problem, "G_pinv", lambda: np.linalg.pinv(self.problem.G, hermitian=True))

    @property
    def alpha(self):
        r""":math:`\alpha = \lVert\Pi_W u\rVert = \sqrt{p^\top G^+ p}` (Fig. 5's parameter, [Dayi25, App. B])."""
        return float(np.sqrt(max(self.p @ self.G_pinv @ self.p, 0.0)))

    @classmethod
    def from_alpha(cls, problem, alpha, seed=0, *, project=True):
        r"""Fig. 5's teacher: u = alpha u_1 + sqrt(1 - alpha^2) u_2, u_1 uniform on the unit sphere of span W.

        .. math:: p = W u = \alpha\,\frac{z}{\sqrt{z^\top G^+ z}},\qquad z \sim N(0, G)

        (with ``g ~ N(0, I_d)``, ``W g ~ N(0, G)`` and ``||Pi_W g||^2 = (Wg)^T G^+ (Wg)``).

        Parameters
        ----------
        problem : Problem
            The LoRA problem whose features W the teacher u is placed against (from Python: a lora.Problem).
        alpha : float
            ``||Pi_W u||`` in [0, 1).
        seed : int
            Seed of u_1; the same seed gives the same p.
        project : bool
            As the class parameter.

        Returns
        -------
        GeneralProblem

        References
        ----------
        .. [src] [Dayi25, App. B, Fig. 5].

        Examples
        --------
        >>> from popdyn.models import lora
        >>> round(GeneralProblem.from_alpha(lora.Problem.orthonormal(3, 1.0), 0.5, seed=2).alpha, 12)
        0.5
        """
        alpha = check(f"{_OWNER}.from_alpha", "alpha", alpha, Interval(0.0, 1.0, closed="left"))
        vals, vecs = np.linalg.eigh(problem.G)
        z = (vecs * np.sqrt(np.clip(vals, 0.0, None))) @ np.random.default_rng(seed).standard_normal(problem.k)
        pinv = np.linalg.pinv(problem.G, hermitian=True)
        return cls(problem, alpha * z / np.sqrt(z @ pinv @ z), project)

    @classmethod
    def example(cls):
        """A small instance and options that ``popdyn.predict`` and ``popdyn.simulate`` both take: ReLU,
        orthonormal k = 4, xi = 1, alpha = 1/2 (projected, Fig. 5), d = 200, delta = lr d = 0.2, 10 d steps,
        21 recorded steps.

        Examples
        --------
        >>> problem, options = GeneralProblem.example()
        >>> round(problem.alpha, 12), options["d"]
        (0.5, 200)
        """
        base = Problem.orthonormal(k=4, xi=1.0, activation="relu", seed=0)
        return cls.from_alpha(base, 0.5, seed=1), dict(d=200, lr=0.2 / 200, steps=2000, n_points=21)

    def __repr__(self):
        p = np.array2string(self.p, separator=", ", precision=17, max_line_width=10**6)
        return (f"lora.GeneralProblem(problem={self.problem!r}, p=np.array({p}), "
                f"project={bool(self.project)!r})")



def overlaps(problem, m):
    r"""Teacher-student overlaps ``rho_ij(m) = <v_i, v_hat_j>`` at ``m = <u, u_hat>``.

    .. math:: \rho_{ij}(m) = \frac{G_{ij} + \xi^2 c_i \hat c_j m}{r_i \hat r_j}

    Parameters
    ----------
    problem : Problem
    m : float or ndarray
        Overlaps ``<u, u_hat>`` in [-1, 1].

    Returns
    -------
    ndarray of shape m.shape + (k, k), clipped to [-1, 1].

    Notes
    -----
    Regime: A1-A2 (unit w_i, u and u_hat orthogonal to span W). Under A3 ``r_i = r = sqrt(1 + xi^2/k)``.

    Accuracy: ``|drho_ij| <= 4 eps (|G_ij| + xi^2 |c_i c_hat_j m|)/(r_i r_hat_j)``, always in [-1, 1];
    measured 0.42.

    References
    ----------
    .. [src] [Dayi25, proof of Proposition 4 (App. D.1)].

    Examples
    --------
    >>> p = Problem.orthonormal(k=4, xi=1.0, seed=0)
    >>> round(float(overlaps(p, 0.0)[0, 0]), 12)  # rho_ii(0) = 1/r^2 = k/(k + xi^2)
    0.8
    """
    m = check_overlap(m)
    num = problem.G + problem.xi**2 * np.multiply.outer(m, np.outer(problem.c, problem.c_hat))
    return np.clip(num / np.outer(problem.r, problem.r_hat), -1.0, 1.0)


def check_overlap(m, name="m"):
    """Return ``m`` as a float array, raising when it is not finite or outside [-1, 1]."""
    a = np.asarray(m, dtype=np.float64)
    if not (np.abs(a) <= 1).all():  # also False for NaN and inf
        raise InvalidParameterError(f"The {name!r} parameter must be finite overlaps in [-1, 1]. Got {m!r} instead.")
    return a


def _cached(problem, key, make):
    """``make()``, computed once per (problem, key) and dropped with the problem (which is frozen)."""
    per = _cache.setdefault(problem, {})
    if key not in per:
        per[key] = make()
    return per[key]
