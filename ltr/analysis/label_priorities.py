"""Which queries to label next: per-query metric variance and expected change of a comparison.

Labels are uncertain: ``label_probs[i, g]`` = P(label of document i = g), documents independent
(as in :mod:`ltr.metrics.uncertain`; e.g. a McRank ``classification`` model's class probabilities).
For each query q, with its documents ranked by system A's scores (and B's):

* ``variance`` = Var[m_A(q)], the uncertainty of the query's metric (``ndcg@10``, ``err@10``, …);
* ``expected_change`` = E|d_q − E d_q| / Q with d_q = m_A(q) − m_B(q): how far labelling q is
  expected to move the mean difference Δ = (1/Q)·Σ_q E[d_q] of the two-system comparison
  (labelling q replaces E[d_q] by the realised d_q);
* ``flip_probability`` = P(sign(Δ + (d_q − E d_q)/Q) ≠ sign(Δ)): labelling q alone reverses the winner.

Computation, per query (``method``):

* ``closed`` — DCG only (linear in the gains): Var[DCG@k] = Σ_i Var[G(l_i)]·D(r_i)² with D the
  discount (0 below k); exact (the change columns need the distribution of d_q: enumeration or MC);
* ``enumeration`` — exact: every label assignment of the query's documents, weighted by its
  probability, when there are at most ``max_enumeration`` assignments (Π_i of the grades each
  document can take);
* ``monte-carlo`` — ``n_samples`` seeded label draws; ``variance_stderr`` is the standard error of
  the variance estimate (the sample standard deviation of (m − m̄)² over √n).

A metric that is undefined for an assignment (no relevant document under ``no_relevant=skip``)
counts as 0 there (``no_relevant="zero"`` is passed to the metric).

>>> probs = np.array([[0.5, 0.5], [1.0, 0.0], [0.0, 1.0]])   # one query, three documents, grades 0/1
>>> p = label_priorities(probs, [0, 3], [3.0, 2.0, 1.0], metric="dcg@3", gain="linear")
>>> round(float(p.variance[0]), 6), p.method[0]   # Var[l_0]·D(1)² = 0.25
(0.25, 'closed')
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr.core.config_check import Constraint, check_value
from ltr.core.errors import MetricError
from ltr.core.ranking import check_offsets, descending_ranks
from ltr.metrics import evaluate
from ltr.metrics.conventions import resolve_conventions
from ltr.metrics.registry import parse_metric
from ltr.metrics.uncertain import _as_probs, sample_labels

METHODS = ("closed", "enumeration", "monte-carlo")


#: what :meth:`LabelPriorities.order` can rank queries by
ORDERINGS = ("variance", "expected_change", "flip_probability")


@dataclass(frozen=True)
class LabelPriorities:
    """Per-query label priorities (arrays in query order; NaN change columns without system B)."""

    qid: np.ndarray
    metric: str
    variance: np.ndarray
    variance_stderr: np.ndarray  # 0 where exact
    expected_change: np.ndarray
    flip_probability: np.ndarray
    method: list[str]
    delta: float  # current expected mean difference A − B (NaN without system B)

    def order(self, by: str = "variance") -> np.ndarray:
        """Query positions, most worth labelling first (``by`` = ``variance`` | ``expected_change``;
        ties keep query order)."""
        check_value(by, str, Constraint(choices=ORDERINGS), "by", error=MetricError)
        values = getattr(self, by)
        if by != "variance" and np.all(np.isnan(values)):
            raise MetricError(f"ordering by {by} needs a second system (scores_b)")
        return np.argsort(-np.nan_to_num(values, nan=-np.inf), kind="stable")

    def table(self, by: str = "variance") -> list[dict[str, Any]]:
        """Rows in priority order: qid, variance (and its stderr), expected_change, flip_probability, method."""
        return [
            {
                "qid": self.qid[q].item() if hasattr(self.qid[q], "item") else self.qid[q],
                "variance": float(self.variance[q]),
                "variance_stderr": float(self.variance_stderr[q]),
                "expected_change": float(self.expected_change[q]),
                "flip_probability": float(self.flip_probability[q]),
                "method": self.method[q],
            }
            for q in self.order(by)
        ]


def label_priorities(
    label_probs: Any,
    offsets: Any,
    scores_a: Any,
    scores_b: Any = None,
    *,
    metric: str = "ndcg@10",
    qid: Sequence[Any] | np.ndarray | None = None,
    n_samples: int = 2000,
    seed: int = 0,
    max_enumeration: int = 4096,
    preset: str = "ltr",
    **conventions: Any,
) -> LabelPriorities:
    """Rank queries for labelling (module docstring has the quantities and the methods)."""
    probs = _as_probs(label_probs)
    n_docs = probs.shape[0]
    off = check_offsets(offsets, n_docs)
    systems = [np.asarray(scores_a, dtype=np.float64)] + (
        [] if scores_b is None else [np.asarray(scores_b, dtype=np.float64)]
    )
    for name, s in zip(("scores_a", "scores_b"), systems, strict=False):
        if s.shape != (n_docs,) or not np.all(np.isfinite(s)):
            raise MetricError(f"{name}: expected {n_docs} finite scores, got shape {s.shape}")
    n_samples = check_value(n_samples, int, Constraint(low=2), "n_samples", error=MetricError)
    spec = parse_metric(metric)
    conventions = {**conventions, "no_relevant": "zero"}
    n_q = off.shape[0] - 1
    qids = np.arange(1, n_q + 1) if qid is None else np.asarray(qid)
    if qids.shape[0] != n_q:
        raise MetricError(f"qid: expected {n_q} query ids, got {qids.shape[0]}")
    rng = np.random.default_rng(seed)
    variance, stderr = np.zeros(n_q), np.zeros(n_q)
    methods: list[str] = []
    draws: list[tuple[np.ndarray, np.ndarray]] = []  # per query: (d values, weights) for the change
    for q in range(n_q):
        lo, hi = int(off[q]), int(off[q + 1])
        p = probs[lo:hi]
        support = [np.flatnonzero(row > 0) for row in p]
        n_assign = int(np.prod([len(s) for s in support], dtype=np.float64)) if hi > lo else 1
        if n_assign <= max_enumeration:
            labels = np.array(list(itertools.product(*support)), dtype=np.float64).reshape(n_assign, hi - lo)
            weights = np.prod(p[np.arange(hi - lo), labels.astype(int)], axis=1) if hi > lo else np.ones(1)
            method = "enumeration"
        else:
            labels = np.stack([sample_labels(p, rng) for _ in range(n_samples)])
            weights = np.full(n_samples, 1.0 / n_samples)
            method = "monte-carlo"
        values = [_metric_over(labels, s[lo:hi], spec.name, preset, conventions) for s in systems]
        mean = weights @ values[0]
        variance[q] = weights @ (values[0] - mean) ** 2
        if method == "monte-carlo":
            variance[q] *= n_samples / (n_samples - 1)
            stderr[q] = np.std((values[0] - mean) ** 2, ddof=1) / np.sqrt(n_samples)
        if spec.family == "dcg":  # linear in the gains: the exact closed form
            variance[q], stderr[q], method = (
                _dcg_variance(p, systems[0][lo:hi], spec.name, preset, conventions),
                0.0,
                "closed",
            )
        methods.append(method)
        if len(values) == 2:
            draws.append((values[0] - values[1], weights))
    change, flip, delta = np.full(n_q, np.nan), np.full(n_q, np.nan), float("nan")
    if draws:
        expected = np.array([w @ d for d, w in draws])
        delta = float(expected.mean())
        for q, (d, w) in enumerate(draws):
            moved = (d - expected[q]) / n_q
            change[q] = w @ np.abs(moved)
            flip[q] = w @ (np.sign(delta + moved) != np.sign(delta))
    return LabelPriorities(qids, spec.name, variance, stderr, change, flip, methods, delta)


def _metric_over(
    labels: np.ndarray, scores: np.ndarray, name: str, preset: str, conventions: dict[str, Any]
) -> np.ndarray:
    """The metric of one query's ranking under every row of ``labels`` (one row = one assignment)."""
    n_rows, n = labels.shape
    offsets = np.arange(n_rows + 1) * n
    return evaluate(name, labels.ravel(), np.tile(scores, n_rows), offsets, preset=preset, **conventions)[
        name
    ]


def _dcg_variance(
    p: np.ndarray, scores: np.ndarray, name: str, preset: str, conventions: dict[str, Any]
) -> float:
    """Var[DCG@k] = Σ_i Var[G(l_i)]·D(r_i)² for one query (independent labels, label-free ties)."""
    c = resolve_conventions(preset, **conventions)
    gains = c.gain_values(np.arange(p.shape[1], dtype=np.float64))
    var_gain = p @ gains**2 - (p @ gains) ** 2
    spec = parse_metric(name)
    n = p.shape[0]
    k = spec.k if spec.k is not None else (c.default_k or n)
    rank = descending_ranks(scores, np.array([0, n]), ties="first").astype(int)
    disc = np.where(rank <= k, c.discounts(max(n, 1))[rank - 1], 0.0)
    return float(var_gain @ disc**2)
