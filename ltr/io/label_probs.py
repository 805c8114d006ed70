"""Label-probability tables: one row per document of a data file, one column per grade.

What ``python -m ltr.labelnext --probs FILE`` reads: a ``.npy`` array, or text with one row per line
(comma- or whitespace-separated), rows in the data file's order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ltr.core.errors import DataError


def read_label_probs(path: str | Path, n_rows: int) -> np.ndarray:
    """A (n_rows, n_grades) array from ``.npy`` or a CSV/whitespace text file; errors name the file."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such label-probability file")
    try:
        if path.suffix == ".npy":
            probs = np.load(path, allow_pickle=False)
        else:
            text = path.read_text(encoding="utf-8")
            probs = np.loadtxt(path, delimiter="," if "," in text else None, ndmin=2)
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not a label-probability table ({exc})") from exc
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 2 or probs.shape[0] != n_rows or probs.shape[1] < 2:
        raise DataError(
            f"{path}: expected {n_rows} rows (one per data row) of >= 2 grade probabilities, got shape {probs.shape}"
        )
    return probs
