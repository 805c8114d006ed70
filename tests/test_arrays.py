"""ltr.core.arrays.float_array: the one opening of every per-query input check (metrics, stats, corrections, HSD)."""

from __future__ import annotations

import numpy as np
import pytest

from ltr.core.arrays import float_array
from ltr.core.errors import ConfigError, DataError, MetricError
from ltr.metrics import mean
from ltr.stats import holm, tukey_hsd


def test_converts_to_float64_of_the_expected_rank():
    out = float_array(np.array([1, 2], dtype=np.int8), "x")
    assert out.dtype == np.float64 and out.tolist() == [1.0, 2.0]
    assert float_array([[1, 2]], "t", ndim=2).shape == (1, 2)
    with pytest.raises(DataError, match=r"^t must be 2-d, got shape \(2,\)$"):
        float_array([1, 2], "t", ndim=2)


def test_the_callers_error_class_and_name_reach_the_user():
    with pytest.raises(MetricError) as metric:
        mean([[1.0]])
    assert not isinstance(metric.value, ConfigError | DataError)
    assert str(metric.value) == "mean() per-query values must be of shape (n_queries,), got shape (1, 1)"
    with pytest.raises(DataError, match=r"^p-values must be a 1-D array, got shape \(1, 2\)$"):
        holm([[0.1, 0.2]])
    with pytest.raises(
        DataError, match=r"^per-query values must be a \(queries × systems\) table, got shape \(3,\)$"
    ):
        tukey_hsd([0.1, 0.2, 0.3])
    with pytest.raises(DataError, match=r"^per-query values must be numeric \("):
        tukey_hsd([["a", "b"]])
