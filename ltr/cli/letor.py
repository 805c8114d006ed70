"""The ``--data FILE|NAME`` options every command over LETOR data shares (``ltr.evaluate``, ``ltr.explain``).

``--data`` is an SVMlight/LETOR file, or a registry dataset name with ``--split`` (default ``test``),
``--fold`` / ``--variant`` and ``--dir`` as in ``python -m ltr.data``; ``synthetic`` is the built-in
data's files (generated with the defaults on first use, as ``python -m ltr.train`` does). Rows keep
the file's order; :func:`letor_source` also names the file they come from, so a command can point at
its lines (:func:`ltr.io.textlines.record_line_numbers`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ltr.core.config_check import check_block
from ltr.core.errors import ConfigError
from ltr.core.resources import work_root
from ltr.data import RankingData
from ltr.data.config import SyntheticDataSchema
from ltr.data.registry import REGISTRY, default_dir, load_dataset, split_files
from ltr.data.svmlight import load_svmlight
from ltr.data.synthetic import N_FEATURES as N_SYNTHETIC_FEATURES
from ltr.data.synthetic import SPLIT_FILES as SYNTHETIC_FILES
from ltr.data.synthetic import load_synthetic

SPLITS = ("train", "valid", "test")


def add_letor_options(group: Any, *, data_help: str | None = None) -> None:
    """``--data``, ``--split``, ``--fold``, ``--variant``, ``--dir``, ``--data-dir`` on an argparse group."""
    group.add_argument(
        "--data",
        help=data_help or "an SVMlight/LETOR file, or a registry dataset name (see python -m ltr.data list)",
    )
    group.add_argument(
        "--split", choices=SPLITS, default="test", help="split of a registry dataset (default: test)"
    )
    group.add_argument("--fold", type=int, help="fold of a registry dataset (MSLR, LETOR 4.0)")
    group.add_argument("--variant", help="variant of a registry dataset (istella)")
    group.add_argument("--dir", help="dataset folder (default: <data-dir>/<registry folder>)")
    group.add_argument("--data-dir", default=str(work_root() / "data"))


@dataclass(frozen=True)
class LetorSource:
    """What ``--data`` names: the file its rows come from and how to read them (``n_features`` or None)."""

    path: Path
    read: Callable[[int | None], RankingData]


def letor_source(args: argparse.Namespace) -> LetorSource:
    """The data ``--data`` names (module docstring); nothing is read yet."""
    if args.data == "synthetic" and not Path(args.data).exists():
        folder = Path(args.dir or Path(args.data_dir) / "synthetic")
        path = folder / SYNTHETIC_FILES[args.split]

        def read_synthetic(n_features: int | None) -> RankingData:
            if not path.is_file():  # first use, as `python -m ltr.train` would: the generator's defaults
                load_synthetic(check_block(SyntheticDataSchema, {"dir": str(folder)}, "data"))
            return load_svmlight(path, docid=True, n_features=n_features or N_SYNTHETIC_FEATURES)

        return LetorSource(path, read_synthetic)
    if args.data in REGISTRY:
        cfg: dict[str, Any] = {
            "kind": args.data,
            "dir": args.dir or str(default_dir(args.data, args.data_dir)),
            "splits": [args.split],
            "parse": {"docid": True},
        }
        if args.fold is not None:
            cfg["fold"] = args.fold
        if args.variant is not None:
            cfg["variant"] = args.variant
        path = split_files(cfg).get(args.split, Path(cfg["dir"]))
        return LetorSource(path, lambda n_features: load_dataset(cfg)[args.split])
    for flag in ("fold", "variant", "dir"):
        if getattr(args, flag) is not None:
            raise ConfigError(f"--{flag} applies to a registry dataset; --data {args.data} is a file")
    return LetorSource(
        Path(args.data), lambda n_features: load_svmlight(args.data, docid=True, n_features=n_features)
    )


def load_letor(args: argparse.Namespace, n_features: int | None) -> RankingData:
    """The rows ``--data`` names (:func:`letor_source`), parsed with ``n_features`` columns when given."""
    return letor_source(args).read(n_features)
