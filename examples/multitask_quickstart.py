"""Multi-task ReLU pretraining ([Collins24]): the exact one-step map against the paper's algorithm in torch.

Run ``python examples/multitask_quickstart.py [figure.png]``. Two sign bits (r = 2), d = 20, width 16 (m neurons),
the 4 Hadamard tasks (beta_bar = I, the T = infinity algorithm): ``predict`` gives W+ neuron by neuron in
milliseconds; ``simulate`` runs one head step and one first-layer step on 2^18 stratified Gaussian samples,
4 times; ``compare`` measures the gap in standard errors of the seed mean; the figure plots every entry of W+.
"""
import sys

import numpy as np

import popdyn
from popdyn.models import multitask
from popdyn.plot import save_figure, subplots

__all__ = ["main"]


def main(path="multitask_quickstart.png", n_train=2 ** 18):
    """Predict, simulate, compare and plot the E1 problem; returns the Comparison."""
    problem = multitask.Problem.e1()
    theory = popdyn.predict(problem)                              # exact population map, milliseconds
    sim = popdyn.simulate(problem, n_train=n_train, seeds=4)      # the paper's algorithm, torch float64
    comparison = popdyn.compare(theory, sim, observables=["kappa", "loss"])
    print(comparison)
    print(f"kappa 2^r/eta^2: exact map {theory['kappa'] * 4:.4f}, simulation {np.mean(sim['kappa']) * 4:.4f}, "
          f"corrected leading constant {theory['kappa_par'] * 4:.4f}, the paper's {theory['kappa_paper'] * 4:.4f}")
    W_sim = sim["W_plus"].mean(axis=0)
    fig, (ax,) = subplots(1, panel_size=(5.5, 4.2))
    r = problem.r
    ax.plot(theory["W_plus"][:, :r].ravel(), W_sim[:, :r].ravel(), "o", color="C0", label="ground-truth part w+_par")
    ax.plot(theory["W_plus"][:, r:].ravel(), W_sim[:, r:].ravel(), ".", color="C1", label="spurious part w+_perp")
    lim = np.abs(theory["W_plus"]).max() * 1.1
    ax.plot([-lim, lim], [-lim, lim], "k-", lw=0.8, label="simulation = theory")
    ax.set(xlabel="W+ entry, exact population map", ylabel="W+ entry, torch (mean of 4 seeds)",
           title=f"one step: kappa_sim/kappa_theory = {np.mean(sim['kappa']) / theory['kappa']:.3f}")
    ax.legend(fontsize=7, loc="upper left")
    print(save_figure(fig, path))
    return comparison


if __name__ == "__main__":
    main(*sys.argv[1:2])
