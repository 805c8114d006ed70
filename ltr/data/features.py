"""Feature selection: which columns of a dataset a run uses (``data.features``), resolved once.

A data config may hold a ``features`` block::

    features:
      names: conf/features.txt          # optional: line N is the name of feature N (1-based)
      groups:                           # optional: group name -> ids, ranges or feature names
        informative: ["1-12"]
        noise: ["23:42"]
      include: [informative, 43]        # optional: only these (default: every feature)
      exclude: [noise, bm25]            # optional: never these

An *item* of ``include``/``exclude``/a group is a 1-based feature id (``7``), an inclusive id range
(``"1-10"`` or ``"11:20"``), a feature name from the ``names`` file, or (in ``include``/``exclude``)
a group name. The kept ids are, in ascending order::

    kept = (⋃ include items, or every id 1..n_features when include is empty) − (⋃ exclude items)

so ``exclude`` wins over ``include`` (``include: [informative], exclude: [3]`` keeps 1, 2, 4..12). An
``include`` item every feature of which is excluded is an error (it would select nothing, which is
never meant), and so is an empty result, an id outside ``1..n_features``, an unknown name (with the
closest names), a range running backwards, a group or feature name used twice.

The names file is UTF-8 text, one name per line: line N names feature N. A name has no whitespace,
is not a number or range (those are ids), and appears once; blank lines are not allowed (every line
is a feature). Errors name the file and line.

:func:`resolve_features` is the one function that turns the block into the kept ids;
:func:`select_features` cuts the loaded splits to them (each split records its
:class:`~ltr.data.dataset.FeatureSelection`, so a model trained on it scores full-width rows too).

>>> resolve_features({"groups": {"a": ["1-3"], "b": [5, "7:8"]}, "exclude": ["a", 8]}, 8)
[4, 5, 6, 7]
>>> resolve_features({"include": ["2-4"], "exclude": [3]}, 8)
[2, 4]
>>> resolve_features({"include": [9]}, 8)
Traceback (most recent call last):
...
ltr.core.errors.ConfigError: data.features.include[0]: feature id 9 is outside 1..8 (the data has 8 features)
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ltr.core.config_check import check_block, plain
from ltr.core.errors import ConfigError, DataError
from ltr.data.dataset import FeatureSelection, RankingData

WHERE = "data.features"
_RANGE = re.compile(r"^\s*(\d+)\s*[-:]\s*(\d+)\s*$")
_NUMBER = re.compile(r"^\s*[-+]?\d+\s*$")


@dataclass
class FeaturesSchema:
    """``data.features``: ``names`` (a names file), ``groups``, ``include``, ``exclude`` (all optional)."""

    names: str | None = None
    groups: dict[str, Any] = field(default_factory=dict)
    include: list[Any] = field(default_factory=list)
    exclude: list[Any] = field(default_factory=list)


def is_selection(block: Any) -> bool:
    """Whether a ``data.features`` block selects anything (an ``include`` or ``exclude`` item).

    >>> is_selection(None), is_selection({"groups": {"a": [1]}}), is_selection({"exclude": ["a"]})
    (False, False, True)
    """
    given = plain(block) or {}
    return bool(given.get("include") or given.get("exclude"))


def read_names(path: str | os.PathLike[str]) -> list[str]:
    """The feature names of a names file (line N = feature N), checked; errors name ``file:line``.

    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "names.txt"
    >>> _ = f.write_text("bm25\\ntf idf\\n")
    >>> read_names(f)
    Traceback (most recent call last):
    ...
    ltr.core.errors.ConfigError: ...names.txt:2: a feature name has no whitespace, got 'tf idf' (one name per line; line N names feature N)
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8").removeprefix("\ufeff")
    except FileNotFoundError:
        raise ConfigError(f"{WHERE}.names: file not found: {file}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file}: byte {exc.start} is not UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"{WHERE}.names: cannot read {file} ({exc.strerror or exc})") from None
    rule = "(one name per line; line N names feature N)"
    names: list[str] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        name = line.strip()
        if not name:
            raise ConfigError(f"{file}:{lineno}: an empty line; every line names a feature {rule}")
        if any(c.isspace() for c in name):
            raise ConfigError(f"{file}:{lineno}: a feature name has no whitespace, got {name!r} {rule}")
        if _NUMBER.match(name) or _RANGE.match(name):
            raise ConfigError(f"{file}:{lineno}: {name!r} reads as a feature id or range, not a name {rule}")
        if name in seen:
            raise ConfigError(f"{file}:{lineno}: feature name {name!r} again (first on line {seen[name]})")
        seen[name] = lineno
        names.append(name)
    if not names:
        raise ConfigError(f"{file}: no feature names {rule}")
    return names


class _Resolver:
    """Turns items (ids, ranges, names, group names) into sets of 1-based ids, naming the item's path."""

    def __init__(self, n_features: int, names: list[str], groups: dict[str, Any]) -> None:
        self.n_features = n_features
        self.names = {name: i + 1 for i, name in enumerate(names)}
        self.has_names = bool(names)
        self.groups: dict[str, set[int]] = {}
        for group, items in groups.items():
            where = f"{WHERE}.groups.{group}"
            if group in self.names:
                raise ConfigError(f"{where}: {group!r} is also a feature name; give the group another name")
            if _NUMBER.match(str(group)) or _RANGE.match(str(group)):
                raise ConfigError(f"{where}: a group name is not a feature id or range, got {group!r}")
            if not isinstance(items, list | tuple) or not items:
                raise ConfigError(
                    f"{where}: expected a non-empty list of ids, ranges or names, got {items!r}"
                )
            self.groups[str(group)] = set().union(
                *(self.item(item, f"{where}[{i}]", groups=False) for i, item in enumerate(items))
            )

    def item(self, item: Any, where: str, *, groups: bool = True) -> set[int]:
        if isinstance(item, bool | np.bool_):
            raise ConfigError(f"{where}: expected a feature id, range or name, got {item!r}")
        if isinstance(item, int | np.integer):
            return {self._id(int(item), where)}
        if not isinstance(item, str):
            raise ConfigError(f"{where}: expected a feature id, range or name, got {item!r}")
        if _NUMBER.match(item):
            return {self._id(int(item), where)}
        match = _RANGE.match(item)
        if match:
            low, high = int(match.group(1)), int(match.group(2))
            if low > high:
                raise ConfigError(f"{where}: range {item!r} runs backwards; write {high}-{low}")
            self._id(low, where), self._id(high, where)
            return set(range(low, high + 1))
        if groups and item in self.groups:
            return set(self.groups[item])
        if item in self.names:
            return {self._id(self.names[item], where)}
        known = list(self.names) + (list(self.groups) if groups else [])
        close = difflib.get_close_matches(item, known, n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        if not known:
            hint = f" (no {WHERE}.names file and no {WHERE}.groups to look it up in)"
        elif not self.has_names:
            hint += f" (feature names need a {WHERE}.names file)"
        what = "feature or group name" if groups else "feature name"
        raise ConfigError(f"{where}: unknown {what} {item!r}{hint}")

    def _id(self, fid: int, where: str) -> int:
        if not 1 <= fid <= self.n_features:
            raise ConfigError(
                f"{where}: feature id {fid} is outside 1..{self.n_features} (the data has {self.n_features} features)"
            )
        return fid


def check_features_block(block: Any) -> dict[str, Any]:
    """The ``data.features`` block checked by :class:`FeaturesSchema` (defaults filled)."""
    cfg = check_block(FeaturesSchema, plain(block) or {}, WHERE)
    if cfg["names"]:
        read_names(cfg["names"])  # a bad names file fails here, used or not
    return cfg


def resolve_features(block: Any, n_features: int) -> list[int]:
    """The kept 1-based feature ids, ascending, of a ``data.features`` block over ``n_features`` columns.

    Rule (module docstring): ``(include items, or all) − exclude items``; an include item wholly
    excluded, or nothing left, is a :class:`ConfigError` explaining which rules collide.

    >>> resolve_features({}, 3)
    [1, 2, 3]
    >>> resolve_features({"include": ["1-2"], "exclude": ["1:2"]}, 3)
    Traceback (most recent call last):
    ...
    ltr.core.errors.ConfigError: data.features.include[0]: every feature it selects ('1-2': 1, 2) is removed by data.features.exclude[0] ('1:2'); exclude wins over include, so this item selects nothing: drop it from one of the lists
    """
    cfg = check_features_block(block)
    names = read_names(cfg["names"]) if cfg["names"] else []
    if len(names) > n_features:
        raise ConfigError(
            f"{WHERE}.names: {cfg['names']} names {len(names)} features but the data has {n_features}"
        )
    resolver = _Resolver(n_features, names, cfg["groups"])
    included = [
        (i, item, resolver.item(item, f"{WHERE}.include[{i}]")) for i, item in enumerate(cfg["include"])
    ]
    excluded = [
        (i, item, resolver.item(item, f"{WHERE}.exclude[{i}]")) for i, item in enumerate(cfg["exclude"])
    ]
    removed = set().union(*(ids for _, _, ids in excluded))
    for i, item, ids in included:
        if ids <= removed:
            by = [f"{WHERE}.exclude[{j}] ({other!r})" for j, other, out in excluded if out & ids]
            shown = ", ".join(map(str, sorted(ids)[:8])) + (", …" if len(ids) > 8 else "")
            raise ConfigError(
                f"{WHERE}.include[{i}]: every feature it selects ({item!r}: {shown}) is removed by "
                f"{', '.join(by)}; exclude wins over include, so this item selects nothing: drop it from one of the lists"
            )
    kept = set().union(*(ids for _, _, ids in included)) if included else set(range(1, n_features + 1))
    kept -= removed
    if not kept:
        raise ConfigError(
            f"{WHERE}: no feature left ({WHERE}.exclude removes all {n_features} features); keep at least one"
        )
    return sorted(kept)


def id_ranges(ids: Any) -> str:
    """Ascending ids written as ranges, the way ``include``/``exclude`` take them.

    >>> id_ranges([1, 2, 3, 5, 7, 8])
    '1-3, 5, 7-8'
    """
    parts: list[str] = []
    ids = sorted(int(i) for i in ids)
    start = prev = ids[0] if ids else 0
    for i in ids[1:] + [None]:  # type: ignore[list-item]
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ", ".join(parts) if ids else ""


def feature_names(block: Any) -> list[str]:
    """The names of the ``names`` file of a ``data.features`` block (empty without one)."""
    cfg = check_features_block(block)
    return read_names(cfg["names"]) if cfg["names"] else []


def select_features(splits: Mapping[str, RankingData], block: Any) -> dict[str, RankingData]:
    """``splits`` cut to the columns a ``data.features`` block keeps (unchanged without a selection).

    Every split must have the same width (a :class:`DataError` otherwise: set ``n_features``). Each
    selected split records its :class:`FeatureSelection` (the kept 1-based ids and the original
    width), which a model trained on it keeps and applies to full-width rows.

    >>> d = RankingData(X=np.arange(8.0).reshape(2, 4), y=[1, 0], qid=[1, 1])
    >>> out = select_features({"train": d}, {"exclude": ["2-3"]})["train"]
    >>> out.X.tolist(), out.features.ids
    ([[0.0, 3.0], [4.0, 7.0]], (1, 4))
    """
    if not is_selection(block) or not splits:
        return dict(splits)
    widths = {name: d.n_features for name, d in splits.items()}
    if len(set(widths.values())) > 1:
        raise DataError(
            f"{WHERE}: the splits have different widths ({', '.join(f'{k} {v}' for k, v in widths.items())}); "
            "set data.n_features (or data.parse.n_features) so the feature ids mean the same columns"
        )
    n_features = next(iter(widths.values()))
    ids = resolve_features(block, n_features)
    if len(ids) == n_features:
        return dict(splits)
    names = feature_names(block)
    selection = FeatureSelection(
        ids=tuple(ids),
        n_features=n_features,
        names=tuple(names[i - 1] if i <= len(names) else f"f{i}" for i in ids) if names else None,
    )
    return {name: d.with_features(selection) for name, d in splits.items()}
