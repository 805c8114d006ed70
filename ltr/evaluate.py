"""``python -m ltr.evaluate``: evaluate TREC runs, prediction files and saved models; compare systems.

    python -m ltr.evaluate --qrels QRELS --run RUN [--run RUN2 ...] [-m ndcg_cut_10 -m map] [-q]
    python -m ltr.evaluate --data FILE|NAME --scores PRED [--scores PRED2 ...] [--scores-format F]
    python -m ltr.evaluate --data FILE|NAME --model runs:/ID/model|models:/NAME/VERSION|PATH
                           [--write-run OUT] [--write-scores OUT]
    ... [--preset P] [--json] [--compare [--baseline NAME] [--test t] [--B 10000] [--seed 0] [--risk-alpha 1]]

**TREC runs** (``--qrels`` + ``--run``). Measures are trec_eval names (``ndcg``, ``ndcg_cut_10``,
``map``, ``map_cut_100``, ``P_5``, ``P.5,10``, ``recall_10``, ``recip_rank``; ``-m P`` expands to
trec_eval's default cutoffs) or ``ltr`` names (``ndcg@10``, ``err@20``). Conventions default to
trec_eval's (preset ``trec``: ideal ranking from all judged documents, score ties broken by docno
descending, rank column ignored).

**LETOR data** (``--data``): a LETOR/SVMlight file (parse flags as in ``python -m ltr.data info``,
but no ``--regroup``), or a dataset name as ``python -m ltr.data list`` shows it (any case; a close
miss suggests the name; :func:`letor_source`) with ``--split`` (default ``test``), ``--fold`` /
``--variant`` and ``--dir`` as in ``python -m ltr.data``; an option the data does not have is refused. Each system
is a prediction file (``--scores``; formats in :mod:`ltr.io.predictions`: one score per line in file
order, or RankLib's ``qid index score``) or a fitted model (``--model``, :mod:`ltr.tracking.loading`),
scored on the file's rows in file order. Conventions default to preset ``ltr``. ``--write-run``
writes the single system's scores as a TREC run (docno = the row's ``#docid`` comment, else its row
number; tag = the system's name), ``--write-scores`` one score per line. Before any work an output
that is the same file as an input or the other output, a folder, or in a missing or unwritable folder
is refused (:mod:`ltr.io.outputs`, which writes them atomically); a run with a docid twice in a query
is refused naming both lines. Options that would change nothing are refused, naming them.

Output: trec_eval's ``measure<TAB>topic<TAB>value`` per system (a ``runid`` line opens each
system's ``all`` block; ``-q`` adds the per-topic lines), or with ``--json``
``{"mean": {measure: value}, "per_query": {qid: {measure: value}}, "n_queries": …, "n_skipped": …,
"conventions": {…}}`` (several systems: ``{"systems": {name: that object}}``). Keys are the measure
names as given to ``-m`` (``-m ndcg@10`` → ``ndcg@10``; families like ``P`` expand). A query a
preset skips (NaN: no relevant document under ``no_relevant=skip``) is ``null`` in ``per_query``,
left out of the mean, and counted in ``n_skipped`` when every measure skips it; ``n_queries`` counts
the others.

``--compare`` (≥ 2 systems) prints :func:`ltr.analysis.comparison.compare`'s leaderboard instead: mean and
bootstrap CI per system and measure, paired differences against the baseline (the first system, or
``--baseline`` by name or as given on the command line) with CIs, paired tests Holm-corrected over
the comparisons, effect sizes and win/tie/loss counts. Systems evaluated on different query sets
(TREC runs that retrieve different topics) are refused with an error naming them. System names are
the run tags (TREC), file names (``--scores``) or model names (``--model``), or the arguments as
given when those are not distinct; the ``--scores`` files come first, then the ``--model`` sources,
each in command-line order. With ≥ 2 measures the metric agreement of :mod:`ltr.analysis.agreement` follows
(Kendall's τ/τ_AP between the system rankings, per-query correlations, discriminative power; ``--json``:
the ``agreement`` key). Risk against the baseline follows too (:mod:`ltr.stats.risk`: URisk, TRisk with its
p-value, GeoRisk over all systems; ``--risk-alpha`` α, default 1: a loss weighs 1 + α; ``--json``: the
``risk`` key, one object per system and measure). ``--exposure`` (LETOR data) adds the expected exposure of
:mod:`ltr.metrics.exposure` per query (EE-L, EE-D, EE-R; ``--exposure-group FEATURE>VALUE``: the exposure gap),
evaluated and compared like the other measures (EE-L and EE-D lower-is-better).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ltr.cli.letor import (
    DATASET_OPTIONS,
    PARSE_OPTIONS,
    LetorSource,
    add_letor_options,
    letor_source,
    read_letor,
)
from ltr.cli.numbers import OneLineParser, integer_option, real_option
from ltr.cli.parse_flags import given_parse_flags
from ltr.cli.running import print_result, run_cli
from ltr.core.errors import ConfigError
from ltr.core.resources import work_root
from ltr.io.outputs import check_outputs
from ltr.io.predictions import SCORE_FORMATS, read_scores, write_scores
from ltr.io.textlines import data_line_number
from ltr.io.trec import check_run_docnos, docnos, read_qrels, read_run, write_trec_run
from ltr.metrics.conventions import PRESETS, describe_conventions
from ltr.metrics.exposure import LOWER_IS_BETTER, document_groups, expected_exposure, parse_group
from ltr.metrics.trec import TrecResult, evaluate_labelled, evaluate_trec, format_trec
from ltr.models.base import shared_input_dtype
from ltr.models.normalized import predict_raw
from ltr.stats.risk import MAX_ALPHA
from ltr.tracking.loading import load_model
from ltr.tracking.store import resolve_tracking_uri

#: Measures when no ``-m`` is given: trec_eval's defaults for runs, ltr's usual set for LETOR data.
TREC_DEFAULT_MEASURES = ("ndcg", "map", "P", "recall", "recip_rank")
#: ``--compare`` without ``-m`` on runs: a short set a person reads in one screen (the full trec_eval
#: defaults expand P and recall to 21 measures)
TREC_COMPARE_MEASURES = ("ndcg_cut_10", "map", "P_10", "recip_rank")
LETOR_DEFAULT_MEASURES = ("ndcg@1", "ndcg@5", "ndcg@10", "map", "p@10")


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface (also used by the tests)."""
    p = OneLineParser(
        prog="python -m ltr.evaluate",
        description="Evaluate TREC runs against qrels, or prediction files / models against LETOR data "
        "(trec_eval-style output, --json, or a --compare leaderboard).",
    )
    trec = p.add_argument_group("TREC runs")
    trec.add_argument("--qrels", help="qrels file: topic iteration docno relevance")
    trec.add_argument(
        "--run", action="append", default=[], help="run file: topic Q0 docno rank score tag (repeatable)"
    )
    letor = p.add_argument_group("LETOR data")
    add_letor_options(p, letor)
    letor.add_argument(
        "--scores",
        action="append",
        default=[],
        metavar="PRED",
        help="prediction file, one row per document (repeatable)",
    )
    letor.add_argument(
        "--scores-format", choices=SCORE_FORMATS,
        help="lines (one score per line: LightGBM, XGBoost, SVMrank), ranklib (qid index score); default auto",
    )  # fmt: skip
    letor.add_argument(
        "--model", action="append", default=[], metavar="SOURCE",
        help="runs:/RUN_ID/model, models:/NAME/VERSION or a saved model folder (repeatable)",
    )  # fmt: skip
    letor.add_argument(
        "--tracking-uri",
        help="MLflow store of runs:/ and models:/ URIs (default: the project's SQLite store)",
    )
    letor.add_argument(
        "--exposure", action="store_true",
        help="also expected exposure EE-L, EE-D, EE-R (Diaz et al. 2020): Plackett-Luce over the scores, RBP p=0.5",
    )  # fmt: skip
    letor.add_argument(
        "--exposure-temperature",
        type=real_option,
        help="--exposure: τ of scores/τ (default 1; 0: deterministic)",
    )
    letor.add_argument(
        "--exposure-samples", type=integer_option, help="--exposure: rankings sampled per query (default 100)"
    )
    letor.add_argument(
        "--exposure-group", metavar="FEATURE>VALUE|FILE",
        help="--exposure: also the exposure gap between a group of documents and the others: those with the "
        "feature above VALUE, or a file of one 1/0 per data row",
    )  # fmt: skip
    letor.add_argument(
        "--segment-discounts", metavar="FIT.json",
        help="each query's metrics use its segment's discount: the JSON of ltr.clicks discount --segment --json",
    )  # fmt: skip
    letor.add_argument("--query-segments", metavar="FILE", help="--segment-discounts: 'qid segment' per line")
    letor.add_argument("--write-run", metavar="OUT", help="write the system's scores as a TREC run")
    letor.add_argument("--write-scores", metavar="OUT", help="write the system's scores, one per line")
    p.add_argument(
        "-m",
        "--measure",
        action="append",
        dest="measures",
        metavar="NAME",
        help="measure (repeatable): trec_eval name (ndcg_cut_10, map, P_5, P.5,10, recall_10, recip_rank) "
        "or ltr name (ndcg@10); default: ndcg, map, P, recall, recip_rank (runs), "
        + ", ".join(LETOR_DEFAULT_MEASURES)
        + " (LETOR data)",
    )
    p.add_argument("-q", action="store_true", dest="per_topic", help="print one line per topic too")
    p.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help="metric conventions (default: trec for runs, ltr for LETOR data)",
    )
    p.add_argument(
        "--json", action="store_true", help="print JSON: mean, per_query, n_queries, n_skipped, conventions"
    )
    cmp = p.add_argument_group("comparing systems")
    cmp.add_argument("--compare", action="store_true", help="print the paired-comparison leaderboard")
    cmp.add_argument("--baseline", help="baseline system (default: the first)")
    cmp.add_argument("--test", choices=("randomization", "t"), help="paired test (default randomization)")
    cmp.add_argument("--B", type=integer_option, help="bootstrap / randomisation samples (default 10000)")
    cmp.add_argument(
        "--seed", type=integer_option, help="seed of the bootstrap and randomisation test (default 0)"
    )
    cmp.add_argument(
        "--risk-alpha", type=real_option, help="URisk/TRisk/GeoRisk: a loss weighs 1 + this (default 1)"
    )
    return p


