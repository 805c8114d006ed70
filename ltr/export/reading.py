"""Reading a fitted ``ltr`` ranker into the shared form of :mod:`ltr.export.trees`.

A fitted ``ltr`` ranker is read into :class:`TreeEnsemble` (LightGBM and XGBoost models, and the
tree members of an ``ensemble_mean``/``ensemble_bagging``/``ensemble_blend`` with ``normalization:
none``, folded into one additive model), :class:`LinearScorer` (``linear``) or
:class:`ExpectedGrade` (``classification``, McRank: ONNX only). Anything else is refused with the
reason (:class:`~ltr.core.errors.ConfigError`).

Each engine's split converts exactly to the canonical ``x <= t`` (float32 ``t``, a NaN direction):

* LightGBM ``x <= t`` with a float64 ``t``: ``t' = `` the largest float32 ``<= t``
  (:func:`~ltr.export.trees.float32_at_most`), moved past ±1e-35 where LightGBM's predictor reads ``|x| <= 1e-35``
  as 0 (:func:`lightgbm_threshold`); NaN follows LightGBM's missing type (``NaN``: the default
  direction; ``None``: NaN is scored as 0.0, so it goes where 0.0 goes; ``Zero``: 0 and NaN take
  the default direction — exact only when that is where 0.0 goes anyway, refused otherwise);
* XGBoost ``x < t`` with a float32 ``t``: ``t' = `` the float32 just below ``t``; NaN takes the
  node's default direction.

Only the trees of the best iteration are read (``ranker.n_iterations_``); XGBoost's ``base_score`` is
kept in :attr:`TreeEnsemble.base_score` (LightGBM already folds its initial score into the first
tree). Scores are raw margins: the ranking objectives (lambdarank, rank_xendcg, rank:ndcg,
regression) have no output transform.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ltr.core.errors import ConfigError
from ltr.export.neural import NeuralScorer, from_neural, is_neural
from ltr.export.normalize import fold_normalization
from ltr.export.selection import selection_of, widen
from ltr.export.trees import (
    FLOAT32,
    ExpectedGrade,
    Exportable,
    LinearScorer,
    Tree,
    TreeBuilder,
    TreeEnsemble,
    float32_at_most,
)
from ltr.models.ensembles.fusion import check_weights
from ltr.models.normalized import fitted_normalizer

#: LightGBM's kZeroThreshold (``1e-35f``): its predictor reads every |x| <= this as 0.0
LIGHTGBM_ZERO = float(np.float32(1e-35))
#: LightGBM reads ±inf as ±1e300 (Common::AvoidInf) and splits "every non-missing value" at 1e300
LIGHTGBM_INF = 1e300
#: models whose scores are raw margins of a ranking or squared-error objective (no output transform)
TREE_FAMILIES = ("lambdamart", "xendcg", "regression", "lambdamart_xgb")
#: ensembles whose combination is a weighted sum of raw member scores when normalization is none
FOLDABLE_ENSEMBLES = ("ensemble_mean", "ensemble_bagging", "ensemble_blend")

#: LightGBM's objectives (its docs' list, canonical names as a model file records them) → the output
#: transform its ``predict`` applies to the raw tree sum, or None. Only raw scores are exported (the
#: formats write the tree sum); tests/test_export.py trains each and checks the transform against
#: ``predict(raw_score=True)``. ``multiclass`` is McRank's, read class by class (:class:`ExpectedGrade`).
LIGHTGBM_OBJECTIVES: dict[str, str | None] = {
    "regression": None, "regression_l1": None, "huber": None, "fair": None, "quantile": None, "mape": None,
    "lambdarank": None, "rank_xendcg": None,
    "poisson": "exp", "gamma": "exp", "tweedie": "exp",
    "binary": "sigmoid", "cross_entropy": "sigmoid", "cross_entropy_lambda": "log(1 + exp)",
    "multiclass": "softmax", "multiclassova": "sigmoid per class",
}  # fmt: skip
#: XGBoost's objectives (its docs' list) → the transform ``predict`` applies to the margin, or None
#: (checked by the tests against ``predict(output_margin=True)``)
XGBOOST_OBJECTIVES: dict[str, str | None] = {
    "reg:squarederror": None, "reg:squaredlogerror": None, "reg:pseudohubererror": None,
    "reg:absoluteerror": None, "reg:quantileerror": None, "binary:logitraw": None,
    "rank:ndcg": None, "rank:map": None, "rank:pairwise": None,
    "reg:logistic": "sigmoid", "binary:logistic": "sigmoid", "binary:hinge": "a 0/1 step",
    "count:poisson": "exp", "reg:gamma": "exp", "reg:tweedie": "exp", "survival:cox": "exp",
    "survival:aft": "exp", "multi:softmax": "argmax", "multi:softprob": "softmax",
}  # fmt: skip


def check_objective(engine: str, objective: str, where: str, allowed: tuple[str, ...] = ()) -> None:
    """Refuse an objective whose scores are not the raw tree sum (its engine's table above), or one not in
    the table, naming it and the transform; ``allowed`` are read specially by the caller (McRank's softmax).

    >>> check_objective("lightgbm", "poisson", "--format onnx")
    Traceback (most recent call last):
    ltr.core.errors.ConfigError: --format onnx: LightGBM objective 'poisson' scores exp(tree sum); the formats write the raw tree sum, so the scores would differ — retrain with a raw-score objective (regression, regression_l1, huber, fair, quantile, mape, lambdarank, rank_xendcg) or export with --format lightgbm
    """
    table = LIGHTGBM_OBJECTIVES if engine == "lightgbm" else XGBOOST_OBJECTIVES
    label = "LightGBM" if engine == "lightgbm" else "XGBoost"
    raw = ", ".join(name for name, transform in table.items() if transform is None)
    if objective in allowed:
        return
    if objective not in table:
        raise ConfigError(
            f"{where}: {label} objective {objective!r} is not one ltr knows the output of; exportable: {raw}"
        )
    transform = table[objective]
    if transform is not None:
        raise ConfigError(
            f"{where}: {label} objective {objective!r} scores {transform}(tree sum); the formats write the raw "
            f"tree sum, so the scores would differ — retrain with a raw-score objective ({raw}) or export with "
            f"--format {engine}"
        )


#: the refusal every format but ONNX gives a McRank model
MCRANK_REFUSED = (
    "classification (McRank) scores the expected grade Σ_k k·softmax_k over per-class tree sums; that is "
    "not an additive tree model, so only --format onnx can express it"
)


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


def _has_linear_leaves(node: dict[str, Any]) -> bool:
    """Whether a dumped LightGBM tree has a leaf with linear coefficients (``linear_tree``)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if "leaf_value" in n:
            if "leaf_const" in n or n.get("leaf_coeff"):  # a linear leaf scores leaf_const + Σ coeff·x
                return True
        else:
            stack += [n["left_child"], n["right_child"]]
    return False


def from_lightgbm(booster: Any, n_iterations: int | None, where: str = "model") -> tuple[TreeEnsemble, ...]:
    """The trees of a LightGBM booster's first ``n_iterations`` rounds (all when None), one model per
    class (a single one unless multiclass: tree ``k`` belongs to class ``k mod K``)."""
    dump = booster.dump_model(num_iteration=n_iterations if n_iterations else -1)
    if dump.get("average_output"):
        raise ConfigError(f"{where}: a LightGBM random-forest model (average_output); not exported")
    objective = str(dump.get("objective", "regression")).split()[0]
    check_objective("lightgbm", objective, where, allowed=("multiclass",))
    if any(_has_linear_leaves(info["tree_structure"]) for info in dump["tree_info"]):
        raise ConfigError(
            f"{where}: a LightGBM model trained with linear_tree=true (each leaf a linear function of the "
            "features); this format holds constant leaves only — retrain with linear_tree=false, or export with "
            "--format lightgbm"
        )
    per_round = int(dump.get("num_tree_per_iteration", 1))
    trees = [
        _lightgbm_tree(info["tree_structure"], f"{where}, tree {k}")
        for k, info in enumerate(dump["tree_info"])
    ]
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
    check_objective("xgboost", objective, where)
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
    """The exportable form of a fitted ``ltr`` ranker (module docstring), or a ConfigError with the reason;
    over the original feature ids when it was trained on a feature selection (:mod:`ltr.export.selection`)."""
    return widen(_kept_columns_form(ranker, where), selection_of(ranker))


def _kept_columns_form(ranker: Any, where: str) -> Exportable:
    """:func:`from_ranker` over the columns the ranker was trained on."""
    name = getattr(ranker, "name", type(ranker).__name__)
    if name == "linear":
        return LinearScorer(np.asarray(ranker.weights_, dtype=np.float64), float(ranker.bias_))
    if hasattr(ranker, "rankers_"):
        coefficients = _member_coefficients(ranker, where)
        parts = [
            _kept_columns_form(member, f"{where}, member {spec.label}")
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
    if is_neural(ranker):
        raise ConfigError(
            f"{where}: a {name} network does not fold into one tree or linear model with the other members; "
            "export the network alone with --format onnx"
        )
    raise ConfigError(
        f"{where}: a {name} model is not exported; exportable: {', '.join(TREE_FAMILIES)}, linear, and "
        f"{', '.join(FOLDABLE_ENSEMBLES)} with normalization: none"
    )


def raw_feature_model(ranker: Any, where: str = "model") -> Exportable | NeuralScorer:
    """A neural ranker's network over raw full-width rows (:mod:`ltr.export.neural`; ONNX only), or
    :func:`from_ranker` of a model trained with ``data.normalize``, the transform folded in so it takes
    raw features (:mod:`ltr.export.normalize`), or a ConfigError naming what the engine would need. Order as
    in training: the normaliser (fitted on the kept columns) is folded into the model of the kept columns,
    which is then moved to the original feature ids (``data.features``, :mod:`ltr.export.selection`)."""
    if is_neural(ranker):
        return from_neural(ranker, where)
    kept = fold_normalization(_kept_columns_form(ranker, where), fitted_normalizer(ranker), where)
    return widen(kept, selection_of(ranker))


def export_refusal(ranker: Any) -> str | None:
    """Why ``ranker`` cannot be exported to any format (:func:`from_ranker`'s reason), or ``None`` when
    it can (to ONNX at least; a search-engine format may refuse more, e.g. McRank).

    >>> class Fitted:
    ...     name = "random_forest"
    >>> export_refusal(Fitted())
    'model: a random_forest model is not exported; exportable: lambdamart, xendcg, regression, lambdamart_xgb, linear, and ensemble_mean, ensemble_bagging, ensemble_blend with normalization: none'
    """
    try:
        raw_feature_model(ranker)
    except ConfigError as exc:
        return str(exc)
    return None
