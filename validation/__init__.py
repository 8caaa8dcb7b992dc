"""The validation layer: claims of the theory held against finite-sample simulation.

``popdyn.validation.claims`` holds the claims (one module per model, discovered automatically),
``popdyn.validation.runner`` runs them and writes ``validation/report/REPORT.md``, ``popdyn.validation.bench``
measures performance. Uses only popdyn's public API; nothing in popdyn imports it except the CLI
(lazily).
"""
__all__ = ["claims", "runner", "bench"]
