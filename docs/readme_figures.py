"""Make README's figures: theory over the simulation's seed band for four models (``docs/figures/<model>.png``).

``python docs/readme_figures.py`` (needs popdyn[sim,plot]); each figure is the model's ``Problem.example()``
predicted, simulated on 3 seeds and compared, as in the gallery (docs/gallery/). About a minute on 2 cores after
the one-time numba compile.
"""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import popdyn  # noqa: E402
from popdyn.models import committee, icl, looped, lora  # noqa: E402

FIGURES = {"lora": (lora, ["m", "loss"]), "committee": (committee, ["eg", "R"]), "looped": (looped, ["error", "sq_dist"]),
           "icl": (icl, ["loss", "rel_error", "eval_risk"])}


def main(out=Path(__file__).resolve().parent / "figures"):
    out.mkdir(exist_ok=True)
    for name, (module, observables) in FIGURES.items():
        problem, options = module.Problem.example()
        comparison = popdyn.compare(popdyn.predict(problem, **options),
                                    popdyn.simulate(problem, seeds=3, progress=False, **options))
        comparison.plot(out / f"{name}.png", observables=observables)
        print(f"{name}: {comparison}")


if __name__ == "__main__":
    main()
