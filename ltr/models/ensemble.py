"""Ensembles of configured rankers: seed bagging, normalised score averaging, RRF, Borda, a learned
linear blend (coordinate ascent) and stacking. See ``docs/ensembles.md``.

An ensemble config (``conf/model/ensemble_*.yaml``) names its members by model config name, each
optionally with overrides of that config, so members may mix engines::

    name: ensemble_blend
    members:
      - lambdamart                                   # conf/model/lambdamart.yaml as is
      - {model: regression, params: {n_trees: 200}}  # overrides merged over conf/model/regression.yaml
      - {model: lambdamart, bags: 5, query_fraction: 0.8}   # 5 seeds, each on 80% of the train queries
    params: {...}                                    # the combination's settings (per class below)
    n_jobs: 0                                        # members trained at once (0 = as many as cores allow)

Member ``i`` (after expanding ``bags``) gets the seed ``derive_seed(seed, i)``; a member with
``query_fraction < 1`` trains on that share of the training **queries** (whole queries, drawn
without replacement with its seed). Members train in parallel threads with ``jobs × engine threads
≤ cores`` (:func:`split_threads`); all of them see the validation split for early stopping.

Combinations (``S`` = the members' scores, rows × members; per-query functions in
:mod:`ltr.models.fusion`):

=====================  ==========================================================================
``ensemble_mean``      Σ_j w_j·norm(s_j) / Σ_j w_j with per-query ``zscore``/``minmax``/``rank``/``none``
``ensemble_bagging``   the same with ``normalization: none`` (plain average of bagged copies)
``ensemble_rrf``       Σ_j w_j / (k + rank_j), k = 60
``ensemble_borda``     Σ_j w_j·(n_q − rank_j + 1)
``ensemble_blend``     Σ_j w_j·norm(s_j) with w fit on the validation split by coordinate ascent to
                       maximise ``params.metric`` (:func:`ltr.models.blend.coordinate_ascent`)
``ensemble_stack``     a second-level ranker (``stacker:``) over the member scores (+ normalised copies),
                       trained on the validation split with query-grouped cross-fitting: fold ``f``'s
                       model is fit on the other folds' queries and scores fold ``f``; new data gets
                       the mean of the fold models, and the validation split itself gets its
                       out-of-fold scores, so it is never scored by a model fit on it
=====================  ==========================================================================

A saved ensemble is a folder: ``manifest.json`` (format ``ltr-ranker``, so
:func:`ltr.models.load_ranker` reads it), each member saved by its own ``save`` (native engine
formats) under ``members/NN_label/``, stackers under ``stackers/fold_F/``, and arrays as ``.npy``
(never pickle).

>>> ens = build_ensemble({"name": "ensemble_rrf", "members": ["lambdamart", "regression"],
...                       "params": {"k": 60, "weights": None}}, seed=1, num_threads=1)
>>> [m.label for m in ens.member_specs], ens.member_specs[0].config["name"]
(['lambdamart', 'regression'], 'lambdamart')
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ltr.data import RankingData
from ltr.errors import ConfigError, DataError
from ltr.models.blend import coordinate_ascent, query_folds, stack_features
from ltr.models.fusion import NORMALIZATIONS, check_weights, fuse, weighted_sum

MODEL_CONF_DIR = Path(__file__).resolve().parents[2] / "conf" / "model"
MANIFEST = "manifest.json"
FORMAT, FORMAT_VERSION = "ltr-ranker", 1  # the manifest format of ltr.models.base, read by load_ranker
MEMBER_KEYS = ("model", "label", "params", "early_stopping", "engine_params", "bags", "query_fraction")
OnIteration = Callable[[int, dict[str, float]], None]


# --- configuration ---------------------------------------------------------------------------------


def derive_seed(seed: int, index: int) -> int:
    """A member's seed: independent streams from one ensemble seed (``numpy.random.SeedSequence``).

    >>> derive_seed(42, 0) == derive_seed(42, 0) != derive_seed(42, 1)
    True
    """
    return int(np.random.SeedSequence([int(seed), int(index)]).generate_state(1)[0] & 0x7FFFFFFF)


def split_threads(n_members: int, n_jobs: int, num_threads: int) -> tuple[int, int]:
    """(parallel jobs, engine threads per job) with ``jobs × threads ≤ cores``.

    ``num_threads`` is the total budget (0 = every core); ``n_jobs`` caps the jobs (0 = no cap).

    >>> split_threads(5, 0, 2), split_threads(2, 0, 8), split_threads(3, 1, 4)
    ((2, 1), (2, 4), (1, 4))
    """
    cores = int(num_threads) if num_threads > 0 else (os.cpu_count() or 1)
    jobs = max(1, min(n_members, cores, n_jobs if n_jobs > 0 else cores))
    return jobs, max(1, cores // jobs)


def model_config(name: str, where: str) -> dict[str, Any]:
    """``conf/model/NAME.yaml`` as a plain dict."""
    from omegaconf import OmegaConf

    path = MODEL_CONF_DIR / f"{name}.yaml"
    if not isinstance(name, str) or not path.is_file():
        known = ", ".join(sorted(p.stem for p in MODEL_CONF_DIR.glob("*.yaml")))
        raise ConfigError(f"{where}: no model config {path} for {name!r}; known model configs: {known}")
    return OmegaConf.to_container(OmegaConf.load(path), resolve=True)


@dataclass(frozen=True)
class MemberSpec:
    """One member after expansion: a display label, the full model config, its seed and query share."""

    label: str
    config: dict[str, Any]
    seed: int
    query_fraction: float = 1.0


def resolve_member(entry: Any, where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(full model config, member options) for a member entry: a model name or a mapping with ``model``."""
    from omegaconf import OmegaConf

    from ltr.models.params import plain

    entry = {"model": entry} if isinstance(entry, str) else plain(entry)
    if not isinstance(entry, Mapping) or "model" not in entry:
        raise ConfigError(f"{where}: expected a model config name or a mapping with 'model', got {entry!r}")
    unknown = sorted(set(entry) - set(MEMBER_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; accepted: {list(MEMBER_KEYS)}")
    base = model_config(entry["model"], where)
    overrides = {
        k: entry[k] for k in ("params", "early_stopping", "engine_params") if entry.get(k) is not None
    }
    config = OmegaConf.to_container(OmegaConf.merge(base, overrides), resolve=True)
    bags, fraction = entry.get("bags", 1), entry.get("query_fraction", 1.0)
    if isinstance(bags, bool) or not isinstance(bags, int) or bags < 1:
        raise ConfigError(f"{where}.bags: expected an integer >= 1, got {bags!r}")
    if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0.0 < fraction <= 1.0:
        raise ConfigError(f"{where}.query_fraction: expected a number in (0, 1], got {fraction!r}")
    return config, {
        "label": entry.get("label") or entry["model"],
        "bags": bags,
        "query_fraction": float(fraction),
    }


def expand_members(members: Any, seed: int, where: str) -> list[MemberSpec]:
    """Member entries → one :class:`MemberSpec` per trained model (``bags`` copies each), unique labels."""
    from ltr.models.params import plain

    members = plain(members)
    if not isinstance(members, Sequence) or isinstance(members, str) or not members:
        raise ConfigError(f"{where}: members must be a non-empty list of model config names, got {members!r}")
    resolved = [resolve_member(entry, f"{where}[{i}]") for i, entry in enumerate(members)]
    labels = [opts["label"] for _, opts in resolved]
    seen: dict[str, int] = {}
    specs: list[MemberSpec] = []
    for (config, opts), label in zip(resolved, labels, strict=True):
        if labels.count(label) > 1:  # the same model twice: lambdamart_0, lambdamart_1, ...
            seen[label] = seen.get(label, -1) + 1
            label = f"{label}_{seen[label]}"
        for b in range(opts["bags"]):
            specs.append(
                MemberSpec(
                    label=f"{label}_bag{b}" if opts["bags"] > 1 else label,
                    config=config,
                    seed=derive_seed(seed, len(specs)),
                    query_fraction=opts["query_fraction"],
                )
            )
    return specs


def query_sample(data: RankingData, fraction: float, seed: int) -> RankingData:
    """``data`` restricted to ``round(fraction·n_queries)`` whole queries (seeded, in row order)."""
    if fraction >= 1.0:
        return data
    n = max(1, int(round(fraction * data.n_queries)))
    keep = np.sort(np.random.default_rng(seed).choice(data.n_queries, n, replace=False))
    return data.subset(keep, name=f"{data.name}[{n}/{data.n_queries} queries]")


# --- the ensemble ------------------------------------------------------------------------------------


class Ensemble:
    """Shared machinery of every ensemble (module docstring); subclasses define the combination."""

    name: ClassVar[str] = ""
    engine: ClassVar[str] = "ensemble"
    default_params: ClassVar[dict[str, Any]] = {}
    needs_valid: ClassVar[bool] = False
    CONFIG_KEYS: ClassVar[tuple[str, ...]] = ("name", "members", "params", "n_jobs")

    def __init__(
        self,
        members: Any,
        params: Mapping[str, Any] | None = None,
        *,
        n_jobs: int = 0,
        seed: int = 0,
        num_threads: int = 0,
        stacker: Any = None,
    ) -> None:
        self.members = members
        self.params = params
        self.n_jobs = n_jobs
        self.seed = seed
        self.num_threads = num_threads
        self.stacker = stacker
        self._resolve()

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], *, seed: int = 0, num_threads: int = 0) -> Ensemble:
        """Build from ``{name, members, params, n_jobs}`` (plus ``stacker`` for stacking)."""
        unknown = sorted(set(cfg) - set(cls.CONFIG_KEYS))
        if unknown:
            raise ConfigError(
                f"model {cls.name}: unknown config key(s) {', '.join(unknown)}; accepted: {', '.join(cls.CONFIG_KEYS)}"
            )
        extra = {"stacker": cfg.get("stacker")} if "stacker" in cls.CONFIG_KEYS else {}
        return cls(
            cfg.get("members"),
            cfg.get("params"),
            n_jobs=cfg.get("n_jobs", 0),
            seed=seed,
            num_threads=num_threads,
            **extra,
        )

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor arguments, as given (scikit-learn convention)."""
        return {
            "members": self.members,
            "params": self.params,
            "n_jobs": self.n_jobs,
            "seed": self.seed,
            "num_threads": self.num_threads,
            "stacker": self.stacker,
        }

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(members={[m.label for m in self.member_specs]}, params={self.params_!r})"
        )

    # --- validation ------------------------------------------------------------------------------------
    def _resolve(self) -> None:
        from ltr.models import build_ranker
        from ltr.models.params import resolve_params

        where = f"model {self.name}"
        for key, value in (("seed", self.seed), ("num_threads", self.num_threads), ("n_jobs", self.n_jobs)):
            if (
                isinstance(value, bool)
                or not isinstance(value, int | np.integer)
                or (key != "seed" and value < 0)
            ):
                raise ConfigError(
                    f"{where}: {key} must be an integer{' >= 0' if key != 'seed' else ''}, got {value!r}"
                )
        self.params_ = resolve_params(self.default_params, self.params, model=self.name)
        self._check_params(self.params_)
        self.member_specs = expand_members(self.members, int(self.seed), f"{where}: members")
        for spec in self.member_specs:  # validate every member config now, before any data is read
            build_ranker(spec.config, seed=spec.seed, num_threads=1)
        weights = self.params_.get("weights")
        if weights is not None:
            check_weights(weights, len(self.member_specs))

    def _check_params(self, params: dict[str, Any]) -> None:
        """Combination-specific checks (override)."""

    # --- training ----------------------------------------------------------------------------------------
    def fit(
        self, train: RankingData, valid: RankingData | None = None, *, on_iteration: OnIteration | None = None
    ) -> Ensemble:
        """Train every member (in parallel), then fit the combination on ``valid`` when it learns one."""
        from ltr.models import build_ranker
        from ltr.models.checks import check_features

        if not isinstance(train, RankingData) or (valid is not None and not isinstance(valid, RankingData)):
            raise DataError(f"{self.name}.fit: train and valid must be ltr.data.RankingData objects")
        if valid is not None:
            check_features(train, valid, "valid")
        if self.needs_valid and (valid is None or valid.n_queries == 0):
            raise ConfigError(
                f"model {self.name}: fitting the combination needs a validation split (valid=None given)"
            )
        self._resolve()
        jobs, threads = split_threads(len(self.member_specs), int(self.n_jobs), int(self.num_threads))
        lock = threading.Lock()

        def train_one(spec: MemberSpec) -> Any:
            ranker = build_ranker(spec.config, seed=spec.seed, num_threads=threads)
            callback = None
            if on_iteration is not None:

                def callback(i: int, values: dict[str, float], label: str = spec.label) -> None:
                    with lock:
                        on_iteration(i, {f"{label}/{k}": v for k, v in values.items()})

            return ranker.fit(
                query_sample(train, spec.query_fraction, spec.seed), valid, on_iteration=callback
            )

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            fitted = list(pool.map(train_one, self.member_specs))
        self.rankers_ = fitted
        self.n_features_in_ = train.n_features
        self.best_iteration_: int | None = None
        self.jobs_, self.threads_per_job_ = jobs, threads
        self.evals_result_ = {
            f"{spec.label}/{split}": curves
            for spec, ranker in zip(self.member_specs, fitted, strict=True)
            for split, curves in (getattr(ranker, "evals_result_", None) or {}).items()
        }
        self.engine_params_ = {
            f"{spec.label}.{key}": value
            for spec, ranker in zip(self.member_specs, fitted, strict=True)
            for key, value in (getattr(ranker, "engine_params_", None) or {}).items()
        }
        if self.needs_valid:
            self._fit_combination(valid)
        return self

    def member_scores(self, data: RankingData | Any) -> np.ndarray:
        """Every member's scores on ``data``: a (rows × members) float64 matrix."""
        self._check_fitted()
        return np.column_stack([r.predict(data) for r in self.rankers_]).astype(np.float64)

    def predict(self, data: RankingData | Any) -> np.ndarray:
        """Combined float64 score per row. A bare feature matrix is scored as ONE query (its rows are
        the candidates of a single query); pass a :class:`RankingData` to score many queries."""
        self._check_fitted()
        S = self.member_scores(data)
        offsets = data.offsets if isinstance(data, RankingData) else np.array([0, S.shape[0]])
        if S.shape[0] == 0:
            return np.zeros(0)
        return self._combine(S, offsets, data)

    def _fit_combination(self, valid: RankingData) -> None:
        """Learn the combination from the members' validation scores (override when it learns)."""

    def _combine(self, S: np.ndarray, offsets: np.ndarray, data: Any) -> np.ndarray:
        raise NotImplementedError

    def logged_model(self) -> tuple[str, Any]:
        """How a tracker logs the fitted ensemble: pyfunc around :meth:`save` (see ``BaseRanker.logged_model``)."""
        self._check_fitted()
        return "pyfunc", self

    def _check_fitted(self) -> None:
        if not hasattr(self, "rankers_"):
            raise ConfigError(
                f"{type(self).__name__} is not fitted yet: call fit(train, valid) or load(folder) first"
            )

    # --- persistence -------------------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Write the folder: manifest.json, ``members/NN_label/`` (native formats), learned state."""
        import ltr

        self._check_fitted()
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        member_dirs = []
        for i, (spec, ranker) in enumerate(zip(self.member_specs, self.rankers_, strict=True)):
            rel = f"members/{i:02d}_{spec.label}"
            ranker.save(path / rel)
            member_dirs.append(rel)
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "model": self.name,
            "engine": self.engine,
            "ltr_version": ltr.__version__,
            "config": {
                "members": _plain(self.members),
                "params": self.params_,
                "n_jobs": int(self.n_jobs),
                "stacker": _plain(self.stacker),
            },
            "seed": int(self.seed),
            "num_threads": int(self.num_threads),
            "n_features": int(self.n_features_in_),
            "members": [
                {
                    "label": s.label,
                    "model": s.config["name"],
                    "seed": s.seed,
                    "query_fraction": s.query_fraction,
                    "dir": d,
                }
                for s, d in zip(self.member_specs, member_dirs, strict=True)
            ],
            "state": self._save_state(path),
        }
        (path / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        (path / "evals_result.json").write_text(json.dumps(self.evals_result_) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Ensemble:
        """Read a folder written by :meth:`save`; members load through :func:`ltr.models.load_ranker`."""
        from ltr.models import load_ranker, read_manifest

        path = Path(path)
        manifest = read_manifest(path)
        if manifest.get("model") != cls.name:
            raise ConfigError(f"{path / MANIFEST}: holds a '{manifest.get('model')}' model, not '{cls.name}'")
        config = manifest["config"]
        extra = {"stacker": config.get("stacker") or None} if "stacker" in cls.CONFIG_KEYS else {}
        ens = cls(
            config["members"],
            config["params"],
            n_jobs=config["n_jobs"],
            seed=manifest["seed"],
            num_threads=manifest["num_threads"],
            **extra,
        )
        labels = [m["label"] for m in manifest["members"]]
        if labels != [s.label for s in ens.member_specs]:
            raise ConfigError(f"{path / MANIFEST}: members {labels} do not match the saved configuration")
        ens.rankers_ = [load_ranker(path / m["dir"]) for m in manifest["members"]]
        ens.n_features_in_ = int(manifest["n_features"])
        ens.best_iteration_ = None
        history = path / "evals_result.json"
        ens.evals_result_ = json.loads(history.read_text()) if history.exists() else {}
        ens.engine_params_ = {}
        ens._load_state(path, manifest["state"])
        return ens

    def _save_state(self, path: Path) -> dict[str, Any]:
        return {}

    def _load_state(self, path: Path, state: dict[str, Any]) -> None:
        """Restore learned combination state (override)."""


def _plain(value: Any) -> Any:
    from ltr.models.params import plain

    return None if value is None else plain(value)


def _check_normalization(name: str, value: Any) -> None:
    if value not in NORMALIZATIONS:
        raise ConfigError(
            f"model {name}: params.normalization: expected one of {list(NORMALIZATIONS)}, got {value!r}"
        )


def _check_metric(name: str, params: dict[str, Any]) -> None:
    from ltr.metrics import resolve_conventions
    from ltr.metrics.registry import parse_metric

    try:
        parse_metric(params["metric"])
        resolve_conventions(params["preset"])
    except Exception as exc:  # MetricError / ConfigError from the metrics registry
        raise ConfigError(f"model {name}: params.metric / params.preset: {exc}") from None


class MeanEnsemble(Ensemble):
    """Weighted mean of per-query normalised member scores (CombSUM / Σw)."""

    name = "ensemble_mean"
    default_params: ClassVar[dict[str, Any]] = {"normalization": "zscore", "weights": None}

    def _check_params(self, params: dict[str, Any]) -> None:
        _check_normalization(self.name, params["normalization"])

    def _combine(self, S: np.ndarray, offsets: np.ndarray, data: Any) -> np.ndarray:
        p = self.params_
        return fuse(S, offsets, "mean", weights=p["weights"], normalization=p["normalization"])


class BaggingEnsemble(MeanEnsemble):
    """Seed bagging: the plain average of copies trained with different seeds on sampled queries."""

    name = "ensemble_bagging"
    default_params: ClassVar[dict[str, Any]] = {"normalization": "none", "weights": None}


class RRFEnsemble(Ensemble):
    """Reciprocal rank fusion of the members' rankings (Cormack et al. 2009)."""

    name = "ensemble_rrf"
    default_params: ClassVar[dict[str, Any]] = {"k": 60, "weights": None}

    def _combine(self, S: np.ndarray, offsets: np.ndarray, data: Any) -> np.ndarray:
        return fuse(S, offsets, "rrf", weights=self.params_["weights"], k=self.params_["k"])


class BordaEnsemble(Ensemble):
    """Borda count over the members' rankings (Aslam & Montague 2001)."""

    name = "ensemble_borda"
    default_params: ClassVar[dict[str, Any]] = {"weights": None}

    def _combine(self, S: np.ndarray, offsets: np.ndarray, data: Any) -> np.ndarray:
        return fuse(S, offsets, "borda", weights=self.params_["weights"])


BLEND_SEARCH = ("n_restarts", "max_steps", "max_passes", "tolerance")


class BlendEnsemble(Ensemble):
    """Linear blend of normalised member scores, weights fit on validation by coordinate ascent."""

    name = "ensemble_blend"
    needs_valid = True
    default_params: ClassVar[dict[str, Any]] = {
        "normalization": "zscore",
        "metric": "ndcg@10",
        "preset": "ltr",
        "n_restarts": 5,
        "max_steps": 25,
        "max_passes": 20,
        "tolerance": 0.0001,
    }

    def _check_params(self, params: dict[str, Any]) -> None:
        _check_normalization(self.name, params["normalization"])
        _check_metric(self.name, params)

    def _fit_combination(self, valid: RankingData) -> None:
        p = self.params_
        from ltr.models.fusion import normalize_scores

        X = normalize_scores(self.member_scores(valid), valid.offsets, p["normalization"])
        fit = coordinate_ascent(
            X,
            valid.y,
            valid.offsets,
            metric=p["metric"],
            preset=p["preset"],
            seed=int(self.seed),
            **{k: p[k] for k in BLEND_SEARCH},
        )
        self.weights_ = fit.weights
        self.blend_fit_ = fit
        self.valid_scores_ = {
            "blend": fit.score,
            **{s.label: float(v) for s, v in zip(self.member_specs, fit.member_scores, strict=True)},
        }

    def _combine(self, S: np.ndarray, offsets: np.ndarray, data: Any) -> np.ndarray:
        return weighted_sum(S, offsets, weights=self.weights_, normalization=self.params_["normalization"])

    def _save_state(self, path: Path) -> dict[str, Any]:
        return {"weights": self.weights_.tolist(), "valid_scores": self.valid_scores_}

    def _load_state(self, path: Path, state: dict[str, Any]) -> None:
        self.weights_ = np.asarray(state["weights"], dtype=np.float64)
        self.valid_scores_ = state["valid_scores"]


DEFAULT_STACKER: dict[str, Any] = {"model": "lambdamart"}


class StackEnsemble(Ensemble):
    """Stacking: a second-level ranker over member scores, cross-fit on the validation queries."""

    name = "ensemble_stack"
    needs_valid = True
    CONFIG_KEYS: ClassVar[tuple[str, ...]] = ("name", "members", "params", "n_jobs", "stacker")
    default_params: ClassVar[dict[str, Any]] = {"normalizations": ["zscore", "rank"], "n_folds": 5}

    def _check_params(self, params: dict[str, Any]) -> None:
        norms = params["normalizations"]
        if not isinstance(norms, list | tuple) or any(n not in NORMALIZATIONS[1:] for n in norms):
            raise ConfigError(
                f"model {self.name}: params.normalizations: expected a list drawn from {list(NORMALIZATIONS[1:])}, got {norms!r}"
            )
        n_folds = params["n_folds"]
        if isinstance(n_folds, bool) or not isinstance(n_folds, int) or n_folds < 2:
            raise ConfigError(f"model {self.name}: params.n_folds: expected an integer >= 2, got {n_folds!r}")
        self.stacker_config_, _ = resolve_member(
            self.stacker or DEFAULT_STACKER, f"model {self.name}: stacker"
        )
        from ltr.models import build_ranker

        build_ranker(self.stacker_config_, seed=0, num_threads=1)  # validate the stacker's config now

    def _features(self, S: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        return stack_features(S, offsets, tuple(self.params_["normalizations"]))

    def _fit_combination(self, valid: RankingData) -> None:
        from ltr.models import build_ranker

        level2 = RankingData(
            X=self._features(self.member_scores(valid), valid.offsets),
            y=valid.y,
            qid=valid.qid,
            name=f"{valid.name} (stack)",
        )
        folds = query_folds(valid.n_queries, int(self.params_["n_folds"]), int(self.seed))
        oof = np.zeros(valid.n_docs)
        self.stackers_ = []
        for f in range(int(self.params_["n_folds"])):
            held = np.flatnonzero(folds == f)
            fit_on = level2.subset(np.flatnonzero(folds != f))
            model = build_ranker(
                self.stacker_config_,
                seed=derive_seed(int(self.seed), 10_000 + f),
                num_threads=int(self.num_threads),
            )
            model.fit(fit_on)
            oof[level2.row_indices(held)] = model.predict(level2.subset(held))
            self.stackers_.append(model)
        self.valid_fingerprint_ = valid.fingerprint()
        self.valid_oof_ = oof

    def _combine(self, S: np.ndarray, offsets: np.ndarray, data: Any) -> np.ndarray:
        if (
            isinstance(data, RankingData)
            and data.n_docs == self.valid_oof_.shape[0]
            and data.fingerprint() == self.valid_fingerprint_
        ):
            return self.valid_oof_.copy()  # the validation split: its cross-fitted scores
        F = self._features(S, offsets)
        return np.mean([m.predict(F) for m in self.stackers_], axis=0)

    def _save_state(self, path: Path) -> dict[str, Any]:
        dirs = []
        for f, model in enumerate(self.stackers_):
            model.save(path / f"stackers/fold_{f}")
            dirs.append(f"stackers/fold_{f}")
        np.save(path / "valid_oof.npy", self.valid_oof_, allow_pickle=False)
        return {"stackers": dirs, "valid_fingerprint": self.valid_fingerprint_, "valid_oof": "valid_oof.npy"}

    def _load_state(self, path: Path, state: dict[str, Any]) -> None:
        from ltr.models import load_ranker

        self.stackers_ = [load_ranker(path / d) for d in state["stackers"]]
        self.valid_fingerprint_ = state["valid_fingerprint"]
        self.valid_oof_ = np.load(path / state["valid_oof"], allow_pickle=False)


#: registry name → class; ``ltr/models/__init__.py`` registers each (one ``conf/model/NAME.yaml`` each)
ENSEMBLE_MODELS: dict[str, type[Ensemble]] = {
    cls.name: cls
    for cls in (MeanEnsemble, BaggingEnsemble, RRFEnsemble, BordaEnsemble, BlendEnsemble, StackEnsemble)
}


def build_ensemble(cfg: Mapping[str, Any], *, seed: int = 0, num_threads: int = 0) -> Ensemble:
    """An ensemble from its config (the ``name`` picks the combination)."""
    from ltr.models.params import plain

    cfg = plain(cfg)
    if cfg.get("name") not in ENSEMBLE_MODELS:
        raise ConfigError(
            f"unknown ensemble {cfg.get('name')!r}; known: {', '.join(sorted(ENSEMBLE_MODELS))}"
        )
    return ENSEMBLE_MODELS[cfg["name"]].from_config(cfg, seed=seed, num_threads=num_threads)
