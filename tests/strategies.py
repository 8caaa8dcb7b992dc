"""Shared test data: the property-suite registry every model joins, and regime-named Hypothesis strategies.

``MODELS`` maps a problem name (as ``popdyn predict`` spells it: ``lora``, ``icl``, ``icl.parity``, ...) to
a :class:`ModelSpec`: a Hypothesis strategy of valid problems (built with ``hypothesis.extra.numpy`` so
that shrinking acts on the numbers themselves), explicit edge cases, cheap ``predict`` options, bad
``predict`` options that must raise naming their parameter, and the model's public functions of a
problem. ``tests/test_common.py`` runs the common properties over every entry; a new model joins by
adding one entry here (docs/adding_a_model.md).
"""
import math
from dataclasses import dataclass, field

import numpy as np
from hypothesis import assume, strategies as st
from hypothesis.extra import numpy as hnp

from popdyn.models import (committee, contrastive, domain_gen, emergence, gradient_features, icl, kernels, looped, lora,
                           modular, multitask, resnet)

__all__ = ["ModelSpec", "MODELS", "EXAMPLES", "lora_problems", "unit_rows"]


@dataclass(frozen=True)
class ModelSpec:
    """How the common property suite exercises one problem class.

    Attributes
    ----------
    problems : SearchStrategy
        Valid problems, inside the hypotheses of the model's theorems.
    edges : tuple of callable
        Zero-argument factories of explicit edge-case problems (run on every test run, not drawn).
    predict : dict
        Options that make ``popdyn.predict`` cheap (milliseconds to a second).
    bad_predict : tuple of (str, object)
        ``(option, invalid value)`` pairs: ``predict`` must raise a ValueError naming the option.
    functions : tuple of (callable, dict)
        Public functions ``f(problem, **kw)`` of the model whose outputs must be finite.
    simulate : dict
        Options that make ``popdyn.simulate`` tiny (two seeds, a few steps) on the first edge case.
    """
    problems: st.SearchStrategy
    edges: tuple = ()
    predict: dict = field(default_factory=dict)
    bad_predict: tuple = ()
    functions: tuple = ()
    simulate: dict = field(default_factory=dict)


def unit_rows(draw, k, n):
    """A (k, n) matrix with unit rows, drawn with hnp.arrays (rows bounded away from 0 before scaling)."""
    W = draw(hnp.arrays(np.float64, (k, n), elements=st.floats(-1, 1, allow_subnormal=False)))
    W = W + np.where(np.abs(W).sum(1, keepdims=True) < 0.5, np.eye(n)[np.arange(k) % n], 0.0)  # rows away from 0
    return W / np.linalg.norm(W, axis=1, keepdims=True)


@st.composite
def lora_problems(draw, activations=("relu", "erf", "tanh", "he3"), orthonormal=None, k_max=12):
    """Valid LoRA problems inside A1-A3: k in [1, k_max], xi in [0.05, 5], |lam| in [0.3, 2], quantised c.

    Non-orthonormal features are unit rows of a (k, d_w) matrix with d_w in [1, k + 3], so the Gram
    matrix is singular whenever d_w < k (an edge the theory allows).
    """
    k = draw(st.integers(1, k_max))
    xi = draw(st.floats(0.05, 5.0))
    act = draw(st.sampled_from(activations))
    lam = draw(hnp.arrays(np.float64, k, elements=st.floats(0.3, 2.0))) * draw(
        hnp.arrays(np.float64, k, elements=st.sampled_from([-1.0, 1.0])))
    c, c_hat = draw(hnp.arrays(np.float64, (2, k), elements=st.sampled_from([-1.0, 1.0]))) / np.sqrt(k)
    orth = draw(st.booleans()) if orthonormal is None else orthonormal
    if orth:
        G = np.eye(k)
    else:
        W = unit_rows(draw, k, draw(st.integers(1, k + 3)))
        G = W @ W.T
        np.fill_diagonal(G, 1.0)
    return lora.Problem(G, lam, c, c_hat, xi, act)


