"""Where does a system win or lose? Paired differences against the baseline per query segment, and the
worst queries with their ranked labels.

Segments group the queries by something the user can act on. Built in (:func:`builtin_segments`, from
:func:`query_attributes` of the test data):

* ``documents per query`` — the queries split at the tertiles of their document counts (fewer bins
  when counts repeat), labelled ``n_docs a–b``;
* ``relevant documents`` — ``0``, ``1``, ``2–4``, ``5–9``, ``≥ 10`` documents with label ≥ ``relevant_from``;
* ``highest label`` — the largest label of the query (``max label = g``).

User segments (:func:`user_segments`): a column (``qid → value``, e.g. head/tail, language) or named
lists of query ids (queries in no list are ``other``; a query in two lists is an error).

:func:`segment_table` gives, per system other than the baseline and per segment, the number of queries,
both means, ``Δ = mean(system − baseline)`` with its paired percentile bootstrap CI (resampling the
segment's queries; :func:`ltr.stats.paired_bootstrap_ci`, seeded) and wins/ties/losses
(:func:`ltr.stats.win_tie_loss`). A segment of one query has no CI (NaN). Queries that either side
skipped (NaN) are left out of the segment's pairs.

>>> import numpy as np, pandas as pd
>>> base = pd.Series([0.2, 0.4, 0.6, 0.8], index=["a", "b", "c", "d"])
>>> new = pd.Series([0.3, 0.5, 0.5, 0.8], index=["a", "b", "c", "d"])
>>> seg = {"length": pd.Series(["short", "short", "long", "long"], index=["a", "b", "c", "d"])}
>>> t = segment_table({"base": base, "new": new}, baseline="base", segments=seg, B=200)
>>> t[["segment", "n_queries", "diff", "wins", "ties", "losses"]].to_string(index=False)
'segment  n_queries  diff  wins  ties  losses\\n   long          2 -0.05     0     1       1\\n  short          2  0.10     2     0       0'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ltr.core.errors import ConfigError, DataError
from ltr.stats import paired_bootstrap_ci, win_tie_loss
from ltr.stats._validate import check_B, check_level, check_seed, check_tolerance

RELEVANT_BINS = ((0, 0, "0"), (1, 1, "1"), (2, 4, "2–4"), (5, 9, "5–9"), (10, np.inf, "≥ 10"))


def query_attributes(
    labels: np.ndarray, offsets: np.ndarray, query_ids: Sequence[object], *, relevant_from: float = 1.0
) -> pd.DataFrame:
    """Per query (index = query id): ``n_docs``, ``n_relevant`` (label ≥ ``relevant_from``), ``max_label``.

    >>> query_attributes(np.array([0, 2, 1, 0, 0]), np.array([0, 3, 5]), ["q1", "q2"]).to_dict("index")
    {'q1': {'n_docs': 3, 'n_relevant': 2, 'max_label': 2.0}, 'q2': {'n_docs': 2, 'n_relevant': 0, 'max_label': 0.0}}
    """
    y = np.asarray(labels, dtype=float)
    off = np.asarray(offsets, dtype=np.int64)
    if off.shape[0] - 1 != len(query_ids):
        raise DataError(
            f"query_attributes: {off.shape[0] - 1} queries in offsets, {len(query_ids)} query ids"
        )
    sizes = np.diff(off)
    # an empty query has no relevant document and highest label 0; reduceat over the non-empty queries'
    # starts only (a plain reduceat gives an empty query the next query's first value, and fails on a
    # trailing one)
    nonempty = sizes > 0
    n_rel, top = np.zeros(sizes.shape[0], dtype=np.int64), np.zeros(sizes.shape[0])
    if nonempty.any():
        starts = off[:-1][nonempty]
        n_rel[nonempty] = np.add.reduceat((y >= relevant_from).astype(np.int64), starts)
        top[nonempty] = np.maximum.reduceat(y, starts)
    return pd.DataFrame(
        {"n_docs": sizes, "n_relevant": n_rel, "max_label": top},
        index=pd.Index(list(query_ids), name="qid"),
    )


def _docs_bins(n_docs: pd.Series) -> pd.Series:
    """Tertiles of the document counts as ``n_docs a–b`` labels (equal cut points merged)."""
    edges = np.unique(np.quantile(n_docs.to_numpy(float), [0, 1 / 3, 2 / 3, 1]).round()).astype(int)
    if edges.shape[0] == 1:
        labels = [(edges[0], edges[0], f"n_docs {edges[0]}")]
    else:
        lows = [edges[0], *(edges[1:-1] + 1)]
        labels = [
            (low, high, f"n_docs {low}–{high}" if low != high else f"n_docs {low}")
            for low, high in zip(lows, edges[1:], strict=True)
        ]
    out = pd.Series("", index=n_docs.index, dtype=object)
    for low, high, name in labels:
        out[(n_docs >= low) & (n_docs <= high)] = name
    return pd.Series(
        pd.Categorical(out, categories=[name for _, _, name in labels], ordered=True), index=out.index
    )


def builtin_segments(attributes: pd.DataFrame) -> dict[str, pd.Series]:
    """The built-in segment families from :func:`query_attributes` (or a frame with ``n_docs`` only)."""
    out: dict[str, pd.Series] = {"documents per query": _docs_bins(attributes["n_docs"])}
    if "n_relevant" in attributes:
        rel = attributes["n_relevant"]
        bins = pd.Series("", index=rel.index, dtype=object)
        for low, high, name in RELEVANT_BINS:
            bins[(rel >= low) & (rel <= high)] = name
        order = [name for _, _, name in RELEVANT_BINS]
        out["relevant documents"] = pd.Series(
            pd.Categorical(bins, categories=order, ordered=True), index=rel.index
        )
    if "max_label" in attributes:
        grades = attributes["max_label"]
        names = {g: f"max label = {g:g}" for g in sorted(grades.unique())}
        out["highest label"] = pd.Series(
            pd.Categorical(grades.map(names), categories=list(names.values()), ordered=True),
            index=grades.index,
        )
    return out


def user_segments(spec: pd.Series | Mapping[str, Sequence[object]], query_ids: Sequence[object]) -> pd.Series:
    """A user's segment as ``qid → segment``: a Series (a column) or ``{name: [qid, …]}`` lists."""
    ids = pd.Index(list(query_ids))
    if isinstance(spec, pd.Series):
        missing = ids.difference(spec.index)
        if len(missing):
            raise DataError(f"segment column has no value for {len(missing)} queries (e.g. {missing[0]!r})")
        return spec.loc[ids].astype(str)
    if not isinstance(spec, Mapping):
        raise ConfigError(
            f"segments: expected a Series or a mapping name → query ids, got {type(spec).__name__}"
        )
    out = pd.Series("other", index=ids, dtype=object)
    seen: dict[object, str] = {}
    for name, members in spec.items():
        for q in members:
            if q in seen:
                raise ConfigError(f"segments: query {q!r} is in both {seen[q]!r} and {name!r}")
            seen[q] = str(name)
        present = ids.intersection(pd.Index(list(members)))
        out[present] = str(name)
    return out


