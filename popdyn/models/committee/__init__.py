from .integrals import Integrals, integrals
