"""The one hyper-parameter vocabulary of ``ltr`` rankers, every model's parameter block, and its checks.

Every model config has the same four keys (plus ``clicks`` for click-trained models)::

    name: lambdamart
    params: {n_trees: 500, learning_rate: 0.1, ...}   # the ltr vocabulary below
    early_stopping: {metric: ndcg@10, patience: 50}    # EarlyStopping
    engine_params: {}                                   # passed verbatim to the engine, last word

**Vocabulary** (:data:`SPECS`: type and range of each key, written once): ``n_trees`` boosting
rounds / trees; ``learning_rate``; ``num_leaves`` (``None`` = engine unlimited); ``max_depth``
(``None`` = unlimited); ``min_data_in_leaf``; ``min_sum_hessian_in_leaf``; ``lambda_l1`` /
``lambda_l2`` (leaf-weight regularisation); ``max_bin``; ``truncation_level`` (pairs are formed with
the top-k positions only); ``label_gain`` (``None``/``"exp2"`` = 2^l − 1, ``"linear"`` = l, or an
explicit table ``[g_0, g_1, ...]`` indexed by label); ``feature_fraction`` (features per tree);
``bagging_fraction`` (rows — or queries with ``bagging_by_query`` — per tree).

**Defaults, once per model** (:data:`MODEL_PARAMS`): each model accepts a subset of the vocabulary with
its own defaults, declared as a dataclass by :func:`params_block`. The ranker class finds its block here
by name; Hydra composes the same dataclass under each ``conf/model/NAME.yaml`` (which holds only what
differs), so the resolved config still lists every value. A key outside a model's block is a
:class:`~ltr.core.errors.ConfigError` listing the accepted keys; a vocabulary key the engine cannot honour
gets the reason and the alternative.

>>> resolve_params(MODEL_PARAMS["linear"], {"alpha": 2}, model="linear")
{'alpha': 2.0}
>>> resolve_params(MODEL_PARAMS["linear"], {"alpha": -1}, model="linear")
Traceback (most recent call last):
...
ltr.core.errors.ConfigError: model.params.alpha: must be in [0.0, inf], got -1
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ltr.clicks import ClickConfig
from ltr.core.config_check import CHECK, Constraint, check_block, join, plain, setting
from ltr.core.errors import ConfigError, MetricError
from ltr.metrics.conventions import resolve_conventions
from ltr.metrics.registry import parse_metric
from ltr.models.ensembles.fusion import NORMALIZATIONS

__all__ = [
    "MODEL_CONFIGS",
    "MODEL_PARAMS",
    "SPECS",
    "EarlyStopping",
    "check_label_gain",
    "gain_table",
    "model_config_block",
    "params_block",
    "plain",
    "resolve_early_stopping",
    "resolve_params",
]


def check_label_gain(value: Any, where: str) -> str | list[float]:
    """``"exp2"`` (also for ``None``), ``"linear"`` or a list of finite, non-negative gains.

    >>> check_label_gain([0, 1, 3], "params.label_gain")
    [0.0, 1.0, 3.0]
    """
    if value is None:
        return "exp2"
    if isinstance(value, str):
        if value not in ("exp2", "linear"):
            raise ConfigError(f"{where}: expected 'exp2', 'linear' or a list of gains, got {value!r}")
        return value
    try:
        gains = [float(g) for g in value]
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: expected 'exp2', 'linear' or a list of gains, got {value!r}") from None
    if not gains or any(not math.isfinite(g) or g < 0 for g in gains):
        raise ConfigError(f"{where}: gains must be a non-empty list of finite numbers >= 0, got {value!r}")
    return gains


def gain_table(label_gain: str | list[float], max_label: int) -> list[float]:
    """Gain per label ``0..max_label`` (at least that long) for a ``label_gain`` setting.

    >>> gain_table("exp2", 3), gain_table("linear", 2)
    ([0.0, 1.0, 3.0, 7.0], [0.0, 1.0, 2.0])
    """
    if label_gain == "exp2":
        return [float(2**label - 1) for label in range(max_label + 1)]
    if label_gain == "linear":
        return [float(label) for label in range(max_label + 1)]
    return list(label_gain)


def _feature_column(value: Any, where: str) -> Any:
    if isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= 1:
        return int(value)
    if value == "best":
        return value
    raise ConfigError(
        f"{where}: must be a feature id >= 1 (1-based, as in SVMlight files) or 'best', got {value!r}"
    )


#: the neural rankers' losses (``ltr.models.neural.losses.LOSSES``; a test keeps the two equal)
NEURAL_LOSSES = ("softmax", "listmle", "approxndcg", "pairwise", "lambdaloss")


def _hidden_units(value: Any, where: str) -> list[int]:
    """A non-empty list of whole layer widths >= 1.

    >>> _hidden_units([64, 32.0], "params.hidden_units")
    [64, 32]
    """
    whole = isinstance(value, list | tuple) and all(
        isinstance(u, int | float | np.integer | np.floating) and not isinstance(u, bool) and u == int(u) >= 1
        for u in value
    )
    if not whole or not value:
        raise ConfigError(
            f"{where}: expected a non-empty list of layer widths >= 1, e.g. [256, 128], got {value!r}"
        )
    return [int(u) for u in value]


#: ltr name → (type, range/choices). ``Any`` types are checked by their ``check``.
SPECS: dict[str, tuple[Any, Constraint]] = {
    "n_trees": (int, Constraint(low=1)),
    "learning_rate": (float, Constraint(low=0.0, open_low=True)),
    "num_leaves": (int | None, Constraint(low=2)),
    "max_depth": (int | None, Constraint(low=1)),
    "min_data_in_leaf": (int, Constraint(low=1)),
    "min_sum_hessian_in_leaf": (float, Constraint(low=0.0)),
    "lambda_l1": (float, Constraint(low=0.0)),
    "lambda_l2": (float, Constraint(low=0.0)),
    "max_bin": (int, Constraint(low=2)),
    "truncation_level": (int | None, Constraint(low=1)),
    "label_gain": (Any, Constraint(check=check_label_gain)),
    "feature_fraction": (float, Constraint(low=0.0, high=1.0, open_low=True)),
    "bagging_fraction": (float, Constraint(low=0.0, high=1.0, open_low=True)),
    "bagging_by_query": (bool, Constraint()),
    # model-specific parameters
    "objective": (str, Constraint(choices=("rank:ndcg", "rank:pairwise", "rank:map"))),
    "num_classes": (int | None, Constraint(low=2)),
    "alpha": (float, Constraint(low=0.0)),
    "feature": (Any, Constraint(check=_feature_column)),  # a 1-based feature id or "best"
    "direction": (str, Constraint(choices=("desc", "asc", "best"))),
    # neural rankers (ltr/models/neural/): ltr's own network, no engine to translate for
    "loss": (str, Constraint(choices=NEURAL_LOSSES)),
    "scorer": (str, Constraint(choices=("mlp", "attention"))),
    "hidden_units": (list[int], Constraint(check=_hidden_units)),
    "attention_heads": (int, Constraint(low=1)),
    "attention_layers": (int, Constraint(low=1)),
    "dropout": (float, Constraint(low=0.0, high=1.0, open_high=True)),
    "n_epochs": (int, Constraint(low=1)),
    "batch_size": (int, Constraint(low=1)),
    "max_list_size": (int | None, Constraint(low=1)),
    "weight_decay": (float, Constraint(low=0.0)),
    "feature_transform": (str, Constraint(choices=("log1p_zscore", "zscore", "none"))),
    "temperature": (float, Constraint(low=0.0, open_low=True)),
}
#: the keys only the neural rankers take: ltr's own network and optimiser, no engine translates them
NEURAL_KEYS = frozenset(
    ["loss", "scorer", "hidden_units", "attention_heads", "attention_layers", "dropout", "n_epochs",
     "batch_size", "max_list_size", "weight_decay", "feature_transform", "temperature"]
)  # fmt: skip


def params_block(class_name: str, **defaults: Any) -> type:
    """A dataclass of the vocabulary keys ``defaults`` names, with those defaults (one model's params).

    >>> block = params_block("P", n_trees=7)
    >>> check_block(block, {}, "model.params"), check_block(block, {"n_trees": 9.0}, "model.params")
    ({'n_trees': 7}, {'n_trees': 9})
    """
    unknown = sorted(set(defaults) - set(SPECS))
    if unknown:
        raise TypeError(f"{class_name}: {unknown} are not in the ltr vocabulary")  # a declaration bug
    return dataclasses.make_dataclass(
        class_name,
        [(key, SPECS[key][0], _default(value, SPECS[key][1])) for key, value in defaults.items()],
    )


def _default(value: Any, constraint: Constraint) -> Any:
    """A dataclass field with ``value`` as its default (a list as a factory: each config its own copy)."""
    if isinstance(value, list):
        return field(default_factory=lambda: list(value), metadata={CHECK: constraint})
    return field(default=value, metadata={CHECK: constraint})


# --- every model's parameter block: the one place its defaults are written ------------------------------

LIGHTGBM_TREES: dict[str, Any] = {
    "n_trees": 500,  # boosting rounds (upper bound; early stopping picks the best round)
    "learning_rate": 0.1,
    "num_leaves": 31,
    "max_depth": None,
    "min_data_in_leaf": 20,
    "min_sum_hessian_in_leaf": 1e-3,
    "lambda_l1": 0.0,
    "lambda_l2": 0.0,
    "max_bin": 255,
    "feature_fraction": 1.0,
    "bagging_fraction": 1.0,
}
XGBOOST_TREES: dict[str, Any] = {
    "objective": "rank:ndcg",
    "n_trees": 500,
    "learning_rate": 0.1,
    "max_depth": 6,
    "num_leaves": None,
    "min_sum_hessian_in_leaf": 1.0,
    "lambda_l1": 0.0,
    "lambda_l2": 1.0,
    "max_bin": 256,
    "truncation_level": 32,
    "label_gain": None,
    "feature_fraction": 1.0,
    "bagging_fraction": 1.0,
}
LAMBDARANK: dict[str, Any] = {
    **LIGHTGBM_TREES,
    "bagging_by_query": False,  # bagging_fraction samples whole queries
    "truncation_level": 30,  # lambdas use pairs involving the top-30 positions
    "label_gain": None,  # None/exp2 = 2^l - 1 (labels 0..30); linear = l; or a list of gains per label
}
#: the neural rankers (ltr/models/neural/): an MLP trained with Adam(W) on padded query lists
NEURAL: dict[str, Any] = {
    "loss": "softmax",  # one of NEURAL_LOSSES (rax); neural_<loss> sets it
    "scorer": "mlp",  # mlp: each document alone; attention: self-attention over its list
    "hidden_units": [256, 128],  # MLP widths; the last is the attention width
    "attention_heads": 2,  # must divide the last hidden width (scorer=attention)
    "attention_layers": 1,  # Transformer encoder blocks (scorer=attention)
    "dropout": 0.1,  # after each hidden layer, in training
    "n_epochs": 100,  # passes over the training queries (upper bound; early stopping picks the best)
    "batch_size": 32,  # query lists per optimiser step
    "max_list_size": 200,  # training lists longer than this are sampled down each epoch; null: no cap
    "learning_rate": 0.001,  # Adam(W) step size
    "weight_decay": 0.0,  # AdamW's decoupled weight decay
    "feature_transform": "log1p_zscore",  # fitted on train: signed log1p then z-score (Qin et al. 2021)
    "temperature": 1.0,  # ApproxNDCG's sigmoid temperature (loss=approxndcg)
}
#: click-trained models: fewer, smaller steps (no early stopping on click data)
CLICK_TREES: dict[str, Any] = {"n_trees": 200, "learning_rate": 0.05}

MODEL_PARAMS: dict[str, type] = {
    "lambdamart": params_block("LambdaMARTParams", **LAMBDARANK),
    "xendcg": params_block("XENDCGParams", **LIGHTGBM_TREES, bagging_by_query=False, label_gain=None),
    "regression": params_block("RegressionParams", **LIGHTGBM_TREES),
    "classification": params_block("ClassificationParams", **LIGHTGBM_TREES, num_classes=None),
    "lambdamart_xgb": params_block("XGBoostParams", **XGBOOST_TREES),
    "catboost": params_block(
        "CatBoostParams",
        n_trees=500,
        learning_rate=0.1,
        max_depth=6,
        lambda_l2=3.0,
        max_bin=254,
        feature_fraction=1.0,
        bagging_fraction=1.0,
    ),
    "random_forest": params_block(
        "RandomForestParams",
        n_trees=300,
        max_depth=None,
        num_leaves=None,
        min_data_in_leaf=20,
        feature_fraction=0.3,
        bagging_fraction=1.0,
    ),
    "linear": params_block("LinearParams", alpha=1.0),
    "feature": params_block("FeatureParams", feature="best", direction="best"),
    "lambdamart_unbiased": params_block("UnbiasedLambdaMARTParams", **{**LAMBDARANK, **CLICK_TREES}),
    "lambdamart_clicks": params_block("ClickLambdaMARTParams", **{**LAMBDARANK, **CLICK_TREES}),
    # XGBoost on clicks: pairs within the shown list only (top_k = 10), as in XGBoost's click-data demo
    "lambdamart_xgb_unbiased": params_block(
        "UnbiasedXGBoostParams", **{**XGBOOST_TREES, **CLICK_TREES, "truncation_level": 10}
    ),
    "lambdamart_xgb_clicks": params_block(
        "ClickXGBoostParams", **{**XGBOOST_TREES, **CLICK_TREES, "truncation_level": 10}
    ),
    **{
        f"neural_{loss}": params_block(f"Neural{loss.title()}Params", **{**NEURAL, "loss": loss})
        for loss in NEURAL_LOSSES
    },
    "neural_attention": params_block("NeuralAttentionParams", **{**NEURAL, "scorer": "attention"}),
}


def _metric_name(value: Any, where: str) -> str:
    try:
        return parse_metric(value).name
    except MetricError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _preset(value: Any, where: str) -> str:
    try:
        resolve_conventions(value)
    except MetricError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return value


@dataclass
class EarlyStopping:
    """The ``early_stopping`` block of every model config."""

    metric: str = setting("ndcg@10", check=_metric_name)  # an ltr.metrics name, computed with OUR conventions
    patience: int | None = setting(50, low=0)  # rounds without improvement; None or 0 = never stop early
    preset: str = setting("ltr", check=_preset)  # metric conventions preset (ltr.metrics presets)
    conventions: dict[str, Any] = setting({})  # single-convention overrides on top of the preset
    eval_train: bool = False  # also compute the metric on the training set every round (~0.08 µs/row/round)


@dataclass
class EpochStopping(EarlyStopping):
    """Early stopping of the neural rankers: an epoch is a pass over every query, so fewer of them."""

    patience: int | None = setting(10, low=0)


@dataclass
class FixedRounds(EarlyStopping):
    """Early stopping of models that never stop early: click-trained ones (click logs have no true labels
    to stop on; stopping on the simulation's true validation labels would leak them) and one-shot ones
    (the metric is recorded once on the validation split)."""

    patience: int | None = setting(None, low=0)


#: click-trained models (ltr/models/clicks/unbiased.py): their config has a ``clicks`` block
CLICK_TRAINED = (
    "lambdamart_unbiased",
    "lambdamart_clicks",
    "lambdamart_xgb_unbiased",
    "lambdamart_xgb_clicks",
)
#: the neural rankers (ltr/models/neural/ranker.py): early stopping counts epochs (EpochStopping)
NEURAL_MODELS = (*(f"neural_{loss}" for loss in NEURAL_LOSSES), "neural_attention")
#: models whose early_stopping block defaults to ``patience: null``
FIXED_ROUNDS = ("linear", "random_forest", "feature", *CLICK_TRAINED)


def model_config_block(name: str, params: type, *, clicks: bool = False) -> type:
    """The dataclass of a whole model config: ``name``, ``params``, ``early_stopping``, ``engine_params``
    (and ``clicks`` for click-trained models); what Hydra composes under ``conf/model/NAME.yaml``."""
    stopping = (
        FixedRounds if name in FIXED_ROUNDS else EpochStopping if name in NEURAL_MODELS else EarlyStopping
    )
    fields: list[Any] = [
        ("name", str, field(default=name)),
        ("params", params, field(default_factory=params)),
        ("early_stopping", stopping, field(default_factory=stopping)),
        ("engine_params", dict[str, Any], field(default_factory=dict)),
    ]
    if clicks:
        fields.append(("clicks", ClickConfig, field(default_factory=ClickConfig)))
    return dataclasses.make_dataclass(f"{params.__name__.removesuffix('Params')}Config", fields)


# --- ensembles (ltr/models/ensembles/ensemble.py): the combination's params, and the members ------------------------


def _non_negative(value: Any, where: str) -> Any:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float | np.integer | np.floating)
        or not value >= 0
    ):
        raise ConfigError(f"{where}: expected a number >= 0, got {value!r}")
    return value.item() if isinstance(value, np.generic) else value


def _normalizations(value: list[str], where: str) -> list[str]:
    for i, name in enumerate(value):
        if name not in NORMALIZATIONS[1:]:
            raise ConfigError(f"{where}[{i}]: expected one of {list(NORMALIZATIONS[1:])}, got {name!r}")
    return value


def _normalization(default: str) -> Any:
    return setting(default, choices=NORMALIZATIONS)  # per query, before combining


@dataclass
class MeanParams:
    normalization: str = _normalization("zscore")
    weights: list[float] | None = None  # one per member; None = equal weights


@dataclass
class BaggingParams:
    normalization: str = _normalization("none")  # bagged copies share a scale: average raw scores
    weights: list[float] | None = None


@dataclass
class RRFParams:
    k: Any = setting(60, check=_non_negative)  # Cormack et al.'s constant
    weights: list[float] | None = None


@dataclass
class BordaParams:
    weights: list[float] | None = None


@dataclass
class BlendParams:
    normalization: str = _normalization("zscore")
    metric: str = setting("ndcg@10", check=_metric_name)  # maximised on the validation split
    preset: str = setting("ltr", check=_preset)  # its metric conventions
    n_restarts: int = setting(5, low=1)  # 1st at the best member, 2nd at equal weights, then random
    max_steps: int = setting(25, low=1)  # growing steps tried per direction in each line search
    max_passes: int = setting(20, low=1)  # passes over all weights per restart
    tolerance: float = setting(0.0001, low=0.0)  # a pass gaining less ends the restart


@dataclass
class StackParams:
    normalizations: list[str] = setting(["zscore", "rank"], check=_normalizations)  # extra feature copies
    n_folds: int = setting(5, low=2)  # query-grouped cross-fitting folds on the validation split


ENSEMBLE_PARAMS: dict[str, type] = {
    "ensemble_mean": MeanParams,
    "ensemble_bagging": BaggingParams,
    "ensemble_rrf": RRFParams,
    "ensemble_borda": BordaParams,
    "ensemble_blend": BlendParams,
    "ensemble_stack": StackParams,
}


def ensemble_config_block(name: str, params: type) -> type:
    """The dataclass of an ensemble config: ``name``, ``members``, ``params``, ``n_jobs`` (+ ``stacker``)."""
    fields: list[Any] = [
        ("name", str, field(default=name)),
        ("members", list[Any], field(default_factory=list)),  # model config names or {model: NAME, ...}
        ("params", params, field(default_factory=params)),
    ]
    if name == "ensemble_stack":  # the second-level ranker: a member entry
        fields.append(("stacker", Any, setting({"model": "lambdamart"})))
    fields.append(("n_jobs", int, setting(0, low=0)))  # members trained at once; 0 = as many as cores allow
    return dataclasses.make_dataclass(f"{params.__name__.removesuffix('Params')}EnsembleConfig", fields)


#: model name → the dataclass of its whole config (Hydra's base for ``conf/model/NAME.yaml``)
MODEL_CONFIGS: dict[str, type] = {
    **{
        name: model_config_block(name, block, clicks=name in CLICK_TRAINED)
        for name, block in MODEL_PARAMS.items()
    },
    **{name: ensemble_config_block(name, block) for name, block in ENSEMBLE_PARAMS.items()},
}

#: the ConfigStore group of the model bases: ``conf/model/NAME.yaml`` starts with ``/model_base/NAME@_here_``
MODEL_BASE_GROUP = "model_base"


def register_model_configs() -> None:
    """Store every :data:`MODEL_CONFIGS` entry in Hydra's ConfigStore as ``model_base/NAME`` (idempotent)."""
    from hydra.core.config_store import ConfigStore  # deferred: hydra only when composing configs

    store = ConfigStore.instance()
    stored = store.repo.get(MODEL_BASE_GROUP, {})
    for name, block in MODEL_CONFIGS.items():
        if f"{name}.yaml" not in stored:  # storing converts the dataclass again: ~10 ms a model
            store.store(group=MODEL_BASE_GROUP, name=name, node=block)


def resolve_params(
    schema: type,
    given: Mapping[str, Any] | None,
    *,
    model: str,
    where: str = "model.params",
    unsupported: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``given`` checked against the params block ``schema`` with its defaults filled in.

    Checked: every key is in the block (or is a vocabulary key ``unsupported`` explains: key → reason
    and alternative), and every value's type and range (:data:`SPECS`). Not checked here: limits
    that depend on the data (label range vs ``label_gain``) or on other keys — the model class does those.
    """
    given = plain(given)
    if isinstance(given, Mapping):
        for key in sorted(set(given) & set(unsupported or {})):
            raise ConfigError(f"model {model}: {join(where, key)} is not supported: {unsupported[key]}")  # type: ignore[index]
    return check_block(schema, given, where, owner=model)


def resolve_early_stopping(
    given: Mapping[str, Any] | None, *, schema: type = EarlyStopping, where: str = "model.early_stopping"
) -> dict[str, Any]:
    """The early-stopping block with defaults filled in and checked; ``patience`` 0 → ``None``."""
    es = check_block(schema, given, where)
    es["patience"] = es["patience"] or None
    try:
        resolve_conventions(es["preset"], **es["conventions"])
    except MetricError as exc:
        raise ConfigError(f"{join(where, 'conventions')}: {exc}") from None
    return es
