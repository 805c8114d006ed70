"""Per-query ranking metrics over all queries at once: the validated public entry point.

For one query with labels l_1..l_n in ranked order (ties resolved by the ``ties`` convention), G the
gain and D the discount (see :class:`~ltr.metrics.conventions.Conventions`), rel_i = [l_i >= threshold]
and R the number of relevant documents of the query (in the ideal set: the list, or all judged
documents when ``ideal_labels`` is given):

- DCG@k = Σ_{i<=min(k,n)} G(l_i) D(i);  NDCG@k = DCG@k / IDCG@k (IDCG: DCG@k of the ideal order)
- ERR@k = Σ_{r<=min(k,n)} (1/r) R_r Π_{i<r} (1 − R_i), R_i = (2^{l_i} − 1) / 2^gmax
- AP@k = (1/den) Σ_{i<=k} rel_i P@i, den = R or min(R, k);  RR@k = 1 / rank of the first relevant <= k
- P@k = Σ_{i<=k} rel_i / (k or min(k, n));  R@k = Σ_{i<=k} rel_i / R
- MeanNDCG@k = (1/m) Σ_{j<=m} NDCG@j, m = min(k, n) (``meanndcg``: the whole list)

A family in the ``zero_beyond_list`` convention scores 0 at a cutoff k > n (LETOR's NDCG@k) instead
of stopping at the list's end.

With ``ties="average"`` each value is the exact expectation over uniformly random orders of the
documents that share a score. A query whose normaliser is zero (NDCG, DCG: IDCG = 0; AP, RR, P, R:
R = 0; ERR: no label > 0) gets 0, 1 (NDCG, MeanNDCG, AP, R; the others keep their natural 0) or NaN
under ``no_relevant`` = ``zero`` / ``one`` / ``skip``.

Example (the first worked example of docs/metrics.md, labels in ranked order):

>>> import numpy as np
>>> labels = np.array([3, 2, 3, 0, 1]); scores = -np.arange(5.0); offsets = np.array([0, 5])
>>> v = evaluate(["ndcg", "err", "map", "mrr"], labels, scores, offsets)
>>> {name: round(float(x[0]), 6) for name, x in v.items()}
{'ndcg': 0.957478, 'err': 0.560098, 'map': 0.95, 'mrr': 1.0}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr.arrays import float_array
from ltr.config_check import Constraint, check_value
from ltr.errors import MetricError
from ltr.metrics import _kernels
from ltr.metrics.conventions import TIES, Conventions, resolve_conventions
from ltr.metrics.registry import MetricSpec, parse_metric
from ltr.ranking import check_offsets, query_of_row

#: Whole-number labels below this are counted per grade for IDCG (no sort); larger ones are sorted.
MAX_COUNTED_GRADE = 256
#: Families normalised by something that is zero when a query has no relevant document.
NORMALISED = frozenset({"ndcg", "meanndcg", "map", "r"})


def _as_vector(x: Any, n: int | None, what: str, ref: str = "labels") -> np.ndarray:
    integral = isinstance(x, np.ndarray) and x.dtype.kind in "iub"
    arr = float_array(x, what, error=MetricError)
    if n is not None and arr.shape[0] != n:
        raise MetricError(f"{what} has {arr.shape[0]} entries but {ref} has {n}")
    if not integral and not np.all(np.isfinite(arr)):
        raise MetricError(
            f"{what} must be finite; row {np.flatnonzero(~np.isfinite(arr))[0]} is {arr[~np.isfinite(arr)][0]}"
        )
    return arr


def _check_labels(labels: np.ndarray, offsets: np.ndarray, what: str) -> None:
    if labels.size and labels.min() < 0:
        row = int(np.flatnonzero(labels < 0)[0])
        q = query_of_row(offsets, row)
        raise MetricError(f"{what} must be >= 0; query {q} row {row} has label {labels[row]:g}")


def _docno_key(docno: Any, n: int, ties: str) -> np.ndarray:
    if docno is None:
        raise MetricError(f"ties={ties!r} needs docno= (one document id per row)")
    arr = np.asarray(docno)
    if arr.shape != (n,):
        raise MetricError(f"docno has shape {arr.shape} but there are {n} documents")
    if arr.dtype.kind not in "iuUS":
        arr = arr.astype(str)
    codes = np.unique(arr, return_inverse=True)[1].astype(np.float64)
    return -codes if ties == "docno_desc" else codes


@dataclass(frozen=True)
class RankedLists:
    """Labels in ranked order with the tie groups the ``ties`` convention leaves open.

    ``order`` are row indices in ranked order; ``bounds``/``qgrp`` describe the tie groups (a single
    row each unless ties are ``average``); ``offsets`` delimit each query's ranked rows, which are
    all its rows, or only the top ``depth`` (plus rows tied with the last of them) when ranking was
    truncated; ``sizes`` are the full list lengths.
    """

    order: np.ndarray
    labels: np.ndarray
    bounds: np.ndarray
    qgrp: np.ndarray
    offsets: np.ndarray
    sizes: np.ndarray


def rank_lists(
    labels: np.ndarray,
    scores: np.ndarray,
    offsets: np.ndarray,
    ties: str,
    docno: Any = None,
    depth: int | None = None,
) -> RankedLists:
    """Sort every query by score descending, break ties by the convention, and mark the tie groups.

    With ``depth`` only the top ``depth`` rows of each query (and rows tied with the last of them)
    are ranked: enough for metrics with cutoffs <= depth, and O(n) instead of O(n log n) per query.

    >>> r = rank_lists(np.array([0., 3, 1, 2]), np.array([1., 1, 1, .5]), np.array([0, 4]), "pessimistic")
    >>> r.labels.tolist(), r.bounds.tolist()
    ([0.0, 1.0, 3.0, 2.0], [0, 1, 2, 3, 4])
    >>> rank_lists(np.array([0., 3, 1, 2]), np.array([1., 1, 1, .5]), np.array([0, 4]), "average").bounds.tolist()
    [0, 3, 4]
    """
    check_value(ties, str, Constraint(choices=TIES), "ties", error=MetricError)
    n = labels.shape[0]
    d = 0 if depth is None else int(depth)
    if ties in ("stable", "average"):
        order, ranked_off = _kernels.rank_order(scores, scores, offsets, False, d)
    else:
        if ties == "pessimistic":
            key = labels
        elif ties == "optimistic":
            key = -labels
        else:
            key = _docno_key(docno, n, ties)
        order, ranked_off = _kernels.rank_order(scores, key, offsets, True, d)
    sorted_labels = labels[order]
    if ties == "average":
        bounds, qgrp = _kernels.tie_groups(scores[order], ranked_off)
    else:
        bounds = np.arange(order.shape[0] + 1, dtype=np.int64)
        qgrp = ranked_off
    return RankedLists(order, sorted_labels, bounds, qgrp, ranked_off, np.diff(offsets))


class _Evaluator:
    """Shared state of one :func:`evaluate` call: ranked lists, ideal set, cached per-query values."""

    def __init__(
        self,
        c: Conventions,
        ranked: RankedLists,
        ideal_labels: np.ndarray,
        ideal_offsets: np.ndarray,
    ) -> None:
        self.c = c
        self.r = ranked
        self.sizes = ranked.sizes
        self.n_queries = self.sizes.shape[0]
        self.max_len = int(max(self.sizes.max(initial=0), np.diff(ideal_offsets).max(initial=0)))
        self.disc = c.discounts(max(self.max_len, 1))
        self.ideal_labels = ideal_labels
        self.ideal_offsets = ideal_offsets
        top = float(ideal_labels.max(initial=0.0))
        n_grades = int(top) + 1 if top < MAX_COUNTED_GRADE else 0
        self.n_rel, self.ideal_max_label, whole, self.grade_counts = _kernels.query_stats(
            ideal_labels, ideal_offsets, c.rel_threshold, n_grades
        )
        self.counted = whole and n_grades > 0
        self._gain: np.ndarray | None = None
        self._rel: np.ndarray | None = None
        self._ideal_gain: np.ndarray | None = None
        self._idcg: dict[int, np.ndarray] = {}
        self._has_gain: np.ndarray | None = None

    @property
    def gain(self) -> np.ndarray:
        if self._gain is None:
            self._gain = self.c.gain_values(self.r.labels)
        return self._gain

    @property
    def rel(self) -> np.ndarray:
        if self._rel is None:
            self._rel = (self.r.labels >= self.c.rel_threshold).astype(np.float64)
        return self._rel

    def cutoff(self, k: int | None) -> int:
        return self.max_len if k is None else k

    def dcg(self, k: int | None) -> np.ndarray:
        r = self.r
        return _kernels.discounted_sum(self.gain, r.bounds, r.qgrp, r.offsets, self.disc, self.cutoff(k))

    def idcg(self, k: int | None) -> np.ndarray:
        """IDCG@k per query: by counting grades for whole-number labels (any gain table), else by sorting gains."""
        kk = self.cutoff(k)
        if kk not in self._idcg:
            top = int(self.ideal_max_label.max(initial=0))
            if isinstance(self.c.gain, tuple) and top >= len(self.c.gain):
                self.c.gain_values(self.ideal_labels)  # raises, naming the offending label
            if self.counted:
                n_grades = self.grade_counts.shape[1]
                table = self.c.gain_values(np.arange(min(n_grades, top + 1), dtype=np.float64))
                table = np.pad(table, (0, n_grades - table.shape[0]))  # grades above every label
                by_gain = np.argsort(-table, kind="stable").astype(np.int64)
                self._idcg[kk], self._has_gain = _kernels.ideal_dcg_counts(
                    self.grade_counts, self.disc, kk, table, by_gain
                )
            else:
                if self._ideal_gain is None:
                    self._ideal_gain = self.c.gain_values(self.ideal_labels)
                self._idcg[kk] = _kernels.ideal_dcg(self._ideal_gain, self.ideal_offsets, self.disc, kk)
                if self._has_gain is None:
                    self._has_gain = self.idcg(1) > 0
        return self._idcg[kk]

    def has_gain(self) -> np.ndarray:
        """Per query: does any document of the ideal set have a positive gain (IDCG > 0)?"""
        if self._has_gain is None:
            self.idcg(1)
        return self._has_gain

    def hits(self, k: int | None) -> np.ndarray:
        r = self.r
        ones = np.ones_like(self.disc)
        return _kernels.discounted_sum(self.rel, r.bounds, r.qgrp, r.offsets, ones, self.cutoff(k))

    def values(self, spec: MetricSpec) -> np.ndarray:
        """Per-query values of one metric, with ``default_k`` and the ``no_relevant`` choice applied."""
        c = self.c
        if spec.k is None and c.default_k is not None:
            spec = MetricSpec(spec.family, c.default_k)
        values, no_rel = self.compute(spec)
        if spec.k is not None and spec.family in c.zero_beyond_list:
            values[self.sizes < spec.k] = 0.0
        choice = c.no_relevant_for(spec.family)
        if choice == "skip":
            values[no_rel] = np.nan
        elif choice == "zero":
            values[no_rel] = 0.0
        elif spec.family in NORMALISED:
            values[no_rel] = 1.0
        return values

    def compute(self, spec: MetricSpec) -> tuple[np.ndarray, np.ndarray]:
        """(values, mask of queries without relevant documents) for one metric."""
        fam, k, r, c = spec.family, spec.k, self.r, self.c
        kk = self.cutoff(k)
        no_rel = self.n_rel == 0
        if fam in ("ndcg", "dcg"):
            dcg = self.dcg(k)
            if fam == "dcg":
                return dcg, ~self.has_gain()
            idcg = self.idcg(k)
            no_rel = ~self.has_gain()
            return np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0), no_rel
        if fam == "meanndcg":
            if self._ideal_gain is None:
                self._ideal_gain = self.c.gain_values(self.ideal_labels)
            expected = self.gain  # each rank's gain, or its tie group's mean gain (E[DCG@j], by linearity)
            if c.ties == "average" and expected.size:
                group_sizes = np.diff(r.bounds)
                expected = np.repeat(np.add.reduceat(expected, r.bounds[:-1]) / group_sizes, group_sizes)
            values = _kernels.mean_ndcg(
                expected, r.offsets, self._ideal_gain, self.ideal_offsets, self.disc, kk, self.sizes
            )
            return values, ~self.has_gain()
        if fam == "err":
            top = max(self.ideal_max_label.max(initial=0), r.labels.max(initial=0))
            if top > c.err_gmax:
                raise MetricError(
                    f"err: label {top:g} exceeds err_gmax={c.err_gmax}; set err_gmax to the largest grade"
                )
            stop = (np.exp2(r.labels) - 1.0) / 2.0**c.err_gmax
            return _kernels.cascade_sum(stop, r.bounds, r.qgrp, r.offsets, kk), self.ideal_max_label == 0
        if fam == "mrr":
            return _kernels.cascade_sum(self.rel, r.bounds, r.qgrp, r.offsets, kk), no_rel
        if fam == "map":
            num = _kernels.precision_sum(self.rel, r.bounds, r.qgrp, r.offsets, kk)
            den = self.n_rel if (c.ap_denominator == "R" or k is None) else np.minimum(self.n_rel, k)
            return np.divide(num, den, out=np.zeros_like(num), where=den > 0), no_rel
        hits = self.hits(k)
        if fam == "r":
            return np.divide(hits, self.n_rel, out=np.zeros_like(hits), where=self.n_rel > 0), no_rel
        # fam == "p"
        if k is None:
            den = self.sizes.astype(np.float64)
        elif c.p_denominator == "k":
            den = np.full(self.n_queries, float(k))
        else:
            den = np.minimum(self.sizes, k).astype(np.float64)
        return np.divide(hits, den, out=np.zeros_like(hits), where=den > 0), no_rel


def evaluate(
    names: str | Sequence[str],
    labels: Any,
    scores: Any,
    offsets: Any,
    *,
    preset: str | Conventions = "ltr",
    docno: Any = None,
    ideal_labels: Any = None,
    ideal_offsets: Any = None,
    **conventions: Any,
) -> dict[str, np.ndarray]:
    """Per-query values of each named metric (module docstring has the formulas).

    Parameters
    ----------
    names : a metric name (``"ndcg@10"``) or a sequence of names; see :mod:`ltr.metrics.registry`.
    labels, scores : (n_docs,) relevance labels (>= 0) and model scores, rows grouped by query.
    offsets : (n_queries + 1,) query ``q`` owns rows ``offsets[q]:offsets[q+1]``.
    preset : a name in :data:`~ltr.metrics.conventions.PRESETS` or a ``Conventions`` instance.
    docno : (n_docs,) document ids, needed by ``ties="docno_desc"`` / ``"docno_asc"``.
    ideal_labels, ideal_offsets : labels of *all judged* documents per query (same query order) for
        the ideal ranking and R (the TREC convention); default: the scored list itself.
    **conventions : overrides of the preset (``gain=``, ``ties=``, ``no_relevant=``, …).

    Returns
    -------
    ``{canonical name: float64 array of shape (n_queries,)}``; NaN marks a skipped query. A name
    without ``@k`` keeps its key when the ``default_k`` convention gives it a cutoff.

    >>> evaluate("ndcg@10", [0, 3, 1, 2], [1.0, 1.0, 1.0, 0.5], [0, 4], ties="stable")["ndcg@10"].round(6)
    array([0.66099])
    """
    if isinstance(names, str):
        names = [names]
    elif not isinstance(names, Iterable):
        raise MetricError(f"names must be a metric name or a sequence of names, got {type(names).__name__}")
    specs: dict[str, MetricSpec] = {}
    for name in names:
        spec = parse_metric(name)
        specs.setdefault(spec.name, spec)
    if not specs:
        raise MetricError("evaluate() needs at least one metric name")
    c = resolve_conventions(preset, **conventions)
    lab = _as_vector(labels, None, "labels")
    n = lab.shape[0]
    sc = _as_vector(scores, n, "scores")
    off = check_offsets(offsets, n, "offsets")
    _check_labels(lab, off, "labels")
    if ideal_labels is None:
        if ideal_offsets is not None:
            raise MetricError("ideal_offsets given without ideal_labels")
        ideal_lab, ideal_off = lab, off
    else:
        if ideal_offsets is None:
            raise MetricError("ideal_labels needs ideal_offsets (one block of judged labels per query)")
        ideal_lab = _as_vector(ideal_labels, None, "ideal_labels")
        ideal_off = check_offsets(ideal_offsets, ideal_lab.shape[0], "ideal_offsets")
        if ideal_off.shape != off.shape:
            raise MetricError(
                f"ideal_offsets describes {ideal_off.shape[0] - 1} queries but offsets describes {off.shape[0] - 1}"
            )
        _check_labels(ideal_lab, ideal_off, "ideal_labels")
    cutoffs = [spec.k if spec.k is not None else c.default_k for spec in specs.values()]
    depth = None if any(k is None for k in cutoffs) else max(cutoffs)
    ranked = rank_lists(lab, sc, off, c.ties, docno, depth=depth)
    ev = _Evaluator(c, ranked, ideal_lab, ideal_off)
    return {name: ev.values(spec) for name, spec in specs.items()}


@dataclass(frozen=True)
class MetricMean:
    """A mean over queries: ``value`` over ``n_queries`` counted, ``n_skipped`` NaN (skipped) queries."""

    value: float
    n_queries: int
    n_skipped: int


def mean(values: Any, weights: Any = None) -> MetricMean:
    """Mean of per-query values ignoring NaN (skipped queries), optionally weighted per query.

    >>> mean(np.array([1.0, np.nan, 0.5]))
    MetricMean(value=0.75, n_queries=2, n_skipped=1)
    >>> mean([1.0, 0.0], weights=[3, 1]).value
    0.75
    """
    v = float_array(values, "mean() per-query values", expected="of shape (n_queries,)", error=MetricError)
    keep = ~np.isnan(v)
    n_skipped = int(v.shape[0] - keep.sum())
    if weights is None:
        value = float(v[keep].mean()) if keep.any() else float("nan")
    else:
        try:
            w = np.asarray(weights, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise MetricError(f"weights must be numeric, got {type(weights).__name__}") from exc
        if w.shape != v.shape:
            raise MetricError(f"weights has shape {w.shape} but values has shape {v.shape}")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise MetricError("weights must be finite and >= 0")
        total = w[keep].sum()
        value = float((v[keep] * w[keep]).sum() / total) if total > 0 else float("nan")
    return MetricMean(value, int(keep.sum()), n_skipped)
