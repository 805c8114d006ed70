"""The ``--data FILE|NAME`` options every command over LETOR data shares (``ltr.evaluate``, ``ltr.explain``).

``--data`` is a LETOR/SVMlight file (parse flags as in ``python -m ltr.data info``, but no ``--regroup``:
rows are read in file order) or a dataset name as ``python -m ltr.data list`` shows it (any case; a close
miss suggests the name; :func:`letor_source`) with ``--split`` (default ``test``), ``--fold`` /
``--variant`` and ``--dir`` as in ``python -m ltr.data``; ``synthetic`` is the built-in data's files
(generated with the defaults on first use, as ``python -m ltr.train`` does). An option the data does not
have is refused, naming both options. :func:`letor_source` resolves what ``--data`` names before anything
is read (every file of a dataset, so a command can refuse an output over any of them);
:func:`read_letor` reads it, with errors in these flags' spelling.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ltr.cli.numbers import integer_option
from ltr.cli.parse_flags import PARSE_FLAGS, add_parse_flags, parse_options
from ltr.cli.spelling import Spelling, spelled_as
from ltr.core.config_check import check_block
from ltr.core.errors import ConfigError, DataError
from ltr.core.resources import work_root
from ltr.data import RankingData
from ltr.data.config import SyntheticDataSchema
from ltr.data.registry import dataset_name, load_dataset, registry_config, split_files, unknown_dataset
from ltr.data.svmlight import load_svmlight
from ltr.data.synthetic import N_FEATURES as N_SYNTHETIC_FEATURES
from ltr.data.synthetic import SPLIT_FILES as SYNTHETIC_FILES
from ltr.data.synthetic import load_synthetic

SPLITS = ("train", "valid", "test")
#: the options of a registry dataset (each refused with a file)
DATASET_OPTIONS = ("split", "fold", "variant", "dir", "data_dir")
#: the parse options these commands have flags for: all but ``--regroup`` (the rows are scored in file
#: order, and ``--scores`` files follow it) and ``--n-features`` (a model's width sets it)
PARSE_OPTIONS = tuple(name for name in PARSE_FLAGS if name not in ("regroup", "n_features"))
#: how these commands spell the options a library message names: parse options, data config keys
DATA_FLAGS = Spelling.flags(
    PARSE_OPTIONS,
    {"data.fold": "--fold", "data.variant": "--variant", "data.dir": "--dir", "data.splits": "--split"},
)
#: the parser's advice for a query split into blocks, and what these commands say instead (no
#: --regroup: the rows are read in file order, and --scores files follow that order)
REGROUP_ADVICE = (
    "(regroup them, or load with regroup=True)",
    "(sort the file's rows by query, and its --scores with them: rows are read in file order)",
)


def add_letor_options(parser: argparse.ArgumentParser, group: Any, *, data_help: str | None = None) -> None:
    """``--data``, ``--split``, ``--fold``, ``--variant``, ``--dir``, ``--data-dir`` on ``group``, and the
    parse flags of ``--data`` in a group of their own on ``parser``."""
    group.add_argument(
        "--data",
        help=data_help or "an SVMlight/LETOR file, or a registry dataset name (see python -m ltr.data list)",
    )
    group.add_argument("--split", choices=SPLITS, help="split of a registry dataset (default: test)")
    group.add_argument("--fold", type=integer_option, help="fold of a registry dataset (MSLR, LETOR 4.0)")
    group.add_argument("--variant", help="variant of a registry dataset (istella)")
    group.add_argument("--dir", help="dataset folder (default: <data-dir>/<registry folder>)")
    group.add_argument(
        "--data-dir", help="where registry datasets live (default: data/ under the working directory)"
    )
    add_parse_flags(
        parser.add_argument_group("parse options of --data (as in python -m ltr.data info)"), PARSE_OPTIONS
    )


@dataclass(frozen=True)
class LetorSource:
    """What ``--data`` names, resolved before anything is read: ``dataset`` (a listed name, ``None`` for
    a file), ``path`` (the file of the split read), ``files`` (every file of the dataset: inputs an
    output must not overwrite) and ``cfg`` (a registry dataset's data config)."""

    dataset: str | None
    path: Path
    files: tuple[Path, ...]
    cfg: dict[str, Any] | None = None


def _is_path(text: str) -> bool:
    return "/" in text or os.sep in text or bool(os.altsep and os.altsep in text)


def letor_source(args: argparse.Namespace) -> LetorSource:
    """Resolve ``--data``: a dataset name as ``python -m ltr.data list`` shows it
    (:func:`ltr.data.registry.dataset_name`: ``MQ2008`` is ``mq2008``; a close miss suggests the name) or
    a file (a path with a folder, ``./mq2008``, is always a file). Options the named data does not have
    (``--split``/``--fold``/``--variant``/``--dir``/``--data-dir`` with a file, ``--fold`` with a dataset
    without folds) are refused, naming both options."""
    text = str(args.data)
    name = None if _is_path(text) else dataset_name(text)
    if name == "svmlight":
        raise ConfigError(
            "--data svmlight: svmlight is the kind of your own files; give a file's path to --data"
        )
    if name is None:
        path = Path(text)
        if path.is_dir():
            raise ConfigError(
                f"--data {text}: is a folder; give an SVMlight/LETOR file, or a dataset name with --dir FOLDER"
            )
        if not path.is_file():
            raise (
                unknown_dataset(text, "--data")
                if not _is_path(text)
                else ConfigError(f"--data {text}: no such file")
            )
        for flag in DATASET_OPTIONS:
            if getattr(args, flag) is not None:
                raise ConfigError(
                    f"--{flag.replace('_', '-')} applies to a registry dataset named by --data (python -m ltr.data list); "
                    f"--data {text} is a file"
                )
        return LetorSource(None, path, (path,))
    split = args.split or "test"
    data_dir = Path(args.data_dir) if args.data_dir is not None else work_root() / "data"
    if name == "synthetic":
        for flag, what in (("fold", "folds"), ("variant", "variants")):
            if getattr(args, flag) is not None:
                raise ConfigError(f"--{flag}: synthetic has no {what}")
        folder = Path(args.dir or data_dir / "synthetic")
        return LetorSource(
            name, folder / SYNTHETIC_FILES[split], tuple(folder / f for f in SYNTHETIC_FILES.values())
        )
    with spelled_as(DATA_FLAGS):
        cfg = registry_config(
            name, data_dir=data_dir, directory=args.dir, fold=args.fold, variant=args.variant, split=split
        )
    every = split_files({k: v for k, v in cfg.items() if k != "splits"})
    return LetorSource(name, every[split], tuple(every.values()), cfg | {"parse": {"docid": True}})


def read_letor(
    args: argparse.Namespace, source: LetorSource, n_features: int | None, *, dtype: str | None = None
) -> RankingData:
    """The rows ``source`` (:func:`letor_source` of ``args``) names, with the parse flags of ``args``:
    a registry dataset's split (``synthetic`` included: the files ``python -m ltr.train`` generated, as they
    are; generated with the defaults on first use), or a file (row order = file order), ``n_features``
    columns when given. ``dtype``: the models' ``input_dtype``, as ``python -m ltr.train`` parsed their
    training files (synthetic files: float32, as it reads them). Errors advise these commands' flags."""
    parse = parse_options(args, PARSE_OPTIONS)
    if dtype is not None and source.dataset != "synthetic":
        parse["dtype"] = dtype
    with spelled_as(DATA_FLAGS):
        try:
            return _read(source, args.split or "test", n_features, parse)
        except DataError as exc:
            if REGROUP_ADVICE[0] in str(exc):
                raise DataError(str(exc).replace(*REGROUP_ADVICE)) from None
            raise


def _read(source: LetorSource, split: str, n_features: int | None, parse: dict[str, Any]) -> RankingData:
    if source.dataset == "synthetic":
        if not source.path.is_file():  # first use, as `python -m ltr.train` would: the generator's defaults
            load_synthetic(check_block(SyntheticDataSchema, {"dir": str(source.path.parent)}, "data"))
        return load_svmlight(source.path, docid=True, n_features=n_features or N_SYNTHETIC_FEATURES, **parse)
    if source.cfg is not None:
        return load_dataset(source.cfg | {"parse": source.cfg["parse"] | parse})[split]
    return load_svmlight(source.path, docid=True, n_features=n_features, **parse)
