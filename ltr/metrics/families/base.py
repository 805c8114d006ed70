"""What a metric family is: its name, formula and relevance kind, and the function that computes it.

Every family module (``dcg``, ``meanndcg``, ``err``, ``ap``, ``rr``, ``precision``, ``recall``) defines
its :class:`MetricFamily` with a ``compute(lists, k)`` over the ranked lists of one
:func:`ltr.metrics.evaluate` call (:class:`RankedQueries`, built once and shared by every metric of
the call). ``compute`` returns the per-query values and the mask of queries whose normaliser is zero
(no relevant document); :func:`ltr.metrics.evaluate` then applies ``zero_beyond_list`` and the
``no_relevant`` convention, which sets those queries to 0, NaN (skip) or — for a ``normalised``
family — 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np


class RankedQueries(Protocol):
    """The shared state of one evaluation (:class:`ltr.metrics.compute.ListEvaluator`).

    ``c`` the conventions, ``r`` the ranked lists (:class:`ltr.metrics.compute.RankedLists`),
    ``sizes`` the list lengths, ``n_rel`` R per query, ``ideal_max_label`` the highest judged label
    per query, ``disc`` the discounts; ``gain`` / ``rel`` the gains / binary relevances in ranked
    order, ``ideal_gain`` the gains of the ideal set; ``dcg(k)``, ``idcg(k)``, ``hits(k)`` per query.
    """

    c: Any
    r: Any
    sizes: np.ndarray
    n_queries: int
    n_rel: np.ndarray
    ideal_max_label: np.ndarray
    ideal_offsets: np.ndarray
    disc: np.ndarray

    @property
    def gain(self) -> np.ndarray: ...
    @property
    def rel(self) -> np.ndarray: ...
    @property
    def ideal_gain(self) -> np.ndarray: ...
    def cutoff(self, k: int | None) -> int: ...
    def dcg(self, k: int | None) -> np.ndarray: ...
    def idcg(self, k: int | None) -> np.ndarray: ...
    def has_gain(self) -> np.ndarray: ...
    def hits(self, k: int | None) -> np.ndarray: ...


#: ``compute(lists, k)`` → (per-query values, mask of queries without relevant documents)
Compute = Callable[[RankedQueries, "int | None"], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class MetricFamily:
    """A registered metric family.

    Attributes
    ----------
    name : canonical name (``ndcg``, ``map``, …).
    formula : the per-query formula, for error messages and docs.
    binary : True when the metric uses binary relevance (label >= rel_threshold).
    compute : the per-query values at cutoff ``k`` (None = the whole list), see :data:`Compute`.
    normalised : divided by something that is zero without relevant documents (NDCG, MeanNDCG, AP, R):
        ``no_relevant="one"`` gives such a query 1, the others keep their natural 0.
    aliases : other accepted spellings.
    """

    name: str
    formula: str
    binary: bool
    compute: Compute
    normalised: bool = False
    aliases: tuple[str, ...] = ()
