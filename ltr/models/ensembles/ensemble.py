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

A member's config is composed by Hydra exactly as ``+model=NAME`` composes it for ``ltr.train`` (the
running app's config search path, so ``--config-dir`` model configs work as members; outside an app
the package's ``conf/``), then the entry's overrides are merged over it with the member block's types.
From the command line a member is replaced whole:
``model.members.0={model:lambdamart,params:{n_trees:100}}``.

Member ``i`` (after expanding ``bags``) gets the seed ``derive_seed(seed, i)``; a member with
``query_fraction < 1`` trains on that share of the training **queries** (whole queries, drawn
without replacement with its seed). Members train in parallel threads with ``jobs × engine threads
≤ cores`` (:func:`split_threads`); all of them see the validation split for early stopping.

Combinations (``S`` = the members' scores, rows × members; per-query functions in
:mod:`ltr.models.ensembles.fusion`):

=====================  ==========================================================================
``ensemble_mean``      Σ_j w_j·norm(s_j) / Σ_j w_j with per-query ``zscore``/``minmax``/``rank``/``none``
``ensemble_bagging``   the same with ``normalization: none`` (plain average of bagged copies)
``ensemble_rrf``       Σ_j w_j / (k + rank_j), k = 60
``ensemble_borda``     Σ_j w_j·(n_q − rank_j + 1)
``ensemble_blend``     Σ_j w_j·norm(s_j) with w fit on the validation split by coordinate ascent to
                       maximise ``params.metric`` (:func:`ltr.models.ensembles.blend.coordinate_ascent`)
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

>>> from ltr.models import build_ranker
>>> ens = build_ranker({"name": "ensemble_rrf", "members": ["lambdamart", "regression"],
...                     "params": {"k": 60, "weights": None}}, seed=1, num_threads=1)
>>> [m.label for m in ens.member_specs], ens.member_specs[0].config["name"]
(['lambdamart', 'regression'], 'lambdamart')
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ltr.core.config_check import check_block, defaults, join, plain
from ltr.core.errors import ConfigError
from ltr.data import RankingData
from ltr.models.base import BaseRanker, OnIteration, Resolved, shared_input_dtype
from ltr.models.ensembles.blend import coordinate_ascent, query_folds, stack_features
from ltr.models.ensembles.fusion import check_weights, fuse, normalize_scores, weighted_sum
from ltr.models.ensembles.members import (
    MemberSpec,
    derive_seed,
    expand_members,
    query_sample,
    resolve_member,
    saved_model_configs,
    split_threads,
)
from ltr.models.registry import build_ranker, load_ranker


