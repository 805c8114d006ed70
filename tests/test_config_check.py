"""The one config checker (ltr.core.config_check): every rule, and the message naming the key path."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from omegaconf import OmegaConf

from ltr.core.config_check import Constraint, check_block, check_field, check_value, defaults, join, setting
from ltr.core.errors import ConfigError, DataError, MetricError


@dataclass
class Inner:
    size: int = setting(3, low=1, high=10)


@dataclass
class Block:
    count: int = setting(5, low=0)
    rate: float = setting(0.5, low=0.0, high=1.0, open_low=True, open_high=True)
    depth: int | None = setting(None, low=1)
    flag: bool = False
    mode: str = setting("a", choices=("a", "b"))
    names: list[str] = setting(["x"])
    extra: dict[str, Any] = setting({})
    inner: Inner = field(default_factory=Inner)
    anything: Any = None


def check(**given: Any) -> dict[str, Any]:
    return check_block(Block, given, "model.params")


def test_defaults_are_filled_and_returned_as_plain_python():
    assert check() == {
        "count": 5, "rate": 0.5, "depth": None, "flag": False, "mode": "a", "names": ["x"], "extra": {},
        "inner": {"size": 3}, "anything": None,
    }  # fmt: skip
    assert check() == {**defaults(Block), "inner": {"size": 3}}
    first, second = check(), check()
    first["names"].append("y")
    assert second["names"] == ["x"]  # a list default is a fresh copy every time


def test_unknown_key_lists_the_accepted_keys_in_declaration_order():
    with pytest.raises(ConfigError) as info:
        check(cout=1)
    assert str(info.value) == (
        "model.params: unknown key(s) cout; accepted: count, rate, depth, flag, mode, names, extra, inner, anything"
    )
    with pytest.raises(
        ConfigError, match=r"^model.params: unknown key\(s\) a, b; lambdamart accepts: count,"
    ):
        check_block(Block, {"b": 1, "a": 2}, "model.params", owner="lambdamart")
    assert check_block(Block, {"zz": 1}, "data", extra="keep")["zz"] == 1


@pytest.mark.parametrize("value", [np.int64(7), np.int32(7), np.uint8(7), 7, 7.0, np.float64(7.0)])
def test_integers_accept_numpy_scalars_and_integral_floats(value):
    out = check(count=value)["count"]
    assert out == 7 and type(out) is int


@pytest.mark.parametrize("value", [np.float64(0.25), np.float32(0.25), 0.25, np.int64(0) + 0.25])
def test_floats_accept_numpy_scalars(value):
    out = check(rate=value)["rate"]
    assert out == 0.25 and type(out) is float


@pytest.mark.parametrize("field_name", ["count", "rate", "depth"])
@pytest.mark.parametrize("value", [True, False, np.bool_(True)])
def test_bool_is_never_taken_as_a_number(field_name, value):
    with pytest.raises(ConfigError, match=rf"^model.params.{field_name}: expected an? (integer|number), got"):
        check(**{field_name: value})


@pytest.mark.parametrize("value", [1, 0, "true", None])
def test_bool_fields_take_only_true_or_false(value):
    with pytest.raises(ConfigError, match=r"^model.params.flag: (expected true or false|must be set)"):
        check(flag=value)
    assert check(flag=np.bool_(True))["flag"] is True


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"count": 2.5}, r"model.params.count: expected an integer, got 2.5"),
        ({"count": "5"}, r"model.params.count: expected an integer, got '5'"),
        ({"count": float("nan")}, r"model.params.count: expected an integer, got nan"),
        ({"rate": float("inf")}, r"model.params.rate: expected a finite number, got inf"),
        ({"mode": 1}, r"model.params.mode: expected a string, got 1"),
        ({"names": "x"}, r"model.params.names: expected a list, got 'x'"),
        ({"names": ["x", 2]}, r"model.params.names\[1\]: expected a string, got 2"),
        ({"extra": [1]}, r"model.params.extra: expected a mapping, got \[1\]"),
        ({"inner": {"size": 11}}, r"model.params.inner.size: must be in \[1, 10\], got 11"),
        ({"inner": {"sise": 1}}, r"model.params.inner: unknown key\(s\) sise"),
        ({"inner": 3}, r"model.params.inner: expected a mapping of keys, got 3"),
    ],
)
def test_type_errors_name_the_key_path(given, message):
    with pytest.raises(ConfigError, match="^" + message):
        check(**given)


def test_range_bounds_inclusive_and_exclusive():
    assert check(count=0)["count"] == 0  # low=0 inclusive
    with pytest.raises(ConfigError, match=r"^model.params.count: must be in \[0, inf\], got -1$"):
        check(count=-1)
    for bad in (0.0, 1.0, np.float64(1.0)):  # open at both ends
        with pytest.raises(ConfigError, match=r"^model.params.rate: must be in \(0.0, 1.0\), got"):
            check(rate=bad)
    assert check(rate=1e-12)["rate"] == 1e-12 and check(rate=1 - 1e-12)["rate"] == 1 - 1e-12
    assert check_block(Inner, {"size": 10}, "x")["size"] == 10  # high inclusive


def test_null_only_where_nullable():
    assert check(depth=None)["depth"] is None
    assert check(depth=np.int64(4))["depth"] == 4
    with pytest.raises(ConfigError, match=r"^model.params.depth: must be in \[1, inf\], got 0"):
        check(depth=0)
    for key in ("count", "rate", "mode", "names", "inner"):
        with pytest.raises(ConfigError, match=rf"^model.params.{key}: must be set \(got null\)"):
            check(**{key: None})
    assert check(anything=None)["anything"] is None  # Any: null passes unless its check says otherwise


def test_choices_and_custom_checks():
    with pytest.raises(ConfigError, match=r"^model.params.mode: expected one of \['a', 'b'\], got 'c'"):
        check(mode="c")

    def even(value: int, where: str) -> int:
        if value % 2:
            raise ConfigError(f"{where}: must be even, got {value}")
        return value // 2

    @dataclass
    class Even:
        n: int = setting(2, check=even)

    assert check_block(Even, {"n": np.int64(8)}, "k") == {"n": 4}
    with pytest.raises(ConfigError, match="^k.n: must be even, got 3"):
        check_block(Even, {"n": 3}, "k")


def test_omegaconf_nodes_and_none_are_accepted_as_input():
    node = OmegaConf.create({"block": {"count": 2, "names": ["${x}"]}, "x": "resolved"})
    assert check_block(Block, node.block, "b")["names"] == ["resolved"]
    assert check_block(Block, None, "b") == check()
    with pytest.raises(ConfigError, match=r"^b: expected a mapping of keys, got \[1\]"):
        check_block(Block, [1], "b")


def test_paths_follow_the_users_spelling():
    assert join("model.params", "n") == "model.params.n"
    assert join("experiments/x.yaml:", "stats") == "experiments/x.yaml: stats"
    with pytest.raises(ConfigError, match=r"^experiments/x.yaml: inner.size: must be in"):
        check_block(Block, {"inner": {"size": 0}}, "experiments/x.yaml:")


@dataclass
class Nested:
    n: int = setting(1, low=1)


@dataclass
class Outer:
    inner: Nested = field(default_factory=Nested)


def test_error_class_is_the_callers_with_the_same_message():

    with pytest.raises(ConfigError) as as_config:
        check_value(0, int, Constraint(low=1), "n_samples")
    with pytest.raises(MetricError) as as_metric:
        check_value(0, int, Constraint(low=1), "n_samples", error=MetricError)
    assert not isinstance(as_metric.value, ConfigError)  # not a ConfigError in disguise
    assert str(as_metric.value) == str(as_config.value) == "n_samples: must be in [1, inf], got 0"

    with pytest.raises(DataError, match=r"^data\.inner\.n: expected an integer, got True$") as nested:
        check_block(Outer, {"inner": {"n": True}}, "data", error=DataError)
    assert not isinstance(nested.value, ConfigError)
    with pytest.raises(DataError, match=r"^data: unknown key\(s\) x; accepted: inner$"):
        check_block(Outer, {"x": 1}, "data", error=DataError)


def test_error_class_leaves_a_custom_checks_own_error_alone():

    def refuse(value, path):
        raise MetricError(f"{path}: refused {value!r}")

    with pytest.raises(MetricError, match="^k: refused 3$"):
        check_value(3, int, Constraint(check=refuse), "k", error=DataError)


def test_check_field_reads_one_key_by_its_declaration():
    assert check_field(Nested, "n", {}, "data") == 1  # the declared default
    assert check_field(Nested, "n", {"n": np.int64(4), "other": "ignored"}, "data") == 4
    with pytest.raises(MetricError, match=r"^data\.n: must be in \[1, inf\], got 0$"):
        check_field(Nested, "n", {"n": 0}, "data", error=MetricError)


def test_a_file_top_level_is_named_once():
    # the experiment file's top level is "x.yaml:" (join gives "x.yaml: key"); its own errors say "x.yaml:"
    with pytest.raises(ConfigError, match=r"^experiments/x.yaml: unknown key\(s\) nope; accepted: count"):
        check_block(Block, {"nope": 1}, "experiments/x.yaml:")
    with pytest.raises(ConfigError, match=r"^experiments/x.yaml: expected a mapping of keys"):
        check_block(Block, [1], "experiments/x.yaml:")


@pytest.mark.parametrize("kind", [int, float])
def test_an_integer_beyond_the_float_range_is_a_config_error(kind):
    # float(10**400) raises OverflowError: a command-line value with 400 digits must not give a traceback
    with pytest.raises(ConfigError, match=r"^model.params.n: 1000.* is too large$"):
        check_value(10**400, kind, None, "model.params.n")


def test_free_form_mappings_come_back_without_numpy_scalars():
    # an ensemble member's params are merged with OmegaConf, which refuses numpy scalars
    @dataclass
    class Free:
        extra: dict[str, Any] | None = None

    out = check_block(Free, {"extra": {"alpha": np.float64(2.0), "sizes": [np.int64(3)]}}, "model.members.1")
    assert out == {"extra": {"alpha": 2.0, "sizes": [3]}}
    assert type(out["extra"]["alpha"]) is float and type(out["extra"]["sizes"][0]) is int
    OmegaConf.create(out)  # would raise UnsupportedValueType on a numpy scalar
