"""Neural listwise rankers on JAX: ``neural_softmax``, ``neural_listmle``, ``neural_approxndcg``,
``neural_pairwise``, ``neural_lambdaloss`` (an MLP scorer, each named for its rax loss) and
``neural_attention`` (the context-aware self-attention scorer, softmax loss).

Training (``fit``), per epoch: the training queries, shuffled with the run's seed, in batches of
``batch_size`` padded lists (:mod:`ltr.models.neural.lists`; lists longer than ``max_list_size``
sampled down), one AdamW step (optax) per batch on the rax loss (:mod:`ltr.models.neural.losses`)
of the network's scores (:mod:`ltr.models.neural.network`); then the early-stopping metric on the
validation split with ltr's own metric module (``early_stopping``: metric, preset, conventions;
``patience`` epochs). The parameters of the best epoch are kept. The feature transform
(``feature_transform``) is fitted on the training rows first. Everything random (initialisation,
shuffling, list sampling, dropout) comes from ``seed``: the same seed on the same machine and
thread count gives the same parameters.

``engine_params`` are optax.adamw's other numbers (``b1``, ``b2``, ``eps``, ``eps_root``).
``num_threads=1`` asks XLA for one thread (``--xla_cpu_multi_thread_eigen=false``) when JAX has
not started yet in the process; otherwise JAX uses its own pool.

Saved without pickle: ``model.npz`` holds every parameter (``param.<name>``) and the fitted
transform (``transform.mean``, ``transform.scale``), read with ``allow_pickle=False`` and checked
name by name and shape by shape against the network the manifest describes.

Needs the ``neural`` extra (``jax``, ``optax``, ``rax``): building the model without it is one
ConfigError naming ``pip install 'ltr-workbench[neural]'``.
"""

from __future__ import annotations

import functools
import os
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ltr.core.config_check import plain
from ltr.core.errors import ConfigError, DataError
from ltr.core.extras import require_extra
from ltr.data import RankingData
from ltr.data.normalize import Moments, column_moments, combine_moments, signed_log1p
from ltr.models.base import BaseRanker, OnIteration, Resolved
from ltr.models.checks import (
    check_finite_features,
    check_label_limit,
    check_labels_finite,
    describe_row,
    row_weights,
)
from ltr.models.monitor import watch

MODEL_FILE = "model.npz"
#: documents per scoring block (padded): bounds the memory of scoring a long file
SCORING_CELLS = 1 << 15
#: rows of the training file read at a time to fit the feature transform
MOMENT_ROWS = 1 << 13  # float64 temporaries of ~9 MB at 136 features
#: the losses whose gains are 2^y − 1 (rax's NDCG gain), and the largest label they take
GAIN_LOSSES = ("approxndcg", "lambdaloss")
MAX_GAIN_LABEL = 31
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def start_jax(num_threads: int, *, needed_for: str) -> str:
    """Make JAX ready for CPU work, after checking the neural extra (one ConfigError naming the install).

    Before JAX's backend starts in the process: no accelerator probing (``JAX_PLATFORMS=cpu`` unless
    set) and, with ``num_threads == 1``, XLA on one thread. Called right before JAX's first use (a fit,
    a score, a load), never by a config check, so the first model to *use* JAX decides its threads.
    Returns the ``XLA_FLAGS`` in effect (recorded with the run).
    """
    require_extra("neural", needed_for=needed_for)
    if not _backend_started():
        # no TPU/GPU probing (and its log lines) on CPU machines
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        if num_threads == 1 and XLA_ONE_THREAD not in os.environ.get("XLA_FLAGS", ""):
            os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {XLA_ONE_THREAD}".strip()
    return os.environ.get("XLA_FLAGS", "")


def _backend_started() -> bool:
    """Whether JAX's backend (which reads ``XLA_FLAGS`` once) has started in this process."""
    if "jax" not in sys.modules:
        return False
    try:
        from jax._src import xla_bridge  # deferred: only when JAX is already imported
    except ImportError:
        return True
    return bool(getattr(xla_bridge, "_backends", True))


