r"""
Looped transformers: error curves loop by loop
==============================================

A looped linear transformer emulating gradient descent in context ([Shi24], ch. 8): the exact in-context error
after each loop, against the transformer run on random prompts.

The model's page: :doc:`/looped`.
"""
import popdyn
from popdyn.models import looped

problem, options = looped.Problem.example()
print(problem)
print(options)

theory = popdyn.predict(problem, **options)
simulation = popdyn.simulate(problem, seeds=3, **options)
comparison = popdyn.compare(theory, simulation)
print(comparison)

# %%
# Theory (dashed line or bar) over the seed mean (solid) and its band of two standard deviations.
# The error of the prediction and the squared distance to the target, per loop.
comparison.plot(observables=["error", "sq_dist"])
