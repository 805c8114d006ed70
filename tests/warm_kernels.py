"""Compile ltr's numba kernels once, into numba's on-disk cache, before the test suite runs.

A fresh clone has no compiled kernels: the first test that parses a file or computes a metric pays
the compilation (about 20 s for the parser and 17 s for the metrics and statistics on a quiet core), and with
several xdist workers each worker may pay it again. ``tests/conftest.py`` runs this script once per
test session, in the controlling process, as two processes at once (``parse`` and ``metrics``: the
two large groups, so the wall time is the larger of the two); later sessions find the cache warm
and spend a second or two here. Run by hand: ``python tests/warm_kernels.py parse metrics``.

Each group calls the public functions the suite calls, with the argument types the suite uses
(a numba kernel is compiled once per type signature): float32 parsing (``data.parse.dtype=float64``
compiles another ~20 s, left to the few tests that use it), the cache's checksum, LETOR text generation, every metric family under every tie convention, the bootstrap
(percentile and BCa), the paired tests, Tukey's HSD and the pairwise IPS gradients.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def warm_parse() -> None:
    """The fast SVMlight parser (float32), the cache's checksum, LETOR text at scale."""
    from ltr.data.svmlight import load_svmlight, write_svmlight
    from ltr.data.synthetic import generate
    from ltr.data.textgen import write_letor_text

    with tempfile.TemporaryDirectory(prefix="ltr-warm-") as tmp:
        folder = Path(tmp)
        write_svmlight(generate(30, seed=0, max_docs=12), folder / "a.txt")
        # float32 only: the float64 variant (~20 s more) is compiled by the few tests that parse to it
        load_svmlight(folder / "a.txt", engine="numba", cache_dir=folder / "cache")
        load_svmlight(folder / "a.txt", engine="numba", cache_dir=folder / "cache")  # from the cache
        write_letor_text(folder / "b.txt", n_queries=5, docs_per_query=4, n_features=4, seed=0)


def warm_metrics() -> None:
    """Every metric family under every tie convention; the statistics' resampling kernels; pairwise IPS."""
    from ltr.metrics import evaluate
    from ltr.models.clicks.pairwise_ips import PairwiseIPSObjective
    from ltr.stats import bootstrap_ci, paired_bootstrap_ci, randomization_test, tukey_hsd

    rng = np.random.default_rng(0)
    offsets = np.array([0, 7, 12, 20])
    labels = rng.integers(0, 5, offsets[-1])
    scores = rng.integers(0, 4, offsets[-1]).astype(float)  # ties
    names = ["ndcg@5", "ndcg", "dcg@5", "meanndcg", "err@5", "map", "map@5", "mrr", "p@5", "r@5"]
    for ties in ("stable", "average", "pessimistic", "optimistic"):
        evaluate(names, labels, scores, offsets, ties=ties)
    evaluate(names, labels, scores, offsets, ties="docno_desc", docno=np.arange(offsets[-1]).astype(str))
    evaluate(names, labels, scores, offsets, preset="trec", docno=np.arange(offsets[-1]).astype(str))
    a, b = rng.random(30), rng.random(30)
    for method in ("percentile", "bca"):
        bootstrap_ci(a, B=50, seed=0, method=method)
        paired_bootstrap_ci(a, b, B=50, seed=0, method=method)
    randomization_test(a, b, B=50, seed=0)
    tukey_hsd({"a": a, "b": b, "c": (a + b) / 2}, B=50, seed=0)
    objective = PairwiseIPSObjective(offsets=offsets, labels=labels, pair_weight=np.ones(offsets[-1]))
    objective(scores, None)  # the pairwise IPS LambdaMART gradients


GROUPS = {"parse": warm_parse, "metrics": warm_metrics}


if __name__ == "__main__":
    for group in sys.argv[1:] or list(GROUPS):
        start = time.perf_counter()
        GROUPS[group]()
        print(f"{group}: {time.perf_counter() - start:.1f} s")
