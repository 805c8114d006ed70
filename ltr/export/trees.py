"""The one representation every exporter writes from: an additive tree ensemble or a linear model.

A fitted ``ltr`` ranker is read into :class:`TreeEnsemble` (LightGBM and XGBoost models, and the
tree members of an ``ensemble_mean``/``ensemble_bagging``/``ensemble_blend`` with ``normalization:
none``, folded into one additive model), :class:`LinearScorer` (``linear``) or
:class:`ExpectedGrade` (``classification``, McRank: ONNX only). Anything else is refused with the
reason (:class:`~ltr.errors.ConfigError`).

**Canonical split.** Every node reads: *a float32 feature value ``x`` goes left iff ``x <= t``, with
``t`` a float32; NaN goes left iff ``nan_left``*. Engines score float32 features (``ltr`` reads
features as float32 too), so the engines' own comparisons convert exactly:

* LightGBM ``x <= t`` with a float64 ``t``: ``t' = `` the largest float32 ``<= t``
  (:func:`float32_at_most`), moved past ±1e-35 where LightGBM's predictor reads ``|x| <= 1e-35``
  as 0 (:func:`lightgbm_threshold`); NaN follows LightGBM's missing type (``NaN``: the default
  direction; ``None``: NaN is scored as 0.0, so it goes where 0.0 goes; ``Zero``: 0 and NaN take
  the default direction — exact only when that is where 0.0 goes anyway, refused otherwise);
* XGBoost ``x < t`` with a float32 ``t``: ``t' = `` the float32 just below ``t``; NaN takes the
  node's default direction.

Targets that compare with ``<`` get back ``next_float32(t')`` (:func:`float32_above`).

Only the trees of the best iteration are read (``ranker.n_iterations_``); XGBoost's ``base_score`` is
kept in :attr:`TreeEnsemble.base_score` (LightGBM already folds its initial score into the first
tree). Scores are raw margins: the ranking objectives (lambdarank, rank_xendcg, rank:ndcg,
regression) have no output transform.

>>> t = Tree(feature=np.array([0, -1, -1]), threshold=np.array([0.5, 0, 0], np.float32),
...          left=np.array([1, -1, -1]), right=np.array([2, -1, -1]),
...          nan_left=np.array([False, False, False]), value=np.array([0.0, -1.0, 2.0]))
>>> TreeEnsemble((t,), base_score=0.25, n_features=1).predict(np.array([[0.5], [0.6], [np.nan]])).tolist()
[-0.75, 2.25, 2.25]
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ltr.errors import ConfigError, DataError
from ltr.models.fusion import check_weights

FLOAT32 = np.float32
#: LightGBM's kZeroThreshold (``1e-35f``): its predictor reads every |x| <= this as 0.0
LIGHTGBM_ZERO = float(np.float32(1e-35))
#: LightGBM reads ±inf as ±1e300 (Common::AvoidInf) and splits "every non-missing value" at 1e300
LIGHTGBM_INF = 1e300
#: models whose scores are raw margins of a ranking or squared-error objective (no output transform)
TREE_FAMILIES = ("lambdamart", "xendcg", "regression", "lambdamart_xgb")
#: ensembles whose combination is a weighted sum of raw member scores when normalization is none
FOLDABLE_ENSEMBLES = ("ensemble_mean", "ensemble_bagging", "ensemble_blend")


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


#: the refusal every format but ONNX gives a McRank model
MCRANK_REFUSED = (
    "classification (McRank) scores the expected grade Σ_k k·softmax_k over per-class tree sums; that is "
    "not an additive tree model, so only --format onnx can express it"
)

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


# --- LightGBM --------------------------------------------------------------------------------------
def lightgbm_threshold(t: float) -> np.float32:
    """The canonical float32 threshold of LightGBM's ``x <= t`` (float64 ``t``).

    LightGBM's predictor drops every value with ``|x| <= 1e-35f`` (kZeroThreshold) from a row, i.e.
    scores it as 0.0, before comparing; so those values go where 0 goes: the threshold is the
    largest float32 ``<= t``, raised to 1e-35f when 0 goes left, lowered below -1e-35f when it goes
    right. LightGBM also reads ±inf as ±1e300 (its ``AvoidInf``), so its split at ``t = 1e300``
    (every non-missing value left) sends +inf left: the canonical threshold is then +inf.

    >>> float(lightgbm_threshold(-1e-35)) < -1e-35, float(lightgbm_threshold(0.0)) == LIGHTGBM_ZERO
    (True, True)
    >>> lightgbm_threshold(1e300)
    np.float32(inf)
    """
    if t >= LIGHTGBM_INF:
        return FLOAT32(np.inf)
    d = float32_at_most(t)
    zero = FLOAT32(LIGHTGBM_ZERO)
    if t >= 0.0:
        return max(d, zero)
    return min(d, FLOAT32(np.nextafter(-zero, FLOAT32(-np.inf))))


def _lightgbm_tree(structure: dict[str, Any], where: str) -> Tree:
    build = TreeBuilder()

    def add(node: dict[str, Any]) -> int:
        i = build.add()
        if "leaf_value" in node:
            build.leaf(i, node["leaf_value"])
            return i
        if node["decision_type"] != "<=":
            raise ConfigError(
                f"{where}: a categorical split ({node['decision_type']!r} on feature {node['split_feature'] + 1}); "
                "the export formats read numerical splits only — retrain without categorical_feature"
            )
        t = float(node["threshold"])
        zero_left = t >= 0.0
        missing = node["missing_type"]
        if missing == "NaN":
            nan = bool(node["default_left"])
        elif missing == "None":
            nan = zero_left  # LightGBM scores NaN as 0.0
        else:  # "Zero": 0 (|x| <= 1e-35) and NaN take the default direction
            nan = bool(node["default_left"])
            if nan != zero_left:
                raise ConfigError(
                    f"{where}: a zero_as_missing split on feature {node['split_feature'] + 1} sends 0 against its "
                    "threshold; no export format can express that — retrain without zero_as_missing"
                )
        left, right = add(node["left_child"]), add(node["right_child"])
        build.split(i, node["split_feature"], lightgbm_threshold(t), nan, left, right)
        return i

    add(structure)
    return build.tree()


def from_lightgbm(booster: Any, n_iterations: int | None, where: str = "model") -> tuple[TreeEnsemble, ...]:
    """The trees of a LightGBM booster's first ``n_iterations`` rounds (all when None), one model per
    class (a single one unless multiclass: tree ``k`` belongs to class ``k mod K``)."""
    dump = booster.dump_model(num_iteration=n_iterations if n_iterations else -1)
    if dump.get("average_output"):
        raise ConfigError(f"{where}: a LightGBM random-forest model (average_output); not exported")
    per_round = int(dump.get("num_tree_per_iteration", 1))
    trees = [
        _lightgbm_tree(info["tree_structure"], f"{where}, tree {k}")
        for k, info in enumerate(dump["tree_info"])
    ]
    objective = str(dump.get("objective", "regression")).split()[0]
    n_features = int(dump["max_feature_idx"]) + 1
    return tuple(
        TreeEnsemble(tuple(trees[k::per_round]), 0.0, n_features, source="lightgbm", objective=objective)
        for k in range(per_round)
    )


# --- XGBoost ---------------------------------------------------------------------------------------
def _xgboost_base_score(learner: dict[str, Any]) -> float:
    raw = str(learner["learner_model_param"]["base_score"]).strip("[]")
    values = [float(v) for v in raw.split(",") if v.strip()]
    if len(values) != 1:
        raise ConfigError(f"XGBoost model: expected one base_score, got {raw!r}")
    return values[0]


def from_xgboost(booster: Any, n_iterations: int | None, where: str = "model") -> TreeEnsemble:
    """The trees of an XGBoost ``gbtree`` booster's first ``n_iterations`` rounds, with its base_score."""
    if n_iterations is not None and n_iterations < booster.num_boosted_rounds():
        booster = booster[:n_iterations]
    model = json.loads(bytes(booster.save_raw("json")))
    learner = model["learner"]
    objective = learner["objective"]["name"]
    if not objective.startswith(("rank:", "reg:squarederror")):
        raise ConfigError(f"{where}: XGBoost objective {objective!r} has an output transform; not exported")
    booster_cfg = learner["gradient_booster"]
    if booster_cfg["name"] != "gbtree":
        raise ConfigError(
            f"{where}: XGBoost booster {booster_cfg['name']!r}; only gbtree models are exported"
        )
    trees = []
    for k, raw in enumerate(booster_cfg["model"]["trees"]):
        if any(int(s) != 0 for s in raw.get("split_type", [])):
            raise ConfigError(f"{where}, tree {k}: categorical splits are not exported")
        left = np.asarray(raw["left_children"], dtype=np.int64)
        leaf = left < 0
        cond = np.asarray(raw["split_conditions"], dtype=FLOAT32)
        below = np.nextafter(cond, FLOAT32(-np.inf)).astype(FLOAT32)  # x < t  <=>  x <= prev(t)
        trees.append(
            Tree(
                feature=np.where(leaf, -1, np.asarray(raw["split_indices"], dtype=np.int64)),
                threshold=np.where(leaf, FLOAT32(0), below).astype(FLOAT32),
                left=left,
                right=np.asarray(raw["right_children"], dtype=np.int64),
                nan_left=np.asarray(raw["default_left"], dtype=bool) & ~leaf,
                value=np.where(leaf, np.asarray(raw["split_conditions"], dtype=np.float64), 0.0),
            )
        )
    n_features = int(learner["learner_model_param"]["num_feature"])
    base = _xgboost_base_score(learner)
    return TreeEnsemble(tuple(trees), base, n_features, source="xgboost", objective=objective)


