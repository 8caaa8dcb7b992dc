"""Population risks of the diagonal feature model and their optima: ERM-l2 (Lemma 6.1), ERM-rank (Lemma 6.2),
ERM-NU (derived), the population nuclear norm (derived); [Shi24] Section 6.4, App. E; docs/domain_gen.md."""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from ..._validate import Integer, Interval, Options, check
from .problem import DOMAINS, SpuriousFeatureModel
from .transform import expected

__all__ = ["population_loss", "population_grad", "population_loss_w", "nuclear_norm_pop", "nuclear_norm_pop_w",
           "erm_l2", "erm_rank", "erm_nuclear", "nu_constants", "erm_l1"]

_PENALTIES = (None, "l2", "nuclear", "l1")
_REAL = Interval(-np.inf, np.inf, "neither")
_LAM = Interval(0.0, np.inf, "left")


def _model(owner, model):
    if not isinstance(model, SpuriousFeatureModel):
        raise check(owner, "model", model, Options(("a domain_gen.SpuriousFeatureModel",)))
    return model


def _blocks(alpha, beta, model, domain):
    """The margin W = alpha S_R + beta S_U as blocks (weight, mean, count)."""
    return [(alpha, 0.5, model.r), (beta, model.g(domain), model.m)]


def _args(owner, alpha, beta, model, lam=0.0, penalty=None, domain="id"):
    return (check(owner, "alpha", alpha, _REAL), check(owner, "beta", beta, _REAL), _model(owner, model),
            check(owner, "lam", lam, _LAM), check(owner, "penalty", penalty, Options(_PENALTIES)),
            check(owner, "domain", domain, Options(DOMAINS)))


def population_loss(alpha, beta, model, lam=0.0, penalty=None, domain="id"):
    r"""Population logistic loss of the symmetric weights w = (alpha 1_R, beta 1_U), plus an optional penalty.

    .. math:: \mathcal L^\lambda(\alpha,\beta) = \mathbb E\ln\big(1+e^{-(\alpha S_R+\beta S_U)}\big) + \lambda P,\quad
              P = \tfrac12(r\alpha^2+(d-r)\beta^2)\ (\text{"l2"}),\ N(\alpha,\beta)\ (\text{"nuclear"}),
              \ r|\alpha|+(d-r)|\beta|\ (\text{"l1"}),\ 0\ (\text{None})

    Parameters
    ----------
    alpha, beta : float
        Weights on the invariant and spurious coordinates.
    model : SpuriousFeatureModel
    lam : float
        Penalty weight lambda >= 0.
    penalty : {None, "l2", "nuclear", "l1"}
        "l2" is (6.4)'s weight decay; "nuclear" the population nuclear norm :func:`nuclear_norm_pop` (ID); "l1"
        ||w||_1, the nuclear norm of the weight matrix diag(w), the convex relaxation of (6.5)'s ||w||_0 (derived).
    domain : {"id", "ood"}
        Spurious coordinates ``D_gamma`` (ID) or ``D_{-gamma}`` (OOD).

    Returns
    -------
    float

    Notes
    -----
    Regime: any weights. The expectation is the Mellin-Barnes integral of the margin's moment generating function
    along its saddle line (``transform``), with relative accuracy 1e-12 (tested against mpmath and Monte Carlo);
    an FFT grid reaches about 1e-6.

    Accuracy: relative error <= 1e-13 for symmetric weights over the whole domain (tested: r <= 6, d - r <= 12,
    weights 1e-4 .. 1e3 of either sign and 0, ratios to 1e7, |gamma| up to 1/2 - 1e-16, ID and OOD), without a
    warning; measured 0.024 of it in the tests and 0.12 in a further random search to r = 11, d - r = 29
    (tests/test_accuracy_domain_gen.py; against the exact alternating sum of polylogarithms in mpmath with the
    digits its cancellation needs). Where the saddle-line integral cancels (a
    sign mixture of tiny weight, |gamma| -> 1/2: it was 6e-10 relative off at 1/2 - 6e-13) the spurious block is
    conditioned on its number of negative signs and the conditional integrals are summed; a RuntimeWarning states
    the accuracy reached if 1e-12 cannot be met.

    References
    ----------
    .. [src] [Shi24, eq. (6.4), Lemma E.5, (E.10)].

    Examples
    --------
    >>> m = SpuriousFeatureModel(20, 300, 0.3)
    >>> round(population_loss(0.0, 0.0, m), 12) == round(float(np.log(2)), 12)  # w = 0: ln 2
    True
    """
    alpha, beta, model, lam, penalty, domain = _args("domain_gen.population_loss", alpha, beta, model, lam, penalty,
                                                     domain)
    val = float(expected(_blocks(alpha, beta, model, domain))[0])
    if penalty == "l2":
        val += lam / 2 * (model.r * alpha ** 2 + model.m * beta ** 2)
    elif penalty == "nuclear":
        val += lam * nuclear_norm_pop(alpha, beta, model)
    elif penalty == "l1":
        val += lam * (model.r * abs(alpha) + model.m * abs(beta))
    return val


