"""Do the metrics agree? Rank correlations of the system rankings, per-query correlations, discriminative power.

From the per-query values of ≥ 2 systems on the same queries (``system → DataFrame``: index = query id,
one column per metric, as :func:`ltr.analysis.comparison.compare` takes), :func:`metric_agreement` computes:

* **Kendall's τ** (τ-b) between the system rankings that two metrics induce (systems ordered by their
  mean): ``τ = (C − D) / √((P − T_x)(P − T_y))`` over the ``P = N(N−1)/2`` system pairs, ``C``/``D``
  concordant/discordant pairs, ``T_x``/``T_y`` pairs tied in one ranking (= :func:`scipy.stats.kendalltau`).
* **τ_AP** (Yilmaz, Aslam & Robertson, SIGIR 2008), which weighs swaps near the top more:
  ``τ_AP(ref, other) = 2/(N−1) · Σ_{i=2..N} C(i)/(i−1) − 1``, where the systems are listed by ``other``
  (best first) and ``C(i)`` counts the systems above position ``i`` that ``ref`` also ranks above the
  system at ``i``. It is asymmetric: ``tau_ap[i, j]`` takes metric ``i``'s ranking as the reference and
  metric ``j``'s as the one judged. Ties (equal means) are ordered by system order in both rankings.
* **Per-query Pearson and Spearman correlations** between two metrics over all (system, query) values,
  each with a seeded percentile bootstrap CI that resamples queries (every system's value of a drawn
  query moves together).
* **Discriminative power** (Sakai, SIGIR 2006): for each metric, the share of the ``N(N−1)/2`` system
  pairs whose paired test (``randomization``: sign-flip, exact for ≤ 20 queries; or ``t``; both from
  :mod:`ltr.stats`) gives an achieved significance level (p-value) below ``alpha``; the sorted p-values
  are the ASL curve (:func:`ltr.report.plots.plot_asl_curves`). No multiple-comparison correction, as in Sakai.

Only queries that every system scored under every metric are used (NaN = skipped); ``n_dropped`` says
how many were left out.

>>> import numpy as np, pandas as pd
>>> rng = np.random.default_rng(0)
>>> q = [f"q{i}" for i in range(50)]
>>> frames = {f"s{k}": pd.DataFrame({"a": rng.random(50) + 0.1 * k, "b": rng.random(50) + 0.1 * k},
...                                  index=q) for k in range(4)}
>>> agr = metric_agreement(frames, B=200)
>>> agr.systems, agr.metrics, agr.n_queries
(('s0', 's1', 's2', 's3'), ('a', 'b'), 50)
>>> float(agr.kendall_tau[0, 1]), float(agr.tau_ap[0, 1]), len(agr.pairs)
(1.0, 1.0, 6)
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from ltr.analysis.comparison import PAIRED_TESTS, dropped_words, paired_pvalue
from ltr.core.errors import ConfigError, DataError
from ltr.stats._validate import check_B, check_choice, check_level, check_seed


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's τ-b between two score vectors over the same items (NaN if either is constant).

    >>> kendall_tau([1, 2, 3, 4], [1, 2, 4, 3])
    0.6666666666666666
    """
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise DataError(f"kendall_tau: need two 1-D arrays of equal length, got {a.shape} and {b.shape}")
    i, j = np.triu_indices(a.shape[0], k=1)
    sa, sb = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
    untied_a, untied_b = np.count_nonzero(sa), np.count_nonzero(sb)
    if untied_a == 0 or untied_b == 0:
        return float("nan")
    return float(np.sum(sa * sb) / np.sqrt(float(untied_a) * float(untied_b)))


def _positions(scores: np.ndarray) -> np.ndarray:
    """Rank position (0 = best = highest score) of each item; ties keep the items' order."""
    order = np.argsort(-scores, kind="stable")
    pos = np.empty(scores.shape[0], dtype=int)
    pos[order] = np.arange(scores.shape[0])
    return pos


