"""ResNet vs kernels ([AllenZhu19]): kernel ridge regression with a network's finite-width kernel, its exact test error.

Public names
------------
kernel_predictor
    The KRR predictor :math:`\\mathfrak K(x)=\\sum_jK_m(x,x^{(j)})\\beta_j` of a network's finite-width kernel at any
    points, through the network's linearization (backward passes over the training points, forward-mode passes over
    the test points; for fc2 a closed form in the ReLU masks) instead of the (test, N) kernel matrix.
cube_krr_error
    Exact population test error on the uniform cube {±1}^d of that predictor fitted on N points (program (3.1) with
    :func:`popdyn.sim.resnet.networks.ridge_fit`): the average over all 2^d points, no test sample.
fc2_kernel_limit
    The exact infinite-width Hamming profile of the fc2 net's kernels at init (numpy, theory side:
    :func:`popdyn.models.resnet.fc2_kernel_limit`, re-exported here).

See docs/resnet.md (finite-width kernels).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch
from torch.autograd import forward_ad as fwAD

from ..._validate import Integer, Interval, InvalidParameterError, Options, check
from ...models.resnet.hypercube import fc2_kernel_limit, hypercube_points
from ...models.resnet.targets import CompositionTarget
from .._torch import to_numpy
from .networks import Net, conjugate_kernel, empirical_ntk, ridge_fit

__all__ = ["KERNELS", "kernel_predictor", "cube_krr_error", "fc2_kernel_limit"]

#: kernel name -> what it is: "ntk" the hidden-weight NTK of :func:`empirical_ntk` (the paper's "(NTK)"), "ck" the
#: conjugate kernel of :func:`conjugate_kernel` (the paper's "(last)", train A only); at infinite width they are the
#: "ntk_hidden" and "nngp" of :func:`popdyn.models.resnet.fc2_kernel_limit`, which takes these names too
KERNELS = ("ntk", "ck")
_CHUNK = 2 ** 22  # elements of a (seeds, points, width) block in the cube sweep


def _check_net(owner, net, kernel):
    if not isinstance(net, Net):
        raise InvalidParameterError(f"The 'net' parameter of {owner} must be a Net (init_net). Got {net!r} instead.")
    check(owner, "kernel", kernel, Options(KERNELS))
    if kernel == "ck" and net.arch not in ("fc2", "fc3"):
        raise InvalidParameterError(f"The 'kernel' parameter of {owner} is 'ck' only for arch 'fc2' or 'fc3' (out = "
                                    f"A z, so the conjugate kernel is the NTK of A over m). Got arch {net.arch!r}.")


def _tensor(net, X):
    return torch.as_tensor(np.asarray(X, dtype=np.float64), dtype=net.W.dtype, device=net.W.device)


def _params(net, kernel):
    """The linearized tensors by name: the trained hidden layers (ntk) or A (ck)."""
    return {"A": net.A} if kernel == "ck" else dict(net.params)


def _out(net, X, theta):
    """Outputs (seeds, n, k) with the tensors ``theta`` (by name) in place of the net's."""
    return replace(net, A=theta["A"]).forward(X) if "A" in theta else net.forward(X, theta["W"], theta.get("V"))


def _outputs(net, kernel):
    """The outputs a averaged by the kernel: all k for the NTK; for the CK one is enough (row a of A sees z only)."""
    return range(net.A.shape[1]) if kernel == "ntk" else range(1)


def _jvp_predictor(net, kernel, X, beta):
    """Any arch: g[a][i] = sum_j beta_{s,j,i} grad_theta out_a(x_j) by backward passes, then on Z the forward-mode
    derivative of out_a along g[a][i], averaged over a (1/k, NTK) or over m (CK, theta = A)."""
    theta = {n: p.detach().requires_grad_(True) for n, p in _params(net, kernel).items()}
    names = list(theta)
    with torch.enable_grad():
        out = _out(net, X, theta)
        g = [[dict(zip(names, torch.autograd.grad((out[..., a] * beta[..., i]).sum(), [theta[n] for n in names],
                                                   retain_graph=True)))
              for i in range(beta.shape[-1])] for a in _outputs(net, kernel)]
    theta0 = {n: p.detach() for n, p in theta.items()}
    scale = 1.0 / (net.A.shape[1] if kernel == "ntk" else net.A.shape[2])

    def predict(Z):
        cols = []
        for i in range(beta.shape[-1]):
            f = 0.0
            for a in _outputs(net, kernel):
                with fwAD.dual_level():
                    dual = {n: fwAD.make_dual(p, g[a][i][n]) for n, p in theta0.items()}
                    f = f + fwAD.unpack_dual(_out(net, Z, dual)).tangent[..., a]
            cols.append(f * scale)
        return torch.stack(cols, -1)
    return predict