#: optax.adamw's other numeric arguments, the ``engine_params`` a neural ranker takes: (low, high, rule)
ADAMW_RANGES = {
    "b1": (0.0, 1.0, "0 <= b1 < 1"),
    "b2": (0.0, 1.0, "0 <= b2 < 1"),
    "eps": (0.0, float("inf"), "eps > 0"),
    "eps_root": (0.0, float("inf"), "eps_root >= 0"),
}
ADAMW_NUMBERS = tuple(ADAMW_RANGES)


class NeuralRanker(BaseRanker):
    """A JAX network trained on query lists with a rax ranking loss (see the module docstring)."""

    engine = "jax"
    input_dtype = "float32"  # the network computes in float32 (no engine loader to follow)

    @property
    def scores_per_query(self) -> bool:  # type: ignore[override]
        """The attention scorer's scores depend on the other documents of the list."""
        given = plain(self.params) or {}
        return given.get("scorer", self.default_params["scorer"]) == "attention"

    # --- configuration ---------------------------------------------------------------------------
    def engine_parameter_names(self) -> Mapping[str, str]:
        return {name: name for name in ADAMW_NUMBERS}

    def engine_parameter_kind(self) -> str:
        return "an argument of optax.adamw"

    def _start_jax(self) -> str:
        return start_jax(int(self.num_threads), needed_for=f"model {self.name}")

    def _check_params(self, params: dict[str, Any]) -> None:
        require_extra("neural", needed_for=f"model {self.name}")  # found, not imported: JAX does not start
        where = getattr(self, "_where", "model")
        for key, value in (plain(self.engine_params) or {}).items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
                raise ConfigError(f"{where}.engine_params.{key}: expected a number, got {value!r}")
            low, high, rule = ADAMW_RANGES[key]
            if not low <= value < high or (key == "eps" and value <= 0):
                raise ConfigError(f"{where}.engine_params.{key}: AdamW needs {rule}, got {value!r}")
        width = params["hidden_units"][-1]
        if params["scorer"] == "attention" and width % params["attention_heads"]:
            raise ConfigError(
                f"{where}.params.attention_heads: {params['attention_heads']} heads must divide the attention "
                f"width, the last of hidden_units ({width})"
            )

    def spec(self, n_features: int) -> Any:
        """The :class:`~ltr.models.neural.network.NetworkSpec` of the resolved params."""
        from ltr.models.neural.network import NetworkSpec  # deferred: imports JAX

        p = self.params_
        return NetworkSpec(
            n_features=int(n_features),
            hidden_units=tuple(int(u) for u in p["hidden_units"]),
            scorer=p["scorer"],
            attention_heads=int(p["attention_heads"]),
            attention_layers=int(p["attention_layers"]),
            dropout=float(p["dropout"]),
            log1p=p["feature_transform"] == "log1p_zscore",
        )

    # --- training --------------------------------------------------------------------------------
    def _check_data(self, data: RankingData, role: str, max_label: int) -> None:
        check_labels_finite(data, role)
        negative = np.flatnonzero(data.y < 0)
        if negative.size:
            row = int(negative[0])
            raise DataError(
                f"{data.name} ({role}): {describe_row(data, row)} has label {data.y[row]:g} at row {row + 1}; "
                f"{self.name} needs relevance grades >= 0"
            )
        check_finite_features(data, role, model=self.name)
        if data.weight is not None:
            row_weights(data)  # a NaN or negative query weight: the query named
            if role == "train" and not (data.weight > 0).any():
                raise DataError(
                    f"{data.name} (train): every query has weight 0; {self.name} has nothing to learn from"
                )
        loss = self.params_["loss"]  # resolved by fit before any check
        if loss in GAIN_LOSSES:  # G(y) = 2^y − 1 in float32: exact to 2^24, finite to 2^127
            check_label_limit(
                data, role, MAX_GAIN_LABEL + 1, engine=f"{self.name} (loss {loss}, gain 2^y − 1)",
                hint="rescale the grades or use loss softmax, listmle or pairwise",
            )  # fmt: skip
        if role == "train" and data.n_docs:
            starts = data.offsets[:-1]
            spread = np.maximum.reduceat(data.y, starts) - np.minimum.reduceat(data.y, starts)
            if not spread.any():
                raise DataError(
                    f"{data.name} (train): no query has two documents with different labels, so no list "
                    f"states a preference and {self.name} has nothing to learn from"
                )

    def _fit(
        self, train: RankingData, valid: RankingData | None, cfg: Resolved, on_iteration: OnIteration | None
    ) -> None:
        w = watch(train, valid, cfg.early_stopping, on_iteration, self._check_data)
        xla_flags = self._start_jax()
        import jax  # deferred: the neural extra loads only when a neural model trains

        from ltr.models.neural import network  # deferred: imports JAX
        from ltr.models.neural.lists import training_batches  # deferred: with the training loop

        p = cfg.params
        spec = self.spec(train.n_features)
        self.transform_ = network.Standardise.fit(p["feature_transform"], self._moments(train, spec.log1p))
        # the whole seed, not its low 32 bits (PRNGKey keeps those): seeds 5 and 2**32 + 5 differ
        key_init, key = jax.random.split(
            jax.random.PRNGKey(int(np.random.SeedSequence(int(self.seed)).generate_state(1)[0]))
        )
        params = network.init_params(spec, key_init)
        step = _training_step(spec, p["loss"], float(p["temperature"]), tuple(sorted(cfg.engine_params)))
        state = adamw(p["learning_rate"], p["weight_decay"], cfg.engine_params).init(params)
        transform = self.transform_.arrays
        rng = np.random.default_rng(int(self.seed))
        self.engine_params_ = {
            "optimizer": "optax.adamw",
            "learning_rate": p["learning_rate"],
            "weight_decay": p["weight_decay"],
            **cfg.engine_params,
            "jax_version": jax.__version__,
            "xla_flags": xla_flags,
        }
        best = params
        monitor = w.monitor
        for epoch in range(p["n_epochs"]):
            total, batches = 0.0, 0
            for batch in training_batches(train, batch_size=p["batch_size"], cap=p["max_list_size"], rng=rng):
                key, sub = jax.random.split(key)
                params, state, value = step(
                    params, state, transform, batch.x, batch.labels, batch.mask, batch.weights, sub
                )
                total, batches = total + value, batches + 1
            mean_loss = float(total) / max(batches, 1)
            if not np.isfinite(mean_loss):
                raise DataError(
                    f"{self.name}: training diverged in epoch {epoch + 1} (the {p['loss']} loss is {mean_loss}); "
                    f"lower {getattr(self, '_where', 'model')}.params.learning_rate (now {p['learning_rate']})"
                )
            self.network_ = params
            values = {("train", f"{p['loss']}_loss"): mean_loss}
            for role, data in w.splits.items():
                values[(role, w.metric.name)] = w.metric.mean(data, self._score(data, data.X))  # type: ignore[union-attr]
            best_before = monitor.best_iteration
            stop = monitor.update(epoch, values)
            if monitor.best_iteration != best_before:
                best = params
            if stop:
                break
        self.epochs_ = epoch + 1
        self.evals_result_ = monitor.history
        self.best_iteration_ = monitor.best_iteration if monitor.patience is not None else None
        self.network_ = best if self.best_iteration_ is not None else params

    def _moments(self, train: RankingData, log1p: bool) -> Moments:
        """The moments of ``t(x)`` over the training rows, a block of :data:`MOMENT_ROWS` at a time."""
        parts = []
        for start in range(0, max(train.n_docs, 1), MOMENT_ROWS):
            block = train.X[start : start + MOMENT_ROWS]
            block = np.asarray(block.toarray() if sp.issparse(block) else block, dtype=np.float64)
            parts.append(column_moments(signed_log1p(block) if log1p else block))
        return combine_moments(parts)

    # --- scoring ---------------------------------------------------------------------------------
    def check_scoring_input(self, data: RankingData, role: str) -> None:
        """A non-finite feature is named before training: the network would turn it into a NaN score
        (for attention, its whole list's), which ``predict`` returns as it is (the ONNX export does too)."""
        check_finite_features(data, role, model=self.name)

    def _score(self, data: RankingData | Any, X: Any) -> np.ndarray:
        offsets = data.offsets if isinstance(data, RankingData) else np.array([0, X.shape[0]])
        return self._scores(X, offsets)

    def _predict(self, X: Any) -> np.ndarray:
        return self._scores(X, np.array([0, X.shape[0]]))

    def _scores(self, X: Any, offsets: np.ndarray) -> np.ndarray:
        self._start_jax()
        from ltr.models.neural.lists import (  # deferred: as JAX
            MIN_LENGTH,
            gather,
            list_rows,
            power_of_two,
            row_blocks,
            scoring_groups,
        )

        spec = self.spec(X.shape[1])
        score = _scoring_function(spec)
        transform = self.transform_.arrays
        out = np.empty(X.shape[0], dtype=np.float64)
        if spec.scorer == "mlp":  # documents alone: slices of rows in power-of-two blocks, no padding copy
            for start, stop in row_blocks(X.shape[0], SCORING_CELLS):
                block = X[start:stop]
                block = np.asarray(block.toarray() if sp.issparse(block) else block, dtype=np.float32)
                length = max(block.shape[0], MIN_LENGTH)  # the last few rows: one block of MIN_LENGTH
                if length > block.shape[0]:
                    block = np.pad(block, ((0, length - block.shape[0]), (0, 0)))
                values = score(self.network_, transform, block, np.ones(length, dtype=bool))
                out[start:stop] = np.asarray(values)[: stop - start]
            return out
        for group in scoring_groups(offsets, max_cells=SCORING_CELLS):
            rows = list_rows(offsets, group, cap=None, rng=None)
            filler = power_of_two(len(group)) - len(group)  # lists per block: a power of two
            rows = np.vstack([rows, np.full((filler, rows.shape[1]), -1, dtype=np.int64)])
            mask = rows >= 0
            values = np.asarray(score(self.network_, transform, gather(X, rows), mask))
            out[rows[mask]] = values[mask]
        return out

    # --- persistence -----------------------------------------------------------------------------
    def _save_native(self, path: Path) -> dict[str, str]:
        arrays = {f"param.{name}": np.asarray(value) for name, value in self.network_.items()}
        arrays["transform.mean"], arrays["transform.scale"] = self.transform_.arrays
        np.savez(path / MODEL_FILE, **arrays)
        return {"model": MODEL_FILE}

    def _load_native(self, path: Path, manifest: dict[str, Any]) -> None:
        self._start_jax()
        from ltr.models.neural.network import Standardise, expected_shapes  # deferred: imports JAX

        file = path / manifest["files"]["model"]
        try:
            with np.load(file, allow_pickle=False) as stored:
                arrays = {name: np.asarray(stored[name]) for name in stored.files}
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
            raise ConfigError(
                f"{file}: cannot read the network's parameters ({exc}); the file is damaged"
            ) from None
        spec = self.spec(self.n_features_in_)
        wanted = {f"param.{name}": shape for name, shape in expected_shapes(spec).items()}
        wanted["transform.mean"] = wanted["transform.scale"] = (self.n_features_in_,)
        for name, shape in wanted.items():
            if name not in arrays or arrays[name].shape != shape or arrays[name].dtype != np.float32:
                found = "missing" if name not in arrays else f"{arrays[name].dtype} {arrays[name].shape}"
                raise ConfigError(
                    f"{file}: {name} is {found}, the network of the manifest needs float32 {shape}; "
                    "the file does not belong to this manifest"
                )
        extra = sorted(set(arrays) - set(wanted))
        if extra:
            raise ConfigError(
                f"{file}: unexpected arrays {', '.join(extra)}; the file does not belong to this manifest"
            )
        self.network_ = {
            name.removeprefix("param."): arrays[name] for name in wanted if name.startswith("param.")
        }
        log1p = self.params_["feature_transform"] == "log1p_zscore"
        self.transform_ = Standardise(log1p, arrays["transform.mean"], arrays["transform.scale"])
        self.epochs_ = int(manifest.get("state", {}).get("epochs", 0))

    def _extra_state(self) -> dict[str, Any]:
        return {"epochs": int(self.epochs_)}

    def _n_rounds(self) -> int | None:
        return int(self.epochs_)


