r"""
Gradient features: the first gradient step
==========================================

The gradient-feature framework ([Shi24], ch. 3): the first gradient step from the symmetric initialisation,
in closed form on the XOR mixture, against one torch step on samples (``examples/gradient_features_quickstart.py``
draws every first-layer weight).

The model's page: :doc:`/gradient_features`.
"""
import popdyn
from popdyn.models import gradient_features

problem, options = gradient_features.Problem.example()
print(problem)
print(options)

theory = popdyn.predict(problem, **options)
simulation = popdyn.simulate(problem, seeds=2, **options)
comparison = popdyn.compare(theory, simulation)
print(comparison)

# %%
# Theory (dashed line or bar) over the seed mean (solid) and its band of two standard deviations.
# The second-layer weights after the first step and the fraction of nice neurons.
comparison.plot(observables=["a1", "nice_fraction"])