def tau_ap(reference: Sequence[float], other: Sequence[float]) -> float:
    """τ_AP of the ranking by ``other`` against the ranking by ``reference`` (higher score = better).

    Identical rankings give 1, reversed ones −1; a swap at the top costs more than one at the bottom:

    >>> tau_ap([4, 3, 2, 1], [3, 4, 2, 1]), tau_ap([4, 3, 2, 1], [4, 3, 1, 2])
    (0.33333333333333326, 0.7777777777777777)
    """
    ref, oth = np.asarray(reference, dtype=float), np.asarray(other, dtype=float)
    if ref.shape != oth.shape or ref.ndim != 1 or ref.shape[0] < 2:
        raise DataError(
            f"tau_ap: need two 1-D arrays of ≥ 2 equal-length scores, got {ref.shape}, {oth.shape}"
        )
    n = ref.shape[0]
    ref_pos = _positions(ref)
    listed = np.argsort(-oth, kind="stable")
    total = 0.0
    for i in range(1, n):
        above = listed[:i]
        total += np.count_nonzero(ref_pos[above] < ref_pos[listed[i]]) / i
    return float(2.0 * total / (n - 1) - 1.0)


def _pearson_columns(values: np.ndarray) -> np.ndarray:
    """Pearson correlation matrix of the columns of ``values`` (rows = observations)."""
    centred = values - values.mean(axis=0)
    norms = np.sqrt((centred**2).sum(axis=0))
    with np.errstate(divide="ignore", invalid="ignore"):
        return (centred.T @ centred) / np.outer(norms, norms)


def _spearman_columns(values: np.ndarray) -> np.ndarray:
    """Spearman's ρ matrix: Pearson of the average ranks of each column."""
    return _pearson_columns(scipy_stats.rankdata(values, axis=0))


