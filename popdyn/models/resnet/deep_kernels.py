r"""ResNet vs kernels ([AllenZhu19]): infinite-width kernels at init of the paper's three-layer networks on the cube.

Public names
------------
NETWORK_KERNELS
    The (arch, kernel) pairs with a deterministic infinite-width limit under the experiment init (App. A).
network_kernel_limit
    Their Hamming profiles on {±1}^d: the conjugate kernel ("ck", the paper's "(last)"), the NTK of all trained
    hidden layers per unit width ("ntk", the paper's "(NTK)" over m) and the NTK of the first layer W alone
    ("ntk_W"), for fc2, fc3, the ResNet of form (2.1) (``resnet_free_u``) and, where it exists, the U = VA ResNet.

The recursion is the standard Gaussian-process one (Neal; Jacot et al.), written here for the paper's networks with
their bias columns and the experiment init; the residual block's terms are derived in docs/resnet.md
(finite-width kernels).
"""
from __future__ import annotations

import math

import numpy as np

from ..._validate import Integer, InvalidParameterError, Options, check
from ...gaussian import arccos_kernel

__all__ = ["NETWORK_KERNELS", "network_kernel_limit"]

#: arch -> the kernels with a deterministic m -> infinity limit at the experiment init. The U = VA ResNet's second
#: block reads the k-dimensional out1, a Gaussian process sample at infinite width, so its V-part NTK stays random;
#: its first-layer NTK and conjugate kernel tend to fc2's.
NETWORK_KERNELS = {"fc2": ("ck", "ntk", "ntk_W"), "fc3": ("ck", "ntk", "ntk_W"),
                   "resnet_free_u": ("ck", "ntk", "ntk_W"), "resnet": ("ck", "ntk_W")}


def _layers(d):
    """Per Hamming distance t: Sigma0 = x~.y~/d, Sigma1, dSigma1, Sigma2, dSigma2 and the diagonals q0, q1."""
    t = np.arange(d + 1, dtype=np.float64)
    q0 = (d + 1.0) / d
    rho0 = (d + 1.0 - 2.0 * t) / (d + 1.0)
    s0 = (d + 1.0 - 2.0 * t) / d
    rho1 = 2.0 * arccos_kernel(rho0, 1)                     # Sigma1 / q1, q1 = q0 / 2
    rho1[0] = 1.0
    return {"s0": s0, "s1": q0 * arccos_kernel(rho0, 1), "ds1": arccos_kernel(rho0, 0),
            "s2": 0.5 * q0 * arccos_kernel(rho1, 1), "ds2": arccos_kernel(rho1, 0), "q0": q0, "q1": 0.5 * q0}


