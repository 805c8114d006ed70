"""PNG plots of runs and comparisons (matplotlib, Agg canvas; no global pyplot state).

Every function draws one figure from plain arrays, writes it to ``path`` and returns the path:

- :func:`plot_learning_curves` — train/valid metric per boosting iteration, best iteration marked;
- :func:`plot_ndcg_at_k` — mean NDCG@k for k = 1..K per system with its bootstrap CI band;
- :func:`plot_difference_histogram` — per-query ``system − baseline`` differences of one metric;
- :func:`plot_forest` — the leaderboard's paired differences against the baseline with their CIs;
- :func:`plot_feature_importance` — the top features by gain (:func:`feature_importance`);
- :func:`plot_asl_curves` — Sakai's achieved-significance-level curves, one line per metric;
- :func:`plot_segments` — Δ against the baseline with its CI per query segment and system;
- :func:`plot_importance_cis` — per feature, several measures side by side, each a mean with its CI;
- :func:`plot_per_query_values` — per feature, the per-query values as a box with the points over it.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> plot_learning_curves({"valid": {"ndcg@10": [0.5, 0.6, 0.62]}}, d / "c.png", best_iteration=2).is_file()
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

_DPI = 110


def _figure(width: float = 7.0, height: float = 4.2):  # noqa: ANN202 - a matplotlib Figure
    from matplotlib.figure import Figure  # deferred: matplotlib (~0.3 s) loads only when a plot is drawn

    return Figure(figsize=(width, height), dpi=_DPI, layout="constrained")


def _save(fig: Any, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def _save_labelled(fig: Any, ax: Any, path: str | Path, xlabel: str, ylabel: str, title: str) -> Path:
    """A plot over integer x values (ranks, positions) labelled, with a legend and a grid, saved."""
    _integer_ticks(ax.xaxis)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return _save(fig, path)


def plot_learning_curves(
    history: Mapping[str, Mapping[str, Sequence[float]]],
    path: str | Path,
    *,
    best_iteration: int | None = None,
    title: str = "learning curves",
) -> Path:
    """One line per ``split/metric`` of ``history`` (``evals_result_`` layout) against the iteration."""
    fig = _figure()
    ax = fig.add_subplot()
    for split, curves in history.items():
        for metric, values in curves.items():
            ax.plot(np.arange(len(values)), np.asarray(values, dtype=float), label=f"{split} {metric}")
    if best_iteration is not None:
        ax.axvline(
            best_iteration, color="grey", linestyle="--", linewidth=1, label=f"best ({best_iteration})"
        )
    ax.set_xlabel("iteration")
    ax.set_ylabel("metric")
    ax.set_title(title)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return _save(fig, path)


#: with more systems than this, :func:`plot_ndcg_at_k` draws one panel per system (small multiples)
OVERLAY_MAX_SYSTEMS = 3


def plot_ndcg_at_k(
    curves: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
    path: str | Path,
    *,
    metric: str = "ndcg",
    confidence: float = 0.95,
) -> Path:
    """``curves[system] = (mean, low, high)`` over k = 1..K (arrays of length K) as lines with CI bands.

    Up to :data:`OVERLAY_MAX_SYSTEMS` systems share one panel; with more, overlapping bands would blur
    into one, so each system gets its own panel (shared axes) with its band, the other systems' means
    as thin grey lines for reference. The k axis has integer ticks only."""
    systems = list(curves)
    colors = {s: f"C{i % 10}" for i, s in enumerate(systems)}
    if len(systems) <= OVERLAY_MAX_SYSTEMS:
        fig = _figure()
        axes = [fig.add_subplot()]
        panels = [systems]
    else:
        ncols = 2 if len(systems) <= 4 else 3
        nrows = -(-len(systems) // ncols)
        fig = _figure(3.2 * ncols, 2.6 * nrows + 0.5)
        grid = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False).ravel()
        for ax in grid[len(systems) :]:
            ax.remove()
        axes = list(grid[: len(systems)])
        panels = [[s] for s in systems]
    for ax, shown in zip(axes, panels, strict=True):
        if len(panels) > 1:
            for other in systems:
                if other not in shown:
                    mean = curves[other][0]
                    ax.plot(np.arange(1, len(mean) + 1), mean, color="0.75", linewidth=0.8)
        for system in shown:
            mean, low, high = curves[system]
            k = np.arange(1, len(mean) + 1)
            ax.plot(k, mean, marker="o", markersize=3, color=colors[system], label=system)
            ax.fill_between(k, low, high, color=colors[system], alpha=0.2, linewidth=0)
        _integer_ticks(ax.xaxis)
        ax.grid(alpha=0.3)
        if len(panels) > 1:
            ax.set_title(shown[0], fontsize="medium")
        else:
            ax.legend(fontsize="small")
    title = f"{metric}@k with {confidence:.0%} bootstrap CI"
    if len(panels) > 1:
        fig.suptitle(title)
        fig.supxlabel("k")
        fig.supylabel(f"mean {metric}@k")
    else:
        axes[0].set_title(title)
        axes[0].set_xlabel("k")
        axes[0].set_ylabel(f"mean {metric}@k")
    return _save(fig, path)


def plot_difference_histogram(
    differences: Mapping[str, np.ndarray], path: str | Path, *, metric: str, baseline: str, bins: int = 30
) -> Path:
    """Histogram of per-query ``system − baseline`` values of ``metric``, one panel per system (NaN dropped)."""
    n = max(len(differences), 1)
    fig = _figure(7.0, 1.9 * n + 0.8)
    axes = fig.subplots(n, 1, sharex=True, squeeze=False)[:, 0]
    for ax, (system, diff) in zip(axes, differences.items(), strict=False):
        d = np.asarray(diff, dtype=float)
        d = d[~np.isnan(d)]
        ax.hist(d, bins=bins, color="tab:blue", alpha=0.75)
        ax.axvline(0.0, color="black", linewidth=1)
        if d.size:
            ax.axvline(
                float(d.mean()), color="tab:red", linestyle="--", linewidth=1.2, label=f"mean {d.mean():+.4f}"
            )
            ax.legend(fontsize="small", loc="upper right")
        ax.set_ylabel("queries")
        ax.set_title(f"{system} − {baseline}", fontsize="medium")
    axes[-1].set_xlabel(f"per-query difference in {metric}")
    return _save(fig, path)


def plot_forest(report: Any, path: str | Path, *, metrics: Sequence[str] | None = None) -> Path:
    """CI forest plot of a :class:`ltr.analysis.comparison.ComparisonReport`: ``diff`` with ``[diff_ci_low, diff_ci_high]``
    for every non-baseline system, one panel per metric; significant differences (Holm-adjusted) filled."""
    metrics = list(metrics or report.metrics)
    others = [s for s in report.systems if s != report.baseline]
    fig = _figure(7.0, max(2.0, 0.45 * len(others) + 1.0) * len(metrics) * 0.75 + 0.6)
    axes = fig.subplots(len(metrics), 1, squeeze=False)[:, 0]
    for ax, metric in zip(axes, metrics, strict=True):
        rows = [report.row(s, metric) for s in others]
        y = np.arange(len(rows))[::-1]
        for yi, r in zip(y, rows, strict=True):
            ax.plot([r.diff_ci_low, r.diff_ci_high], [yi, yi], color="tab:blue", linewidth=2)
            ax.plot(
                [r.diff],
                [yi],
                marker="o",
                color="tab:blue",
                markerfacecolor="tab:blue" if r.significant else "white",
            )
        ax.axvline(0.0, color="black", linewidth=1)
        ax.set_yticks(y, [r.system for r in rows])
        ax.set_title(
            f"{metric}: difference vs {report.baseline} ({report.confidence:.0%} CI)", fontsize="medium"
        )
        ax.grid(axis="x", alpha=0.3)
    return _save(fig, path)


def feature_importance(ranker: Any, n_features: int | None = None) -> np.ndarray | None:
    """Total gain per feature of a fitted ranker, or ``None`` when the ranker has no such notion.

    LightGBM: ``booster_.feature_importance("gain")``; XGBoost: ``booster_.get_score("total_gain")``
    (keys ``f<i>``); scikit-learn style rankers: ``feature_importances_`` or ``|coef_|``.
    """
    booster = getattr(ranker, "booster_", None)
    module = type(booster).__module__ if booster is not None else ""
    if module.startswith("lightgbm"):
        return np.asarray(booster.feature_importance(importance_type="gain"), dtype=float)
    if module.startswith("xgboost"):
        scores = booster.get_score(importance_type="total_gain")
        size = n_features or booster.num_features()
        out = np.zeros(size)
        for key, value in scores.items():
            index = int(key[1:]) if key.startswith("f") and key[1:].isdigit() else None
            if index is not None and index < size:
                out[index] = value
        return out
    for attr in ("feature_importances_",):
        values = getattr(ranker, attr, None)
        if values is not None:
            return np.asarray(values, dtype=float)
    coef = getattr(ranker, "coef_", None)
    if coef is not None:
        return np.abs(np.asarray(coef, dtype=float)).ravel()
    return None


def top_features(importance: np.ndarray, top: int = 20) -> tuple[list[str], np.ndarray]:
    """Labels and values of the ``top`` features by importance, largest first (zeros dropped if any is > 0).

    Labels are the 1-based feature ids of ``docs/data.md`` (column ``j`` is feature ``f{j+1}``, as in
    an SVMlight file, ``ltr.data info`` and the pyfunc model's input columns).

    >>> top_features(np.array([0.0, 5.0, 1.0, 0.0, 3.0]), top=3)
    (['f2', 'f5', 'f3'], array([5., 3., 1.]))
    """
    values = np.asarray(importance, dtype=float)
    order = np.argsort(-values, kind="stable")[:top]
    order = order[values[order] > 0] if (values[order] > 0).any() else order
    return [f"f{j + 1}" for j in order], values[order]


def plot_feature_importance(
    importance: np.ndarray, path: str | Path, *, top: int = 20, title: str = "feature importance (gain)"
) -> Path:
    """Horizontal bars of the ``top`` features by importance, labelled by :func:`top_features` (1-based ids)."""
    labels, values = top_features(importance, top)
    fig = _figure(7.0, 0.28 * len(labels) + 1.2)
    ax = fig.add_subplot()
    ax.barh(np.arange(len(labels))[::-1], values, color="tab:green")
    ax.set_yticks(np.arange(len(labels))[::-1], labels, fontsize="small")
    ax.set_xlabel("gain")
    ax.set_title(title)
    return _save(fig, path)


def plot_asl_curves(curves: Mapping[str, np.ndarray], path: str | Path, *, alpha: float = 0.05) -> Path:
    """``curves[metric]`` = p-values of all system pairs sorted ascending, plotted against the pair's rank
    (1 = most significant), with a line at ``alpha``: the further right a curve crosses it, the more
    pairs the metric separates (Sakai 2006). The y axis is logarithmic."""
    fig = _figure()
    ax = fig.add_subplot()
    for metric, pvalues in curves.items():
        p = np.asarray(pvalues, dtype=float)
        ax.plot(np.arange(1, p.shape[0] + 1), np.maximum(p, 1e-5), marker="o", markersize=3, label=metric)
    ax.axhline(alpha, color="grey", linestyle="--", linewidth=1, label=f"alpha = {alpha:g}")
    ax.set_yscale("log")
    return _save_labelled(
        fig, ax, path, "system pair (sorted by p-value)", "achieved significance level (p)",
        "discriminative power: ASL curves",
    )  # fmt: skip


def plot_segments(table: Any, path: str | Path, *, metric: str, baseline: str) -> Path:
    """A :func:`ltr.analysis.segments.segment_table` as one panel per segment family: per segment, one marker per
    system at its Δ with the CI as a horizontal bar (systems offset vertically), a line at Δ = 0."""
    families = list(dict.fromkeys(table["family"]))
    systems = list(dict.fromkeys(table["system"]))
    heights = [table.loc[table["family"] == f, "segment"].nunique() for f in families]
    fig = _figure(7.0, sum(0.45 * h + 0.9 for h in heights) + 0.4)
    axes = fig.subplots(max(len(families), 1), 1, squeeze=False, height_ratios=heights or None)[:, 0]
    colors = [f"C{i % 10}" for i in range(len(systems))]
    step = 0.7 / max(len(systems), 1)
    for ax, family in zip(axes, families, strict=False):
        part = table[table["family"] == family]
        segments = list(dict.fromkeys(part["segment"]))  # the table's (natural) order
        for j, (system, color) in enumerate(zip(systems, colors, strict=True)):
            rows = part[part["system"] == system].set_index("segment").reindex(segments)
            y = np.arange(len(segments))[::-1] + 0.35 - step * (j + 0.5)
            ax.errorbar(
                rows["diff"], y,
                xerr=[rows["diff"] - rows["ci_low"], rows["ci_high"] - rows["diff"]],
                fmt="o", color=color, markersize=4, capsize=2, label=system if ax is axes[0] else None,
            )  # fmt: skip
        ax.axvline(0.0, color="black", linewidth=1)
        ax.set_yticks(np.arange(len(segments))[::-1], [f"{s} (n={_n(part, s)})" for s in segments])
        ax.set_title(f"{family}: {metric} difference vs {baseline}", fontsize="medium")
        ax.set_xlabel(f"Δ {metric} (CI)", fontsize="small")
        ax.grid(axis="x", alpha=0.3)
    if systems:
        axes[0].legend(fontsize="small", loc="best")
    return _save(fig, path)


def _n(part: Any, segment: str) -> int:
    return int(part.loc[part["segment"] == segment, "n_queries"].max())


def _integer_ticks(axis: Any) -> None:
    from matplotlib.ticker import MaxNLocator  # deferred: matplotlib loads only when a plot is drawn

    axis.set_major_locator(MaxNLocator(integer=True))


def plot_importance_cis(
    labels: Sequence[str],
    panels: Mapping[str, np.ndarray],
    path: str | Path,
    *,
    title: str = "feature importance",
) -> Path:
    """One horizontal panel per measure (``panels[measure]``: rows = ``labels``, columns mean, low, high):
    a dot at the mean and a bar over its CI, first label on top, a line at 0 (full labels, never cut)."""
    fig = _figure(4.0 + 3.2 * len(panels), 0.3 * len(labels) + 1.4)
    axes = fig.subplots(1, len(panels), squeeze=False, sharey=True)[0]
    y = np.arange(len(labels))[::-1]
    for ax, (measure, values) in zip(axes, panels.items(), strict=True):
        v = np.asarray(values, dtype=float).reshape(len(labels), 3)
        ax.errorbar(
            v[:, 0], y, xerr=[v[:, 0] - v[:, 1], v[:, 2] - v[:, 0]], fmt="o", color="tab:blue", capsize=3
        )
        ax.axvline(0.0, color="black", linewidth=0.8)
        ax.set_xlabel(measure)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(y, list(labels), fontsize="small")
    fig.suptitle(title, fontsize="medium")
    return _save(fig, path)


def plot_per_query_values(
    labels: Sequence[str], values: np.ndarray, path: str | Path, *, measure: str, title: str = ""
) -> Path:
    """Per feature (``values[:, i]`` for ``labels[i]``, one row per query, NaN left out): a box of the
    per-query values with every query drawn over it, first label on top, a line at 0."""
    v = np.asarray(values, dtype=float)
    fig = _figure(7.5, 0.35 * len(labels) + 1.4)
    ax = fig.add_subplot()
    y = np.arange(len(labels))[::-1]
    columns = [v[~np.isnan(v[:, i]), i] for i in range(len(labels))]
    ax.boxplot(columns, positions=y, orientation="horizontal", widths=0.6, showfliers=False)
    rng = np.random.default_rng(0)  # jitter only: the points' vertical spread within a row
    for yi, col in zip(y, columns, strict=True):
        ax.plot(col, yi + rng.uniform(-0.2, 0.2, col.size), ".", color="tab:blue", alpha=0.35, markersize=3)
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.set_yticks(y, list(labels), fontsize="small")
    ax.set_xlabel(f"{measure} per query")
    ax.set_title(title or f"{measure} per query", fontsize="medium")
    return _save(fig, path)


def plot_discount_curves(
    position: np.ndarray,
    value: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    curves: Mapping[str, np.ndarray],
    path: str | Path,
    *,
    confidence: float = 0.95,
) -> Path:
    """Examination by position as estimated (points, ``confidence`` CI bars) and each fitted discount
    curve D(r) (lines, labelled by ``curves``' keys, best first): ``python -m ltr.clicks discount --plot``."""
    fig = _figure()
    ax = fig.add_subplot()
    position = np.asarray(position, dtype=float)
    for i, (label, curve) in enumerate(curves.items()):
        ax.plot(position, curve, linewidth=2.2 if i == 0 else 1.0, alpha=1.0 if i == 0 else 0.7, label=label)
    err = np.vstack([np.asarray(value) - np.asarray(low), np.asarray(high) - np.asarray(value)])
    ax.errorbar(
        position, value, yerr=np.nan_to_num(err), fmt="o", color="black", capsize=3, zorder=5,
        label=f"estimated ({100 * confidence:g}% CI)",
    )  # fmt: skip
    return _save_labelled(
        fig,
        ax,
        path,
        "position r",
        "examination relative to position 1, D(r)",
        "the discount the users imply",
    )
