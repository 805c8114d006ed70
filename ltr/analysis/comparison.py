"""Compare ≥ 2 systems on the same queries: ``compare()`` → an immutable :class:`ComparisonReport`.

For every metric and every system the report holds the mean over queries with its bootstrap CI; for
every system other than the baseline also the paired difference ``mean(system) − mean(baseline)`` with
its bootstrap CI, a paired two-sided p-value (randomisation test by default, or t-test), the p-value
adjusted within the metric's family of ``k − 1`` comparisons with the baseline (Holm by default, BH as
option), whether it is significant at ``alpha``, the paired effect size ``d̄ / s_d`` and win/tie/loss
counts. All numbers come from :mod:`ltr.stats` with the same ``seed`` (common random numbers).

Query sets. Each system's per-query values carry query ids (a DataFrame index, or ``query_ids``).
Systems scored on different query sets are refused with :class:`~ltr.core.errors.DataError` naming the
systems and how many queries differ. NaN marks a query a system skipped (e.g. no relevant document):
per metric, only the queries that **every** system scored are compared, and the report says how many
were dropped (``n_dropped``) and how many of those no system scored (``n_skipped_by_all``: the metric is
undefined for them, e.g. no relevant document under ``no_relevant=skip``).

>>> import numpy as np, pandas as pd
>>> rng = np.random.default_rng(0)
>>> q = [f"q{i}" for i in range(200)]
>>> base = pd.DataFrame({"ndcg@10": rng.random(200)}, index=q)
>>> better = base + 0.05 + pd.DataFrame({"ndcg@10": rng.normal(0, 0.05, 200)}, index=q)
>>> rep = compare({"bm25": base, "lambdamart": better}, baseline="bm25", B=2000)
>>> r = rep.row("lambdamart", "ndcg@10")
>>> r.n_queries, r.significant, round(r.diff, 3), rep.best("ndcg@10")
(200, True, 0.046, 'lambdamart')
"""

from __future__ import annotations

import csv
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ltr.core.config_check import Constraint, check_value
from ltr.core.errors import ConfigError, DataError
from ltr.stats import (
    HSDResult,
    adjust_pvalues,
    bootstrap_ci,
    effect_size,
    paired_bootstrap_ci,
    paired_t_test,
    randomization_test,
    tukey_hsd,
    win_tie_loss,
)
from ltr.stats._validate import check_B, check_choice, check_level, check_seed, check_tolerance
from ltr.stats.bootstrap import CI_METHODS, CIMethod
from ltr.stats.corrections import CORRECTIONS, Correction
from ltr.stats.paired import PAIRED_TESTS, PairedTest
from ltr.stats.risk import check_alpha, georisk, trisk

PerQuery = Mapping[str, pd.DataFrame] | Mapping[str, Mapping[str, ArrayLike]]
TEST_NAMES = {"randomization": "paired randomisation test", "t": "paired t-test"}
CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini–Hochberg", "bonferroni": "Bonferroni"}


@dataclass(frozen=True, slots=True)
class ComparisonRow:
    """One system × metric. For the baseline's own rows the difference, p-value and effect-size fields
    are NaN and the win/tie/loss counts are ``None``."""

    system: str
    metric: str
    is_baseline: bool
    mean: float
    ci_low: float
    ci_high: float
    diff: float
    diff_ci_low: float
    diff_ci_high: float
    pvalue: float
    pvalue_adjusted: float
    significant: bool
    effect_size: float
    wins: int | None
    ties: int | None
    losses: int | None
    n_queries: int
    n_dropped: int
    #: of ``n_dropped``, the queries no system scored (the metric is undefined for them, e.g. no relevant
    #: document under ``no_relevant=skip``); the rest were scored by some systems only
    n_skipped_by_all: int = 0