@st.composite
def icl_problems(draw):
    """Rank-r ICL regression: a positive spectrum (hnp.arrays), d in [1, 6], r <= d, noise and flips."""
    d = draw(st.integers(1, 6))
    lam = draw(hnp.arrays(np.float64, d, elements=st.floats(0.05, 3.0)))
    M = draw(st.integers(1, 32))
    return icl.Problem.from_spectrum(lam, draw(st.integers(1, 50)), draw(st.integers(1, d)), test_context=M,
                                     sigma=draw(st.floats(0, 2)), rho=draw(st.integers(0, M)) / M,  # whole flips
                                     rotate=draw(st.booleans()), seed=draw(st.integers(0, 9)))


@st.composite
def parity_problems(draw):
    """Sparse parity tasks of the paper's family (Thm 5.5.1): 1 <= nu1 < nu2 <= 4, gamma in (0, 0.25)."""
    nu2 = draw(st.integers(2, 4))
    return icl.ParityProblem.paper(draw(st.integers(1, nu2 - 1)), nu2, gamma=draw(st.floats(0.01, 0.24)))


@st.composite
def looped_problems(draw):
    """Looped-TF regression with context > d (Thm 8.16's regime) and a positive diagonal covariance."""
    d = draw(st.integers(1, 6))
    n = draw(st.integers(d + 1, 4 * d + 8))
    cov = draw(hnp.arrays(np.float64, d, elements=st.floats(0.1, 4.0)))
    alpha = draw(st.floats(0.1, 3.0)) * draw(st.sampled_from([-1.0, 1.0]))
    return looped.Problem(n, d, alpha, draw(st.floats(0.0, 0.5)), cov)


@st.composite
def modular_transformer_problems(draw):
    """Small transformers on k-input modular addition (every architecture field drawn)."""
    return modular.TransformerProblem(p=draw(st.sampled_from([3, 5, 7])), k=draw(st.integers(2, 3)),
                                      layers=draw(st.integers(1, 2)), heads=draw(st.integers(1, 3)),
                                      d_model=draw(st.integers(1, 8)), d_head=draw(st.integers(1, 4)),
                                      d_mlp=draw(st.integers(1, 16)), activation=draw(st.sampled_from(["relu", "gelu"])))


@st.composite
def modular_problems(draw):
    """k-input modular addition with a small odd prime p (exhaustive kernels stay cheap)."""
    return modular.Problem(p=draw(st.sampled_from([3, 5, 7, 11])), k=draw(st.integers(2, 3)),
                           convention=draw(st.sampled_from(["corrected", "paper"])))


@st.composite
def emergence_problems(draw):
    """Feature emergence at small sizes: odd k in {3, 5}, D in [k + 1, 24], p_o in [0.05, 0.5], width <= 8."""
    k = draw(st.sampled_from([3, 5]))
    return emergence.Problem(D=draw(st.integers(k + 1, 24)), k=k, p_o=draw(st.floats(0.05, 0.5)),
                             width=draw(st.integers(1, 8)), data=draw(st.sampled_from(["parity", "parity_mix"])),
                             structure=draw(st.booleans()), variant=draw(st.sampled_from(["lemma23", "thm26"])),
                             seed=draw(st.integers(0, 9)))


@st.composite
def multitask_problems(draw):
    """Multi-task pretraining in the paper's regime: r in [1, 4], d in [r + 1, 60], even width in [2r, 16], any task set."""
    r = draw(st.integers(1, 4))
    d = draw(st.integers(r + 1, 60))
    tasks = draw(st.one_of(st.just("hadamard"), st.integers(1, 40),
                           hnp.arrays(np.float64, (draw(st.integers(1, 6)), 2 ** r), elements=st.sampled_from([-1.0, 1.0]))))
    lam_w = draw(st.one_of(st.sampled_from(["paper", "adaptive"]), st.floats(0.5, 2.0)))
    return multitask.Problem(d, r, 2 * draw(st.integers(r, 8)), tasks, None, lam_w, draw(st.integers(0, 9)))


