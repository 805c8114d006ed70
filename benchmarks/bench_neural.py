"""Neural rankers: ltr's ``neural_softmax`` against the same network and loss written directly in JAX.

The peer (:class:`Direct`, in this file) is what a user writes without ltr: the same MLP (the same
hidden widths, ReLU, dropout, the signed-log1p z-score of the features inside the jitted function),
``rax.softmax_loss`` over padded lists, ``optax.adamw`` with the same learning rate and weight decay,
one jitted step per batch over ``[B, L, F]`` float32 batches prepared **up front** with plain numpy
(the queries shuffled once, lists longer than the cap sampled once, each batch padded to its longest
list rounded up to a power of two — the same padded shapes as ltr's, so both do the same arithmetic).
Initialisation differs (not needed for speed). Three measurements:

* **training** (``throughput``): query lists per second of one epoch after a warm-up epoch that
  compiles. ltr: ``build_ranker({"name": "neural_softmax", ...}).fit(train)`` with 2 epochs, no
  validation split, ``early_stopping.patience: null``; the second epoch is timed between two
  ``on_iteration`` calls (so it includes ltr's per-epoch work: shuffling, list sampling, per-batch
  numpy gather and padding, host→device copies, any compile of a padded shape not seen in epoch 1).
  Direct: its own warm-up epoch, then one timed epoch over the prepared batches (their preparation
  is reported apart: a one-time cost, and memory the whole epoch holds).
* **scoring** (``throughput``): documents per second on a separate test split; ltr's ``predict``
  (blocks of ``SCORING_CELLS`` rows) against one jitted forward pass of the same parameters (ltr's
  fitted network, copied) over the whole matrix, scores brought back to numpy. Both warm up first;
  the largest score difference is printed (float32 arithmetic in different block shapes).
* **memory** (``memory``): peak RSS of one ltr ``fit`` epoch on an MSLR-WEB10K-sized training split
  (6,000 queries, 723,412 documents × 136 float32 features, generated in memory, not on disk), above
  the RSS with the data loaded, against what padding the whole file up front would take (to its
  longest list; and to the list cap). The peak is reset before ``fit`` (``/proc/self/clear_refs``)
  and read from ``VmHWM``; where the reset is refused, ``ru_maxrss`` after vs before is used.

Each measurement runs in a child process pinned to 1 and to 2 cores (``os.sched_setaffinity``; JAX
sizes its thread pool from the affinity mask), with ``XLA_FLAGS`` = ltr's one-thread flags for 1 core
and unset for 2, ``OMP/OPENBLAS/MKL_NUM_THREADS`` = the cores, ``JAX_PLATFORMS=cpu``; ltr gets
``num_threads`` = the cores. ltr and direct alternate inside each child (the order swaps each repeat)
so both see the same machine load; the tables give medians over ``--repeats`` and ltr / direct
ratios (target: ≤ 1.1× for training and scoring).

Data: the synthetic MSLR-shaped generator of ``bench_training_overhead.py`` (log-normal query
sizes, mean ≈ 120 documents, 1–1,251; labels 0–4 with MSLR's shares). NOT real data.

Run from the project root (figures in docs/benchmarks.md, "Neural rankers"):

    .venv/bin/python benchmarks/bench_neural.py --quick                 # tiny sizes, < 1 minute
    .venv/bin/python benchmarks/bench_neural.py --repeats 5              # 2,000 / 1,000 queries; MSLR-WEB10K memory

On a GPU: install ``jax[cuda12]`` in place of the CPU wheel and run with ``JAX_PLATFORMS=cuda``
(ltr sets ``JAX_PLATFORMS=cpu`` only when it is unset) and ``--threads 2`` (pinning then only
limits the host side); nothing in ltr or this script has a CPU-only path.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_training_overhead import N_FEATURES, synthetic_split  # noqa: E402

from ltr.data import RankingData  # noqa: E402

MSLR_WEB10K_TRAIN = (6_000, 723_412)  # Fold 1 training split: queries, documents
RESULT = "RESULT "  # the prefix of a child's JSON line


def model_params(args: argparse.Namespace, *, n_epochs: int) -> dict[str, Any]:
    """ltr's ``neural_softmax`` params for the run (the direct peer reads the same numbers)."""
    return {
        "hidden_units": list(args.hidden),
        "dropout": args.dropout,
        "batch_size": args.batch_size,
        "max_list_size": args.cap,
        "learning_rate": args.learning_rate,
        "weight_decay": 0.0,
        "feature_transform": "log1p_zscore",
        "n_epochs": n_epochs,
    }


