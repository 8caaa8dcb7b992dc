r"""
Feature emergence: population steps against training
====================================================

Feature emergence from input structure ([Shi22]): the exact population steps 1-2 and the reduced population
gradient descent of stage 3 against the network trained on samples.

The model's page: :doc:`/emergence`.
"""
import popdyn
from popdyn.models import emergence

problem, options = emergence.Problem.example()
print(problem)
print(options)

theory = popdyn.predict(problem, **options)
simulation = popdyn.simulate(problem, seeds=2, **options)
comparison = popdyn.compare(theory, simulation)
print(comparison)

# %%
# Theory (dashed line or bar) over the seed mean (solid) and its band of two standard deviations.
# Test hinge loss and error, step by step.
comparison.plot(observables=["loss", "error"])
