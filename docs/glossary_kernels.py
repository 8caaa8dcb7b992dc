"""Write the kernel-names table of docs/glossary.md: one meaning per kernel name, and the earlier names kept as aliases.

The rest of docs/glossary.md is written by ``python -m popdyn.glossary`` (the run options and shared fields); this
table lives here, outside the package, because it names values, not options. ``python docs/glossary_kernels.py``
rewrites the block between the markers (appending it when absent); ``--check`` exits 1 when the page is not what this
table makes.
"""
import sys
from pathlib import Path

HERE = Path(__file__).parent
BEGIN, END = "<!-- kernel-names:begin -->", "<!-- kernel-names:end -->"

#: kernel name -> (its one meaning, earlier names that remain as aliases), as popdyn.kernels and the models use them
KERNEL_NAMES = {
    "nngp": ("the NNGP kernel: the covariance of the network's output over random initialisations at infinite "
             "width, K(x, y) = E f(x) f(y); for one hidden layer, the kernel of its features (the 'conjugate kernel'); "
             "`popdyn.kernels.FC.nngp`, `kind`/`kernel` \"nngp\" of `popdyn.models.kernels`",
             "\"ck\" (`resnet.fc2_kernel_limit`; `popdyn.sim.resnet`'s `conjugate_kernel` at finite width)"),
    "ntk": ("the neural tangent kernel with every layer trained: the sum over all parameters of products of output "
            "gradients, Theta(x, y) = sum_p df(x)/dtheta_p df(y)/dtheta_p, at infinite width; "
            "`popdyn.kernels.FC.ntk`", ""),
    "ntk_hidden": ("the NTK of the hidden weights only (the readout fixed): ntk minus the readout's share, the "
                   "nngp; `resnet.fc2_kernel_limit(\"ntk_hidden\", d)`",
                   "\"ntk\" in `popdyn.sim.resnet` (its `empirical_ntk` trains the hidden weights only)"),
    "relu_nngp": ("the nngp of one ReLU layer on unit-norm inputs, a Hamming profile (`popdyn.models.resnet`)",
                  "`relu_ck`"),
    "relu_ntk": ("the ntk of a two-layer ReLU net, both layers trained (`popdyn.models.resnet`)", "`relu_ntk_full`"),
    "relu_ntk_hidden": ("the ntk_hidden of a two-layer ReLU net, relu_ntk minus relu_nngp (`popdyn.models.resnet`)",
                        ""),
}


def block():
    """The markdown block, markers included."""
    rows = [BEGIN, "## Kernel names", "",
            "The values of a `kernel` (or `kind`) field, and the kernels `popdyn.kernels.fc` gives as `nngp` and "
            "`ntk`. An earlier name remains as an alias of the same function or option. Written by "
            "`python docs/glossary_kernels.py` (a test keeps the two equal).", "",
            "| name | meaning | earlier names (aliases) |", "|---|---|---|"]
    rows += [f"| `{k}` | {m} | {a} |" for k, (m, a) in KERNEL_NAMES.items()]
    return "\n".join(rows + [END])


def page(text):
    """``text`` (docs/glossary.md) with the block rewritten, or appended after a blank line when absent."""
    if BEGIN in text:
        head, rest = text.split(BEGIN)
        return head + block() + rest.split(END, 1)[1]
    return text.rstrip("\n") + "\n\n" + block() + "\n"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    path = HERE / "glossary.md"
    text = path.read_text()
    new = page(text)
    if "--check" in argv:
        return 0 if new == text else 1
    path.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
