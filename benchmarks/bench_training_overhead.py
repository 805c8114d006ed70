"""Training overhead of ``ltr`` over a direct ``lightgbm.train`` call, on MSLR-WEB30K-sized data.

Data (generated in memory, seeded; NOT real data): 18,919 training queries and 2.27 M documents ×
136 float32 features (MSLR-WEB30K Fold 1 train), log-normal query sizes (mean ≈ 120, 1–1,251
documents), labels 0–4 with MSLR's label shares, cut from a noisy linear + interaction latent
relevance; a 6,306-query validation split of the same kind (rows of its own, the same relevance
function, so that a model fitted on the training split ranks it). ``--scale`` shrinks both.

Two scenarios, each timed with the same parameters, the same threads, interleaved repeats (the
order alternates each repeat) and medians; the wall-clock ratio ``ltr / direct`` is the figure:

* ``train``: ``build_ranker(lambdamart).fit(train)`` against ``lightgbm.train(ranker.engine_params_,
  lgb.Dataset(X, y, group=sizes))`` — ltr's own work is validation of labels / query sizes and the
  parameter translation. Predictions on the validation split must be identical (checked).
* ``valid``: both with the validation split evaluated every round and no early stopping (so both
  grow the same trees): direct LightGBM computes its own ``ndcg@10``; ltr additionally computes
  ``ndcg@10`` with ltr's conventions (``ltr.metrics.evaluate``) through a ``feval`` every round —
  the price of early stopping on the metric the run reports. Predictions again identical.
* ``components`` (use at full scale when whole trainings are too slow for the machine): times, with
  medians over ``--repeats``, (a) everything ltr does before handing over to LightGBM (parameter
  resolution, label / query-size checks, translation), (b) ltr's per-round validation metric on the
  validation split, (d) LightGBM's Dataset construction (binning; both sides pay it) and (c) one
  LightGBM boosting round (median over rounds 2..``--trees`` of direct ``lightgbm.train`` calls on the
  constructed Dataset), so the projected ratio of an N-round training is (d + N·c + a + N·b) / (d + N·c).

Run from the project root (figures recorded in docs/benchmarks.md):

    .venv/bin/python benchmarks/bench_training_overhead.py --scale 0.05 --trees 50 --leaves 63 --threads 1 --repeats 3
    .venv/bin/python benchmarks/bench_training_overhead.py --scale 1 --trees 6 --leaves 255 --threads 1 \
        --repeats 3 --scenarios components
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import lightgbm as lgb  # noqa: E402

from ltr.data import RankingData  # noqa: E402
from ltr.models import build_ranker  # noqa: E402

MSLR_TRAIN = (18_919, 2_270_296)
MSLR_VALID = (6_306, 747_218)
N_FEATURES = 136
LABEL_SHARES = np.array([0.515, 0.325, 0.134, 0.018, 0.008])  # MSLR-WEB30K label 0..4


#: the seed of the relevance function (the latent's weights and label cuts), shared by every split so
#: that a model fitted on one split ranks the others; a split's own seed draws only its rows
RELEVANCE_SEED = 0
RELEVANCE_WEIGHTS = np.random.default_rng(RELEVANCE_SEED).normal(size=12).astype(np.float32)
#: the latent's distribution is fixed (standard normal features, fixed weights and noise), so one set
#: of cuts gives every split MSLR's label shares
_LATENT_SD = float(np.sqrt(RELEVANCE_WEIGHTS @ RELEVANCE_WEIGHTS + 0.8**2 + 0.5**2 + 1.5**2))
LABEL_CUTS = _LATENT_SD * np.array(
    [statistics.NormalDist().inv_cdf(share) for share in np.cumsum(LABEL_SHARES)[:-1]]
)


def synthetic_split(n_queries: int, n_docs: int, *, seed: int, name: str) -> RankingData:
    """MSLR-shaped synthetic ranking data (see the module docstring): rows drawn from ``seed``, labels
    from the relevance function every split shares (``RELEVANCE_WEIGHTS``, ``LABEL_CUTS``)."""
    rng = np.random.default_rng(seed)
    raw = rng.lognormal(mean=4.3, sigma=0.9, size=n_queries)
    sizes = np.clip(np.round(raw / raw.sum() * n_docs), 1, 1251).astype(np.int64)
    while (gap := n_docs - int(sizes.sum())) != 0:  # spread the rounding gap, keeping 1..1251
        picks = rng.choice(n_queries, size=min(abs(gap), n_queries), replace=False)
        sizes[picks] = np.clip(sizes[picks] + np.sign(gap), 1, 1251)
    n = int(sizes.sum())
    X = rng.standard_normal((n, N_FEATURES), dtype=np.float32)
    latent = X[:, :12] @ RELEVANCE_WEIGHTS + 0.8 * X[:, 12] * X[:, 13]
    latent += np.repeat(rng.normal(0, 0.5, n_queries), sizes) + rng.normal(0, 1.5, n).astype(np.float32)
    y = np.searchsorted(LABEL_CUTS, latent).astype(np.float64)
    return RankingData(X=X, y=y, qid=np.repeat(np.arange(n_queries), sizes), name=name)


class MetricClock:
    """Seconds spent in ltr's own validation metric (``RankingMetric.per_query``) while active.

    Measured inside the ltr run itself, so it does not depend on machine noise the way the
    difference of two whole-training wall times does.
    """

    def __init__(self) -> None:
        from ltr.models.evaluation import RankingMetric

        self.cls, self.original, self.seconds, self.calls = RankingMetric, RankingMetric.per_query, 0.0, 0

    def __enter__(self) -> MetricClock:
        original = self.original

        def per_query(metric, *args, **kwargs):
            t = time.perf_counter()
            try:
                return original(metric, *args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t
                self.calls += 1

        self.cls.per_query = per_query
        return self

    def __exit__(self, *exc) -> None:
        self.cls.per_query = self.original


def timed(fn) -> tuple[float, float, object]:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def components(train: RankingData, valid: RankingData, params: dict, args: argparse.Namespace) -> None:
    """Scenario ``components``: ltr's fixed pre-training work, its per-round metric, one LightGBM round."""
    from ltr.models.monitor import watch

    cfg = {"name": "lambdamart", "params": params, "early_stopping": {"patience": 50}}
    ranker = build_ranker(cfg, seed=7, num_threads=args.threads)

    def prepare():
        resolved = ranker._resolve()
        w = watch(
            train,
            valid,
            resolved.early_stopping,
            None,
            lambda d, role, top: ranker._check_data(d, role, resolved.params, top),
        )
        return ranker.translate(
            resolved.params, resolved.engine_params, max_label=w.max_label, metric=w.metric
        ), w

    _, _, (engine_params, w) = timed(prepare)  # warm-up (numba compile / cache load)
    scores = np.random.default_rng(0).normal(size=valid.n_docs)
    w.metric.mean(valid, scores)
    a = statistics.median(timed(prepare)[0] for _ in range(args.repeats))
    b = statistics.median(timed(lambda: w.metric.mean(valid, scores))[0] for _ in range(args.repeats))
    direct = {**engine_params, "metric": "None", "num_iterations": args.trees}

    builds, rounds = [], []
    for _ in range(args.repeats):  # (d) Dataset construction, then (c) per-round times of a direct train
        seconds, _, dset = timed(
            lambda: lgb.Dataset(train.X, train.y, group=train.group_sizes, params=direct).construct()
        )
        builds.append(seconds)
        stamps = [time.perf_counter()]
        lgb.train(
            direct,
            dset,
            args.trees,
            callbacks=[lambda env, stamps=stamps: stamps.append(time.perf_counter())],
        )
        rounds.extend(np.diff(stamps)[1:].tolist())  # the first round also sets the booster up
        del dset
    d = statistics.median(builds)
    c = statistics.median(rounds)
    print(
        f"\ncomponents at {train.n_docs:,} train / {valid.n_docs:,} valid rows, {args.threads} threads (medians):"
    )
    print(f"  (a) ltr pre-training work        {a:8.3f} s  (once)")
    print(f"  (b) ltr metric on valid          {b:8.3f} s  (per round)")
    print(f"  (d) LightGBM Dataset construction {d:7.3f} s  (once, both sides)")
    print(f"  (c) one LightGBM round           {c:8.3f} s  (median of rounds 2..{args.trees} of each repeat)")
    for n in (100, 500):
        base = d + n * c
        print(
            f"  projected ratio, {n} rounds: no valid {(base + a) / base:.4f}; "
            f"early stopping on ltr's metric {(base + a + n * b) / base:.4f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the MSLR-WEB30K sizes")
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--leaves", type=int, default=255)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scenarios", nargs="*", default=["train", "valid"], help="train, valid, components")
    args = parser.parse_args()

    t0 = time.perf_counter()
    train = synthetic_split(*(round(v * args.scale) for v in MSLR_TRAIN), seed=1, name="synthetic-train")
    valid = synthetic_split(*(round(v * args.scale) for v in MSLR_VALID), seed=2, name="synthetic-valid")
    print(f"generated {train} and {valid} in {time.perf_counter() - t0:.1f} s", flush=True)

    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((ln.split(":", 1)[1].strip() for ln in cpuinfo if ln.startswith("model name")), "?")
    print(
        f"machine: nproc {os.cpu_count()}, CPU {cpu}, Python {platform.python_version()}, lightgbm {lgb.__version__}"
    )
    print(f"load average at start: {os.getloadavg()}")

    params = {"n_trees": args.trees, "num_leaves": args.leaves, "learning_rate": 0.1, "min_data_in_leaf": 50}
    rows = []
    if "components" in args.scenarios:
        components(train, valid, params, args)
    for scenario in [s for s in args.scenarios if s != "components"]:
        with_valid = scenario == "valid"
        cfg = {
            "name": "lambdamart",
            "params": params,
            "early_stopping": {"metric": "ndcg@10", "patience": None, "eval_train": False},
        }

        def run_ltr(cfg=cfg, with_valid=with_valid):
            r = build_ranker(cfg, seed=7, num_threads=args.threads)
            return r.fit(train, valid if with_valid else None)

        # the exact parameters ltr hands LightGBM (metric included), taken from a 1-tree fit
        probe = build_ranker({**cfg, "params": {**params, "n_trees": 1}}, seed=7, num_threads=args.threads)
        probe.fit(
            train.subset(np.arange(50)), valid.subset(np.arange(20)) if with_valid else None
        )  # also warms numba
        engine_params = {**probe.engine_params_, "num_iterations": args.trees}

        def run_direct(engine_params=engine_params, with_valid=with_valid):
            dtrain = lgb.Dataset(train.X, train.y, group=train.group_sizes, free_raw_data=True)
            sets = {}
            if with_valid:
                sets["valid"] = lgb.Dataset(valid.X, valid.y, group=valid.group_sizes, reference=dtrain)
            return lgb.train(
                dict(engine_params),
                dtrain,
                num_boost_round=args.trees,
                valid_sets=list(sets.values()),
                valid_names=list(sets),
            )

        times: dict[str, list[tuple[float, float]]] = {"ltr": [], "direct": []}
        metric_seconds: list[float] = []
        preds: dict[str, np.ndarray] = {}
        for rep in range(args.repeats):
            order = ("ltr", "direct") if rep % 2 == 0 else ("direct", "ltr")
            for who in order:
                if who == "ltr":
                    with MetricClock() as clock:
                        wall, cpu_s, model = timed(run_ltr)
                    metric_seconds.append(clock.seconds)
                    print(
                        f"  {scenario} rep {rep} ltr's metric: {clock.seconds:.2f} s in {clock.calls} calls"
                    )
                else:
                    wall, cpu_s, model = timed(run_direct)
                times[who].append((wall, cpu_s))
                p = model.predict(valid) if who == "ltr" else model.predict(valid.X)
                if who in preds and not np.array_equal(preds[who], p):
                    raise SystemExit(f"{scenario}: {who} is not deterministic across repeats")
                preds[who] = p
                print(f"  {scenario} rep {rep} {who:<6} wall {wall:7.1f} s  cpu {cpu_s:7.1f} s", flush=True)
                del model
        identical = bool(np.array_equal(preds["ltr"], preds["direct"]))
        med = {
            who: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t))
            for who, t in times.items()
        }
        rows.append((scenario, med, identical, statistics.median(metric_seconds)))

    print(f"\nload average at end: {os.getloadavg()}")
    if not rows:
        return
    print(
        f"\n{train.n_queries:,} train queries / {train.n_docs:,} docs × {N_FEATURES}; {args.trees} trees, "
        f"{args.leaves} leaves, {args.threads} threads, {args.repeats} interleaved repeats (medians)\n"
    )
    print(
        "| scenario | direct wall (s) | ltr wall (s) | ratio wall | direct CPU (s) | ltr CPU (s) | ratio CPU "
        "| ltr's metric inside its run (s) | (direct + metric) / direct | identical predictions |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for scenario, med, identical, metric_s in rows:
        d, r = med["direct"], med["ltr"]
        print(
            f"| {scenario} | {d[0]:.1f} | {r[0]:.1f} | {r[0] / d[0]:.3f} | {d[1]:.1f} | {r[1]:.1f} | "
            f"{r[1] / d[1]:.3f} | {metric_s:.2f} | {(d[0] + metric_s) / d[0]:.4f} | {'yes' if identical else 'NO'} |"
        )


if __name__ == "__main__":
    main()
