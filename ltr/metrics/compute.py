"""Per-query ranking metrics over all queries at once: the validated public entry point.

Every query's documents are ranked by score (ties resolved by the ``ties`` convention) once per call
(:func:`rank_lists`, :class:`ListEvaluator`); each metric family then computes its per-query values
from those ranked lists — its formula, with G the gain and D the discount of
:class:`~ltr.metrics.conventions.Conventions`, is in its module of :mod:`ltr.metrics.families` (DCG
and NDCG, MeanNDCG, ERR, AP, RR, P, R), found through :data:`ltr.metrics.registry.REGISTRY`.

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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr.core.arrays import float_array
from ltr.core.config_check import Constraint, check_value
from ltr.core.errors import MetricError
from ltr.core.ranking import check_offsets, query_of_row
from ltr.metrics import _kernels
from ltr.metrics.conventions import TIES, Conventions, resolve_conventions
from ltr.metrics.registry import REGISTRY, MetricSpec, parse_metric

#: Whole-number labels below this are counted per grade for IDCG (no sort); larger ones are sorted.
MAX_COUNTED_GRADE = 256


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


def _ranked(
    scores: np.ndarray, key: np.ndarray, offsets: np.ndarray, use_key: bool, depth: int
) -> tuple[np.ndarray, np.ndarray]:
    """The ranked rows: the top ``depth`` by compiled selection, every row by :func:`_full_order`."""
    if depth > 0:
        return _kernels.rank_order(scores, key, offsets, use_key, depth)
    return _full_order(scores, key, offsets, use_key)


def _full_order(
    scores: np.ndarray, key: np.ndarray, offsets: np.ndarray, use_key: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Every row of every query in ranked order, as :func:`ltr.metrics._kernels.rank_order` with depth
    0 gives it (score descending, then ``key`` when ``use_key``, then row), sorted by numpy.

    Queries are grouped by their length rounded up to a power of two 2^b; each group's scores are
    packed with their column into one uint64 per row (:func:`~ltr.metrics._kernels.packed_keys`), a
    matrix as wide as the group's longest list whose row-wise ``np.sort`` (vectorised, no index array
    to carry) is the ranking;
    :func:`~ltr.metrics._kernels.settle_packed` reads the rows back and orders each run of equal
    scores, and of scores that differ only in the b packed bits. 3M rows in lists of 100: 0.03 CPU-s,
    against 0.05 for ``np.argsort`` of the negated scores and 0.15 for a compiled merge sort per list.
    """
    sizes = np.diff(offsets)
    out = np.empty(int(offsets[-1]), np.int64)
    bits = np.zeros_like(sizes)
    present = sizes > 0
    bits[present] = np.ceil(np.log2(sizes[present])).astype(np.int64)
    for b in np.unique(bits[present]):
        queries = np.flatnonzero(present & (bits == b))
        width = int(sizes[queries].max())  # no column past the longest list
        keys = np.sort(_kernels.packed_keys(scores, offsets, queries, int(b), width), axis=1)
        _kernels.settle_packed(keys, queries, offsets, scores, key, use_key, int(b), out)
    return out, offsets.astype(np.int64, copy=True)