@st.composite
def gradient_features_problems(draw):
    """Gradient-feature learning at small sizes: XOR (gamma = sigma_B/sqrt(d) < 1), structured parity (k = 3),
    uniform parity (odd d, k = 2) and linear data, m <= 6 base neurons."""
    data, seed, m = draw(st.sampled_from(["xor", "structured_parity", "uniform_parity", "linear"])), \
        draw(st.integers(0, 9)), \
        draw(st.integers(1, 6))
    if data == "xor":
        d = draw(st.integers(3, 12))
        return gradient_features.Problem.xor(d=d, sigma_B=draw(st.floats(0.5, min(3.0, 0.9 * math.sqrt(d)))),
                                             width=m, tau=draw(st.floats(0.5, 4.0)), seed=seed)
    if data == "structured_parity":
        return gradient_features.Problem.structured_parity(d=draw(st.integers(5, 8)), k=3,
                                                           p_A=draw(st.floats(0.05, 0.5)), width=m,
                                                           tau=draw(st.floats(2.5, 5.0)), seed=seed)
    if data == "linear":
        return gradient_features.Problem.linear(d=draw(st.integers(3, 12)), width=m, rho=draw(st.floats(1.0, 2.0)),
                                                seed=seed)
    return gradient_features.Problem.uniform_parity(d=draw(st.sampled_from([5, 7, 9])), k=2, width=m, seed=seed)


@st.composite
def resnet_problems(draw):
    """Kernel ridge regression of the Theorem 2 target: d <= 12, k <= min(d, 4), n_train <= 60, any kernel."""
    d = draw(st.integers(1, 12))
    return resnet.Problem(kernel=draw(st.sampled_from(sorted(resnet.KERNELS))), d=d, k=draw(st.integers(1, min(d, 4))),
                          alpha=draw(st.floats(0.0, 1.0)), n_train=draw(st.integers(1, 60)),
                          ridge=draw(st.floats(1e-6, 1.0)), normalized=draw(st.booleans()),
                          seed=draw(st.integers(0, 9)))


@st.composite
def kernel_problems(draw):
    """Kernel learning on the cube: d <= 30, a target of up to 3 Walsh terms of degree <= 3, closed-form and Hermite
    activations at depth <= 3, either kernel, ridge in [1e-6, 1], label noise <= 0.5."""
    d = draw(st.integers(1, 30))
    sets = draw(st.lists(st.lists(st.integers(0, d - 1), max_size=min(3, d), unique=True), min_size=1, max_size=3,
                         unique_by=lambda S: tuple(sorted(S))))
    coefs = draw(hnp.arrays(np.float64, len(sets), elements=st.floats(-2.0, 2.0)))
    return kernels.Problem(d, {tuple(S): float(c) for S, c in zip(sets, coefs)}, draw(st.integers(1, 3)),
                           draw(st.sampled_from(["relu", "erf", "abs", "gelu", "tanh"])), draw(st.floats(0.5, 2.0)),
                           draw(st.floats(0.0, 1.0)), draw(st.sampled_from(["ntk", "nngp"])),
                           draw(st.floats(1e-6, 1.0)), draw(st.floats(0.0, 0.5)))


@st.composite
def resnet_network_problems(draw):
    """Networks of [AllenZhu19] at tiny sizes: the Theorem 2 target (d <= 10, k <= min(d, 4)) or Figure 2's (k = 4,
    d in [8, 10]), n_train <= 40, width <= 16 (the training is a run option)."""
    target = draw(st.sampled_from(["thm2", "fig2"]))
    d = draw(st.integers(8, 10)) if target == "fig2" else draw(st.integers(1, 10))
    k = 4 if target == "fig2" else draw(st.integers(1, min(d, 4)))
    return resnet.NetworkProblem(arch=draw(st.sampled_from(sorted(resnet.NETWORK_ARCHS))), target=target, d=d, k=k,
                                 alpha=draw(st.floats(0.0, 1.0)),
                                 beta=draw(st.floats(0.2, 1.0)) if target == "fig2" else 1.0,
                                 width=draw(st.integers(1, 16)), n_train=draw(st.integers(1, 40)),
                                 seed=draw(st.integers(0, 9)))


