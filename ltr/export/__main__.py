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
express exactly is refused with the reason (exit status 2), no file written. Files are written
through :mod:`ltr.export.staging`: an ``--out`` that is an input is refused before any work, and the
previous ``--out`` is replaced only when the new file is whole and passed the parity check.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from ltr.cli.running import run_cli
from ltr.core.errors import ConfigError, LtrError
from ltr.core.extras import install_hint
from ltr.core.resources import work_root
from ltr.data.svmlight import load_svmlight
from ltr.export.features import default_names, read_feature_map
from ltr.export.formats import FORMATS, export, exportable, get_target
from ltr.export.parity import check_parity
from ltr.export.staging import check_not_inputs, folder_files, staging
from ltr.export.targets.searchltr import MODEL_TYPES
from ltr.tracking.loading import load_model
from ltr.tracking.store import mask_secrets, resolve_tracking_uri


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


def inputs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """The files the export reads, as ``(option, path)``: no output may be one of them."""
    found = [(f"--{name.replace('_', '-')}", getattr(args, name)) for name in ("check", "feature_names")]
    files = [(option, path) for option, path in found if path is not None]
    model = Path(args.model)
    if model.is_dir():
        files += folder_files(model, "MODEL")
    elif model.exists():
        files.append(("MODEL", model))
    return files


def run(args: argparse.Namespace) -> int:
    """The export (module docstring); the exit status. Every file lands only after the parity check passed."""
    target = get_target(args.format)
    check_not_inputs([("--out", args.out)], inputs(args))  # before the model loads
    uri = resolve_tracking_uri(args.tracking_uri, work_root())
    ranker = load_model(args.model, tracking_uri=uri, option="MODEL").ranker
    n_features = int(ranker.input_width_)  # the original width (data.features)
    names = (
        read_feature_map(args.feature_names, n_features) if args.feature_names else default_names(n_features)
    )
    data = load_svmlight(args.check, n_features=n_features) if args.check else None
    outputs = target.outputs(args.out, exportable(ranker, target))
    check_not_inputs(
        [("--out", outputs[0]), *((f"--out's side file {p}", p) for p in outputs[1:])], inputs(args)
    )
    try:
        with staging(args.out) as stage:
            options = {name: getattr(args, name) for name in ("feature_set", "feature_store", "model_type")}
            written = export(
                ranker, target, args.out, names, write_to=stage.path, model_name=args.name, **options
            )
            report = check_parity(ranker, target, stage.path, names, written, data)
            if report.ok:
                stage.install()
    except OSError as exc:  # a full disk, a file-size limit, a folder that cannot be written
        kept = "left unchanged" if args.out.exists() else "not written"
        raise ConfigError(f"--out {args.out}: {exc.strerror or exc}; {args.out} {kept}") from None
    if not report.ok:
        print(report.summary())
        kept = "left unchanged" if args.out.exists() else "not written"
        print(f"not written: the parity check failed, so {args.out} is {kept}", file=sys.stderr)
        return 1
    print(
        f"wrote {', '.join(map(str, outputs))} ({args.format}; missing values: "
        f"{'NaN' if written.missing == 'nan' else 'fed as 0'})"
    )
    for line in written.how_to_load:
        print(f"  {line}")
    print(report.summary())
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and export; a user error is one ``error:`` line and status 2 (:mod:`ltr.cli.running`)."""
    args = parser().parse_args(argv)
    if hasattr(signal, "SIGXFSZ"):  # a file-size limit: an OSError to report, not a kill mid-write
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    return print_result_code(run, args)


def print_result_code(command: Any, args: argparse.Namespace) -> int:
    """``command(args)``'s status, or one ``error:`` line (credentials masked) and status 2 for a user error."""
    try:
        return int(command(args))
    except LtrError as exc:
        print(f"error: {mask_secrets(str(exc))}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    run_cli(main)  # Ctrl-C and a closed pipe end in one line (ltr.cli.running)