class Ensemble(BaseRanker):
    """Shared machinery of every ensemble (module docstring); each subclass is one combination.

    Built on :class:`~ltr.models.base.BaseRanker`: config checks, ``get_params``/``set_params``, the
    fitted check, ``predict``'s input checks and the saved folder's manifest are the rankers' own. A
    subclass implements ``_combine`` (member scores → one score per row) and, when the combination is
    learned on the validation split (``needs_valid``), ``_fit_combination`` with its ``_extra_state`` /
    ``_load_state``.
    """

    engine: ClassVar[str] = "ensemble"
    iterative: ClassVar[bool] = False
    needs_valid: ClassVar[bool] = False
    scores_per_query: ClassVar[bool] = True  # normalises / fuses / stacks within each query

    def __init__(
        self,
        members: Any,
        params: Any = None,
        *,
        n_jobs: int = 0,
        seed: int = 0,
        num_threads: int = 0,
        where: str = "model",
    ) -> None:
        self.members = members
        self.params = params
        self.n_jobs = n_jobs
        self.seed = seed
        self.num_threads = num_threads
        self._where = where
        self._resolve()

    @property
    def input_dtype(self) -> str:  # type: ignore[override]
        """The members' :func:`~ltr.models.base.shared_input_dtype` (a float32 member's engine narrows
        float64 values; a value can then differ from its direct float32 parse only by double rounding)."""
        return shared_input_dtype(
            build_ranker(spec.config, seed=spec.seed, num_threads=1, where=spec.where).input_dtype
            for spec in self.member_specs
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(members={[m.label for m in self.member_specs]}, params={self.params_!r})"
        )

    # --- validation ------------------------------------------------------------------------------------
    def _resolve(self) -> Resolved:
        """The whole block checked (params, n_jobs, members: each member's config built now, before any data)."""
        self._check_run()
        given = {
            k: v for k, v in self.get_params().items() if k not in ("seed", "num_threads") and v is not None
        }
        block = check_block(self.config_schema, given, self._where)  # type: ignore[arg-type]
        self.params_ = block["params"]
        self.member_specs = expand_members(block["members"], int(self.seed), join(self._where, "members"))
        for spec in self.member_specs:
            build_ranker(spec.config, seed=spec.seed, num_threads=1, where=spec.where)
        if self.params_.get("weights") is not None:
            check_weights(self.params_["weights"], len(self.member_specs))
        self._check_block(block)
        return Resolved(self.params_, {}, {})

    def _check_block(self, block: dict[str, Any]) -> None:
        """Combination-specific checks of the resolved block (override)."""

    # --- training ----------------------------------------------------------------------------------------
    def _fit(
        self, train: RankingData, valid: RankingData | None, cfg: Resolved, on_iteration: OnIteration | None
    ) -> None:
        """Train every member (in parallel), then fit the combination on ``valid`` when it learns one.

        ``on_iteration`` gets each member's rounds (keys prefixed with the member's label) and, after
        each member, that member's best validation value of its early-stopping metric as
        ``{"valid/<metric>": value}`` at step = members finished − 1 (what a search prunes on). When it
        returns True the members not started yet are skipped and no combination is fitted.
        """
        if self.needs_valid and (valid is None or valid.n_queries == 0):
            raise ConfigError(
                f"model {self.name}: fitting the combination needs a validation split (valid=None given)"
            )
        jobs, threads = split_threads(len(self.member_specs), int(self.n_jobs), int(self.num_threads))
        lock = threading.Lock()
        finished: list[int] = []  # members done so far (the step of the after-member report)
        stopped = threading.Event()  # on_iteration asked to stop: members not started yet are skipped

        def train_one(spec: MemberSpec) -> Any:
            if stopped.is_set():
                return None
            ranker = build_ranker(spec.config, seed=spec.seed, num_threads=threads, where=spec.where)
            callback = None
            if on_iteration is not None:

                def callback(i: int, values: dict[str, float], label: str = spec.label) -> bool:
                    with lock:
                        return bool(on_iteration(i, {f"{label}/{k}": v for k, v in values.items()}))

            ranker.fit(query_sample(train, spec.query_fraction, spec.seed), valid, on_iteration=callback)
            if on_iteration is not None:
                with lock:
                    finished.append(len(finished))
                    if ranker.stopped_at_ is not None or on_iteration(finished[-1], member_report(ranker)):
                        stopped.set()
            return ranker

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            fitted = list(pool.map(train_one, self.member_specs))
        members = [(spec, r) for spec, r in zip(self.member_specs, fitted, strict=True) if r is not None]
        self.rankers_ = [ranker for _, ranker in members]
        self.jobs_, self.threads_per_job_ = jobs, threads
        self.evals_result_ = {
            f"{spec.label}/{split}": curves
            for spec, ranker in members
            for split, curves in (getattr(ranker, "evals_result_", None) or {}).items()
        }
        self.engine_params_ = {
            f"{spec.label}.{key}": value
            for spec, ranker in members
            for key, value in (getattr(ranker, "engine_params_", None) or {}).items()
        }
        if stopped.is_set():  # a caller's stop: no combination; the members trained so far are kept
            return
        if self.needs_valid:
            self._fit_combination(valid)  # type: ignore[arg-type]

    def member_scores(self, data: RankingData | Any) -> np.ndarray:
        """Every member's scores on ``data``: a (rows × members) float64 matrix."""
        self._check_fitted()
        return np.column_stack([r.predict(data) for r in self.rankers_]).astype(np.float64)

    def _score(self, data: RankingData | Any, X: Any) -> np.ndarray:
        """Combined scores. A bare feature matrix is scored as ONE query (its rows are the candidates of
        a single query); pass a :class:`RankingData` to score many queries."""
        S = self.member_scores(data)
        offsets = data.offsets if isinstance(data, RankingData) else np.array([0, S.shape[0]])
        return self._combine(S, offsets, data)

    def _fit_combination(self, valid: RankingData) -> None:
        """Learn the combination from the members' validation scores (override when it learns)."""

    def _combine(self, S: np.ndarray, offsets: np.ndarray, data: Any) -> np.ndarray:
        raise NotImplementedError

    # --- persistence -------------------------------------------------------------------------------------
    def _member_dirs(self) -> list[str]:
        return [f"members/{i:02d}_{spec.label}" for i, spec in enumerate(self.member_specs)]

    def _save_native(self, path: Path) -> dict[str, str]:
        """Each member saved by its own ``save`` (native formats) under ``members/NN_label/``."""
        for ranker, rel in zip(self.rankers_, self._member_dirs(), strict=True):
            ranker.save(path / rel)
        return {}

    def _manifest_config(self) -> dict[str, Any]:
        config = {k: None if v is None else plain(v) for k, v in self.get_params().items()}
        del config["seed"], config["num_threads"]
        config.update(params=self.params_, n_jobs=int(self.n_jobs))
        members = [
            {
                "label": s.label,
                "model": s.config["name"],
                "seed": s.seed,
                "query_fraction": s.query_fraction,
                "dir": d,
            }
            for s, d in zip(self.member_specs, self._member_dirs(), strict=True)
        ]
        model_configs = {s.model: s.model_config for s in self.member_specs}
        return {"config": config, "members": members, "model_configs": model_configs}

    @classmethod
    def _from_manifest(cls, manifest: dict[str, Any], path: Path) -> Ensemble:
        config = manifest["config"]
        keys = [k for k in cls.config_keys() if k != "name" and config.get(k) is not None]
        with saved_model_configs(manifest.get("model_configs") or {}):  # older folders: compose
            ens = cls(
                **{k: config[k] for k in keys}, seed=manifest["seed"], num_threads=manifest["num_threads"]
            )
        labels = [m["label"] for m in manifest["members"]]
        if labels != [s.label for s in ens.member_specs]:
            raise ConfigError(
                f"{path / 'manifest.json'}: members {labels} do not match the saved configuration"
            )
        return ens

    def _load_native(self, path: Path, manifest: dict[str, Any]) -> None:
        self.rankers_ = [load_ranker(path / m["dir"]) for m in manifest["members"]]
        self._load_state(path, manifest.get("state") or {})

    def _load_state(self, path: Path, state: dict[str, Any]) -> None:
        """Restore learned combination state (override)."""