def population_grad(alpha, beta, model, lam=0.0, penalty=None, domain="id"):
    r"""Gradient in (alpha, beta) of :func:`population_loss` (Lemma E.2 summed over each block).

    .. math:: \partial_\alpha = \mathbb E[\ell'(W)S_R] + \lambda\partial_\alpha P,\qquad
              \partial_\beta = \mathbb E[\ell'(W)S_U] + \lambda\partial_\beta P,\qquad \ell'(t) = -1/(1+e^t)

    Parameters
    ----------
    alpha, beta : float
    model : SpuriousFeatureModel
    lam : float
    penalty : {None, "l2", "nuclear", "l1"}
    domain : {"id", "ood"}

    Returns
    -------
    ndarray of shape (2,)

    Notes
    -----
    Regime: any weights; the nuclear and l1 penalties are not differentiable at beta = 0 or alpha = 0 (their
    one-sided derivative for the positive side is returned there).

    Accuracy: |d g_k| <= 1e-14 n_k E sigma(-W) (the scale of E[l'(W) S_k], |S_k| <= n_k coordinates), over the
    domain of :func:`population_loss` (r <= 5, d - r <= 8 tested); measured 0.14 of it
    (tests/test_accuracy_domain_gen.py, mpmath.diff of the exact loss).

    References
    ----------
    .. [src] [Shi24, Lemma E.2, (E.12)].
    """
    alpha, beta, model, lam, penalty, domain = _args("domain_gen.population_grad", alpha, beta, model, lam, penalty,
                                                     domain)
    g = np.asarray(expected(_blocks(alpha, beta, model, domain), order=1)[1:3], dtype=float)
    if penalty == "l2":
        g = g + lam * np.array([model.r * alpha, model.m * beta])
    elif penalty == "nuclear":
        g = g + lam * _nuclear_grad(alpha, beta, model)
    elif penalty == "l1":
        g = g + lam * np.array([model.r * np.sign(alpha or 1.0), model.m * np.sign(beta or 1.0)])
    return g


def population_loss_w(w, model, domain="id"):
    r"""Population logistic loss of a general (asymmetric) weight vector w of length d.

    .. math:: \mathcal L(w) = \mathbb E\ln(1+e^{-w^\top z}),\qquad \mathbb E e^{zw^\top z} = \prod_j M_j(w_jz)

    Parameters
    ----------
    w : array_like of shape (d,)
    model : SpuriousFeatureModel
    domain : {"id", "ood"}

    Returns
    -------
    float

    Notes
    -----
    Regime: any w; same contour integral as :func:`population_loss` with one block per coordinate.

    Accuracy: relative 1e-12, or a RuntimeWarning with the accuracy reached (an upper estimate): the integral has
    one block per coordinate, so a sign mixture of tiny weight (|gamma| -> 1/2 with large weights) cannot be split by
    sign count (2^m cases) and is only reported (weights 990, 203 at gamma = 1/2 - 1.3e-12: warned "about 1e-09",
    2e-11 off; tested).

    References
    ----------
    .. [src] [Shi24, eq. (6.4)].
    """
    owner = "domain_gen.population_loss_w"
    model = _model(owner, model)
    domain = check(owner, "domain", domain, Options(DOMAINS))
    w = np.asarray(w, dtype=float)
    if w.shape != (model.d,) or not np.all(np.isfinite(w)):
        check(owner, "w", w, Options((f"a finite array of shape ({model.d},)",)))
    g = model.g(domain)
    return float(expected([(wj, 0.5 if j < model.r else g, 1) for j, wj in enumerate(w)])[0])


