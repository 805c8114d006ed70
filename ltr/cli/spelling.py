"""The spelling of options in the user's interface.

Library messages name an option as the Python API spells it (``load with zero_based=True``); a
command rewrites that to its own spelling (:class:`Spelling`, :func:`spelled_as`, :func:`respell`) —
``data.zero_based=true`` on the Hydra command line (``data.parse.`` for a registry dataset),
``--zero-based`` in ``python -m ltr.data``.

>>> respell("x.txt:3: feature index 0; load with zero_based=True if the file is 0-based",
...         Spelling.hydra({"zero_based": "data."}))
'x.txt:3: feature index 0; load with data.zero_based=true if the file is 0-based'
>>> respell("choose a policy: nonfinite='keep' or nonfinite='clip'", Spelling.flags({"nonfinite", "zero_based"}))
'choose a policy: --nonfinite keep or --nonfinite clip'
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ltr.core.errors import LtrError
from ltr.data.config import PARSE_KEYS, SvmlightDataSchema
from ltr.metrics.conventions import Conventions


@dataclasses.dataclass(frozen=True)
class Spelling:
    """How one interface writes the option ``name=value`` that a library message names in Python spelling.

    ``style`` is ``"python"`` (unchanged), ``"hydra"`` (``prefix + name=value`` with YAML values:
    ``true``, ``null``, ``[0, 4]``; ``prefixes`` maps each option name to its config path prefix) or
    ``"flags"`` (``--name-with-dashes value``; ``True`` → the bare flag, ``False`` → ``--no-name``;
    ``prefixes`` lists the options the command has flags for). Options not in ``prefixes`` stay as written.

    ``renamed`` (flags only) maps a name a library message uses — a Python argument or a config key such
    as ``n_bootstrap`` or ``data.fold`` — to the command's flag when that is not the name with dashes
    (``--bootstrap``, ``--fold``).
    """

    style: str
    prefixes: Mapping[str, str]
    renamed: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @classmethod
    def hydra(cls, prefixes: Mapping[str, str]) -> Spelling:
        return cls("hydra", dict(prefixes))

    @classmethod
    def flags(cls, names: Iterable[str], renamed: Mapping[str, str] | None = None) -> Spelling:
        """``--name-with-dashes`` for each of ``names``; ``renamed``: other names → their flag.

        >>> respell("data.fold: expected a fold 1..5, got 9", Spelling.flags((), {"data.fold": "--fold"}))
        '--fold: expected a fold 1..5, got 9'
        >>> respell("n_bootstrap=1 is too few", Spelling.flags((), {"n_bootstrap": "--bootstrap"}))
        '--bootstrap 1 is too few'
        """
        return cls("flags", dict.fromkeys(names, "--"), dict(renamed or {}))

    def key(self, name: str) -> str:
        """The option's name alone, as a message that starts ``name: ...`` names it.

        >>> Spelling.hydra({"huge": "data.parse."}).key("huge"), Spelling.flags({"n_features"}).key("n_features")
        ('data.parse.huge', '--n-features')
        """
        if name in self.renamed:
            return self.renamed[name]
        return self.prefixes[name] + (name if self.style == "hydra" else name.replace("_", "-"))

    def spell(self, name: str, value: Any) -> str:
        """``name=value`` in this interface's spelling.

        >>> Spelling.hydra({"label_range": "data."}).spell("label_range", (0, 4))
        'data.label_range=[0, 4]'
        >>> Spelling.flags({"label_range"}).spell("label_range", (0, 4)), Spelling.flags({"regroup"}).spell("regroup", False)
        ('--label-range 0 4', '--no-regroup')
        """
        if self.style == "hydra":
            return f"{self.prefixes[name]}{name}={_yaml(value)}"
        flag = self.key(name)
        if value is True:
            return flag
        if value is False:
            return "--no-" + name.replace("_", "-")
        if isinstance(value, list | tuple):
            return f"{flag} {' '.join(_yaml(v) for v in value)}"
        return f"{flag} {_yaml(value)}"


_VALUE = r"True|False|None|'[^']*'|\"[^\"]*\"|\([^()]*\)|\[[^\[\]]*\]|[-+]?[\w.]+"


def respell(text: str, spelling: Spelling | None) -> str:
    """``text`` with every ``name=value`` of an option in ``spelling.prefixes`` written in that spelling, and
    a leading ``name:`` (a checker's message about the option) as the option's name.

    >>> respell("n_features: must be in [0, inf], got -1", Spelling.flags({"n_features"}))
    '--n-features: must be in [0, inf], got -1'
    """
    if spelling is None or spelling.style == "python" or not (spelling.prefixes or spelling.renamed):
        return text
    names = "|".join(sorted(map(re.escape, {*spelling.prefixes, *spelling.renamed}), key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w.\-])({names})=({_VALUE})")
    text = re.sub(rf"^({names}):", lambda m: spelling.key(m.group(1)) + ":", text)

    def replace(match: re.Match[str]) -> str:
        try:
            value = ast.literal_eval(match.group(2))
        except (ValueError, SyntaxError):
            value = match.group(2)  # a bare word: already the value's spelling
        return spelling.spell(match.group(1), value)

    return pattern.sub(replace, text)


def _yaml(value: Any) -> str:
    if value is True or value is False:
        return str(value).lower()
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    return str(value)


@contextlib.contextmanager
def spelled_as(spelling: Spelling | None) -> Iterator[None]:
    """Re-raise an :class:`~ltr.core.errors.LtrError` from the body with its options in ``spelling`` (same class)."""
    try:
        yield
    except LtrError as exc:
        text = respell(str(exc), spelling)
        if text != str(exc):
            exc.args = (text,)
        raise


def config_spelling(data_cfg: Mapping[str, Any] | None) -> Spelling:
    """The Hydra spelling of a run's options: parse options under ``data.`` where the data schema declares
    them (your own ``svmlight`` files: ``zero_based``, ``nonfinite``, ...), else under ``data.parse.``;
    ``verify_cache`` under ``data.``; metric conventions under ``eval.conventions.``.

    >>> svmlight, mq2008 = config_spelling({"kind": "svmlight"}), config_spelling({"kind": "mq2008"})
    >>> svmlight.spell("zero_based", True), svmlight.spell("docid", True), mq2008.spell("zero_based", True)
    ('data.zero_based=true', 'data.parse.docid=true', 'data.parse.zero_based=true')
    """
    kind = str((data_cfg or {}).get("kind") or (data_cfg or {}).get("name") or "")
    top_level = {f.name for f in dataclasses.fields(SvmlightDataSchema)} if kind == "svmlight" else set()
    prefixes = {f.name: "eval.conventions." for f in dataclasses.fields(Conventions)}
    prefixes |= {key: "data." if key in top_level else "data.parse." for key in PARSE_KEYS}
    return Spelling.hydra(prefixes | {"verify_cache": "data."})