class MeanEnsemble(Ensemble):
    """Weighted mean of per-query normalised member scores (CombSUM / Σw)."""

    name = "ensemble_mean"

    @property
    def scores_per_query(self) -> bool:  # type: ignore[override]
        """A mean of raw scores (``normalization: none``) scores rows independently."""
        return self.params_["normalization"] != "none"

    def _combine(self, S: np.ndarray, offsets: np.ndarray, data: Any) -> np.ndarray:
        p = self.params_
        return fuse(S, offsets, "mean", weights=p["weights"], normalization=p["normalization"])


class BaggingEnsemble(MeanEnsemble):
    """Seed bagging: the plain average of copies trained with different seeds on sampled queries."""

    name = "ensemble_bagging"


class RRFEnsemble(Ensemble):
    """Reciprocal rank fusion of the members' rankings (Cormack et al. 2009)."""

    name = "ensemble_rrf"

    def _combine(self, S: np.ndarray, offsets: np.ndarray, data: Any) -> np.ndarray:
        return fuse(S, offsets, "rrf", weights=self.params_["weights"], k=self.params_["k"])


class BordaEnsemble(Ensemble):
    """Borda count over the members' rankings (Aslam & Montague 2001)."""

    name = "ensemble_borda"

    def _combine(self, S: np.ndarray, offsets: np.ndarray, data: Any) -> np.ndarray:
        return fuse(S, offsets, "borda", weights=self.params_["weights"])


BLEND_SEARCH = ("n_restarts", "max_steps", "max_passes", "tolerance")


