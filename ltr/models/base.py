"""The :class:`Ranker` protocol and :class:`BaseRanker`, the shared implementation behind every model.

Contract (``docs/architecture.md``, ``docs/models.md``)::

    ranker.fit(train, valid=None, *, on_iteration=None) -> ranker
    ranker.predict(data) -> float64 score per row (data: RankingData or a 2-D feature matrix)
    ranker.save(folder);  Ranker.load(folder) -> ranker      # native formats + manifest.json, no pickle

Fitted attributes end in ``_`` (scikit-learn style): ``best_iteration_`` (0-based index of the best
round on the validation metric, so ``evals_result_["valid"][metric][best_iteration_]`` is its score;
``None`` without early stopping, and the model then uses every round), ``evals_result_``
(``{"train": {"ndcg@10": [...]}, "valid": {...}}``, one value per round), ``engine_params_`` (the
engine parameters translated from the vocabulary by :mod:`ltr.models.vocabulary`, plus
``engine_params``; for logging), ``params_`` / ``early_stopping_`` (the
resolved ltr vocabulary) and ``n_features_in_``.

Constructor arguments are stored unchanged (so ``sklearn.base.clone`` and ``get_params`` work) but
validated immediately: a bad config fails when the ranker is built, before any data is loaded.

>>> from ltr.models.registry import get_ranker_class
>>> cls = get_ranker_class("lambdamart")
>>> r = cls({"n_trees": 5}, seed=3)
>>> r.get_params()["params"], r.get_params()["seed"]
({'n_trees': 5}, 3)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp

import ltr
from ltr.data import RankingData
from ltr.errors import ConfigError, DataError
from ltr.models.checks import check_features
from ltr.models.params import plain, resolve_early_stopping, resolve_params

MANIFEST = "manifest.json"
HISTORY = "evals_result.json"
FORMAT = "ltr-ranker"
FORMAT_VERSION = 1

OnIteration = Callable[[int, dict[str, float]], None]


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


class BaseRanker:
    """Shared machinery: parameter handling, fitted-state checks, folder persistence with a manifest.

    Subclasses set ``name`` (the registry / config name), ``engine``, ``default_params`` (the subset
    of the vocabulary they accept, with defaults) and implement ``_fit``, ``_predict``,
    ``_save_native`` and ``_load_native``.
    """

    name: ClassVar[str] = ""
    engine: ClassVar[str] = ""
    default_params: ClassVar[dict[str, Any]] = {}
    unsupported_params: ClassVar[dict[str, str]] = {}  # vocabulary key -> why not, and what to use
    iterative: ClassVar[bool] = True  # False: no boosting rounds, so no early stopping / history

    def __init__(
        self,
        params: Mapping[str, Any] | None = None,
        *,
        early_stopping: Mapping[str, Any] | None = None,
        engine_params: Mapping[str, Any] | None = None,
        seed: int = 0,
        num_threads: int = 0,
    ) -> None:
        self.params = params
        self.early_stopping = early_stopping
        self.engine_params = engine_params
        self.seed = seed
        self.num_threads = num_threads
        self._resolve()  # validate now; fit resolves again from the stored arguments

    CONFIG_KEYS: ClassVar[tuple[str, ...]] = ("name", "params", "early_stopping", "engine_params")

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], *, seed: int = 0, num_threads: int = 0) -> BaseRanker:
        """Build from a plain model config ``{name, params, early_stopping, engine_params}``."""
        unknown = sorted(set(cfg) - set(cls.CONFIG_KEYS))
        if unknown:
            raise ConfigError(
                f"model {cls.name}: unknown config key(s) {', '.join(unknown)}; accepted: {', '.join(cls.CONFIG_KEYS)}"
            )
        return cls(
            cfg.get("params"),
            early_stopping=cfg.get("early_stopping"),
            engine_params=cfg.get("engine_params"),
            seed=seed,
            num_threads=num_threads,
        )

    # --- scikit-learn conventions ----------------------------------------------------------------
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor arguments, as given (scikit-learn ``get_params``; ``deep`` is accepted for API parity)."""
        return {
            "params": self.params,
            "early_stopping": self.early_stopping,
            "engine_params": self.engine_params,
            "seed": self.seed,
            "num_threads": self.num_threads,
        }

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
    def _resolve(self) -> Resolved:
        """Params, early stopping and engine params with defaults filled in and validated."""
        params = resolve_params(
            self.default_params, self.params, model=self.name, unsupported=self.unsupported_params
        )
        es = resolve_early_stopping(self.early_stopping, model=self.name)
        engine_params = plain(self.engine_params)
        if not isinstance(engine_params, dict):
            raise ConfigError(
                f"model {self.name}: engine_params must be a mapping, got {self.engine_params!r}"
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int | np.integer):
            raise ConfigError(f"model {self.name}: seed must be an integer, got {self.seed!r}")
        if (
            isinstance(self.num_threads, bool)
            or not isinstance(self.num_threads, int | np.integer)
            or self.num_threads < 0
        ):
            raise ConfigError(
                f"model {self.name}: num_threads must be an integer >= 0 (0 = all cores), got {self.num_threads!r}"
            )
        self._check_params(params)
        return Resolved(params, es, engine_params)

    def _check_params(self, params: dict[str, Any]) -> None:
        """Model-specific cross-parameter checks (override)."""

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
        cfg = self._resolve()
        self.params_ = cfg.params
        self.early_stopping_ = cfg.early_stopping
        self.n_features_in_ = train.n_features
        self.best_iteration_: int | None = None
        self.evals_result_: dict[str, dict[str, list[float]]] = {}
        self.engine_params_: dict[str, Any] = {}
        self._fit(train, valid, cfg, on_iteration)
        return self

    def predict(self, data: RankingData | Any) -> np.ndarray:
        """One float64 score per row of ``data`` (higher = ranked earlier), in the caller's row order."""
        self._check_fitted()
        X = feature_matrix(data)
        if X.shape[1] != self.n_features_in_:
            where = data.name if isinstance(data, RankingData) else "predict"
            raise DataError(
                f"{where}: has {X.shape[1]} feature columns but the model was trained on {self.n_features_in_}"
            )
        if X.shape[0] == 0:
            return np.zeros(0, dtype=np.float64)
        return np.asarray(self._predict(X), dtype=np.float64).reshape(-1)

    @property
    def n_iterations_(self) -> int | None:
        """Rounds the fitted model uses when predicting (``best_iteration_ + 1`` after early stopping)."""
        self._check_fitted()
        if self.best_iteration_ is not None:
            return self.best_iteration_ + 1
        return self._n_rounds()

    #: How a tracker logs the fitted model: ``"pyfunc"`` (the ranker, saved with :meth:`save`, behind
    #: :mod:`ltr.models.pyfunc`) or an MLflow flavour that logs the engine's ``booster_`` natively
    #: (``"lightgbm"``, ``"xgboost"``).
    mlflow_flavor: ClassVar[str] = "pyfunc"

    def logged_model(self) -> tuple[str, Any]:
        """``(flavour, object to log)``: ``("pyfunc", self)``, or ``(mlflow_flavor, booster_)`` for a native flavour."""
        self._check_fitted()
        return ("pyfunc", self) if self.mlflow_flavor == "pyfunc" else (self.mlflow_flavor, self.booster_)

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
            "params": self.params_,
            "early_stopping": self.early_stopping_,
            "engine_params": plain(self.engine_params),
            "engine_params_": self.engine_params_,
            "seed": int(self.seed),
            "num_threads": int(self.num_threads),
            "n_features": int(self.n_features_in_),
            "best_iteration": self.best_iteration_,
            "files": files,
            "state": self._extra_state(),
        }
        (path / MANIFEST).write_text(json.dumps(manifest, indent=2, default=_json_default) + "\n")
        (path / HISTORY).write_text(json.dumps(self.evals_result_) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> BaseRanker:
        """Read a folder written by :meth:`save` (the manifest must name this model)."""
        path = Path(path)
        manifest = read_manifest(path)
        if manifest["model"] != cls.name:
            raise ConfigError(f"{path / MANIFEST}: holds a '{manifest['model']}' model, not '{cls.name}'")
        ranker = cls(
            manifest["params"],
            early_stopping=manifest["early_stopping"],
            engine_params=manifest["engine_params"],
            seed=manifest["seed"],
            num_threads=manifest["num_threads"],
        )
        ranker.params_ = manifest["params"]
        ranker.early_stopping_ = manifest["early_stopping"]
        ranker.engine_params_ = manifest["engine_params_"]
        ranker.n_features_in_ = int(manifest["n_features"])
        ranker.best_iteration_ = manifest["best_iteration"]
        history = path / HISTORY
        ranker.evals_result_ = json.loads(history.read_text()) if history.exists() else {}
        ranker._load_native(path, manifest)
        return ranker

    # --- hooks ---------------------------------------------------------------------------------------
    def _fit(
        self, train: RankingData, valid: RankingData | None, cfg: Resolved, on_iteration: OnIteration | None
    ) -> None:
        raise NotImplementedError

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
        }.get(self.engine, ("scikit-learn",) if self.engine == "sklearn" else ()):
            try:
                return version(dist)
            except PackageNotFoundError:
                continue
        return ""

    def _check_fitted(self) -> None:
        if not hasattr(self, "n_features_in_"):
            raise ConfigError(
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
        from ltr.models.monitor import watch

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
    try:
        manifest = json.loads(file.read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file}:{exc.lineno}: invalid JSON ({exc.msg})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ConfigError(f"{file}: not an ltr ranker manifest (format must be '{FORMAT}')")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ConfigError(
            f"{file}: format_version {manifest.get('format_version')!r}, this ltr reads version {FORMAT_VERSION}"
        )
    return manifest


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
