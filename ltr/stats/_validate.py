"""Input checks shared by the ``ltr.stats`` functions: per-query arrays, NaN policy, seeds."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from ltr.core.arrays import float_array
from ltr.core.config_check import Constraint, check_value
from ltr.core.errors import DataError

NanPolicy = Literal["omit", "raise"]
Seed = int | np.random.Generator


def as_values(x: ArrayLike, name: str) -> np.ndarray:
    """``x`` as a 1-D float64 array; :class:`DataError` naming ``name`` if it is not 1-D or holds ±inf."""
    arr = float_array(x, f"{name}: per-query values", expected="a 1-D array of per-query values")
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


def check_choice(param: str, value: object, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of ``choices``; else :class:`ConfigError` naming ``param`` and the choices.

    >>> check_choice("nan_policy", "drop", ("omit", "raise"))
    Traceback (most recent call last):
    ...
    ltr.core.errors.ConfigError: nan_policy: expected one of ['omit', 'raise'], got 'drop'
    """
    return check_value(value, str, Constraint(choices=choices), param)


def check_B(n_resamples: object, minimum: int = 1) -> int:
    """Number of resamples ``B``: an integer >= ``minimum`` (numpy integers accepted, ``bool`` never).

    >>> check_B(np.int64(99)), check_B(0, minimum=0)
    (99, 0)
    """
    return check_value(n_resamples, int, Constraint(low=minimum), "B")


def check_level(param: str, value: object) -> float:
    """A probability strictly between 0 and 1 (confidence, alpha, power), as a Python float.

    >>> check_level("alpha", 1.0)
    Traceback (most recent call last):
    ...
    ltr.core.errors.ConfigError: alpha: must be in (0.0, 1.0), got 1.0
    """
    return check_value(value, float, _LEVEL, param)


_LEVEL = Constraint(low=0.0, high=1.0, open_low=True, open_high=True)


def check_seed(seed: object) -> int:
    """An integer seed >= 0 (numpy integers accepted, ``bool`` never), as a Python int."""
    return check_value(seed, int, Constraint(low=0), "seed")


def check_tolerance(tie_tolerance: object) -> float:
    """A tie tolerance: a finite number >= 0."""
    return check_value(tie_tolerance, float, Constraint(low=0.0), "tie_tolerance")


def check_flag(param: str, value: object, *, allow_none: bool = False) -> bool | None:
    """``value`` as a bool (``numpy.bool_`` accepted; ``None`` too when ``allow_none``); else :class:`ConfigError`."""
    return check_value(value, bool | None if allow_none else bool, None, param)


def make_rng(seed: Seed) -> tuple[np.random.Generator, int | None]:
    """A Generator from an int seed (or the Generator itself) and the int seed to record (None if a Generator)."""
    if isinstance(seed, np.random.Generator):
        return seed, None
    seed = check_seed(seed)
    return np.random.default_rng(seed), seed