# --- from a fitted ltr ranker ----------------------------------------------------------------------
def _member_coefficients(ranker: Any, where: str) -> np.ndarray:
    """The weights c_j with score = Σ_j c_j · s_j, or a ConfigError saying why there are none."""
    name = ranker.name
    normalization = ranker.params_.get("normalization")
    if name not in FOLDABLE_ENSEMBLES:
        raise ConfigError(
            f"{where}: a {name} ensemble combines the members' per-query ranks or a second-level model; no "
            f"export format scores one document at a time that way (foldable: {', '.join(FOLDABLE_ENSEMBLES)})"
        )
    if normalization != "none":
        raise ConfigError(
            f"{where}: {name} normalises each member's scores per query ({normalization}), which depends on the "
            "other documents of the query; only normalization: none folds into one additive model"
        )
    n = len(ranker.rankers_)
    if name == "ensemble_blend":
        return np.asarray(ranker.weights_, dtype=np.float64)
    w = check_weights(ranker.params_.get("weights"), n)
    return w / w.sum()


def from_ranker(ranker: Any, where: str = "model") -> Exportable:
    """The exportable form of a fitted ``ltr`` ranker (module docstring), or a ConfigError with the reason."""
    name = getattr(ranker, "name", type(ranker).__name__)
    if name == "linear":
        return LinearScorer(np.asarray(ranker.weights_, dtype=np.float64), float(ranker.bias_))
    if hasattr(ranker, "rankers_"):
        coefficients = _member_coefficients(ranker, where)
        parts = [
            from_ranker(member, f"{where}, member {spec.label}")
            for member, spec in zip(ranker.rankers_, ranker.member_specs, strict=True)
        ]
        if all(isinstance(p, LinearScorer) for p in parts):
            return LinearScorer(
                sum(c * p.weights for c, p in zip(coefficients, parts, strict=True)),  # type: ignore[misc]
                float(sum(c * p.bias for c, p in zip(coefficients, parts, strict=True))),  # type: ignore[misc]
            )
        if not all(isinstance(p, TreeEnsemble) for p in parts):
            raise ConfigError(
                f"{where}: {name} mixes tree and linear members; only one kind folds into one model"
            )
        scaled = [p.scaled(c) for c, p in zip(coefficients, parts, strict=True)]  # type: ignore[union-attr]
        return TreeEnsemble(
            tuple(t for p in scaled for t in p.trees),  # type: ignore[union-attr]
            float(sum(p.base_score for p in scaled)),  # type: ignore[union-attr]
            int(ranker.n_features_in_),
            source="+".join(sorted({p.source for p in scaled})),  # type: ignore[union-attr]
            objective="+".join(sorted({p.objective for p in scaled})),  # type: ignore[union-attr]
        )
    engine = getattr(ranker, "engine", "")
    if engine == "lightgbm" and hasattr(ranker, "booster_"):
        classes = from_lightgbm(ranker.booster_, ranker.n_iterations_, where)
        if name == "classification":
            return ExpectedGrade(classes)
        if len(classes) != 1:
            raise ConfigError(
                f"{where}: a multiclass LightGBM {name} model; only classification (McRank) is read"
            )
        return classes[0]
    if engine == "xgboost" and hasattr(ranker, "booster_"):
        return from_xgboost(ranker.booster_, ranker.n_iterations_, where)
    raise ConfigError(
        f"{where}: a {name} model is not exported; exportable: {', '.join(TREE_FAMILIES)}, linear, and "
        f"{', '.join(FOLDABLE_ENSEMBLES)} with normalization: none"
    )


def check_matrix(X: Any, n_features: int, where: str) -> np.ndarray:
    """``X`` as a dense float32 matrix with ``n_features`` columns (a DataError naming ``where`` if not)."""
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=FLOAT32)
    if X.ndim != 2 or X.shape[1] != n_features:
        raise DataError(f"{where}: expected {n_features} feature columns, got shape {X.shape}")
    return X
