"""``python -m ltr.train --help``: the page, read from ``conf/`` in milliseconds, before Hydra loads.

Hydra's own ``--help`` composed the whole config and listed every config group by loading each one
(5 CPU-seconds, mostly copying the structured-config store once per group), and it listed groups a
user never picks (``model_base``, the ``*schema`` nodes). This page reads the group folders and the
primary config's defaults list with nothing but the standard library and PyYAML, so it costs what
starting Python costs. ``--hydra-help`` still reaches Hydra; ``--cfg job`` prints the composed config.

>>> page = train_help()
>>> "+model      " in page and "lambdamart" in page and "data=synthetic" in page
True
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Sequence
from pathlib import Path

from ltr.core.resources import config_dir

#: the flags that show this page (Hydra's spellings of its own help)
HELP_FLAGS = ("--help", "-h")

USAGE = "usage: python -m ltr.train +model=NAME [GROUP=OPTION ...] [KEY=VALUE ...] [--multirun]"

SUMMARY = (
    "Train one ranker on the configured data, evaluate it on the validation and test splits with "
    "ltr's metrics (bootstrap CIs), and log the run to MLflow."
)

EXAMPLES = (
    ("train LambdaMART on the built-in synthetic data", "python -m ltr.train +model=lambdamart"),
    (
        "your own LETOR / SVMlight files",
        "python -m ltr.train +model=lambdamart data=svmlight data.train=train.txt "
        "data.valid=vali.txt data.test=test.txt",
    ),
    (
        "a published dataset, every fold",
        "python -m ltr.train +model=lambdamart data=mslr_web10k data.fold=all",
    ),
    (
        "change parameters and metrics",
        "python -m ltr.train +model=lambdamart model.params.learning_rate=0.05 'eval.metrics=[ndcg@10,map]'",
    ),
    ("a grid sweep", "python -m ltr.train -m +model=lambdamart model.params.num_leaves=31,63"),
    ("an Optuna search", "python -m ltr.train -m +model=lambdamart hparams_search=lambdamart_optuna"),
    ("the composed config, every key and default", "python -m ltr.train +model=lambdamart --cfg job"),
    ("Hydra's own flags", "python -m ltr.train --hydra-help"),
)


def help_requested(argv: Sequence[str]) -> bool:
    """Whether the command line asks for this page (``--help`` / ``-h`` anywhere, as Hydra reads it)."""
    return any(arg in HELP_FLAGS for arg in argv)


def config_groups(root: Path | None = None) -> dict[str, list[str]]:
    """Every config group under ``root`` (``conf/``), nested ones as ``a/b``, with its options sorted.

    >>> groups = config_groups()
    >>> "lambdamart" in groups["model"], groups["backend"]
    (True, ['dask', 'local'])
    """
    root = root or config_dir()
    groups: dict[str, list[str]] = {}
    for folder in sorted(p for p in root.rglob("*") if p.is_dir()):
        options = sorted(f.stem for f in folder.glob("*.yaml"))
        if options:
            groups[folder.relative_to(root).as_posix()] = options
    return groups


def default_options(root: Path | None = None) -> dict[str, str]:
    """The option each group takes when none is given: the primary config's ``defaults`` list."""
    import yaml  # deferred: PyYAML only for this page

    primary = yaml.safe_load(((root or config_dir()) / "config.yaml").read_text(encoding="utf-8"))
    chosen: dict[str, str] = {}
    for entry in primary.get("defaults", []):
        if isinstance(entry, dict):
            for group, option in entry.items():
                if option is not None:
                    chosen[str(group)] = str(option)
    return chosen


def train_help(width: int | None = None) -> str:
    """The page: usage, what the command does, the config groups with their defaults, examples."""
    width = max(60, min(width or shutil.get_terminal_size((100, 24)).columns, 120))
    groups, defaults = config_groups(), default_options()
    labels = {"model": "+model"}  # no default: appended with +
    label_width = max(len(labels.get(g, g)) for g in groups) + 2
    lines = [
        USAGE,
        "",
        *textwrap.wrap(SUMMARY, width),
        "",
        "Config groups (GROUP=OPTION; conf/<group>/*.yaml):",
    ]
    for group, options in groups.items():
        default = defaults.get(group)
        listed = ", ".join(options) + (f"  (default: {group}={default})" if default else "")
        label = f"  {labels.get(group, group):<{label_width}}"
        lines += textwrap.wrap(
            listed, width, initial_indent=label, subsequent_indent=" " * len(label), break_on_hyphens=False
        )
    lines += ["", "Examples:"]
    for what, command in EXAMPLES:
        lines += [f"  {what}:", f"    {command}"]
    lines += ["", "More: docs/experiments.md (runs, sweeps), docs/models.md, docs/data.md, docs/metrics.md."]
    return "\n".join(lines) + "\n"
