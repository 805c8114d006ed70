"""Benchmark: ltr.stats bootstrap CIs (BCa, percentile) and the sign-flip randomisation test against scipy.

Same data, same B, same run; threads pinned to 1; the numba kernels are warmed up (compiled or loaded
from cache) before timing and that first-call time is reported separately. Prints a Markdown table of
median wall times over ``--repeats`` runs, the speed-up (scipy / ltr) and how far the two intervals
are apart in units of the bootstrap standard error (Monte-Carlo noise, expected ≲ 0.1).

    .venv/bin/python benchmarks/bench_bootstrap.py                 # 7,000 queries, B = 10,000, 5 repeats
    .venv/bin/python benchmarks/bench_bootstrap.py --n 2000 --repeats 3
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
import scipy  # noqa: E402
from scipy import stats  # noqa: E402

from ltr.stats import bootstrap_ci, randomization_test  # noqa: E402


def _paired_timings(ours: Callable[[], object], ref: Callable[[], object], repeats: int) -> dict[str, object]:
    """Run ``ours`` and ``ref`` alternately ``repeats`` times (so both see the same machine load);
    median wall-clock and CPU (process) seconds of each, and the last results."""
    wall: dict[str, list[float]] = {"ours": [], "ref": []}
    cpu: dict[str, list[float]] = {"ours": [], "ref": []}
    out: dict[str, object] = {}
    for _ in range(repeats):
        for key, fn in (("ours", ours), ("ref", ref)):
            w0, c0 = time.perf_counter(), time.process_time()
            out[key] = fn()
            wall[key].append(time.perf_counter() - w0)
            cpu[key].append(time.process_time() - c0)
    for key in ("ours", "ref"):
        out[f"wall_{key}"] = statistics.median(wall[key])
        out[f"cpu_{key}"] = statistics.median(cpu[key])
    return out


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--n", type=int, default=7000, help="queries (default 7,000: a Yahoo!-set1-sized test set)"
    )
    parser.add_argument("--B", type=int, default=10_000, help="resamples (default 10,000)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    base = rng.beta(2.0, 3.0, args.n)  # NDCG-like per-query values
    system = np.clip(base + 0.004 + rng.normal(0.0, 0.1, args.n), 0.0, 1.0)

    t0 = time.perf_counter()
    bootstrap_ci(base[:50], B=10, seed=0)
    randomization_test(base[:50], system[:50], B=10, seed=0)
    warmup = time.perf_counter() - t0

    print(
        f"# bench_bootstrap: n = {args.n:,} queries, B = {args.B:,}, median of {args.repeats} repeats, 1 thread"
    )
    print(
        f"# machine: {_cpu_model()}, nproc {os.cpu_count()}; numpy {np.__version__}, scipy {scipy.__version__}"
    )
    print(f"# ltr first call (numba compile or cache load), excluded below: {warmup:.2f} s\n")
    print(
        "| task | ltr wall (s) | scipy wall (s) | speed-up wall | ltr CPU (s) | scipy CPU (s) | speed-up CPU "
        "| max endpoint gap / SE |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")

    def row(task: str, r: dict[str, object], gap: str) -> None:
        wo, wr, co, cr = (float(r[k]) for k in ("wall_ours", "wall_ref", "cpu_ours", "cpu_ref"))  # type: ignore[arg-type]
        print(
            f"| {task} | {wo:.3f} | {wr:.3f} | {wr / wo:.1f}× | {co:.3f} | {cr:.3f} | {cr / co:.1f}× | {gap} |"
        )

    for method, scipy_method in (("bca", "BCa"), ("percentile", "percentile")):
        r = _paired_timings(
            lambda m=method: bootstrap_ci(base, method=m, B=args.B, seed=args.seed),
            lambda m=scipy_method: stats.bootstrap(
                (base,), np.mean, n_resamples=args.B, method=m, vectorized=True, rng=args.seed
            ),
            args.repeats,
        )
        ours, ref = r["ours"], r["ref"]
        gap = max(abs(ours.low - ref.confidence_interval.low), abs(ours.high - ref.confidence_interval.high))
        row(f"{method} CI of the mean", r, f"{gap / ref.standard_error:.3f}")
    r = _paired_timings(
        lambda: randomization_test(system, base, B=args.B, seed=args.seed),
        lambda: stats.permutation_test(
            (system, base),
            lambda x, y, axis: np.mean(x - y, axis=axis),
            permutation_type="samples",
            n_resamples=args.B,
            vectorized=True,
            rng=args.seed,
        ),
        args.repeats,
    )
    row(f"paired sign-flip test (p {r['ours'].pvalue:.4f} vs scipy {r['ref'].pvalue:.4f})", r, "—")


if __name__ == "__main__":
    main()