@dataclass(frozen=True)
class System:
    """One evaluated system: its name, how it was given on the command line, its per-query values."""

    name: str
    given: str
    result: TrecResult


def _names(preferred: Sequence[str], given: Sequence[str]) -> list[str]:
    """The preferred names when they are distinct and non-empty, else the arguments as given.

    >>> _names(["bm25", "dense"], ["a.run", "b.run"]), _names(["t", "t"], ["a.run", "b.run"])
    (['bm25', 'dense'], ['a.run', 'b.run'])
    """
    if all(preferred) and len(set(preferred)) == len(preferred):
        return list(preferred)
    return list(given)


def _check_arguments(args: argparse.Namespace) -> None:
    if args.data is None and not args.run:
        raise ConfigError(
            "give --qrels and --run (TREC runs), or --data with --scores or --model (LETOR data)"
        )
    if args.data is not None and (args.run or args.qrels):
        raise ConfigError(
            "--data evaluates --scores / --model; --qrels and --run evaluate TREC runs: use one form"
        )
    if args.data is None:
        if args.qrels is None:
            raise ConfigError("--run needs --qrels (the judgments to evaluate it against)")
        letor_only = [f"--{f.replace('_', '-')}" for f in LETOR_ONLY if getattr(args, f) not in (None, [])]
        letor_only += given_parse_flags(args, PARSE_OPTIONS)
        if letor_only:
            needs = "need" if len(letor_only) > 1 else "needs"
            raise ConfigError(
                f"{', '.join(letor_only)} {needs} --data (LETOR data); no effect on --qrels/--run"
            )
    elif not args.scores and not args.model:
        raise ConfigError("--data needs at least one --scores PRED or --model SOURCE to evaluate")
    _check_no_effect(args)
    n_systems = len(args.run) + len(args.scores) + len(args.model)
    if (args.write_run or args.write_scores) and n_systems != 1:
        raise ConfigError(
            f"--write-run / --write-scores write one system's scores; {n_systems} systems were given"
        )
    if args.compare and n_systems < 2:
        raise ConfigError(
            f"--compare needs at least 2 systems (repeat --run, --scores or --model), got {n_systems}"
        )
    if args.baseline is not None and not args.compare:
        raise ConfigError("--baseline is used by --compare")


