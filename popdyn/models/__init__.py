"""One module (or subpackage) per setting of the theory; each registers ``popdyn.predict``."""
from . import lora
from . import looped
from . import modular
from . import icl

__all__ = ["lora", "modular", "icl", "looped"]
