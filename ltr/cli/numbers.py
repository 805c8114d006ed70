"""Numbers given as command-line options, read with the grammar of numbers in files (:mod:`ltr.io.numbers`),
and a parser whose usage errors are one line (:class:`OneLineParser`).

argparse's ``type=int`` / ``type=float`` are Python's ``int()`` / ``float()``, which accept ``1_000`` and
any Unicode digit (``--bootstrap ٣``); these types accept plain ASCII only, so an option and a file agree
on what a number is. A bad value is argparse's usage error (exit status 2) naming the option.

>>> integer_option("200"), real_option("0.95"), real_option("1e-3")
(200, 0.95, 0.001)
>>> integer_option("1_000")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: expected an integer (plain ASCII digits 0-9 with an optional sign), got '1_000'
"""

from __future__ import annotations

import argparse
from typing import NoReturn

from ltr.io.numbers import PLAIN_INTEGER, PLAIN_NUMBER, decimal, integer


def integer_option(text: str) -> int:
    """An ``int`` option (``type=integer_option``)."""
    value = integer(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"expected an integer ({PLAIN_INTEGER}), got {text!r}")
    return value


def real_option(text: str) -> float:
    """A ``float`` option (``type=real_option``); ``nan``/``inf`` pass here, the option's range check names them."""
    value = decimal(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"expected a number ({PLAIN_NUMBER}), got {text!r}")
    return value


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors (a bad number, an unknown choice, a missing option) are one
    ``error:`` line naming the option and pointing at ``--help``, exit status 2, as every other user error
    of the command (:mod:`ltr.cli.running`), instead of argparse's usage block. Subcommands inherit it.

    >>> OneLineParser(prog="python -m ltr.x").format_usage().startswith("usage: python -m ltr.x")
    True
    """

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")