def _docno_order(
    scores: np.ndarray, offsets: np.ndarray, ties: str, docno: Any, depth: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`rank_lists`' order for the ``docno_*`` conventions: ranked by score (stable), then the
    rows of each tie group ordered by document id. Only tied rows are compared, so the ids of the
    other rows are never sorted (``np.unique`` over every id took ~90 % of a trec evaluation)."""
    if docno is None:
        raise MetricError(f"ties={ties!r} needs docno= (one document id per row)")
    arr = np.asarray(docno)
    if arr.shape != scores.shape:
        raise MetricError(f"docno has shape {arr.shape} but there are {scores.shape[0]} documents")
    order, ranked_off = _ranked(scores, scores, offsets, False, depth)
    bounds, _ = _kernels.tie_groups(scores[order], ranked_off)
    if bounds.shape[0] - 1 == order.shape[0]:  # no ties
        return order, ranked_off
    sign = -1 if ties == "docno_desc" else 1
    if arr.dtype.kind in "iuUS" and arr.dtype.isnative:  # every id as code units: a view, or one cast
        _kernels.order_tie_groups(order, bounds, order, _id_units(arr), sign)
        return order, ranked_off
    sizes = np.diff(bounds)  # other ids are converted for the tied rows only
    in_tie = np.repeat(sizes > 1, sizes)
    tied_at = np.cumsum(in_tie) - 1  # position -> row of the converted ids (read only at tied positions)
    _kernels.order_tie_groups(order, bounds, tied_at, _id_units(arr[order[in_tie]]), sign)
    return order, ranked_off


def _id_units(ids: np.ndarray) -> np.ndarray:
    """Document ids as a matrix of code units whose lexicographic row order is numpy's order of the
    ids: integers as one int64 column; strings as their UCS-4 / byte code units (a view, no copy) (numpy pads
    shorter strings with zeros, which sort first, as numpy compares them); other objects as ``str``."""
    if ids.dtype.kind == "i":
        return ids.astype(np.int64).reshape(-1, 1)
    if ids.dtype.kind == "u":  # the sign bit flipped: uint64 order as int64 order
        return (ids.astype(np.uint64) ^ np.uint64(1 << 63)).view(np.int64).reshape(-1, 1)
    if ids.dtype.kind not in "US":
        ids = ids.astype(str)
    if not ids.dtype.isnative:  # big-endian code units would compare byte-swapped
        ids = ids.astype(ids.dtype.newbyteorder("="))
    width = max(ids.dtype.itemsize // (4 if ids.dtype.kind == "U" else 1), 1)
    units = np.ascontiguousarray(ids).view(np.uint32 if ids.dtype.kind == "U" else np.uint8)
    return units.reshape(ids.shape[0], width)


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
    d = 0 if depth is None else int(depth)
    if ties in ("stable", "average"):
        order, ranked_off = _ranked(scores, scores, offsets, False, d)
    elif ties in ("pessimistic", "optimistic"):
        key = labels if ties == "pessimistic" else -labels
        order, ranked_off = _ranked(scores, key, offsets, True, d)
    else:
        order, ranked_off = _docno_order(scores, offsets, ties, docno, d)
    sorted_labels = labels[order]
    if ties == "average":
        bounds, qgrp = _kernels.tie_groups(scores[order], ranked_off)
    else:
        bounds = np.arange(order.shape[0] + 1, dtype=np.int64)
        qgrp = ranked_off
    return RankedLists(order, sorted_labels, bounds, qgrp, ranked_off, np.diff(offsets))


class ListEvaluator:
    """Shared state of one :func:`evaluate` call: ranked lists, ideal set, cached per-query values.

    It is the :class:`~ltr.metrics.families.base.RankedQueries` every family's ``compute`` reads.
    """

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

    @property
    def ideal_gain(self) -> np.ndarray:
        if self._ideal_gain is None:
            self._ideal_gain = self.c.gain_values(self.ideal_labels)
        return self._ideal_gain

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
                self._idcg[kk] = _kernels.ideal_dcg(self.ideal_gain, self.ideal_offsets, self.disc, kk)
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
        """Per-query values of one metric, with ``default_k``, ``zero_beyond_list`` and ``no_relevant`` applied."""
        c = self.c
        if spec.k is None and c.default_k is not None:
            spec = MetricSpec(spec.family, c.default_k)
        family = REGISTRY[spec.family]
        values, no_rel = family.compute(self, spec.k)
        if spec.k is not None and spec.family in c.zero_beyond_list:
            values[self.sizes < spec.k] = 0.0
        choice = c.no_relevant_for(spec.family)
        if choice == "skip":
            values[no_rel] = np.nan
        elif choice == "zero":
            values[no_rel] = 0.0
        elif family.normalised:
            values[no_rel] = 1.0
        return values


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
    ev = ListEvaluator(c, ranked, ideal_lab, ideal_off)
    return {name: ev.values(spec) for name, spec in specs.items()}


def evaluate_by_segment(
    names: str | Sequence[str],
    labels: Any,
    scores: Any,
    offsets: Any,
    segment: Sequence[Any] | np.ndarray,
    conventions: Mapping[Any, Conventions],
    **options: Any,
) -> dict[str, np.ndarray]:
    """:func:`evaluate` where each query uses its segment's conventions: ``segment[q]`` names query q's
    segment, ``conventions[segment]`` its conventions (e.g. the discount its users imply,
    ``python -m ltr.clicks discount --segment``: the personalised discount NDCG's user model allows).
    Every segment present needs conventions; ``options`` go to :func:`evaluate` for every segment.

    >>> from ltr.metrics.conventions import resolve_conventions
    >>> by = {"phone": resolve_conventions("ltr", discount="geometric", discount_persistence=0.5, gain="linear"),
    ...       "desk": resolve_conventions("ltr", gain="linear")}
    >>> v = evaluate_by_segment("dcg", [1, 1, 1, 1], [2.0, 1.0, 2.0, 1.0], [0, 2, 4], ["phone", "desk"], by)
    >>> v["dcg"].round(4).tolist()  # 1 + 0.5 for the phone query, 1 + 1/log2(3) for the desk query
    [1.5, 1.6309]
    """
    off = np.asarray(offsets, dtype=np.int64)
    seg = np.asarray(segment, dtype=object)
    if seg.shape != (off.size - 1,):
        raise MetricError(f"segment needs one value per query ({off.size - 1}), got {seg.size}")
    missing = sorted({str(v) for v in seg.tolist()} - {str(k) for k in conventions})
    if missing:
        raise MetricError(
            f"no conventions for segment(s) {', '.join(missing)}; given: {', '.join(map(str, conventions))}"
        )
    lab, sc = np.asarray(labels), np.asarray(scores)
    docno = options.pop("docno", None)
    out: dict[str, np.ndarray] = {}
    by_name = {str(k): v for k, v in conventions.items()}
    segment_of = np.array([str(v) for v in seg.tolist()], dtype=object)
    for name in dict.fromkeys(segment_of.tolist()):
        queries = np.flatnonzero(segment_of == name)
        rows = np.concatenate([np.arange(off[q], off[q + 1]) for q in queries])
        sub_off = np.r_[0, np.cumsum(off[queries + 1] - off[queries])]
        values = evaluate(
            names, lab[rows], sc[rows], sub_off, preset=by_name[name],
            docno=None if docno is None else np.asarray(docno)[rows], **options,
        )  # fmt: skip
        for metric, v in values.items():
            out.setdefault(metric, np.full(off.size - 1, np.nan))[queries] = v
    return out


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
