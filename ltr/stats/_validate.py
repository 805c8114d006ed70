"""Input checks shared by the ``ltr.stats`` functions: per-query arrays, NaN policy, seeds."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from ltr.errors import ConfigError, DataError

NanPolicy = Literal["omit", "raise"]
Seed = int | np.random.Generator


def as_values(x: ArrayLike, name: str) -> np.ndarray:
    """``x`` as a 1-D float64 array; :class:`DataError` naming ``name`` if it is not 1-D or holds ±inf."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name}: per-query values must be numeric ({exc})") from None
    if arr.ndim != 1:
        raise DataError(f"{name}: expected a 1-D array of per-query values, got shape {arr.shape}")
    if np.isinf(arr).any():
        bad = int(np.flatnonzero(np.isinf(arr))[0])
        raise DataError(
            f"{name}: value at query position {bad} is {arr[bad]}; per-query values must be finite or NaN"
        )
    return arr


def drop_nan(x: np.ndarray, name: str, nan_policy: NanPolicy) -> np.ndarray:
    """Remove NaN (skipped queries) under ``nan_policy='omit'``; raise under ``'raise'``."""
    check_choice("nan_policy", nan_policy, ("omit", "raise"))
    nan = np.isnan(x)
    if nan.any():
        if nan_policy == "raise":
            raise DataError(
                f"{name}: {int(nan.sum())} NaN value(s) (skipped queries), first at position "
                f"{int(np.flatnonzero(nan)[0])}; pass nan_policy='omit' to drop them"
            )
        return x[~nan]
    return x


def raw_diffs(a: ArrayLike, b: ArrayLike, names: tuple[str, str] = ("a", "b")) -> np.ndarray:
    """``a − b`` per query (NaN where either side is NaN) after checking both score the same number of queries."""
    x, y = as_values(a, names[0]), as_values(b, names[1])
    if x.shape != y.shape:
        raise DataError(
            f"paired inputs must score the same queries in the same order: {names[0]} has {x.shape[0]} "
            f"values, {names[1]} has {y.shape[0]}"
        )
    return x - y


def paired_diffs(
    a: ArrayLike, b: ArrayLike, nan_policy: NanPolicy, names: tuple[str, str] = ("a", "b")
) -> np.ndarray:
    """``a − b`` over the queries both systems scored (pairs with a NaN on either side are dropped)."""
    return drop_nan(raw_diffs(a, b, names), f"{names[0]} - {names[1]}", nan_policy)


def need(n: int, minimum: int, what: str) -> None:
    """Raise :class:`DataError` if fewer than ``minimum`` usable queries remain."""
    if n < minimum:
        raise DataError(f"{what} needs at least {minimum} non-NaN queries, got {n}")


def check_choice(param: str, value: object, choices: tuple[str, ...]) -> None:
    """Raise :class:`ConfigError` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ConfigError(
            f"{param}={value!r} is not supported; choose one of {', '.join(map(repr, choices))}"
        )


def check_B(n_resamples: int, minimum: int = 1) -> int:
    """Number of resamples ``B``: an integer >= ``minimum``."""
    if (
        isinstance(n_resamples, bool)
        or not isinstance(n_resamples, int | np.integer)
        or n_resamples < minimum
    ):
        raise ConfigError(f"B={n_resamples!r}: the number of resamples must be an integer >= {minimum}")
    return int(n_resamples)


def check_level(param: str, value: float) -> float:
    """A probability strictly between 0 and 1 (confidence, alpha, power)."""
    if not (isinstance(value, float | int) and 0.0 < float(value) < 1.0):
        raise ConfigError(f"{param}={value!r} must be a number strictly between 0 and 1")
    return float(value)


def check_seed(seed: object, expected: str = "a non-negative int") -> int:
    """An int seed >= 0 (numpy integers accepted), as a Python int."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ConfigError(f"seed={seed!r} must be {expected}")
    return int(seed)


def check_tolerance(tie_tolerance: object) -> float:
    """A tie tolerance: a number >= 0 (not NaN)."""
    if (
        isinstance(tie_tolerance, bool)
        or not isinstance(tie_tolerance, int | float | np.integer | np.floating)
        or not tie_tolerance >= 0
    ):
        raise ConfigError(f"tie_tolerance={tie_tolerance!r} must be a number >= 0")
    return float(tie_tolerance)


def check_flag(param: str, value: object, *, allow_none: bool = False) -> None:
    """Raise :class:`ConfigError` unless ``value`` is a bool (or None when ``allow_none``)."""
    if not (isinstance(value, bool | np.bool_) or (allow_none and value is None)):
        raise ConfigError(f"{param}={value!r} must be True or False" + (" or None" if allow_none else ""))


def make_rng(seed: Seed) -> tuple[np.random.Generator, int | None]:
    """A Generator from an int seed (or the Generator itself) and the int seed to record (None if a Generator)."""
    if isinstance(seed, np.random.Generator):
        return seed, None
    seed = check_seed(seed, "a non-negative int or a numpy.random.Generator")
    return np.random.default_rng(seed), seed
