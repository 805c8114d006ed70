"""Multiple-comparison adjustments of a family of p-values.

With ``m`` p-values sorted ascending ``p_(1) ≤ … ≤ p_(m)``:

* **Holm** (1979, step-down, controls the family-wise error rate):
  ``p̃_(i) = min(1, max_{j ≤ i} (m − j + 1) · p_(j))``.
* **Benjamini–Hochberg** (1995, step-up, controls the false discovery rate):
  ``p̃_(i) = min(1, min_{j ≥ i} m · p_(j) / j)`` (= :func:`scipy.stats.false_discovery_control`).
* **Bonferroni**: ``p̃_i = min(1, m · p_i)``; ``none`` returns the p-values unchanged.

NaN entries are not part of the family (they do not count in ``m``) and stay NaN.

>>> holm([0.01, 0.04, 0.03, 0.005]).tolist()
[0.03, 0.06, 0.06, 0.02]
>>> benjamini_hochberg([0.01, 0.04, 0.03, 0.005]).tolist()
[0.02, 0.04, 0.04, 0.02]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, get_args

import numpy as np
from numpy.typing import ArrayLike

from ltr.core.arrays import float_array
from ltr.core.errors import DataError
from ltr.stats._validate import check_choice

Correction = Literal["holm", "bh", "bonferroni", "none"]
CORRECTIONS: tuple[str, ...] = get_args(Correction)


def _pvalues(p: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    arr = float_array(p, "p-values", expected="a 1-D array")
    finite = ~np.isnan(arr)
    if ((arr[finite] < 0) | (arr[finite] > 1)).any():
        bad = int(np.flatnonzero(finite & ((arr < 0) | (arr > 1)))[0])
        raise DataError(f"p-values: entry {bad} is {arr[bad]}, outside [0, 1]")
    return arr, finite


def _stepwise(pvalues: ArrayLike, adjust_sorted: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Apply ``adjust_sorted`` to the ascending finite p-values and put the results back in place."""
    arr, finite = _pvalues(pvalues)
    out = arr.copy()
    p = arr[finite]
    order = np.argsort(p, kind="stable")
    result = np.empty(p.shape[0])
    result[order] = np.minimum(1.0, adjust_sorted(p[order]))
    out[finite] = result
    return out


def _holm_sorted(p: np.ndarray) -> np.ndarray:
    return np.maximum.accumulate((p.shape[0] - np.arange(p.shape[0])) * p)


def _bh_sorted(p: np.ndarray) -> np.ndarray:
    m = p.shape[0]
    return np.minimum.accumulate((p * m / np.arange(1, m + 1))[::-1])[::-1]


def holm(pvalues: ArrayLike) -> np.ndarray:
    """Holm step-down adjusted p-values (see the module docstring).

    >>> holm([0.01, 0.04, 0.03]).tolist()   # sorted .01, .03, .04 -> 3·.01, 2·.03, max(.04, .06)
    [0.03, 0.06, 0.06]
    """
    return _stepwise(pvalues, _holm_sorted)


def benjamini_hochberg(pvalues: ArrayLike) -> np.ndarray:
    """Benjamini–Hochberg step-up adjusted p-values (see the module docstring).

    >>> benjamini_hochberg([0.01, 0.04, 0.03]).tolist()   # sorted -> 3·.01/1, min(3·.03/2, .04), 3·.04/3
    [0.03, 0.04, 0.04]
    """
    return _stepwise(pvalues, _bh_sorted)


def adjust_pvalues(pvalues: ArrayLike, method: Correction = "holm") -> np.ndarray:
    """Adjust a family of p-values with ``method`` in ``holm`` (default), ``bh``, ``bonferroni``, ``none``.

    >>> adjust_pvalues([0.01, 0.02], "bonferroni").tolist()
    [0.02, 0.04]
    """
    check_choice("correction", method, CORRECTIONS)
    if method == "holm":
        return holm(pvalues)
    if method == "bh":
        return benjamini_hochberg(pvalues)
    arr, finite = _pvalues(pvalues)
    if method == "none":
        return arr.copy()
    return np.where(finite, np.minimum(1.0, arr * int(finite.sum())), np.nan)
