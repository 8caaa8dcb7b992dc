"""Finite-sample torch training, one module per model; the only place that imports torch."""