def _fc2_predictor(net, kernel, X, beta):
    r"""fc2 in closed form: with :math:`\bar a_l=\frac1k\sum_aA_{al}^2` and masks :math:`D_l(x)=1[w_l\cdot\tilde x>0]`,
    NTK :math:`f_i(z)=\sum_l\bar a_lD_l(z)\,v_{li}\cdot\tilde z`, :math:`v_{li}=\sum_j\beta_{ji}D_l(x_j)\tilde x_j`;
    CK :math:`f_i(z)=\frac1m\sum_l\sigma(w_l\cdot\tilde z)c_{li}`, :math:`c_{li}=\sum_j\beta_{ji}\sigma(w_l\cdot
    \tilde x_j)`. One pass over (seeds, n, m) per output instead of k JVPs."""
    W = net.W.detach()

    def pre(Z):
        Zt = torch.cat([Z, Z.new_ones(Z.shape[0], 1)], 1)
        return Zt, torch.matmul(Zt, W.transpose(1, 2))                         # (n, d+1), (s, n, m)
    Xt, P = pre(X)
    if kernel == "ck":
        c = torch.matmul(torch.relu(P).transpose(1, 2), beta) / W.shape[1]    # (s, m, k')
        return lambda Z: torch.matmul(torch.relu(pre(Z)[1]), c)
    abar = (net.A.detach() ** 2).mean(1)                                      # (s, m)
    v = torch.einsum("snm,sni,np->simp", (P > 0).to(W.dtype), beta, Xt)       # (s, k', m, d+1)

    def predict(Z):
        Zt, Q = pre(Z)
        mask = (Q > 0).to(W.dtype) * abar[:, None, :]
        return torch.stack([(mask * torch.matmul(Zt, v[:, i].transpose(1, 2))).sum(-1)
                            for i in range(beta.shape[-1])], -1)
    return predict


def _predictor(net, kernel, X, beta):
    return (_fc2_predictor if net.arch == "fc2" else _jvp_predictor)(net, kernel, X, beta)


def _kernel_matrix(net, kernel, X):
    return empirical_ntk(net, X) if kernel == "ntk" else conjugate_kernel(net, X)


def kernel_predictor(net, kernel, X, beta, Z):
    r"""KRR predictor of a network's finite-width kernel, evaluated through the network's linearization.

    .. math::

        \mathfrak K_i(z)=\sum_jK_m(z,x^{(j)})\beta_{ji},\qquad
        K_m^{\mathrm{ntk}}(z,x)=\frac1k\sum_a\langle\nabla_\theta\mathrm{out}_a(z),
        \nabla_\theta\mathrm{out}_a(x)\rangle,
        \qquad K_m^{\mathrm{ck}}=\frac1m\langle\nabla_{A_a}\mathrm{out}_a(z),\nabla_{A_a}\mathrm{out}_a(x)\rangle,

    computed as :math:`\mathfrak K_i(z)=\frac1k\sum_a\partial_\varepsilon\,\mathrm{out}_a(z;\theta+\varepsilon g_{ai})`
    with :math:`g_{ai}=\sum_j\beta_{ji}\nabla_\theta\mathrm{out}_a(x^{(j)})` (for "ck" the A-row :math:`a` of the
    tangent, over m): never the (n, N) kernel matrix.

    Parameters
    ----------
    net : popdyn.sim.resnet.networks.Net
    kernel : {"ntk", "ck"}
        "ntk": :func:`empirical_ntk` with its default layers (all trained hidden layers); "ck":
        :func:`conjugate_kernel` (arch fc2 or fc3 only).
    X : array_like, shape (N, d), entries ±1
        Training points.
    beta : array_like, shape (seeds, N) or (seeds, N, k')
        KRR weights per network (e.g. :func:`ridge_fit` of the kernel matrix).
    Z : array_like, shape (n, d), entries ±1
        Evaluation points.

    Returns
    -------
    ndarray, shape (seeds, n) or (seeds, n, k')

    Notes
    -----
    Regime: any width; cost O(k k' (N + n)) network passes, memory seeds x n x m (chunk Z yourself for large n).
    ReLU's derivative at 0 is 0 in both forward and reverse mode, as in :func:`empirical_ntk`.

    References
    ----------
    .. [src] [AllenZhu19, program (3.1), Fig. 2, footnote 5]; the finite-width kernels derived in docs/resnet.md.

    Examples
    --------
    >>> from popdyn.sim.resnet.networks import init_net
    >>> net = init_net("fc2", 3, 1, 8, seeds=2)
    >>> X = [[1, 1, -1], [-1, 1, 1]]
    >>> f = kernel_predictor(net, "ntk", X, np.ones((2, 2)), X)
    >>> bool(np.allclose(f, empirical_ntk(net, X).sum(-1)))
    True
    """
    owner = "resnet.kernels.kernel_predictor"
    _check_net(owner, net, kernel)
    d, s = net.W.shape[2] - 1, net.seeds
    Xt, Zt = (_tensor(net, _cube_points(owner, name, v, d)) for name, v in (("X", X), ("Z", Z)))
    b = np.asarray(beta, dtype=np.float64)
    if b.ndim not in (2, 3) or b.shape[:2] != (s, Xt.shape[0]) or not np.all(np.isfinite(b)):
        raise InvalidParameterError(f"The 'beta' parameter of {owner} must be finite with shape ({s}, {Xt.shape[0]})"
                                    f" or ({s}, {Xt.shape[0]}, k') (seeds, N). Got shape {b.shape} instead.")
    bt = _tensor(net, b.reshape(s, Xt.shape[0], -1))
    f = to_numpy(_predictor(net, kernel, Xt, bt)(Zt))
    return f[..., 0] if b.ndim == 2 else f


