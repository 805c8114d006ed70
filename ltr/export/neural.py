"""A neural ranker (``ltr.models.neural``) as a per-document network over raw features: ONNX only.

A fitted neural ranker with the ``mlp`` scorer scores each document alone. For a row ``x`` of the
file's full width (what a serving engine feeds), :class:`NeuralScorer` computes, in this order
(the order of training and of ``predict_raw``):

1. ``data.features``: ``x ← x[columns]`` (the kept 0-based columns, ``feature_selection_``);
2. ``data.normalize`` (``normalize_``): ``zscore`` ``x ← float32((x − m)/s)`` (a feature constant in
   training → 0, NaN stays NaN), ``log1p`` ``x ← sign(x)·log1p(|x|)``; the per-query methods are
   refused (:func:`~ltr.export.normalize.per_query_refusal`);
3. the network's ``feature_transform`` (``transform_``): ``t = sign(x)·log1p(|x|)`` for
   ``log1p_zscore`` (else ``t = x``), ``z = (t − mean)/scale`` in float32;
4. the MLP (``network_``): ``h_0 = z``, ``h_k = relu(h_{k−1} W_k + b_k)``, ``s = h_K w + b``.

Refused, with the reason and what works instead (:func:`neural_exportable`):

* the ``attention`` scorer (``neural_attention``) by every format: a document's score depends on the
  other documents of its list (self-attention), which no per-document file reproduces;
* every format but ONNX: the search engines' LTR formats and the engines' own files hold tree
  ensembles and linear models, not a network.

>>> import numpy as np
>>> net = NeuralScorer(n_features=2, columns=None, normalize=None, log1p=False,
...     mean=np.zeros(2, np.float32), scale=np.ones(2, np.float32),
...     layers=((np.array([[1.0], [-1.0]], np.float32), np.zeros(1, np.float32)),),
...     out=(np.array([[2.0]], np.float32), np.array([0.5], np.float32)), model="neural_softmax")
>>> net.predict(np.array([[3.0, 1.0], [1.0, 3.0]], np.float32)).tolist()   # 2·relu(x1 − x2) + 0.5
[4.5, 0.5]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr.core.errors import ConfigError
from ltr.data.normalize import Normalizer, signed_log1p
from ltr.export.normalize import per_query_refusal
from ltr.export.selection import selection_of
from ltr.models.normalized import fitted_normalizer
from ltr.models.params import NEURAL_MODELS

#: the neural models whose default scorer is the per-document MLP (exportable to ONNX)
MLP_MODELS = tuple(name for name in NEURAL_MODELS if name != "neural_attention")
#: what each refusing format holds, for the one-line refusal of a neural model
FORMAT_HOLDS = {
    "lightgbm": "a LightGBM booster's own file (its trees)",
    "xgboost": "an XGBoost booster's own JSON (its trees)",
    "opensearch": "the OpenSearch LTR plugin's models (tree ensembles and linear models)",
    "elasticsearch": "the Elasticsearch LTR plugin's models (tree ensembles and linear models)",
    "solr": "Solr LTR's models (tree ensembles and linear models)",
    "c": "C code of tree ensembles and linear models",
    "vespa": "Vespa rank expressions of tree ensembles and linear models (Vespa serves an ONNX file "
    "itself: a rank profile's onnx-model)",
}


@dataclass(frozen=True)
class NeuralScorer:
    """score(x) of a neural ranker's MLP over raw full-width rows (module docstring, steps 1–4)."""

    n_features: int  # the input width: the file's (data.features), as the serving engine feeds it
    columns: np.ndarray | None  # kept 0-based columns of the input (data.features); None: all
    normalize: Normalizer | None  # data.normalize (zscore or log1p), applied before the network
    log1p: bool  # the network's feature_transform starts with signed log1p
    mean: np.ndarray  # float32, one per kept column
    scale: np.ndarray  # float32, > 0
    layers: tuple[tuple[np.ndarray, np.ndarray], ...]  # (W [in, out], b [out]) of each ReLU layer
    out: tuple[np.ndarray, np.ndarray]  # (w [H, 1], b [1])
    model: str  # the ranker's name

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The scores of float32 rows ``X`` by numpy (float32 layers), the formula of the module docstring."""
        h = self._hidden(X)
        return np.asarray((h @ self.out[0])[:, 0] + self.out[1][0], dtype=np.float64)

    def term_magnitude(self, X: np.ndarray) -> np.ndarray:
        """``Σ_j |h_j·w_j| + |b|`` per row: the size of the output layer's terms. Two float32 implementations
        that add them in different orders differ by rounding relative to THIS, not to the score, which
        may be a small difference of huge terms (a feature at ±1e30 without log1p)."""
        h = self._hidden(X).astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            return np.abs(h) @ np.abs(self.out[0][:, 0].astype(np.float64)) + abs(float(self.out[1][0]))

    def _hidden(self, X: np.ndarray) -> np.ndarray:
        """The last hidden layer's activations of float32 rows ``X``."""
        x = np.asarray(X, dtype=np.float32)
        if self.columns is not None:
            x = x[:, self.columns]
        if self.normalize is not None:
            x = self.normalize.values(x, np.arange(x.shape[1]))
        if self.log1p:
            x = signed_log1p(x).astype(np.float32)
        with np.errstate(invalid="ignore", over="ignore"):
            h = (x - self.mean) / self.scale
            for w, b in self.layers:
                h = np.maximum(h @ w + b, np.float32(0))  # NaN stays NaN, as in JAX and onnxruntime
            return h