@dataclass(frozen=True, slots=True)
class MetricAgreement:
    """Result of :func:`metric_agreement`; matrices are ``metrics × metrics`` in ``metrics`` order."""

    systems: tuple[str, ...]
    metrics: tuple[str, ...]
    n_queries: int
    n_dropped: int
    #: of ``n_dropped``, the queries every system skipped under the same metrics (undefined for them)
    n_skipped_by_all: int
    means: np.ndarray  # systems × metrics
    kendall_tau: np.ndarray
    tau_ap: np.ndarray  # [i, j]: metric i's ranking is the reference
    pearson: np.ndarray
    pearson_ci: tuple[np.ndarray, np.ndarray]
    spearman: np.ndarray
    spearman_ci: tuple[np.ndarray, np.ndarray]
    pairs: tuple[tuple[str, str], ...]
    pvalues: np.ndarray  # metrics × pairs
    alpha: float
    confidence: float
    test: str
    B: int
    seed: int

    @property
    def discriminative_power(self) -> dict[str, float]:
        """Share of system pairs with p < alpha, per metric."""
        return {m: float(np.mean(self.pvalues[i] < self.alpha)) for i, m in enumerate(self.metrics)}

    def asl_curves(self) -> dict[str, np.ndarray]:
        """Per metric, the p-values of all system pairs sorted ascending (Sakai's ASL curve)."""
        return {m: np.sort(self.pvalues[i]) for i, m in enumerate(self.metrics)}

    def to_frame(self) -> pd.DataFrame:
        """One row per metric pair (``a`` < ``b`` in metric order): τ, τ_AP both ways, Pearson and
        Spearman with CI bounds."""
        rows = []
        for i, j in combinations(range(len(self.metrics)), 2):
            rows.append(
                {
                    "metric_a": self.metrics[i],
                    "metric_b": self.metrics[j],
                    "kendall_tau": self.kendall_tau[i, j],
                    "tau_ap_a_ref": self.tau_ap[i, j],
                    "tau_ap_b_ref": self.tau_ap[j, i],
                    "pearson": self.pearson[i, j],
                    "pearson_ci_low": self.pearson_ci[0][i, j],
                    "pearson_ci_high": self.pearson_ci[1][i, j],
                    "spearman": self.spearman[i, j],
                    "spearman_ci_low": self.spearman_ci[0][i, j],
                    "spearman_ci_high": self.spearman_ci[1][i, j],
                }
            )
        return pd.DataFrame.from_records(rows)

    def summary_line(self, primary: str) -> str:
        """One line for a console summary: Kendall's τ between the system ranking by ``primary`` and by
        each other metric, and per metric how many system pairs differ at ``alpha`` (uncorrected).

        >>> import numpy as np, pandas as pd
        >>> q = range(40)
        >>> rng = np.random.default_rng(0)
        >>> frames = {s: pd.DataFrame({"ndcg@10": rng.random(40) + d, "map": rng.random(40) + d}, index=q)
        ...           for s, d in (("a", 0.0), ("b", 0.3), ("c", 0.6))}
        >>> metric_agreement(frames, B=100, seed=0).summary_line("ndcg@10")
        "Metric agreement: Kendall's τ of the system rankings, ndcg@10 vs map 1.00; system pairs with p < 0.05 (paired randomisation test, uncorrected): ndcg@10 3/3, map 3/3."
        """
        i = self.metrics.index(primary)
        test = "paired randomisation test" if self.test == "randomization" else "paired t-test"
        taus = ", ".join(f"{m} {self.kendall_tau[i, j]:.2f}" for j, m in enumerate(self.metrics) if j != i)
        pairs = ", ".join(
            f"{m} {int(np.sum(self.pvalues[k] < self.alpha))}/{len(self.pairs)}"
            for k, m in enumerate(self.metrics)
        )
        rankings = f"Kendall's τ of the system rankings, {primary} vs {taus}; " if taus else ""
        return f"Metric agreement: {rankings}system pairs with p < {self.alpha:g} ({test}, uncorrected): {pairs}."

    def to_markdown(self) -> str:
        """Two Markdown tables (metric pairs; discriminative power per metric) and their legend."""
        pct = f"{self.confidence * 100:.10g}%"
        lines = [
            "## Metric agreement",
            "",
            f"{len(self.systems)} systems, {self.n_queries} queries"
            + (f" ({dropped_words(self.n_dropped, self.n_skipped_by_all)})" if self.n_dropped else "")
            + f". τ = Kendall's τ-b between the system rankings by mean; τ_AP (a→b) takes a's ranking as "
            f"the reference (Yilmaz et al. 2008). Pearson/Spearman over all (system, query) values with "
            f"{pct} percentile bootstrap CIs over queries (B = {self.B:,}, seed {self.seed}).",
            "",
            "| metric a | metric b | τ | τ_AP (a→b) | τ_AP (b→a) | Pearson [CI] | Spearman [CI] |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for r in self.to_frame().itertuples(index=False):
            lines.append(
                f"| {_cell(r.metric_a)} | {_cell(r.metric_b)} | {r.kendall_tau:.3f} | {r.tau_ap_a_ref:.3f} | "
                f"{r.tau_ap_b_ref:.3f} | {r.pearson:.3f} [{r.pearson_ci_low:.3f}, {r.pearson_ci_high:.3f}] | "
                f"{r.spearman:.3f} [{r.spearman_ci_low:.3f}, {r.spearman_ci_high:.3f}] |"
            )
        test = "paired randomisation test" if self.test == "randomization" else "paired t-test"
        lines += [
            "",
            f"Discriminative power (Sakai 2006): share of the {len(self.pairs)} system pairs with p < "
            f"{self.alpha:g} ({test}, uncorrected).",
            "",
            "| metric | discriminative power | significant pairs | median p |",
            "|---|---:|---:|---:|",
        ]
        for i, m in enumerate(self.metrics):
            hits = int(np.sum(self.pvalues[i] < self.alpha))
            lines.append(
                f"| {_cell(m)} | {self.discriminative_power[m]:.3f} | {hits}/{len(self.pairs)} | "
                f"{float(np.median(self.pvalues[i])):.4f} |"
            )
        return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def _common_values(
    per_query: Mapping[str, pd.DataFrame], metrics: Sequence[str]
) -> tuple[np.ndarray, tuple[int, int]]:
    """``values[system, query, metric]`` over the queries every system scored under every metric, and
    (queries dropped, of those the ones every system skipped under the same metrics)."""
    systems = list(per_query)
    order = per_query[systems[0]].index
    cubes = []
    for s in systems:
        frame = per_query[s]
        if not isinstance(frame, pd.DataFrame):
            raise DataError(
                f"system {s!r}: expected a DataFrame indexed by query id, got {type(frame).__name__}"
            )
        if set(frame.index) != set(order) or frame.index.has_duplicates:
            raise DataError(
                f"system {s!r} was not scored on the same (unique) query ids as {systems[0]!r}; "
                "metric agreement pairs systems by query"
            )
        missing = [m for m in metrics if m not in frame.columns]
        if missing:
            raise DataError(
                f"system {s!r} has no values for metric {missing[0]!r}; it has: {', '.join(map(str, frame.columns))}"
            )
        cubes.append(frame.loc[order, list(metrics)].to_numpy(dtype=float, na_value=np.nan))
    cube = np.stack(cubes)
    nan = np.isnan(cube)
    scored = ~nan.any(axis=(0, 2))
    # a query every system skipped under the same metrics: the metric, not a system, left it out
    by_metric = ~scored & (nan == nan[:1]).all(axis=(0, 2))
    return cube[:, scored, :], (int((~scored).sum()), int(by_metric.sum()))


def metric_agreement(
    per_query: Mapping[str, pd.DataFrame],
    *,
    metrics: Sequence[str] | None = None,
    lower_is_better: Collection[str] = (),
    alpha: float = 0.05,
    confidence: float = 0.95,
    test: str = "randomization",
    B: int = 1000,
    test_B: int = 10_000,
    seed: int = 0,
) -> MetricAgreement:
    """Agreement between ≥ 2 metrics over ≥ 2 systems (see the module docstring).

    ``B`` is the number of bootstrap resamples for the correlation CIs; ``test_B`` the number of sign
    vectors of the randomisation test (exact for ≤ 20 queries). ``lower_is_better`` metrics are negated
    before ranking systems.
    """
    if not isinstance(per_query, Mapping) or len(per_query) < 2:
        raise DataError("metric agreement needs a mapping of at least 2 systems to their per-query frames")
    check_choice("test", test, PAIRED_TESTS)
    alpha, confidence = check_level("alpha", alpha), check_level("confidence", confidence)
    B, test_B, seed = check_B(B), check_B(test_B), check_seed(seed)
    first = next(iter(per_query.values()))
    names = [str(m) for m in (metrics if metrics is not None else list(first.columns))]
    if len(names) < 2 or len(set(names)) != len(names):
        raise ConfigError(f"metric agreement needs ≥ 2 distinct metrics, got {names}")
    unknown = set(lower_is_better) - set(names)
    if unknown:
        raise ConfigError(f"lower_is_better names {sorted(unknown)}, not among the metrics {names}")
    systems = tuple(str(s) for s in per_query)
    cube, dropped = _common_values(per_query, names)
    n_sys, n_q, n_m = cube.shape
    if n_q < 2:
        raise DataError(
            f"metric agreement: only {n_q} queries are scored by every system and metric; need ≥ 2"
        )
    sign = np.array([-1.0 if m in lower_is_better else 1.0 for m in names])
    means = cube.mean(axis=1)
    oriented = means * sign
    tau = np.ones((n_m, n_m))
    tap = np.ones((n_m, n_m))
    for i in range(n_m):
        for j in range(n_m):
            if i != j:
                tau[i, j] = kendall_tau(oriented[:, i], oriented[:, j])
                tap[i, j] = tau_ap(oriented[:, i], oriented[:, j])
    pooled = cube.reshape(n_sys * n_q, n_m)
    pearson, spearman = _pearson_columns(pooled), _spearman_columns(pooled)
    rng = np.random.default_rng(seed)
    boot_p = np.empty((B, n_m, n_m))
    boot_s = np.empty((B, n_m, n_m))
    for b in range(B):
        sample = cube[:, rng.integers(0, n_q, n_q), :].reshape(n_sys * n_q, n_m)
        boot_p[b], boot_s[b] = _pearson_columns(sample), _spearman_columns(sample)
    tail = (1.0 - confidence) / 2.0
    # a metric constant over every resample (e.g. P_1000 on short runs) has no correlation: its CI is NaN,
    # as the point value is; numpy warns "All-NaN slice" for it, which is no news on valid input
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "All-NaN slice encountered", RuntimeWarning)
        p_ci = (np.nanquantile(boot_p, tail, axis=0), np.nanquantile(boot_p, 1 - tail, axis=0))
        s_ci = (np.nanquantile(boot_s, tail, axis=0), np.nanquantile(boot_s, 1 - tail, axis=0))
    pairs = tuple(combinations(range(n_sys), 2))
    pvalues = np.empty((n_m, len(pairs)))
    for i in range(n_m):
        for k, (a, b) in enumerate(pairs):
            pvalues[i, k] = paired_pvalue(cube[a, :, i], cube[b, :, i], test=test, B=test_B, seed=seed)
    return MetricAgreement(
        systems=systems,
        metrics=tuple(names),
        n_queries=n_q,
        n_dropped=dropped[0],
        n_skipped_by_all=dropped[1],
        means=means,
        kendall_tau=tau,
        tau_ap=tap,
        pearson=pearson,
        pearson_ci=p_ci,
        spearman=spearman,
        spearman_ci=s_ci,
        pairs=tuple((systems[a], systems[b]) for a, b in pairs),
        pvalues=pvalues,
        alpha=alpha,
        confidence=confidence,
        test=test,
        B=B,
        seed=seed,
    )
