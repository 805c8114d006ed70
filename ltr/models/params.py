"""The one hyper-parameter vocabulary of ``ltr`` rankers, and its validation.

Every model config (``conf/model/NAME.yaml``) has the same four keys::

    name: lambdamart
    params: {n_trees: 500, learning_rate: 0.1, ...}   # the ltr vocabulary below
    early_stopping: {metric: ndcg@10, patience: 50}    # see EARLY_STOPPING_DEFAULTS
    engine_params: {}                                   # passed verbatim to the engine, last word

Each ranker class declares the subset of the vocabulary it understands (its ``default_params``);
a key outside that subset is a :class:`ConfigError` listing the accepted keys, so a typo or a
parameter the engine cannot honour never silently changes a result.

Vocabulary (``SPECS``): ``n_trees`` boosting rounds / trees; ``learning_rate``; ``num_leaves``
(``None`` = engine unlimited); ``max_depth`` (``None`` = unlimited); ``min_data_in_leaf``;
``min_sum_hessian_in_leaf``; ``lambda_l1`` / ``lambda_l2`` (leaf-weight regularisation);
``max_bin``; ``truncation_level`` (pairs are formed with the top-k positions only);
``label_gain`` (``None``/``"exp2"`` = 2^l − 1, ``"linear"`` = l, or an explicit table
``[g_0, g_1, ...]`` indexed by label); ``feature_fraction`` (features per tree);
``bagging_fraction`` (rows — or queries with ``bagging_by_query`` — per tree).

>>> resolve_params({"n_trees": 10, "learning_rate": 0.1}, {"learning_rate": 0.05}, model="m")
{'n_trees': 10, 'learning_rate': 0.05}
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ltr.errors import ConfigError


@dataclass(frozen=True)
class Spec:
    """Type and range of one vocabulary parameter (``low``/``high`` inclusive unless ``open_low``)."""

    kind: str  # "int", "float", "bool", "gain", "str", "raw" (checked by the model class)
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    nullable: bool = False
    choices: tuple[str, ...] = ()


SPECS: dict[str, Spec] = {
    "n_trees": Spec("int", 1),
    "learning_rate": Spec("float", 0.0, None, open_low=True),
    "num_leaves": Spec("int", 2, nullable=True),
    "max_depth": Spec("int", 1, nullable=True),
    "min_data_in_leaf": Spec("int", 1),
    "min_sum_hessian_in_leaf": Spec("float", 0.0),
    "lambda_l1": Spec("float", 0.0),
    "lambda_l2": Spec("float", 0.0),
    "max_bin": Spec("int", 2),
    "truncation_level": Spec("int", 1, nullable=True),
    "label_gain": Spec("gain", nullable=True),
    "feature_fraction": Spec("float", 0.0, 1.0, open_low=True),
    "bagging_fraction": Spec("float", 0.0, 1.0, open_low=True),
    "bagging_by_query": Spec("bool"),
    # model-specific parameters
    "objective": Spec("str", choices=("rank:ndcg", "rank:pairwise", "rank:map")),
    "num_classes": Spec("int", 2, nullable=True),
    "alpha": Spec("float", 0.0),
    "feature": Spec("raw"),  # a column index or "best"; checked by SingleFeature
    "direction": Spec("str", choices=("desc", "asc", "best")),
    "depth": Spec("int", 1, 16),
}

EARLY_STOPPING_DEFAULTS: dict[str, Any] = {
    "metric": "ndcg@10",  # a metric name of ltr.metrics, computed with OUR conventions
    "patience": 50,  # stop after this many rounds without improvement; None or 0 = never stop early
    "preset": "ltr",  # metric conventions preset (ltr.metrics presets)
    "conventions": {},  # single-convention overrides on top of the preset
    "eval_train": False,  # also compute the metric on the training set every round (~0.08 µs per row per round)
}


def plain(cfg: Any) -> Any:
    """A plain ``dict``/``list`` copy of a (possibly OmegaConf) mapping, resolved; ``None`` → ``{}``."""
    if cfg is None:
        return {}
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
    except ImportError:  # pragma: no cover - omegaconf is a dependency
        DictConfig = ListConfig = ()  # type: ignore[assignment,misc]
    if isinstance(cfg, DictConfig | ListConfig):
        return OmegaConf.to_container(cfg, resolve=True)
    if isinstance(cfg, Mapping):
        return {str(k): plain(v) if isinstance(v, Mapping) else v for k, v in cfg.items()}
    return cfg


def _check_value(key: str, value: Any, spec: Spec, where: str) -> Any:
    if spec.kind == "gain":
        return check_label_gain(value, f"{where}.{key}")
    if value is None:
        if spec.nullable:
            return None
        raise ConfigError(f"{where}.{key}: must be set (got null)")
    if spec.kind == "raw":
        return value
    if spec.kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{where}.{key}: expected true or false, got {value!r}")
        return value
    if spec.kind == "str":
        if spec.choices and value not in spec.choices:
            raise ConfigError(f"{where}.{key}: expected one of {list(spec.choices)}, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where}.{key}: expected a number, got {value!r}")
    if spec.kind == "int":
        if float(value) != int(value):
            raise ConfigError(f"{where}.{key}: expected an integer, got {value!r}")
        value = int(value)
    else:
        value = float(value)
        if not math.isfinite(value):
            raise ConfigError(f"{where}.{key}: expected a finite number, got {value!r}")
    low_bad = spec.low is not None and (value <= spec.low if spec.open_low else value < spec.low)
    high_bad = spec.high is not None and value > spec.high
    if low_bad or high_bad:
        lo = "-inf" if spec.low is None else spec.low
        hi = "inf" if spec.high is None else spec.high
        bracket = "(" if spec.open_low else "["
        raise ConfigError(f"{where}.{key}: must be in {bracket}{lo}, {hi}], got {value!r}")
    return value


def check_label_gain(value: Any, where: str) -> str | list[float]:
    """``"exp2"``, ``"linear"`` or a list of finite, non-negative, non-decreasing gains.

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