#: options of the LETOR form (``--data``): each has no effect on TREC runs
LETOR_ONLY = (
    "scores",
    "model",
    "write_run",
    "write_scores",
    *DATASET_OPTIONS,
    "scores_format",
    "tracking_uri",
    "exposure_temperature",
    "exposure_samples",
    "exposure_group",
    "segment_discounts",
    "query_segments",
)
#: ``--compare``'s options and their defaults (``None`` on the command line: not given)
COMPARE_DEFAULTS = {"test": "randomization", "B": 10_000, "seed": 0, "risk_alpha": 1.0}


def _check_no_effect(args: argparse.Namespace) -> None:
    """Refuse an option that would change nothing, naming it and the option it needs (``--split`` with a
    file is refused by :func:`letor_source`, which knows what ``--data`` names)."""
    given = [
        f
        for f in ("exposure_temperature", "exposure_samples", "exposure_group")
        if getattr(args, f) is not None
    ]
    if given and not args.exposure:
        raise ConfigError(f"--{given[0].replace('_', '-')} applies to --exposure")
    if args.exposure and args.data is None:
        raise ConfigError(
            "--exposure needs --data (LETOR data: the scores of every document); no effect on --run"
        )
    if args.exposure_group is not None and not Path(args.exposure_group).is_file():
        if Path(args.exposure_group).is_dir():
            raise ConfigError(f"--exposure-group {args.exposure_group}: is a folder, not a group file")
        parse_group(args.exposure_group)  # else a sidecar file, read with the data
    if (args.segment_discounts is None) != (args.query_segments is None):
        given = "--segment-discounts" if args.segment_discounts else "--query-segments"
        other = "--query-segments" if args.segment_discounts else "--segment-discounts"
        raise ConfigError(f"{given} needs {other} (each query's segment, and each segment's discount)")
    if args.exposure_temperature is not None and not args.exposure_temperature >= 0:
        raise ConfigError(f"--exposure-temperature must be >= 0, got {args.exposure_temperature:g}")
    if args.exposure_samples is not None and args.exposure_samples < 1:
        raise ConfigError(f"--exposure-samples must be >= 1, got {args.exposure_samples}")
    if args.scores_format is not None and not args.scores:
        raise ConfigError("--scores-format reads --scores files; no --scores was given")
    if args.tracking_uri is not None and not args.model:
        raise ConfigError(
            "--tracking-uri is where --model finds runs:/ and models:/ sources; no --model was given"
        )
    if args.risk_alpha is not None and not (
        math.isfinite(args.risk_alpha) and 0 <= args.risk_alpha <= MAX_ALPHA
    ):
        raise ConfigError(
            f"--risk-alpha must be a number in [0, {MAX_ALPHA:.0e}] (a loss weighs 1 + it), got {args.risk_alpha:g}"
        )
    for name in COMPARE_DEFAULTS:
        if getattr(args, name) is not None and not args.compare:
            flag = name.replace("_", "-")
            raise ConfigError(f"--{flag} applies to --compare (the paired comparison of systems)")
    if args.per_topic and (args.json or args.compare):
        other = "--json (whose per_query always holds every topic)" if args.json else "--compare"
        raise ConfigError(
            f"-q adds per-topic lines to trec_eval's text output; it has no effect with {other}"
        )


