"""The search space of ltr's Optuna sweeper: Hydra override strings → Optuna distributions.

Every entry of ``hydra.sweeper.params`` and every command-line override of a multirun is one Hydra
override (``key=value``). A sweep value becomes an Optuna distribution, anything else is a fixed
override applied to every trial:

=================================  ==================================================================
override value                     Optuna distribution
=================================  ==================================================================
``interval(a, b)``                 ``FloatDistribution(a, b)`` (Hydra makes ``a``, ``b`` floats)
``int(interval(a, b))``            ``IntDistribution(a, b)``
``tag(log, interval(a, b))``       the same with ``log=True`` (``a > 0``)
``range(start, stop, step)``       ``IntDistribution`` (``FloatDistribution`` for float bounds) over
                                   exactly Hydra's values: ``stop`` is excluded, as in a grid sweep
``choice(x, y, …)``, ``x,y,…``     ``CategoricalDistribution`` (also ``glob(…)``, and ``shuffle(…)``,
                                   whose choices keep their written order)
=================================  ==================================================================

A command-line override replaces the ``params`` entry of the same key (``model.params.num_leaves=31``
fixes a searched parameter; ``a=1,2`` adds a categorical one). A value that cannot be parsed, an
unsupported sweep or tag, or bounds Optuna rejects raise :class:`ltr.core.errors.ConfigError` naming
``hydra.sweeper.params.<key>`` or the command-line override, before any trial runs.

>>> space = parse_search_space(
...     {"lr": "tag(log, interval(0.01, 0.3))", "leaves": "int(interval(8, 255))"}, ["+model=x", "c=a,b"]
... )
>>> {k: type(d).__name__ for k, d in space.distributions.items()}
{'lr': 'FloatDistribution', 'leaves': 'IntDistribution', 'c': 'CategoricalDistribution'}
>>> space.trial_overrides({"lr": 0.05, "leaves": 31, "c": "b"})
['lr=0.05', 'leaves=31', 'c=b', '+model=x']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import IntervalSweep, Override, RangeSweep, Transformer
from hydra.errors import HydraException
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from ltr.core.errors import ConfigError

SUPPORTED_TAGS = frozenset({"log"})


@dataclass(frozen=True)
class SearchSpace:
    """What one trial varies (``distributions``, in suggestion order) and what it always applies.

    ``fixed`` maps each key to its override exactly as written (``+model=lambdamart``, ``~key``).
    """

    distributions: dict[str, BaseDistribution]
    fixed: dict[str, str]

    def trial_overrides(self, values: Mapping[str, Any]) -> list[str]:
        """The Hydra overrides of one trial: the suggested ``key=value`` first, then the fixed ones."""
        return [f"{key}={values[key]}" for key in self.distributions] + list(self.fixed.values())


def parse_search_space(
    params: Mapping[str, Any] | None, arguments: Sequence[str], *, config_loader: Any = None
) -> SearchSpace:
    """The search space of ``hydra.sweeper.params`` followed by the multirun's command-line ``arguments``.

    ``config_loader`` (Hydra's) lets ``glob(…)`` list config-group options; without it ``glob`` fails.
    """
    parser = OverridesParser.create(config_loader=config_loader)
    entries: list[tuple[str, str]] = [
        (f"hydra.sweeper.params.{key}", f"{key}={value}") for key, value in (params or {}).items()
    ]
    entries += [(f"command-line override '{arg}'", arg) for arg in arguments]
    distributions: dict[str, BaseDistribution] = {}
    fixed: dict[str, str] = {}
    for where, text in entries:
        override = _parse(parser, text, where)
        key = override.get_key_element()
        if override.is_sweep_override():
            fixed.pop(key, None)
            distributions[key] = distribution_of(override, where)
        else:
            distributions.pop(key, None)
            fixed[key] = override.input_line or text
    return SearchSpace(distributions=distributions, fixed=fixed)


def _parse(parser: OverridesParser, text: str, where: str) -> Override:
    try:
        (override,) = parser.parse_overrides([text])  # (also hands glob() the config loader)
        return override
    except HydraException as exc:  # OverrideParseException and grammar-function errors
        raise ConfigError(f"{where}: cannot parse {text!r}: {exc}") from exc


def distribution_of(override: Override, where: str) -> BaseDistribution:
    """The Optuna distribution of one sweep override (see the module table); ``where`` names it in errors."""
    value = override.value()
    tags = set(getattr(value, "tags", ()) or ())
    try:
        if isinstance(value, IntervalSweep):
            _check_tags(tags, SUPPORTED_TAGS, where)
            log = "log" in tags
            if isinstance(value.start, int) and isinstance(value.end, int):
                return IntDistribution(value.start, value.end, log=log)
            return FloatDistribution(float(value.start), float(value.end), log=log)
        _check_tags(tags, frozenset(), where)
        if getattr(value, "shuffle", False):  # a sampler picks in any order: keep the written one
            override = dataclasses.replace(override, _value=dataclasses.replace(value, shuffle=False))
        elif isinstance(value, RangeSweep):
            return _range_distribution(list(override.sweep_iterator()), value, where)
        choices = list(override.sweep_iterator(transformer=Transformer.encode))
    except (ValueError, TypeError, HydraException) as exc:
        raise ConfigError(f"{where}: {override.input_line!r} is not a valid search space: {exc}") from exc
    if not choices:
        raise ConfigError(f"{where}: {override.input_line!r} has no values to choose from")
    return CategoricalDistribution(choices)


def _range_distribution(values: list[Any], sweep: RangeSweep, where: str) -> BaseDistribution:
    """Hydra's ``range`` values as an ordered Optuna distribution with the same step."""
    if not values:
        raise ConfigError(f"{where}: range({sweep.start}, {sweep.stop}, {sweep.step}) is empty")
    step = abs(sweep.step)
    if all(isinstance(v, int) for v in values):
        return IntDistribution(min(values), max(values), step=int(step))
    return FloatDistribution(float(min(values)), float(max(values)), step=float(step))


def _check_tags(tags: Iterable[str], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(tags) - allowed)
    if unknown:
        accepted = ", ".join(sorted(allowed)) or "none here"
        raise ConfigError(f"{where}: unsupported tag(s) {unknown} (accepted: {accepted})")
