"""Every argument the stats, metrics, data and comparison APIs check goes through ``ltr.core.config_check``.

One rule for each: numpy integers/floats are accepted and give the same result as the Python value,
``True`` is never taken for a number, an out-of-range value fails, and the message names the argument
as the caller spells it, with the error class the API promises (``MetricError`` for metrics,
``ConfigError`` elsewhere).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from ltr.analysis.comparison import compare
from ltr.core.errors import ConfigError, MetricError
from ltr.data.registry import load_dataset
from ltr.metrics import evaluate
from ltr.metrics.uncertain import monte_carlo_metrics
from ltr.stats import (
    achieved_power,
    bootstrap_ci,
    queries_needed,
    randomization_test,
    tukey_hsd,
    win_tie_loss,
)

RNG = np.random.default_rng(0)
A, B_ = RNG.random(30), RNG.random(30)
LABELS, SCORES, OFFSETS = [2, 0, 1, 0], [0.3, 0.9, 0.5, 0.1], [0, 2, 4]
PROBS = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [1.0, 0.0, 0.0], [0.0, 0.5, 0.5]])


def _report_markdown(decimals: Any) -> str:
    per_query = {"base": {"m": A}, "sys": {"m": B_}}
    return compare(per_query, baseline="base", query_ids=np.arange(30), B=50).to_markdown(decimals=decimals)


def _mc(**kwargs: Any) -> Any:
    return monte_carlo_metrics("ndcg", PROBS, SCORES, OFFSETS, **{"n_samples": 20, **kwargs})["ndcg"].values


# (case id, call with the argument, a valid numpy value, its Python twin, an out-of-range value,
#  the name in the message, the error class)
CASES: list[tuple[str, Callable[[Any], Any], Any, Any, Any, str, type[Exception]]] = [
    ("bootstrap B", lambda v: bootstrap_ci(A, B=v, seed=1).high, np.int64(200), 200, 0, "B", ConfigError),
    (
        "bootstrap confidence",
        lambda v: bootstrap_ci(A, B=200, confidence=v).high,
        np.float32(0.5),
        float(np.float32(0.5)),
        1.0,
        "confidence",
        ConfigError,
    ),
    (
        "bootstrap seed",
        lambda v: bootstrap_ci(A, B=200, seed=v).high,
        np.int32(3),
        3,
        -1,
        "seed",
        ConfigError,
    ),
    (
        "randomization B",
        lambda v: randomization_test(A, B_, B=v).pvalue,
        np.int64(99),
        99,
        0,
        "B",
        ConfigError,
    ),
    (
        "hsd B",
        lambda v: tukey_hsd({"x": A, "y": B_}, B=v).pvalues.tolist(),
        np.int64(99),
        99,
        0,
        "B",
        ConfigError,
    ),
    (
        "tie_tolerance",
        lambda v: win_tie_loss(A, B_, tie_tolerance=v),
        np.float64(0.1),
        0.1,
        -0.1,
        "tie_tolerance",
        ConfigError,
    ),
    ("power n", lambda v: achieved_power(v, 0.01, 0.15), np.int64(40), 40, 1, "n", ConfigError),
    (
        "power alpha",
        lambda v: queries_needed(0.01, 0.15, alpha=v),
        np.float32(0.25),
        float(np.float32(0.25)),
        0.0,
        "alpha",
        ConfigError,
    ),
    ("power sigma", lambda v: queries_needed(0.01, v), np.float64(0.2), 0.2, 0.0, "sigma", ConfigError),
    (
        "err_gmax",
        lambda v: evaluate("err@2", LABELS, SCORES, OFFSETS, err_gmax=v)["err@2"].tolist(),
        np.int64(3),
        3,
        0,
        "convention err_gmax",
        MetricError,
    ),
    (
        "default_k",
        lambda v: evaluate("ndcg", LABELS, SCORES, OFFSETS, default_k=v)["ndcg"].tolist(),
        np.int16(1),
        1,
        0,
        "convention default_k",
        MetricError,
    ),
    (
        "discount_flat_ranks",
        lambda v: evaluate("ndcg", LABELS, SCORES, OFFSETS, discount_flat_ranks=v)["ndcg"].tolist(),
        np.int8(2),
        2,
        -1,
        "convention discount_flat_ranks",
        MetricError,
    ),
    (
        "discount_base",
        lambda v: evaluate("ndcg", LABELS, SCORES, OFFSETS, discount="log", discount_base=v)["ndcg"].tolist(),
        np.float32(3.0),
        3.0,
        1.0,
        "convention discount_base",
        MetricError,
    ),
    ("n_samples", lambda v: _mc(n_samples=v).tolist(), np.int64(20), 20, 1, "n_samples", MetricError),
    (
        "mc confidence",
        lambda v: _mc(confidence=v).tolist(),
        np.float64(0.9),
        0.9,
        1.0,
        "confidence",
        MetricError,
    ),
    ("mc seed", lambda v: _mc(seed=v).tolist(), np.uint8(4), 4, -1, "seed", MetricError),
    ("decimals", _report_markdown, np.int64(2), 2, 13, "decimals", ConfigError),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize(("case", "call", "np_value", "py_value", "bad", "name", "error"), CASES, ids=IDS)
def test_numpy_scalar_accepted_like_the_python_value(case, call, np_value, py_value, bad, name, error):
    assert call(np_value) == call(py_value)


@pytest.mark.parametrize(("case", "call", "np_value", "py_value", "bad", "name", "error"), CASES, ids=IDS)
def test_true_is_not_a_number(case, call, np_value, py_value, bad, name, error):
    with pytest.raises(error, match=rf"^{name}: expected (an integer|a number), got True$"):
        call(True)


@pytest.mark.parametrize(("case", "call", "np_value", "py_value", "bad", "name", "error"), CASES, ids=IDS)
def test_out_of_range_names_the_argument(case, call, np_value, py_value, bad, name, error):
    with pytest.raises(error, match=rf"^{name}: must be in [\[(].*, got {bad!r}$") as info:
        call(bad)
    if error is MetricError:
        assert not isinstance(info.value, ConfigError)  # the metrics API promises MetricError only


def test_data_fold_checked_before_any_file_is_read(tmp_path):
    # np.int64(2) picks Fold2 (the missing-file message names it); True and 0 are refused by name
    with pytest.raises(Exception, match=r"Fold2/train\.txt"):
        load_dataset({"kind": "mslr_web10k", "dir": str(tmp_path), "fold": np.int64(2)})
    with pytest.raises(
        ConfigError,
        match=r"^data\.fold: expected a fold 1..5, all, or a list of folds such as \[1,3,5\]; got True$",
    ):
        load_dataset({"kind": "mslr_web10k", "dir": str(tmp_path), "fold": True})
    with pytest.raises(
        ConfigError,
        match=r"^data\.fold: expected a fold 1..5, all, or a list of folds such as \[1,3,5\]; got 0$",
    ):
        load_dataset({"kind": "mq2007", "dir": str(tmp_path), "fold": 0})


def test_flags_accept_numpy_bool_and_refuse_numbers():
    assert queries_needed(0.01, 0.15, paired=np.bool_(True)) == queries_needed(0.01, 0.15, paired=True)
    with pytest.raises(ConfigError, match=r"^paired: expected true or false, got 1$"):
        queries_needed(0.01, 0.15, paired=1)  # type: ignore[arg-type]


def test_parse_options_checked_by_their_declaration(tmp_path):
    from ltr.data._syntax import ParseOptions
    from ltr.data.svmlight import load_svmlight

    assert ParseOptions(n_features=np.int64(3), density=np.float32(0.5)).n_features == 3
    assert ParseOptions(label_range=[0, np.int64(4)]).label_range == (0.0, 4.0)
    with pytest.raises(ConfigError, match=r"^n_features: expected an integer, got True$"):
        ParseOptions(n_features=True)
    with pytest.raises(ConfigError, match=r"^zero_based: expected true or false, got 'yes'$"):
        ParseOptions(zero_based="yes")  # type: ignore[arg-type]  # was taken as true before
    with pytest.raises(ConfigError, match=r"^label_range: must be \(low, high\) with low <= high"):
        ParseOptions(label_range=(4, 0))
    with pytest.raises(ConfigError, match=r"^huge: must be in \(0.0, inf\], got 0$"):
        ParseOptions(huge=0)
    p = tmp_path / "a.txt"
    p.write_text("1 qid:1 1:0.5\n0 qid:1 2:1\n")
    assert load_svmlight(p, n_features=np.int64(2)).n_features == 2
    # from a data config the message names the key as the config spells it
    with pytest.raises(ConfigError, match=r"^data\.parse\.density: must be in \[0\.0, 1\.0\], got 2$"):
        load_dataset({"kind": "svmlight", "train": str(p), "parse": {"density": 2}})
    with pytest.raises(
        ConfigError, match=r"^data\.parse\.output: expected one of \['auto', 'dense', 'csr'\]"
    ):
        load_dataset({"kind": "mq2007", "dir": str(tmp_path), "parse": {"output": "coo"}})


def test_data_helpers_arguments():
    from ltr.data.splits import query_kfold
    from ltr.data.synthetic import generate

    assert [t.tolist() for _, t in query_kfold(6, np.int64(3), seed=0)] == [
        t.tolist() for _, t in query_kfold(6, 3, seed=0)
    ]
    with pytest.raises(ConfigError, match=r"^k: expected an integer, got True$"):
        query_kfold(6, True, seed=0)
    with pytest.raises(ConfigError, match=r"^k: must be in \[2, inf\], got 1$"):
        query_kfold(6, 1, seed=0)
    a, b = generate(np.int64(3), seed=1, max_docs=np.int32(9)), generate(3, seed=1, max_docs=9)
    assert np.array_equal(a.y, b.y) and np.array_equal(a.qid, b.qid)
    with pytest.raises(ConfigError, match=r"^n_queries: expected an integer, got True$"):
        generate(True, seed=1)
    with pytest.raises(ConfigError, match=r"^max_docs: must be >= min_docs=10, got 5$"):
        generate(10, seed=1, min_docs=10, max_docs=5)
    with pytest.raises(ConfigError, match=r"^p_empty: must be in \[0\.0, 1\.0\), got 1\.0$"):
        generate(10, seed=1, p_empty=1.0)


def test_sweeper_settings():
    from ltr.sweep.sweeper import checked_settings

    base = {"direction": "maximize", "n_trials": 3, "n_jobs": 1, "max_failure_rate": 0.0}
    settings = checked_settings(**{**base, "n_trials": np.int64(4), "max_failure_rate": np.float32(0.5)})
    assert (settings.n_trials, settings.max_failure_rate) == (4, 0.5) and type(settings.n_trials) is int
    with pytest.raises(ConfigError, match=r"^hydra\.sweeper\.n_jobs: expected an integer, got True$"):
        checked_settings(**{**base, "n_jobs": True})
    with pytest.raises(ConfigError, match=r"^hydra\.sweeper\.n_trials: must be in \[1, inf\], got 0$"):
        checked_settings(**{**base, "n_trials": 0})
    with pytest.raises(
        ConfigError, match=r"^hydra\.sweeper\.max_failure_rate: must be in \[0\.0, 1\.0\], got 1\.5$"
    ):
        checked_settings(**{**base, "max_failure_rate": 1.5})
