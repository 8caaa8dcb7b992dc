"""One module (or subpackage) per setting of the theory; each registers ``popdyn.predict``."""
from . import lora

__all__ = ["lora"]
