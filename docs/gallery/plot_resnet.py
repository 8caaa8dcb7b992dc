r"""
ResNets vs kernels: exact kernel test error
===========================================

ResNets against kernels ([AllenZhu19]): ``predict`` gives the exact population test error of kernel ridge
regression on Theorem 2's target over the hypercube (by Parseval); ``simulate`` fits the kernel on samples and
measures its test error.

The model's page: :doc:`/resnet`.
"""
import popdyn
from popdyn.models import resnet

problem, options = resnet.Problem.example()
print(problem)
print(options)

theory = popdyn.predict(problem, **options)
simulation = popdyn.simulate(problem, seeds=2, **options)
comparison = popdyn.compare(theory, simulation)
print(comparison)

# %%
# Theory (dashed line or bar) over the seed mean (solid) and its band of two standard deviations.
# Test error and the parts of the two target components the kernel captures.
comparison.plot(observables=["test_error", "captured_F", "captured_G"])
