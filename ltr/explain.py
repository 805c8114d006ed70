"""``python -m ltr.explain``: why a model scores documents as it does — exact feature contributions.

    python -m ltr.explain MODEL --data FILE|NAME [--query QID] [--pair A B] [--json] [--top N]
                          [--feature-names FILE] [--grade G]
    python -m ltr.explain MODEL --data FILE|NAME --global [--metric ndcg@10] [--preset ltr]
                          [--B 1000] [--seed 0] [--out DIR] [--log-to RUN_ID | --no-log] [--json]

MODEL is anything ``ltr.evaluate --model`` takes (a saved model folder, ``runs:/ID/model``,
``models:/NAME/VERSION``; :mod:`ltr.tracking.loading`); ``--data`` a file or a registry dataset
exactly as in ``ltr.evaluate`` (:mod:`ltr.cli.letor`: ``--split``, ``--fold``, ``--variant``, ``--dir``).
Contributions are exact (:mod:`ltr.attribution.contributions`: TreeSHAP through each engine's own output,
w·x for linear models, linear ensembles combined); a model that cannot be explained exactly is refused
with the reason, before the data is read.

Per document (default: every document; ``--query QID``: one query's). ``--json`` prints a list with one
object per document: ``qid``, ``line`` (its 1-based line in the file), ``score`` (the model's raw
score), ``bias`` and ``contributions`` (keyed by the 1-based feature id as a string); they sum to the
score. The terminal view lists each document's largest contributions (``--top``, default 5).

A model trained with ``data.normalize`` (:mod:`ltr.models.normalized`) is explained on the rows as it
scores them: ``--data`` is normalised by the model's own fitted normaliser first, so contributions,
feature values and the ``--global`` query-mean replacement are in terms of the *normalised* features
(the terminal view says so in a first ``note:`` line).

``--pair A B`` (A, B: a ``#docid`` value or a 1-based line; ``--query`` when a docid is not unique in
the file): the features that put A above B — the differences of their contributions, largest
|difference| first, which with the bias difference sum to score(A) − score(B).

``--global``: per feature, the mean |contribution| per query and the per-query ΔNDCG@k (``--metric``)
when the feature is replaced by its query mean (:mod:`ltr.attribution.importance`), each with a
bootstrap CI over queries (``--B``, ``--seed``). Prints the top features, writes ``importance.csv``,
``importance.json``, ``per_query.csv``, ``importance.png`` and ``per_query.png`` to ``--out`` (default
``reports/explain/<model>``), and logs that folder into an MLflow run as ``explain/``: ``--log-to RUN_ID``,
or by default the run of a ``runs:/`` model (``--no-log`` keeps it local).
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ltr.attribution.contributions import Contributions, check_explainable, explain_ranker
from ltr.attribution.importance import GlobalImportance, global_importance
from ltr.attribution.views import find_document, pair_difference, query_rows
from ltr.cli.letor import add_letor_options, letor_source, read_letor
from ltr.cli.numbers import OneLineParser, integer_option
from ltr.cli.running import configure_process_environment, print_result, run_cli
from ltr.core.errors import ConfigError, DataError, MetricError
from ltr.core.resources import work_root
from ltr.data import RankingData
from ltr.export.features import read_feature_map
from ltr.io.textlines import record_line_numbers
from ltr.metrics import parse_metric
from ltr.metrics.conventions import PRESETS
from ltr.models.normalized import normalization_note, normalized_input
from ltr.report.progress import task_progress
from ltr.tracking.loading import load_model
from ltr.tracking.store import resolve_tracking_uri
from ltr.tracking.writer import log_into_run

ARTIFACT_PATH = "explain"


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface (also used by the tests)."""
    p = OneLineParser(
        prog="python -m ltr.explain",
        description="Exact feature contributions of a ranking model: per document, for a pair, or global.",
    )
    p.add_argument(
        "model", metavar="MODEL", help="runs:/RUN_ID/model, models:/NAME/VERSION or a saved model folder"
    )
    add_letor_options(p, p)
    p.add_argument(
        "--tracking-uri", help="MLflow store of runs:/ and models:/ (default: the project's store)"
    )
    p.add_argument("--query", metavar="QID", help="explain this query's documents only")
    p.add_argument("--pair", nargs=2, metavar=("A", "B"), help="two documents (docid or 1-based line)")
    p.add_argument("--json", action="store_true", help="print JSON (see the module docstring)")
    p.add_argument(
        "--top", type=integer_option, default=None, help="features shown per document / pair / global table"
    )
    p.add_argument("--feature-names", metavar="FILE", help="feature names: 'NAME' or 'ID NAME' per line")
    p.add_argument(
        "--grade", type=integer_option, help="classification (McRank): the grade whose raw score is explained"
    )
    g = p.add_argument_group("global importance")
    g.add_argument(
        "--global", dest="global_", action="store_true", help="mean |contribution| and ΔNDCG per feature"
    )
    g.add_argument("--metric", default="ndcg@10", help="metric of the Δ (default ndcg@10)")
    g.add_argument(
        "--preset", choices=sorted(PRESETS), default="ltr", help="metric conventions (default ltr)"
    )
    g.add_argument("--B", type=integer_option, default=1000, help="bootstrap samples (default 1000)")
    g.add_argument("--seed", type=integer_option, default=0, help="bootstrap seed (default 0)")
    g.add_argument("--out", metavar="DIR", help="folder of the files (default reports/explain/<model>)")
    g.add_argument("--log-to", metavar="RUN_ID", help="log the files into this MLflow run")
    g.add_argument("--no-log", action="store_true", help="do not log into the run of a runs:/ model")
    return p


