r"""
Linear contrastive learning: the pre-trained representation
===========================================================

Linear multi-task contrastive learning ([Shi24], ch. 7): the population optimum of the contrastive loss under a
spectral and Frobenius budget spreads its column norms over the tasks' shared and private features.
``predict`` gives the optimal representation in closed form; ``simulate`` trains it by projected SGD on
sampled pairs.

The model's page: :doc:`/contrastive`.
"""
import popdyn
from popdyn.models import contrastive

problem, options = contrastive.Problem.example()
print(problem)
print(options)

theory = popdyn.predict(problem, **options)
simulation = popdyn.simulate(problem, seeds=2, **options)
comparison = popdyn.compare(theory, simulation)
print(comparison)

# %%
# Theory (dashed line or bar) over the seed mean (solid) and its band of two standard deviations.
# The column norms of the learned representation and the private features' weight :math:`\beta`; the example is
# small and trained briefly, the validation claims run it to convergence (:doc:`/contrastive`).
comparison.plot(observables=["column_norms", "beta"])