def _cube_points(owner, name, X, d):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != d or X.shape[0] < 1 or not np.all(np.abs(X) == 1.0):
        raise InvalidParameterError(f"The {name!r} parameter of {owner} must be an (n, {d}) array of ±1 entries, "
                                    f"n >= 1. Got shape {X.shape}.")
    return X


def cube_krr_error(net, kernel, target, X, lam):
    r"""Exact population test error on {±1}^d of KRR with the network's finite-width kernel (all 2^d points).

    .. math::

        \beta=(K_m+N\lambda I)^{-1}\mathcal H(X),\qquad
        \mathrm{err}_i=2^{-d}\sum_{z\in\{\pm1\}^d}\Big(\mathcal H_i(z)-\sum_jK_m(z,x^{(j)})\beta_{ji}\Big)^2

    per network and output (no 1/2, no test sample; the finite-width kernel is not a dot-product kernel, so the
    Parseval form of :func:`popdyn.models.resnet.exact_test_error` does not apply, but the average over the whole cube
    is the population error exactly).

    Parameters
    ----------
    net : popdyn.sim.resnet.networks.Net
    kernel : {"ntk", "ck"}
        As in :func:`kernel_predictor`.
    target : popdyn.models.resnet.CompositionTarget
        With the net's d; one KRR per output (any k).
    X : array_like, shape (N, d), entries ±1
        Training points, shared by the seeds.
    lam : float
        Ridge lambda > 0 of program (3.1).

    Returns
    -------
    ndarray, shape (seeds, target.k)

    Notes
    -----
    Regime: d <= 22 (2^d forward-mode passes' worth of points, swept in blocks of ~4e6 seeds x points x m
    elements); cost O(2^d m d k^2) per seed for fc2.

    References
    ----------
    .. [src] [AllenZhu19, program (3.1), Fig. 2, Prop. E.1]; the exact test error derived in docs/resnet.md.

    Examples
    --------
    >>> from popdyn.models.resnet import thm2_target
    >>> from popdyn.sim.resnet.networks import init_net
    >>> X = np.random.default_rng(0).choice([-1.0, 1.0], size=(20, 6))
    >>> cube_krr_error(init_net("fc2", 6, 2, 64, seeds=3), "ck", thm2_target(6, 2, 0.3, rng=0), X, 1e-3).shape
    (3, 2)
    """
    owner = "resnet.kernels.cube_krr_error"
    _check_net(owner, net, kernel)
    d = net.W.shape[2] - 1
    check(owner, "d", d, Integer(1, 22))
    if not isinstance(target, CompositionTarget) or target.d != d:
        raise InvalidParameterError(f"The 'target' parameter of {owner} must be a CompositionTarget with d = {d} (the "
                                    f"net's). Got {target!r} instead.")
    X = _cube_points(owner, "X", X, d)
    lam = check(owner, "lam", lam, Interval(0, np.inf, closed="neither"))
    beta = ridge_fit(_kernel_matrix(net, kernel, X), target(X), lam)
    predict = _predictor(net, kernel, _tensor(net, X), _tensor(net, beta))
    cube = hypercube_points(d)
    step = max(1, _CHUNK // (net.seeds * net.W.shape[1]))
    sq = np.zeros((net.seeds, target.k))
    for lo in range(0, cube.shape[0], step):
        Z = cube[lo:lo + step]
        f = to_numpy(predict(_tensor(net, Z)))
        sq += ((f - target(Z)[None]) ** 2).sum(1)
    return sq / cube.shape[0]
