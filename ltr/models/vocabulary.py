"""The one vocabulary table: each ltr parameter → how each engine receives it, and the conversion.

:data:`VOCABULARY` maps every ltr parameter (plus the ranker's ``seed`` and ``num_threads``) to one
:class:`Rule` per engine that understands it — LightGBM, XGBoost, CatBoost, scikit-learn. A rule
either *converts* the value into engine parameters (``emit(value, params, context) → dict``) or
*refuses* it with the reason. Everything else is derived from this one table:

* :func:`translate` — the engine parameters for resolved ltr params; every engine adapter
  (``ltr/models/engines/lgbm.py``, ``xgb.py``, ``cat.py``, ``sk.py``, and through LightGBM the Dask
  backend) builds its vocabulary part with it, and adds only what is not vocabulary (objective,
  metric, fixed engine settings such as ``verbosity``); ``engine_params`` from the config win last;
* :func:`refused` — a model's ``unsupported_params`` (key → reason, raised as a ConfigError);
* :func:`markdown_table` — the table in ``docs/models.md`` (``tests/test_vocabulary.py`` checks that
  the file holds exactly this text).

Conversions with a rule of their own (everything else keeps its value under the engine's name):

* LightGBM: ``num_leaves`` null → 131072 (LightGBM's largest), ``max_depth`` null → −1,
  ``bagging_fraction`` < 1 adds ``bagging_freq=1`` (else 0), ``label_gain`` other than exp2 → the
  explicit ``label_gain`` table for labels 0..max label, ``num_classes`` null → max label + 1;
* XGBoost: ``max_depth`` / ``num_leaves`` null → 0 (unlimited; a bounded ``num_leaves`` with
  unlimited depth adds ``grow_policy=lossguide``), ``truncation_level`` k →
  ``lambdarank_num_pair_per_sample=k`` with ``lambdarank_pair_method=topk``, ``label_gain`` →
  ``ndcg_exp_gain`` (true for 2^l − 1);
* CatBoost: ``bagging_fraction`` < 1 → ``bootstrap_type=Bernoulli`` + ``subsample`` (at 1.0
  nothing: CatBoost keeps its own bootstrap), ``num_threads`` 0 → −1;
* scikit-learn: ``bagging_fraction`` 1.0 → ``max_samples=None`` (a full-size bootstrap),
  ``num_threads`` 0 → ``n_jobs=-1``.

>>> translate("xgboost", {"lambda_l1": 0.3, "lambda_l2": 0.7, "max_depth": None})
{'max_depth': 0, 'alpha': 0.3, 'lambda': 0.7}
>>> translate("lightgbm", {"truncation_level": 20, "bagging_fraction": 0.8})
{'bagging_fraction': 0.8, 'bagging_freq': 1, 'lambdarank_truncation_level': 20}
>>> refused("catboost")["lambda_l1"]
'CatBoost YetiRank has no counterpart (only L2 regularisation: use lambda_l2)'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ltr.core.errors import ConfigError
from ltr.models.params import gain_table

#: engine id (a ranker's ``engine`` attribute) → its name in messages and in the docs table
ENGINES: dict[str, str] = {
    "lightgbm": "LightGBM",
    "xgboost": "XGBoost",
    "catboost": "CatBoost",
    "sklearn": "scikit-learn",
}
LIGHTGBM_MAX_LEAVES = 131072  # LightGBM's upper bound for num_leaves: "unlimited"

#: ``emit(value, params, max_label)`` → the engine parameters for one ltr value (``params`` = all of them)
Emit = Callable[[Any, Mapping[str, Any], "int | None"], dict[str, Any]]


@dataclass(frozen=True)
class Rule:
    """How one engine receives one ltr parameter.

    ``emit`` converts the value (``None`` when the engine refuses the parameter); ``doc`` is the
    docs-table cell; ``reason`` is the refusal message (key → reason in ``unsupported_params``).
    """

    doc: str
    emit: Emit | None = None
    reason: str = ""
    name: str = ""  # the engine's own spelling (rename / if_set / if_true), for "that is ltr's X" hints


@dataclass(frozen=True)
class Term:
    """One row of the table: the ltr parameter's docs text and its rule per engine (absent = not accepted)."""

    doc: str
    rules: dict[str, Rule] = field(default_factory=dict)


