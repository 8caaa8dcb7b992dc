"""``python -m popdyn.validation [model|claim ...] [--quick] [--device cpu|cuda] [--out DIR] [--resume] [--jobs N | --scheduler ADDRESS]``."""
import sys

from .runner import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