@st.composite
def committee_problems(draw):
    """Soft committee machines: K, M <= 2 (K + M <= 4 keeps ReLU's quadrature cheap); erf (plain or Saad-Solla
    scale), linear, relu; teacher_overlap = B B^T random PSD."""
    K, M = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    act = draw(st.sampled_from(["erf", "erf(r=0.7071067811865475)", "linear", "relu"]))
    B = draw(hnp.arrays(np.float64, (M, M + 1), elements=st.floats(-1, 1)))
    v_star = draw(hnp.arrays(np.float64, (M,), elements=st.floats(-2, 2)))
    return committee.Problem(K, M, act, teacher_overlap=B @ B.T, v_star=v_star, sigma=draw(st.floats(0.0, 0.5)),
                             order=draw(st.sampled_from([1, 2])))


@st.composite
def contrastive_problems(draw):
    """Multi-task linear contrastive model: n_tasks in [1, 4], 1 <= s <= r <= s + 3, d in [k, k + 3], drawn weights, sigmas;
    only mixtures whose universal optimum keeps every task's private features."""
    T = draw(st.integers(1, 4))
    s = draw(st.integers(1, 4))
    r = draw(st.integers(s, s + 3))
    k = s + T * (r - s)
    w = draw(hnp.arrays(np.float64, T, elements=st.floats(0.2, 1.0)))
    sig = [draw(st.one_of(st.floats(0.5, 2.0), hnp.arrays(np.float64, T, elements=st.floats(0.5, 2.0))))
           for _ in range(3)]
    p = contrastive.Problem(T, s, r, draw(st.integers(k, k + 3)), w / w.sum(), *sig, draw(st.integers(0, T - 1)),
                            draw(st.floats(0.1, 1.0)), draw(st.floats(0.0, 1.0)), draw(st.floats(0.0, 1.0)),
                            draw(st.floats(0.0, 2.0)))
    # the trade-off's regime: the universal optimum keeps every task's private features (a task it drops has no
    # finite probe: predict's probe_norm is then inf, correctly)
    assume(r == s or min(contrastive.optimal_representation(p)[1]) > 1e-3)
    return p


@st.composite
def domain_gen_problems(draw):
    """Spurious-feature models: r in [1, 20], d in [r, 3 r + 30], gamma in [-0.49, 0.49] (either sign)."""
    r = draw(st.integers(1, 20))
    return domain_gen.SpuriousFeatureModel(r, draw(st.integers(r, 3 * r + 30)),
                                           draw(st.floats(-0.49, 0.49, allow_subnormal=False)))


