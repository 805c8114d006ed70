"""The :class:`Ranker` protocol and :class:`BaseRanker`, the shared implementation behind every model.

Contract (``docs/architecture.md``, ``docs/models.md``)::

    ranker.fit(train, valid=None, *, on_iteration=None) -> ranker
    ranker.predict(data) -> float64 score per row (data: RankingData or a 2-D feature matrix)
    ranker.save(folder);  Ranker.load(folder) -> ranker      # native formats + manifest.json, no pickle

Fitted attributes end in ``_`` (scikit-learn style): ``best_iteration_`` (0-based index of the best
round on the validation metric, so ``evals_result_["valid"][metric][best_iteration_]`` is its score;
``None`` without early stopping, and the model then uses every round), ``stopped_at_`` (the round
after which ``on_iteration`` returned ``True`` and training stopped, e.g. a pruned search trial;
``None`` when it never did), ``evals_result_``
(``{"train": {"ndcg@10": [...]}, "valid": {...}}``, one value per round), ``engine_params_`` (the
engine parameters translated from the vocabulary by :mod:`ltr.models.vocabulary`, plus
``engine_params``; for logging), ``params_`` / ``early_stopping_`` (the
resolved ltr vocabulary), ``n_features_in_`` and ``feature_selection_`` (the
:class:`~ltr.data.dataset.FeatureSelection` of the training split, ``data.features``, or ``None``: a
model of a selection also scores rows of the file's full width, ``input_width_``, cutting them itself).

Constructor arguments are stored unchanged (so ``sklearn.base.clone`` and ``get_params`` work) but
validated immediately: a bad config fails when the ranker is built, before any data is loaded.

>>> from ltr.models.registry import get_ranker_class
>>> cls = get_ranker_class("lambdamart")
>>> r = cls({"n_trees": 5}, seed=3)
>>> r.get_params()["params"], r.get_params()["seed"]
({'n_trees': 5}, 3)
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp

import ltr
from ltr.core import interrupts
from ltr.core.config_check import check_block, check_value, defaults, join, plain, setting
from ltr.core.errors import ConfigError, DataError, NotFittedError
from ltr.data import RankingData
from ltr.data.dataset import FeatureSelection
from ltr.data.normalize import Normalizer
from ltr.models import normalized, vocabulary
from ltr.models.checks import check_features
from ltr.models.monitor import OnIteration, StopRecorder, watch
from ltr.models.params import MODEL_CONFIGS, resolve_early_stopping, resolve_params

MANIFEST = "manifest.json"
HISTORY = "evals_result.json"
FORMAT = "ltr-ranker"
FORMAT_VERSION = 1


class OneQueryWarning(UserWarning):
    """Rows without query ids given to a per-query model: they were scored as one query."""


@dataclass(frozen=True)
class Resolved:
    """A ranker's configuration with defaults filled in and validated (what ``_fit`` receives)."""

    params: dict[str, Any]
    early_stopping: dict[str, Any]
    engine_params: dict[str, Any]


@runtime_checkable
class Ranker(Protocol):
    """What every ``ltr`` model provides (see the module docstring for the fitted attributes)."""

    best_iteration_: int | None
    evals_result_: dict[str, dict[str, list[float]]]

    def fit(
        self, train: RankingData, valid: RankingData | None = None, *, on_iteration: OnIteration | None = None
    ) -> Ranker: ...

    def predict(self, data: RankingData) -> np.ndarray: ...

    def save(self, path: Path) -> None: ...

    @classmethod
    def load(cls, path: Path) -> Ranker: ...


def feature_matrix(data: RankingData | Any) -> Any:
    """The feature matrix of ``data`` (a :class:`RankingData`, ndarray, CSR matrix or DataFrame)."""
    if isinstance(data, RankingData):
        return data.X
    if sp.issparse(data):
        return sp.csr_matrix(data)
    if hasattr(data, "to_numpy"):
        data = data.to_numpy()
    X = np.asarray(data)
    if X.ndim != 2:
        raise DataError(f"predict: expected a 2-D feature matrix (documents × features), got shape {X.shape}")
    return X