def is_neural(ranker: Any) -> bool:
    """Whether ``ranker`` is one of ltr's neural rankers (``ltr.models.neural``)."""
    return getattr(ranker, "name", None) in NEURAL_MODELS and hasattr(ranker, "network_")


def attention_refusal(ranker: Any, where: str) -> str:
    """The refusal of an ``attention``-scorer model (module docstring), the same for every format."""
    return (
        f"{where}: a {ranker.name} model (scorer: attention) scores each document with self-attention over the "
        "other documents of its list, so a document's score depends on the whole list; an exported file scores "
        "one document at a time and cannot reproduce that. Export a model with scorer: mlp "
        f"({', '.join(MLP_MODELS)}) with --format onnx, or serve this one through ltr (its logged MLflow model "
        "with a qid column)"
    )


def format_refusal(ranker: Any, fmt: str) -> str:
    """The refusal of an ``mlp``-scorer model for a format other than ONNX."""
    return (
        f"--format {fmt}: a {ranker.name} model is a neural network (ReLU layers over transformed features); "
        f"{FORMAT_HOLDS.get(fmt, f'the {fmt} format')} cannot express it. Use --format onnx, which writes "
        "the network itself (docs/export.md, 'Neural rankers')"
    )


def from_neural(ranker: Any, where: str = "model") -> NeuralScorer:
    """The :class:`NeuralScorer` of a fitted neural ranker, or a ConfigError (attention, a per-query
    ``data.normalize``) naming the reason; reads ``network_``, ``transform_``, ``normalize_`` and
    ``feature_selection_`` as they are."""
    if ranker.params_.get("scorer") != "mlp":
        raise ConfigError(attention_refusal(ranker, where))
    norm = fitted_normalizer(ranker)
    if norm is not None and norm.per_query:
        raise ConfigError(per_query_refusal(norm.method, where))
    params = {name: np.asarray(value, dtype=np.float32) for name, value in ranker.network_.items()}
    n_layers = sum(1 for name in params if name.startswith("dense_") and name.endswith(".w"))
    layers = tuple((params[f"dense_{i}.w"], params[f"dense_{i}.b"]) for i in range(n_layers))
    transform = ranker.transform_
    selection = selection_of(ranker)
    return NeuralScorer(
        n_features=int(ranker.input_width_),
        columns=None if selection is None else selection.columns,
        normalize=norm,
        log1p=bool(transform.log1p),
        mean=np.asarray(transform.mean, dtype=np.float32),
        scale=np.asarray(transform.scale, dtype=np.float32),
        layers=layers,
        out=(params["out.w"], params["out.b"]),
        model=str(ranker.name),
    )


def neural_exportable(ranker: Any, fmt: str) -> NeuralScorer:
    """What ``--format fmt`` writes of a neural ranker: the network for ONNX; a ConfigError otherwise,
    raised before any file is written (module docstring)."""
    where = f"--format {fmt}"
    if ranker.params_.get("scorer") != "mlp":
        raise ConfigError(attention_refusal(ranker, where))
    if fmt != "onnx":
        raise ConfigError(format_refusal(ranker, fmt))
    return from_neural(ranker, where)