def _code(value: Any) -> str:
    """A value as it appears in a docs cell: ``-1``, ``true``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def rename(name: str, *, null: Any = None, note: str = "") -> Rule:
    """The value under the engine's ``name``; ``None`` becomes ``null`` (engines spell "unlimited" differently).

    >>> rename("max_depth", null=-1).emit(None, {}, None), rename("eta").doc
    ({'max_depth': -1}, '`eta`')
    """
    doc = (
        f"`{name}`" + (f" (null → {_code(null)})" if null is not None else "") + (f" {note}" if note else "")
    )

    def emit(value: Any, params: Mapping[str, Any], max_label: int | None) -> dict[str, Any]:
        return {name: null if value is None else value}

    return Rule(doc, emit, name=name)


def if_set(name: str) -> Rule:
    """The value under ``name`` only when it is not null (null = the engine's own behaviour)."""

    def emit(value: Any, params: Mapping[str, Any], max_label: int | None) -> dict[str, Any]:
        return {} if value is None else {name: value}

    return Rule(f"`{name}` (null → not passed)", emit, name=name)


def if_true(name: str, note: str) -> Rule:
    """``name=True`` when the value is true; nothing otherwise."""

    def emit(value: Any, params: Mapping[str, Any], max_label: int | None) -> dict[str, Any]:
        return {name: True} if value else {}

    return Rule(f"`{name}` {note}", emit, name=name)


def refuse(hint: str, reason: str) -> Rule:
    """The engine has no counterpart: a ConfigError with ``reason``; the docs cell says ``refused (hint)``."""
    return Rule(f"refused ({hint})", None, reason)


def _catboost_refuses(hint: str) -> Rule:
    return refuse(hint, f"CatBoost YetiRank has no counterpart ({hint})")


def _threads(name: str) -> Rule:
    """Thread count, 0 = all cores, which this engine spells −1."""

    def emit(value: Any, params: Mapping[str, Any], max_label: int | None) -> dict[str, Any]:
        return {name: int(value) or -1}

    return Rule(f"`{name}` (0 → −1)", emit)


def n_classes(num_classes: int | None, max_label: int) -> int:
    """Classes of ``classification``: ``num_classes``, or the highest label + 1 when it is null.

    >>> n_classes(None, 4), n_classes(7, 4)
    (5, 7)
    """
    return int(num_classes or max_label + 1)


def xgboost_exp_gain(label_gain: str | list[float]) -> bool:
    """XGBoost ``ndcg_exp_gain``: true for ``exp2`` or an explicit 2^l − 1 table, false otherwise.

    >>> xgboost_exp_gain("exp2"), xgboost_exp_gain([0.0, 1.0, 3.0]), xgboost_exp_gain("linear")
    (True, True, False)
    """
    if isinstance(label_gain, list):
        return label_gain == gain_table("exp2", len(label_gain) - 1)
    return label_gain == "exp2"


def _lgb_bagging(value: Any, params: Mapping[str, Any], max_label: int | None) -> dict[str, Any]:
    return {"bagging_fraction": value, "bagging_freq": 1 if value < 1.0 else 0}


def _lgb_label_gain(value: Any, params: Mapping[str, Any], max_label: int | None) -> dict[str, Any]:
    if value == "exp2":
        return {}  # LightGBM's default table is 2^l - 1
    if max_label is None:
        raise ConfigError(
            "model.params.label_gain: the LightGBM gain table needs the highest label of the data"
        )
    return {"label_gain": gain_table(value, max_label)}


def _lgb_classes(value: Any, params: Mapping[str, Any], max_label: int | None) -> dict[str, Any]:
    if value is None and max_label is None:
        raise ConfigError("model.params.num_classes: null needs the highest label of the data")
    return {"num_class": n_classes(value, max_label or 0)}


def _lgb_seed(value: Any, params: Mapping[str, Any], max_label: int | None) -> dict[str, Any]:
    return {"seed": int(value), "deterministic": True, "force_col_wise": True}


def _xgb_depth(value: Any, params: Mapping[str, Any], max_label: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {"max_depth": value or 0}
    if value is None and params.get("num_leaves") is not None:
        out["grow_policy"] = "lossguide"  # best-first growth bounded by max_leaves, as LightGBM grows trees
    return out


def _xgb_truncation(value: Any, params: Mapping[str, Any], max_label: int | None) -> dict[str, Any]:
    if value is None:
        return {}
    return {"lambdarank_pair_method": "topk", "lambdarank_num_pair_per_sample": value}


def _xgb_gain(value: Any, params: Mapping[str, Any], max_label: int | None) -> dict[str, Any]:
    return {"ndcg_exp_gain": xgboost_exp_gain(value)}


def _cat_bagging(value: Any, params: Mapping[str, Any], max_label: int | None) -> dict[str, Any]:
    return {"bootstrap_type": "Bernoulli", "subsample": value} if value < 1.0 else {}


def _sk_bagging(value: Any, params: Mapping[str, Any], max_label: int | None) -> dict[str, Any]:
    return {"max_samples": None if value >= 1.0 else value}


def _int(name: str) -> Rule:
    def emit(value: Any, params: Mapping[str, Any], max_label: int | None) -> dict[str, Any]:
        return {name: int(value)}

    return Rule(f"`{name}`", emit)


#: the table, in the order engine parameters are emitted (and the docs rows are printed)
VOCABULARY: dict[str, Term] = {
    "n_trees": Term(
        "`n_trees` (boosting rounds / trees)",
        {
            "lightgbm": rename("num_iterations"),
            "xgboost": rename("num_boost_round", note="(an argument of `xgboost.train`)"),
            "catboost": rename("iterations"),
            "sklearn": rename("n_estimators"),
        },
    ),
    "learning_rate": Term(
        "`learning_rate`",
        {"lightgbm": rename("learning_rate"), "xgboost": rename("eta"), "catboost": rename("learning_rate")},
    ),
    "num_leaves": Term(
        "`num_leaves` (null = unlimited)",
        {
            "lightgbm": rename("num_leaves", null=LIGHTGBM_MAX_LEAVES),
            "xgboost": rename("max_leaves", null=0),
            "catboost": _catboost_refuses("trees are symmetric: use max_depth"),
            "sklearn": rename("max_leaf_nodes"),
        },
    ),
    "max_depth": Term(
        "`max_depth` (null = unlimited)",
        {
            "lightgbm": rename("max_depth", null=-1),
            "xgboost": Rule(
                "`max_depth` (null → 0; then `grow_policy=lossguide` if `num_leaves` is set)", _xgb_depth
            ),
            "catboost": rename("depth", note="(1–16: symmetric trees)"),
            "sklearn": rename("max_depth"),
        },
    ),
    "min_data_in_leaf": Term(
        "`min_data_in_leaf`",
        {
            "lightgbm": rename("min_data_in_leaf"),
            "xgboost": refuse(
                "use `min_sum_hessian_in_leaf`",
                "XGBoost has no minimum document count per leaf; use min_sum_hessian_in_leaf "
                "(XGBoost min_child_weight)",
            ),
            "catboost": _catboost_refuses("only with non-symmetric trees; pass engine_params"),
            "sklearn": rename("min_samples_leaf"),
        },
    ),
    "min_sum_hessian_in_leaf": Term(
        "`min_sum_hessian_in_leaf`",
        {
            "lightgbm": rename("min_sum_hessian_in_leaf"),
            "xgboost": rename("min_child_weight"),
            "catboost": _catboost_refuses("pass engine_params if needed"),
        },
    ),
    "lambda_l1": Term(
        "`lambda_l1` (L1 penalty on leaf values)",
        {
            "lightgbm": rename("lambda_l1"),
            "xgboost": rename("alpha"),
            "catboost": _catboost_refuses("only L2 regularisation: use lambda_l2"),
        },
    ),
    "lambda_l2": Term(
        "`lambda_l2` (L2 penalty on leaf values)",
        {"lightgbm": rename("lambda_l2"), "xgboost": rename("lambda"), "catboost": rename("l2_leaf_reg")},
    ),
    "max_bin": Term(
        "`max_bin`",
        {
            "lightgbm": rename("max_bin"),
            "xgboost": rename("max_bin", note="(`tree_method=hist`)"),
            "catboost": rename("border_count"),
        },
    ),
    "feature_fraction": Term(
        "`feature_fraction` (features per tree)",
        {
            "lightgbm": rename("feature_fraction"),
            "xgboost": rename("colsample_bytree"),
            "catboost": rename("rsm"),
            "sklearn": rename("max_features"),
        },
    ),
    "bagging_fraction": Term(
        "`bagging_fraction` (rows per tree)",
        {
            "lightgbm": Rule("`bagging_fraction` + `bagging_freq` (1 when < 1, else 0)", _lgb_bagging),
            "xgboost": rename("subsample"),
            "catboost": Rule(
                "`subsample` + `bootstrap_type=Bernoulli` when < 1 (else not passed)", _cat_bagging
            ),
            "sklearn": Rule("`max_samples` (1.0 → null: a full-size bootstrap)", _sk_bagging),
        },
    ),
    "bagging_by_query": Term(
        "`bagging_by_query` (bag whole queries)",
        {
            "lightgbm": if_true("bagging_by_query", "(passed only when true)"),
            "xgboost": refuse(
                "it samples rows: use `bagging_fraction`",
                "XGBoost subsamples rows, not whole queries; use bagging_fraction (rows) or a LightGBM model",
            ),
            "catboost": _catboost_refuses("it samples rows: use bagging_fraction"),
        },
    ),
    "truncation_level": Term(
        "`truncation_level` (pairs with the top-k positions only)",
        {
            "lightgbm": if_set("lambdarank_truncation_level"),
            "xgboost": Rule(
                "`lambdarank_num_pair_per_sample` + `lambdarank_pair_method=topk` (null → not passed)",
                _xgb_truncation,
            ),
            "catboost": _catboost_refuses("YetiRank samples permutations instead"),
        },
    ),
    "label_gain": Term(
        "`label_gain` (null/`exp2` = 2^l − 1, `linear` = l, or a list)",
        {
            "lightgbm": Rule(
                "`label_gain` table for labels 0..max label (exp2 → LightGBM's default)", _lgb_label_gain
            ),
            "xgboost": Rule(
                "`ndcg_exp_gain` (true for 2^l − 1; tables other than 2^l − 1 and l refused)", _xgb_gain
            ),
            "catboost": _catboost_refuses("YetiRank uses the labels directly"),
        },
    ),
    "num_classes": Term(
        "`num_classes` (`classification`; null = max label + 1)",
        {"lightgbm": Rule("`num_class` (null → max label + 1)", _lgb_classes)},
    ),
    "objective": Term("`objective` (`lambdamart_xgb`)", {"xgboost": rename("objective")}),
    "alpha": Term("`alpha` (`linear`: ridge penalty)", {"sklearn": rename("alpha", note="of `Ridge`")}),
    "seed": Term(
        "the ranker's `seed`",
        {
            "lightgbm": Rule("`seed` + `deterministic=true` + `force_col_wise=true`", _lgb_seed),
            "xgboost": _int("seed"),
            "catboost": _int("random_seed"),
            "sklearn": _int("random_state"),
        },
    ),
    "num_threads": Term(
        "the ranker's `num_threads` (0 = all cores)",
        {
            "lightgbm": _int("num_threads"),
            "xgboost": _int("nthread"),
            "catboost": _threads("thread_count"),
            "sklearn": _threads("n_jobs"),
        },
    ),
}


def _emit_for(engine: str, key: str) -> Emit:
    """The conversion of ``key`` for ``engine``, or a ConfigError saying why there is none."""
    if engine not in ENGINES:
        raise ConfigError(f"unknown engine {engine!r}; the vocabulary covers {', '.join(ENGINES)}")
    term = VOCABULARY.get(key)
    rule = term.rules.get(engine) if term is not None else None
    if rule is not None and rule.emit is not None:
        return rule.emit
    why = rule.reason if rule is not None else f"{ENGINES[engine]} has no translation for it"
    raise ConfigError(f"model.params.{key}: not supported: {why}")


_POSITION = {key: i for i, key in enumerate(VOCABULARY)}


def translate(engine: str, params: Mapping[str, Any], *, max_label: int | None = None) -> dict[str, Any]:
    """The ``engine`` parameters for ltr ``params`` (any subset of :data:`VOCABULARY`), in table order.

    ``max_label`` (the highest label in the data) is needed only by rules that build per-label
    tables (LightGBM ``label_gain``, ``num_class``). A key the engine refuses or does not know is
    a ConfigError naming it — never silently dropped.

    >>> translate("catboost", {"n_trees": 100, "bagging_fraction": 0.5, "num_threads": 0})
    {'iterations': 100, 'bootstrap_type': 'Bernoulli', 'subsample': 0.5, 'thread_count': -1}
    >>> translate("sklearn", {"learning_rate": 0.1})
    Traceback (most recent call last):
    ...
    ltr.core.errors.ConfigError: model.params.learning_rate: not supported: scikit-learn has no translation for it
    """
    out: dict[str, Any] = {}
    for key in sorted(params, key=lambda k: _POSITION.get(k, len(_POSITION))):
        out.update(_emit_for(engine, key)(params[key], params, max_label))
    return out


def ltr_name_of(engine: str, spelling: str, canonical: Mapping[str, str] | None = None) -> str | None:
    """The ltr parameter ``engine`` receives as ``spelling`` (its own name for it), if any.

    ``canonical`` maps the engine's names and aliases to one name per parameter (a ranker's
    ``engine_spellings()``): then any alias of the rule's name counts.

    >>> ltr_name_of("lightgbm", "num_iterations"), ltr_name_of("xgboost", "eta"), ltr_name_of("lightgbm", "x")
    ('n_trees', 'learning_rate', None)
    >>> ltr_name_of("xgboost", "reg_alpha"), ltr_name_of("xgboost", "reg_alpha", {"reg_alpha": "alpha"})
    (None, 'lambda_l1')
    """
    canonical = canonical or {}
    wanted = canonical.get(spelling, spelling)
    for key, term in VOCABULARY.items():
        rule = term.rules.get(engine)
        if rule is not None and rule.name and canonical.get(rule.name, rule.name) == wanted:
            return key
    return None


def refused(engine: str) -> dict[str, str]:
    """The vocabulary keys ``engine`` refuses, each with the reason and the alternative.

    >>> sorted(refused("xgboost"))
    ['bagging_by_query', 'min_data_in_leaf']
    """
    return {
        key: rule.reason
        for key, term in VOCABULARY.items()
        if (rule := term.rules.get(engine)) is not None and rule.emit is None
    }


def markdown_table() -> str:
    """The vocabulary table of ``docs/models.md`` (``—``: the engine's models do not take the key)."""
    engines = list(ENGINES)
    lines = [
        "| ltr | " + " | ".join(ENGINES[e] for e in engines) + " |",
        "|---|" + "---|" * len(engines),
    ]
    for term in VOCABULARY.values():
        cells = [term.rules[e].doc if e in term.rules else "—" for e in engines]
        lines.append(f"| {term.doc} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