class BlendEnsemble(Ensemble):
    """Linear blend of normalised member scores, weights fit on validation by coordinate ascent."""

    name = "ensemble_blend"
    needs_valid = True

    def _fit_combination(self, valid: RankingData) -> None:
        p = self.params_
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

    def _extra_state(self) -> dict[str, Any]:
        return {"weights": self.weights_.tolist(), "valid_scores": self.valid_scores_}

    def learned_choices(self) -> tuple[dict[str, Any], dict[str, float]]:
        """Params ``blend.weight.<member>``; metrics ``blend.valid_score.<member or blend>``."""
        self._check_fitted()
        labels = [spec.label for spec in self.member_specs]
        weights = {f"blend.weight.{label}": float(w) for label, w in zip(labels, self.weights_, strict=True)}
        scores = {f"blend.valid_score.{k}": float(v) for k, v in self.valid_scores_.items()}
        return weights, scores

    def _load_state(self, path: Path, state: dict[str, Any]) -> None:
        self.weights_ = np.asarray(state["weights"], dtype=np.float64)
        self.valid_scores_ = state["valid_scores"]


VALID_OOF = "valid_oof.npy"


class StackEnsemble(Ensemble):
    """Stacking: a second-level ranker over member scores, cross-fit on the validation queries."""

    name = "ensemble_stack"
    needs_valid = True

    def __init__(self, members: Any, params: Any = None, *, stacker: Any = None, **kwargs: Any) -> None:
        self.stacker = stacker
        super().__init__(members, params, **kwargs)

    def _check_block(self, block: dict[str, Any]) -> None:
        where = join(self._where, "stacker")
        stacker = block["stacker"]
        if isinstance(stacker, dict) and "model" not in stacker:  # as Hydra merges it over the default
            stacker = {**defaults(self.config_schema)["stacker"], **stacker}  # type: ignore[arg-type]
        self.stacker_config_, _ = resolve_member(stacker, where)
        build_ranker(self.stacker_config_, seed=0, num_threads=1, where=where)  # validate it now

    def _features(self, S: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        return stack_features(S, offsets, tuple(self.params_["normalizations"]))

    def _fit_combination(self, valid: RankingData) -> None:
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

    def _stacker_dirs(self) -> list[str]:
        return [f"stackers/fold_{f}" for f in range(len(self.stackers_))]

    def _save_native(self, path: Path) -> dict[str, str]:
        files = super()._save_native(path)
        for model, rel in zip(self.stackers_, self._stacker_dirs(), strict=True):
            model.save(path / rel)
        np.save(path / VALID_OOF, self.valid_oof_, allow_pickle=False)
        return files

    def _extra_state(self) -> dict[str, Any]:
        return {
            "stackers": self._stacker_dirs(),
            "valid_fingerprint": self.valid_fingerprint_,
            "valid_oof": VALID_OOF,
        }

    def _load_state(self, path: Path, state: dict[str, Any]) -> None:
        self.stackers_ = [load_ranker(path / d) for d in state["stackers"]]
        self.valid_fingerprint_ = state["valid_fingerprint"]
        self.valid_oof_ = np.load(path / state["valid_oof"], allow_pickle=False)


#: registry name → class; ``ltr/models/__init__.py`` registers each (one ``conf/model/NAME.yaml`` each)
ENSEMBLE_MODELS: dict[str, type[Ensemble]] = {
    cls.name: cls
    for cls in (MeanEnsemble, BaggingEnsemble, RRFEnsemble, BordaEnsemble, BlendEnsemble, StackEnsemble)
}


def member_report(ranker: Any) -> dict[str, float]:
    """A fitted member's best validation value of its early-stopping metric, ``{"valid/<metric>": v}``
    (the value at ``best_iteration_``, else the last round's; ``{}`` without a validation curve).

    >>> from types import SimpleNamespace
    >>> member_report(SimpleNamespace(early_stopping_={"metric": "ndcg@10"}, best_iteration_=1,
    ...                               evals_result_={"valid": {"ndcg@10": [0.2, 0.5, 0.4]}}))
    {'valid/ndcg@10': 0.5}
    """
    metric = (getattr(ranker, "early_stopping_", None) or {}).get("metric")
    curve = (getattr(ranker, "evals_result_", None) or {}).get("valid", {}).get(metric)
    if not curve:
        return {}
    best = getattr(ranker, "best_iteration_", None)
    return {f"valid/{metric}": float(curve[best if best is not None else -1])}