@dataclass(frozen=True, slots=True)
class RiskRow:
    """Risk of one system × metric against the baseline (:mod:`ltr.stats.risk`): URisk_α, TRisk_α with its
    two-sided p-value (NaN for the baseline itself), and GeoRisk_α over all the compared systems (NaN for a
    lower-is-better metric or one with negative values, which GeoRisk does not define)."""

    system: str
    metric: str
    urisk: float
    trisk: float
    trisk_pvalue: float
    georisk: float
    n_queries: int


def dropped_words(n_dropped: int, n_skipped_by_all: int) -> str:
    """Why queries are left out of a comparison, in words that are true for both kinds.

    >>> dropped_words(14, 14)
    '14 skipped by every system: the metric is undefined for them, e.g. no relevant document'
    >>> dropped_words(5, 2)
    '2 skipped by every system: the metric is undefined for them, e.g. no relevant document; 3 not scored by every system'
    """
    parts = []
    if n_skipped_by_all:
        parts.append(
            f"{n_skipped_by_all} skipped by every system: the metric is undefined for them, e.g. no relevant document"
        )
    if n_dropped - n_skipped_by_all:
        parts.append(f"{n_dropped - n_skipped_by_all} not scored by every system")
    return "; ".join(parts)


@dataclass(frozen=True, slots=True)
class ComparisonReport:
    """Immutable result of :func:`compare`; render with ``to_frame``, ``to_markdown``, ``to_latex``, ``to_csv``."""

    rows: tuple[ComparisonRow, ...]
    systems: tuple[str, ...]
    metrics: tuple[str, ...]
    baseline: str
    ci: str
    B: int
    seed: int
    alpha: float
    confidence: float
    correction: str
    test: str
    tie_tolerance: float
    lower_is_better: frozenset[str]
    hsd: Mapping[str, HSDResult] = field(default_factory=lambda: MappingProxyType({}))
    risk: tuple[RiskRow, ...] = ()
    risk_alpha: float = 1.0

    def row(self, system: str, metric: str) -> ComparisonRow:
        """The row of ``system`` × ``metric``."""
        for r in self.rows:
            if r.system == system and r.metric == metric:
                return r
        raise DataError(
            f"no row for system {system!r} and metric {metric!r}; systems: {', '.join(self.systems)}; "
            f"metrics: {', '.join(self.metrics)}"
        )

    def best(self, metric: str) -> str:
        """System with the best mean for ``metric`` (highest, or lowest for ``lower_is_better`` metrics)."""
        rows = [self.row(s, metric) for s in self.systems]
        key = min if metric in self.lower_is_better else max
        return key(rows, key=lambda r: r.mean).system

    # ---- renderers -----------------------------------------------------------------------------------

    def to_frame(self) -> pd.DataFrame:
        """One row per (system, metric) — a MultiIndex — and one column per field of :class:`ComparisonRow`."""
        records = [{f: getattr(r, f) for f in ComparisonRow.__slots__} for r in self.rows]
        frame = pd.DataFrame.from_records(records)
        for col in ("wins", "ties", "losses"):
            frame[col] = frame[col].astype("Int64")
        return frame.set_index(["system", "metric"])

    def to_csv(self, path: str | Path) -> Path:
        """Write :meth:`to_frame` (index as columns) to ``path`` as CSV; returns the path."""
        path = Path(path)
        self.to_frame().reset_index().to_csv(path, index=False, quoting=csv.QUOTE_MINIMAL)
        return path

    def best_systems(self, metric: str, decimals: int) -> set[str]:
        """Systems whose mean of ``metric``, rounded to ``decimals``, equals the best one's (the bold cells)."""
        best = round(self.row(self.best(metric), metric).mean, decimals)
        return {s for s in self.systems if round(self.row(s, metric).mean, decimals) == best}

    def legend(self, *, dagger: str = "†", brief: bool = False) -> str:
        """Plain-text legend: what the marks, brackets and counts mean, with every setting used.
        ``brief``: the same facts in fewer words (the one-screen summary of ``ltr.compare``)."""
        ci = "BCa" if self.ci == "bca" else "percentile"
        correction = (
            "not corrected for multiple comparisons"
            if self.correction == "none"
            else f"{CORRECTION_NAMES[self.correction]}-corrected over the {len(self.systems) - 1} "
            "comparisons per metric"
        )
        rows = [self.row(self.baseline, m) for m in self.metrics]

        def count(r: ComparisonRow) -> str:
            return f"{r.n_queries} queries" + (
                f" ({dropped_words(r.n_dropped, r.n_skipped_by_all)})" if r.n_dropped else ""
            )

        if len(rows) > 1 and len({count(r) for r in rows}) == 1:  # one count when all compared the same
            counts = f"every metric: {count(rows[0])}"
        else:
            counts = "; ".join(f"{m}: {count(r)}" for m, r in zip(self.metrics, rows, strict=True))
        if brief:
            correction = "uncorrected" if self.correction == "none" else CORRECTION_NAMES[self.correction]
            return (
                f"{dagger} differs from {self.baseline} ({TEST_NAMES[self.test]}, {correction}, "
                f"α = {self.alpha:g}); bold: best; brackets: {_percent(self.confidence)} {ci} CI over "
                f"queries; {counts}."
            )
        return (
            f"Bold: best mean per metric. {dagger} significantly different from the baseline {self.baseline} "
            f"({TEST_NAMES[self.test]}, {correction}, alpha = {self.alpha:g}). Brackets: "
            f"{_percent(self.confidence)} {ci} bootstrap CI over queries (B = {self.B:,}, seed {self.seed}). {counts}."
        )

    def to_markdown(self, *, decimals: int = 4, detail: bool = False) -> str:
        """GitHub Markdown. Default: a leaderboard (systems × metrics; cell ``mean [CI]``, best in bold,
        ``†`` = significant vs baseline) and a legend. ``detail=True`` adds one table per metric with the
        difference, its CI, raw and adjusted p-values, effect size, W/T/L and query counts."""
        f = _fmt(decimals)
        header = ["system", *(_md_escape(m) for m in self.metrics)]
        lines = [_md_row(header), _md_row(["---", *["---:"] * len(self.metrics)])]
        for s in self.systems:
            cells = [_md_escape(s) + (" (baseline)" if s == self.baseline else "")]
            for m in self.metrics:
                r = self.row(s, m)
                mean = f"**{f(r.mean)}**" if s in self.best_systems(m, decimals) else f(r.mean)
                cells.append(f"{mean}{'†' if r.significant else ''} [{f(r.ci_low)}, {f(r.ci_high)}]")
            lines.append(_md_row(cells))
        lines += ["", self.legend()]
        leaderboard = "\n".join(lines) + "\n"
        return leaderboard + "\n" + self.detail_markdown(decimals=decimals) if detail else leaderboard

    def detail_markdown(self, *, decimals: int = 4) -> str:
        """GitHub Markdown: per metric, each system against the baseline (difference and its CI, raw and
        adjusted p-values, effect size, W/T/L, query counts), and the all-pairs HSD table when computed."""
        f = _fmt(decimals)
        lines = [
            f"Detail: Δ = system − baseline with its {_percent(self.confidence)} bootstrap CI; p raw and adjusted; "
            f"d = paired Cohen's d (mean / sd of per-query differences); W/T/L = queries where the system "
            f"beats the baseline by more than {self.tie_tolerance:g}, is within it, or loses by more.",
        ]
        for m in self.metrics:
            lines += ["", f"**{_md_escape(m)}** vs {_md_escape(self.baseline)}", ""]
            lines += [_md_row(_DETAIL_HEADER), _md_row(["---", *["---:"] * (len(_DETAIL_HEADER) - 1)])]
            for s in self.systems:
                if s != self.baseline:
                    lines.append(_md_row([_md_escape(s), *_detail_cells(self.row(s, m), f)]))
            if m in self.hsd:
                lines += ["", *_hsd_table(self.hsd[m])]
        risk = self.risk_markdown(decimals=decimals)
        return "\n".join(lines) + "\n" + ("\n" + risk if risk else "")

    def risk_frame(self) -> pd.DataFrame:
        """One row per (system, metric) of :attr:`risk` (columns: the fields of :class:`RiskRow`)."""
        return pd.DataFrame.from_records([{f: getattr(r, f) for f in RiskRow.__slots__} for r in self.risk])

    def risk_markdown(self, *, decimals: int = 4) -> str:
        """GitHub Markdown: per metric, each system's URisk, TRisk (p) and GeoRisk, with the formulas' α."""
        if not self.risk:
            return ""
        f = _fmt(decimals)
        a = f"{self.risk_alpha:g}"
        lines = [
            f"Risk (α = {a}: a loss against the baseline weighs {1 + self.risk_alpha:,.10g}×): URisk = mean of the "
            f"per-query differences with losses × {1 + self.risk_alpha:,.10g}; TRisk = URisk / its standard error "
            "(t, < −2: significantly riskier than the baseline); GeoRisk over all systems (higher is better).",
        ]
        header = ["system", f"URisk({a})", f"TRisk({a})", "p", f"GeoRisk({a})"]
        for m in self.metrics:
            lines += ["", f"**{_md_escape(m)}** vs {_md_escape(self.baseline)}", ""]
            lines += [_md_row(header), _md_row(["---", *["---:"] * (len(header) - 1)])]
            for r in self.risk:
                if r.metric == m:
                    name = _md_escape(r.system) + (" (baseline)" if r.system == self.baseline else "")
                    cells = [f(r.urisk), f"{r.trisk:.2f}", _fmt_p(r.trisk_pvalue), f(r.georisk)]
                    lines.append(_md_row([name, *["–" if c == "nan" else c for c in cells]]))
        return "\n".join(lines) + "\n"

    def risk_summary_line(self, metric: str) -> str:
        """One line: each system's URisk and TRisk (p) against the baseline on ``metric``.

        >>> import numpy as np
        >>> rep = compare({"base": {"m": np.array([0.4, 0.5, 0.6, 0.2])}, "new": {"m": np.array([0.5, 0.3, 0.8, 0.2])}},
        ...               baseline="base", query_ids=["q1", "q2", "q3", "q4"], B=200)
        >>> rep.risk_summary_line("m")
        'Risk vs base on m (α = 1, losses weigh 2×): new URisk -0.0250, TRisk -0.19 (p 0.8614).'
        """
        parts = [
            f"{r.system} URisk {r.urisk:.4f}, TRisk {r.trisk:.2f} (p {_fmt_p(r.trisk_pvalue)})"
            for r in self.risk
            if r.metric == metric and r.system != self.baseline
        ]
        return (
            f"Risk vs {self.baseline} on {metric} (α = {self.risk_alpha:g}, losses weigh {1 + self.risk_alpha:,.10g}×): "
            + "; ".join(parts)
            + "."
        )

    def to_latex(
        self, *, decimals: int = 4, ci: bool = True, caption: str | None = None, label: str | None = None
    ) -> str:
        """A booktabs ``table`` (systems × metrics): ``\\textbf`` for the best mean, ``$^\\dagger$`` for a
        significant difference from the baseline, optional CI below each mean, legend in the caption.
        System and metric names are escaped for LaTeX."""
        f = _fmt(decimals)
        cols = "l" + "r" * len(self.metrics)
        out = ["\\begin{table}[t]", "\\centering", f"\\begin{{tabular}}{{{cols}}}", "\\toprule"]
        out.append(" & ".join(["System", *(latex_escape(m) for m in self.metrics)]) + " \\\\")
        out.append("\\midrule")
        for s in self.systems:
            cells = [latex_escape(s) + (" (baseline)" if s == self.baseline else "")]
            for m in self.metrics:
                r = self.row(s, m)
                mean = f"\\textbf{{{f(r.mean)}}}" if s in self.best_systems(m, decimals) else f(r.mean)
                cell = mean + ("$^{\\dagger}$" if r.significant else "")
                if ci:
                    cell += f" {{\\scriptsize [{f(r.ci_low)}, {f(r.ci_high)}]}}"
                cells.append(cell)
            out.append(" & ".join(cells) + " \\\\")
        legend = latex_escape(self.legend(dagger="DAGGER")).replace("DAGGER", "$^{\\dagger}$")
        lead = caption.rstrip() if caption else ""
        if lead and lead[-1] not in ".!?":
            lead += "."
        text = (latex_escape(lead) + " " if lead else "") + legend
        out += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{text}}}"]
        if label:
            out.append(f"\\label{{{label}}}")
        out.append("\\end{table}")
        return "\n".join(out) + "\n"