def _nuclear_parts(alpha, beta, model):
    gam, r, m = model.gamma, model.r, model.m
    s_u = np.sqrt(1 / 3 - gam ** 2)
    A, Bc = 1 / 12 + r / 4, 1 / 3 - gam ** 2 + m * gam ** 2
    D0 = Bc / 12 + r / 4 * (1 / 3 - gam ** 2)
    return s_u, A, Bc, max(D0, 0.0)


def nuclear_norm_pop(alpha, beta, model):
    r"""Population nuclear norm N(alpha, beta) = lim n^{-1/2} ||Phi(X)||_* of the batch features (ID).

    .. math:: N = \frac{(r-1)|\alpha|}{\sqrt{12}} + (d-r-1)|\beta|\sqrt{\tfrac13-\gamma^2}
              + \sqrt{m_{11}+m_{22}+2\sqrt{m_{11}m_{22}-m_{12}^2}},\quad
              m_{11} = \alpha^2(\tfrac1{12}+\tfrac r4),\ m_{22} = \beta^2(\tfrac13-\gamma^2+(d-r)\gamma^2),\
              m_{12} = \tfrac12\sqrt{r(d-r)}\alpha\beta\gamma

    Parameters
    ----------
    alpha, beta : float
    model : SpuriousFeatureModel

    Returns
    -------
    float

    Notes
    -----
    Regime: any weights; equals tr((D_w Sigma D_w)^{1/2}) with Sigma = E[z z^T] (derived). Convex, even in beta,
    positively 1-homogeneous. With r = 1 or d - r <= 1 the terms with factor (r - 1) or (d - r - 1) vanish.

    Accuracy: relative error <= 8 eps for any weights (16 decades, zeros, signs); measured 0.11 of it
    (tests/test_accuracy_domain_gen.py, the eigenvalues of D_w Sigma D_w in mpmath at 40 digits).

    References
    ----------
    .. [src] derived in docs/domain_gen.md; [Shi24, eqs. (6.2)-(6.3)] (the batch nuclear norm).

    Examples
    --------
    >>> m = SpuriousFeatureModel(3, 5, 0.2)
    >>> w = np.array([0.3] * 3 + [0.1] * 2)
    >>> ev = np.linalg.eigvalsh(np.diag(w) @ m.second_moment() @ np.diag(w))
    >>> bool(abs(nuclear_norm_pop(0.3, 0.1, m) - np.sqrt(np.clip(ev, 0, None)).sum()) < 1e-12)
    True
    """
    owner = "domain_gen.nuclear_norm_pop"
    alpha, beta, model = check(owner, "alpha", alpha, _REAL), check(owner, "beta", beta, _REAL), _model(owner, model)
    s_u, A, Bc, D0 = _nuclear_parts(alpha, beta, model)
    r, m = model.r, model.m
    m11, m22 = alpha ** 2 * A, (beta ** 2 * Bc if m else 0.0)
    cross = abs(alpha * beta) * np.sqrt(D0) if m else 0.0  # sqrt(m11 m22 - m12^2) = |alpha beta| sqrt(D0)
    return float((r - 1) * abs(alpha) / np.sqrt(12) + max(m - 1, 0) * abs(beta) * s_u
                 + np.sqrt(m11 + m22 + 2 * cross))


