r"""
LoRA fine-tuning: the overlap ODE over online SGD
=================================================

Low-rank fine-tuning ([Dayi25]): the student's low-rank direction is trained by online SGD on the sphere, and
the population theory reduces training to one scalar ODE for the overlap :math:`m = \langle u, \hat u\rangle`
with the teacher's direction, including the normalisation drift of a finite step size. ``predict`` integrates
it in milliseconds; ``simulate`` trains the finite network with torch.

The model's page: :doc:`/lora`.
"""
import popdyn
from popdyn.models import lora

problem, options = lora.Problem.example()
print(problem)
print(options)

theory = popdyn.predict(problem, **options)
simulation = popdyn.simulate(problem, seeds=3, **options)
comparison = popdyn.compare(theory, simulation)
print(comparison)

# %%
# Theory (dashed line or bar) over the seed mean (solid) and its band of two standard deviations.
# The overlap :math:`m_t` and the population loss along it.
comparison.plot(observables=["m", "loss"])