MODELS = {
    "lora": ModelSpec(
        lora_problems(),
        edges=(lambda: lora.Problem.orthonormal(k=1, xi=1.0, activation="relu"),          # k = 1
               lambda: lora.Problem(np.ones((3, 3)), np.ones(3), np.ones(3) / np.sqrt(3),  # rank-1 (singular) Gram
                                    -np.ones(3) / np.sqrt(3), 0.7, "tanh"),
               lambda: lora.Problem.orthonormal(k=4, xi=1e-3, activation="erf", seed=2),   # lazy edge xi -> 0
               lambda: lora.Problem.orthonormal(k=4, xi=50.0, activation="he3", seed=3)),  # GLM edge xi -> inf
        predict={"d": 200, "lr": 1e-3, "steps": 400, "n_points": 20, "n_mc": 512},
        bad_predict=(("lr", -1.0), ("steps", 0), ("d", 1.5), ("m0", 1.5), ("convention", "nope")),
        functions=((lora.h, {"m": np.array([-1.0, 0.0, 1.0])}), (lora.population_loss, {"m": np.array([-1.0, 1.0])}),
                   (lora.h0, {}), (lora.limit_sign, {})),
        simulate={"d": 20, "lr": 1e-2, "steps": 30, "seeds": 2, "n_points": 5}),
    "lora.general": ModelSpec(
        st.builds(lambda p, a, proj: lora.GeneralProblem.from_alpha(p, a, seed=1, project=proj),
                  lora_problems(activations=("relu", "tanh"), orthonormal=True, k_max=6).filter(lambda p: p.k >= 2),
                  st.floats(0.0, 0.9), st.booleans()),
        edges=(lambda: lora.GeneralProblem.from_alpha(lora.Problem.orthonormal(k=2, xi=1.0, activation="relu"), 0.0),
               lambda: lora.GeneralProblem.from_alpha(lora.Problem.orthonormal(k=4, xi=1.0, activation="tanh"), 0.9,
                                                      project=False)),
        predict={"d": 200, "lr": 1e-3, "steps": 400, "n_points": 20, "n_mc": 512},
        bad_predict=(("lr", -1.0), ("steps", 0), ("convention", "nope")),
        functions=((lora.general_loss, {"m": 0.3}),
                   (lambda p: np.concatenate([np.ravel(g) for g in lora.general_gradient(p, 0.3)]), {})),
        simulate={"d": 20, "lr": 1e-2, "steps": 30, "seeds": 2, "n_points": 5}),
    "icl": ModelSpec(
        icl_problems(),
        edges=(lambda: icl.Problem.from_spectrum([1.0], 1, 1),                           # d = 1, context 1
               lambda: icl.Problem.two_level(6, 2, 20, 2, high=1.0, low=1e-3, rho=1.0)),  # ill-conditioned, all flipped
        predict={"lr": 0.05, "steps": 200, "n_points": 10},
        bad_predict=(("lr", -1.0), ("steps", 0), ("init_scale", -1.0)),
        functions=((lambda p: icl.optimal_loss(p.Lambda, p.context, p.r), {}),
                   (lambda p: icl.optimum_eval_risk_avg(p.Lambda, p.context, p.r, p.test_context, p.sigma), {})),
        simulate={"lr": 1e-2, "steps": 5, "batch": 16, "seeds": 2, "n_points": 2}),
    "icl.parity": ModelSpec(
        parity_problems(),
        edges=(lambda: icl.ParityProblem.paper(1, 2, gamma=0.01), lambda: icl.ParityProblem.paper(3, 4, gamma=0.24),
               lambda: icl.ParityProblem(d=2, k=2, gamma=0.1, pT=0.0)),                    # k = d, no noise
        predict={"test_context": (16, 64), "prompts": 64},
        bad_predict=(("prompts", 1), ("flip", 2.0)),
        simulate={"test_context": (8, 16), "prompts": 32, "seeds": 2}),
    "looped": ModelSpec(
        looped_problems(),
        edges=(lambda: looped.Problem(2, 1), lambda: looped.Problem.fig8_1(16),
               lambda: looped.Problem(8, 3, -2.0, 0.1, np.array([1.0, 1e-2, 2.0]))),      # ill-conditioned cov
        predict={"loops": 5, "prompts": 16},
        bad_predict=(("loops", -1), ("prompts", 0), ("method", "nope")),
        simulate={"loops": 3, "prompts": 8, "seeds": 2}),
    "modular": ModelSpec(
        modular_problems(),
        edges=(lambda: modular.Problem(3, 2), lambda: modular.Problem.setting("cpu", convention="paper")),
        bad_predict=(("method", "nope"),),
        functions=((lambda p: modular.max_margin(p.p, p.k), {}),),
        simulate={"steps": 5, "width": 8, "seeds": 2, "n_points": 2}),
    "modular.transformer": ModelSpec(
        modular_transformer_problems(),
        edges=(lambda: modular.TransformerProblem(3, 2, heads=1, d_model=1, d_head=1, d_mlp=1),
               lambda: modular.TransformerProblem.setting("cpu", d_model=8, d_mlp=16)),
        functions=((lambda p: modular.embedding_spectrum(np.cos(2 * np.pi * np.outer(np.arange(p.p), [1, 2]) / p.p)),
                    {}),),
        simulate={"steps": 3, "seeds": 2, "n_points": 2}),
    "emergence": ModelSpec(
        emergence_problems(),
        edges=(lambda: emergence.Problem.parity(D=12, k=3, width=4),
               lambda: emergence.Problem(D=4, k=3, p_o=0.5, width=1),                              # D = k + 1, width 1
               lambda: emergence.Problem.parity(D=30, k=5, p_o=0.05, width=6, structure=False)),    # sparse background
        predict={"steps": 4},
        bad_predict=(("method", "nope"), ("steps", 1), ("lr", 0.0)),
        functions=((lambda p: emergence.two_step_features(
                        p.model, emergence.two_step_limit(p.model, p.params0, p.schedule(2)[1].s)), {}),
                   (lambda p: emergence.fixed_feature_lower_bound(p.p_o, 100, 1.0, p.k, p.D), {})),
        simulate={"steps": 4, "seeds": 2, "n_train": 2000, "batch": 100, "n_test": 500}),
    "gradient_features": ModelSpec(
        gradient_features_problems(),
        edges=(lambda: gradient_features.Problem.xor(d=3, sigma_B=1.0, width=1),               # smallest XOR
               lambda: gradient_features.Problem.uniform_parity(d=5, k=2, width=1)),           # k = 2, m = 1
        predict={"n_train": 100, "n_mc": 100, "n_test": 500},
        bad_predict=(("n_mc", 1), ("eps", 1.5)),
        functions=((lambda p: p.model.E_yx(), {}),
                   (lambda p: gradient_features.first_step(p.model, *p.params0, p.step_size, p.loss)[1], {})),
        simulate={"n_train": 200, "seeds": 2, "steps": 3, "lr": 1e-3, "n_test": 200}),
    "resnet": ModelSpec(
        resnet_problems(),
        edges=(lambda: resnet.Problem(d=8, k=2, n_train=40),
               lambda: resnet.Problem(kernel="arcsin", d=1, k=1, n_train=1),                       # d = k = N = 1
               lambda: resnet.Problem(kernel="gaussian", d=10, k=4, alpha=0.0, n_train=30, normalized=True)),  # alpha 0
        functions=((lambda p: resnet.level_eigenvalues(p.kappa, p.d), {}),
                   (lambda p: resnet.thm2_lower_bound(p.alpha), {})),
        simulate={"n_test": 500, "seeds": 2}),
    "resnet.network": ModelSpec(
        resnet_network_problems(),
        edges=(lambda: resnet.NetworkProblem.thm2(d=8, k=2, width=8, n_train=20),
               lambda: resnet.NetworkProblem(arch="fc2", d=1, k=1, width=1, n_train=1),             # d = k = m = N = 1
               lambda: resnet.NetworkProblem.fig2(d=8, k=4, width=8, n_train=20, beta=0.3)),         # fig2 target
        predict={"kernels": ["relu_nngp"], "ridges": [1e-4]},
        bad_predict=(("kernels", ["nope"]), ("ridges", [-1.0])),
        simulate={"seeds": 2, "n_test": 64, "n_points": 2, "epochs": 2}),
    "kernels": ModelSpec(
        kernel_problems(),
        edges=(lambda: kernels.Problem(d=8),
               lambda: kernels.Problem(d=1, target={(): 1.0}, activation="erf", kernel="nngp"),     # d = 1, constant
               lambda: kernels.Problem.parity(d=12, k=3, depth=3, b_std=0.0, noise=0.5),           # structural zero
               lambda: kernels.Problem(d=30, target={(0, 1, 2, 3, 4): 1.0}, ridge=1e-8)),          # level far away
        predict={"n_train": (1, 10, 100)},
        bad_predict=(("n_train", 0), ("n_train", [1.5]), ("n_train", [])),
        functions=((lambda p: kernels.cube_eigenvalues(p.net, p.d, p.kernel), {}),
                   (lambda p: kernels.effective_regularization(p.eigenvalues, [1, 50], p.ridge, p.multiplicity), {})),
        simulate={"n_train": (4, 16), "seeds": 2}),
    "committee": ModelSpec(
        committee_problems(),
        edges=(lambda: committee.Problem.saad_solla(K=2, M=2),                                   # Saad-Solla plateau setting
               lambda: committee.Problem(1, 1, "tanh"),                                           # quadrature, K = M = 1
               lambda: committee.Problem(1, 2, "relu", teacher_overlap=np.ones((2, 2)), sigma=0.1)),  # singular T
        predict={"d": 100, "steps": 200, "lr": 0.3, "lr_v": 0.2, "weight_decay": 0.01, "n_points": 5, "rtol": 1e-6,
                 "atol": 1e-9},
        bad_predict=(("d", 0), ("steps", 0), ("n_points", 1), ("init", 0.0), ("rtol", 2.0), ("lr", 0.0),
                     ("lr_v", -1.0), ("weight_decay", -0.1)),
        functions=((lambda p: committee.generalisation_error(p, 0.5 * np.eye(p.K), np.zeros((p.K, p.M))), {}),
                   (lambda p: committee.drift(p, 0.5 * np.eye(p.K), np.zeros((p.K, p.M)), lr=0.5)[0], {})),
        simulate={"d": 10, "steps": 20, "lr": 0.3, "lr_v": 0.2, "seeds": 2, "n_points": 3}),
    "contrastive": ModelSpec(
        contrastive_problems(),
        edges=(lambda: contrastive.Problem.tradeoff(),
               lambda: contrastive.Problem(1, 2, 5, 5),                                   # n_tasks = 1, d = k
               lambda: contrastive.Problem(3, 3, 3, 4, v2=0.0),                           # r = s: no private features
               lambda: contrastive.Problem(3, 3, 6, 12, np.array([0.5, 0.3, 0.2]), sigma_S=2.0,
                                           sigma_R=np.array([0.5, 1.0, 1.5]))),           # uneven, per-task sigma
        bad_predict=(("n_labelled", [0]), ("loss", "nope")),
        functions=((lambda p: contrastive.optimal_representation(p)[1], {}),
                   (lambda p: contrastive.contrastive_loss_W(contrastive.optimal_representation(p)[2], p), {})),
        simulate={"steps": 5, "batch": 16, "ft_steps": 2, "probes": 2, "seeds": 2}),
    "domain_gen": ModelSpec(
        domain_gen_problems(),
        edges=(lambda: domain_gen.SpuriousFeatureModel(1, 1, 0.0),                    # d = r = 1: no spurious block
               lambda: domain_gen.SpuriousFeatureModel(1, 2, 0.2),                    # the 2-D toy
               lambda: domain_gen.SpuriousFeatureModel(40, 207, 0.49)),               # table C.3: OOD acc ~ 1e-40
        predict={"lam": [0.3, 0.03], "penalty": "l2"},
        bad_predict=(("lam", -1.0), ("lam", 0.0), ("penalty", "l3"), ("B_rank", 0)),
        functions=((lambda p: domain_gen.erm_nuclear(p, 0.1), {}),
                   (lambda p: domain_gen.accuracy(*domain_gen.erm_l2(p, 0.3), p, "ood", log10=True), {}),
                   (lambda p: domain_gen.nuclear_norm_pop(0.1, 0.05, p), {})),
        simulate={"lam": [0.3], "n_train": 400, "steps": 5, "seeds": 2, "n_test": 200}),
    "multitask": ModelSpec(
        multitask_problems(),
        edges=(lambda: multitask.Problem.e1(), lambda: multitask.Problem(2, 1, 2),                 # d = r + 1, width = 2
               lambda: multitask.Problem(30, 6, 12, tasks=5, seed=3),                               # quadrature (r > 3)
               lambda: multitask.Problem(12, 2, 4, tasks=np.array([[1.0, 1.0, 1.0, 1.0]]), nu_w=1.0)),  # outside regime
        bad_predict=(("method", "nope"), ("delta", 0.0), ("delta", 1.5), ("lr", 0.0)),
        functions=((lambda p: multitask.one_step_map(p.W0, p.r, p.task_set, 1.0, p.lam_w, method="leading"), {}),
                   (lambda p: multitask.post_head_loss(p.W0, p.task_set, 1.0), {}),
                   (lambda p: multitask.A_matrix(p.W0[0], p.r), {})),
        simulate={"n_train": 256, "seeds": 2, "chunk": 128}),
}

