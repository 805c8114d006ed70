"""benchmarks/bench_neural.py: its direct-JAX peer is the same network as ltr's (checked against numpy
by hand), its batches hold every query once in ltr's padded shapes, its memory probe sees an
allocation, its children get the parent's sizes, and (slow) ``--quick`` runs end to end."""

from __future__ import annotations

import doctest
import subprocess
import sys

import numpy as np
import pytest
from helpers import PROJECT_ROOT, benchmark_module

from ltr.data import RankingData

pytest.importorskip("jax")
pytest.importorskip("rax")

bench = benchmark_module("bench_neural")


def numpy_mlp(layers: list[tuple[np.ndarray, np.ndarray]], mean, scale, x: np.ndarray) -> np.ndarray:
    """The network by hand: signed log1p, z-score, ReLU hidden layers, a linear output."""
    h = (np.sign(x) * np.log1p(np.abs(x)) - mean) / scale
    for w, b in layers[:-1]:
        h = np.maximum(h @ w + b, 0.0)
    w, b = layers[-1]
    return (h @ w + b)[:, 0]


def test_direct_forward_is_the_numpy_mlp_and_ltrs_network() -> None:
    import jax

    from ltr.models.neural.network import NetworkSpec, apply, init_params

    spec = NetworkSpec(n_features=5, hidden_units=(6, 3), log1p=True)
    params = {k: np.asarray(v) for k, v in init_params(spec, jax.random.PRNGKey(3)).items()}
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((40, 5)) * 4).astype(np.float32)
    mean, scale = bench.feature_transform(x)
    t = np.sign(x.astype(np.float64)) * np.log1p(np.abs(x.astype(np.float64)))
    np.testing.assert_allclose(mean, t.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(scale, t.std(axis=0), rtol=1e-6)

    layers = bench.direct_layers(params, depth=2)
    direct = bench.Direct(5, [6, 3], dropout=0.1, learning_rate=0.001)
    got = np.asarray(direct.forward(layers, mean, scale, x))  # no key: dropout off, as in scoring
    expected = numpy_mlp(
        [(np.float64(w), np.float64(b)) for w, b in layers], mean, scale, x.astype(np.float64)
    )
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    ltr = np.asarray(apply(params, spec, (mean, scale), x, np.ones(40, bool)))
    np.testing.assert_allclose(got, ltr, rtol=1e-5, atol=1e-6)


def test_direct_step_lowers_rax_softmax_loss() -> None:
    """One AdamW step on a batch where feature 0 is the label: the softmax loss goes down."""
    import jax

    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 8, 3)).astype(np.float32)
    labels = (x[..., 0] > 0).astype(np.float32)
    mask = np.ones((4, 8), bool)
    direct = bench.Direct(3, [8], dropout=0.0, learning_rate=0.05)
    layers = direct.init(0)
    state = direct.optimiser.init(layers)
    transform = (np.zeros(3, np.float32), np.ones(3, np.float32))
    values = []
    for _ in range(20):
        layers, state, value = direct.step(layers, state, *transform, x, labels, mask, jax.random.PRNGKey(0))
        values.append(float(value))
    assert values[-1] < 0.8 * values[0]


def test_prepared_batches_hold_every_query_once_in_ltrs_padded_shapes() -> None:
    from ltr.models.neural.lists import padded_length

    sizes = [3, 1, 12, 9, 2]
    qid = np.repeat(np.arange(5), sizes)
    X = np.arange(qid.size * 2, dtype=np.float32).reshape(-1, 2)
    y = np.arange(qid.size, dtype=np.float64) % 3
    data = RankingData(X=X, y=y, qid=qid)
    batches = bench.prepare_batches(data, batch_size=2, cap=10, seed=0)
    assert [x.shape[0] for x, _, _ in batches] == [2, 2, 1]  # the last batch is smaller, not filled
    seen = []
    for x, labels, mask in batches:
        longest = int(mask.sum(axis=1).max())
        assert x.shape[1] == padded_length(longest) == bench.pad_length(longest)
        for i in range(x.shape[0]):
            rows = x[i, mask[i], 0].astype(int) // 2  # feature 0 of row r is 2r
            assert np.all(np.diff(rows) > 0) and np.unique(qid[rows]).size == 1
            np.testing.assert_array_equal(labels[i, mask[i]], y[rows])
            assert not x[i, ~mask[i]].any() and not labels[i, ~mask[i]].any()
            seen.append((int(qid[rows[0]]), rows.size))
    # every query once; the 12-document query sampled down to the cap of 10, the others whole
    assert sorted(seen) == [(0, 3), (1, 1), (2, 10), (3, 9), (4, 2)]


def test_doctests_of_the_script() -> None:
    """The examples in the script's docstrings (tests/test_doctests.py covers ltr/ only)."""
    result = doctest.testmod(bench)
    assert result.attempted >= 2 and result.failed == 0


@pytest.mark.slow  # a fresh process allocating and measuring: ~3 s
def test_peak_above_sees_an_allocation() -> None:
    """In a fresh process, as the benchmark measures (a test worker's heap, after thousands of tests, is
    no baseline: the CI once read a peak of 0.0 MB there)."""
    if not bench.reset_peak():
        pytest.skip("this kernel refuses /proc/self/clear_refs")
    code = (
        "import sys, numpy as np\n"
        f"sys.path.insert(0, {str(PROJECT_ROOT / 'benchmarks')!r})\n"
        "import bench_neural as bench\n"
        "mb, seconds, by_hwm = bench.peak_above(lambda: np.ones(80 * 2**20 // 8).sum())\n"
        "print(mb, seconds, by_hwm)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=PROJECT_ROOT
    )
    mb, seconds, by_hwm = out.stdout.split()
    assert by_hwm == "True" and 70 < float(mb) < 120 and float(seconds) >= 0, out.stderr


def test_children_get_the_parents_sizes_and_settings() -> None:
    parser = bench.build_parser()
    args = parser.parse_args(
        ["--repeats", "3", "--hidden", "64", "32", "--memory-size", "10", "900", "--cap", "50"]
    )
    again = parser.parse_args([*bench.child_argv(args), "--child", "memory", "--threads", "1"])
    for name in (
        "repeats",
        "train_queries",
        "test_queries",
        "memory_size",
        "memory_epochs",
        "hidden",
        "batch_size",
    ):
        assert getattr(again, name) == getattr(args, name), name
    assert (again.cap, again.dropout, again.learning_rate) == (50, 0.1, 0.001)
    assert again.threads == [1] and again.child == "memory"


@pytest.mark.slow  # two pinned children train and score with JAX, a third fits for memory: ~45 s
def test_quick_run_prints_both_tables() -> None:
    run = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "benchmarks" / "bench_neural.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=PROJECT_ROOT,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    rows = [line.split(" | ") for line in run.stdout.splitlines() if line.startswith("| ") and "**" in line]
    ratios = [(r[0].strip("| "), r[2]) for r in rows if r[2] in ("training", "scoring")]
    assert ratios == [("1", "training"), ("1", "scoring"), ("2", "training"), ("2", "scoring")]
    assert "largest |ltr − direct| score on the same parameters" in run.stdout
    assert "**peak above the RSS before it: the whole fit**" in run.stdout
