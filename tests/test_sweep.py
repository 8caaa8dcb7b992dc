"""popdyn.sweep: grid order, derived seeds, failing points, save/load, and identical numbers inline, on a
process pool and on a Dask LocalCluster (issue 8)."""
import math
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import popdyn
from popdyn.sweep import grid_points, load_sweep, point_seeds, sweep


def noisy_point(a, b, seed):
    """Module level (picklable): a number and an array that depend on the point and its seed only."""
    rng = np.random.default_rng(seed)
    if a == 2 and b == "boom":
        raise RuntimeError("bad point")
    return {"value": a + rng.standard_normal(), "draws": rng.standard_normal(3), "label": f"{a}-{b}"}


GRID = {"a": [1, 2, 3], "b": ["x", "boom"]}


def lora_gap(d, delta, seed):
    """A LoRA simulation of one seed (the sweep unit of examples/sweep_lora_dask.py), small."""
    from popdyn.models import lora
    p = lora.Problem.orthonormal(k=2, xi=1.0, activation="relu", seed=0)
    sim = popdyn.simulate(p, d=d, lr=delta / d, steps=2 * d, seeds=1, seed=seed, n_points=5)
    return {"m_end": float(sim["m"][0, -1]), "m": sim["m"][0]}


def test_grid_points_product_and_list():
    assert grid_points({"a": [1, 2], "b": [3]}) == [{"a": 1, "b": 3}, {"a": 2, "b": 3}]
    assert grid_points([{"a": 1}, {"a": 5, "c": 0}]) == [{"a": 1}, {"a": 5, "c": 0}]
    with pytest.raises(ValueError, match="'grid'"):
        grid_points({"a": 3})


def test_point_seeds_are_distinct_and_depend_only_on_the_root():
    s = point_seeds(4, 3, seed=7)
    flat = [x for row in s for x in row]
    assert len(set(flat)) == 12 and s == point_seeds(4, 3, seed=7) and s != point_seeds(4, 3, seed=8)
    assert point_seeds(6, 3, seed=7)[:4] == s  # adding points does not move the earlier points' seeds


def test_inline_sweep_rows_in_grid_order_and_errors_recorded():
    res = sweep(noisy_point, GRID, seeds=2, seed=1, progress=False)
    assert len(res) == 12 and [(r["a"], r["b"]) for r in res.rows[::2]] == [(1, "x"), (1, "boom"), (2, "x"),
                                                                           (2, "boom"), (3, "x"), (3, "boom")]
    bad = res.errors
    assert [(r["a"], r["b"]) for r in bad] == [(2, "boom")] * 2 and "bad point" in bad[0]["error"]
    ok = [i for i, r in enumerate(res.rows) if r["status"] == "ok"]
    seeds = [r["seed"] for r in res.rows]
    for i in ok:
        rng = np.random.default_rng(seeds[i])
        assert res.rows[i]["value"] == res.rows[i]["a"] + rng.standard_normal()
        np.testing.assert_array_equal(res.arrays["draws"][i], rng.standard_normal(3))
    assert res.arrays["draws"][6] is None and math.isnan(res.column("value")[6])  # the failed row has nothing


def test_save_load_round_trip(tmp_path):
    res = sweep(noisy_point, GRID, seeds=2, progress=False)
    back = load_sweep(res.save(tmp_path / "sweep"))
    assert back.rows == res.rows and back.meta == res.meta
    for i, a in enumerate(res.arrays["draws"]):
        assert (a is None and back.arrays["draws"][i] is None) or np.array_equal(a, back.arrays["draws"][i])


def _same(a, b):
    assert [r | {"wall_s": 0} for r in a.rows] == [r | {"wall_s": 0} for r in b.rows]
    for k in a.arrays:
        for x, y in zip(a.arrays[k], b.arrays[k]):
            assert (x is None and y is None) or np.array_equal(x, y)


def test_process_pool_gives_the_inline_numbers():
    inline = sweep(noisy_point, GRID, seeds=2, progress=False)
    with ProcessPoolExecutor(2) as pool:
        _same(inline, sweep(noisy_point, GRID, seeds=2, executor=pool, progress=False))


@pytest.mark.slow
def test_dask_local_cluster_gives_the_inline_numbers():
    distributed = pytest.importorskip("distributed")
    inline = sweep(noisy_point, GRID, seeds=2, progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl, \
            distributed.Client(cl) as client:
        _same(inline, sweep(noisy_point, GRID, seeds=2, executor=client, progress=False))
        _same(inline, sweep(noisy_point, GRID, seeds=2, executor=client.get_executor(), progress=False))
        if pytest.importorskip("torch"):  # torch training too: bit-identical on the cluster's workers
            grid = {"d": [20], "delta": [0.1]}
            _same(sweep(lora_gap, grid, seeds=2, progress=False), sweep(lora_gap, grid, seeds=2, executor=client,
                                                                        progress=False))


def test_torch_simulation_is_bit_identical_inline_and_on_a_pool():
    pytest.importorskip("torch")
    grid = {"d": [20, 40], "delta": [0.1]}
    inline = sweep(lora_gap, grid, seeds=2, progress=False)
    assert not inline.errors
    with ProcessPoolExecutor(2) as pool:
        _same(inline, sweep(lora_gap, grid, seeds=2, executor=pool, progress=False))
    _same(inline, sweep(lora_gap, grid, seeds=2, progress=False))  # and across runs


def test_torch_simulation_does_not_depend_on_the_thread_count():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    try:
        runs = []
        for threads in (1, 2):
            torch.set_num_threads(threads)
            runs.append(lora_gap(64, 0.2, seed=5)["m"])
    finally:
        torch.set_num_threads(before)
    np.testing.assert_array_equal(runs[0], runs[1])
