r"""
Kernels on the hypercube: eigenlearning learning curves
=======================================================

Kernel ridge regression with three wide networks' kernels (:func:`popdyn.kernels.fc`: the NTK of a ReLU network of
depth 1 and of depth 3, the NNGP of an erf network of depth 2) learns the sparse parity :math:`x_0x_1` on
:math:`\{\pm1\}^{20}`. ``predict`` is the eigenlearning theory of the expected test error over random training sets
([Bordelon20], [Canatar21], [Simon23]); ``simulate`` fits each kernel on independent uniform training sets and takes
each fit's exact population error over the whole cube (Parseval, no test sample). The deeper ReLU network spreads
its kernel over more Walsh levels and learns the parity later; the erf NNGP puts almost nothing on level 2 and does
not learn it in this range (its bump at N = 30 is the overfitting factor E0 at work on the levels it does fit).

The model's page: :doc:`/kernels`.
"""
import math

import popdyn
from popdyn.models import kernels
from popdyn.plot import subplots

d = 20
target = kernels.WalshTarget.parity(d, 2)                          # x0 x1
networks = {"ReLU depth 1, NTK": dict(depth=1, activation="relu", W_std=math.sqrt(2), b_std=0.1, kernel="ntk"),
            "ReLU depth 3, NTK": dict(depth=3, activation="relu", W_std=math.sqrt(2), b_std=0.1, kernel="ntk"),
            "erf depth 2, NNGP": dict(depth=2, activation="erf", W_std=1.0, b_std=0.1, kernel="nngp")}
sizes = (10, 30, 100, 300, 1000)

# %%
# Theory (dashed) over the mean of 16 training sets per size (solid, with its band of two standard deviations).
fig, axes = subplots(len(networks))
for ax, (name, arch) in zip(axes, networks.items()):
    problem = kernels.Problem(d, target, **arch)
    theory = popdyn.predict(problem, n_train=sizes)
    simulation = popdyn.simulate(problem, n_train=sizes, seeds=16)
    comparison = popdyn.compare(theory, simulation)
    comparison.plot(ax=[ax], observables=["test_error"])
    gap = abs(simulation["test_error"].mean(0) / theory["test_error"] - 1).max()
    ax.set_title(f"{name}: largest gap {gap:.1%} of the theory")
    print(name, "theory", theory["test_error"].round(3), "exact KRR", simulation["test_error"].mean(0).round(3))
fig.suptitle(f"sparse parity x0 x1 on d = {d}: eigenlearning vs exact kernel regression")