def _nuclear_grad(alpha, beta, model):
    """Gradient of N for alpha, beta >= 0 (one-sided at 0)."""
    s_u, A, Bc, D0 = _nuclear_parts(alpha, beta, model)
    r, m = model.r, model.m
    if m == 0:
        return np.array([(r - 1) / np.sqrt(12) + np.sqrt(A), 0.0])
    a, b = abs(alpha), abs(beta)
    root = np.sqrt(a * a * A + b * b * Bc + 2 * a * b * np.sqrt(D0))
    if root == 0:
        return np.array([(r - 1) / np.sqrt(12) + np.sqrt(A), max(m - 1, 0) * s_u + np.sqrt(Bc)])
    ga = (r - 1) / np.sqrt(12) + (a * A + b * np.sqrt(D0)) / root
    gb = max(m - 1, 0) * s_u + (b * Bc + a * np.sqrt(D0)) / root
    return np.array([ga * np.sign(alpha or 1.0), gb * np.sign(beta or 1.0)])


def nuclear_norm_pop_w(w, model):
    r"""Population nuclear norm of general weights: tr((D_w Sigma D_w)^{1/2}), Sigma = E[z z^T] (ID).

    .. math:: N(w) = \lVert\Sigma^{1/2}D_w\rVert_* = \sum_i\sqrt{\lambda_i(D_w\Sigma D_w)}

    Parameters
    ----------
    w : array_like of shape (d,)
    model : SpuriousFeatureModel

    Returns
    -------
    float

    Notes
    -----
    Regime: any w. The sum of the singular values of D_w L, with Sigma = L L^T (Cholesky; Sigma is positive
    definite: its diagonal part is >= 1/12): each has absolute error ~eps sigma_max, so the sum is accurate to
    relative d eps. (The square roots of the eigenvalues of D_w Sigma D_w turned an eigenvalue's rounding eps
    lambda_max into sqrt(eps lambda_max): 1.5e-9 relative off for weights 1 and 1e-9, 5e-10 for random ones.)

    Accuracy: relative error <= 4 d eps for any finite w (weights spanning 16 decades, zeros, either sign); measured
    0.15 of it (tests/test_accuracy_domain_gen.py, the eigenvalues of D_w Sigma D_w in mpmath at 40 digits).

    References
    ----------
    .. [src] derived in docs/domain_gen.md.
    """
    model = _model("domain_gen.nuclear_norm_pop_w", model)
    w = np.asarray(w, dtype=float)
    if w.shape != (model.d,) or not np.all(np.isfinite(w)):
        check("domain_gen.nuclear_norm_pop_w", "w", w, Options((f"a finite array of shape ({model.d},)",)))
    L = np.linalg.cholesky(model.second_moment())
    return float(np.linalg.svd(w[:, None] * L, compute_uv=False).sum())


def _newton(f_grad_hess, x0, tol=1e-13, max_iter=60):
    """Damped Newton for a smooth strictly convex function of a few variables; stops when the Newton step is below
    ``tol`` relative (the objective is known to about 1e-13 relative, so descent is accepted up to that noise)."""
    x = np.asarray(x0, dtype=float)
    f, g, H = f_grad_hess(x)
    for _ in range(max_iter):
        step = np.linalg.solve(H, -g)
        if np.max(np.abs(step)) <= tol * max(1e-3, np.max(np.abs(x))):
            break
        t = 1.0
        while True:
            fn, gn, Hn = f_grad_hess(x + t * step)
            if fn <= f + 1e-4 * t * (g @ step) + 1e-13 * abs(f) or t < 1e-6:
                break
            t /= 2
        x, f, g, H = x + t * step, fn, gn, Hn
    return x, g