_DETAIL_HEADER = ["system", "Δ mean", "Δ CI", "p", "p adj.", "sig.", "d", "W/T/L", "n", "dropped"]


def _detail_cells(r: ComparisonRow, f) -> list[str]:  # noqa: ANN001 - a formatter
    return [
        f(r.diff, sign=True),
        f"[{f(r.diff_ci_low, sign=True)}, {f(r.diff_ci_high, sign=True)}]",
        _fmt_p(r.pvalue),
        _fmt_p(r.pvalue_adjusted),
        "†" if r.significant else "",
        f"{r.effect_size:.3f}",
        f"{r.wins}/{r.ties}/{r.losses}",
        str(r.n_queries),
        str(r.n_dropped),
    ]


def _hsd_table(result: HSDResult) -> list[str]:
    """Markdown matrix of the randomised Tukey HSD p-values (all pairs, family-wise)."""
    names = [_md_escape(s) for s in result.systems]
    lines = [
        f"Randomised Tukey HSD, all pairs (family-wise p-values; B = {result.B:,}, seed {result.seed}, "
        f"{result.n} queries):",
        "",
        _md_row(["", *names]),
        _md_row(["---", *["---:"] * len(names)]),
    ]
    for i, name in enumerate(names):
        cells = ["—" if i == j else _fmt_p(float(result.pvalues[i, j])) for j in range(len(names))]
        lines.append(_md_row([name, *cells]))
    return lines


