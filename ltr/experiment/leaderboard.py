"""The leaderboard of a comparison: per-query test frames of every system → report, agreement, failures, files.

The per-query test values of all systems go to :func:`ltr.analysis.comparison.compare`, which gives
mean ± 95% bootstrap CI per system and metric, paired differences against the baseline with their
CIs, paired tests with the experiment's correction, effect sizes and W/T/L;
:func:`ltr.analysis.agreement.metric_agreement` says whether the metrics agree, and
:func:`build_failure_analysis` where each system loses (segments, worst queries). :func:`write_outputs`
writes the leaderboard as Markdown, CSV and LaTeX next to PNG plots (NDCG@k with CI bands, per-query
differences, CI forest plot, ASL curves, segments).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ltr.analysis.agreement import metric_agreement
from ltr.analysis.comparison import compare
from ltr.analysis.segments import (
    builtin_segments,
    query_attributes,
    ranked_labels,
    segment_table,
    segments_markdown,
    user_segments,
    worst_markdown,
    worst_queries,
)
from ltr.core.errors import ConfigError, DataError
from ltr.metrics.exposure import LOWER_IS_BETTER, exposure_metrics
from ltr.models.normalized import predict_raw
from ltr.report.plots import (
    plot_asl_curves,
    plot_difference_histogram,
    plot_forest,
    plot_ndcg_at_k,
    plot_segments,
)
from ltr.tracking.writer import mlflow_metric_name


def rank_systems(frames: Mapping[str, Any], primary: str, baseline: str) -> list[str]:
    """Systems by mean ``primary`` over the queries every system scored, best first (stable on ties)."""
    common = np.logical_and.reduce([frames[s][primary].notna().to_numpy() for s in frames])
    means = {
        s: float(frames[s][primary].to_numpy()[common].mean()) if common.any() else np.nan for s in frames
    }
    return sorted(frames, key=lambda s: -means[s] if np.isfinite(means[s]) else np.inf)


def compared_metrics(exp: Any) -> list[str]:
    """The experiment's metrics and, with an ``exposure:`` block, its exposure measures."""
    return list(exp.metrics) + (exposure_metrics(exp.exposure) if exp.get("exposure") is not None else [])


def build_report(frames: Mapping[str, Any], exp: Any, *, seed: int) -> Any:
    """:func:`ltr.analysis.comparison.compare` over per-query test frames (``qid`` column + one column per metric)."""
    order = rank_systems(frames, exp.primary, exp.baseline)
    metrics = compared_metrics(exp)
    per_query = {s: frames[s].set_index("qid")[metrics] for s in order}
    stats = exp.stats
    return compare(
        per_query,
        baseline=str(exp.baseline),
        metrics=metrics,
        lower_is_better=[m for m in LOWER_IS_BETTER if m in metrics],
        ci=str(stats.ci),
        B=int(stats.B),
        seed=int(seed),
        alpha=float(stats.alpha),
        confidence=float(stats.confidence),
        correction=str(stats.correction),
        test=str(stats.test),
        risk_alpha=float(stats.get("risk_alpha", 1.0)),
    )


def at_k_curves(frames: Mapping[str, Any], stats: Any, seed: int, metric: str = "ndcg") -> dict[str, tuple]:
    """Mean and bootstrap CI of ``metric@k`` (k = 1.. as stored) per system: ``{system: (mean, low, high)}``."""
    from ltr.experiment.pipeline import robust_bootstrap_ci  # deferred: the pipeline loads the engines

    curves: dict[str, tuple] = {}
    for system, frame in frames.items():
        ks = sorted(
            int(c.split("@")[1])
            for c in frame.columns
            if c.startswith(f"{metric}@") and c.split("@")[1].isdigit()
        )
        ks = [k for k in ks if k == (ks.index(k) + 1)]  # the contiguous 1..K prefix
        if not ks:
            continue
        cis = [
            robust_bootstrap_ci(
                frame[f"{metric}@{k}"].to_numpy(float),
                method=str(stats.ci),
                B=int(stats.B),
                confidence=float(stats.confidence),
                seed=seed,
            )
            for k in ks
        ]
        curves[system] = (
            np.array([c.estimate for c in cis]),
            np.array([c.low for c in cis]),
            np.array([c.high for c in cis]),
        )
    return curves


#: bootstrap resamples of the per-query metric correlations' CIs (the paired tests use ``stats.B``)
AGREEMENT_B = 1000


