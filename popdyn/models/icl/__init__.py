"""In-context learning with linear / low-rank attention (specs/modular_and_icl.md, Parts B and C).

Two parts: the rank-r in-context linear regression (``regression``) and the sparse-parity part
(``parity``). Each part adds its public names here (one import line and its names in ``__all__``).
"""
__all__ = []