def _fmt(decimals: int):  # noqa: ANN202 - returns a formatter
    decimals = check_value(decimals, int, Constraint(low=0, high=12), "decimals")

    def f(x: float, *, sign: bool = False) -> str:
        return f"{x:+.{decimals}f}" if sign else f"{x:.{decimals}f}"

    return f


def _percent(level: float) -> str:
    """``0.95`` → ``95%``, ``0.975`` → ``97.5%`` (never rounded to a different level)."""
    return f"{level * 100:.10g}%"


def _fmt_p(p: float) -> str:
    return "<1e-4" if p < 1e-4 else f"{p:.4f}"


_MD_SPECIAL = set("\\|*_`[]<>")


def _md_escape(text: str) -> str:
    """Escape characters that Markdown tables would interpret (``|``, emphasis, links, HTML)."""
    return "".join("\\" + c if c in _MD_SPECIAL else c for c in str(text))


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


_LATEX_SPECIAL = {
    "\\": "\\textbackslash{}",
    "&": "\\&",
    "%": "\\%",
    "$": "\\$",
    "#": "\\#",
    "_": "\\_",
    "{": "\\{",
    "}": "\\}",
    "~": "\\textasciitilde{}",
    "^": "\\textasciicircum{}",
    "<": "\\textless{}",
    ">": "\\textgreater{}",
    "|": "\\textbar{}",
}


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters one by one (so an inserted ``\\`` is never escaped twice).

    >>> latex_escape("a_b & 50% {x}")
    'a\\\\_b \\\\& 50\\\\% \\\\{x\\\\}'
    """
    return "".join(_LATEX_SPECIAL.get(c, c) for c in str(text))


# ---- input normalisation ---------------------------------------------------------------------------------


def _system_tables(
    per_query: PerQuery, query_ids: Mapping[str, ArrayLike] | ArrayLike | None
) -> dict[str, tuple[pd.Index, Mapping[str, object]]]:
    """``system → (query ids, metric → raw per-query values)``; checks the ids (unique, one per value)."""
    if not isinstance(per_query, Mapping) or len(per_query) < 2:
        got = len(per_query) if isinstance(per_query, Mapping) else type(per_query).__name__
        raise DataError(
            f"compare() needs a mapping of at least 2 systems to their per-query values, got {got}"
        )
    out: dict[str, tuple[pd.Index, Mapping[str, object]]] = {}
    for system, table in per_query.items():
        name = str(system)
        if isinstance(table, pd.DataFrame):
            ids = table.index
            raw: Mapping[str, object] = {str(c): table[c] for c in table.columns}
        elif isinstance(table, Mapping):
            if query_ids is None:
                raise ConfigError(
                    f"system {name!r} is a mapping of arrays: pass query_ids (a mapping system → ids, or one "
                    "id array shared by all systems) or pass a DataFrame indexed by query id"
                )
            if isinstance(query_ids, Mapping) and system not in query_ids:
                raise ConfigError(f"query_ids has no entry for system {name!r}")
            ids = pd.Index(np.asarray(query_ids[system] if isinstance(query_ids, Mapping) else query_ids))
            raw = {str(m): v for m, v in table.items()}
        else:
            raise DataError(
                f"system {name!r}: expected a DataFrame or a mapping metric → array, got {type(table).__name__}"
            )
        if ids.has_duplicates:
            dup = ids[ids.duplicated()][0]
            raise DataError(f"system {name!r}: query id {dup!r} appears more than once")
        out[name] = (ids, raw)
    return out


def _metric_values(system: str, metric: str, n_ids: int, raw: Mapping[str, object]) -> np.ndarray:
    """The float64 per-query values of ``system`` × ``metric`` (NaN = skipped), checked."""
    if metric not in raw:
        raise DataError(f"system {system!r} has no values for metric {metric!r}; it has: {', '.join(raw)}")
    column = raw[metric]
    try:
        if isinstance(column, pd.Series):
            values = column.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            values = np.asarray(column, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise DataError(f"system {system!r}, metric {metric!r}: values must be numeric ({err})") from None
    if values.shape != (n_ids,):
        raise DataError(f"system {system!r}, metric {metric!r}: {values.shape} values for {n_ids} query ids")
    if np.isinf(values).any():
        raise DataError(
            f"system {system!r}, metric {metric!r}: ±inf values; per-query values must be finite or NaN"
        )
    return values


def _examples(ids: Collection[object], k: int = 3) -> str:
    shown = sorted(map(repr, ids))[:k]
    return ", ".join(shown) + (", …" if len(ids) > k else "")


def _check_query_sets(tables: Mapping[str, tuple[pd.Index, dict[str, np.ndarray]]], baseline: str) -> None:
    ref = set(tables[baseline][0])
    problems = []
    for system, (ids, _) in tables.items():
        own = set(ids)
        extra, missing = own - ref, ref - own
        if extra or missing:
            parts = []
            if extra:
                parts.append(f"has {len(extra)} queries the baseline lacks (e.g. {_examples(extra)})")
            if missing:
                parts.append(f"lacks {len(missing)} of the baseline's queries (e.g. {_examples(missing)})")
            problems.append(f"{system!r} {' and '.join(parts)}")
    if problems:
        raise DataError(
            f"systems were evaluated on different query sets (baseline {baseline!r} has {len(ref)} queries): "
            + "; ".join(problems)
            + ". Compare systems on the same queries (NaN marks a query a system skipped)."
        )


def compare(
    per_query: PerQuery,
    *,
    baseline: str,
    query_ids: Mapping[str, ArrayLike] | ArrayLike | None = None,
    metrics: str | Sequence[str] | None = None,
    ci: CIMethod = "bca",
    B: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    confidence: float = 0.95,
    correction: Correction = "holm",
    test: PairedTest = "randomization",
    tie_tolerance: float = 0.0,
    lower_is_better: str | Collection[str] = (),
    all_pairs: bool = False,
    risk_alpha: float = 1.0,
) -> ComparisonReport:
    """Compare systems paired by query against ``baseline`` (see the module docstring).

    ``per_query``: ``system → DataFrame`` (index = query id, one column per metric) or
    ``system → {metric: per-query array}`` together with ``query_ids`` (``system → ids`` or one shared id
    array). ``metrics`` (a name or a sequence) defaults to the baseline's metrics in their order;
    ``lower_is_better`` (a name or a collection) must name compared metrics. ``test`` is the paired test
    (``randomization``: sign-flip, exact for ≤ 20 queries; ``t``), ``correction`` the adjustment within
    each metric's family of comparisons with the baseline, ``tie_tolerance`` the win/tie/loss tolerance.
    ``all_pairs=True`` also runs a randomised Tukey HSD over all pairs of systems for each metric
    (``report.hsd[metric]``; shown by ``to_markdown(detail=True)``). ``risk_alpha``: the α of URisk, TRisk
    and GeoRisk (``report.risk``, :mod:`ltr.stats.risk`; a loss weighs 1 + α).
    """
    check_choice("ci", ci, CI_METHODS)
    check_choice("correction", correction, CORRECTIONS)
    check_choice("test", test, PAIRED_TESTS)
    B = check_B(B)
    alpha, confidence = check_level("alpha", alpha), check_level("confidence", confidence)
    seed = check_seed(seed)
    tie_tolerance = check_tolerance(tie_tolerance)
    risk_alpha = check_alpha(risk_alpha)
    tables = _system_tables(per_query, query_ids)
    if baseline not in tables:
        raise ConfigError(f"baseline={baseline!r} is not one of the systems: {', '.join(map(repr, tables))}")
    _check_query_sets(tables, baseline)
    order = tables[baseline][0]
    if metrics is None:
        metric_names = list(tables[baseline][1])
    else:
        metric_names = [metrics] if isinstance(metrics, str) else [str(m) for m in metrics]
    if len(set(metric_names)) != len(metric_names):
        dup = next(m for m in metric_names if metric_names.count(m) > 1)
        raise ConfigError(f"metrics lists {dup!r} more than once")
    if not metric_names:
        raise ConfigError("no metrics to compare (metrics is empty and the baseline has no metric columns)")
    lower = frozenset([lower_is_better] if isinstance(lower_is_better, str) else map(str, lower_is_better))
    if lower - set(metric_names):
        raise ConfigError(
            f"lower_is_better names {', '.join(map(repr, sorted(lower - set(metric_names))))}, which is not "
            f"among the compared metrics: {', '.join(map(repr, metric_names))}"
        )
    systems = list(tables)
    rows: list[ComparisonRow] = []
    risk: list[RiskRow] = []
    hsd: dict[str, HSDResult] = {}
    for metric in metric_names:
        columns = {}
        for system, (ids, values) in tables.items():
            columns[system] = _metric_values(system, metric, len(ids), values)[ids.get_indexer(order)]
        scored = np.logical_and.reduce([~np.isnan(v) for v in columns.values()])
        by_none = np.logical_and.reduce([np.isnan(v) for v in columns.values()])
        n, dropped = int(scored.sum()), (int((~scored).sum()), int(by_none.sum()))
        if n < 2:
            raise DataError(
                f"metric {metric!r}: only {n} queries are scored by every system; need at least 2"
            )
        kept = {s: v[scored] for s, v in columns.items()}
        if all_pairs:
            hsd[metric] = tukey_hsd(kept, B=B, seed=seed)
        risk.extend(_risk_rows(metric, kept, baseline, risk_alpha, lower_is_better=metric in lower))
        rows.extend(
            _metric_rows(
                metric,
                kept,
                baseline,
                dropped,
                ci=ci,
                B=B,
                seed=seed,
                alpha=alpha,
                confidence=confidence,
                correction=correction,
                test=test,
                tie_tolerance=tie_tolerance,
            )
        )
    return ComparisonReport(
        rows=tuple(rows),
        systems=tuple(systems),
        metrics=tuple(metric_names),
        baseline=baseline,
        ci=ci,
        B=B,
        seed=seed,
        alpha=alpha,
        confidence=confidence,
        correction=correction,
        test=test,
        tie_tolerance=tie_tolerance,
        lower_is_better=lower,
        hsd=MappingProxyType(hsd),
        risk=tuple(risk),
        risk_alpha=risk_alpha,
    )


def _risk_rows(
    metric: str, columns: Mapping[str, np.ndarray], baseline: str, alpha: float, *, lower_is_better: bool
) -> list[RiskRow]:
    """URisk, TRisk against ``baseline`` and GeoRisk over every system, for one metric (a lower-is-better
    metric is negated for URisk/TRisk, so a loss is still an increase; GeoRisk is then undefined)."""
    sign = -1.0 if lower_is_better else 1.0
    matrix = np.column_stack(list(columns.values()))
    geo = (
        georisk(matrix, alpha=alpha)
        if not lower_is_better and (matrix >= 0).all()
        else np.full(matrix.shape[1], math.nan)
    )
    rows = []
    for (s, values), g in zip(columns.items(), geo, strict=True):
        if s == baseline:
            u = t = p = math.nan
        else:
            test = trisk(sign * values, sign * columns[baseline], alpha=alpha)
            u, t, p = test.urisk, test.statistic, test.pvalue
        rows.append(RiskRow(s, metric, u, t, p, float(g), int(values.shape[0])))
    return rows


def paired_pvalue(a: np.ndarray, b: np.ndarray, *, test: str, B: int, seed: int) -> float:
    """Two-sided p-value of ``a`` vs ``b`` paired by query: the ``t``-test or the randomisation test."""
    if test == "t":
        return paired_t_test(a, b).pvalue
    return randomization_test(a, b, B=B, seed=seed).pvalue


def _metric_rows(
    metric: str,
    columns: Mapping[str, np.ndarray],
    baseline: str,
    dropped: tuple[int, int],
    *,
    ci: str,
    B: int,
    seed: int,
    alpha: float,
    confidence: float,
    correction: str,
    test: str,
    tie_tolerance: float,
) -> list[ComparisonRow]:
    base = columns[baseline]
    others = [s for s in columns if s != baseline]
    pvalues = [paired_pvalue(columns[s], base, test=test, B=B, seed=seed) for s in others]
    adjusted = dict(zip(others, adjust_pvalues(pvalues, correction).tolist(), strict=True))
    raw = dict(zip(others, pvalues, strict=True))
    rows = []
    for s, values in columns.items():
        mean_ci = bootstrap_ci(values, method=ci, B=B, confidence=confidence, seed=seed)
        common = dict(
            system=s,
            metric=metric,
            mean=mean_ci.estimate,
            ci_low=mean_ci.low,
            ci_high=mean_ci.high,
            n_queries=values.shape[0],
            n_dropped=dropped[0],
            n_skipped_by_all=dropped[1],
        )
        if s == baseline:
            rows.append(
                ComparisonRow(
                    is_baseline=True,
                    diff=math.nan,
                    diff_ci_low=math.nan,
                    diff_ci_high=math.nan,
                    pvalue=math.nan,
                    pvalue_adjusted=math.nan,
                    significant=False,
                    effect_size=math.nan,
                    wins=None,
                    ties=None,
                    losses=None,
                    **common,
                )
            )
            continue
        diff = paired_bootstrap_ci(values, base, method=ci, B=B, confidence=confidence, seed=seed)
        wtl = win_tie_loss(values, base, tie_tolerance=tie_tolerance)
        rows.append(
            ComparisonRow(
                is_baseline=False,
                diff=diff.estimate,
                diff_ci_low=diff.low,
                diff_ci_high=diff.high,
                pvalue=raw[s],
                pvalue_adjusted=adjusted[s],
                significant=bool(adjusted[s] < alpha),
                effect_size=effect_size(values, base).cohens_d,
                wins=wtl.wins,
                ties=wtl.ties,
                losses=wtl.losses,
                **common,
            )
        )
    return rows