def _check_outputs(args: argparse.Namespace, source: LetorSource | None) -> None:
    """``--write-run`` / ``--write-scores`` against every input (:func:`ltr.io.outputs.check_outputs`)."""
    models = [m for m in args.model if "://" not in m and ":/" not in m]
    store = []
    if args.model:
        uri = resolve_tracking_uri(args.tracking_uri, work_root())
        if uri.startswith("sqlite:///"):
            store.append(uri[len("sqlite:///") :])
    check_outputs(
        {"--write-run": args.write_run, "--write-scores": args.write_scores},
        {
            "--data": source.files if source is not None else (),
            "--scores": args.scores,
            "--model": models,
            "the MLflow store of --model": store,
        },
    )


def _trec_systems(args: argparse.Namespace, measures: Sequence[str], preset: str) -> list[System]:
    qrels = read_qrels(args.qrels)
    runs = [read_run(path) for path in args.run]
    results = [evaluate_trec(qrels, run, measures, preset=preset) for run in runs]
    names = _names([r.tag for r in runs], args.run)
    return [System(n, g, r) for n, g, r in zip(names, args.run, results, strict=True)]


def _letor_systems(
    args: argparse.Namespace, measures: Sequence[str], preset: str, source: LetorSource
) -> list[System]:
    uri = resolve_tracking_uri(args.tracking_uri, work_root()) if args.model else ""
    models = [load_model(given, tracking_uri=uri) for given in args.model]
    widths = {int(m.ranker.input_width_) for m in models}  # full rows, also for a data.features model
    dtype = shared_input_dtype(m.ranker.input_dtype for m in models)  # as ltr.train parsed their files
    data = read_letor(args, source, max(widths) if widths else None, dtype=dtype)
    qid = data.qid
    docno = docnos(data.docid, data.n_docs)

    def where(row: int) -> str:  # a data row as the file's line (error paths only: reads the file again)
        return f"{source.path}:{data_line_number(source.path, row)}"

    if args.write_run:  # what the written run could not hold, before any model scores a row
        check_run_docnos(qid, data.offsets, docno, where, out=args.write_run)
    scored: list[tuple[str, str, np.ndarray]] = []
    for path in args.scores:
        scores = read_scores(path, n_rows=data.n_docs, qid=qid, fmt=args.scores_format or "auto")
        scored.append((Path(path).name, path, scores))
    # raw file rows: a model trained with data.normalize applies its own fitted normaliser first
    scored += [(m.name, m.source, predict_raw(m.ranker, data, m.source)) for m in models]
    names = _names([s[0] for s in scored], [s[1] for s in scored])
    segments = (
        segment_conventions(args.segment_discounts, args.query_segments, data.query_ids.astype(str), preset)
        if args.segment_discounts
        else None
    )
    systems = []
    for name, (_, given, scores) in zip(names, scored, strict=True):
        result = evaluate_labelled(
            data.y,
            scores,
            data.offsets,
            data.query_ids.astype(str),
            measures,
            preset=preset,
            docno=docno,
            tag=name,
            segments=segments,
        )
        if args.exposure:  # per query, beside the other measures: compared, with CIs, like them
            groups = document_groups(data.X, args.exposure_group) if args.exposure_group else None
            result.values.update(
                expected_exposure(
                    data.y, scores, data.offsets, groups=groups,
                    temperature=1.0 if args.exposure_temperature is None else args.exposure_temperature,
                    samples=args.exposure_samples or 100,
                )
            )  # fmt: skip
        systems.append(System(name, given, result))
    if args.write_scores:
        write_scores(args.write_scores, scored[0][2])
    if args.write_run:
        write_trec_run(args.write_run, qid, data.offsets, docno, scored[0][2], names[0], where=where)
    return systems