def segment_table(
    per_query: Mapping[str, pd.Series],
    *,
    baseline: str,
    segments: Mapping[str, pd.Series],
    B: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    tie_tolerance: float = 0.0,
) -> pd.DataFrame:
    """Δ against ``baseline`` per system and segment (see the module docstring); one row per
    (system, family, segment), segments in their natural order (a categorical's categories, else sorted);
    a segment none of whose queries both sides scored is left out."""
    if baseline not in per_query:
        raise ConfigError(
            f"baseline={baseline!r} is not one of the systems: {', '.join(map(repr, per_query))}"
        )
    B, seed = check_B(B), check_seed(seed)
    confidence, tie_tolerance = check_level("confidence", confidence), check_tolerance(tie_tolerance)
    base = per_query[baseline]
    rows = []
    for system, values in per_query.items():
        if system == baseline:
            continue
        if set(values.index) != set(base.index):
            raise DataError(f"system {system!r} and the baseline {baseline!r} scored different queries")
        for family, labels in segments.items():
            if set(labels.index) != set(base.index):
                raise DataError(f"segment {family!r} does not assign every query a segment")
            for name in _segment_order(labels):
                qids = labels.index[labels == name]
                a = values.loc[qids].to_numpy(float)
                b = base.loc[qids].to_numpy(float)
                keep = ~(np.isnan(a) | np.isnan(b))
                a, b = a[keep], b[keep]
                n = int(a.shape[0])
                if n == 0:
                    continue  # no query of the segment is scored by both
                if n >= 2:
                    ci = paired_bootstrap_ci(a, b, method="percentile", B=B, confidence=confidence, seed=seed)
                    low, high = ci.low, ci.high
                else:
                    low = high = float("nan")
                wtl = win_tie_loss(a, b, tie_tolerance=tie_tolerance)
                rows.append(
                    {
                        "system": str(system),
                        "family": str(family),
                        "segment": str(name),
                        "n_queries": n,
                        "mean": float(a.mean()),
                        "baseline_mean": float(b.mean()),
                        "diff": float((a - b).mean()),
                        "ci_low": low,
                        "ci_high": high,
                        "wins": wtl.wins,
                        "ties": wtl.ties,
                        "losses": wtl.losses,
                    }
                )
    return pd.DataFrame.from_records(
        rows,
        columns=["system", "family", "segment", "n_queries", "mean", "baseline_mean", "diff", "ci_low",
                 "ci_high", "wins", "ties", "losses"],
    )  # fmt: skip