def network_kernel_limit(arch, kernel, d):
    r"""Infinite-width Hamming profile at init of a network's kernel (experiment init, bias columns, x~ = (x, 1)).

    With :math:`\Sigma_0=\langle\tilde x,\tilde y\rangle/d` (W ~ N(0, 1/d)), :math:`T_1(\Sigma)=\mathbb E\,
    \sigma(u)\sigma(v)`, :math:`T_0(\Sigma)=\mathbb E\,\sigma'(u)\sigma'(v)` for :math:`(u,v)\sim N(0,\Sigma)`
    (:func:`popdyn.gaussian.arccos_kernel`), :math:`\Sigma_{l+1}=T_1(\Sigma_l)`, :math:`\dot\Sigma_{l+1}=T_0(\Sigma_l)`
    (the second layer's weights, N(0, 1/m) on m + 1 inputs, add no bias at infinite width), and
    :math:`\mu_l=\mathbb E\,\sigma(u_l)=\sqrt{q_l/2\pi}` (:math:`q_0=(d+1)/d`, :math:`q_1=q_0/2`):

    * fc2: ck :math:`\Sigma_1`; ntk_W :math:`\dot\Sigma_1\,d\,\Sigma_0` (:math:`\Theta` is O(1): "ntk" is "ntk_W");
    * fc3: ck :math:`\Sigma_2`; ntk :math:`\dot\Sigma_2\Sigma_1`; ntk_W :math:`\dot\Sigma_2\dot\Sigma_1\,d\,\Sigma_0`;
    * resnet_free_u: ck :math:`\Sigma_1+\Sigma_2+2\mu_0\mu_1`; ntk :math:`\dot\Sigma_2\Sigma_1`; ntk_W
      :math:`(1+\dot\Sigma_2)\dot\Sigma_1\,d\,\Sigma_0`;
    * resnet (U = VA): ck :math:`\Sigma_1`; ntk random (not defined); ntk_W :math:`\dot\Sigma_1\,d\,\Sigma_0`,

    where ck is :math:`\frac1m\langle z,z'\rangle`, ntk :math:`\lim\Theta/m` and ntk_W :math:`\lim\Theta_W`
    (for fc2 "ntk" is "ntk_W", its only trained layer). The skip connection adds the identity to the backward factor
    of the first layer (:math:`A+A D_2U` instead of :math:`AD_2U`) and the first block's features to the ones A reads
    (:math:`h+z`, whose cross term :math:`\frac1m\sum_lh_l(x)z_l(y)\to\mu_0\mu_1` because :math:`z_l` depends on
    :math:`h_l` only through :math:`U_{ll}h_l=O(m^{-1/2})`). In the standard parameterization the second layer's
    NTK :math:`\sum_rA_r^2\dot\sigma_r\dot\sigma_r'\langle\tilde h,\tilde h'\rangle` grows like m, so "ntk" is the
    limit of :math:`\Theta/m`, the same for fc3 and the free-U ResNet; the first layer's adds O(1).

    Parameters
    ----------
    arch : {"fc2", "fc3", "resnet_free_u", "resnet"}
        ``popdyn.sim.resnet.networks.ARCHS``' networks.
    kernel : {"ck", "ntk", "ntk_W"}
        As :data:`NETWORK_KERNELS` allows for ``arch``: ``conjugate_kernel``, ``empirical_ntk`` / m (fc3,
        resnet_free_u; fc2's O(1) NTK) and ``empirical_ntk(..., which=("W",))``.
    d : int
        Input dimension, 1 <= d <= 60.

    Returns
    -------
    ndarray, shape (d+1,)
        :math:`\kappa_t`, t the Hamming distance (``popdyn.models.resnet.level_eigenvalues`` takes it).

    Notes
    -----
    Regime: m -> infinity at init with the experiment init (A, V ~ N(0, 1/m), W ~ N(0, 1/d)); the finite-width kernel
    of a network minus this profile is a mean-zero O(m^-1/2) fluctuation plus an O(1/m) bias (measured by the
    claim ``resnet.deep_finite_width_kernels``), except the U = VA ResNet's ck, whose residual branch adds an
    O(m^-1/2) bias (:math:`\frac1m\sum_rh_rz_r`, :math:`z_r=O(m^{-1/2})`).
    Accuracy: relative error <= 1e-13 at every t (two arc-cosine maps, each 16 eps relative, the second at a
    correlation rounded once; the diagonal's correlation set to 1 exactly). Measured against mpmath at 40 digits
    (tests/test_accuracy_resnet.py).

    References
    ----------
    .. [src] [AllenZhu19, eq. (2.1), footnote 5, Fig. 2, App. A]; the recursion is standard, the residual terms are
       derived in docs/resnet.md.

    Examples
    --------
    >>> round(float(network_kernel_limit("fc3", "ck", 4)[0]), 12)      # q0 / 4 = (d + 1) / (4 d)
    0.3125
    >>> round(float(network_kernel_limit("resnet_free_u", "ntk_W", 4)[0]), 12)   # (1 + 1/2)(1/2)(d + 1)
    3.75
    """
    owner = "resnet.network_kernel_limit"
    check(owner, "arch", arch, Options(tuple(NETWORK_KERNELS)))
    if kernel not in NETWORK_KERNELS[arch]:
        raise InvalidParameterError(f"The 'kernel' parameter of {owner} must be one of {NETWORK_KERNELS[arch]} for "
                                    f"arch {arch!r} (the U = VA ResNet's full NTK has no deterministic limit). Got "
                                    f"{kernel!r} instead.")
    d = check(owner, "d", d, Integer(1, 60))
    L = _layers(d)
    first = L["ds1"] * d * L["s0"]                          # fc2's hidden NTK, (d + 1) relu_ntk_hidden
    if arch in ("fc2", "resnet"):
        return L["s1"].copy() if kernel == "ck" else first
    if kernel == "ntk":
        return L["ds2"] * L["s1"]
    if arch == "fc3":
        return L["s2"] if kernel == "ck" else L["ds2"] * first
    if kernel == "ck":
        return L["s1"] + L["s2"] + 2.0 * math.sqrt(L["q0"] * L["q1"]) / (2.0 * math.pi)
    return (1.0 + L["ds2"]) * first