def build_agreement(frames: Mapping[str, Any], exp: Any, *, seed: int) -> Any:
    """:func:`ltr.analysis.agreement.metric_agreement` over the compared metrics (``None`` with fewer than 2)."""
    metrics = list(exp.metrics)
    if len(metrics) < 2:
        return None
    stats = exp.stats
    return metric_agreement(
        {s: frames[s].set_index("qid")[metrics] for s in frames},
        metrics=metrics,
        alpha=float(stats.alpha),
        confidence=float(stats.confidence),
        test=str(stats.test),
        B=AGREEMENT_B,
        test_B=int(stats.B),
        seed=seed,
    )


#: how many of each system's worst queries the failure analysis lists
WORST_K = 5


@dataclass
class FailureAnalysis:
    """The segment table (:func:`ltr.analysis.segments.segment_table`) and the worst queries of every system."""

    table: Any
    worst: list[Any]
    metric: str
    baseline: str

    def summary(self, confidence: float, per_system: int = 3) -> tuple[str, list[tuple[str, str, str]]]:
        """For a console summary: a heading and one row per system — the segments whose Δ CI excludes 0
        (largest |Δ| first, at most ``per_system``, one per line; the CIs are not corrected for how many segments were
        looked at) and its worst query. The full tables are :meth:`to_markdown`'s.

        >>> import pandas as pd
        >>> from ltr.analysis.segments import WorstQuery
        >>> table = pd.DataFrame({"system": ["a", "a"], "family": ["relevant documents"] * 2,
        ...     "segment": ["1", "≥ 10"], "diff": [-0.01, -0.04], "ci_low": [-0.03, -0.07], "ci_high": [0.01, -0.01]})
        >>> worst = [WorstQuery("a", 855, 0.35, 0.96, -0.61, (), ())]
        >>> heading, rows = FailureAnalysis(table, worst, "err@10", "base").summary(0.95)
        >>> print(heading); print(rows)
        Where each system differs from base on err@10: segments whose 95% CI of Δ excludes 0 (of 2 per system, uncorrected) and the worst query (its value vs base's)
        [('a', 'relevant documents ≥ 10 -0.0400', '855: 0.3500 vs 0.9600')]
        """
        pct = f"{confidence * 100:.10g}%"
        t = self.table
        n_segments = int(t.groupby("system", sort=False).size().max()) if len(t) else 0
        found = t[(t["ci_low"] > 0) | (t["ci_high"] < 0)] if n_segments else t
        systems = list(dict.fromkeys([*t["system"], *(w.system for w in self.worst)]))
        worst: dict[str, Any] = {}
        for w in self.worst:
            worst.setdefault(w.system, w)
        rows = []
        for system in systems:
            part = found[found["system"] == system]
            part = part.reindex(part["diff"].abs().sort_values(ascending=False).index)
            shown = [f"{_segment_name(r)} {r.diff:+.4f}" for r in part.head(per_system).itertuples()]
            more = [f"+{len(part) - per_system} more"] if len(part) > per_system else []
            segments = "\n".join(shown + more) if n_segments else "—"
            w = worst.get(system)
            rows.append(
                (
                    system,
                    segments or "none",
                    f"{w.qid}: {w.value:.4f} vs {w.baseline_value:.4f}" if w else "—",
                )
            )
        heading = (
            f"Where each system differs from {self.baseline} on {self.metric}: segments whose {pct} CI of Δ "
            f"excludes 0 (of {n_segments} per system, uncorrected) and the worst query (its value vs "
            f"{self.baseline}'s)"
        )
        return heading, rows

    def to_markdown(self, confidence: float) -> str:
        return (
            segments_markdown(self.table, metric=self.metric, baseline=self.baseline, confidence=confidence)
            + "\n"
            + worst_markdown(self.worst, metric=self.metric, baseline=self.baseline)
        )


def _segment_name(row: Any) -> str:
    """A segment as the summary names it: its label when that says what it is (``n_docs 5–19``,
    ``max label = 4``), else after its family (``relevant documents ≥ 10``)."""
    label = str(row.segment)
    return label if any(c.isalpha() for c in label) else f"{row.family} {label}"


def segment_column(name: str, path: Path, query_ids: Any) -> Any:
    """The user's segment ``name`` from a CSV with columns ``qid`` and ``segment`` (one row per query)."""
    import pandas as pd  # deferred: pandas (~0.3 s) only when an experiment names a segment file

    where = f"segments.{name} ({path})"
    try:
        table = pd.read_csv(path, dtype={"segment": str})
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{where}: cannot read the CSV ({exc})") from exc
    if not {"qid", "segment"} <= set(table.columns):
        raise ConfigError(f"{where}: needs columns qid and segment, has {', '.join(map(str, table.columns))}")
    try:
        ids = table["qid"].astype(query_ids.dtype)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: qid values do not match the data's query ids ({exc})") from exc
    if ids.duplicated().any():
        raise ConfigError(f"{where}: query {ids[ids.duplicated()].iloc[0]!r} is listed twice")
    try:
        return user_segments(pd.Series(table["segment"].to_numpy(), index=ids), query_ids)
    except DataError as exc:
        raise DataError(f"{where}: {exc}") from exc


