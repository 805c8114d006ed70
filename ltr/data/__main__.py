"""``python -m ltr.data``: inspect, convert, generate and fetch ranking data.

    python -m ltr.data info PATH|NAME [--fold K] [--variant V] [--dir DIR] [--json]
    python -m ltr.data convert PATH|NAME [--cache-dir DIR] [--verify-cache]  # parse once into the binary cache
    python -m ltr.data synth OUT_DIR (--scale mslr_web30k | --queries N) [--docs-per-query 120]
    python -m ltr.data fetch NAME [--dir DIR] [--variant V] [--url URL --sha256 HEX]
                                  [--max-size SIZE] [--max-member-size SIZE] [--max-ratio R]
    python -m ltr.data list

Parse options for files: --n-features, --zero-based, --allow-unsorted, --nonfinite, --label-range LO HI.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ltr.data._syntax import ParseOptions
from ltr.data.fetch import ExtractLimits, ManualDownload, fetch
from ltr.data.info import format_summary, summarize
from ltr.data.registry import REGISTRY, default_dir, download_for, load_dataset
from ltr.data.svmlight import load_svmlight
from ltr.errors import ConfigError, LtrError
from ltr.resources import work_root


def _parse_opts(args: argparse.Namespace) -> dict:
    opts = {}
    if args.n_features is not None:
        opts["n_features"] = args.n_features
    if args.zero_based:
        opts["zero_based"] = True
    if args.allow_unsorted:
        opts["allow_unsorted"] = True
    if args.nonfinite:
        opts["nonfinite"] = args.nonfinite
    if args.label_range:
        opts["label_range"] = tuple(args.label_range)
    return opts


def _load(target: str, args: argparse.Namespace, cache_dir: str | None) -> dict:
    """A path → {"file": data}; a registry name → its splits."""
    if target in REGISTRY:
        cfg = {
            "kind": target,
            "dir": args.dir or str(default_dir(target, args.data_dir)),
            "cache_dir": cache_dir,
            "verify_cache": args.verify_cache,
        }
        if args.fold is not None:
            cfg["fold"] = args.fold
        if args.variant is not None:
            cfg["variant"] = args.variant
        if args.nonfinite:
            cfg["parse"] = {"nonfinite": args.nonfinite}
        return load_dataset(cfg)
    return {
        "file": load_svmlight(target, cache_dir=cache_dir, verify_cache=args.verify_cache, **_parse_opts(args))
    }


def cmd_info(args: argparse.Namespace) -> int:
    loaded = _load(args.target, args, args.cache_dir)
    summaries = {split: summarize(d) for split, d in loaded.items()}
    if args.json:
        print(json.dumps(summaries, indent=1))
    else:
        print("\n".join(format_summary(s) for s in summaries.values()))
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    # deferred: its numba checksum; only convert caches
    from ltr.data.cache import cache_key, entry_dir, user_cache_dir

    t = time.perf_counter()
    loaded = _load(args.target, args, args.cache_dir)
    took = time.perf_counter() - t
    for split, d in loaded.items():
        print(f"{split}: {d!r}")
    print(f"cached ({took:.2f} s incl. parsing when the entry was new)")
    if args.target not in loaded and Path(args.target).is_file():
        key, _ = cache_key(Path(args.target), ParseOptions(**_parse_opts(args)), full_hash=args.verify_cache)
        for folder in (Path(args.cache_dir), user_cache_dir()):  # the second when the first is read-only
            if entry_dir(folder, Path(args.target), key).is_dir():
                print(entry_dir(folder, Path(args.target), key))
                break
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    from ltr.data.textgen import write_letor_splits  # deferred: numba kernels, only synth needs them

    sizes = None
    if args.queries is not None:
        v = max(1, args.queries // 6)
        sizes = (
            {"train": args.queries - 2 * v, "valid": v, "test": v} if args.splits else {"train": args.queries}
        )
    t = time.perf_counter()
    out = write_letor_splits(args.out_dir, scale=None if sizes else args.scale, n_queries=sizes,
                             docs_per_query=args.docs_per_query, n_features=args.features,
                             density=args.density, seed=args.seed)  # fmt: skip
    for split, p in out.items():
        print(f"{split}: {p} ({p.stat().st_size / 1e6:,.1f} MB)")
    print(f"written in {time.perf_counter() - t:.1f} s")
    return 0


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_limit(text: str, flag: str) -> float | None:
    """A size (``500G``, ``20M``, ``1024``; binary units) or ratio for ``flag``; ``none`` switches it off.

    >>> parse_limit("2G", "--max-size"), parse_limit("none", "--max-ratio"), parse_limit("50", "--max-ratio")
    (2147483648, None, 50)
    """
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    if t == "NONE":
        return None
    unit = t[-1:] if t[-1:] in _UNITS else ""
    try:
        value = float(t[: len(t) - len(unit)])
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise ConfigError(
            f"{flag} {text}: expected a positive number (sizes may end in K, M, G, T) or 'none'"
        )
    n = value * _UNITS[unit]
    return int(n) if n == int(n) else n


def cmd_fetch(args: argparse.Namespace) -> int:
    limits = ExtractLimits(
        max_total=parse_limit(args.max_size, "--max-size"),
        max_member=parse_limit(args.max_member_size, "--max-member-size"),
        max_ratio=parse_limit(args.max_ratio, "--max-ratio"),
    )
    try:
        files = fetch(args.name, args.dir, data_dir=args.data_dir, variant=args.variant, url=args.url,
                      sha256=args.sha256, limits=limits)  # fmt: skip
    except ManualDownload as how:
        print(f"{args.name} cannot be downloaded automatically.\n{how}")
        return 2
    for p in files:
        print(p)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    print("synthetic        built-in synthetic data (conf/data/synthetic.yaml)")
    print("svmlight         your own files (conf/data/svmlight.yaml)")
    for name, spec in REGISTRY.items():
        how = "fetch" if download_for(name) is not None else "manual (licence-gated)"
        print(f"{name:16} {spec.title}; {spec.n_features} features, labels {spec.label_range}; {how}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ltr.data", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = p.add_subparsers(dest="cmd", required=True)

    def data_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("target", help="an SVMlight file or a registry name (see `list`)")
        sp.add_argument("--fold", type=int)
        sp.add_argument("--variant")
        sp.add_argument("--dir", help="dataset folder (default: <data-dir>/<registry folder>)")
        sp.add_argument("--data-dir", default=str(work_root() / "data"))
        sp.add_argument("--n-features", type=int)
        sp.add_argument("--zero-based", action="store_true")
        sp.add_argument("--allow-unsorted", action="store_true")
        sp.add_argument("--nonfinite", choices=["error", "keep", "missing", "clip"])
        sp.add_argument("--label-range", type=float, nargs=2, metavar=("LO", "HI"))
        sp.add_argument(
            "--verify-cache",
            action="store_true",
            help="key the cache on every byte of the file (for tools that rewrite files keeping size and mtime)",
        )

    info = sub.add_parser("info", help="statistics of a file or dataset")
    data_args(info)
    info.add_argument("--json", action="store_true")
    info.add_argument("--cache-dir")
    info.set_defaults(func=cmd_info)

    conv = sub.add_parser("convert", help="parse into the binary cache")
    data_args(conv)
    conv.add_argument("--cache-dir", default=str(work_root() / "data" / "cache"))
    conv.set_defaults(func=cmd_convert)

    syn = sub.add_parser("synth", help="generate LETOR text at benchmark scale")
    syn.add_argument("out_dir")
    syn.add_argument(
        "--scale", default="tiny", help="tiny | mslr_web10k | mslr_web30k (query counts of a fold)"
    )
    syn.add_argument("--queries", type=int, help="total queries instead of a preset")
    syn.add_argument(
        "--splits", action="store_true", help="with --queries: split 4/6 train, 1/6 valid, 1/6 test"
    )
    syn.add_argument("--docs-per-query", type=int, default=120)
    syn.add_argument("--features", type=int, default=136)
    syn.add_argument("--density", type=float, default=1.0)
    syn.add_argument("--seed", type=int, default=0)
    syn.set_defaults(func=cmd_synth)

    fe = sub.add_parser("fetch", help="download a public dataset (or say where to get a gated one)")
    fe.add_argument("name")
    fe.add_argument("--dir")
    fe.add_argument("--data-dir", default=str(work_root() / "data"))
    fe.add_argument("--variant")
    fe.add_argument("--url", help="a mirror of the archive (needs --sha256)")
    fe.add_argument("--sha256")
    default = ExtractLimits()

    def shown(size: float | None, unit: int = 1 << 30, suffix: str = "G") -> str:
        return "none" if size is None else f"{size / unit:g}{suffix}"

    fe.add_argument("--max-size", default=shown(default.max_total),
                    help="most bytes the archive may unpack to (archive-bomb guard; 'none': no limit)")  # fmt: skip
    fe.add_argument("--max-member-size", default=shown(default.max_member),
                    help="most bytes one file in the archive may unpack to ('none': no limit)")  # fmt: skip
    fe.add_argument("--max-ratio", default=shown(default.max_ratio, 1, ""),
                    help="most decompressed/compressed size ratio above 1 MiB ('none': no limit)")  # fmt: skip
    fe.set_defaults(func=cmd_fetch)

    ls = sub.add_parser("list", help="registry entries")
    ls.set_defaults(func=cmd_list)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except LtrError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2  # bad input: the exit code of every ltr entry point (train, compare, evaluate)


if __name__ == "__main__":
    sys.exit(main())
