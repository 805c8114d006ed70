"""Numeric array arguments, checked once: a float64 array of the expected rank, or the caller's error.

The opening every per-query function shares (metric inputs, statistics, p-value corrections,
Tukey HSD tables): convert to float64, refuse what is not numeric, refuse the wrong number of
dimensions; the message names the argument (``what``) and the error class is the caller's
(:class:`~ltr.core.errors.MetricError` for metrics, :class:`~ltr.core.errors.DataError` for statistics).

>>> float_array([1, 2.5], "labels").tolist()
[1.0, 2.5]
>>> float_array([[0.1, 0.2]], "p-values", expected="a 1-D array")
Traceback (most recent call last):
...
ltr.core.errors.DataError: p-values must be a 1-D array, got shape (1, 2)
>>> from ltr.core.errors import MetricError
>>> float_array(["a"], "labels", error=MetricError)
Traceback (most recent call last):
...
ltr.core.errors.MetricError: labels must be numeric (could not convert string to float: 'a')
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr.core.errors import DataError, LtrError

__all__ = ["float_array"]


def float_array(
    x: Any,
    what: str,
    *,
    ndim: int = 1,
    expected: str | None = None,
    error: type[LtrError] = DataError,
) -> np.ndarray:
    """``x`` as a C-contiguous float64 array with ``ndim`` dimensions; else ``error``: ``WHAT must be
    numeric (...)`` or ``WHAT must be EXPECTED, got shape S`` (``expected`` defaults to ``"1-d"``/``"2-d"``/...).

    Contiguous because the numba kernels are compiled per array layout: a column of a matrix (a strided
    view) would otherwise compile every kernel it reaches a second time (seconds each), once per process
    without a warm cache. A strided view is copied; a contiguous float64 array is returned as is.

    >>> m = np.arange(6.0).reshape(3, 2)
    >>> m[:, 1].flags.c_contiguous, float_array(m[:, 1], "scores").flags.c_contiguous
    (False, True)
    >>> row = m[0]; float_array(row, "scores") is row
    True
    """
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise error(f"{what} must be numeric ({exc})") from None
    if arr.ndim != ndim:
        raise error(f"{what} must be {expected or f'{ndim}-d'}, got shape {arr.shape}")
    return np.ascontiguousarray(arr)
