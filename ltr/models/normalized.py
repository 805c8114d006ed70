"""Scoring raw rows with a model trained on normalised features (``data.normalize``).

A run with ``data.normalize`` other than ``none`` fits a :class:`~ltr.data.normalize.Normalizer` on
the training split and trains on normalised features; the fitted normaliser is the ranker's
``normalize_`` attribute, written into the saved model's ``manifest.json`` (key ``normalize``: the
method and, for ``zscore``, the training ``mean`` and ``std`` per column; JSON, no pickle) and read back
by :func:`ltr.models.load_ranker`. ``ranker.predict`` always takes *normalised* rows (what it was trained
on); everything that scores rows as they come from a file or a caller — the MLflow pyfunc model,
``ltr.evaluate --model``, ``ltr.explain``, the export parity check — calls :func:`predict_raw`, which
applies the model's own normaliser first:

* ``zscore`` and ``log1p`` act on each value alone: any rows may be scored;
* ``query_minmax`` and ``query_zscore`` normalise over the documents of each query: rows need their
  query ids (a :class:`~ltr.data.RankingData`, or a pyfunc frame with a ``qid`` column); a bare
  matrix is refused (:func:`normalized_input`), since which rows form a query is unknown.

>>> import numpy as np
>>> from ltr.data import RankingData
>>> from ltr.data.normalize import Normalizer
>>> class Doubler:
...     normalize_ = Normalizer.from_manifest({"method": "zscore", "mean": [1.0], "std": [2.0]}, "m")
...     def predict(self, data):
...         return 2 * np.asarray(data.X if isinstance(data, RankingData) else data)[:, 0]
>>> predict_raw(Doubler(), np.array([[5.0], [1.0]], np.float32)).tolist()   # 2 · (x − 1) / 2
[4.0, 0.0]
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ltr.core.errors import DataError
from ltr.data import RankingData
from ltr.data.normalize import Normalizer


def fitted_normalizer(ranker: Any) -> Normalizer | None:
    """The normaliser ``ranker`` was trained behind (None: it takes raw features)."""
    norm = getattr(ranker, "normalize_", None)
    return norm if isinstance(norm, Normalizer) and norm.method != "none" else None


def manifest_entry(ranker: Any) -> dict[str, Any]:
    """``{"normalize": {...}}`` for a saved model's manifest, or ``{}`` when it takes raw features."""
    norm = fitted_normalizer(ranker)
    return {} if norm is None else {"normalize": norm.to_manifest()}


def normalized_input(ranker: Any, data: Any, where: str = "predict") -> Any:
    """``data`` (RankingData or a feature matrix) as ``ranker`` was trained to see it.

    A bare matrix for a per-query method is a :class:`~ltr.core.errors.DataError` naming ``where``.
    """
    norm = fitted_normalizer(ranker)
    if norm is None:
        return data
    kept = _kept_in_place(ranker, data, where)  # data.features: full rows, the kept columns normalised
    if kept is not None:
        return kept
    if isinstance(data, RankingData):
        return norm.transform(data)
    if norm.per_query:
        raise DataError(
            f"{where}: this model was trained with data.normalize={norm.method}, which normalises each "
            "feature over the documents of a query: give the query ids (a 'qid' column for the MLflow "
            "model, ltr.models.pyfunc.as_frame(X, qid=...), or a RankingData)"
        )
    X = np.asarray(data, dtype=np.float32)
    rows = RankingData(X=X, y=np.zeros(X.shape[0]), qid=np.zeros(X.shape[0], np.int64), name=where)
    return norm.transform(rows).X


def _kept_in_place(ranker: Any, data: Any, where: str) -> Any:
    """Full-width rows of a model trained on a ``data.features`` selection, its kept columns normalised
    in place (the others as given: the model cuts them off), so explanations keep the file's feature
    ids; ``None`` when ``data`` is not of the file's full width. Columns first, then the normaliser,
    which was fitted on the kept columns.

    >>> from ltr.data.dataset import FeatureSelection
    >>> class Kept:
    ...     n_features_in_, feature_selection_ = 1, FeatureSelection(ids=(2,), n_features=2)
    ...     normalize_ = Normalizer.from_manifest({"method": "zscore", "mean": [1.0], "std": [2.0]}, "m")
    >>> _kept_in_place(Kept(), np.array([[7.0, 5.0]], np.float32), "x").tolist()
    [[7.0, 2.0]]
    """
    selection = getattr(ranker, "feature_selection_", None)
    X = data.X if isinstance(data, RankingData) else data
    if selection is None or X.shape[1] != selection.n_features or X.shape[1] == int(ranker.n_features_in_):
        return None
    if isinstance(data, RankingData):
        normed = normalized_input(ranker, data.with_features(selection), where)
        full = data.dense().astype(np.float32, copy=True)
        full[:, selection.columns] = normed.dense()
        return dataclasses.replace(data, X=full)
    full = np.array(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float32)
    full[:, selection.columns] = normalized_input(ranker, selection.select(full), where)
    return full


def predict_raw(ranker: Any, data: Any, where: str = "predict") -> np.ndarray:
    """``ranker.predict`` of raw rows: normalised first by the model's own normaliser (module docstring)."""
    return ranker.predict(normalized_input(ranker, data, where))


def normalization_note(ranker: Any) -> str | None:
    """What contributions and importances of ``ranker`` are in terms of, when not the raw features."""
    norm = fitted_normalizer(ranker)
    if norm is None:
        return None
    return (
        f"the model was trained on features normalised with data.normalize={norm.method}: contributions "
        "and split values are in terms of the normalised features"
    )