def ltr_ranker(args: argparse.Namespace, *, n_epochs: int, seed: int) -> Any:
    from ltr.models import build_ranker  # deferred: the parent process never imports JAX

    cfg = {
        "name": "neural_softmax",
        "params": model_params(args, n_epochs=n_epochs),
        "early_stopping": {"patience": None},
    }
    return build_ranker(cfg, seed=seed, num_threads=args.threads[0])


# --- the direct JAX peer ---------------------------------------------------------------------------------


def pad_length(n: int) -> int:
    """The padded list length of a batch whose longest list is ``n``: a power of two, at least 8.

    >>> [pad_length(n) for n in (1, 8, 9, 200)]
    [8, 8, 16, 256]
    """
    return max(8, 1 << max(n - 1, 0).bit_length())


def prepare_batches(
    data: RankingData, *, batch_size: int, cap: int | None, seed: int
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The whole epoch as padded numpy batches ``(x[B, L, F], labels[B, L], mask[B, L])``, built once.

    The queries in a random order, ``batch_size`` at a time (the last batch smaller), a list longer
    than ``cap`` replaced by a sorted random sample of ``cap`` of its documents.

    >>> data = RankingData(X=np.arange(10.0).reshape(5, 2), y=np.array([1.0, 0, 0, 2, 1]), qid=np.array([1, 1, 1, 2, 2]))
    >>> [(x.shape, m.sum(axis=1).tolist()) for x, _, m in prepare_batches(data, batch_size=2, cap=2, seed=0)]
    [((2, 8, 2), [2, 2])]
    """
    rng = np.random.default_rng(seed)
    order = rng.permutation(data.n_queries)
    batches = []
    for start in range(0, len(order), batch_size):
        picks = []
        for q in order[start : start + batch_size]:
            rows = np.arange(data.offsets[q], data.offsets[q + 1])
            if cap is not None and rows.size > cap:
                rows = np.sort(rng.choice(rows, size=cap, replace=False))
            picks.append(rows)
        length = pad_length(max(rows.size for rows in picks))
        x = np.zeros((len(picks), length, data.n_features), np.float32)
        labels = np.zeros((len(picks), length), np.float32)
        mask = np.zeros((len(picks), length), bool)
        for i, rows in enumerate(picks):
            x[i, : rows.size] = data.X[rows]
            labels[i, : rows.size] = data.y[rows]
            mask[i, : rows.size] = True
        batches.append((x, labels, mask))
    return batches


class Direct:
    """The MLP, loss and optimiser written directly in JAX (see the module docstring).

    ``layers`` is a list of ``(w, b)``: the hidden layers, then the output layer of width 1.
    """

    def __init__(self, n_features: int, hidden: list[int], *, dropout: float, learning_rate: float) -> None:
        import jax  # deferred: the parent process never imports JAX
        import jax.numpy as jnp  # deferred: as jax
        import optax  # deferred: as jax
        import rax  # deferred: as jax

        self.widths = [n_features, *hidden, 1]
        self.optimiser = optax.adamw(learning_rate, weight_decay=0.0)

        def forward(layers, mean, scale, x, key=None):
            h = (jnp.sign(x) * jnp.log1p(jnp.abs(x)) - mean) / scale
            for w, b in layers[:-1]:
                h = jax.nn.relu(h @ w + b)
                if key is not None and dropout > 0:
                    key, sub = jax.random.split(key)
                    h = jnp.where(jax.random.bernoulli(sub, 1 - dropout, h.shape), h / (1 - dropout), 0.0)
            w, b = layers[-1]
            return (h @ w + b)[..., 0]

        def step(layers, state, mean, scale, x, labels, mask, key):
            def loss(layers):
                return rax.softmax_loss(forward(layers, mean, scale, x, key), labels, where=mask)

            value, grads = jax.value_and_grad(loss)(layers)
            updates, state = self.optimiser.update(grads, state, layers)
            return optax.apply_updates(layers, updates), state, value

        self.forward = jax.jit(forward)
        self.step = jax.jit(step)

    def init(self, seed: int) -> list[tuple[Any, Any]]:
        """He-normal weights, zero biases."""
        import jax  # deferred: as in __init__
        import jax.numpy as jnp  # deferred: as jax

        keys = jax.random.split(jax.random.PRNGKey(seed), len(self.widths) - 1)
        return [
            (jax.random.normal(k, (n_in, n_out)) * jnp.sqrt(2.0 / n_in), jnp.zeros(n_out))
            for k, n_in, n_out in zip(keys, self.widths[:-1], self.widths[1:], strict=True)
        ]

    def epoch(self, layers, state, transform, batches, key, order) -> tuple[Any, Any, Any, float]:
        """One pass over ``batches`` in ``order``; returns ``(layers, state, key, mean loss)`` (synchronised)."""
        import jax  # deferred: as in __init__

        total = 0.0
        for i in order:
            key, sub = jax.random.split(key)
            layers, state, value = self.step(layers, state, *transform, *batches[i], sub)
            total = total + value
        return layers, state, key, float(total) / len(order)


def feature_transform(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, scale)`` of the signed log1p of the features, ``scale = 1`` for a constant feature."""
    t = np.sign(X) * np.log1p(np.abs(X), dtype=np.float64)
    mean, std = t.mean(axis=0), t.std(axis=0)
    return mean.astype(np.float32), np.where(std > 1e-12, std, 1.0).astype(np.float32)


def direct_layers(network: dict[str, Any], depth: int) -> list[tuple[Any, Any]]:
    """ltr's fitted parameter dict (``dense_<i>.w`` ..., ``out.w``) as the peer's list of layers."""
    names = [f"dense_{i}" for i in range(depth)] + ["out"]
    return [(network[f"{n}.w"], network[f"{n}.b"]) for n in names]


# --- the child processes ---------------------------------------------------------------------------------


def clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = clock()
    return wall - start[0], cpu - start[1]


class BatchClock:
    """Seconds ltr spends producing its padded batches (``lists.training_batches``: shuffling, list
    sampling, gather and padding in numpy) per epoch: host work on the training loop's path."""

    def __init__(self) -> None:
        import ltr.models.neural.lists as lists  # deferred: only the child imports ltr's neural modules

        self.lists, self.original = lists, lists.training_batches
        self.seconds, self.timed_epochs = 0.0, []

    def install(self) -> BatchClock:
        original = self.original

        def training_batches(*a: Any, **k: Any) -> Any:
            batches = original(*a, **k)
            while True:
                t = time.perf_counter()
                batch = next(batches, None)
                self.seconds += time.perf_counter() - t
                if batch is None:
                    return
                yield batch

        self.lists.training_batches = training_batches
        return self

    def lap(self, epoch: int) -> None:
        """At the end of ``epoch`` (0-based): keep the time of the second (timed) epoch."""
        if epoch == 1:
            self.timed_epochs.append(self.seconds)
        self.seconds = 0.0

    def uninstall(self) -> None:
        self.lists.training_batches = self.original


class GatherClock:
    """Seconds ltr's scoring spends copying rows into padded blocks (``lists.gather``)."""

    def __init__(self) -> None:
        import ltr.models.neural.lists as lists  # deferred: as BatchClock

        self.lists, self.original, self.seconds = lists, lists.gather, 0.0

    def install(self) -> GatherClock:
        original = self.original

        def gather(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return original(*a, **k)
            finally:
                self.seconds += time.perf_counter() - t

        self.lists.gather = gather
        return self

    def uninstall(self) -> None:
        self.lists.gather = self.original


def child_throughput(args: argparse.Namespace) -> dict[str, Any]:
    """Training lists/s and scoring documents/s, ltr and direct alternating (see the module docstring)."""
    import jax  # deferred: only the pinned child imports JAX

    import ltr.models.neural.ranker as neural  # deferred: as jax

    train = synthetic_split(args.train_queries, args.train_queries * 120, seed=1, name="train")
    test = synthetic_split(args.test_queries, args.test_queries * 120, seed=2, name="test")
    direct = Direct(N_FEATURES, args.hidden, dropout=args.dropout, learning_rate=args.learning_rate)
    start = clock()
    batches = prepare_batches(train, batch_size=args.batch_size, cap=args.cap, seed=0)
    transform = feature_transform(train.X)
    prepare_s = since(start)[0]

    compiled: list[Any] = []  # ltr's jitted training step of the current fit (its cache counts padded shapes)
    original = neural._training_step

    def recording_step(*a: Any, **k: Any) -> Any:
        compiled.append(original(*a, **k))
        return compiled[-1]

    neural._training_step = recording_step
    batch_clock = BatchClock().install()
    times: dict[str, list[tuple[float, float]]] = {"ltr": [], "direct": []}
    shapes: list[tuple[int, int]] = []
    fit_s: list[float] = []
    ranker = None
    for rep in range(args.repeats):
        for who in ("ltr", "direct") if rep % 2 == 0 else ("direct", "ltr"):
            gc.collect()
            if who == "ltr":
                stamps: list[tuple[float, float]] = []
                ranker = ltr_ranker(args, n_epochs=2, seed=rep)

                def stamp(i: int, values: dict[str, float], stamps: list = stamps) -> bool:
                    stamps.append(clock())
                    batch_clock.lap(i)
                    shapes.append((i, compiled[-1]._cache_size()))
                    return False

                start = clock()
                ranker.fit(train, on_iteration=stamp)
                fit_s.append(since(start)[0])
                times["ltr"].append((stamps[1][0] - stamps[0][0], stamps[1][1] - stamps[0][1]))
            else:
                layers = direct.init(rep)
                state = direct.optimiser.init(layers)
                key = jax.random.PRNGKey(rep)
                order = np.random.default_rng(rep).permutation(len(batches))
                layers, state, key, _ = direct.epoch(layers, state, transform, batches, key, order)  # warm-up
                start = clock()
                direct.epoch(layers, state, transform, batches, key, order[::-1])
                times["direct"].append(since(start))
    neural._training_step = original
    batch_clock.uninstall()

    # scoring: ltr's predict against one jitted forward pass of the same (ltr-fitted) parameters
    layers = direct_layers(ranker.network_, len(args.hidden))
    ltr_transform = ranker.transform_.arrays

    def direct_scores() -> np.ndarray:
        return np.asarray(direct.forward(layers, *ltr_transform, test.X))

    difference = float(np.max(np.abs(ranker.predict(test) - direct_scores())))  # also the warm-up
    gather_clock = GatherClock().install()
    scoring: dict[str, list[tuple[float, float]]] = {"ltr": [], "direct": []}
    for rep in range(args.repeats):
        for who in ("ltr", "direct") if rep % 2 == 0 else ("direct", "ltr"):
            gc.collect()
            start = clock()
            ranker.predict(test) if who == "ltr" else direct_scores()
            scoring[who].append(since(start))
    gather_clock.uninstall()
    return {
        "part": "throughput",
        "cores": sorted(os.sched_getaffinity(0)),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "devices": [str(d) for d in jax.devices()],
        "train_queries": train.n_queries,
        "train_docs": train.n_docs,
        "test_docs": test.n_docs,
        "direct_prepare_s": prepare_s,
        "direct_batches_mb": sum(a.nbytes for batch in batches for a in batch) / 2**20,
        "ltr_fit_s": fit_s,
        "ltr_compiled_shapes": shapes,  # (epoch, padded shapes compiled by its end) of every fit
        "training": times,
        "scoring": scoring,
        "max_score_difference": difference,
        "ltr_batch_prep_s": batch_clock.timed_epochs,  # inside each timed (second) epoch
        "ltr_scoring_gather_s": gather_clock.seconds / args.repeats,  # per predict
    }


def read_status(field: str) -> float | None:
    """A ``VmRSS``/``VmHWM`` line of ``/proc/self/status`` in MB (None off Linux)."""
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return None
    line = next((ln for ln in lines if ln.startswith(field + ":")), None)
    return int(line.split()[1]) / 1024 if line else None


def reset_peak() -> bool:
    """Reset this process' peak RSS (``VmHWM``) to its current RSS; False where Linux refuses it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def peak_above(fn: Any) -> tuple[float, float, bool]:
    """``(MB of peak RSS above the RSS before, seconds, measured by VmHWM)`` of ``fn()``.

    The peak is reset first (``/proc/self/clear_refs``); where that is refused, the growth of
    ``ru_maxrss`` (the peak since the process started: a lower bound) is returned instead.
    """
    gc.collect()
    before = read_status("VmRSS")
    maxrss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    reset = reset_peak() and before is not None
    start = clock()
    fn()
    seconds = since(start)[0]
    if reset:
        return read_status("VmHWM") - before, seconds, True  # type: ignore[operator]
    return max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - maxrss_before, 0.0), seconds, False


def child_memory(args: argparse.Namespace) -> dict[str, Any]:
    """Peak RSS of ltr's ``fit`` on an MSLR-WEB10K-sized split vs the whole file padded up front.

    In order: a 1-epoch fit on the first 64 queries (JAX's compile and runtime: a cost that does
    not grow with the file), the feature transform's moments alone (``_moments``, read in blocks of
    ``MOMENT_ROWS`` rows), then the whole fit; each peak above the RSS just before it.
    """
    n_queries, n_docs = args.memory_size
    train = synthetic_split(n_queries, n_docs, seed=1, name="train")
    ranker = ltr_ranker(args, n_epochs=args.memory_epochs, seed=0)
    ranker._start_jax()
    import jax  # deferred: started by ltr with the run's flags

    jax.numpy.zeros(1).block_until_ready()  # the runtime up before the baseline
    gc.collect()
    rss_start = read_status("VmRSS")
    small = train.subset(np.arange(min(64, n_queries)))
    small_mb, small_s, by_hwm = peak_above(lambda: ltr_ranker(args, n_epochs=1, seed=0).fit(small))
    moments_mb, moments_s, _ = peak_above(lambda: ranker._moments(train, True))
    fit_mb, fit_s, _ = peak_above(lambda: ranker.fit(train))
    longest = int(np.diff(train.offsets).max())
    capped = min(longest, args.cap) if args.cap else longest
    cell = N_FEATURES * 4 + 4 + 1  # float32 features, float32 label, bool mask per padded document
    return {
        "part": "memory",
        "cores": sorted(os.sched_getaffinity(0)),
        "train_queries": train.n_queries,
        "train_docs": train.n_docs,
        "data_mb": (train.X.nbytes + train.y.nbytes + train.qid.nbytes) / 2**20,
        "longest_list": longest,
        "epochs": args.memory_epochs,
        "peak_by_vmhwm": by_hwm,
        "rss_start_mb": rss_start,
        "small_fit_above_mb": small_mb,
        "small_fit_s": small_s,
        "moments_above_mb": moments_mb,
        "moments_s": moments_s,
        "fit_above_mb": fit_mb,
        "fit_s": fit_s,
        "one_batch_mb": args.batch_size * pad_length(capped) * cell / 2**20,
        "padded_to_longest_mb": n_queries * longest * cell / 2**20,
        "padded_to_cap_mb": n_queries * pad_length(capped) * cell / 2**20,
    }


# --- the parent -------------------------------------------------------------------------------------------


def run_child(part: str, cores: list[int], argv: list[str]) -> dict[str, Any]:
    """Run ``--child part`` pinned to ``cores``, with the thread settings of the module docstring."""
    from ltr.models.neural.ranker import XLA_ONE_THREAD  # deferred: the flags ltr itself sets for one thread

    env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"))
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = str(len(cores))
    env.pop("XLA_FLAGS", None)
    if len(cores) == 1:
        env["XLA_FLAGS"] = XLA_ONE_THREAD
    cmd = [sys.executable, __file__, *argv, "--child", part, "--threads", str(len(cores))]
    done = subprocess.run(
        cmd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=lambda: os.sched_setaffinity(0, cores),
    )
    if done.returncode != 0:
        raise SystemExit(f"the {part} child on cores {cores} failed:\n{done.stderr[-4000:]}")
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith(RESULT))
    return json.loads(line.removeprefix(RESULT))


def child_argv(args: argparse.Namespace) -> list[str]:
    """The sizes and model settings of ``args`` as options of a child (``--threads``/``--child`` added per child)."""
    options = {
        "--repeats": [args.repeats],
        "--train-queries": [args.train_queries],
        "--test-queries": [args.test_queries],
        "--memory-size": args.memory_size,
        "--memory-epochs": [args.memory_epochs],
        "--hidden": args.hidden,
        "--batch-size": [args.batch_size],
        "--cap": [args.cap],
        "--dropout": [args.dropout],
        "--learning-rate": [args.learning_rate],
    }
    return [str(part) for name, values in options.items() for part in (name, *values)]


def median_pair(values: list[list[float]]) -> tuple[float, float]:
    return statistics.median(v[0] for v in values), statistics.median(v[1] for v in values)


def report_throughput(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    r0 = results[0]
    print(
        f"\ntraining: {r0['train_queries']:,} queries / {r0['train_docs']:,} docs × {N_FEATURES}, hidden {args.hidden}, "
        f"batch {args.batch_size}, cap {args.cap}, dropout {args.dropout}; scoring: {r0['test_docs']:,} docs; "
        f"{args.repeats} interleaved repeats (medians)\n"
    )
    print(
        "| cores | XLA_FLAGS | task | direct wall (s) | ltr wall (s) | direct rate | ltr rate | ratio wall | "
        "direct CPU (s) | ltr CPU (s) | ratio CPU |"
    )
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        flags = f"`{r['xla_flags']}`" if r["xla_flags"] else "(unset)"
        for task, unit, count in (
            ("training", "lists/s", r["train_queries"]),
            ("scoring", "docs/s", r["test_docs"]),
        ):
            d, t = median_pair(r[task]["direct"]), median_pair(r[task]["ltr"])
            print(
                f"| {len(r['cores'])} | {flags} | {task} | {d[0]:.3f} | {t[0]:.3f} | {count / d[0]:,.0f} {unit} | "
                f"{count / t[0]:,.0f} {unit} | **{t[0] / d[0]:.3f}** | {d[1]:.3f} | {t[1]:.3f} | {t[1] / d[1]:.3f} |"
            )
    for r in results:
        after_warm_up, after_timed = r["ltr_compiled_shapes"][0::2], r["ltr_compiled_shapes"][1::2]
        grew = sum(timed[1] > warm[1] for warm, timed in zip(after_warm_up, after_timed, strict=True))
        print(
            f"\n{len(r['cores'])} core(s), devices {r['devices']}: ltr whole fits (2 epochs, compile included) "
            f"{statistics.median(r['ltr_fit_s']):.2f} s median; ltr's padded shapes compiled after epoch 2 of each fit "
            f"{[n for _, n in after_timed]} ({grew} of {len(after_timed)} timed epochs compiled a new one); direct's "
            f"batches prepared once in {r['direct_prepare_s']:.2f} s, holding {r['direct_batches_mb']:.0f} MB; "
            f"largest |ltr − direct| score on the same parameters {r['max_score_difference']:.2e}; inside ltr: "
            f"batch preparation {statistics.median(r['ltr_batch_prep_s']):.3f} s of the timed epoch, "
            f"gather {r['ltr_scoring_gather_s']:.4f} s of each predict (medians)"
        )


def report_memory(r: dict[str, Any]) -> None:
    how = "VmHWM, reset before each step" if r["peak_by_vmhwm"] else "ru_maxrss growth (a lower bound)"
    print(
        f"\nmemory: ltr fit, {r['epochs']} epoch(s), {r['train_queries']:,} queries / {r['train_docs']:,} docs × "
        f"{N_FEATURES} float32 (longest list {r['longest_list']}), cores {r['cores']}; peaks by {how}\n"
    )
    print("| quantity | MB | s |")
    print("|---|---:|---:|")
    for label, key, seconds in (
        ("the data (X, y, qid) held in memory", "data_mb", None),
        ("RSS with the data loaded and JAX started", "rss_start_mb", None),
        (
            "peak above it: a 1-epoch fit on 64 queries (compile, runtime)",
            "small_fit_above_mb",
            "small_fit_s",
        ),
        ("peak above the RSS before it: the transform's moments alone", "moments_above_mb", "moments_s"),
        ("**peak above the RSS before it: the whole fit**", "fit_above_mb", "fit_s"),
        ("one padded training batch (x, labels, mask)", "one_batch_mb", None),
        ("the whole file padded up front to the cap's padded length", "padded_to_cap_mb", None),
        ("the whole file padded up front to its longest list", "padded_to_longest_mb", None),
    ):
        print(f"| {label} | {r[key]:,.1f} | {f'{r[seconds]:.1f}' if seconds else ''} |")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes (< 1 minute): checks that it runs")
    parser.add_argument(
        "--parts", nargs="*", default=["throughput", "memory"], choices=["throughput", "memory"]
    )
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2], help="cores to pin each child to")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--train-queries", type=int, default=2_000)
    parser.add_argument("--test-queries", type=int, default=1_000)
    parser.add_argument(
        "--memory-size", type=int, nargs=2, default=list(MSLR_WEB10K_TRAIN), metavar=("QUERIES", "DOCS")
    )
    parser.add_argument("--memory-epochs", type=int, default=1)
    parser.add_argument("--hidden", type=int, nargs="+", default=[256, 128])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--cap", type=int, default=200, help="max_list_size")
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--learning-rate", type=float, default=0.001)
    parser.add_argument("--child", choices=["throughput", "memory"], help=argparse.SUPPRESS)
    return parser


def main() -> None:
    args = build_parser().parse_args()
    if args.child:
        out = child_throughput(args) if args.child == "throughput" else child_memory(args)
        print(RESULT + json.dumps(out), flush=True)
        return
    if args.quick:
        args.repeats, args.train_queries, args.test_queries, args.memory_size = 2, 96, 48, [300, 36_000]
    available = sorted(os.sched_getaffinity(0))
    if max(args.threads) > len(available):
        raise SystemExit(
            f"--threads {max(args.threads)}: only {len(available)} cores are available ({available})"
        )
    argv = child_argv(args)

    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((ln.split(":", 1)[1].strip() for ln in cpuinfo if ln.startswith("model name")), "?")
    print(
        f"machine: nproc {os.cpu_count()}, CPU {cpu}, Python {platform.python_version()}, "
        f"jax {version('jax')}, optax {version('optax')}, rax {version('rax')}"
    )
    print(f"command: {sys.executable} {' '.join(sys.argv)}")
    print(f"load average at start: {os.getloadavg()}", flush=True)
    if "throughput" in args.parts:
        results = [run_child("throughput", available[:n], argv) for n in args.threads]
        report_throughput(results, args)
    if "memory" in args.parts:
        report_memory(run_child("memory", available[: args.threads[0]], argv))
    print(f"\nload average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
