"""The one representation every exporter writes from: an additive tree ensemble, a linear model, McRank.

Every exporter writes from one of these (:mod:`ltr.export.reading` builds them from a fitted
ranker): :class:`TreeEnsemble` (an additive tree model), :class:`LinearScorer` or
:class:`ExpectedGrade` (McRank, ONNX only).

**Canonical split.** Every node reads: *a float32 feature value ``x`` goes left iff ``x <= t``, with
``t`` a float32; NaN goes left iff ``nan_left``*. Engines score float32 features (``ltr`` reads
features as float32 too), so every engine's comparison converts to and from this form exactly:
targets that compare with ``<`` get ``next_float32(t)`` (:func:`float32_above`). Scores are the
float64 sum of the leaves reached plus ``base_score``.

>>> t = Tree(feature=np.array([0, -1, -1]), threshold=np.array([0.5, 0, 0], np.float32),
...          left=np.array([1, -1, -1]), right=np.array([2, -1, -1]),
...          nan_left=np.array([False, False, False]), value=np.array([0.0, -1.0, 2.0]))
>>> TreeEnsemble((t,), base_score=0.25, n_features=1).predict(np.array([[0.5], [0.6], [np.nan]])).tolist()
[-0.75, 2.25, 2.25]
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

FLOAT32 = np.float32


def float32_at_most(t: float) -> np.float32:
    """The largest float32 ``<= t``: for float32 ``x``, ``x <= t`` iff ``x <= float32_at_most(t)``.

    >>> float(float32_at_most(0.1)) <= 0.1 < float(np.nextafter(float32_at_most(0.1), np.float32(1)))
    True
    """
    with np.errstate(over="ignore"):
        d = FLOAT32(t)
    if float(d) > t:
        d = np.nextafter(d, FLOAT32(-np.inf))
    return FLOAT32(d)


def float32_above(t: np.float32) -> np.float32:
    """The next float32 above ``t``: for float32 ``x``, ``x <= t`` iff ``x < float32_above(t)``.

    >>> float(float32_above(np.float32(1.0))) - 1.0 == 2.0**-23
    True
    """
    return FLOAT32(np.nextafter(FLOAT32(t), FLOAT32(np.inf)))


def float32_below_double(u: float) -> np.float32:
    """The largest float32 strictly below ``u``: for float32 ``x``, ``x < u`` iff ``x <= float32_below_double(u)``.

    >>> float(float32_below_double(1.0)) == 1.0 - 2.0**-24
    True
    """
    d = float32_at_most(u)
    if float(d) == u:
        d = np.nextafter(d, FLOAT32(-np.inf))
    return FLOAT32(d)


def java_float(value: Any) -> str:
    """A float32 as text Java's ``Float.parseFloat`` reads back exactly (``Infinity`` for inf).

    >>> java_float(np.float32(0.1)), java_float(np.float32(-np.inf))
    ('0.10000000149011612', '-Infinity')
    """
    v = float(FLOAT32(value))
    if np.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return repr(v)


def float_text(value: Any) -> float:
    """A float32 as the Python float (double) of the same value; its ``repr`` parses back exactly.

    Java's ``Float.parseFloat`` and ``(float)`` of a parsed double both read that text as this float32.

    >>> float_text(np.float32(0.1))
    0.10000000149011612
    """
    return float(FLOAT32(value))


@dataclass(frozen=True)
class Tree:
    """One tree in flat arrays (node 0 is the root; ``feature == -1`` marks a leaf)."""

    feature: np.ndarray  # int: 0-based feature column, -1 at leaves
    threshold: np.ndarray  # float32: go left iff x <= threshold
    left: np.ndarray  # int: left child, -1 at leaves
    right: np.ndarray  # int: right child, -1 at leaves
    nan_left: np.ndarray  # bool: a NaN (missing) value goes left
    value: np.ndarray  # float64: leaf output (0 at split nodes)

    @property
    def is_leaf(self) -> np.ndarray:
        return self.feature < 0

    def scaled(self, factor: float) -> Tree:
        """The tree with every leaf output multiplied by ``factor``."""
        return replace(self, value=self.value * float(factor))

    def shifted(self, offset: float) -> Tree:
        """The tree with ``offset`` added to every leaf output."""
        return replace(self, value=np.where(self.is_leaf, self.value + float(offset), self.value))

    def leaf_of(self, X: np.ndarray) -> np.ndarray:
        """The leaf each row of float32 ``X`` reaches."""
        node = np.zeros(X.shape[0], dtype=np.int64)
        rows = np.arange(X.shape[0])
        while True:
            active = ~self.is_leaf[node]
            if not active.any():
                return node
            r, n = rows[active], node[active]
            x = X[r, self.feature[n]]
            go_left = np.where(np.isnan(x), self.nan_left[n], x <= self.threshold[n])
            node[active] = np.where(go_left, self.left[n], self.right[n])


@dataclass(frozen=True)
class TreeEnsemble:
    """score(x) = base_score + Σ_trees leaf value reached by x (canonical splits, module docstring)."""

    trees: tuple[Tree, ...]
    base_score: float
    n_features: int
    source: str = "lightgbm"  # the engine(s) the trees came from, for the formats' metadata
    objective: str = "lambdarank"  # the training objective(s): raw margins, no output transform

    def predict(self, X: Any) -> np.ndarray:
        """Scores of float32 rows (float64 sums), NaN = missing."""
        X = np.asarray(X, dtype=FLOAT32)
        total = np.full(X.shape[0], float(self.base_score))
        for tree in self.trees:
            total += tree.value[tree.leaf_of(X)]
        return total

    def scaled(self, factor: float) -> TreeEnsemble:
        return replace(
            self, trees=tuple(t.scaled(factor) for t in self.trees), base_score=self.base_score * factor
        )

    def base_folded(self) -> TreeEnsemble:
        """The same function with ``base_score`` added to the first tree's leaves (base 0 after)."""
        trees = self.trees or (_leaf_tree(0.0),)
        return replace(self, trees=(trees[0].shifted(self.base_score), *trees[1:]), base_score=0.0)

    def thresholds(self) -> dict[int, np.ndarray]:
        """Feature column → the sorted float32 thresholds the trees split it at (for edge-case rows)."""
        found: dict[int, set[float]] = {}
        for tree in self.trees:
            for f, t in zip(tree.feature[~tree.is_leaf], tree.threshold[~tree.is_leaf], strict=True):
                found.setdefault(int(f), set()).add(float(t))
        return {f: np.array(sorted(v), dtype=FLOAT32) for f, v in found.items()}


