"""Shared test data: one valid example Problem per model, and regime-named Hypothesis strategies."""
import numpy as np
from hypothesis import strategies as st

from popdyn.models import looped
from popdyn.models import icl
from popdyn.models import lora
from popdyn.models import modular

EXAMPLES = {
    "icl": [lambda: icl.Problem.geometric(4, N=20, r=2, M=8, sigma=0.5),
            lambda: icl.Problem.random(5, N=10, r=3, M=16, rho=0.25, seed=1),
            lambda: icl.ParityProblem.paper(1, 3, gamma=0.1)],
    "looped": [lambda: looped.Problem.fig8_1(16), lambda: looped.Problem(8, 3, -2.0, 0.1, np.array([1.0, 0.5, 2.0]))],
    "lora": lambda: lora.Problem.orthonormal(k=4, xi=1.5, activation="relu", seed=0),
    "modular": lambda: modular.Problem(p=11, k=3),
}


@st.composite
def lora_problems(draw, activations=("relu", "erf", "tanh", "he3"), orthonormal=None, k_max=12):
    """Valid LoRA problems inside A1-A3: k in [2, k_max], xi in [0.05, 5], lam in +-[0.3, 2], quantised c."""
    k = draw(st.integers(2, k_max))
    xi = draw(st.floats(0.05, 5.0))
    seed = draw(st.integers(0, 2**31 - 1))
    act = draw(st.sampled_from(activations))
    orth = draw(st.booleans()) if orthonormal is None else orthonormal
    rng = np.random.default_rng(seed)
    lam = rng.uniform(0.3, 2.0, k) * rng.choice([-1.0, 1.0], k)
    c, c_hat = rng.choice([-1.0, 1.0], size=(2, k)) / np.sqrt(k)
    if orth:
        G = np.eye(k)
    else:
        W = rng.standard_normal((k, k + 3))
        W /= np.linalg.norm(W, axis=1, keepdims=True)
        G = W @ W.T
        np.fill_diagonal(G, 1.0)
    return lora.Problem(G, lam, c, c_hat, xi, act)