def _check_arguments(args: argparse.Namespace) -> None:
    """Everything checkable from the options alone, before the model or the data is read."""
    if args.data is None:
        raise ConfigError("--data FILE|NAME is required (the documents to explain)")
    if args.top is not None and args.top < 1:
        raise ConfigError(f"--top {args.top}: must be at least 1")
    if args.global_:
        if args.pair or args.query is not None:
            raise ConfigError("--global explains the whole of --data; drop --query / --pair")
        try:
            parse_metric(args.metric)
        except MetricError as exc:
            first = str(exc).splitlines()[0].split(";")[0]
            raise ConfigError(f"--metric {args.metric}: {first} (e.g. ndcg@10, err@20, map, p@5)") from None
        if args.B < 1:
            raise ConfigError(f"--B {args.B}: must be at least 1")
        if args.log_to and args.no_log:
            raise ConfigError("--log-to and --no-log contradict each other; give one")
    else:
        for flag, given in (("--out", args.out), ("--log-to", args.log_to), ("--no-log", args.no_log)):
            if given:
                raise ConfigError(f"{flag} belongs to --global (the files of the global importance)")
    if args.pair and args.pair[0] == args.pair[1]:
        raise ConfigError(f"--pair {args.pair[0]} {args.pair[1]}: give two different documents")


def _log_target(args: argparse.Namespace) -> str | None:
    """The run to log ``--global``'s files into: ``--log-to``, else a ``runs:/`` model's run (unless ``--no-log``)."""
    if args.log_to:
        return str(args.log_to)
    if args.no_log:
        return None
    match = re.match(r"runs:/([^/]+)/", args.model)
    return match.group(1) if match else None


def run(args: argparse.Namespace) -> str:
    """Explain what ``args`` names; returns the text to print."""
    _check_arguments(args)
    uri = resolve_tracking_uri(args.tracking_uri, work_root())
    model = load_model(args.model, tracking_uri=uri, option="MODEL")
    ranker = model.ranker
    check_explainable(ranker, grade=args.grade, where=f"MODEL {args.model}")
    n_features = int(ranker.input_width_)  # the file's width, also for a model of a feature selection
    names = read_feature_map(args.feature_names, n_features) if args.feature_names else None
    source = letor_source(args)
    data = read_letor(args, source, n_features, dtype=ranker.input_dtype)  # as ltr.train parsed its files
    if data.n_features != n_features:
        raise DataError(
            f"--data {args.data}: {source.path} has {data.n_features} features but MODEL {args.model} "
            f"was trained on {n_features}"
        )
    lines = record_line_numbers(source.path)
    if len(lines) != data.n_docs:
        raise DataError(
            f"--data {args.data}: {source.path} has {len(lines)} records but {data.n_docs} rows were read"
        )
    # a model trained with data.normalize is explained on the rows it scores: normalised by its own normaliser
    data = normalized_input(ranker, data, f"--data {args.data}")
    note = normalization_note(ranker)
    text = _explain(args, model.name, ranker, data, names, lines, source)
    return text if note is None or args.json else f"note: {note}\n{text}"


def _explain(
    args: argparse.Namespace,
    model_name: str,
    ranker: Any,
    data: RankingData,
    names: Sequence[str] | None,
    lines: Sequence[int],
    source: Any,
) -> str:
    """Per document, a pair or (``--global``) the global importance of ``data`` (already normalised)."""
    if args.global_:
        return _global(args, model_name, ranker, data, names)
    rows = query_rows(data, args.query) if args.query is not None else np.arange(data.n_docs)
    if args.pair:
        where = f"of query {args.query}" if args.query is not None else f"in {source.path}"
        a = find_document(data, lines, rows, args.pair[0], where=where)
        b = find_document(data, lines, rows, args.pair[1], where=where)
        if data.qid[a] != data.qid[b]:
            raise ConfigError(
                f"--pair {args.pair[0]} {args.pair[1]}: line {lines[a]} is in query {data.qid[a]} and line "
                f"{lines[b]} in query {data.qid[b]}; a pair is two documents of one query"
            )
        rows = query_rows(data, str(data.qid[a]))
    part = _rows(data, rows)
    contributions = explain_ranker(ranker, part, grade=args.grade)
    part_lines = [lines[int(r)] for r in rows]
    if args.pair:
        at = {int(r): i for i, r in enumerate(rows)}
        return _pair_text(args, part, part_lines, contributions, at[a], at[b], names)
    if args.json:
        return _documents_json(part, part_lines, contributions)
    return _documents_text(args, part, part_lines, contributions, names)


