"""The one way ``ltr`` declares and checks a config block: a dataclass, and :func:`check_block`.

A block (model params, ``early_stopping``, ``clicks``, ``backend``, an experiment file, ...) is a
dataclass whose fields carry the type (the annotation), the default (written once, here) and, through
:func:`setting`, the range or choices. The same dataclass is registered in Hydra's ConfigStore, so a
wrong type fails while Hydra composes the config; :func:`check_block` checks a plain mapping (the
Python API, a saved manifest, an experiment file) by the same declaration:

* missing keys get their defaults; an unknown key is a :class:`~ltr.core.errors.ConfigError` listing the
  accepted keys;
* ``int`` accepts Python and numpy integers (and floats with an integral value, as a YAML ``5.0``),
  never ``bool``; ``float`` accepts any finite real number (numpy scalars included), never ``bool``;
  ``bool`` accepts ``True``/``False`` (and ``numpy.bool_``) only; ``str`` accepts strings;
  ``X | None`` accepts ``None`` (``null``) unchecked, ``Any`` passes it to its ``check``, every
  other type refuses it;
* ``low``/``high`` bounds are inclusive unless ``open_low``/``open_high``; ``choices`` lists the
  accepted values; ``check`` is a callable ``(value, path) -> value`` for what a type cannot say;
* a nested dataclass field is checked as a block of its own; ``list[T]`` checks every item;
* every message starts with the key's path in the user's spelling (``where`` + key), e.g.
  ``model.params.num_leaves`` or ``experiments/x.yaml: stats.B``;
* the error is a :class:`~ltr.core.errors.ConfigError` unless ``error=`` names the class the caller's API
  promises (``MetricError`` for a metric's argument, ``DataError`` for a data file's field).

:func:`check_value` checks one function argument the same way (``check_value(k, int, Constraint(low=2),
"k")``) and :func:`check_field` one key of a block by its declaration.

Values come back as plain Python (``int``/``float``/``bool``/``str``/``list``/``dict``).

>>> from dataclasses import dataclass
>>> @dataclass
... class Demo:
...     n_trees: int = setting(100, low=1)
...     rate: float = setting(0.1, low=0.0, open_low=True)
...     depth: int | None = None
>>> import numpy as np
>>> check_block(Demo, {"n_trees": np.int64(5)}, "model.params")
{'n_trees': 5, 'rate': 0.1, 'depth': None}
>>> check_block(Demo, {"rate": 0}, "model.params")
Traceback (most recent call last):
...
ltr.core.errors.ConfigError: model.params.rate: must be in (0.0, inf], got 0
>>> check_block(Demo, {"n_tree": 5}, "model.params")
Traceback (most recent call last):
...
ltr.core.errors.ConfigError: model.params: unknown key(s) n_tree; accepted: n_trees, rate, depth
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Union

import numpy as np

from ltr.core.errors import ConfigError, LtrError

CHECK = "ltr_check"  # the metadata key of a field's constraints


@dataclasses.dataclass(frozen=True)
class Constraint:
    """Range / choices / extra check of one field (``low``/``high`` inclusive unless ``open_*``)."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    choices: tuple[Any, ...] = ()
    check: Callable[[Any, str], Any] | None = None