def _segment_order(labels: pd.Series) -> list[object]:
    """The segments in their natural order: a categorical's category order (empty ones left out), else sorted."""
    if isinstance(labels.dtype, pd.CategoricalDtype):
        present = set(labels.dropna().unique())
        return [c for c in labels.cat.categories if c in present]
    return sorted(labels.dropna().unique(), key=str)


def segments_markdown(table: pd.DataFrame, *, metric: str, baseline: str, confidence: float = 0.95) -> str:
    """The segment table as Markdown: one table per family, rows = segment × system."""
    pct = f"{confidence * 100:.10g}%"
    lines = [
        f"## Failure analysis by segment ({metric} vs {baseline})",
        "",
        f"Δ = mean({metric} of the system − the baseline's) over the segment's queries, {pct} paired "
        "percentile bootstrap CI over those queries; W/T/L = queries won/tied/lost against the baseline.",
    ]
    for family, part in table.groupby("family", sort=False):
        lines += ["", f"**{family}**", "", "| segment | system | queries | mean | baseline | Δ | Δ CI | W/T/L |",
                  "|---|---|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
        for r in part.itertuples(index=False):
            ci = "—" if np.isnan(r.ci_low) else f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]"
            lines.append(
                f"| {r.segment} | {r.system} | {r.n_queries} | {r.mean:.4f} | {r.baseline_mean:.4f} | "
                f"{r.diff:+.4f} | {ci} | {r.wins}/{r.ties}/{r.losses} |"
            )
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class WorstQuery:
    """A query where ``system`` loses most against the baseline, with its labels in the system's order."""

    system: str
    qid: object
    value: float
    baseline_value: float
    diff: float
    ranked_labels: tuple[float, ...]
    ideal_labels: tuple[float, ...]


def ranked_labels(
    labels: np.ndarray,
    scores: np.ndarray,
    offsets: np.ndarray,
    query_ids: Sequence[object],
    *,
    depth: int = 10,
) -> dict[object, tuple[tuple[float, ...], tuple[float, ...]]]:
    """``qid → (labels in score order, labels in the ideal order)``, top ``depth`` each; equal scores keep
    the documents' file order.

    >>> ranked_labels(np.array([0, 2, 1]), np.array([0.9, 0.1, 0.5]), np.array([0, 3]), ["q"])
    {'q': ((0.0, 1.0, 2.0), (2.0, 1.0, 0.0))}
    """
    y, s, off = np.asarray(labels, float), np.asarray(scores, float), np.asarray(offsets, np.int64)
    if y.shape != s.shape:
        raise DataError(f"ranked_labels: {s.shape[0]} scores for {y.shape[0]} documents")
    out = {}
    for i, q in enumerate(query_ids):
        lab, sc = y[off[i] : off[i + 1]], s[off[i] : off[i + 1]]
        order = np.argsort(-sc, kind="stable")
        out[q] = (tuple(lab[order][:depth].tolist()), tuple(np.sort(lab)[::-1][:depth].tolist()))
    return out


def worst_queries(
    values: pd.Series,
    baseline_values: pd.Series,
    ranked: Mapping[object, tuple[tuple[float, ...], tuple[float, ...]]],
    *,
    system: str,
    k: int = 5,
) -> list[WorstQuery]:
    """The ``k`` queries with the most negative ``system − baseline`` (ties: smaller system value first,
    then query order), NaN pairs skipped."""
    diff = (values - baseline_values.loc[values.index]).dropna()
    frame = pd.DataFrame({"diff": diff, "value": values.loc[diff.index], "pos": np.arange(len(diff))})
    picked = frame.sort_values(["diff", "value", "pos"], kind="stable").head(int(k))
    return [
        WorstQuery(
            system, q, float(r.value), float(baseline_values[q]), float(r.diff), *ranked.get(q, ((), ()))
        )
        for q, r in zip(picked.index, picked.itertuples(index=False), strict=True)
    ]


def worst_markdown(worst: Sequence[WorstQuery], *, metric: str, baseline: str) -> str:
    """The worst queries as Markdown: value, baseline, Δ and the ranked labels above the ideal order."""
    lines = [
        f"## Worst queries ({metric}, largest loss against {baseline})",
        "",
        "Labels of the top documents in the system's order, and in the ideal order (labels sorted).",
        "",
        "| system | query | value | baseline | Δ | ranked labels | ideal labels |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for w in worst:
        lines.append(
            f"| {w.system} | {w.qid} | {w.value:.4f} | {w.baseline_value:.4f} | {w.diff:+.4f} | "
            f"{_labels(w.ranked_labels)} | {_labels(w.ideal_labels)} |"
        )
    return "\n".join(lines) + "\n"


def _labels(values: Sequence[float]) -> str:
    return " ".join(f"{v:g}" for v in values) if values else "—"
