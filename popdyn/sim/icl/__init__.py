"""Finite-sample training for the in-context learning problems: ``regression`` (``icl``) and ``parity``
(``icl.parity``), each imported by ``popdyn.simulate`` through the path its registration names."""

__all__ = []