# One or more valid examples per model (the constraint and repr checks of test_common.py).
EXAMPLES = {
    "emergence": [lambda: emergence.Problem.parity(D=12, k=3, width=4), lambda: emergence.Problem.e1(width=8)],
    "gradient_features": [lambda: gradient_features.Problem.xor(d=16, sigma_B=1.0, width=8),
                          lambda: gradient_features.Problem.uniform_parity(d=9, k=2, width=4)],
    "icl": [lambda: icl.Problem.geometric(4, context=20, r=2, test_context=8, sigma=0.5),
            lambda: icl.Problem.random(5, context=10, r=3, test_context=16, rho=0.25, seed=1),
            lambda: icl.ParityProblem.paper(1, 3, gamma=0.1)],
    "looped": [lambda: looped.Problem.fig8_1(16), lambda: looped.Problem(8, 3, -2.0, 0.1, np.array([1.0, 0.5, 2.0]))],
    "lora": [lambda: lora.Problem.orthonormal(k=4, xi=1.5, activation="relu", seed=0),
             lambda: lora.GeneralProblem.from_alpha(lora.Problem.orthonormal(k=4, xi=1.0, activation="relu"), 0.5)],
    "modular": [lambda: modular.Problem(p=11, k=3), lambda: modular.TransformerProblem.setting("cpu")],
    "resnet": [lambda: resnet.Problem(d=12, k=3, n_train=100), lambda: resnet.Problem.thm2(d=14, n_train=200),
               lambda: resnet.NetworkProblem.thm2(d=10, k=3, width=16, n_train=50)],
    "kernels": [lambda: kernels.Problem(d=12), lambda: kernels.Problem.parity(d=20, k=3, depth=2, activation="erf",
                                                                              b_std=0.1, kernel="nngp", noise=0.1)],
    "committee": [lambda: committee.Problem.saad_solla(K=2, M=2),
                  lambda: committee.Problem(3, 2, "tanh", teacher_overlap=np.array([[1.0, 0.2], [0.2, 0.5]]),
                                            v_star=np.array([1.0, -0.5]), sigma=0.1)],
    "contrastive": [lambda: contrastive.Problem.tradeoff(),
                    lambda: contrastive.Problem(3, 3, 6, 12, np.array([0.5, 0.3, 0.2]),
                                                sigma_S=np.array([1.0, 0.5, 2.0]))],
    "domain_gen": [lambda: domain_gen.SpuriousFeatureModel(20, 300, 0.3),
                   lambda: domain_gen.SpuriousFeatureModel(1, 2, 0.2)],
    "multitask": [lambda: multitask.Problem.e1(), lambda: multitask.Problem(10, 2, 4, tasks=np.array([[1.0, -1.0, 1.0, -1.0]]),
                                                                           lam_w=1.1, seed=2),
                  lambda: multitask.Problem.paper(50, 3, 8, n_tasks=100)],
}