def segment_conventions(
    fit_path: str, segments_path: str, topics: np.ndarray, preset: str
) -> tuple[list[str], dict]:
    """Each query's segment (``qid segment`` lines of ``segments_path``) and each segment's conventions:
    ``preset`` with the discount ``ltr.clicks discount --segment --json`` fitted for it (its segment test's
    family, the same for every segment)."""
    from ltr.metrics.conventions import resolve_conventions  # deferred: with the option

    try:
        fit = json.loads(Path(fit_path).read_text(encoding="utf-8"))
        by_segment = fit["segment_test"]["by_segment"]
        conventions = {
            name: resolve_conventions(preset, **f["conventions"]) for name, f in by_segment.items()
        }
    except FileNotFoundError:
        raise ConfigError(f"--segment-discounts {fit_path}: no such file") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"--segment-discounts {fit_path}: not the JSON of 'python -m ltr.clicks discount LOG --segment COLUMN "
            f"--json' with a segment_test ({type(exc).__name__}: {exc})"
        ) from exc
    try:
        lines = Path(segments_path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--query-segments {segments_path}: cannot read it ({exc})") from exc
    of: dict[str, str] = {}
    for number, line in enumerate(lines, start=1):
        fields = line.split("#", 1)[0].replace(",", " ").split()
        if not fields:
            continue
        if len(fields) != 2:
            raise ConfigError(f"{segments_path}:{number}: expected 'qid segment', got {line.strip()!r}")
        if fields[1] not in conventions:
            raise ConfigError(
                f"{segments_path}:{number}: segment {fields[1]!r} has no fitted discount in {fit_path} "
                f"(segments: {', '.join(conventions)})"
            )
        if of.get(fields[0], fields[1]) != fields[1]:
            raise ConfigError(
                f"{segments_path}:{number}: qid {fields[0]} is already in segment {of[fields[0]]!r}, now {fields[1]!r}"
            )
        of[fields[0]] = fields[1]
    missing = [t for t in topics.tolist() if t not in of]
    if missing:
        raise ConfigError(
            f"--query-segments {segments_path}: no segment for qid {missing[0]} ({len(missing)} queries)"
        )
    return [of[t] for t in topics.tolist()], conventions


def _plain(value: float) -> float | None:
    """A float for JSON: NaN (undefined) and ±inf (a TRisk with no spread) as ``null``."""
    return float(value) if math.isfinite(value) else None


def result_json(result: TrecResult, conventions: dict[str, str]) -> dict[str, Any]:
    """The ``--json`` object of one system (see the module docstring).

    >>> res = TrecResult(["1", "2"], {"map": np.array([0.5, np.nan])}, "run1")
    >>> result_json(res, {"preset": "gdeval"})
    {'mean': {'map': 0.5}, 'per_query': {'1': {'map': 0.5}, '2': {'map': None}}, 'n_queries': 1, 'n_skipped': 1, 'conventions': {'preset': 'gdeval'}}
    """
    values = result.values
    mean = {}
    for name, v in values.items():
        kept = v[~np.isnan(v)]
        mean[name] = float(kept.mean()) if kept.size else None
    per_query = {t: {name: _plain(v[i]) for name, v in values.items()} for i, t in enumerate(result.topics)}
    skipped = sum(all(math.isnan(v[i]) for v in values.values()) for i in range(len(result.topics)))
    return {
        "mean": mean,
        "per_query": per_query,
        "n_queries": len(result.topics) - skipped,
        "n_skipped": skipped,
        "conventions": conventions,
    }


def _leaderboard(systems: list[System], args: argparse.Namespace) -> Any:
    import pandas as pd  # deferred: pandas (~0.3 s) only for --compare

    from ltr.analysis.comparison import compare  # deferred: imports pandas; only --compare needs it

    baseline = systems[0].name
    if args.baseline is not None:
        match = [s.name for s in systems if args.baseline in (s.name, s.given)]
        if not match:
            names = ", ".join(repr(s.name) for s in systems)
            raise ConfigError(f"--baseline {args.baseline!r} is not one of the systems: {names}")
        baseline = match[0]
    frames = {s.name: pd.DataFrame(s.result.values, index=s.result.topics) for s in systems}
    lower = [m for m in LOWER_IS_BETTER if m in frames[baseline].columns]  # --exposure's EE-L, EE-D
    return compare(frames, baseline=baseline, lower_is_better=lower, **_compare_options(args))


def _compare_options(args: argparse.Namespace) -> dict[str, Any]:
    """``--test``, ``--B``, ``--seed`` as given, else their defaults (:data:`COMPARE_DEFAULTS`)."""
    return {
        k: default if getattr(args, k) is None else getattr(args, k)
        for k, default in COMPARE_DEFAULTS.items()
    }


def _agreement(systems: list[System], args: argparse.Namespace) -> Any:
    """:func:`ltr.analysis.agreement.metric_agreement` of the measures (``None`` with fewer than 2 measures)."""
    import pandas as pd  # deferred: pandas (~0.3 s) only for --compare

    from ltr.analysis.agreement import metric_agreement  # deferred: imports pandas; only --compare needs it

    frames = {s.name: pd.DataFrame(s.result.values, index=s.result.topics) for s in systems}
    if len(next(iter(frames.values())).columns) < 2:
        return None
    options = _compare_options(args)
    return metric_agreement(frames, test=options["test"], test_B=options["B"], seed=options["seed"])


def _agreement_json(agreement: Any) -> dict[str, Any]:
    rows = agreement.to_frame().to_dict("records")
    return {
        "pairs": [{k: (_plain(v) if isinstance(v, float) else v) for k, v in r.items()} for r in rows],
        "discriminative_power": agreement.discriminative_power,
        "alpha": agreement.alpha,
        "n_queries": agreement.n_queries,
    }


def _report_json(report: Any) -> list[dict[str, Any]]:
    return _records_json(report.to_frame().reset_index())


def _records_json(frame: Any) -> list[dict[str, Any]]:
    """A table as JSON records, NaN as ``null`` (:func:`_plain`)."""
    return [
        {k: (_plain(v) if isinstance(v, float) else v) for k, v in r.items()}
        for r in frame.to_dict("records")
    ]


def _terminal_leaderboard(report: Any, agreement: Any) -> str:
    """The comparison as ``ltr.compare`` prints it (:func:`ltr.report.tables.print_comparison`): the leaderboard
    as a terminal table, the per-metric detail and the metric agreement rendered from their Markdown;
    colours only on a terminal, plain text in a pipe or file."""
    from rich.console import Console  # deferred: rich loads only for a printed --compare

    from ltr.report.tables import print_comparison  # deferred: as above

    console = Console(highlight=False)
    sections = [report.detail_markdown()] + ([agreement.to_markdown()] if agreement is not None else [])
    with console.capture() as captured:
        print_comparison(
            console, report, title=f"Leaderboard — baseline {report.baseline}", sections=sections
        )
    return captured.get()


def run(args: argparse.Namespace) -> str:
    """Evaluate what ``args`` names; returns the text to print."""
    _check_arguments(args)
    source = letor_source(args) if args.data is not None else None
    _check_outputs(args, source)
    trec = source is None
    preset = args.preset or ("trec" if trec else "ltr")
    if args.measures:
        measures = args.measures
    elif trec and args.compare:
        measures = list(TREC_COMPARE_MEASURES)
    else:
        measures = list(TREC_DEFAULT_MEASURES if trec else LETOR_DEFAULT_MEASURES)
    if source is None:
        systems = _trec_systems(args, measures, preset)
    else:
        systems = _letor_systems(args, measures, preset, source)
    conventions = describe_conventions(preset)
    report = _leaderboard(systems, args) if args.compare else None
    agreement = _agreement(systems, args) if args.compare else None
    if args.json:
        per_system = {s.name: result_json(s.result, conventions) for s in systems}
        if len(systems) == 1:
            out: dict[str, Any] = per_system[systems[0].name]
        else:
            out = {"systems": per_system}
        if report is not None:
            out["comparison"] = _report_json(report)
            out["risk"] = _records_json(report.risk_frame())
        if agreement is not None:
            out["agreement"] = _agreement_json(agreement)
        return json.dumps(out, indent=1, allow_nan=False) + "\n"
    if report is not None:
        note = (
            f"measures: {', '.join(measures)} (--compare's default; -m NAME for others, "
            "e.g. -m P -m recall for trec_eval's full sets)\n"
            if trec and not args.measures
            else ""
        )
        return note + _terminal_leaderboard(report, agreement)
    return "".join(format_trec(s.result, per_topic=args.per_topic) for s in systems)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (2 for bad input, with the error on stderr)."""
    return print_result(run, build_parser().parse_args(argv))


if __name__ == "__main__":
    run_cli(main)  # a closed pipe (`| head`) and Ctrl-C end quietly / in one line (ltr.cli.running)