def build_failure_analysis(
    frames: Mapping[str, Any],
    exp: Any,
    *,
    seed: int,
    attributes: Any = None,
    ranked: Mapping[str, Mapping[Any, Any]] | None = None,
) -> FailureAnalysis | None:
    """Segments of the primary metric against the baseline, and each system's worst queries.

    ``attributes`` (:func:`ltr.analysis.segments.query_attributes` of the test data) gives every built-in segment;
    without it only ``documents per query`` (from the frames' ``n_docs``), and none without that column.
    ``ranked[system]`` (:func:`ltr.analysis.segments.ranked_labels`) adds the ranked labels to the worst queries.
    """
    baseline, primary = str(exp.baseline), str(exp.primary)
    base_frame = frames[baseline].set_index("qid")
    if attributes is None:
        if "n_docs" not in base_frame.columns:
            return None
        attributes = base_frame[["n_docs"]]
    values = {s: frames[s].set_index("qid")[primary] for s in frames}
    stats = exp.stats
    segments = builtin_segments(attributes.loc[base_frame.index])
    for name, path in (exp.get("segments") or {}).items():
        segments[str(name)] = segment_column(str(name), Path(str(path)), base_frame.index)
    table = segment_table(
        values,
        baseline=baseline,
        segments=segments,
        B=int(stats.B),
        confidence=float(stats.confidence),
        seed=seed,
    )
    worst = []
    for system in frames:
        if system != baseline:
            worst += worst_queries(
                values[system], values[baseline], (ranked or {}).get(system, {}), system=system, k=WORST_K
            )
    return FailureAnalysis(table, worst, primary, baseline)