def shared_input_dtype(dtypes: Iterable[str]) -> str | None:
    """One feature dtype for several models reading the same file (``input_dtype``): float64 when any
    reads float64 (the others narrow it as they narrow any float64 array), ``None`` for no models.

    >>> shared_input_dtype(["float32", "float64"]), shared_input_dtype(["float32"]), shared_input_dtype([])
    ('float64', 'float32', None)
    """
    found = set(dtypes)
    return "float64" if "float64" in found else ("float32" if found else None)


@dataclass
class RunSettings:
    """The run-wide constructor arguments every model takes (besides its config block)."""

    seed: int = setting(0, low=0)  # numpy's default_rng (baseline, bootstrap) refuses a negative seed
    num_threads: int = setting(0, low=0)  # engine threads; 0 = all cores


class BaseRanker:
    """Shared machinery: config checks, fitted-state checks, folder persistence with a manifest.

    Subclasses set ``name`` (the registry / config name), ``engine`` and implement ``_fit``,
    ``_predict``, ``_save_native`` and ``_load_native``. A subclass's config block (and so its
    ``params`` block and ``default_params``) is :data:`ltr.models.params.MODEL_CONFIGS` ``[name]``.
    """

    name: ClassVar[str] = ""
    engine: ClassVar[str] = ""
    config_schema: ClassVar[type | None] = None  # the whole config block (dataclass), from MODEL_CONFIGS
    params_schema: ClassVar[type | None] = None  # its ``params`` block
    default_params: ClassVar[dict[str, Any]] = {}  # the params block's defaults, as a dict
    unsupported_params: ClassVar[dict[str, str]] = {}  # vocabulary key -> why not, and what to use
    iterative: ClassVar[bool] = True  # False: no boosting rounds, so no early stopping / history
    #: the feature dtype the engine's own text loader reads a LETOR file into (LightGBM and
    #: scikit-learn's ``load_svmlight_file``: float64; XGBoost, CatBoost: float32). A run parses the
    #: file into it unless ``data.parse.dtype`` is set, so the engine bins the values its own loader
    #: would give it and trains the model it trains on that file (docs/data.md, "The engine's model").
    input_dtype: ClassVar[str] = "float64"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.name in MODEL_CONFIGS:
            cls.config_schema = MODEL_CONFIGS[cls.name]
        if cls.config_schema is not None:
            blocks = {f.name: f.default_factory for f in dataclasses.fields(cls.config_schema)}
            cls.params_schema = blocks["params"]  # type: ignore[assignment]
            cls.default_params = defaults(cls.params_schema)  # type: ignore[arg-type]

    def __init__(
        self,
        params: Mapping[str, Any] | None = None,
        *,
        early_stopping: Mapping[str, Any] | None = None,
        engine_params: Mapping[str, Any] | None = None,
        seed: int = 0,
        num_threads: int = 0,
        where: str = "model",
    ) -> None:
        self.params = params
        self.early_stopping = early_stopping
        self.engine_params = engine_params
        self.seed = seed
        self.num_threads = num_threads
        self._where = where  # the config path of this model in error messages (not a parameter)
        self._resolve()  # validate now; fit resolves again from the stored arguments

    @classmethod
    def config_keys(cls) -> list[str]:
        """The keys of this model's config block (``name``, ``params``, ...)."""
        return [f.name for f in dataclasses.fields(cls.config_schema)] if cls.config_schema else []

    @classmethod
    def from_config(
        cls,
        cfg: Mapping[str, Any],
        *,
        seed: int = 0,
        num_threads: int = 0,
        where: str = "model",
        **extra: Any,
    ) -> BaseRanker:
        """Build from a plain model config (its block: ``{name, params, early_stopping, engine_params}``, ...).

        A key outside :meth:`config_keys` is a ConfigError naming ``where``; ``extra`` are constructor
        arguments that are not part of the model block (the Dask backend's ``backend``).
        """
        cfg = plain(cfg)
        keys = cls.config_keys()
        unknown = sorted(set(cfg) - set(keys))
        if unknown:
            raise ConfigError(
                f"{where}: unknown key(s) {', '.join(unknown)}; {cls.name} accepts: {', '.join(keys)}"
            )
        given = {k: cfg[k] for k in keys if k in cfg and k != "name"}
        return cls(**given, seed=seed, num_threads=num_threads, where=where, **extra)

    # --- scikit-learn conventions ----------------------------------------------------------------
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor arguments, as given (scikit-learn ``get_params``; ``deep`` is accepted for API parity)."""
        names = [k for k in self.config_keys() if k != "name"] + ["seed", "num_threads"]
        return {k: getattr(self, k) for k in names}

    def set_params(self, **kwargs: Any) -> BaseRanker:
        """Set constructor arguments (scikit-learn ``set_params``); validated at once."""
        valid = self.get_params()
        for key, value in kwargs.items():
            if key not in valid:
                raise ConfigError(
                    f"{type(self).__name__}.set_params: unknown argument {key!r}; accepted: {sorted(valid)}"
                )
            setattr(self, key, value)
        self._resolve()
        return self

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(params={self.params!r}, seed={self.seed}, num_threads={self.num_threads})"
        )

    # --- resolution --------------------------------------------------------------------------------
    def _check_run(self) -> dict[str, Any]:
        """``seed`` and ``num_threads`` checked (:class:`RunSettings`)."""
        return check_block(RunSettings, {"seed": self.seed, "num_threads": self.num_threads}, "")

    def _resolve(self) -> Resolved:
        """Params, early stopping and engine params with defaults filled in and validated."""
        self._check_run()
        where = getattr(self, "_where", "model")
        self._refuse_engine_spellings(join(where, "params"))
        params = resolve_params(
            self.params_schema,  # type: ignore[arg-type]
            self.params,
            model=self.name,
            where=join(where, "params"),
            unsupported=self.unsupported_params,
        )
        stopping = {f.name: f.default_factory for f in dataclasses.fields(self.config_schema)}[
            "early_stopping"
        ]  # type: ignore[arg-type]
        es = resolve_early_stopping(self.early_stopping, schema=stopping, where=join(where, "early_stopping"))  # type: ignore[arg-type]
        engine_params = check_value(
            plain(self.engine_params), dict[str, Any], None, join(where, "engine_params")
        )
        self._check_engine_params(engine_params or {}, join(where, "engine_params"))
        self._check_params(params)
        return Resolved(params, es, engine_params)

    def engine_parameter_names(self) -> Mapping[str, str]:
        """Every name the engine takes in ``engine_params`` (its own parameters and their aliases) → the
        canonical name of that parameter; empty when the engine publishes no list (then ``engine_params``
        go to it unchecked). Asked only when there is something to check (engines load lazily)."""
        return {}

    def engine_spellings(self) -> Mapping[str, str]:
        """Every spelling of an engine parameter → its canonical name: :meth:`engine_parameter_names`
        plus the names the engine's other interfaces use for the same parameters (XGBoost's
        scikit-learn ``n_estimators`` for ``num_boost_round``), which ``engine_params`` do not take."""
        return self.engine_parameter_names()

    def engine_parameter_kind(self) -> str:
        """What a checked ``engine_params`` key must be, for the error message (``a LightGBM parameter``)."""
        return f"a {vocabulary.ENGINES[self.engine]} parameter"

    def _refuse_engine_spellings(self, where: str) -> None:
        """A key of ``params`` that is the engine's own name for an ltr parameter (LightGBM's
        ``num_iterations``, an alias such as ``num_boost_round``, XGBoost's ``reg_alpha``): a ConfigError
        naming the ltr key."""
        given = plain(self.params)
        if not isinstance(given, Mapping) or not self.engine:
            return
        schema_keys = {f.name for f in dataclasses.fields(self.params_schema)}  # type: ignore[arg-type]
        spellings: Mapping[str, str] | None = None  # asked only for a key outside the schema
        for key in given:
            if key in schema_keys:
                continue
            if spellings is None:
                spellings = self.engine_spellings()
            ltr_key = vocabulary.ltr_name_of(self.engine, str(key), spellings)
            if ltr_key in schema_keys:
                raise ConfigError(
                    f"model {self.name}: {join(where, key)} is {vocabulary.ENGINES[self.engine]}'s name for "
                    f"{ltr_key}: use {join(where, ltr_key)}"
                )

    def _check_engine_params(self, engine_params: Mapping[str, Any], where: str) -> None:
        """Every ``engine_params`` key is one of the engine's own parameters (or aliases), when it lists
        them; an unknown key is a ConfigError with the closest name (or, for a spelling of another of
        the engine's interfaces, the name this one takes)."""
        if not engine_params:
            return
        known = self.engine_parameter_names()
        if not known:
            return
        for key in engine_params:
            if key in known:
                continue
            other = self.engine_spellings().get(str(key))
            close = (
                [other]
                if other in known
                else difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.8)
            )
            raise ConfigError(
                f"model {self.name}: {join(where, key)} is not {self.engine_parameter_kind()}"
                + (f"; did you mean {close[0]}?" if close else "")
            )

    def with_engine_params(
        self, translated: Mapping[str, Any], engine_params: Mapping[str, Any]
    ) -> dict[str, Any]:
        """``translated`` with ``engine_params`` applied last, so they win — also when a key is an alias of
        a translated parameter (LightGBM ``eta`` for ``learning_rate``, CatBoost ``reg_lambda`` for
        ``l2_leaf_reg``): it replaces that parameter under the translated name. Both names side by side,
        LightGBM would keep its canonical one (the translation) and CatBoost would refuse to train.

        >>> from ltr.models.registry import get_ranker_class
        >>> lgb = get_ranker_class("lambdamart")()
        >>> lgb.with_engine_params({"learning_rate": 0.1, "verbosity": -1}, {"eta": 0.5, "verbose": 1, "min_split_gain": 0.2})
        {'learning_rate': 0.5, 'verbosity': 1, 'min_split_gain': 0.2}
        """
        out = dict(translated)
        if not engine_params:
            return out
        names = self.engine_parameter_names()
        by_name = {names.get(key, key): key for key in translated}
        for key, value in engine_params.items():
            out[by_name.get(names.get(key, key), key)] = value
        return out

    def _check_params(self, params: dict[str, Any]) -> None:
        """Model-specific cross-parameter checks (override)."""

    def check_scoring_input(self, data: RankingData, role: str) -> None:
        """Checks of a split this model will score (``test``), run by the pipeline BEFORE training, so input
        the model cannot score fails before hours of work, not after (override; e.g. finite features)."""

    # --- public API --------------------------------------------------------------------------------
    def fit(
        self, train: RankingData, valid: RankingData | None = None, *, on_iteration: OnIteration | None = None
    ) -> BaseRanker:
        """Train on ``train``; with ``valid``, record the validation metric each round and stop early."""
        if not isinstance(train, RankingData) or (valid is not None and not isinstance(valid, RankingData)):
            raise DataError(f"{self.name}.fit: train and valid must be ltr.data.RankingData objects")
        if train.n_docs == 0:
            raise DataError(f"{train.name} (train): no documents")
        if valid is not None:
            check_features(train, valid, "valid")
        cfg = self._begin_fit(train.n_features)
        self.feature_selection_ = train.features  # the columns of a wider file (data.features); None: all
        stop = StopRecorder(on_iteration) if on_iteration is not None else None
        try:
            self._fit(train, valid, cfg, stop)
        except Exception as exc:  # an engine that turned Ctrl-C into its own error (CatBoostError)
            carried = interrupts.received()
            if carried is None:
                raise
            raise carried from exc
        #: the round after which ``on_iteration`` returned True and training stopped (None: it ran out)
        self.stopped_at_: int | None = stop.stopped_at if stop is not None else None
        return self

    def predict(self, data: RankingData | Any) -> np.ndarray:
        """One float64 score per row of ``data`` (higher = ranked earlier), in the caller's row order."""
        self._check_fitted()
        X = self.selected_columns(feature_matrix(data))
        if X.shape[1] != self.n_features_in_:
            where = data.name if isinstance(data, RankingData) else "predict"
            raise DataError(
                f"{where}: has {X.shape[1]} feature columns but the model was trained on {self.n_features_in_}"
            )
        if X.shape[0] == 0:
            return np.zeros(0, dtype=np.float64)
        if self.scores_per_query and X.shape[0] > 1 and not isinstance(data, RankingData):
            warnings.warn(
                f"{self.name} scores per query, but {X.shape[0]} rows came without query ids: they are "
                "scored as ONE query; give a RankingData (or a 'qid' column to the MLflow model, "
                "ltr.models.pyfunc.as_frame(X, qid=...)) if they belong to several queries",
                OneQueryWarning,
                stacklevel=2,
            )
        return np.asarray(self._score(data, X), dtype=np.float64).reshape(-1)

    @property
    def input_width_(self) -> int:
        """The width of the rows this model scores: the original file's when it was trained on a
        feature selection (``feature_selection_``; it then also takes rows of ``n_features_in_``
        columns), else ``n_features_in_``."""
        self._check_fitted()
        selection = getattr(self, "feature_selection_", None)
        return int(selection.n_features) if selection is not None else int(self.n_features_in_)

    def selected_columns(self, X: Any) -> Any:
        """``X`` cut to ``feature_selection_`` when it has the original width (full rows), else ``X``.

        >>> import numpy as np
        >>> from ltr.data.dataset import FeatureSelection
        >>> r = BaseRanker.__new__(BaseRanker)
        >>> r.n_features_in_, r.feature_selection_ = 2, FeatureSelection(ids=(1, 3), n_features=3)
        >>> r.selected_columns(np.arange(6.0).reshape(2, 3)).tolist(), r.selected_columns(np.ones((1, 2))).shape
        ([[0.0, 2.0], [3.0, 5.0]], (1, 2))
        """
        selection = getattr(self, "feature_selection_", None)
        if selection is not None and X.shape[1] == selection.n_features != self.n_features_in_:
            return selection.select(X)
        return X

    @property
    def n_iterations_(self) -> int | None:
        """Rounds the fitted model uses when predicting (``best_iteration_ + 1`` after early stopping)."""
        self._check_fitted()
        if self.best_iteration_ is not None:
            return self.best_iteration_ + 1
        return self._n_rounds()

    #: True when a row's score depends on the other rows of its query (ensembles that normalise or
    #: fuse per query): a bare feature matrix of several rows is then scored as ONE query, with a warning.
    scores_per_query: ClassVar[bool] = False
    #: the fitted ``data.normalize`` transform it was trained behind (:mod:`ltr.models.normalized`); None: raw
    normalize_: Normalizer | None = None

    def logged_model(self) -> tuple[str, Any]:
        """``(flavour, object to log)`` for a tracker: ``("pyfunc", self)`` for every ``ltr`` ranker.

        :mod:`ltr.models.pyfunc` wraps the ranker saved with :meth:`save` (native engine file +
        manifest), so every logged model takes the same input (features, optional ``qid``) and the
        native file stays loadable by its engine from the model's ``artifacts/ranker/`` folder.
        """
        self._check_fitted()
        return ("pyfunc", self)

    def learned_choices(self) -> tuple[dict[str, Any], dict[str, float]]:
        """``(params, metrics)`` the fit chose from the data, for the run's record (override).

        E.g. the ``feature`` baseline's column and direction, a blend's weights and its members'
        validation scores; empty for models whose only learned state is the engine's model file.
        """
        self._check_fitted()
        return {}, {}

    def save(self, path: str | Path) -> None:
        """Write the fitted model to folder ``path``: native model file(s), ``manifest.json``, history."""
        self._check_fitted()
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        files = self._save_native(path)
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "model": self.name,
            "engine": self.engine,
            "engine_version": self._engine_version(),
            "ltr_version": ltr.__version__,
            **self._manifest_config(),
            "engine_params_": self.engine_params_,
            "seed": int(self.seed),
            "num_threads": int(self.num_threads),
            "n_features": int(self.n_features_in_),
            "best_iteration": self.best_iteration_,
            "files": files,
            "state": self._extra_state(),
            **normalized.manifest_entry(self),  # data.normalize: the fitted transform (ltr.models.normalized)
        }
        selection = getattr(self, "feature_selection_", None)
        if selection is not None:  # data.features: full-width rows are cut to these columns
            manifest["feature_selection"] = selection.to_json()
        (path / MANIFEST).write_text(json.dumps(manifest, indent=2, default=_json_default) + "\n")
        (path / HISTORY).write_text(json.dumps(self.evals_result_, default=_json_default) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> BaseRanker:
        """Read a folder written by :meth:`save` (the manifest must name this model)."""
        path = Path(path)
        manifest = read_manifest(path)
        if manifest["model"] != cls.name:
            raise ConfigError(f"{path / MANIFEST}: holds a '{manifest['model']}' model, not '{cls.name}'")
        ranker = cls._from_manifest(manifest, path)
        ranker.engine_params_ = manifest.get("engine_params_") or {}
        ranker.n_features_in_ = int(manifest["n_features"])
        ranker.feature_selection_ = FeatureSelection.from_json(manifest.get("feature_selection"))
        ranker.best_iteration_ = manifest.get("best_iteration")
        history = path / HISTORY
        ranker.evals_result_ = _read_json(history, "training history") if history.exists() else {}
        ranker._load_native(path, manifest)
        ranker.normalize_ = Normalizer.from_manifest(manifest.get("normalize"), str(path / MANIFEST))
        return ranker

    # --- hooks ---------------------------------------------------------------------------------------
    def _manifest_config(self) -> dict[str, Any]:
        """The configuration a saved folder records (read back by :meth:`_from_manifest`)."""
        return {
            "params": self.params_,
            "early_stopping": self.early_stopping_,
            "engine_params": plain(self.engine_params),
        }

    @classmethod
    def _from_manifest(cls, manifest: dict[str, Any], path: Path) -> BaseRanker:
        """An unfitted model built from a manifest's configuration."""
        ranker = cls(
            manifest["params"],
            early_stopping=manifest["early_stopping"],
            engine_params=manifest["engine_params"],
            seed=manifest["seed"],
            num_threads=manifest["num_threads"],
        )
        ranker.params_ = manifest["params"]
        ranker.early_stopping_ = manifest["early_stopping"]
        return ranker

    def _begin_fit(self, n_features: int) -> Resolved:
        """The resolved config of a new fit, with what a previous fit learned reset (every backend)."""
        cfg = self._resolve()
        self.params_ = cfg.params
        self.early_stopping_ = cfg.early_stopping
        self.n_features_in_ = n_features
        self.feature_selection_: FeatureSelection | None = None  # fit() sets the train split's
        self.best_iteration_: int | None = None
        self.evals_result_: dict[str, dict[str, list[float]]] = {}
        self.engine_params_: dict[str, Any] = {}
        return cfg

    def _fit(
        self, train: RankingData, valid: RankingData | None, cfg: Resolved, on_iteration: OnIteration | None
    ) -> None:
        raise NotImplementedError

    def _score(self, data: RankingData | Any, X: Any) -> np.ndarray:
        """Scores of the rows of ``X`` (the feature matrix of ``data``); ensembles also use ``data``'s queries."""
        return self._predict(X)

    def _predict(self, X: Any) -> np.ndarray:
        raise NotImplementedError

    def _save_native(self, path: Path) -> dict[str, str]:
        raise NotImplementedError

    def _load_native(self, path: Path, manifest: dict[str, Any]) -> None:
        raise NotImplementedError

    def _n_rounds(self) -> int | None:
        """Rounds in the fitted model (``None`` for non-iterative models)."""
        return None

    def _extra_state(self) -> dict[str, Any]:
        """Small JSON-able fitted state beyond the native file (e.g. number of classes)."""
        return {}

    def _engine_version(self) -> str:
        from importlib.metadata import PackageNotFoundError, version

        for dist in {
            "lightgbm": ("lightgbm",),
            "xgboost": ("xgboost-cpu", "xgboost"),
            "catboost": ("catboost",),
            "jax": ("jax",),
        }.get(self.engine, ("scikit-learn",) if self.engine == "sklearn" else ()):
            try:
                return version(dist)
            except PackageNotFoundError:
                continue
        return ""

    def _check_fitted(self) -> None:
        if not hasattr(self, "n_features_in_"):
            raise NotFittedError(
                f"{type(self).__name__} is not fitted yet: call fit(train, valid) or load(folder) first"
            )


class NonIterativeRanker(BaseRanker):
    """A model fit in one shot (no boosting rounds): no early stopping, ``best_iteration_`` is None.

    With a validation split, the early-stopping metric is computed once on it and recorded as a
    one-value history (``evals_result_["valid"][metric] == [value]``, reported to ``on_iteration``
    as round 0), so every model's run logs a comparable validation figure. ``patience`` is ignored.
    """

    iterative = False

    def _fit(
        self, train: RankingData, valid: RankingData | None, cfg: Resolved, on_iteration: OnIteration | None
    ) -> None:
        w = watch(train, valid, {**cfg.early_stopping, "patience": None}, on_iteration, self._check_data)
        self._fit_model(train, valid, cfg, w.metric)
        if w.splits:
            values = {
                (role, w.metric.name): w.metric.mean(d, self.predict(d)) for role, d in w.splits.items()
            }
            w.monitor.update(0, values)
        self.evals_result_ = w.monitor.history

    def _check_data(self, data: RankingData, role: str, max_label: int) -> None:
        """Input checks before fitting (override)."""

    def _fit_model(self, train: RankingData, valid: RankingData | None, cfg: Resolved, metric: Any) -> None:
        raise NotImplementedError


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The manifest of a saved ranker folder, checked for format and version."""
    path = Path(path)
    file = path / MANIFEST
    if not file.is_file():
        raise ConfigError(f"{path}: not a saved ltr ranker (no {MANIFEST})")
    manifest = _read_json(file, "manifest")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ConfigError(f"{file}: not an ltr ranker manifest (format must be '{FORMAT}')")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ConfigError(
            f"{file}: format_version {manifest.get('format_version')!r}, this ltr reads version {FORMAT_VERSION}"
        )
    return manifest


def _read_json(file: Path, what: str) -> Any:
    """A JSON file of a saved folder; a damaged one (cut short, zeroed, not UTF-8) is one ConfigError naming it."""
    try:
        return json.loads(file.read_bytes().decode("utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{file}:{exc.lineno}: invalid JSON in the {what} ({exc.msg}); the file is damaged"
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file}: byte {exc.start} is not UTF-8; the {what} is damaged") from None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read the {what} ({exc.strerror or exc})") from None


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