def erm_l2(model, lam):
    r"""ERM-l2 optimum (alpha, beta) of the population objective (6.4) on the ID task (Lemma 6.1, E.12).

    .. math:: \lambda\alpha = -\mathbb E[\ell'(W)z_k]\ (k\in R),\qquad \lambda\beta = -\mathbb E[\ell'(W)z_l]\
              (l\in U),\qquad W = \alpha S_R+\beta S_U

    Parameters
    ----------
    model : SpuriousFeatureModel
    lam : float
        Weight decay lambda > 0 (without it the infimum is not attained).

    Returns
    -------
    alpha, beta : float

    Notes
    -----
    Regime: any lam > 0; the objective is smooth and strictly convex and Newton's method on the exact gradient and
    Hessian is run to a KKT residual below 1e-15. Lemma 6.1's conclusions (0 < beta < alpha < 1/sqrt(r),
    alpha/beta < 3/(4 gamma)) need gamma in (3/sqrt(r), 1/2) and lam above an unspecified Omega-bound.

    Accuracy: relative error <= 1e-12 in each weight, certified by strong convexity: |x_k - x*_k| <= (|grad_k| +
    its error 1e-14 n_k E sigma(-W)) / (lam n_k) at the returned point (tested for r <= 30, d - r <= 120, lam in
    [1e-3, 10]); measured 0.74 of it (tests/test_accuracy_domain_gen.py).

    References
    ----------
    .. [src] [Shi24, Lemma 6.1, its proof (E.10)-(E.37)].
    """
    owner = "domain_gen.erm_l2"
    model, lam = _model(owner, model), check(owner, "lam", lam, Interval(0.0, np.inf, "neither"))
    r, m = model.r, model.m

    def fgh(x):
        v = expected(_blocks(x[0], x[1], model, "id"), order=2)
        f = v[0] + lam / 2 * (r * x[0] ** 2 + m * x[1] ** 2)
        g = v[1:3] + lam * np.array([r * x[0], m * x[1]])
        H = v[3:].reshape(2, 2) + lam * np.diag([r, max(m, 1)])
        return f, g, H
    x, _ = _newton(fgh, [0.5 / (r * lam + 1), 0.0])
    return float(x[0]), float(x[1]) if m else 0.0


def nu_constants(model):
    r"""Kink slopes of the population nuclear norm on the line beta = 0 (derived).

    .. math:: c_R = \frac{r-1}{\sqrt{12}}+\sqrt{\tfrac1{12}+\tfrac r4},\qquad
              \kappa_\beta = (d-r-1)\sqrt{\tfrac13-\gamma^2}+\sqrt{D_0/(\tfrac1{12}+\tfrac r4)},\quad
              D_0 = \tfrac1{12}(\tfrac13-\gamma^2+(d-r)\gamma^2)+\tfrac r4(\tfrac13-\gamma^2)

    Parameters
    ----------
    model : SpuriousFeatureModel

    Returns
    -------
    c_R, kappa_beta : float

    Notes
    -----
    Regime: any model with d > r (kappa_beta = 0 when d = r: there is no spurious block).

    Accuracy: relative error <= 8 eps (measured 0.07 of it against mpmath at 40 digits).

    References
    ----------
    .. [src] derived in docs/domain_gen.md.
    """
    model = _model("domain_gen.nu_constants", model)
    s_u, A, Bc, D0 = _nuclear_parts(1.0, 1.0, model)
    c_R = (model.r - 1) / np.sqrt(12) + np.sqrt(A)
    kappa = max(model.m - 1, 0) * s_u + np.sqrt(D0 / A) if model.m else 0.0
    return float(c_R), float(kappa)


def _alpha_line(model, lam, c_R):
    """alpha_0 = argmin_{alpha >= 0} E l(alpha S_R) + lam c_R alpha (0 when lam >= r/(4 c_R))."""
    if lam * c_R >= model.r / 4:
        return 0.0
    blocks = lambda a: [(a, 0.5, model.r)]

    def fgh(x):
        v = expected(blocks(x[0]), order=2)
        return v[0] + lam * c_R * x[0], v[1:2] + lam * c_R, v[2:].reshape(1, 1)
    return float(_newton(fgh, [1.0 / (model.r * (lam + 0.25))])[0][0])


