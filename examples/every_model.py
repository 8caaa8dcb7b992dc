"""The predict -> simulate -> compare -> plot loop on every problem class of the catalogue.

Each class's ``example()`` gives a small problem and options that ``popdyn.predict`` and ``popdyn.simulate``
both take; the figures (theory over the simulation's seed band) go to ``./every_model/<name>.png``.

    python examples/every_model.py [NAME ...]
"""
import sys
import time
from pathlib import Path

import popdyn
from popdyn.models import catalogue


def main(out="every_model", names=None, seeds=2):
    out = Path(out)
    rows = []
    for e in catalogue():
        if names and e.name not in names:
            continue
        problem, options = e.cls.example()
        start = time.perf_counter()
        comparison = popdyn.compare(popdyn.predict(problem, **options),
                                    popdyn.simulate(problem, seeds=seeds, **options))
        path = comparison.plot(out / f"{e.name}.png")
        rows.append((e.name, time.perf_counter() - start, path))
        print(f"{e.name:<22} {rows[-1][1]:6.1f} s  {path}")
    return rows


if __name__ == "__main__":
    main(names=sys.argv[1:] or None)