def setting(
    default: Any = dataclasses.MISSING,
    *,
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
    open_high: bool = False,
    choices: tuple[Any, ...] | list[Any] = (),
    check: Callable[[Any, str], Any] | None = None,
) -> Any:
    """A dataclass field with a default and constraints (a list/dict default is copied per instance)."""
    meta = {CHECK: Constraint(low, high, open_low, open_high, tuple(choices), check)}
    if isinstance(default, list | dict):
        return dataclasses.field(default_factory=lambda: _copy(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def plain(cfg: Any) -> Any:
    """A plain ``dict``/``list`` copy of a (possibly OmegaConf) value, resolved; ``None`` → ``{}``.

    >>> plain(None), plain({"a": {"b": 1}})
    ({}, {'a': {'b': 1}})
    """
    if cfg is None:
        return {}
    from omegaconf import DictConfig, ListConfig, OmegaConf  # deferred: keep this module cheap to import

    if isinstance(cfg, DictConfig | ListConfig):
        return OmegaConf.to_container(cfg, resolve=True)
    if isinstance(cfg, Mapping):
        return {str(k): plain(v) if isinstance(v, Mapping) else v for k, v in cfg.items()}
    return cfg


def python_values(value: Any) -> Any:
    """``value`` with every numpy scalar (at any depth of dicts, lists and tuples) as the Python scalar.

    A free-form block (``engine_params``, an ensemble member's ``params``) is merged with OmegaConf,
    which refuses numpy scalars.

    >>> python_values({"a": np.int64(3), "b": [np.float32(0.5), "x"]})
    {'a': 3, 'b': [0.5, 'x']}
    """
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {k: python_values(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [python_values(v) for v in value]
    return value


def join(where: str, key: str | int) -> str:
    """The path of ``key`` inside block ``where``: ``a.b`` + ``c`` → ``a.b.c``; ``file.yaml:`` + ``c`` → ``file.yaml: c``.

    >>> join("model.params", "n_trees"), join("experiments/x.yaml:", "stats"), join("", "seed")
    ('model.params.n_trees', 'experiments/x.yaml: stats', 'seed')
    """
    if not where:
        return str(key)
    if where.endswith(":"):
        return f"{where} {key}"
    return f"{where}.{key}"


def defaults(schema: type) -> dict[str, Any]:
    """Every field's default as plain Python (nested blocks as dicts; required fields are left out).

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class D:
    ...     a: int = 1
    ...     b: list = setting([1])
    >>> defaults(D)
    {'a': 1, 'b': [1]}
    """
    out: dict[str, Any] = {}
    for f in dataclasses.fields(schema):
        value = _default(f)
        if value is dataclasses.MISSING:
            continue
        out[f.name] = defaults(type(value)) if dataclasses.is_dataclass(value) else _copy(value)
    return out


def _default(f: dataclasses.Field) -> Any:
    """A field's default (a fresh one from its factory), or ``dataclasses.MISSING`` for a required field."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def check_block(
    schema: type,
    given: Any,
    where: str,
    *,
    extra: str = "forbid",
    owner: str | None = None,
    error: type[LtrError] = ConfigError,
) -> dict[str, Any]:
    """``given`` (a mapping, OmegaConf node or ``None``) checked against dataclass ``schema``, defaults filled.

    ``extra="forbid"`` (default): an unknown key is an error listing the accepted ones in declaration
    order (``OWNER accepts: ...`` when ``owner`` names whose block it is); ``extra="keep"``: unknown keys
    are returned unchanged (a block partly checked elsewhere). ``error``: the class raised (same message).
    """
    with _raising(error):
        return _check_block(schema, given, where, extra, owner)


def _check_block(schema: type, given: Any, where: str, extra: str, owner: str | None) -> dict[str, Any]:
    block = where.removesuffix(":") or "config"  # a file's top level (``x.yaml:``) is named ``x.yaml``
    values = plain(given)
    if not isinstance(values, Mapping):
        raise ConfigError(f"{block}: expected a mapping of keys, got {given!r}")
    hints = typing.get_type_hints(schema)
    fields = {f.name: f for f in dataclasses.fields(schema)}
    unknown = sorted(str(k) for k in values if k not in fields)
    if unknown and extra == "forbid":
        accepts = f"{owner} accepts" if owner else "accepted"
        raise ConfigError(f"{block}: unknown key(s) {', '.join(unknown)}; {accepts}: {', '.join(fields)}")
    out: dict[str, Any] = {}
    for name, f in fields.items():
        path = join(where, name)
        value = values[name] if name in values else _default(f)
        if value is dataclasses.MISSING:
            raise ConfigError(f"{path}: required, not set")
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = dataclasses.asdict(value)
        out[name] = check_value(value, hints[name], f.metadata.get(CHECK), path)
    for key in unknown:
        out[key] = values[key]
    return out


def check_field(
    schema: type, name: str, given: Mapping[str, Any], where: str, *, error: type[LtrError] = ConfigError
) -> Any:
    """Field ``name`` of block ``schema`` read from ``given`` (its default when absent), checked by its declaration.

    For code that needs one setting of a block whose other keys it does not own.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Letor:
    ...     fold: int = setting(1, low=1, high=5)
    >>> check_field(Letor, "fold", {}, "data"), check_field(Letor, "fold", {"fold": np.int8(3)}, "data")
    (1, 3)
    """
    f = {f.name: f for f in dataclasses.fields(schema)}[name]
    value = given[name] if name in given else _default(f)
    if value is dataclasses.MISSING:
        raise error(f"{join(where, name)}: required, not set")
    hint = typing.get_type_hints(schema)[name]
    return check_value(value, hint, f.metadata.get(CHECK), join(where, name), error=error)


def check_value(
    value: Any,
    annotation: Any,
    constraint: Constraint | None,
    path: str,
    *,
    error: type[LtrError] = ConfigError,
) -> Any:
    """One value checked against a type annotation and an optional :class:`Constraint` (module docstring).

    ``path`` names the value in the user's spelling; ``error`` is the class raised (same message).

    >>> from ltr.core.errors import MetricError
    >>> check_value(np.int64(3), int, Constraint(low=2), "n_samples", error=MetricError)
    3
    >>> check_value(True, int, Constraint(low=2), "n_samples", error=MetricError)
    Traceback (most recent call last):
    ...
    ltr.core.errors.MetricError: n_samples: expected an integer, got True
    """
    with _raising(error):
        return _check_value(value, annotation, constraint, path)


@contextlib.contextmanager
def _raising(error: type[LtrError]) -> Iterator[None]:
    """Re-raise a :class:`ConfigError` from the body as ``error`` (same message); others pass through."""
    try:
        yield
    except ConfigError as exc:
        if isinstance(exc, error):
            raise
        raise error(str(exc)) from None


def _check_value(value: Any, annotation: Any, constraint: Constraint | None, path: str) -> Any:
    kind, nullable = _unwrap(annotation)
    if value is None:
        if nullable:
            return None
        if kind is Any:  # an untyped field: its check decides what null means
            return value if constraint is None or constraint.check is None else constraint.check(value, path)
        raise ConfigError(f"{path}: must be set (got null)")
    given, value = value, _check_type(value, kind, path)
    if constraint is None:
        return value
    if constraint.choices and value not in constraint.choices:
        raise ConfigError(f"{path}: expected one of {list(constraint.choices)}, got {given!r}")
    if constraint.low is not None or constraint.high is not None:
        _check_range(value, given, constraint, path)
    if constraint.check is not None:
        value = constraint.check(value, path)
    return value


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """(the type without ``None``, whether ``None`` is allowed)."""
    origin = typing.get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(annotation))
        return (args[0] if len(args) == 1 else Any), nullable
    return annotation, False


def _check_type(value: Any, kind: Any, path: str) -> Any:
    origin = typing.get_origin(kind)
    if kind is Any:
        return value
    if dataclasses.is_dataclass(kind):
        return check_block(kind, value, path)
    if kind is bool:
        if not isinstance(value, bool | np.bool_):
            raise ConfigError(f"{path}: expected true or false, got {value!r}")
        return bool(value)
    if kind is int or kind is float:
        real = isinstance(value, int | float | np.integer | np.floating) and not isinstance(
            value, bool | np.bool_
        )
        what = "an integer" if kind is int else "a number"
        if not real:
            raise ConfigError(f"{path}: expected {what}, got {value!r}")
        try:
            number = float(value)
        except OverflowError:  # a Python integer beyond the float range (e.g. 400 digits on the command line)
            raise ConfigError(f"{path}: {value!r} is too large") from None
        if not math.isfinite(number):
            raise ConfigError(
                f"{path}: expected {'an integer' if kind is int else 'a finite number'}, got {value!r}"
            )
        if kind is float:
            return float(value)
        if number != int(value):
            raise ConfigError(f"{path}: expected an integer, got {value!r}")
        return int(value)
    if kind is str:
        if not isinstance(value, str):
            raise ConfigError(f"{path}: expected a string, got {value!r}")
        return value
    if kind is list or origin is list:
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, list | tuple):
            raise ConfigError(f"{path}: expected a list, got {value!r}")
        (item,) = typing.get_args(kind) or (Any,)
        return [check_value(v, item, None, f"{path}[{i}]") for i, v in enumerate(value)]
    if kind is dict or origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{path}: expected a mapping, got {value!r}")
        return python_values(plain(value))
    raise TypeError(f"{path}: unsupported schema type {kind!r}")  # a declaration bug, not user input


def _check_range(value: Any, given: Any, c: Constraint, path: str) -> None:
    low_bad = c.low is not None and (value <= c.low if c.open_low else value < c.low)
    high_bad = c.high is not None and (value >= c.high if c.open_high else value > c.high)
    if low_bad or high_bad:
        lo = "-inf" if c.low is None else c.low
        hi = "inf" if c.high is None else c.high
        opening, closing = "(" if c.open_low else "[", ")" if c.open_high else "]"
        raise ConfigError(f"{path}: must be in {opening}{lo}, {hi}{closing}, got {given!r}")
