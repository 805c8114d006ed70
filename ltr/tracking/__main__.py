"""``python -m ltr.tracking import-fallback STORE --to URI``: bring the runs of a fallback store home."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from ltr.core.errors import LtrError
from ltr.tracking.fallback import import_fallback
from ltr.tracking.store import mask_secrets
from ltr.tracking.writer import FALLBACK_DB


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ltr.tracking import-fallback STORE --to URI``: bring runs of a fallback store home."""

    parser = argparse.ArgumentParser(prog="python -m ltr.tracking", description=main.__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    imp = commands.add_parser("import-fallback", help="copy the runs of a fallback store to a tracking URI")
    imp.add_argument("store", help=f"the fallback SQLite file the run printed (<root>/{FALLBACK_DB})")
    imp.add_argument("--to", dest="target", required=True, help="tracking URI to import into")
    args = parser.parse_args(argv)
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)  # retries: the error line says it
    try:
        pairs = import_fallback(args.store, args.target)
    except LtrError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for old, new in pairs:
        print(f"imported run {old} as run {new}")
    print(f"{len(pairs)} run(s) imported into {mask_secrets(args.target)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
