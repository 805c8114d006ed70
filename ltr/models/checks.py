"""Input checks every engine runs BEFORE training, with messages naming the query, row and label.

Engines fail late and cryptically on these (LightGBM: ``Label 31 is not less than the number of
label mappings (31)`` after binning the whole dataset; XGBoost: ``qid must be sorted``). ``ltr``
checks first and says which query of which split is at fault, and what to change.

>>> import numpy as np
>>> from ltr.data import RankingData
>>> d = RankingData(X=np.zeros((3, 1), np.float32), y=[0, 1, 40], qid=[5, 5, 8], name="toy")
>>> check_label_limit(d, "train", 31, engine="LightGBM", hint="give params.label_gain")
Traceback (most recent call last):
...
ltr.core.errors.DataError: toy (train): query qid=8 (rows 3-3) has label 40, but LightGBM accepts labels 0-30 here; give params.label_gain
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ltr.core.errors import DataError
from ltr.core.ranking import query_of_row
from ltr.data import RankingData

LIGHTGBM_MAX_QUERY_ROWS = 10_000


def describe_row(data: RankingData, row: int) -> str:
    """``query qid=Q (rows a-b)`` for the query owning ``row`` (1-based inclusive row range)."""
    q = query_of_row(data.offsets, row)
    start, stop = int(data.offsets[q]), int(data.offsets[q + 1])
    return f"query qid={data.qid[row]} (rows {start + 1}-{stop})"


def check_labels_finite(data: RankingData, role: str) -> None:
    """Every label is a finite number."""
    bad = np.flatnonzero(~np.isfinite(data.y))
    if bad.size:
        row = int(bad[0])
        raise DataError(
            f"{data.name} ({role}): {describe_row(data, row)} has label {data.y[row]} at row {row + 1}"
        )


def check_integer_labels(data: RankingData, role: str, *, engine: str) -> None:
    """Labels are whole numbers >= 0 (graded relevance), as ranking objectives and classifiers need."""
    check_labels_finite(data, role)
    y = data.y
    bad = np.flatnonzero((y < 0) | (y != np.floor(y)))
    if bad.size:
        row = int(bad[0])
        raise DataError(
            f"{data.name} ({role}): {describe_row(data, row)} has label {y[row]:g} at row {row + 1}; "
            f"{engine} needs whole-number relevance grades >= 0 for this model"
        )


def check_label_limit(data: RankingData, role: str, n_labels: int, *, engine: str, hint: str) -> None:
    """Labels are < ``n_labels`` (the size of the engine's gain table / class count)."""
    if data.n_docs == 0:
        return
    row = int(np.argmax(data.y))
    if data.y[row] >= n_labels:
        raise DataError(
            f"{data.name} ({role}): {describe_row(data, row)} has label {data.y[row]:g}, but {engine} accepts "
            f"labels 0-{n_labels - 1} here; {hint}"
        )


def check_query_size(data: RankingData, role: str, limit: int, *, engine: str) -> None:
    """No query has more than ``limit`` rows (LightGBM's ranking objectives and NDCG: 10,000)."""
    sizes = data.group_sizes
    if sizes.size and sizes.max() > limit:
        q = int(np.argmax(sizes))
        raise DataError(
            f"{data.name} ({role}): query qid={data.query_ids[q]} (rows {data.offsets[q] + 1}-{data.offsets[q + 1]}) "
            f"has {sizes[q]:,} documents, but {engine} ranking accepts at most {limit:,} per query; "
            "split or truncate that query (e.g. keep the top candidates of the first-stage ranker)"
        )


def check_features(reference: RankingData | int, data: RankingData, role: str) -> None:
    """``data`` has the same number of feature columns as the training data (or a fitted model)."""
    expected = reference if isinstance(reference, int) else reference.n_features
    if data.n_features != expected:
        raise DataError(
            f"{data.name} ({role}): has {data.n_features} feature columns but the model was trained on {expected}; "
            "load both splits with the same n_features"
        )


def check_nonempty(data: RankingData, role: str) -> None:
    """At least one document."""
    if data.n_docs == 0:
        raise DataError(f"{data.name} ({role}): no documents")


def row_weights(data: RankingData) -> np.ndarray | None:
    """Per-row weights for engines that take them per row: each query's weight repeated on its rows.

    ``RankingData.weight`` is per query (ranking losses weight queries); LightGBM and scikit-learn
    take one weight per row (LightGBM turns them back into a per-query mean), XGBoost ranking one per
    group.

    >>> d = RankingData(X=np.zeros((3, 1), np.float32), y=[0, 1, 0], qid=[1, 1, 2], weight=[2.0, 0.5])
    >>> row_weights(d).tolist()
    [2.0, 2.0, 0.5]
    """
    if data.weight is None:
        return None
    if not np.all(np.isfinite(data.weight)) or np.any(data.weight < 0):
        q = int(np.flatnonzero(~np.isfinite(data.weight) | (data.weight < 0))[0])
        raise DataError(
            f"{data.name}: query qid={data.query_ids[q]} has weight {data.weight[q]}; weights must be >= 0"
        )
    return np.repeat(data.weight, data.group_sizes)


def check_finite_features(data: RankingData, role: str, *, model: str) -> None:
    """scikit-learn's linear models reject NaN/inf: name the first offending row, query and feature.

    Rows and features are numbered from 1 (the feature id of an SVMlight file, ``docs/data.md``).
    """
    values = data.X.data if sp.issparse(data.X) else data.X
    finite = np.isfinite(values)
    if finite.all():
        return
    if sp.issparse(data.X):
        X = sp.csr_matrix(data.X)
        flat = int(np.flatnonzero(~finite)[0])
        row = int(np.searchsorted(X.indptr, flat, side="right") - 1)
        col = int(X.indices[flat])
    else:
        row, col = (int(v) for v in np.argwhere(~finite)[0])
    raise DataError(
        f"{data.name} ({role}): {describe_row(data, row)} has a non-finite value in feature {col + 1} "
        f"(row {row + 1}); {model} needs finite features — impute or clip them when loading"
    )
