r"""
Committee machines: the Saad-Solla overlap ODE over online SGD
==============================================================

Soft committee machines ([Saad95], [Biehl95], [Goldt19]): online SGD of a two-layer student on a teacher of the same
form reduces, as the input dimension grows, to an ODE for the order parameters: the student-student overlaps
:math:`Q`, the student-teacher overlaps :math:`R` and the second-layer weights. ``predict`` integrates it;
``simulate`` runs online SGD at finite :math:`d`.

The model's page: :doc:`/committee`.
"""
import popdyn
from popdyn.models import committee

problem, options = committee.Problem.example()
print(problem)
print(options)

theory = popdyn.predict(problem, **options)
simulation = popdyn.simulate(problem, seeds=3, **options)
comparison = popdyn.compare(theory, simulation)
print(comparison)

# %%
# Theory (dashed line or bar) over the seed mean (solid) and its band of two standard deviations.
# The generalisation error and the student-teacher overlaps :math:`R` (one colour per entry).
comparison.plot(observables=["eg", "R"])
