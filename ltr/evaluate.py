"""``python -m ltr.evaluate``: trec_eval-compatible evaluation of a TREC run against qrels.

    python -m ltr.evaluate --qrels QRELS --run RUN -m ndcg_cut_10 -m map -m P_5 [-q]

Measures are trec_eval names (``ndcg``, ``ndcg_cut_10``, ``map``, ``map_cut_100``, ``P_5``, ``P.5,10``,
``recall_10``, ``recip_rank``; ``-m P`` expands to trec_eval's default cutoffs) or ``ltr`` names
(``ndcg@10``, ``err@20``). Output is trec_eval's ``measure<TAB>topic<TAB>value``; ``-q`` adds one
line per topic before the ``all`` lines. Conventions default to trec_eval's (preset ``trec``: ideal
ranking from all judged documents, score ties broken by docno descending, rank column ignored);
``--preset`` picks another preset, e.g. ``gdeval``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ltr.entry import run_cli
from ltr.errors import LtrError
from ltr.metrics.conventions import PRESETS
from ltr.metrics.trec import evaluate_trec, format_trec, read_qrels, read_run


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface (also used by the tests)."""
    p = argparse.ArgumentParser(
        prog="python -m ltr.evaluate",
        description="Evaluate a TREC run against qrels (trec_eval-compatible output).",
    )
    p.add_argument("--qrels", required=True, help="qrels file: topic iteration docno relevance")
    p.add_argument("--run", required=True, help="run file: topic Q0 docno rank score tag")
    p.add_argument(
        "-m",
        "--measure",
        action="append",
        dest="measures",
        metavar="NAME",
        help="measure (repeatable): trec_eval name (ndcg_cut_10, map, P_5, P.5,10, recall_10, recip_rank) "
        "or ltr name (ndcg@10); default: ndcg, map, P, recall, recip_rank",
    )
    p.add_argument("-q", action="store_true", dest="per_topic", help="print one line per topic too")
    p.add_argument(
        "--preset", default="trec", choices=sorted(PRESETS), help="metric conventions (default: trec)"
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (2 for bad input, with the error on stderr)."""
    args = build_parser().parse_args(argv)
    measures = args.measures or ["ndcg", "map", "P", "recall", "recip_rank"]
    try:
        result = evaluate_trec(read_qrels(args.qrels), read_run(args.run), measures, preset=args.preset)
    except LtrError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(format_trec(result, per_topic=args.per_topic))
    return 0


if __name__ == "__main__":
    run_cli(main)  # a closed pipe (`| head`) and Ctrl-C end quietly / in one line (ltr.entry)
