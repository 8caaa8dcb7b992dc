"""One module (or subpackage) per setting of the theory; each registers ``popdyn.predict``."""
from . import lora
from . import icl
from . import modular
from . import looped

__all__ = ["lora", "icl", "modular", "looped"]
