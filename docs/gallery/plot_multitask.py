r"""
Multi-task ReLU pretraining: the one-step map
=============================================

Multi-task ReLU representation learning ([Collins24]): ``predict`` gives the exact population map of one head
step and one shared first-layer step; ``simulate`` runs the paper's algorithm on samples
(``examples/multitask_quickstart.py`` draws every entry of the first layer).

The model's page: :doc:`/multitask`.
"""
import popdyn
from popdyn.models import multitask

problem, options = multitask.Problem.example()
print(problem)
print(options)

theory = popdyn.predict(problem, **options)
simulation = popdyn.simulate(problem, seeds=2, **options)
comparison = popdyn.compare(theory, simulation)
print(comparison)

# %%
# Theory (dashed line or bar) over the seed mean (solid) and its band of two standard deviations.
# The heads after the step, the contraction :math:`\kappa` and the loss.
comparison.plot(observables=["heads", "kappa", "loss"])
