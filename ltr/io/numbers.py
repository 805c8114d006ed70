"""The one grammar of a number in a text file ``ltr`` reads (score files, qrels, runs, label
probabilities, click logs): plain ASCII decimal or scientific notation, as C's ``strtod`` /
``strtol`` in trec_eval, RankLib and the SVMlight tools read it.

Python's ``float()`` and ``int()`` accept more: digit-group underscores (``1_000``), any Unicode
decimal digit (Arabic-Indic ``٣.٥``, full-width ``３``) and surrounding whitespace. A file holding
such text is read differently (or refused) by every other tool, so ``ltr`` refuses it too: the
callers name the file and line.

``nan``, ``inf`` and ``infinity`` (any case, with a sign) are recognised as numbers so a caller can
say "must be finite" rather than "not a number".

>>> decimal("-1.5e2"), decimal(".5"), decimal("3."), decimal("INF")
(-150.0, 0.5, 3.0, inf)
>>> [decimal(t) for t in ("1_000", "٣.٥", "0x10", " 1", "1e", "")]
[None, None, None, None, None, None]
>>> integer("+7"), integer("-0"), integer("1_0"), integer("３"), integer("2.0")
(7, 0, None, None, None)
"""

from __future__ import annotations

import re

_DECIMAL = re.compile(
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:nan|inf|infinity))\Z"
)
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
#: What a message says a number must look like (after the value it got).
PLAIN_NUMBER = "plain ASCII decimal or scientific notation: digits 0-9, '.', 'e'; no '_', no other digits"
PLAIN_INTEGER = "plain ASCII digits 0-9 with an optional sign"


def decimal(text: str) -> float | None:
    """The value of ``text`` when it is a plain ASCII number (possibly ``nan``/``inf``: check
    finiteness), else ``None``. A magnitude beyond float64 is ``±inf``."""
    return float(text) if _DECIMAL.match(text) else None


def integer(text: str) -> int | None:
    """The value of ``text`` when it is a plain ASCII integer (an optional sign and digits ``0-9``),
    else ``None``."""
    return int(text) if _INTEGER.match(text) else None


def integral(text: str) -> int | None:
    """An integer written as :func:`integer` or as a :func:`decimal` with an integral finite value
    (``2.0``, ``1e3``: what a float column of a CSV holds), else ``None``.

    >>> integral("2.0"), integral("1e3"), integral("2.5"), integral("nan"), integral("٢")
    (2, 1000, None, None, None)
    """
    whole = integer(text)
    if whole is not None:
        return whole
    value = decimal(text)
    if value is None or value != value or value in (float("inf"), float("-inf")) or value != int(value):
        return None
    return int(value)