def erm_nuclear(model, lam):
    r"""ERM-NU population optimum (derived): the logistic loss plus lam times the population nuclear norm.

    .. math:: \min_{\alpha,\beta}\ \mathbb E\,\ell(\alpha S_R+\beta S_U)+\lambda N(\alpha,\beta),\qquad
              \beta^* = 0 \iff \rho(\lambda) = \frac{(d-r)|\gamma|\,\mathbb E[-\ell'(\alpha_0S_R)]}{\lambda\kappa_\beta}
              \le 1

    where alpha_0 minimises the objective on the line beta = 0 (alpha_0 > 0 iff lam < r/(4 c_R), see
    :func:`nu_constants`).

    Parameters
    ----------
    model : SpuriousFeatureModel
    lam : float
        Nuclear-norm weight lambda > 0.

    Returns
    -------
    alpha, beta, rho : float
        The optimum and the selection ratio rho (beta = 0 exactly when rho <= 1).

    Notes
    -----
    Regime: any model and lam > 0. The objective is convex and block-exchangeable, so the optimum is symmetric
    (Lemma E.5's argument). When rho > 1 the smooth problem on beta > 0 (sign of gamma) is solved by L-BFGS-B on the
    exact gradient. An extension, not a result of the paper.

    Accuracy: beta = 0 exactly when rho <= 1, with alpha stationary on that line to 1e-12 r E sigma(-W) (measured
    0.03 of it); when rho > 1 the gradient of the smooth problem at the L-BFGS-B point is <= 1e-8 n_k E sigma(-W)
    (ftol 1e-15; measured 0.24 of it), i.e. the weights are accurate to about 1e-8 relative
    (tests/test_accuracy_domain_gen.py).

    References
    ----------
    .. [src] derived in docs/domain_gen.md; [Shi24, eqs. (6.2)-(6.3), Lemma E.5].
    """
    owner = "domain_gen.erm_nuclear"
    model, lam = _model(owner, model), check(owner, "lam", lam, Interval(0.0, np.inf, "neither"))
    c_R, kappa = nu_constants(model)
    a0 = _alpha_line(model, lam, c_R)
    if model.m == 0 or model.gamma == 0:
        return a0, 0.0, 0.0
    e_sig = float(expected([(a0, 0.5, model.r)], fn="sigmoid")[0]) if a0 > 0 else 0.5
    rho = model.m * abs(model.gamma) * e_sig / (lam * kappa)
    if rho <= 1:
        return a0, 0.0, float(rho)
    sgn = np.sign(model.gamma)

    def fg(x):
        v = expected(_blocks(x[0], sgn * x[1], model, "id"), order=1)
        g = np.array([v[1], sgn * v[2]]) + lam * _nuclear_grad(x[0], x[1], model)
        return v[0] + lam * nuclear_norm_pop(x[0], x[1], model), g
    res = minimize(fg, [max(a0, 1e-3), 1e-3], jac=True, method="L-BFGS-B", bounds=[(0, None), (0, None)],
                   options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 500})
    return float(res.x[0]), float(sgn * res.x[1]), float(rho)