def write_outputs(
    report: Any,
    frames: Mapping[str, Any],
    exp: Any,
    out_dir: Path,
    *,
    seed: int,
    note: str = "",
    agreement: Any = None,
    failures: FailureAnalysis | None = None,
) -> list[Path]:
    """Leaderboard (Markdown, CSV, LaTeX), metric agreement, failure analysis and comparison plots in
    ``out_dir``; returns the files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    title = exp.get("title") or exp.name
    confidence = float(exp.stats.confidence)
    markdown = f"# {title}\n\nSorted by {exp.primary} (primary). {note}\n\n" + report.to_markdown(detail=True)
    if agreement is not None:
        markdown += "\n" + agreement.to_markdown()
    if failures is not None:
        markdown += "\n" + failures.to_markdown(confidence)
    files = [
        out_dir / "leaderboard.md",
        report.to_csv(out_dir / "leaderboard.csv"),
        out_dir / "leaderboard.tex",
        out_dir / "risk.csv",
    ]
    report.risk_frame().to_csv(files[3], index=False)
    files[0].write_text(markdown)
    files[2].write_text(report.to_latex(caption=f"{title}, sorted by {exp.primary}", label=f"tab:{exp.name}"))
    plots = out_dir / "plots"
    curves = at_k_curves(frames, exp.stats, seed)
    if curves:
        files.append(plot_ndcg_at_k(curves, plots / "ndcg_at_k.png", confidence=float(exp.stats.confidence)))
    base = frames[exp.baseline][exp.primary].to_numpy(float)
    diffs = {s: frames[s][exp.primary].to_numpy(float) - base for s in report.systems if s != exp.baseline}
    files.append(
        plot_difference_histogram(
            diffs, plots / "difference_histogram.png", metric=str(exp.primary), baseline=str(exp.baseline)
        )
    )
    files.append(plot_forest(report, plots / "ci_forest.png"))
    if agreement is not None:
        (out_dir / "agreement.md").write_text(agreement.to_markdown())
        agreement.to_frame().to_csv(out_dir / "agreement.csv", index=False)
        files += [out_dir / "agreement.md", out_dir / "agreement.csv"]
        files.append(plot_asl_curves(agreement.asl_curves(), plots / "asl_curves.png", alpha=agreement.alpha))
    if failures is not None:
        (out_dir / "segments.md").write_text(failures.to_markdown(confidence))
        failures.table.to_csv(out_dir / "segments.csv", index=False)
        files += [out_dir / "segments.md", out_dir / "segments.csv"]
        files.append(
            plot_segments(
                failures.table, plots / "segments.png", metric=failures.metric, baseline=failures.baseline
            )
        )
    files.append(write_per_query(frames, exp, out_dir / "per_query.csv"))
    return files


def write_per_query(frames: Mapping[str, Any], exp: Any, path: Path) -> Path:
    """The per-query test values the paired tests used, one row per (system, query): ``system, qid`` and
    every metric of the experiment (empty = skipped), so anyone can redo a test with another tool."""
    import pandas as pd  # deferred: pandas only where frames are written

    metrics = compared_metrics(exp)
    rows = [frames[s][["qid", *metrics]].assign(system=s) for s in frames]
    table = pd.concat(rows, ignore_index=True)[["system", "qid", *metrics]]
    table.to_csv(path, index=False)
    return path


def split_attributes(data: Any) -> Any:
    """:func:`ltr.analysis.segments.query_attributes` of a split (relevant = label ≥ 1)."""
    return query_attributes(data.y, data.offsets, data.query_ids)


def ranked_labels_of(ranker: Any, data: Any) -> dict[Any, Any]:
    """qid → (top-10 labels in the ranker's order, top-10 ideal labels) on raw ``data`` (a model trained
    with ``data.normalize`` normalises it first, :func:`ltr.models.normalized.predict_raw`)."""
    scores = np.asarray(predict_raw(ranker, data, str(getattr(data, "name", "test"))), dtype=float)
    return ranked_labels(data.y, scores, data.offsets, data.query_ids)


def leaderboard_metrics(report: Any) -> dict[str, float]:
    """``leaderboard/<system>/<metric>``: each system's mean, the parent run's metrics (one chart each).

    CI bounds, differences, adjusted p-values and effect sizes are rows of :func:`leaderboard_rows`.
    """
    out = {mlflow_metric_name(f"leaderboard/{r.system}", r.metric): r.mean for r in report.rows}
    return {k: float(v) for k, v in out.items() if np.isfinite(v)}


def leaderboard_rows(report: Any) -> list[dict[str, Any]]:
    """The parent run's table (:data:`ltr.tracking.writer.SUMMARY_TABLE`): per system and metric,
    the mean with its CI, and for a non-baseline system its difference to the baseline, adjusted
    p-value and effect size (``None`` where undefined)."""

    def num(v: Any) -> float | None:
        return float(v) if v is not None and np.isfinite(v) else None

    return [
        {
            "system": r.system,
            "metric": r.metric,
            "mean": num(r.mean),
            "ci_low": num(r.ci_low),
            "ci_high": num(r.ci_high),
            "diff": None if r.is_baseline else num(r.diff),
            "p_adjusted": None if r.is_baseline else num(r.pvalue_adjusted),
            "effect_size": None if r.is_baseline else num(r.effect_size),
        }
        for r in report.rows
    ]


def comparison_description(report: Any, primary: str) -> str:
    """The comparison parent run's description (``mlflow.note.content``): the best system on the
    primary metric with its CI and, unless it is the baseline, its difference to the baseline.

    >>> import numpy as np
    >>> from ltr.analysis.comparison import compare
    >>> rep = compare({"bm25": {"map": np.array([0.2, 0.4, 0.3, 0.5])}, "lm": {"map": np.array([0.6, 0.7, 0.5, 0.8])}},
    ...               baseline="bm25", query_ids=[1, 2, 3, 4], B=200, seed=0)
    >>> comparison_description(rep, "map").split(";")[0]
    'Best on test map: lm = 0.6500, 95% CI [0.5500, 0.7250] over 4 queries'
    """
    best = report.row(report.best(primary), primary)
    text = (
        f"Best on test {primary}: {best.system} = {best.mean:.4f}, {report.confidence:.0%} CI "
        f"[{best.ci_low:.4f}, {best.ci_high:.4f}] over {best.n_queries} queries"
    )
    if not best.is_baseline:
        text += (
            f"; {best.diff:+.4f} vs the baseline {report.baseline} "
            f"(p = {best.pvalue_adjusted:.3g} adjusted, {len(report.systems)} systems)"
        )
    return text + "."


def published_markdown(exp: Any, ours: Mapping[str, Mapping[str, float]], ours_label: str) -> str:
    """The experiment's ``published:`` numbers (with their source) above our systems' numbers, same columns.

    >>> from omegaconf import OmegaConf
    >>> exp = OmegaConf.create({"metrics": ["ndcg@10"], "published": {"source": "paper, Table 2", "note": "",
    ...                         "systems": {"theirs": {"ndcg@10": 0.5}}}})
    >>> print(published_markdown(exp, {"ours": {"ndcg@10": 0.51234}}, "mean over the test queries"))
    ## Published numbers beside ours
    <BLANKLINE>
    Source: paper, Table 2
    <BLANKLINE>
    | system | ndcg@10 |
    |---|---|
    | theirs (published) | 0.5000 |
    | ours: ours (mean over the test queries) | 0.5123 |
    """
    from ltr.experiment.folds import cell  # deferred: ltr.experiment.folds imports the pipeline (the engines)

    published = exp.published
    metrics = list(exp.metrics)
    lines = ["## Published numbers beside ours", "", f"Source: {published.source}"]
    if published.get("note"):
        lines += ["", str(published.note)]
    lines += ["", "| system | " + " | ".join(metrics) + " |", "|---|" + "---|" * len(metrics)]
    for system, values in (published.get("systems") or {}).items():
        lines.append(
            f"| {system} (published) | "
            + " | ".join(cell(float(values[m])) if m in values else "" for m in metrics)
            + " |"
        )
    for system, values in ours.items():
        lines.append(
            f"| ours: {system} ({ours_label}) | " + " | ".join(cell(values[m]) for m in metrics) + " |"
        )
    return "\n".join(lines)


def extra_tables(report: Any, exp: Any, summaries: Mapping[str, Any], confidence: float) -> dict[str, str]:
    """``folds.md`` (a fold protocol) and ``published.md`` (a ``published:`` block): file name → Markdown."""
    from ltr.experiment.folds import (
        folds_markdown,  # deferred: ltr.experiment.folds imports the pipeline (the engines)
    )

    out: dict[str, str] = {}
    if summaries:
        out["folds.md"] = folds_markdown(summaries, confidence)
    if exp.get("published") is not None:
        if summaries:
            ours = {s: dict(summaries[s].mean) for s in report.systems}
            label = "mean over folds"
        else:
            ours = {s: {r.metric: r.mean for r in report.rows if r.system == s} for s in report.systems}
            label = "mean over the test queries"
        out["published.md"] = published_markdown(exp, ours, label)
    return out


def check_same_data(
    frames: Mapping[str, Any], run_ids: Mapping[str, str], fingerprints: Mapping[str, str | None], split: str
) -> None:
    """Refuse runs that were not scored on the same ``split`` data: a ``ConfigError`` naming every run
    (label, run id) with its ``ltr.data.fingerprint.<split>`` tag. Runs that all carry the tag are
    compared by it (two datasets may share query ids); otherwise by the query ids of their frames.

    >>> import pandas as pd
    >>> f = {"a": pd.DataFrame({"qid": [1, 2]}), "b": pd.DataFrame({"qid": [1, 2]})}
    >>> check_same_data(f, {"a": "r1", "b": "r2"}, {"a": "fp1", "b": "fp1"}, "test")
    >>> check_same_data(f, {"a": "r1", "b": "r2"}, {"a": "fp1", "b": "fp2"}, "test")
    Traceback (most recent call last):
    ltr.core.errors.ConfigError: --from-mlflow: the runs were evaluated on different test data, so ...fp2, 2 queries)...fingerprint...
    """

    def named(label: str) -> str:
        fp = fingerprints[label]
        tag = f"ltr.data.fingerprint.{split}={fp}" if fp else f"no ltr.data.fingerprint.{split} tag"
        return f"{label!r} (run {run_ids[label]}, {tag}, {frames[label]['qid'].nunique()} queries)"

    labels = list(frames)
    if all(fingerprints[s] for s in labels):
        if len({fingerprints[s] for s in labels}) > 1:
            raise ConfigError(
                f"--from-mlflow: the runs were evaluated on different {split} data, so their per-query "
                f"scores cannot be paired: {'; '.join(named(s) for s in labels)}. "
                "Choose runs with one fingerprint (e.g. --run-ids of runs on the same data)"
            )
        return
    first = labels[0]
    reference = set(frames[first]["qid"].tolist())
    for label in labels[1:]:
        qids = set(frames[label]["qid"].tolist())
        if qids != reference:
            raise ConfigError(
                f"--from-mlflow: the runs scored different {split} queries: {len(reference - qids)} of "
                f"{first!r}'s are not in {label!r}'s and {len(qids - reference)} of {label!r}'s not in "
                f"{first!r}'s; {'; '.join(named(s) for s in labels)}. Compare runs of the same data"
            )