def resolve_params(
    defaults: Mapping[str, Any],
    given: Mapping[str, Any] | None,
    *,
    model: str,
    unsupported: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``defaults`` overridden by ``given``, every value checked against :data:`SPECS`.

    A vocabulary key the engine cannot honour (``unsupported``: key → reason and alternative) or an
    unknown key raises :class:`ConfigError` naming it and listing the keys ``model`` accepts.
    """
    given = plain(given)
    for key in sorted(set(given) & set(unsupported or {})):
        raise ConfigError(f"model {model}: params.{key} is not supported: {unsupported[key]}")
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ConfigError(
            f"model {model}: unknown parameter(s) {', '.join(f'params.{k}' for k in unknown)}; "
            f"{model} accepts: {', '.join(sorted(defaults))}"
        )
    merged = {**defaults, **given}
    where = f"model {model}: params"
    return {k: (_check_value(k, v, SPECS[k], where) if k in SPECS else v) for k, v in merged.items()}


def resolve_early_stopping(given: Mapping[str, Any] | None, *, model: str) -> dict[str, Any]:
    """The early-stopping block with defaults filled in and checked (metric name parsed by ltr.metrics)."""
    given = plain(given)
    unknown = sorted(set(given) - set(EARLY_STOPPING_DEFAULTS))
    if unknown:
        raise ConfigError(
            f"model {model}: unknown early_stopping key(s) {unknown}; accepted: {sorted(EARLY_STOPPING_DEFAULTS)}"
        )
    es = {**EARLY_STOPPING_DEFAULTS, **given}
    patience = es["patience"]
    if patience is not None and (isinstance(patience, bool) or not isinstance(patience, int) or patience < 0):
        raise ConfigError(
            f"model {model}: early_stopping.patience must be an integer >= 0 or null, got {patience!r}"
        )
    es["patience"] = patience or None
    if not isinstance(es["eval_train"], bool):
        raise ConfigError(
            f"model {model}: early_stopping.eval_train must be true or false, got {es['eval_train']!r}"
        )
    es["conventions"] = dict(plain(es["conventions"]))
    from ltr.errors import MetricError
    from ltr.metrics.conventions import resolve_conventions
    from ltr.metrics.registry import parse_metric

    try:
        es["metric"] = parse_metric(es["metric"]).name
        resolve_conventions(es["preset"], **es["conventions"])
    except MetricError as exc:
        raise ConfigError(f"model {model}: early_stopping: {exc}") from None
    return es