def erm_l1(model, lam):
    r"""ERM-l1 population optimum (derived): the logistic loss plus lam ||w||_1, the convex relaxation of ERM-rank.

    .. math:: \min_{\alpha,\beta}\ \mathbb E\,\ell(\alpha S_R+\beta S_U)+\lambda(r|\alpha|+(d-r)|\beta|),\qquad
              \beta^* = 0 \iff \rho_1(\lambda) = \frac{|\gamma|\,\mathbb E[-\ell'(\alpha_0S_R)]}{\lambda}\le 1

    where alpha_0 solves E[-l'(alpha S_R) z_k] = lam (k in R) on the line beta = 0, alpha_0 > 0 iff lam < 1/4, and
    w = 0 iff lam >= 1/4. With the diagonal features of section 6.4, ||w||_0 = rank(diag(w)) is (6.5)'s rank and
    ||w||_1 = ||diag(w)||_* its convex envelope on the unit ball, as (6.3) relaxes (6.2). For lam < 1/4,
    rho_1 >= 2|gamma| (z_k and -l'(alpha_0 S_R) are negatively correlated), tending to 2|gamma| as lam -> 1/4
    (|gamma| / (2 lam) beyond); rho_1 does not depend on d.

    Parameters
    ----------
    model : SpuriousFeatureModel
    lam : float
        l1 weight lambda > 0.

    Returns
    -------
    alpha, beta, rho : float
        The optimum and the selection ratio rho_1 (beta = 0 exactly when rho_1 <= 1).

    Notes
    -----
    Regime: any model and lam > 0. The objective is convex and block-exchangeable, so the optimum is symmetric
    (Lemma E.5's argument), with alpha > 0 whenever lam < 1/4 (alpha = 0 would need E[-l'(beta S_U)] / 2 <=
    E[-l'(beta S_U) z_l], impossible as that is <= |gamma| E[-l'(beta S_U)]). When rho_1 > 1 the optimum lies in the
    open quadrant alpha > 0, gamma beta > 0, where the objective is smooth: Newton's method on the exact gradient and
    Hessian. An extension, not a result of the paper.

    Accuracy: beta = 0 exactly when rho_1 <= 1; the gradient on the optimum's support (alpha, and beta when
    rho_1 > 1) is <= 1e-12 n_k E sigma(-W) at the returned point for r <= 20, d - r <= 80, lam in [3e-4, 1/4);
    measured 0.21 of it (tests/test_accuracy_domain_gen.py).

    References
    ----------
    .. [src] derived in docs/domain_gen.md; [Shi24, eqs. (6.2)-(6.3), (6.5), Lemma E.5].
    """
    owner = "domain_gen.erm_l1"
    model, lam = _model(owner, model), check(owner, "lam", lam, Interval(0.0, np.inf, "neither"))
    r, m, gam = model.r, model.m, model.gamma
    a0 = _alpha_line(model, lam, r)
    e_sig = float(expected([(a0, 0.5, r)], fn="sigmoid")[0]) if a0 > 0 else 0.5
    rho = abs(gam) * e_sig / lam
    if m == 0 or gam == 0 or rho <= 1:
        return a0, 0.0, float(rho)
    sgn = np.sign(gam)

    def fgh(x):  # the objective on the quadrant alpha > 0, sgn beta > 0, where the penalty is linear
        v = expected(_blocks(x[0], x[1], model, "id"), order=2)
        return (v[0] + lam * (r * x[0] + sgn * m * x[1]), v[1:3] + lam * np.array([r, sgn * m]),
                v[3:].reshape(2, 2))
    x, _ = _newton(fgh, [a0, sgn * 1e-3])
    return float(x[0]), float(x[1]), float(rho)


def erm_rank(model, B_rank, lam=0.0):
    r"""ERM-rank optimum (Lemma 6.2): support any B_rank invariant coordinates, weight alpha_rank on them.

    .. math:: \lambda\alpha = -\mathbb E[\ell'(\alpha S_B)z_k],\quad S_B = \sum_{k\in R_{\rm rank}}z_k

    Parameters
    ----------
    model : SpuriousFeatureModel
    B_rank : int
        Rank budget, ``1 <= B_rank <= r``.
    lam : float
        Ridge on the support, ``>= 0``. With lam = 0 the infimum of (6.5) is 0 and is not attained (alpha -> inf):
        ``inf`` is returned for alpha.

    Returns
    -------
    w : ndarray of shape (d,)
        alpha_rank on the first B_rank coordinates, 0 elsewhere.

    Notes
    -----
    Regime: any model; the OOD accuracy of w is 1 (every z_k >= 0 on R).

    Accuracy: relative error <= 1e-12 for lam > 0, certified by strong convexity as for :func:`erm_l2`; measured
    0.04 of it (tests/test_accuracy_domain_gen.py).

    References
    ----------
    .. [src] [Shi24, Lemma 6.2 = Lemma E.7]; the unattained infimum in docs/domain_gen.md.
    """
    owner = "domain_gen.erm_rank"
    model = _model(owner, model)
    B = check(owner, "B_rank", B_rank, Integer(1, model.r))
    lam = check(owner, "lam", lam, _LAM)
    w = np.zeros(model.d)
    if lam == 0:
        w[:B] = np.inf
        return w

    def fgh(x):
        v = expected([(x[0], 0.5, B)], order=2)
        return v[0] + lam / 2 * B * x[0] ** 2, v[1:2] + lam * B * x[0], v[2:].reshape(1, 1) + lam * B
    w[:B] = _newton(fgh, [1.0 / (B * (lam + 0.25))])[0][0]
    return w