def adamw(learning_rate: float, weight_decay: float, extra: Mapping[str, Any]) -> Any:
    """optax.adamw with its numbers held in the optimiser state (``optax.inject_hyperparams``), so one
    compiled step serves every learning rate and weight decay (sweep trials, folds, tests)."""
    import optax  # deferred: the neural extra loads only when a neural model trains

    numbers = {"learning_rate": float(learning_rate), "weight_decay": float(weight_decay), **extra}
    return optax.inject_hyperparams(optax.adamw)(**numbers)


@functools.cache
def _training_step(spec: Any, loss: str, temperature: float, extra: tuple[str, ...]) -> Any:
    """The compiled AdamW step ``(params, state, transform, x, labels, mask, weights, key) → (params, state,
    loss)``; ``state`` (from :func:`adamw`) carries the optimiser's numbers, ``extra`` names its other arguments.

    Cached per network, loss and argument names: the fits of a process (folds, sweep trials, ensemble
    members, tests) reuse one compilation per padded batch shape.
    """
    import jax  # deferred: the neural extra loads only when a neural model trains
    import optax  # deferred: as jax

    from ltr.models.neural.losses import batch_loss  # deferred: imports rax
    from ltr.models.neural.network import apply  # deferred: imports JAX

    def objective(params: Any, transform: Any, x: Any, labels: Any, mask: Any, weights: Any, key: Any) -> Any:
        scores = apply(params, spec, transform, x, mask, key)
        return batch_loss(loss, scores, labels, mask, weights, temperature=temperature)

    optimiser = adamw(1.0, 0.0, dict.fromkeys(extra, 0.0))  # its update reads the numbers from the state

    def step(
        params: Any, state: Any, transform: Any, x: Any, labels: Any, mask: Any, weights: Any, key: Any
    ) -> Any:
        value, grads = jax.value_and_grad(objective)(params, transform, x, labels, mask, weights, key)
        updates, state = optimiser.update(grads, state, params)
        return optax.apply_updates(params, updates), state, value

    return jax.jit(step)


@functools.cache
def _scoring_function(spec: Any) -> Any:
    """The compiled scorer of ``spec``: ``(params, transform, x, mask) → scores`` (one per ``spec``)."""
    import jax  # deferred: the neural extra loads only when a neural model scores

    from ltr.models.neural.network import apply  # deferred: imports JAX

    def score(params: Any, transform: Any, x: Any, mask: Any) -> Any:
        return apply(params, spec, transform, x, mask)

    return jax.jit(score)


class NeuralSoftmax(NeuralRanker):
    name = "neural_softmax"


class NeuralListMLE(NeuralRanker):
    name = "neural_listmle"


class NeuralApproxNDCG(NeuralRanker):
    name = "neural_approxndcg"


class NeuralPairwise(NeuralRanker):
    name = "neural_pairwise"


class NeuralLambdaLoss(NeuralRanker):
    name = "neural_lambdaloss"


class NeuralAttention(NeuralRanker):
    name = "neural_attention"
