"""Quickstart: LoRA fine-tuning theory against online SGD (Dayi & Chen, COLT 2025 [Dayi25]; docs/lora.md).

The population theory reduces training to one scalar ODE for the overlap m = <u, u_hat>,
dm/dtau = delta h(m)(1 - m^2) - 2 delta^2 m B0(m) (derived in docs/lora.md), with step size lr = delta/d.
This script predicts m_t and the loss, trains the finite network with torch on a few seeds,
compares the two and writes a figure. Runs in well under a minute on a laptop CPU::

    python examples/lora_quickstart.py [out.png]
"""
import sys

import popdyn
from popdyn.models import lora

__all__ = ["main"]


def main(path="lora_quickstart.png"):
    """Predict, simulate, compare and plot a small orthonormal ReLU problem; returns the Comparison."""
    problem = lora.Problem.orthonormal(k=8, xi=1.0, activation="relu", seed=0)
    d, delta = 500, 0.2
    kw = {"d": d, "lr": delta / d, "steps": 20 * d}          # 20 units of tau = t/d
    theory = popdyn.predict(problem, **kw)                    # numpy/numba: milliseconds
    sim = popdyn.simulate(problem, seeds=4, device="cpu", **kw)  # torch online SGD
    comparison = popdyn.compare(theory, sim)
    print(comparison)
    comparison.plot(path)
    print(path)
    return comparison


if __name__ == "__main__":
    main(*sys.argv[1:2])