def _rows(data: RankingData, rows: np.ndarray) -> RankingData:
    """The queries that hold ``rows`` (whole queries, contiguous) as their own data, else ``data``."""
    if rows.size == data.n_docs:
        return data
    q = int(np.searchsorted(data.offsets, rows[0], side="right") - 1)
    return data.subset(np.array([q]))


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _documents_json(data: RankingData, lines: Sequence[int], c: Contributions) -> str:
    keys = [str(j) for j in range(1, c.n_features + 1)]
    out = [
        {
            "qid": int(data.qid[i]),
            "line": int(lines[i]),
            "score": float(c.score[i]),
            "bias": float(c.bias[i]),
            "contributions": dict(zip(keys, c.values[i].tolist(), strict=True)),
        }
        for i in range(data.n_docs)
    ]
    return json.dumps(out, allow_nan=False) + "\n"


def _label(names: Sequence[str] | None, feature: int) -> str:
    return f"f{feature} {names[feature - 1]}" if names is not None else f"f{feature}"


def _docid(data: RankingData, i: int) -> str:
    return f"  docid {data.docid[i]}" if data.docid is not None and str(data.docid[i]) else ""


def _documents_text(
    args: argparse.Namespace,
    data: RankingData,
    lines: Sequence[int],
    c: Contributions,
    names: Sequence[str] | None,
) -> str:
    """Per query, documents by descending score: score = bias + the largest contributions (+ the rest)."""
    top = args.top or 5
    out = [
        f"{c.explained} = bias + Σ feature contributions (exact); largest {top} |contributions| per document"
    ]
    for q in range(data.n_queries):
        lo, hi = int(data.offsets[q]), int(data.offsets[q + 1])
        out.append(f"\nquery {data.query_ids[q]} ({hi - lo} documents)")
        for rank, i in enumerate(sorted(range(lo, hi), key=lambda r: -c.score[r]), start=1):
            order = np.argsort(-np.abs(c.values[i]), kind="stable")[:top]
            rest = c.values[i].sum() - c.values[i][order].sum()
            parts = ", ".join(f"{_label(names, int(j) + 1)} {c.values[i, j]:+.4g}" for j in order)
            out.append(
                f"  {rank:>3}. line {lines[i]}{_docid(data, i)}  label {data.y[i]:g}  score {c.score[i]:.6g}"
                f" = bias {c.bias[i]:.4g} + {parts}, others {rest:+.4g}"
            )
    return "\n".join(out) + "\n"


def _pair_text(
    args: argparse.Namespace,
    data: RankingData,
    lines: Sequence[int],
    c: Contributions,
    a: int,
    b: int,
    names: Sequence[str] | None,
) -> str:
    p = pair_difference(c, a, b)
    top = args.top or 10
    X = data.X.toarray() if hasattr(data.X, "toarray") else np.asarray(data.X)
    if args.json:
        return (
            json.dumps(
                {
                    "qid": int(data.qid[a]),
                    "a": {"line": int(lines[a]), "score": float(c.score[a]), "label": float(data.y[a])},
                    "b": {"line": int(lines[b]), "score": float(c.score[b]), "label": float(data.y[b])},
                    "score_difference": p.score_difference,
                    "bias_difference": p.bias_difference,
                    "differences": [
                        {"feature": int(f), "name": _label(names, int(f)), "difference": float(d)}
                        for f, d in zip(p.features, p.differences, strict=True)
                    ],
                },
                allow_nan=False,
            )
            + "\n"
        )
    verb = "above" if p.score_difference > 0 else "below" if p.score_difference < 0 else "level with"
    out = [
        f"query {data.qid[a]}: A = line {lines[a]}{_docid(data, a)} (label {data.y[a]:g}, score {c.score[a]:.6g}) "
        f"ranks {verb} B = line {lines[b]}{_docid(data, b)} (label {data.y[b]:g}, score {c.score[b]:.6g})",
        f"{c.explained}(A) − {c.explained}(B) = {p.score_difference:+.6g} = Σ differences below"
        + (f" + bias difference {p.bias_difference:+.4g}" if p.bias_difference else ""),
        "",
    ]
    width = max(
        [len("feature"), len(f"{p.features[top:].size} other features")]
        + [len(_label(names, int(f))) for f in p.features[:top]]
    )
    out.append(f"  {'feature':<{width}}  {'value A':>10}  {'value B':>10}  {'c(A) − c(B)':>12}")
    for f, d in zip(p.features[:top], p.differences[:top], strict=True):
        j = int(f) - 1
        out.append(f"  {_label(names, int(f)):<{width}}  {X[a, j]:>10.4g}  {X[b, j]:>10.4g}  {d:>+12.4g}")
    rest = p.differences[top:]
    if rest.size:
        out.append(f"  {f'{rest.size} other features':<{width}}  {'':>10}  {'':>10}  {rest.sum():>+12.4g}")
    return "\n".join(out) + "\n"


