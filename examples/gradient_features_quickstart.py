"""Gradient-feature learning (dissertation ch. 3): the exact first step against one torch step on samples.

Run ``python examples/gradient_features_quickstart.py [figure.png]``. The XOR mixture at d = 32 (sigma_B = 1),
4m = 256 neurons (width m = 64) of the symmetric init (3.9): ``predict`` gives the population first step w^(1)_i =
eta^(1) |l'(0)| a^(0)_i G(w^(0)_i, b_i) in closed form (eta^(1) is the problem's ``lr_first``), the feature
probability and the frozen-feature optimum; ``simulate`` takes the same step (weight decay 1/eta^(1), b frozen) on
n_train samples, 4 times; ``compare`` measures the
gap; the figure plots every first-layer weight, theory against simulation.
"""
import sys

import numpy as np

import popdyn
from popdyn.models import gradient_features as gf
from popdyn.plot import save_figure, subplots

__all__ = ["main"]


def main(path="gradient_features_quickstart.png", n_train=20_000):
    """Predict, simulate, compare and plot the first step on XOR; returns the Comparison."""
    problem = gf.Problem.xor(d=32, sigma_B=1.0, width=64)
    theory = popdyn.predict(problem, n_train=2000, n_mc=2000, n_test=5000)     # closed-form G, exact g* loss, OPT
    sim = popdyn.simulate(problem, n_train=n_train, seeds=4, steps=1, n_test=2000)  # one torch step on n_train samples
    comparison = popdyn.compare(theory, sim, observables=["W1", "cos_features"])
    print(comparison)
    scalar = lambda name: float(np.mean(theory[name]))
    print(f"feature probability p = {scalar('p_hat'):.4f}, nice fraction {scalar('nice_fraction'):.4f}, "
          f"L(g*) = {scalar('opt_gstar'):.4g}, Bayes error {scalar('bayes_error'):.4g}")
    W_sim = sim["W1"].mean(axis=0)
    fig, (ax,) = subplots(1, panel_size=(5.5, 4.2))
    ax.plot(theory["W1"].ravel(), W_sim.ravel(), ".", ms=2, color="C0", label="first-layer weights")
    lim = np.abs(theory["W1"]).max() * 1.1
    ax.plot([-lim, lim], [-lim, lim], "k-", lw=0.8, label="simulation = theory")
    err = np.linalg.norm(W_sim - theory["W1"]) / np.linalg.norm(theory["W1"])
    ax.set(xlabel="w^(1), exact population step", ylabel=f"w^(1), torch on n = {n_train} (mean of 4 seeds)",
           title=f"first step: relative error {err:.3f}")
    ax.legend(fontsize=7, loc="upper left")
    print(save_figure(fig, path))
    return comparison


if __name__ == "__main__":
    main(*sys.argv[1:2])
