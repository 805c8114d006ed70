"""``python -m ltr.export MODEL --format F --out PATH``: write a trained model for a serving engine.

::

    python -m ltr.export runs:/<run id>/model --format onnx --out model.onnx --check data/synthetic/test.txt
    python -m ltr.export path/to/saved_ranker --format solr --out model.json --feature-names features.txt

MODEL is a saved ranker folder or a logged MLflow model (:mod:`ltr.tracking.loading`); F is one of
:data:`ltr.export.formats.FORMATS`; ``--feature-names`` a feature map (:mod:`ltr.export.features`),
default ``f1 … fN``. Every export is checked: the written file is scored back as its engine would
on probe rows at every split threshold, just above it, NaN and ±1e30, and with ``--check DATA``
(an SVMlight/LETOR file) on those rows too; the worst difference is printed
(:mod:`ltr.export.parity`) and a failed check exits with status 1. A model the format cannot
express exactly is refused with the reason (exit status 2), no file written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ltr.core.errors import LtrError
from ltr.core.extras import install_hint
from ltr.core.resources import work_root
from ltr.data.svmlight import load_svmlight
from ltr.export.features import default_names, read_feature_map
from ltr.export.formats import FORMATS, export, get_target
from ltr.export.parity import check_parity
from ltr.export.targets.searchltr import MODEL_TYPES
from ltr.tracking.loading import load_model
from ltr.tracking.store import resolve_tracking_uri


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ltr.export",
        description="Write a trained ltr model for a serving engine and check that the file scores like "
        "the model (docs/export.md).",
    )
    p.add_argument(
        "model", metavar="MODEL", help="saved ranker folder, runs:/<run id>/model or models:/<name>/<version>"
    )
    p.add_argument(
        "--format", required=True, choices=sorted(FORMATS),
        help=f"the target engine's format (onnx needs the 'export' extra: {install_hint('export')})",
    )  # fmt: skip
    p.add_argument("--out", required=True, type=Path, metavar="PATH", help="the file to write")
    p.add_argument(
        "--feature-names",
        type=Path,
        metavar="FILE",
        help="feature map: one name per line, or 'ID NAME' (1-based ids)",
    )
    p.add_argument("--check", type=Path, metavar="DATA", help="SVMlight/LETOR file to check parity on")
    p.add_argument("--name", default="ltr_model", help="the model's name in the engine (default ltr_model)")
    p.add_argument("--feature-set", default="ltr_features", help="Elasticsearch/OpenSearch feature set name")
    p.add_argument("--feature-store", help="Solr feature store name (default: Solr's _DEFAULT_)")
    p.add_argument("--model-type", choices=MODEL_TYPES, help="Elasticsearch/OpenSearch model type")
    p.add_argument(
        "--tracking-uri",
        metavar="URI",
        help="MLflow store of runs:/ and models:/ (default: where ltr.train logs, <$LTR_ROOT or .>/mlflow.db)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        target = get_target(args.format)
        uri = resolve_tracking_uri(args.tracking_uri, work_root())
        ranker = load_model(args.model, tracking_uri=uri, option="MODEL").ranker
        n_features = int(ranker.n_features_in_)
        names = (
            read_feature_map(args.feature_names, n_features)
            if args.feature_names
            else default_names(n_features)
        )
        data = load_svmlight(args.check, n_features=n_features) if args.check else None
        written = export(
            ranker,
            target,
            args.out,
            names,
            model_name=args.name,
            feature_set=args.feature_set,
            feature_store=args.feature_store,
            model_type=args.model_type,
        )
        report = check_parity(ranker, target, args.out, names, written, data)
    except LtrError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # --out in a folder that cannot be written, a directory, a full disk
        print(f"error: --out {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(
        f"wrote {args.out} ({args.format}; missing values: {'NaN' if written.missing == 'nan' else 'fed as 0'})"
    )
    for line in written.how_to_load:
        print(f"  {line}")
    print(report.summary())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
