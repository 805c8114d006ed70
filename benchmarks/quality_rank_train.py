"""Quality of every ``ltr`` model on real web-search data, measured with 5-fold query cross-validation.

Data: ``lightgbm_lambdarank/rank.train`` + ``rank.train.query`` of the real-data folder (201 queries, 3,005
documents, 300 feature columns, labels 0–4; sampled from the Yahoo! LTR Challenge by LightGBM's
maintainers). Each model uses its shipped config ``conf/model/NAME.yaml`` unchanged. Queries are
dealt into 5 folds (seed 0); each fold is scored by a model trained on the other 4, of which a
seeded 20% of queries is the validation split (early stopping; the ``feature`` model's column and
direction). The out-of-fold per-query NDCG@10 and ERR@10 (ltr preset: exp2 gain, average ties,
queries without relevant documents skipped — 3 here — ERR gmax 4) are pooled over folds and
summarised with 95% BCa bootstrap CIs (``ltr.stats``, B = 10,000, seed 0); Δ is the paired
difference to the single-feature baseline with its paired BCa CI.

Run from the project root, naming the file (or set ``LTR_TEST_DATA`` to the real-data folder):

    .venv/bin/python benchmarks/quality_rank_train.py --data PATH/lightgbm_lambdarank/rank.train --threads 2
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ltr.data.svmlight import load_svmlight  # noqa: E402
from ltr.metrics import evaluate  # noqa: E402
from ltr.models import available_models  # noqa: E402
from ltr.models.crossval import cross_val_scores  # noqa: E402
from ltr.models.ensembles.members import compose_model_config  # noqa: E402
from ltr.stats import bootstrap_ci, paired_bootstrap_ci  # noqa: E402

#: Where the file sits inside the real-data folder that ``$LTR_TEST_DATA`` names (the tests' setting).
DATA_IN_REAL_DATA_FOLDER = Path("lightgbm_lambdarank") / "rank.train"
METRICS = ("ndcg@10", "err@10")
BASELINE = "feature"


def single_models() -> list[str]:
    """Every registered single model (ensembles are measured in their own section)."""
    return [m for m in available_models() if not m.startswith("ensemble")]


def fmt(r) -> str:
    return f"{r.estimate:.4f} [{r.low:.4f}, {r.high:.4f}]"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    real_data = os.environ.get("LTR_TEST_DATA")
    parser.add_argument(
        "--data",
        type=Path,
        default=Path(real_data) / DATA_IN_REAL_DATA_FOLDER if real_data else None,
        required=not real_data,
        help=f"the rank.train file (default: $LTR_TEST_DATA/{DATA_IN_REAL_DATA_FOLDER.as_posix()})",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", nargs="*", default=None, help="default: every single model")
    args = parser.parse_args()
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

    data = load_svmlight(args.data)
    print(f"data: {data} ({data.n_queries} queries)")
    models = args.models or single_models()
    if BASELINE not in models:
        models = [BASELINE, *models]
    per_query: dict[str, dict[str, np.ndarray]] = {}
    seconds: dict[str, float] = {}
    for name in models:
        cfg = compose_model_config(name, f"model {name}")  # conf/model/NAME.yaml over its defaults
        start = time.perf_counter()
        scores, _ = cross_val_scores(data, cfg, k=args.folds, seed=args.seed, num_threads=args.threads)
        seconds[name] = time.perf_counter() - start
        per_query[name] = evaluate(list(METRICS), data.y, scores, data.offsets, preset="ltr")
        print(
            f"  {name:<15} {seconds[name]:7.1f} s  ndcg@10 {np.nanmean(per_query[name]['ndcg@10']):.4f}",
            flush=True,
        )

    n_skipped = int(np.isnan(per_query[BASELINE]["ndcg@10"]).sum())
    print(
        f"\n{data.n_queries} queries, {n_skipped} skipped (no relevant document); 95% BCa CIs, B=10,000, seed {args.seed}\n"
    )
    print("| model | NDCG@10 [95% CI] | ERR@10 [95% CI] | Δ NDCG@10 vs feature [95% CI] | CV time (s) |")
    print("|---|---|---|---|---:|")
    order = sorted(models, key=lambda m: -np.nanmean(per_query[m]["ndcg@10"]))
    for name in order:
        q = per_query[name]
        cis = [bootstrap_ci(q[m], B=10_000, seed=args.seed) for m in METRICS]
        if name == BASELINE:
            delta = "—"
        else:
            d = paired_bootstrap_ci(q["ndcg@10"], per_query[BASELINE]["ndcg@10"], B=10_000, seed=args.seed)
            delta = f"{d.estimate:+.4f} [{d.low:+.4f}, {d.high:+.4f}]"
        print(f"| {name} | {fmt(cis[0])} | {fmt(cis[1])} | {delta} | {seconds[name]:.1f} |")


if __name__ == "__main__":
    main()
