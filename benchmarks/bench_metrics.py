"""Speed of ltr.metrics (NDCG@10 + ERR@10) against ranx and pytrec_eval on the same queries, one run.

    .venv/bin/python benchmarks/bench_metrics.py --queries 30000 --docs 100 --repeats 5

Every tool is pinned to one thread (NUMBA_NUM_THREADS / OMP_NUM_THREADS = 1, set before import).
The input is one set of per-query labels and float64 scores; ranx and pytrec_eval receive it as
the nested ``{qid: {docid: value}}`` dicts they take. Timed (medians over ``--repeats``):

- ltr: ``evaluate(["ndcg@10", "err@10"], labels, scores, offsets)`` from flat arrays, including
  the per-query sort (presets ``ltr`` = exact average ties, and ``ranx_burges`` = stable ties);
- ranx: ``ranx.evaluate(qrels, run, "ndcg_burges@10")`` on prebuilt ``Qrels``/``Run`` objects (the
  most favourable case for ranx; building them from dicts is reported separately). ranx has no ERR;
- pytrec_eval: ``RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)`` (no ERR either).

The first ltr and ranx calls of the process (numba JIT compile or cache load) are reported apart.
Both wall-clock and CPU (process) time are reported: on a shared machine CPU time is steadier.
Before timing, the NDCG@10 values of every tool are checked against ltr's (preset matched).

``--paths`` times ltr's other metric paths against NDCG@10 alone on the same rows (CPU, medians):
MAP and NDCG at full depth, ERR@10, and the ``trec`` preset's document-id tie-breaking (string
docnos) at depth 10 and at full depth, once with continuous scores and once with scores rounded to
0.1 (most rows tied). The floor of every full-depth metric is shown with them: numpy's own sort of
each list's score values (no indices, no metric), which a full ranking cannot beat.
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402

from ltr.metrics import evaluate  # noqa: E402


def make_data(n_queries: int, n_docs: int, seed: int):
    """MSLR-like grades (0..4) and scores correlated with them; every query has n_docs documents."""
    rng = np.random.default_rng(seed)
    labels = rng.choice(5, size=n_queries * n_docs, p=[0.5, 0.3, 0.15, 0.04, 0.01])
    scores = labels * 0.5 + rng.normal(size=labels.shape[0])
    offsets = np.arange(n_queries + 1, dtype=np.int64) * n_docs
    return labels, scores, offsets


def timed(fn: Callable[[], object], repeats: int) -> tuple[tuple[float, float], object]:
    """Median wall-clock and median CPU (process) seconds over ``repeats`` calls, and the last result."""
    wall, cpu, out = [], [], None
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return (statistics.median(wall), statistics.median(cpu)), out


def machine() -> str:
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    # not `nproc`: it honours the OMP_NUM_THREADS=1 set above
    nproc = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{cpu}, {nproc} CPUs available, Python {platform.python_version()}, load average {load:.1f} at start"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=30000)
    ap.add_argument("--docs", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-ranx", action="store_true")
    ap.add_argument("--no-pytrec", action="store_true")
    ap.add_argument("--paths", action="store_true", help="time ltr's metric paths against NDCG@10 (only)")
    args = ap.parse_args()

    print(f"machine: {machine()}")
    labels, scores, offsets = make_data(args.queries, args.docs, args.seed)
    if args.paths:
        metric_paths(labels, scores, offsets, args)
        return
    print(
        f"input: {args.queries} queries x {args.docs} documents = {labels.shape[0]:,} rows, repeats {args.repeats}"
    )
    rows: list[tuple[str, tuple[float, float], str]] = []

    def ours(preset: str):
        return evaluate(["ndcg@10", "err@10"], labels, scores, offsets, preset=preset)

    t = time.perf_counter()
    ours("ltr")
    first = time.perf_counter() - t
    print(f"ltr first call (numba compile or cache load + run): {first:.2f} s")
    ltr_median, _ = timed(lambda: ours("ltr"), args.repeats)
    rows.append(("ltr ndcg@10+err@10, preset ltr (average ties)", ltr_median, ""))
    times, stable_values = timed(lambda: ours("ranx_burges"), args.repeats)
    rows.append(("ltr ndcg@10+err@10, stable ties", times, ""))

    n_q, n_d = args.queries, args.docs
    qids = [f"q{i:06d}" for i in range(n_q)]
    docs = [f"d{j}" for j in range(n_d)]
    lab_list, score_list = labels.tolist(), scores.tolist()
    qrels = {qids[i]: dict(zip(docs, lab_list[i * n_d : (i + 1) * n_d], strict=True)) for i in range(n_q)}
    run = {qids[i]: dict(zip(docs, score_list[i * n_d : (i + 1) * n_d], strict=True)) for i in range(n_q)}

    if not args.no_ranx:
        import ranx

        t = time.perf_counter()
        rq, rr = ranx.Qrels(qrels), ranx.Run(run)
        build = time.perf_counter() - t
        print(f"ranx Qrels+Run from dicts (first, includes JIT): {build:.2f} s")
        t = time.perf_counter()
        ranx.evaluate(rq, rr, "ndcg_burges@10", return_mean=False)
        print(f"ranx first evaluate (JIT compile or cache load + run): {time.perf_counter() - t:.2f} s")
        times, rv = timed(lambda: ranx.evaluate(rq, rr, "ndcg_burges@10", return_mean=False), args.repeats)
        diff = np.abs(np.asarray(rv) - stable_values["ndcg@10"]).max()
        print(f"ranx ndcg_burges@10 vs ltr (preset ranx_burges): max |diff| {diff:.1e}")
        rows.append(("ranx ndcg_burges@10 (prebuilt Qrels/Run)", times, ""))
        times, _ = timed(lambda: (ranx.Qrels(qrels), ranx.Run(run)), max(1, args.repeats // 2))
        rows.append(("ranx Qrels+Run construction from dicts (warm)", times, "not in ratio"))

    if not args.no_pytrec:
        import pytrec_eval

        def trec():
            return pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)

        times, tv = timed(trec, max(1, min(args.repeats, 3)))
        trec_ours = evaluate("ndcg@10", labels, scores, offsets, preset="trec", docno=np.tile(docs, n_q))[
            "ndcg@10"
        ]
        diff = np.abs(np.array([tv[q]["ndcg_cut_10"] for q in qids]) - trec_ours).max()
        print(f"pytrec_eval ndcg_cut_10 vs ltr (preset trec): max |diff| {diff:.1e}")
        rows.append(("pytrec_eval ndcg_cut.10 (evaluator + evaluate)", times, ""))

    print()
    print("| what | wall s (median) | CPU s (median) | ltr faster by, wall | ltr faster by, CPU |")
    print("|---|---:|---:|---:|---:|")
    for name, (wall, cpu), note in rows:
        if note or name.startswith("ltr"):
            ratios = f"{note} | {note}" if note else " | "
        else:
            ratios = f"{wall / ltr_median[0]:.1f}x | {cpu / ltr_median[1]:.1f}x"
        print(f"| {name} | {wall:.3f} | {cpu:.3f} | {ratios} |")


def metric_paths(
    labels: np.ndarray, scores: np.ndarray, offsets: np.ndarray, args: argparse.Namespace
) -> None:
    """CPU time of each metric path relative to NDCG@10 alone (module docstring, ``--paths``)."""
    docno = np.array([f"clueweb-{i:08d}" for i in range(labels.shape[0])])
    n_q, n_d = args.queries, args.docs
    print(f"input: {n_q} queries x {n_d} documents = {labels.shape[0]:,} rows, repeats {args.repeats}")
    print()
    print("| path | continuous scores: CPU s | / NDCG@10 | scores rounded to 0.1: CPU s | / NDCG@10 |")
    print("|---|---:|---:|---:|---:|")
    cases = {"continuous": scores, "tied": np.round(scores, 1)}
    paths = {
        "ndcg@10 (preset ltr)": lambda s: evaluate("ndcg@10", labels, s, offsets),
        "err@10": lambda s: evaluate("err@10", labels, s, offsets),
        "map (full depth)": lambda s: evaluate("map", labels, s, offsets),
        "ndcg (full depth)": lambda s: evaluate("ndcg", labels, s, offsets),
        "ndcg@10, preset trec (docno ties)": lambda s: evaluate(
            "ndcg@10", labels, s, offsets, preset="trec", docno=docno
        ),
        "map, preset trec (docno ties)": lambda s: evaluate(
            "map", labels, s, offsets, preset="trec", docno=docno
        ),
        "floor: numpy sort of each list's scores": lambda s: np.sort(s.reshape(n_q, n_d), axis=1),
    }
    for fn in paths.values():  # compile / load every kernel first
        for s in cases.values():
            fn(s)
    cpu = {
        (name, key): timed(lambda s=s, fn=fn: fn(s), args.repeats)[0][1]
        for name, fn in paths.items()
        for key, s in cases.items()
    }
    for name in paths:  # each against NDCG@10's own row of this run
        cells = []
        for key in cases:
            cells += [f"{cpu[name, key]:.3f}", f"{cpu[name, key] / cpu['ndcg@10 (preset ltr)', key]:.2f}x"]
        print(f"| {name} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
