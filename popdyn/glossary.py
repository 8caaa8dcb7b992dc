"""One meaning per name: the words every model uses for its run options and shared fields.

``TERMS`` maps a name to its one meaning, the letters the papers use for it, and the rule its values follow.
Every option that a ``Problem`` declares (``popdyn._options.Option``) and that two problem classes share is
listed here, with this meaning; a paper letter that clashes (``T`` is loops in one paper, tasks in another,
steps in a third) never appears as a name in code: the docstring gives the paper's letter. ``RETIRED`` lists
the old names and what replaced them, so a call with an old name gets an error that says the new one.
``docs/glossary.md`` is written from this table (``python -m popdyn.glossary > docs/glossary.md``).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Term", "TERMS", "RETIRED", "markdown"]


@dataclass(frozen=True)
class Term:
    """A name's one meaning, the papers' letters for it, and the rule its values follow."""
    meaning: str
    symbols: str = ""
    rule: str = ""


TERMS = {
    # sizes of the setting
    "d": Term("input dimension", "d (every paper)", "int >= 1"),
    "width": Term("hidden width: number of first-layer neurons", "m (two-layer networks), m (ResNet)", "int >= 1"),
    "context": Term("number of (x, y) examples in a training prompt", "n (looped, ch. 8), N (ICL, ch. 5)",
                    "int >= 1"),
    "test_context": Term("number of (x, y) examples in an evaluation prompt (a tuple sweeps several)",
                         "M (ICL and parity, ch. 5)", "int >= 1, or a tuple of them"),
    "n_tasks": Term("number of tasks", "T (multitask, contrastive ch. 7)", "int >= 1"),
    "n_labelled": Term("number of labelled downstream samples", "m (contrastive, ch. 7)", "int >= 1"),
    "loops": Term("number of loops of the looped transformer (= GD steps it emulates)", "T (ch. 8)", "int >= 0"),
    "K": Term("hidden units of the student committee", "K (Saad & Solla 1995)", "int >= 1"),
    "M": Term("hidden units of the teacher committee", "M (Saad & Solla 1995)", "int >= 1"),
    # training
    "steps": Term("number of training steps (SGD, GD or Adam updates)", "T (emergence), t", "int >= 1"),
    "lr": Term("step size (learning rate)", "eta, eta_t; delta/d (LoRA)", "float > 0"),
    "lr_c": Term("step size of LoRA's output coefficients c_hat when they are trained", "eta_c", "float > 0"),
    "lr_v": Term("step size of the committee's second layer when it is trained", "eta_v", "float > 0"),
    "batch": Term("minibatch size: samples per step", "B", "int >= 1"),
    "optimizer": Term("training algorithm of the simulation", "", "one of the problem's choices"),
    "weight_decay": Term("L2 weight decay per step (decoupled for AdamW)", "lambda, wd", "float >= 0"),
    "init_scale": Term("scale of the initial weights", "", "float > 0"),
    "init": Term("where a simulation's initial weights come from: the prediction's for every seed, or a fresh "
                 "draw per seed", "", '"problem" or "random"'),
    "init_seed": Term("seed of the initial weights shared by theory and simulation", "", "int >= 0"),
    "n_train": Term("number of training samples", "n, N (ResNet)", "int >= 1"),
    "n_test": Term("number of fresh test samples used to evaluate a trained network", "", "int >= 1"),
    "prompts": Term("number of sampled prompts (Monte Carlo size of an in-context risk)", "", "int >= 1"),
    # runs
    "seeds": Term("number of independent runs of a simulation (runs use seed, seed + 1, ...)", "",
                  "int >= 1"),
    "seed": Term("first random seed of a run (simulation) or of a theory's Monte Carlo", "", "int >= 0"),
    "device": Term("torch device of a simulation", "", '"cpu" or "cuda"'),
    "dtype": Term("torch dtype of a simulation (None: float64)", "", '"float64", "float32", a torch dtype or None'),
    "progress": Term("show a progress bar; None shows it when stderr is a terminal", "", "bool or None"),
    "n_points": Term("number of recorded times on [0, steps]", "", "int >= 2"),
    # theory
    "method": Term("algorithm that computes the theory or trains the network", "", "one of the problem's choices"),
    "convention": Term('"corrected" (popdyn\'s default) or "paper" (the form as printed; docs/errata.md)', "",
                       '"corrected" or "paper"'),
    "delta": Term("probability a high-probability statement may fail (or mass of inputs it may exclude)",
                  "delta", "float in (0, 1)"),
    "chunk": Term("samples per block of a memory-bounded pass; results do not depend on it", "", "int >= 1"),
    "n_mc": Term("Monte Carlo sample size of a theory quantity without a closed form", "", "int >= 2"),
    "rtol": Term("relative tolerance of an ODE solver", "", "float in (0, 1)"),
    "atol": Term("absolute tolerance of an ODE solver", "", "float > 0"),
    "m0": Term("initial overlap m(0) = <u_hat_0, u> of LoRA", "m_0", "float in [-1, 1]"),
    "ridge": Term("ridge (Tikhonov) parameter of kernel regression", "lambda (ResNet paper)", "float >= 0"),
    "loss": Term("loss function of the training objective", "l", "one of the problem's choices"),
}

RETIRED = {
    "T": "loops (looped), n_tasks (multitask, contrastive) or steps (emergence)",
    "N": "context (ICL) or n_train (ResNet)",
    "eta": "lr",
    "eta1": "lr",
    "wd": "weight_decay",
    "test": "n_test",
    "progress_bar": "progress",
    "records": "n_points",
    "record_every": "n_points",
}


_INTRO = """# Glossary

One meaning per name, in every model: the run options of `popdyn.predict` / `popdyn.simulate` and the problem
fields that several models share. Where a paper's letter clashes with another paper's (`T` is the number of
loops in one chapter, of tasks in another, of steps in a third), the code uses the name below and the
docstring gives the paper's letter. Letters that belong to one model only (LoRA's `k`, `xi`; modular's `p`)
keep the paper's name and are explained in that problem's docstring; `popdyn models MODEL` lists each
problem's options with their help, constraint and default.

This page is written by `python -m popdyn.glossary` from `popdyn/glossary.py` (a test keeps the two equal).
"""


def markdown():
    """docs/glossary.md: the glossary as Markdown tables."""
    rows = [_INTRO, "| name | meaning | the papers' letters | values |", "|---|---|---|---|"]
    rows += [f"| `{k}` | {t.meaning} | {t.symbols} | {t.rule} |" for k, t in TERMS.items()]
    rows += ["", "Retired names (an option given under one of these gets an error naming its replacement):", "",
             "| old | new |", "|---|---|"]
    rows += [f"| `{k}` | {v} |" for k, v in RETIRED.items()]
    return "\n".join(rows) + "\n"


if __name__ == "__main__":  # pragma: no cover
    print(markdown(), end="")