@dataclass(frozen=True)
class LinearScorer:
    """score(x) = bias + Σ_j weights_j · x_j (float64)."""

    weights: np.ndarray
    bias: float

    @property
    def n_features(self) -> int:
        return int(self.weights.shape[0])

    def predict(self, X: Any) -> np.ndarray:
        return np.asarray(X, dtype=np.float64) @ self.weights + self.bias


@dataclass(frozen=True)
class ExpectedGrade:
    """McRank: score = Σ_k k · softmax_k(m_0 … m_{K−1}), ``m_k`` the raw sum of class ``k``'s trees.

    Not an additive tree model: only ONNX expresses it (a multi-target tree ensemble, Softmax, MatMul).
    """

    classes: tuple[TreeEnsemble, ...]

    @property
    def n_features(self) -> int:
        return self.classes[0].n_features

    def predict(self, X: Any) -> np.ndarray:
        margins = np.column_stack([c.predict(X) for c in self.classes])
        margins -= margins.max(axis=1, keepdims=True)
        probs = np.exp(margins)
        probs /= probs.sum(axis=1, keepdims=True)
        return probs @ np.arange(len(self.classes), dtype=np.float64)


Exportable = TreeEnsemble | LinearScorer | ExpectedGrade


def _leaf_tree(value: float) -> Tree:
    return Tree(
        feature=np.array([-1]),
        threshold=np.zeros(1, FLOAT32),
        left=np.array([-1]),
        right=np.array([-1]),
        nan_left=np.array([False]),
        value=np.array([float(value)]),
    )


class TreeBuilder:
    """Builds a :class:`Tree` node by node (the readers of the written formats use it too)."""

    def __init__(self) -> None:
        self.columns: dict[str, list[Any]] = {
            k: [] for k in ("feature", "threshold", "left", "right", "nan_left", "value")
        }

    def add(self) -> int:
        """A new node (a leaf of value 0 until :meth:`leaf` or :meth:`split` sets it); its index."""
        for key, blank in zip(self.columns, (-1, FLOAT32(0), -1, -1, False, 0.0), strict=True):
            self.columns[key].append(blank)
        return len(self.columns["feature"]) - 1

    def leaf(self, i: int, value: float) -> None:
        self.columns["value"][i] = float(value)

    def split(self, i: int, feature: int, threshold: Any, nan_left: bool, left: int, right: int) -> None:
        """Node ``i`` sends float32 ``x <= threshold`` to ``left`` (NaN: left iff ``nan_left``)."""
        for key, v in zip(
            ("feature", "threshold", "nan_left", "left", "right"),
            (int(feature), FLOAT32(threshold), bool(nan_left), int(left), int(right)),
            strict=True,
        ):
            self.columns[key][i] = v

    def tree(self) -> Tree:
        c = self.columns
        return Tree(
            feature=np.array(c["feature"], dtype=np.int64),
            threshold=np.array(c["threshold"], dtype=FLOAT32),
            left=np.array(c["left"], dtype=np.int64),
            right=np.array(c["right"], dtype=np.int64),
            nan_left=np.array(c["nan_left"], dtype=bool),
            value=np.array(c["value"], dtype=np.float64),
        )


def zero_for_missing(X: Any) -> np.ndarray:
    """float32 ``X`` with NaN replaced by 0.0 (what engines without missing values see; inf kept).

    >>> zero_for_missing(np.array([[np.nan, np.inf]])).tolist()
    [[0.0, inf]]
    """
    X = np.array(X, dtype=FLOAT32)
    X[np.isnan(X)] = 0.0
    return X


@dataclass(frozen=True)
class Written:
    """What a target's ``write`` reports: the file's missing-value convention and how to load it.

    ``missing`` is ``"nan"`` (the engine passes NaN for a missing feature and the file keeps each
    split's default direction) or ``"zero"`` (the engine feeds 0 for a missing feature; the file has
    no default directions), so the parity check scores the native model on what the engine sees.
    """

    missing: str
    how_to_load: tuple[str, ...]
    gaps: tuple[Gap, ...] = ()  # float32 intervals where the file routes differently (stated, not hidden)


@dataclass(frozen=True, order=True)
class Gap:
    """Values ``low < x <= high`` of feature column ``feature`` go right in the file, left in the model."""

    feature: int
    low: float
    high: float

    def holds(self, feature: int, value: float) -> bool:
        return feature == self.feature and self.low < value <= self.high


def gap_note(gap: Gap, names: list[str]) -> str:
    """One line stating a gap for the export's output.

    >>> gap_note(Gap(0, 0.0, 1e-35), ["bm25"])
    'not exact: bm25 in (0.0, 1e-35] goes right in this file, left in the model'
    """
    return f"not exact: {names[gap.feature]} in ({gap.low!r}, {gap.high!r}] goes right in this file, left in the model"
