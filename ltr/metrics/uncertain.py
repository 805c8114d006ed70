"""Metrics under uncertain labels, and how much score ties can move a metric.

Labels are given as a distribution per document: ``label_probs[i, g]`` = P(label of document i = g),
shape (n_docs, n_grades), rows summing to 1, documents independent. The ranking comes from the
(fixed) scores, so for any tie convention that does not look at labels (``stable``, ``docno_*``,
``average``) DCG is linear in the gains and its expectation is exact:

    E[DCG@k] = Σ_{i<=k} E[G(l_i)] D(i),  E[G(l_i)] = Σ_g P(l_i = g) G(g)

(with ``average`` ties, E[G] of a tie group's mean). NDCG and ERR are not linear in the labels
(IDCG is random too); :func:`monte_carlo_metrics` estimates their expectation by sampling label
vectors from a seeded generator, with a normal-approximation interval from the Monte-Carlo
standard error.

:func:`tie_sensitivity` reports how many queries have tied scores inside the top k or across the
cutoff k, and the range of the mean metric between the pessimistic and optimistic tie orders.

Example
-------
>>> import numpy as np
>>> probs = np.array([[0.5, 0.5], [1.0, 0.0]])   # doc 0: grade 1 with prob 1/2; doc 1: grade 0
>>> expected_dcg("dcg@2", probs, [2.0, 1.0], [0, 2]).tolist()
[0.5]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import norm

from ltr.core.config_check import Constraint, check_value
from ltr.core.errors import MetricError
from ltr.core.ranking import check_offsets
from ltr.metrics import _kernels
from ltr.metrics.compute import ListEvaluator, RankedLists, _as_vector, evaluate, rank_lists
from ltr.metrics.conventions import resolve_conventions
from ltr.metrics.registry import parse_metric

LABEL_FREE_TIES = ("stable", "docno_desc", "docno_asc", "average")


def _as_probs(label_probs: Any, n: int | None = None) -> np.ndarray:
    p = np.asarray(label_probs, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] < 1:
        raise MetricError(f"label_probs must have shape (n_docs, n_grades), got {p.shape}")
    if n is not None and p.shape[0] != n:
        raise MetricError(f"label_probs has {p.shape[0]} rows but scores has {n}")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise MetricError("label_probs must be finite and >= 0")
    sums = p.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > 1e-9)
    if bad.size:
        raise MetricError(
            f"label_probs rows must sum to 1; label_probs[{bad[0]}] sums to {sums[bad[0]]:.12g}"
        )
    return p


def _label_free_ties(ties: str, what: str) -> None:
    if ties not in LABEL_FREE_TIES:
        raise MetricError(
            f"{what} needs a tie convention that does not look at the labels ({', '.join(LABEL_FREE_TIES)}); "
            f"got ties={ties!r}"
        )


def _prepare(
    what: str, label_probs: Any, scores: Any, offsets: Any, preset: Any, docno: Any, conventions: dict
):
    """Validated conventions, label distribution, offsets and the (label-free) ranking."""
    c = resolve_conventions(preset, **conventions)
    _label_free_ties(c.ties, what)
    sc = _as_vector(scores, None, "scores")
    probs = _as_probs(label_probs, sc.shape[0])
    off = check_offsets(offsets, sc.shape[0], "offsets")
    return c, probs, off, rank_lists(np.zeros(sc.shape[0]), sc, off, c.ties, docno)


def expected_dcg(
    name: str,
    label_probs: Any,
    scores: Any,
    offsets: Any,
    *,
    preset: str = "ltr",
    docno: Any = None,
    **conventions: Any,
) -> np.ndarray:
    """Exact per-query E[DCG@k] (``name`` = ``dcg`` or ``dcg@k``) under independent label distributions.

    >>> probs = [[0, 0, 1], [0.5, 0.5, 0]]   # E[G] = 2 and 0.5 (linear gain)
    >>> expected_dcg("dcg", probs, [1.0, 0.5], [0, 2], gain="linear").round(6).tolist()   # 2 + 0.5/log2(3)
    [2.315465]
    >>> expected_dcg("dcg", probs, [1.0, 1.0], [0, 2], gain="linear").round(6).tolist()   # tied: 1.25 (1 + 1/log2(3))
    [2.038662]
    """
    spec = parse_metric(name)
    if spec.family != "dcg":
        raise MetricError(f"expected_dcg computes dcg / dcg@k exactly, got {name!r}; use monte_carlo_metrics")
    c, probs, off, ranked = _prepare("expected_dcg", label_probs, scores, offsets, preset, docno, conventions)
    grade_gain = c.gain_values(np.arange(probs.shape[1], dtype=np.float64))
    expected_gain = probs @ grade_gain
    sizes = np.diff(off)
    k = spec.k if spec.k is not None else (c.default_k or int(sizes.max(initial=1)))
    disc = c.discounts(max(int(sizes.max(initial=1)), 1))
    return _kernels.discounted_sum(expected_gain[ranked.order], ranked.bounds, ranked.qgrp, off, disc, k)


@dataclass(frozen=True)
class MonteCarloEstimate:
    """Monte-Carlo estimate of E[metric] per query and of E[mean over queries].

    ``values[q]`` estimates E[metric of query q] over the samples where the query is defined
    (``defined[q]`` = that fraction; under ``no_relevant="skip"`` a sample without relevant
    document is left out); ``stderr[q]`` is its Monte-Carlo standard error. ``mean`` estimates the
    expected mean over queries (NaN-ignoring within each sample), with the interval
    [``mean_low``, ``mean_high``] at ``confidence``.
    """

    name: str
    values: np.ndarray
    stderr: np.ndarray
    defined: np.ndarray
    mean: float
    mean_low: float
    mean_high: float
    n_samples: int
    seed: int
    confidence: float

    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-query (low, high) normal-approximation interval at ``confidence``."""
        z = norm.ppf(0.5 + self.confidence / 2)
        return self.values - z * self.stderr, self.values + z * self.stderr


