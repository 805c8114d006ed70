"""Feature names and ordinals of an exported model: a feature map file or ``f1 … fN``.

The engines look features up by name (Elasticsearch/OpenSearch feature sets, Solr feature stores,
Vespa rank features) or by 1-based ordinal (RankLib models). Feature ``j`` of ``ltr`` is column
``j - 1`` of the training matrix and id ``j`` of the SVMlight file (``docs/data.md``), so without a
map the names are ``f1 … fN`` (:func:`default_names`) and the RankLib ordinals are ``j`` itself.

A feature map (``--feature-names FILE``) has one feature per line, in either form (not mixed):

* ``NAME`` — line ``j`` (blank lines and ``#`` comments skipped) names feature ``j``;
* ``ID NAME`` — the 1-based SVMlight id, then the name (a third column, e.g. XGBoost's ``q``, is ignored).

Every feature ``1 … N`` must be named exactly once, names must be unique and free of whitespace.

>>> default_names(3)
['f1', 'f2', 'f3']
"""

from __future__ import annotations

from pathlib import Path

from ltr.core.errors import ConfigError
from ltr.io.textlines import read_lines, split_fields


def default_names(n_features: int) -> list[str]:
    """``f1 … fN``: the pyfunc input's column names and the SVMlight ids."""
    return [f"f{j}" for j in range(1, n_features + 1)]


def read_feature_map(path: str | Path, n_features: int) -> list[str]:
    """The names of features ``1 … n_features`` from a feature map file (module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"--feature-names: no such file {path}")
    entries: list[tuple[int, list[str]]] = []
    for number, line in read_lines(path):
        fields = split_fields(line)
        if fields and not fields[0].startswith("#"):
            entries.append((number, fields))
    with_ids = [len(fields) >= 2 for _, fields in entries]
    if any(with_ids) and not all(with_ids):
        raise ConfigError(f"{path}: mixes 'NAME' lines and 'ID NAME' lines; use one form")
    names: dict[int, str] = {}
    for position, (number, fields) in enumerate(entries, start=1):
        if any(with_ids):
            if not fields[0].isdigit() or int(fields[0]) < 1:
                raise ConfigError(f"{path}:{number}: expected a 1-based feature id, got {fields[0]!r}")
            fid, name = int(fields[0]), fields[1]
        else:
            fid, name = position, fields[0]
        if fid in names:
            raise ConfigError(f"{path}:{number}: feature {fid} is named twice")
        names[fid] = name
    missing = [j for j in range(1, n_features + 1) if j not in names]
    extra = sorted(j for j in names if j > n_features)
    if missing or extra:
        raise ConfigError(
            f"{path}: the model has {n_features} features; "
            + (f"no name for feature(s) {missing[:5]}" if missing else f"ids beyond it: {extra[:5]}")
        )
    ordered = [names[j] for j in range(1, n_features + 1)]
    seen: set[str] = set()
    for j, name in enumerate(ordered, start=1):
        if name in seen:
            raise ConfigError(f"{path}: name {name!r} is used twice (again for feature {j})")
        seen.add(name)
    return ordered
