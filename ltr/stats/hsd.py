"""Randomised Tukey HSD: all pairwise comparisons of ≥ 2 systems on the same queries, family-wise.

For a table ``X`` (queries × k systems) with column means ``x̄_1..x̄_k``, the null hypothesis is that
the system labels are exchangeable within each query. Each of ``B`` seeded resamples shuffles every row
independently and records the range ``R* = max_j x̄*_j − min_j x̄*_j`` of the shuffled column means. The
adjusted p-value of a pair is ``p_ij = (#{R* ≥ |x̄_i − x̄_j|} + 1) / (B + 1)`` (Carterette 2012; Sakai
2014): comparing every pair with the same max-range null controls the family-wise error over all
``k(k−1)/2`` pairs without a further correction. Queries with a NaN for any system are dropped.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> base = rng.random(300)
>>> r = tukey_hsd({"a": base, "b": base + 0.05, "c": base + rng.normal(0, 0.01, 300)}, B=2000, seed=1)
>>> r.systems, r.n
(('a', 'b', 'c'), 300)
>>> bool(r.pvalue("a", "b") < 0.01), bool(r.pvalue("a", "c") > 0.05)
(True, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ltr.core.arrays import float_array
from ltr.core.errors import DataError
from ltr.stats import _kernels
from ltr.stats._validate import NanPolicy, Seed, as_values, check_B, check_choice, make_rng, need

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True, slots=True, eq=False)
class HSDResult:
    """Pairwise outcome of :func:`tukey_hsd`: ``pvalues[i, j]`` for systems ``i``, ``j`` (diagonal 1);
    ``diffs[i, j] = mean_i − mean_j``; ``n`` queries used."""

    systems: tuple[str, ...]
    means: np.ndarray
    diffs: np.ndarray
    pvalues: np.ndarray
    n: int
    B: int
    seed: int | None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HSDResult):
            return NotImplemented
        return (self.systems, self.n, self.B, self.seed) == (
            other.systems,
            other.n,
            other.B,
            other.seed,
        ) and all(np.array_equal(x, y) for x, y in ((self.means, other.means), (self.pvalues, other.pvalues)))

    __hash__ = None  # type: ignore[assignment]

    def to_frame(self) -> pd.DataFrame:
        """The ``k × k`` matrix of adjusted p-values as a DataFrame indexed and labelled by system."""
        import pandas as pd  # deferred: pandas (~0.5 s) only for this table; the test itself is numpy

        return pd.DataFrame(self.pvalues, index=list(self.systems), columns=list(self.systems))

    def _index(self, system: str) -> int:
        if system not in self.systems:
            raise DataError(f"unknown system {system!r}; known: {', '.join(self.systems)}")
        return self.systems.index(system)

    def pvalue(self, a: str, b: str) -> float:
        """Family-wise adjusted p-value of the pair (``a``, ``b``)."""
        return float(self.pvalues[self._index(a), self._index(b)])


def _as_table(
    systems: Mapping[str, ArrayLike] | ArrayLike, names: list[str] | None
) -> tuple[np.ndarray, list[str]]:
    if isinstance(systems, Mapping):
        names = [str(s) for s in systems]
        cols = [as_values(v, f"system {s!r}") for s, v in systems.items()]
        lengths = {c.shape[0] for c in cols}
        if len(lengths) > 1:
            sizes = ", ".join(f"{s!r}: {c.shape[0]}" for s, c in zip(names, cols, strict=True))
            raise DataError(f"every system must score the same queries; got different lengths ({sizes})")
        table = np.column_stack(cols) if cols else np.empty((0, 0))
    else:
        table = float_array(systems, "per-query values", ndim=2, expected="a (queries × systems) table")
        names = [str(i) for i in range(table.shape[1])] if names is None else list(names)
        if len(names) != table.shape[1]:
            raise DataError(f"{len(names)} system names for {table.shape[1]} columns")
    if len(set(names)) != len(names):
        dup = next(s for s in names if names.count(s) > 1)
        raise DataError(f"system name {dup!r} is given more than once; names must be unique")
    return table, names


def tukey_hsd(
    systems: Mapping[str, ArrayLike] | ArrayLike,
    *,
    names: list[str] | None = None,
    B: int = 10_000,
    seed: Seed = 0,
    nan_policy: NanPolicy = "omit",
) -> HSDResult:
    """Randomised Tukey HSD over all pairs of systems (see the module docstring).

    ``systems`` is a mapping ``name → per-query values`` (same queries, same order) or a 2-D array
    (queries × systems) with optional ``names``.
    """
    table, names = _as_table(systems, names)
    if table.shape[1] < 2:
        raise DataError(f"Tukey HSD needs at least 2 systems, got {table.shape[1]}")
    if np.isinf(table).any():
        raise DataError("per-query values must be finite or NaN; the table holds ±inf")
    B = check_B(B)
    check_choice("nan_policy", nan_policy, ("omit", "raise"))
    keep = ~np.isnan(table).any(axis=1)
    if nan_policy == "raise" and not keep.all():
        raise DataError(
            f"{int((~keep).sum())} queries have a NaN for some system (skipped), first at position "
            f"{int(np.flatnonzero(~keep)[0])}; pass nan_policy='omit' to drop them"
        )
    table = np.ascontiguousarray(table[keep])
    n = table.shape[0]
    need(n, 1, "Tukey HSD")
    rng, seed_used = make_rng(seed)
    null = np.empty(B)
    _kernels.max_permuted_range(table, _kernels.draw_seeds(rng, B), null)
    means = table.mean(axis=0)
    diffs = means[:, None] - means[None, :]
    tol = n * np.finfo(np.float64).eps * float(np.abs(table).max(initial=0.0))
    null_sorted = np.sort(null)
    hits = B - np.searchsorted(null_sorted, np.abs(diffs) - tol, side="left")
    pvalues = (hits + 1.0) / (B + 1.0)
    np.fill_diagonal(pvalues, 1.0)
    for arr in (means, diffs, pvalues):
        arr.setflags(write=False)
    return HSDResult(tuple(names), means, diffs, pvalues, n, B, seed_used)
