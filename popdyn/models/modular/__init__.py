"""k-input modular addition (a_1 + ... + a_k) mod p: max-margin Fourier circuits ([Shi24], Ch. 4).

Docs: docs/modular.md. A network is a pair ``U`` (m, k, p), ``W`` (m, p) with
``f(theta, a)[c] = sum_i (sum_j U[i, j, a_j])^k W[i, c]``. Networks trained elsewhere: the margins, the norm and
the diagnostics also take another activation (``activation=``, ``degree=``), a first layer tied across the inputs
(``U`` of shape (m, p) with ``k=``) and a token embedding (``embedding=`` of shape (p, d)), for any p >= 2 (the
ratios to gamma*: the paper's network with p odd).

* Problems and closed forms: :class:`Problem` (the network), :class:`TransformerProblem` (Figs. 4.3, 4.4),
  :func:`max_margin` (gamma*), :func:`construction_width`.
* Network: :func:`all_inputs`, :func:`norm`, :func:`logits`, :func:`point_margins`, :func:`margin`,
  :func:`normalized_margin`, :func:`class_weighted_margin` (numba kernels over all p^k inputs).
* Fourier: :func:`single_neuron_margin` (Psi), :func:`optimal_neuron`, :func:`max_margin_network`,
  :func:`construction_logit`, :func:`construction_margin`, :func:`margin_dft`.
* Diagnostics: :func:`power_spectrum`, :func:`fourier_diagnostics`, :func:`circuit_table`,
  :func:`diagnostics`; of a transformer's weights: :func:`attention_matrices`, :func:`power_spectrum_2d`,
  :func:`attention_diagnostics`, :func:`embedding_spectrum`, :func:`neuron_maps`.
* ``popdyn.predict`` / ``popdyn.simulate`` of both problems: registered in ``predict.py`` (the theory) with
  the torch twins in :mod:`popdyn.sim.modular`.
"""
from .diagnostics import circuit_table, diagnostics, fourier_diagnostics, power_spectrum
from .fourier import (construction_logit, construction_margin, margin_dft, max_margin_network, optimal_neuron,
                      single_neuron_margin)
from .network import all_inputs, class_weighted_margin, logits, margin, norm, normalized_margin, point_margins
from .problem import Problem, TransformerProblem, construction_width, max_margin
from .transformer import attention_diagnostics, attention_matrices, embedding_spectrum, neuron_maps, power_spectrum_2d
from . import predict  # noqa: F401,E402  (the theory of both problem classes, registered with popdyn.api)

__all__ = ["Problem", "max_margin", "construction_width",
           "all_inputs", "norm", "logits", "point_margins", "margin", "normalized_margin", "class_weighted_margin",
           "single_neuron_margin", "optimal_neuron", "max_margin_network", "construction_logit",
           "construction_margin", "margin_dft",
           "power_spectrum", "fourier_diagnostics", "circuit_table", "diagnostics",
           "TransformerProblem", "attention_matrices", "power_spectrum_2d", "attention_diagnostics",
           "embedding_spectrum", "neuron_maps"]
