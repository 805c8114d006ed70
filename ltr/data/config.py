"""The keys of a ``data`` config, per dataset kind: one dataclass each, the one place their defaults are written.

``ltr.experiment.schemas.register_configs`` stores each schema in Hydra's ConfigStore (group ``data``, name
``<kind>_schema``) and every ``conf/data/NAME.yaml`` lists its kind's schema first in its defaults
list, holding only what differs; so ``data.fold=abc`` or a misspelt key fails while Hydra composes the
config, and ``load_dataset`` checks a plain mapping (the Python API) by the same declaration
(:func:`schema_for`, :func:`ltr.core.config_check.check_block`):

=====================================================  ===========================================
kind                                                   schema
=====================================================  ===========================================
``synthetic``                                          :class:`SyntheticDataSchema`
``svmlight`` (your own files)                          :class:`SvmlightDataSchema` (``cv``: k-fold)
``mslr_web10k``, ``mslr_web30k``, ``mq2007``, ``mq2008``  :class:`LetorDataSchema` (``fold`` 1..5, ``all``, a list)
``istella``                                            :class:`IstellaDataSchema` (``variant``)
``yahoo_set1``, ``yahoo_set2``                         :class:`FolderDataSchema`
=====================================================  ===========================================

>>> from ltr.core.config_check import check_block
>>> check_block(LetorDataSchema, {"kind": "mq2007", "fold": 6}, "data")
Traceback (most recent call last):
...
ltr.core.errors.ConfigError: data.fold: expected a fold 1..5, all, or a list of folds such as [1,3,5]; got 6
>>> check_block(LetorDataSchema, {"kind": "mq2007", "fold": "all"}, "data")["fold"]
'all'
>>> schema_for("istella").__name__, schema_for("my_own")
('IstellaDataSchema', None)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, make_dataclass
from typing import Any

import numpy as np

from ltr.core.config_check import check_block, plain, setting
from ltr.core.errors import ConfigError
from ltr.data._syntax import NONFINITE_POLICIES, ParseOptions, check_label_range
from ltr.data.features import FeaturesSchema
from ltr.data.normalize import METHODS as NORMALIZE_METHODS

#: the split files of each Istella variant (relative to ``data.dir``)
ISTELLA_VARIANTS = {
    "full": {"train": "full/train.txt", "test": "full/test.txt"},
    "s": {"train": "sample/train.txt", "valid": "sample/vali.txt", "test": "sample/test.txt"},
    "x": {"train": "train.txt", "valid": "vali.txt", "test": "test.txt"},
}
#: options of load_svmlight a data config may set under ``parse:`` (or at top level for ``svmlight``):
#: every keyword of load_svmlight except cache_dir, verify_cache and name (tests/test_registry.py keeps the two equal)
PARSE_KEYS = (
    "n_features",
    "zero_based",
    "allow_unsorted",
    "integer_labels",
    "allow_negative_labels",
    "label_range",
    "nonfinite",
    "huge",
    "output",
    "density",
    "dtype",
    "regroup",
    "query_file",
    "weight_file",
    "position_file",
    "docid",
    "engine",
    "n_threads",
)
CACHE_DIR = "${paths.data_dir}/cache"  # the binary cache (memory-mapped reloads); null disables it
_PARSE = ParseOptions()  # the parse defaults, written once in ParseOptions


@dataclass
class DataSchema:
    """Fields every dataset config has (``synthetic``: shown in the run banner).

    ``features``: which columns to use (``names``, ``groups``, ``include``, ``exclude``;
    :mod:`ltr.data.features`), applied right after each split is loaded.

    ``label_range``: the label scale ``[low, high]`` (inclusive; labels outside are an error when the
    files are read). ``null``: the dataset's own — the registry entry's, the synthetic generator's, or,
    for your own files, the training labels' (:func:`ltr.data.registry.declared_label_range`). The
    ``ltr`` metric preset takes ERR's top grade (``err_gmax``) from it.

    ``normalize``: feature normalisation fitted on the training split and applied to every split, kept
    with the saved model and applied again when it scores raw rows (:mod:`ltr.data.normalize`:
    ``none``, ``query_minmax``, ``query_zscore``, ``zscore``, ``log1p``; :mod:`ltr.models.normalized`).
    """

    name: str = "???"
    kind: str = "???"
    synthetic: bool = False
    label_range: list[float] | None = setting(None, check=check_label_range)
    normalize: str = setting("none", choices=NORMALIZE_METHODS)
    features: FeaturesSchema = field(default_factory=FeaturesSchema)  # column selection (ltr.data.features)


@dataclass
class SplitCounts:
    train: int = setting(600, low=1)
    valid: int = setting(200, low=1)
    test: int = setting(200, low=1)


@dataclass
class SyntheticDataSchema(DataSchema):
    """The built-in generator (ltr/data/synthetic.py): where its files go and how they are drawn."""

    name: str = "synthetic"
    kind: str = "synthetic"
    synthetic: bool = True
    dir: str = "???"
    seed: int = setting(42, low=0)  # numpy seeds are non-negative
    n_queries: SplitCounts = field(default_factory=SplitCounts)
    min_docs: int = setting(5, low=1)
    max_docs: int = setting(200, low=1)
    p_empty: float = setting(0.05, low=0.0, high=1.0, open_high=True)  # share of queries with no relevant doc


def _parse_schema() -> type:
    """``data.parse``: one key per :data:`PARSE_KEYS` option (derived, never listed twice), ``null`` = the
    parser's default; so ``data.parse.zero_based=true`` needs no ``+`` and a misspelt option fails while
    Hydra composes. Values are checked by the parser (:class:`ParseOptions`), which names them."""
    return make_dataclass("ParseSchema", [(key, Any | None, field(default=None)) for key in PARSE_KEYS])


ParseSchema = _parse_schema()


@dataclass
class FileDataSchema(DataSchema):
    """Datasets read from SVMlight files: the binary cache, parse overrides, which splits to load."""

    cache_dir: str | None = CACHE_DIR
    verify_cache: bool = False  # key the cache on every byte of the files (for in-place rewriters)
    parse: ParseSchema = field(
        default_factory=lambda: ParseSchema()
    )  # load_svmlight options, e.g. {output: dense}
    splits: list[str] | None = None  # load only these splits (default: all the dataset has)


@dataclass
class FolderDataSchema(FileDataSchema):
    """A registry dataset in one folder (``dir``; default ``data/<its folder>``) with a fixed layout."""

    dir: str | None = None


LETOR_FOLDS = (1, 2, 3, 4, 5)


def check_fold_choice(value: Any, path: str) -> int | str | list[int]:
    """``data.fold`` of a LETOR-layout dataset: one fold (1..5), ``all``, or a list of distinct folds.

    One fold is a single run; ``all`` or a list is a fold protocol (:mod:`ltr.experiment.folds`).

    >>> check_fold_choice(2, "data.fold"), check_fold_choice("all", "data.fold"), check_fold_choice([3, 1], "data.fold")
    (2, 'all', [3, 1])
    >>> check_fold_choice([1, 1], "data.fold")
    Traceback (most recent call last):
    ...
    ltr.core.errors.ConfigError: data.fold: expected a fold 1..5, all, or a list of folds such as [1,3,5]; got [1, 1] (fold 1 twice)
    """
    expected = f"{path}: expected a fold 1..5, all, or a list of folds such as [1,3,5]; got {value!r}"
    if value == "all":
        return "all"
    items = list(value) if isinstance(value, list | tuple) else None
    for item in [value] if items is None else items:
        if (
            isinstance(item, bool | np.bool_)
            or not isinstance(item, int | np.integer)
            or item not in LETOR_FOLDS
        ):
            raise ConfigError(expected)
    if items is None:
        return int(value)
    if not items:
        raise ConfigError(expected + " (an empty list)")
    twice = [k for k in LETOR_FOLDS if items.count(k) > 1]
    if twice:
        raise ConfigError(f"{expected} (fold {twice[0]} twice)")
    return [int(k) for k in items]


def letor_fold_choice(data_cfg: Any) -> list[int] | None:
    """The folds a LETOR-layout ``data`` block asks for: ``None`` for one fold (a single run), else the list.

    >>> letor_fold_choice({"kind": "mq2008", "fold": 2}), letor_fold_choice({"kind": "mq2008", "fold": "all"})
    (None, [1, 2, 3, 4, 5])
    >>> letor_fold_choice({"kind": "svmlight", "train": "a.txt"}) is None
    True
    """
    given = plain(data_cfg)
    if schema_for(str(given.get("kind") or given.get("name"))) is not LetorDataSchema:
        return None
    choice = check_fold_choice(given.get("fold", 1), "data.fold")
    if isinstance(choice, int):
        return None
    return list(LETOR_FOLDS) if choice == "all" else choice


@dataclass
class LetorDataSchema(FolderDataSchema):
    """MSLR-WEB10K/30K, MQ2007/2008: ``Fold1..Fold5/{train,vali,test}.txt``.

    ``fold``: 1..5 (one run), ``all`` or a list such as ``[1,3]`` (the fold protocol of :mod:`ltr.experiment.folds`).
    """

    fold: Any = setting(1, check=check_fold_choice)


def check_cv_folds(value: int, path: str) -> int:
    """``data.cv.folds``: 0 (no cross-validation) or at least 2."""
    if value == 1:
        raise ConfigError(f"{path}: 1 fold is no cross-validation; use 0 (off) or at least 2, got 1")
    return value


@dataclass
class CrossValidationSchema:
    """``data.cv`` of your own file: a query-level k-fold split of ``data.train`` (:func:`ltr.data.splits.cv_folds`).

    ``folds`` 0 = off; k ≥ 2 = k folds, stratified by query size, from ``seed`` (its own seed, so a
    model's ``seed`` changes the model, not the folds). Fold i tests on part i and, with ``valid``,
    validates (early stopping) on part i+1 (mod k) and trains on the others (k ≥ 3); without, trains on
    the other k−1 parts. ``fold`` null = every fold (the fold protocol); 1..k = that fold only.
    """

    folds: int = setting(0, low=0, check=check_cv_folds)
    seed: int = 42
    valid: bool = True
    fold: int | None = setting(None, low=1)


@dataclass
class IstellaDataSchema(FolderDataSchema):
    """Istella LETOR: ``variant`` full (train/test), s (sample) or x (Istella-X)."""

    variant: str = setting("full", choices=tuple(ISTELLA_VARIANTS))


@dataclass
class SvmlightDataSchema(FileDataSchema):
    """Your own SVMlight/LETOR files; the common parse options at top level (defaults: ``ParseOptions``)."""

    train: str = "???"
    valid: str | None = None
    test: str | None = None
    n_features: int | None = setting(_PARSE.n_features, low=0)  # set it so train/valid/test align
    zero_based: bool = _PARSE.zero_based  # true for 0-based files (LightGBM/XGBoost exports)
    nonfinite: str = setting(_PARSE.nonfinite, choices=NONFINITE_POLICIES)
    allow_unsorted: bool = _PARSE.allow_unsorted
    regroup: bool = _PARSE.regroup
    cv: CrossValidationSchema = field(default_factory=CrossValidationSchema)  # k-fold split of train


#: kind -> its schema (the registry's datasets by layout)
SCHEMAS: dict[str, type] = {
    "synthetic": SyntheticDataSchema,
    "svmlight": SvmlightDataSchema,
    **dict.fromkeys(("mslr_web10k", "mslr_web30k", "mq2007", "mq2008"), LetorDataSchema),
    "istella": IstellaDataSchema,
    **dict.fromkeys(("yahoo_set1", "yahoo_set2"), FolderDataSchema),
}


def schema_for(kind: str) -> type | None:
    """The schema of a dataset kind, or ``None`` for a kind ``ltr`` does not know (a user's own config)."""
    return SCHEMAS.get(kind)


def check_data_block(data_cfg: Any) -> dict[str, Any]:
    """A ``data`` block (mapping or OmegaConf node) checked against its kind's schema, defaults filled.

    The kind is ``kind`` (default: ``name``); a kind ``ltr`` does not know is checked only for the
    fields every dataset has (:class:`DataSchema`; its loader checks the rest). Paths may be
    ``os.PathLike``. ``svmlight`` also takes every other ``load_svmlight`` option (:data:`PARSE_KEYS`)
    at top level, checked by the parser.

    >>> check_data_block({"kind": "svmlight", "train": "a.txt", "position_file": "a.pos"})["position_file"]
    'a.pos'
    >>> check_data_block({"kind": "mq2007", "flod": 2})
    Traceback (most recent call last):
    ...
    ltr.core.errors.ConfigError: data: unknown key(s) flod; accepted: name, kind, synthetic, label_range, normalize, features, cache_dir, verify_cache, parse, splits, dir, fold
    """
    given = {k: os.fspath(v) if isinstance(v, os.PathLike) else v for k, v in plain(data_cfg).items()}
    schema = schema_for(str(given.get("kind") or given.get("name")))
    if schema is None:
        return check_block(DataSchema, given, "data", extra="keep")
    parser_checks = (
        set(PARSE_KEYS) - {f.name for f in fields(schema)} if schema is SvmlightDataSchema else set()
    )
    passed_on = {k: given.pop(k) for k in list(given) if k in parser_checks}
    checked = check_block(schema, given, "data") | passed_on
    if schema is SyntheticDataSchema and checked["max_docs"] < checked["min_docs"]:
        raise ConfigError(
            f"data.max_docs: must be >= data.min_docs={checked['min_docs']}, got {checked['max_docs']}"
        )
    return checked