def sample_labels(label_probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One label vector drawn from independent per-document categorical distributions.

    >>> sample_labels(np.array([[0.0, 1.0], [1.0, 0.0]]), np.random.default_rng(0)).tolist()
    [1.0, 0.0]
    """
    cum = np.cumsum(label_probs, axis=1)
    u = rng.random(label_probs.shape[0])[:, None] * cum[:, -1:]
    return (u >= cum).sum(axis=1).astype(np.float64)


def monte_carlo_metrics(
    names: str | list[str],
    label_probs: Any,
    scores: Any,
    offsets: Any,
    *,
    n_samples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    preset: str = "ltr",
    docno: Any = None,
    **conventions: Any,
) -> dict[str, MonteCarloEstimate]:
    """Seeded Monte-Carlo expectation of each metric (NDCG, ERR, …) under uncertain labels.

    The ranking is computed once (ties must not depend on labels); each sample draws a label vector
    and evaluates every metric on it with the same kernels as :func:`~ltr.metrics.evaluate`.

    >>> probs = np.array([[0.5, 0.5], [0.5, 0.5]])
    >>> est = monte_carlo_metrics("ndcg", probs, [2.0, 1.0], [0, 2], n_samples=2000, seed=1)["ndcg"]
    >>> # exact: defined with probability 3/4, E[NDCG | defined] = (1 + 1/log2(3) + 1) / 3 = 0.877
    >>> bool(abs(est.values[0] - 0.877) < 0.03), bool(abs(est.defined[0] - 0.75) < 0.03)
    (True, True)
    """
    if isinstance(names, str):
        names = [names]
    elif not isinstance(names, Iterable):
        raise MetricError(f"names must be a metric name or a sequence of names, got {type(names).__name__}")
    specs = {parse_metric(n).name: parse_metric(n) for n in names}
    if not specs:
        raise MetricError("monte_carlo_metrics() needs at least one metric name")
    n_samples = check_value(n_samples, int, Constraint(low=2), "n_samples", error=MetricError)
    confidence = check_value(
        confidence,
        float,
        Constraint(low=0.0, high=1.0, open_low=True, open_high=True),
        "confidence",
        error=MetricError,
    )
    seed = check_value(seed, int, Constraint(low=0), "seed", error=MetricError)
    c, probs, off, ranked = _prepare(
        "monte_carlo_metrics", label_probs, scores, offsets, preset, docno, conventions
    )
    rng = np.random.default_rng(seed)
    n_q = off.shape[0] - 1
    sums = {n: np.zeros(n_q) for n in specs}
    squares = {n: np.zeros(n_q) for n in specs}
    counts = {n: np.zeros(n_q) for n in specs}
    means = {n: np.empty(n_samples) for n in specs}
    for s in range(n_samples):
        labels = sample_labels(probs, rng)
        sampled = RankedLists(
            ranked.order, labels[ranked.order], ranked.bounds, ranked.qgrp, ranked.offsets, ranked.sizes
        )
        ev = ListEvaluator(c, sampled, labels, off)
        for name, spec in specs.items():
            v = ev.values(spec)
            ok = ~np.isnan(v)
            sums[name][ok] += v[ok]
            squares[name][ok] += v[ok] ** 2
            counts[name] += ok
            means[name][s] = v[ok].mean() if ok.any() else np.nan
    z = norm.ppf(0.5 + confidence / 2)
    out = {}
    for name in specs:
        n = counts[name]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_q = np.where(n > 0, sums[name] / n, np.nan)
            var_q = np.where(n > 1, (squares[name] - n * mean_q**2) / (n - 1), np.nan)
            stderr = np.sqrt(np.maximum(var_q, 0.0) / n)
        m = means[name][~np.isnan(means[name])]
        centre = float(m.mean()) if m.size else float("nan")
        half = float(z * m.std(ddof=1) / np.sqrt(m.size)) if m.size > 1 else float("nan")
        out[name] = MonteCarloEstimate(
            name,
            mean_q,
            stderr,
            n / n_samples,
            centre,
            centre - half,
            centre + half,
            int(n_samples),
            int(seed),
            confidence,
        )
    return out


@dataclass(frozen=True)
class TieSensitivity:
    """How much tied scores can move a metric.

    ``k`` is the cutoff used (from the name, else the preset's ``default_k``, else None = whole list);
    ``n_ties_in_top_k``: queries where a group of two or more tied documents reaches into the top k
    (the tie convention decides order or membership of the top k, so it can change the metric);
    ``n_ties_crossing_k``: the subset whose tie group straddles the cutoff (which documents enter the
    top k depends on the convention). ``pessimistic`` / ``average`` / ``optimistic``: the mean metric
    under each tie order, so ``optimistic − pessimistic`` is the largest change ties can make.
    """

    name: str
    k: int | None
    n_queries: int
    n_ties_in_top_k: int
    n_ties_crossing_k: int
    pessimistic: float
    average: float
    optimistic: float

    @property
    def spread(self) -> float:
        """optimistic − pessimistic mean."""
        return self.optimistic - self.pessimistic


def tie_sensitivity(
    name: str, labels: Any, scores: Any, offsets: Any, *, preset: str = "ltr", **conventions: Any
) -> TieSensitivity:
    """Tie report for one metric (``k`` from the name; whole list without ``@k``).

    >>> r = tie_sensitivity("ndcg@1", [0, 1, 2, 0], [1.0, 1.0, 0.5, 0.2], [0, 2, 4])
    >>> r.n_ties_in_top_k, r.n_ties_crossing_k, r.pessimistic, r.optimistic
    (1, 1, 0.5, 1.0)
    """
    spec = parse_metric(name)
    if "ties" in conventions:
        raise MetricError("tie_sensitivity varies the tie convention itself; do not pass ties=")
    sc = _as_vector(scores, None, "scores")
    off = check_offsets(offsets, sc.shape[0], "offsets")
    lab = _as_vector(labels, sc.shape[0], "labels", ref="scores")
    ranked = rank_lists(lab, sc, off, "average")
    default_k = resolve_conventions(preset, **conventions).default_k
    k = spec.k if spec.k is not None else (default_k or int(np.diff(off).max(initial=0)))
    in_top = np.zeros(off.shape[0] - 1, dtype=bool)
    crossing = np.zeros(off.shape[0] - 1, dtype=bool)
    starts = ranked.bounds[:-1]
    sizes = np.diff(ranked.bounds)
    query_of_group = np.repeat(np.arange(off.shape[0] - 1), np.diff(ranked.qgrp))
    pos = starts - ranked.offsets[query_of_group]
    tied = sizes > 1
    in_top[query_of_group[tied & (pos < k)]] = True
    crossing[query_of_group[tied & (pos < k) & (pos + sizes > k)]] = True
    means = {}
    for ties in ("pessimistic", "average", "optimistic"):
        v = evaluate(spec.name, lab, sc, off, preset=preset, ties=ties, **conventions)[spec.name]
        means[ties] = float(np.nanmean(v)) if np.any(~np.isnan(v)) else float("nan")
    return TieSensitivity(
        spec.name,
        spec.k if spec.k is not None else default_k,
        int(off.shape[0] - 1),
        int(in_top.sum()),
        int(crossing.sum()),
        means["pessimistic"],
        means["average"],
        means["optimistic"],
    )