def _global(
    args: argparse.Namespace, model_name: str, ranker: Any, data: RankingData, names: Sequence[str] | None
) -> str:
    """The global importance: files, the MLflow run, and the terminal table."""
    target = _log_target(args)
    out_dir = Path(args.out) if args.out else work_root() / "reports" / "explain" / model_name
    contributions = explain_ranker(ranker, data, grade=args.grade)
    with task_progress(data.n_features, "re-scoring with each feature at its query mean") as advance:
        result = global_importance(
            ranker,
            data,
            contributions,
            metric=args.metric,
            preset=args.preset,
            B=args.B,
            seed=args.seed,
            on_feature=lambda j: advance(f"f{j + 1}"),
        )
    files = _write_files(result, out_dir, names, args.top or 20)
    logged = ""
    if target is not None:
        uri = resolve_tracking_uri(args.tracking_uri, work_root())
        where = log_into_run(
            uri, target, out_dir, ARTIFACT_PATH, option="--log-to" if args.log_to else "MODEL"
        )
        logged = f"logged to run {target}: {where}\n"
    if args.json:
        frame = result.to_frame(names)
        rows = [
            {k: (_number(v) if isinstance(v, float) else v) for k, v in r.items()}
            for r in frame.to_dict("records")
        ]
        return (
            json.dumps(
                {"metric": result.metric, "n_queries": int(data.n_queries), "features": rows},
                allow_nan=False,
                default=int,
            )
            + "\n"
        )
    return (
        _global_text(result, names, args.top or 20) + f"files: {', '.join(str(f) for f in files)}\n" + logged
    )


def _write_files(
    result: GlobalImportance, out_dir: Path, names: Sequence[str] | None, top: int
) -> list[Path]:
    from ltr.report.plots import plot_importance_cis, plot_per_query_values  # deferred: matplotlib, only here

    out_dir.mkdir(parents=True, exist_ok=True)
    frame = result.to_frame(names)
    frame.to_csv(out_dir / "importance.csv", index=False)
    (out_dir / "importance.json").write_text(frame.to_json(orient="records", indent=1) + "\n")
    result.per_query_frame().to_csv(out_dir / "per_query.csv", index=False)
    order = result.order()[:top]
    labels = [_label(names, int(result.features[j])) for j in order]
    d = f"Δ{result.metric} (feature → query mean)"
    plot_importance_cis(
        labels,
        {"mean |contribution| per query": result.abs_ci[order], d: result.delta_ci[order]},
        out_dir / "importance.png",
        title=f"top {len(order)} features, {result.confidence:.0%} bootstrap CI over queries",
    )
    plot_per_query_values(labels, result.per_query_delta[:, order], out_dir / "per_query.png", measure=d)
    return [
        out_dir / n
        for n in ("importance.csv", "importance.json", "per_query.csv", "importance.png", "per_query.png")
    ]


def _global_text(result: GlobalImportance, names: Sequence[str] | None, top: int) -> str:
    order = result.order()[:top]
    labels = [_label(names, int(result.features[j])) for j in order]
    width = max([len("feature")] + [len(s) for s in labels])
    ci = f"{result.confidence:.0%} CI"
    m = f"Δ{result.metric}"
    out = [
        f"global importance over {result.query_ids.size} queries (bootstrap {ci} over queries, B={result.B}, "
        f"seed {result.seed}); top {len(order)} by mean |contribution|",
        f"  {'feature':<{width}}  {'mean |c|':>9}  {ci:>21}  {m:>10}  {ci:>21}",
    ]
    for label, j in zip(labels, order, strict=True):
        a, d = result.abs_ci[j], result.delta_ci[j]
        out.append(
            f"  {label:<{width}}  {a[0]:>9.4f}  [{a[1]:>9.4f}, {a[2]:>9.4f}]  {d[0]:>+10.4f}  [{d[1]:>+9.4f}, {d[2]:>+9.4f}]"
        )
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (2 for bad input, with the error on stderr)."""
    return print_result(run, build_parser().parse_args(argv))


if __name__ == "__main__":
    configure_process_environment()  # before the engines load
    run_cli(main)
