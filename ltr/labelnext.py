"""``python -m ltr.labelnext``: which queries to label next (``ltr.analysis.label_priorities``).

    python -m ltr.labelnext --data FILE (--probs PROBS | --probs-model SOURCE)
                            --scores A [--scores B] [-m ndcg@10] [--by variance|expected_change]
                            [--samples 2000] [--seed 0] [--max-enumeration 4096] [--top N] [--json]

``--data`` is a LETOR/SVMlight file; its label column is ignored (the labels are what is uncertain).
Label distributions per document come from ``--probs`` (``.npy``, or a CSV/whitespace text file:
one row per data row in file order, column g = P(label = g), rows summing to 1) or from
``--probs-model`` (a fitted ``classification`` model, McRank: its predicted class probabilities;
``runs:/ID/model``, ``models:/NAME/VERSION`` or a model folder, as ``python -m ltr.evaluate --model``).
``--scores`` are prediction files (formats of :mod:`ltr.io.predictions`): system A ranks the
documents for ``variance``; with a second system B the expected change of the A − B comparison and
the probability that labelling the query flips the winner are computed too.

Output: a table of the queries in priority order (``--by``; ``--top N`` keeps the first N), or with
``--json`` ``{"metric": …, "by": …, "delta": …, "queries": [{"qid", "variance", "variance_stderr",
"expected_change", "flip_probability", "method"}, …]}`` (NaN → null).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence

import numpy as np

from ltr.analysis.label_priorities import ORDERINGS, LabelPriorities, label_priorities
from ltr.cli.running import print_result, run_cli
from ltr.core.errors import ConfigError
from ltr.core.resources import work_root
from ltr.data.svmlight import load_svmlight
from ltr.io.label_probs import read_label_probs
from ltr.io.predictions import read_scores
from ltr.models.normalized import normalized_input
from ltr.tracking.loading import load_model
from ltr.tracking.store import resolve_tracking_uri


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ltr.labelnext", description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="LETOR/SVMlight file (labels ignored)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--probs", help="label distributions: .npy or CSV, one row per data row")
    source.add_argument("--probs-model", help="a classification model whose class probabilities are used")
    parser.add_argument(
        "--scores", action="append", required=True, help="prediction file of system A (then B)"
    )
    parser.add_argument("-m", "--metric", default="ndcg@10")
    parser.add_argument("--by", choices=ORDERINGS, default="variance")
    parser.add_argument("--samples", type=int, default=2000, help="Monte-Carlo label draws per query")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--max-enumeration", type=int, default=4096, help="enumerate up to this many assignments"
    )
    parser.add_argument("--top", type=int, default=None, help="show only the first N queries")
    parser.add_argument("--tracking-uri", default=None, help="MLflow store for runs:/ and models: sources")
    parser.add_argument("--json", action="store_true")
    return parser


def model_label_probs(source: str, data: object, tracking_uri: str | None) -> np.ndarray:
    model = load_model(
        source, tracking_uri=resolve_tracking_uri(tracking_uri, work_root()), option="--probs-model"
    )
    if not hasattr(model.ranker, "predict_proba"):
        raise ConfigError(
            f"--probs-model: {source} ({model.ranker.name}) gives no class probabilities; use a classification model"
        )
    # raw file rows: a model trained with data.normalize normalises them with its own fitted normaliser
    return model.ranker.predict_proba(normalized_input(model.ranker, data, f"--probs-model {source}"))


def format_table(p: LabelPriorities, by: str, top: int | None) -> str:
    rows = p.table(by)[:top]
    head = f"metric {p.metric}, queries by {by}" + (
        "" if math.isnan(p.delta) else f", delta A-B = {p.delta:.4f}"
    )
    lines = [head, f"{'qid':>10}  {'variance':>10}  {'stderr':>8}  {'E|change|':>10}  {'P(flip)':>8}  method"]
    for r in rows:
        lines.append(
            f"{r['qid']!s:>10}  {r['variance']:>10.6f}  {r['variance_stderr']:>8.6f}  "
            f"{r['expected_change']:>10.6f}  {r['flip_probability']:>8.4f}  {r['method']}"
        )
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> str:
    if len(args.scores) > 2:
        raise ConfigError(f"--scores: give one or two systems, got {len(args.scores)}")
    data = load_svmlight(args.data)
    if args.probs is not None:
        probs = read_label_probs(args.probs, data.n_docs)
    else:
        probs = model_label_probs(args.probs_model, data, args.tracking_uri)
    systems = [read_scores(s, n_rows=data.n_docs, qid=data.qid) for s in args.scores]
    p = label_priorities(
        probs,
        data.offsets,
        systems[0],
        systems[1] if len(systems) == 2 else None,
        metric=args.metric,
        qid=data.query_ids,
        n_samples=args.samples,
        seed=args.seed,
        max_enumeration=args.max_enumeration,
    )
    if not args.json:
        return format_table(p, args.by, args.top)

    def plain(v: object) -> object:
        return None if isinstance(v, float) and math.isnan(v) else v

    rows = [{k: plain(v) for k, v in r.items()} for r in p.table(args.by)[: args.top]]
    return json.dumps({"metric": p.metric, "by": args.by, "delta": plain(p.delta), "queries": rows}) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (2 for bad input, with the error on stderr)."""
    return print_result(run, build_parser().parse_args(argv))


if __name__ == "__main__":
    run_cli(main)  # a closed pipe (`| head`) and Ctrl-C end quietly / in one line (ltr.cli.running)
