r"""
Domain generalisation: the regularisation path
==============================================

Nuclear-norm domain generalisation on the spurious-feature model ([Shi24], ch. 6): along a path of penalties
:math:`\lambda`, ``predict`` gives the population optimum of ERM with the penalty (block weights, exact in- and
out-of-distribution accuracies, nuclear norm, stable rank); ``simulate`` runs gradient descent on samples.

The model's page: :doc:`/domain_gen`.
"""
import popdyn
from popdyn.models import domain_gen

problem, options = domain_gen.Problem.example()
print(problem)
print(options)

theory = popdyn.predict(problem, **options)
simulation = popdyn.simulate(problem, seeds=2, **options)
comparison = popdyn.compare(theory, simulation)
print(comparison)

# %%
# Theory (dashed line or bar) over the seed mean (solid) and its band of two standard deviations.
# The invariant block's weight, the out-of-distribution accuracy and the stable rank along the path.
comparison.plot(observables=["alpha", "acc_ood", "stable_rank"])
