"""The SVMlight parse options as command-line flags, one definition for every command that reads a
LETOR file (``python -m ltr.data info/convert``, ``python -m ltr.evaluate --data FILE``).

A parse error advises an option in Python spelling (``load with zero_based=True``); a command that
offers the flag respells it (:mod:`ltr.cli.spelling`: ``--zero-based``), so the advice is one the user
can follow in the command they are in.

>>> import argparse
>>> p = argparse.ArgumentParser()
>>> add_parse_flags(p, ("zero_based", "nonfinite", "integer_labels"))
>>> parse_options(p.parse_args(["--zero-based", "--no-integer-labels"]), ("zero_based", "nonfinite", "integer_labels"))
{'zero_based': True, 'integer_labels': False}
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ltr.cli.numbers import integer_option, real_option

#: every parse option with a flag (``zero_based`` → ``--zero-based``), in the order of ``--help``
PARSE_FLAGS = (
    "n_features",
    "zero_based",
    "allow_unsorted",
    "nonfinite",
    "label_range",
    "integer_labels",
    "allow_negative_labels",
    "regroup",
)


def add_parse_flags(parser: argparse.ArgumentParser | Any, names: Sequence[str] = PARSE_FLAGS) -> None:
    """Add the flags of the parse options ``names`` (a subset of :data:`PARSE_FLAGS`) to ``parser``
    (or an argument group)."""
    flags: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
        "n_features": ((), {"type": integer_option}),
        "zero_based": ((), {"action": "store_true", "help": "feature indices start at 0"}),
        "allow_unsorted": ((), {"action": "store_true", "help": "accept feature indices out of order"}),
        "nonfinite": ((), {"choices": ["error", "keep", "missing", "clip"], "help": "NaN/inf/huge values"}),
        "label_range": ((), {"type": real_option, "nargs": 2, "metavar": ("LO", "HI")}),
        "integer_labels": (
            (),
            {
                "action": argparse.BooleanOptionalAction,
                "default": None,
                "help": "--no-integer-labels accepts real-valued labels",
            },
        ),
        "allow_negative_labels": ((), {"action": "store_true"}),
        "regroup": ((), {"action": "store_true", "help": "gather the rows of a qid split into blocks"}),
    }
    for name in names:
        _, options = flags[name]
        parser.add_argument("--" + name.replace("_", "-"), **options)


def parse_options(args: argparse.Namespace, names: Sequence[str] = PARSE_FLAGS) -> dict[str, Any]:
    """The ``load_svmlight`` keywords the flags set; a flag left out keeps the parser's default."""
    opts: dict[str, Any] = {}
    for name in names:
        value = getattr(args, name)
        if name == "integer_labels":
            if value is False:
                opts[name] = False
        elif value is not None and value is not False:
            opts[name] = tuple(value) if name == "label_range" else value
    return opts


def given_parse_flags(args: argparse.Namespace, names: Sequence[str] = PARSE_FLAGS) -> list[str]:
    """The flags of ``names`` given on the command line, as spelled there (for "no effect" errors)."""
    return ["--" + n.replace("_", "-") for n in names if getattr(args, n) not in (None, False)]
