r"""
In-context regression: population GD of linear attention
========================================================

Rank-:math:`r` linear attention trained for in-context linear regression ([Shi24], ch. 5): ``predict`` runs the
population gradient descent through its saddles to the optimum of Theorem 5.4.1, ``simulate`` trains the
attention on sampled prompts.

The model's page: :doc:`/icl`.
"""
import popdyn
from popdyn.models import icl

problem, options = icl.Problem.example()
print(problem)
print(options)

theory = popdyn.predict(problem, **options)
simulation = popdyn.simulate(problem, seeds=2, **options)
comparison = popdyn.compare(theory, simulation)
print(comparison)

# %%
# Theory (dashed line or bar) over the seed mean (solid) and its band of two standard deviations.
# Loss, distance to the optimum and evaluation risk along training.
comparison.plot(observables=["loss", "rel_error", "eval_risk"])
