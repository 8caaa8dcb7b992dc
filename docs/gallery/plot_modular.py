r"""
Modular addition: max-margin Fourier circuits
=============================================

Two-layer networks on :math:`k`-input modular addition ([Shi24], ch. 4): the max-margin theory predicts the
normalised margin :math:`\gamma^*` and single-frequency Fourier neurons; ``simulate`` trains networks and
measures the same diagnostics. The tiny example trains briefly, and its networks are still far from
the max-margin solution (the panels show that gap); the validation claims train at the paper's sizes
(:doc:`/modular`).

The model's page: :doc:`/modular`.
"""
import popdyn
from popdyn.models import modular

problem, options = modular.Problem.example()
print(problem)
print(options)

theory = popdyn.predict(problem, **options)
simulation = popdyn.simulate(problem, seeds=2, **options)
comparison = popdyn.compare(theory, simulation)
print(comparison)

# %%
# Theory (dashed line or bar) over the seed mean (solid) and its band of two standard deviations.
# Scalars: the theory as a bar, the trained networks as a point with error bars.
comparison.plot(observables=["normalized_margin", "max_power", "single_freq_fraction"])
