"""``python -m ltr.warmup``: compile ltr's numba kernels once, into numba's on-disk cache.

    python -m ltr.warmup [--jobs N] [parse] [metrics] [float64]

A fresh install has no compiled kernels: the first command that parses a file or computes a metric
pays the compilation (about 20 s for the parser and 17 s for the metrics and statistics on a quiet
core). ``make env`` runs this once after installing, as ``--compile-bytecode`` compiles the Python
files; later runs find the cache warm (a second or two here) and numba recompiles only a module whose
source changed. The test suite runs it at the start of a session too (``tests/conftest.py``: the
groups as processes at once), so an edited kernel is compiled once, not once per test worker.

Each group calls the public functions with the argument types ``ltr``'s commands use (numba compiles
a kernel once per type signature):

- ``parse``: the fast SVMlight parser (float32: what XGBoost, CatBoost and the networks read), the parse cache's
  checksum, the data fingerprint (:mod:`ltr.data._fingerprint`: every signature, dense and CSR,
  float32 and float64), LETOR text generation;
- ``metrics``: every metric family under every tie convention, the bootstrap (percentile and BCa), the
  paired tests, Tukey's HSD and the pairwise IPS gradients;
- ``float64``: the parser for float64 (what LightGBM and scikit-learn models read a file as, so what
  ``python -m ltr.train +model=lambdamart`` parses LETOR files into: ``BaseRanker.input_dtype``).

With no group: all three. ``--jobs N`` compiles up to N groups at once, each in its own
process (compilation is single-threaded). Prints the seconds each group took.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ltr.cli.running import run_cli


def _parse(dtype: str) -> None:
    from ltr.data.svmlight import load_svmlight, write_svmlight  # deferred: each group in its own process
    from ltr.data.synthetic import generate  # deferred: as above
    from ltr.data.textgen import write_letor_text  # deferred: as above

    with tempfile.TemporaryDirectory(prefix="ltr-warm-") as tmp:
        folder = Path(tmp)
        write_svmlight(generate(30, seed=0, max_docs=12), folder / "a.txt")
        for _ in range(2):  # parsed, then read from the parse cache (its checksum kernels)
            data = load_svmlight(folder / "a.txt", engine="numba", cache_dir=folder / "cache", dtype=dtype)
            data.fingerprint()  # the run tags' data fingerprint: its kernels compile when first imported
        write_letor_text(folder / "b.txt", n_queries=5, docs_per_query=4, n_features=4, seed=0)


def warm_parse() -> None:
    """The fast SVMlight parser (float32), the parse cache's checksum, the data fingerprint, LETOR text
    generation."""
    _parse("float32")


def warm_float64() -> None:
    """The fast SVMlight parser into float64 (LightGBM's and scikit-learn's models read files so)."""
    _parse("float64")


def warm_metrics() -> None:
    """Every metric family under every tie convention; the statistics' resampling kernels; pairwise IPS."""
    from ltr.metrics import evaluate  # deferred: as above
    from ltr.models.clicks.pairwise_ips import PairwiseIPSObjective  # deferred: as above
    from ltr.stats import (  # deferred: as above
        bootstrap_ci,
        paired_bootstrap_ci,
        randomization_test,
        tukey_hsd,
    )

    rng = np.random.default_rng(0)
    offsets = np.array([0, 7, 12, 20])
    labels = rng.integers(0, 5, offsets[-1])
    scores = rng.integers(0, 4, offsets[-1]).astype(float)  # ties
    names = ["ndcg@5", "ndcg", "dcg@5", "meanndcg", "err@5", "map", "map@5", "mrr", "p@5", "r@5"]
    docno = np.arange(offsets[-1]).astype(str)
    for ties in ("stable", "average", "pessimistic", "optimistic"):
        evaluate(names, labels, scores, offsets, ties=ties)
    evaluate(names, labels, scores, offsets, ties="docno_desc", docno=docno)
    evaluate(names, labels, scores, offsets, preset="trec", docno=docno)
    a, b = rng.random(30), rng.random(30)
    for method in ("percentile", "bca"):
        bootstrap_ci(a, B=50, seed=0, method=method)
        paired_bootstrap_ci(a, b, B=50, seed=0, method=method)
    randomization_test(a, b, B=50, seed=0)
    tukey_hsd({"a": a, "b": b, "c": (a + b) / 2}, B=50, seed=0)
    objective = PairwiseIPSObjective(offsets=offsets, labels=labels, pair_weight=np.ones(offsets[-1]))
    objective(scores, None)  # the pairwise IPS LambdaMART gradients


#: the groups by name, in the order they run
GROUPS: dict[str, Callable[[], None]] = {
    "parse": warm_parse,
    "metrics": warm_metrics,
    "float64": warm_float64,
}
#: the groups run when none is named
DEFAULT_GROUPS = ("parse", "metrics", "float64")


def _positive(text: str) -> int:
    value = int(text) if text.strip().isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ltr.warmup", description="Compile ltr's numba kernels into numba's on-disk cache."
    )
    parser.add_argument(
        "groups", nargs="*", metavar="GROUP",
        help=f"kernel groups: {', '.join(GROUPS)} (default: {' '.join(DEFAULT_GROUPS)})",
    )  # fmt: skip
    parser.add_argument("--jobs", type=_positive, default=1, help="groups compiled at once (default 1)")
    return parser


def warm(group: str) -> str:
    """Compile ``group``'s kernels; the line saying how long it took."""
    start = time.perf_counter()
    GROUPS[group]()
    return f"numba kernels, {group}: {time.perf_counter() - start:.1f} s"


def main(argv: Sequence[str] | None = None) -> int:
    """Compile the named groups (default :data:`DEFAULT_GROUPS`), printing each one's seconds."""
    parser = build_parser()
    args = parser.parse_args(argv)
    unknown = [group for group in args.groups if group not in GROUPS]
    if unknown:  # not argparse's choices=: Python 3.11 refuses an empty list against them
        parser.error(f"argument GROUP: invalid choice: {unknown[0]!r} (choose from {', '.join(GROUPS)})")
    groups = list(dict.fromkeys(args.groups or DEFAULT_GROUPS))
    if args.jobs == 1 or len(groups) == 1:
        lines = map(warm, groups)
    else:  # a process per group: numba compiles on one thread
        from concurrent.futures import ProcessPoolExecutor  # deferred: only for --jobs > 1

        with ProcessPoolExecutor(max_workers=min(args.jobs, len(groups))) as pool:
            lines = list(pool.map(warm, groups))
    for line in lines:
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    run_cli(main)
