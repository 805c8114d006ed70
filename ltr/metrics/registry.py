"""The one registry of metric names: ``ndcg@10``, ``err@10``, ``map``, ``map@100``, ``p@5``, ``mrr``…

The families themselves (formula, relevance kind, computation) are the modules of
:mod:`ltr.metrics.families`. A metric name is ``<family>`` or ``<family>@<k>`` with k a positive integer; no ``@k`` means the whole
ranked list. :func:`parse_metric` turns a name into a :class:`MetricSpec`; an unknown name raises
:class:`~ltr.core.errors.MetricError` listing every registered family, so the error message is never a
stale hand-kept list. :func:`metric_key` gives the MLflow-safe form (``@`` → ``_at_``).

Example
-------
>>> parse_metric("NDCG@10")
MetricSpec(family='ndcg', k=10)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ltr.core.errors import MetricError
from ltr.metrics.families import FAMILIES, MetricFamily

#: The live registry: canonical family name -> family.
REGISTRY: dict[str, MetricFamily] = {f.name: f for f in FAMILIES}
_LOOKUP: dict[str, MetricFamily] = {a: f for f in FAMILIES for a in (f.name, *f.aliases)}
_NAME = re.compile(r"^\s*([A-Za-z_]+)\s*(?:@\s*(\d+))?\s*$")


@dataclass(frozen=True)
class MetricSpec:
    """A parsed metric name: ``family`` (canonical) and cutoff ``k`` (None = whole list)."""

    family: str
    k: int | None

    @property
    def name(self) -> str:
        """Canonical name, e.g. ``ndcg@10`` or ``map``."""
        return self.family if self.k is None else f"{self.family}@{self.k}"

    @property
    def binary(self) -> bool:
        """True for metrics over binary relevance (AP, RR, P, R)."""
        return REGISTRY[self.family].binary


def registry_listing() -> str:
    """One line per registered family, for error messages.

    >>> registry_listing().splitlines()[0]
    'ndcg[@k]: DCG@k / IDCG@k'
    """
    lines = []
    for f in REGISTRY.values():
        alias = f" (also {', '.join(f.aliases)})" if f.aliases else ""
        lines.append(f"{f.name}[@k]{alias}: {f.formula}")
    return "\n".join(lines)


def parse_metric(name: str) -> MetricSpec:
    """Parse a metric name such as ``ndcg@10``, ``map``, ``P@5``, ``recall@100``.

    Raises :class:`MetricError` (listing the live registry) for an unknown family or a bad cutoff.

    >>> parse_metric("ndcg@10"), parse_metric("AP").name, parse_metric("mrr").k
    (MetricSpec(family='ndcg', k=10), 'map', None)
    """
    if not isinstance(name, str):
        raise MetricError(f"a metric name must be a string like 'ndcg@10', got {name!r}")
    m = _NAME.match(name)
    family = _LOOKUP.get(m.group(1).lower()) if m else None
    if family is None:
        raise MetricError(
            f"unknown metric {name!r}; metric names are <family> or <family>@<k> with families:\n"
            + registry_listing()
        )
    k = None
    if m.group(2) is not None:
        k = int(m.group(2))
        if k < 1:
            raise MetricError(f"metric {name!r}: the cutoff k must be >= 1")
    return MetricSpec(family.name, k)


def metric_key(name: str) -> str:
    """MLflow-safe metric key: the canonical name with ``@`` replaced by ``_at_``.

    >>> metric_key("ndcg@10"), metric_key("MAP"), metric_key("p@5")
    ('ndcg_at_10', 'map', 'p_at_5')
    """
    return parse_metric(name).name.replace("@", "_at_")
