"""Dataset registry: what each public LETOR dataset looks like on disk, and how to load it.

``load_dataset(data_cfg)`` returns ``{"train": ..., "valid": ..., "test": ...}`` (the splits the
dataset has) for the config group ``conf/data/NAME.yaml``. Every entry knows its file layout per
fold/variant, its feature count and label range, and loads with those as strict parse options, so
an index above the feature count or a label outside the range is an error naming ``file:line``,
and a missing file is an error that says how to fetch or where to put the data.

>>> sorted(REGISTRY)[:3]
['istella', 'mq2007', 'mq2008']
>>> REGISTRY["mslr_web30k"].files({"fold": 2})
{'train': 'Fold2/train.txt', 'valid': 'Fold2/vali.txt', 'test': 'Fold2/test.txt'}
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ltr.core.config_check import check_block, check_field, plain
from ltr.core.errors import ConfigError, DataError
from ltr.data._syntax import ParseOptions, check_huge_fits, check_label_range
from ltr.data.config import (
    ISTELLA_VARIANTS,
    PARSE_KEYS,
    IstellaDataSchema,
    LetorDataSchema,
    check_data_block,
    schema_for,
)
from ltr.data.dataset import RankingData
from ltr.data.features import check_features_block, is_selection, resolve_features, select_features
from ltr.data.splits import cv_folds
from ltr.data.svmlight import load_svmlight
from ltr.data.synthetic import LABEL_RANGE as SYNTHETIC_LABEL_RANGE
from ltr.data.synthetic import N_FEATURES as SYNTHETIC_WIDTH
from ltr.data.synthetic import SPLIT_FILES, load_synthetic

SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class Download:
    """A public archive: where it is, its sha256, and the sha256 of files inside it (when published)."""

    url: str
    sha256: str
    archive: str  # "zip" or "tar.gz"
    files: Mapping[str, str] = field(default_factory=dict)  # relative path -> sha256


@dataclass(frozen=True)
class DatasetSpec:
    """One registry entry."""

    name: str
    title: str
    folder: str  # default folder name under paths.data_dir
    n_features: int
    label_range: tuple[int, int]
    layout: Callable[[Mapping[str, Any]], dict[str, str]]
    homepage: str
    download: Download | None = None
    manual: str | None = None  # where to get license-gated data
    notes: str = ""

    def files(self, cfg: Mapping[str, Any]) -> dict[str, str]:
        """Relative path of each split's file for this config (fold / variant)."""
        return self.layout(cfg)


def _fold(cfg: Mapping[str, Any], name: str) -> int:
    """``data.fold``: the LETOR fold (:class:`~ltr.data.config.LetorDataSchema`: 1..5, default 1).

    ``all`` or a list names several folds, which no single load returns: :mod:`ltr.experiment.folds` loads them
    one by one (``python -m ltr.train ... data.fold=all``).
    """
    fold = check_field(LetorDataSchema, "fold", cfg, "data")
    if not isinstance(fold, int):
        raise ConfigError(
            f"data.fold={fold}: several folds are a fold protocol, loaded one fold at a time; "
            f"run it with python -m ltr.train +model=NAME data={name} data.fold={fold} "
            "(or load one fold, e.g. data.fold=1)"
        )
    return fold


def _letor_folds(name: str) -> Callable[[Mapping[str, Any]], dict[str, str]]:
    def layout(cfg: Mapping[str, Any]) -> dict[str, str]:
        k = _fold(cfg, name)
        return {"train": f"Fold{k}/train.txt", "valid": f"Fold{k}/vali.txt", "test": f"Fold{k}/test.txt"}

    return layout


def _yahoo(which: int) -> Callable[[Mapping[str, Any]], dict[str, str]]:
    def layout(cfg: Mapping[str, Any]) -> dict[str, str]:
        return {s: f"set{which}.{s}.txt" for s in SPLITS}

    return layout


def _istella(cfg: Mapping[str, Any]) -> dict[str, str]:
    return dict(ISTELLA_VARIANTS[check_field(IstellaDataSchema, "variant", cfg, "data")])


# sha256 values as published with the pytorchltr dataset loaders (rjagerman/pytorchltr): per fold
# (train, vali, test). MSLR's folds rotate five parts S1..S5, so each vali/test file recurs.
def _fold_files(per_fold: dict[int, tuple[str, str, str]]) -> dict[str, str]:
    out = {}
    for k, (train, vali, test) in per_fold.items():
        out.update({f"Fold{k}/train.txt": train, f"Fold{k}/vali.txt": vali, f"Fold{k}/test.txt": test})
    return out


_M10 = {
    "S1": "6eb3fae4e1186e1242a6520f53a98abdbcde5b926dd19a28e51239284b1d55dc",  # Fold1 train
    "T1": "33fe002374a4fce58c4e12863e4eee74745d5672a26f3e4ddacc20ccfe7d6ba0",
    "T2": "44add582ccd674cf63af24d3bf6e1074e87a678db77f00b44c37980a3010917a",
    "T3": "c0a5a3c6bd7790d0b4ff3d5e961d0c8c5f8ff149089ce492540fa63035801b7a",
    "T4": "dc6083c24a5f0c03df3c91ad3eed7542694115b998acf046e51432cb7a22b848",
    "T5": "e86fb3fe7e8a5f16479da7ce04f783ae85735f17f66016786c3ffc797dd9d4db",
}
_MSLR10K_FILES = _fold_files(
    {
        1: (_M10["S1"], _M10["T5"], _M10["T1"]),
        2: ("40e4a2fcc237d9c164cbb6a3f2fa91fe6cf7d46a419d2f73e21cf090285659eb", _M10["T1"], _M10["T2"]),
        3: ("f13005ceb8de0db76c93b02ee4b2bded6f925097d3ab7938931e8d07aa72acd7", _M10["T2"], _M10["T3"]),
        4: ("6c1677cf9b2ed491e26ac6b8c8ca7dfae9c1a375e2bce8cba6df36ab67ce5836", _M10["T3"], _M10["T4"]),
        5: ("4249797a2f0f46bff279973f0fb055d4a78f67f337769eabd56e82332c044794", _M10["T4"], _M10["T5"]),
    }
)
_M30 = {
    "T1": "9a4668fd2615e6772d2e5c4d558d084b2daaf2405571eaf3e4d0526f4da096c7",
    "T2": "d192c023baebdae148d902d716aeebf3df2f2f1ce5aee12be4f0b8bb76a8c04a",
    "T3": "ba2487a27c21dceea0b9afaadbb6b392d5f652eb0fb8649cbd201bb894c47c12",
    "T4": "a7ba03d708ae6b21556a8a6859d52e37cc0dcb2cbff992c630ef6173bb02122a",
    "T5": "7647834b84c849a61e5cf3c999a2f72a4785613286fd972a5615e9fcb58f94d8",
}
_MSLR30K_FILES = _fold_files(
    {
        1: ("40b8eee4d1221cf8205e81603441c1757dd024a3baac25a47756210b03c031d6", _M30["T5"], _M30["T1"]),
        2: ("a6d12dc4cc8c2dd0743b58c49cad12bd0f6f1cbeda54b54a91e5b54e0b96e7ca", _M30["T1"], _M30["T2"]),
        3: ("3d0eb52a6702b2c48750a6de89e757cfac499c8ec1d38e3843cb531c059f2f74", _M30["T2"], _M30["T3"]),
        4: ("21e389656be3c2bfe92eb4fb898d2f30dc24990fc524aada7471b949f176778d", _M30["T3"], _M30["T4"]),
        5: ("a19da1799650b08c0dc3baaec6c590469ef1773148082e1a10b8504f2f5e9a8b", _M30["T4"], _M30["T5"]),
    }
)

_LETOR4_MANUAL = (
    "LETOR 4.0 ({name}) is distributed by Microsoft Research behind a click-through licence: download "
    "{upper}.rar from https://www.microsoft.com/en-us/research/project/letor-learning-rank-information-retrieval/ , "
    "accept the licence, extract it (e.g. `unrar x {upper}.rar`) and put the Fold1..Fold5 folders into {dir}"
)
_YAHOO_MANUAL = (
    "The Yahoo! Learning to Rank Challenge data (C14B) is licence-gated: request it from Yahoo! Webscope "
    "(https://webscope.sandbox.yahoo.com/catalog.php?datatype=c , dataset C14), accept the data agreement, "
    "and put set1.train.txt, set1.valid.txt, set1.test.txt, set2.train.txt, set2.valid.txt and set2.test.txt "
    "into {dir}"
)

REGISTRY: dict[str, DatasetSpec] = {
    "mslr_web10k": DatasetSpec(
        name="mslr_web10k",
        title="Microsoft MSLR-WEB10K (10,000 queries, 5 folds)",
        folder="MSLR-WEB10K",
        n_features=136,
        label_range=(0, 4),
        layout=_letor_folds("mslr_web10k"),
        homepage="https://www.microsoft.com/en-us/research/project/mslr/",
        download=Download(
            url="https://api.onedrive.com/v1.0/shares/s!AtsMfWUz5l8nbOIoJ6Ks0bEMp78/root/content",
            sha256="2902142ea33f18c59414f654212de5063033b707d5c3939556124b1120d3a0ba",
            archive="zip",
            files=_MSLR10K_FILES,
        ),
    ),
    "mslr_web30k": DatasetSpec(
        name="mslr_web30k",
        title="Microsoft MSLR-WEB30K (31,531 queries, 5 folds)",
        folder="MSLR-WEB30K",
        n_features=136,
        label_range=(0, 4),
        layout=_letor_folds("mslr_web30k"),
        homepage="https://www.microsoft.com/en-us/research/project/mslr/",
        download=Download(
            url="https://api.onedrive.com/v1.0/shares/s!AtsMfWUz5l8nbXGPBlwD1rnFdBY/root/content",
            sha256="08cb7977e1d5cbdeb57a9a2537a0923dbca6d46a76db9a6afc69e043c85341ae",
            archive="zip",
            files=_MSLR30K_FILES,
        ),
    ),
    "yahoo_set1": DatasetSpec(
        name="yahoo_set1",
        title="Yahoo! Learning to Rank Challenge, set 1",
        folder="yahoo",
        n_features=700,
        label_range=(0, 4),
        layout=_yahoo(1),
        homepage="https://webscope.sandbox.yahoo.com/catalog.php?datatype=c",
        manual=_YAHOO_MANUAL,
    ),
    "yahoo_set2": DatasetSpec(
        name="yahoo_set2",
        title="Yahoo! Learning to Rank Challenge, set 2",
        folder="yahoo",
        n_features=700,
        label_range=(0, 4),
        layout=_yahoo(2),
        homepage="https://webscope.sandbox.yahoo.com/catalog.php?datatype=c",
        manual=_YAHOO_MANUAL,
    ),
    "istella": DatasetSpec(
        name="istella",
        title="Istella LETOR (variant full / s / x)",
        folder="istella",
        n_features=220,
        label_range=(0, 4),
        layout=_istella,
        homepage="http://quickrank.isti.cnr.it/istella-dataset/",
        notes="feature values include 1.79e308 sentinels: choose parse.nonfinite (missing / keep / clip)",
    ),
    "mq2007": DatasetSpec(
        name="mq2007",
        title="LETOR 4.0 MQ2007 (5 folds)",
        folder="MQ2007",
        n_features=46,
        label_range=(0, 2),
        layout=_letor_folds("mq2007"),
        homepage="https://www.microsoft.com/en-us/research/project/letor-learning-rank-information-retrieval/",
        manual=_LETOR4_MANUAL,
    ),
    "mq2008": DatasetSpec(
        name="mq2008",
        title="LETOR 4.0 MQ2008 (5 folds)",
        folder="MQ2008",
        n_features=46,
        label_range=(0, 2),
        layout=_letor_folds("mq2008"),
        homepage="https://www.microsoft.com/en-us/research/project/letor-learning-rank-information-retrieval/",
        manual=_LETOR4_MANUAL,
    ),
}

ISTELLA_DOWNLOADS = {
    "full": Download(
        url="http://library.istella.it/dataset/istella-letor.tar.gz",
        sha256="d45899d9a6a0e48afb250aac7ee3dc50e73e263687f15761d754515cd8284e0b",
        archive="tar.gz",
        files={
            "full/train.txt": "8b08ca4c36281e408bfa026303461a6162398a1eec22fb79db0709c76bf6d189",
            "full/test.txt": "4b34523af8e030718f0216bcae0a35caee1e34e5198ff3e76c08a75db61aac65",
        },
    ),
    "s": Download(
        url="http://library.istella.it/dataset/istella-s-letor.tar.gz",
        sha256="41b21116a3650cc043dbe16f02ee39f4467f9405b37fdbcc9a6a05e230a38981",
        archive="tar.gz",
        files={
            "sample/train.txt": "5cda4187b88b597ca6fa98d6cd3a6d7551ba69ffff700eae63a59fbc8af385b8",
            "sample/test.txt": "2cd1a4f46fa21ea2489073979b5e5913146d1e451f1d6e268bc4e472d39da5d7",
            "sample/vali.txt": "f225dd95772fa65dc685351ff2643945fbd9a9c0e874aa1c538d485595e7c890",
        },
    ),
    "x": Download(
        url="http://quickrank.isti.cnr.it/istella-datasets-mirror/istella-X.tar.gz",
        sha256="e67be60d1c6a68983a669e4de9df2c395914717b2017cb3b68a97eb89f2ea763",
        archive="tar.gz",
        files={
            "train.txt": "710378b3536a2156ae0747f0683e2e811e992e7a12014408ff93fbb1ea5a3340",
            "test.txt": "c2b808bae0ccbc40df9519b6a3906a297c8207eb273304c22d506a8612fa9eef",
            "vali.txt": "9de516e2e0dfd0e0a29cf4b233df8e22f2b547f260f7881c7dc1c7237101ee7e",
        },
    ),
}


def download_for(name: str, cfg: Mapping[str, Any] | None = None) -> Download | None:
    """The archive to fetch for an entry (Istella: per variant), or None for manual/gated data."""
    spec = get_spec(name)
    if name == "istella":
        return ISTELLA_DOWNLOADS[check_field(IstellaDataSchema, "variant", cfg or {}, "data")]
    return spec.download


def get_spec(name: str) -> DatasetSpec:
    """The registry entry called ``name``; an unknown name suggests the close ones and lists the registry."""
    try:
        return REGISTRY[name]
    except KeyError:
        if _normal(name) in ("synthetic", "svmlight"):
            raise ConfigError(
                f"{name!r} is not a registry dataset (nothing to fetch or locate): synthetic is generated on "
                "first use, svmlight is your own files; registry datasets: " + ", ".join(REGISTRY)
            ) from None
        known = ", ".join(["synthetic", "svmlight", *sorted(REGISTRY)])
        raise ConfigError(f"unknown dataset {name!r}; known datasets: {known}{_did_you_mean(name)}") from None


#: What ``python -m ltr.data list`` lists, in its order: the datasets one names (``synthetic`` and the
#: registry's) and ``svmlight``, the kind of your own files (named by their paths, never by a name).
LISTED = ("synthetic", "svmlight", *REGISTRY)


def _normal(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def dataset_name(text: str) -> str | None:
    """The listed name ``text`` spells (:data:`LISTED`): as listed, or differing only in case or ``-``
    for ``_`` (``MQ2008``, ``MSLR-WEB10K``); ``None`` when it spells none.

    The one name resolution of every command that takes a dataset name (``ltr.evaluate --data``,
    ``ltr.data info/convert/fetch``).

    >>> dataset_name("MQ2008"), dataset_name("mslr-web10k"), dataset_name("Synthetic"), dataset_name("mq2008x")
    ('mq2008', 'mslr_web10k', 'synthetic', None)
    """
    wanted = _normal(text)
    return next((name for name in LISTED if name == wanted), None)


def unknown_dataset(text: str, option: str) -> ConfigError:
    """The error for ``option text`` (``option`` empty: a positional argument) that is neither a file nor a
    listed name: the close names, then all.

    >>> str(unknown_dataset("mq2008x", "--data"))
    "--data mq2008x: no such file, nor a dataset name (did you mean 'mq2008' or 'mq2007'?); datasets: synthetic, ..."
    """
    return ConfigError(
        f"{option + ' ' if option else ''}{text}: no such file, nor a dataset name{_did_you_mean(text)}; "
        f"datasets: {_known()} "
        "(python -m ltr.data list); a file of your own: its path"
    )


def _did_you_mean(text: str) -> str:
    close = difflib.get_close_matches(_normal(text), [n for n in LISTED if n != "svmlight"], n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""


def _known() -> str:
    return ", ".join(n for n in LISTED if n != "svmlight")


def registry_config(
    name: str,
    *,
    data_dir: str | Path,
    directory: str | Path | None = None,
    fold: int | None = None,
    variant: str | None = None,
    split: str | None = None,
) -> dict[str, Any]:
    """The data config of registry dataset ``name`` as a command line names it (``--fold``, ``--variant``,
    ``--dir``, ``--split``): an option the dataset does not have is refused, naming the datasets that have
    it, rather than ignored. Errors name the config keys (``data.fold``); a command respells them.

    >>> registry_config("mq2008", data_dir="data", fold=2, split="test")["fold"]
    2
    >>> registry_config("yahoo_set1", data_dir="data", fold=2)
    Traceback (most recent call last):
    ...
    ltr.core.errors.ConfigError: data.fold: yahoo_set1 has no folds; the datasets with folds: mslr_web10k, mslr_web30k, mq2007, mq2008
    """
    spec = get_spec(name)
    schema = schema_for(name)
    accepted = {f.name for f in fields(schema)} if schema is not None else set()
    cfg: dict[str, Any] = {"kind": name, "dir": str(directory or default_dir(name, data_dir))}
    for key, value, what in (("fold", fold, "folds"), ("variant", variant, "variants")):
        if value is None:
            continue
        if key not in accepted:
            having = [n for n in REGISTRY if key in {f.name for f in fields(schema_for(n) or object)}]
            raise ConfigError(
                f"data.{key}: {name} has no {what}; the datasets with {what}: {', '.join(having)}"
            )
        if key == "fold" and not (isinstance(value, int) and 1 <= value <= 5):  # one fold: no protocol here
            raise ConfigError(f"data.fold: {name} has the folds 1..5, got {value!r}")
        cfg[key] = value
    if split is not None:
        available = list(spec.files(check_data_block(cfg)))
        if split not in available:
            raise ConfigError(f"data.splits: {name} has no {split} split; it has {', '.join(available)}")
        cfg["splits"] = [split]
    return cfg


def default_dir(name: str, data_dir: str | Path = "data") -> Path:
    return Path(data_dir) / get_spec(name).folder


def placement_hint(spec: DatasetSpec, directory: Path) -> str:
    """How to obtain the files of ``spec`` (a fetch command, or the manual instructions)."""
    if spec.manual:
        return spec.manual.format(name=spec.name, upper=spec.name.upper(), dir=directory)
    return f"run `python -m ltr.data fetch {spec.name} --dir {directory}` (or place the files there yourself)"


def _parse_kwargs(section: Mapping[str, Any] | None, where: str) -> dict[str, Any]:
    """load_svmlight keywords from a config section; an option ParseOptions declares is checked here, so
    the error names it as written (``data.parse.density``); the parser checks the others."""
    out: dict[str, Any] = {}
    for key, value in plain(section).items():
        if value is None:  # null: the parser's default (every option is a key of data.parse)
            continue
        if key not in PARSE_KEYS:
            raise ConfigError(f"{where}.{key} is not a parse option; expected one of {', '.join(PARSE_KEYS)}")
        out[key] = value
    declared = {f.name for f in fields(ParseOptions)}
    checked = check_block(
        ParseOptions, {k: v for k, v in out.items() if k in declared and v is not None}, where
    )
    if "huge" in checked:
        check_huge_fits(checked["huge"], checked.get("dtype", ParseOptions.dtype), f"{where}.huge")
    return out | {k: checked[k] for k in out if k in declared and out[k] is not None}


def cache_options(data_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The binary-cache keywords of ``load_svmlight`` a data config sets (``cache_dir``, ``verify_cache``).

    >>> cache_options({"cache_dir": "c"})
    {'cache_dir': 'c', 'verify_cache': False}
    """
    return {"cache_dir": data_cfg.get("cache_dir"), "verify_cache": bool(data_cfg.get("verify_cache", False))}


def _load_files(
    paths: Mapping[str, Path], kwargs: dict[str, Any], data_cfg: Mapping[str, Any], name: str
) -> dict:
    out: dict[str, RankingData] = {}
    for split, path in paths.items():
        out[split] = load_svmlight(path, name=f"{name}/{split}", **cache_options(data_cfg), **kwargs)
    check_split_widths(name, out)
    return out


def check_split_widths(name: str, splits: Mapping[str, Any]) -> None:
    """The splits of one dataset (anything with ``n_features``) must agree on their width: a
    ``DataError`` naming each split's otherwise.

    >>> from types import SimpleNamespace as S
    >>> check_split_widths("d", {"train": S(n_features=3), "test": S(n_features=4)})
    Traceback (most recent call last):
    ...
    ltr.core.errors.DataError: d: splits have different feature counts {'train': 3, 'test': 4}; set n_features so train/valid/test align
    """
    widths = {s: d.n_features for s, d in splits.items()}
    if len(set(widths.values())) > 1:
        raise DataError(
            f"{name}: splits have different feature counts {widths}; set n_features so train/valid/test align"
        )


def split_files(data_cfg: Mapping[str, Any]) -> dict[str, Path]:
    """The file each split of a data config is read from (absolute), as :func:`load_dataset` reads it.

    What a run records as its datasets' source (:meth:`ltr.tracking.writer.Tracker.log_datasets`). A kind
    whose splits are not one file each, or a fold protocol (``data.fold=all`` or a list), gives ``{}``.

    >>> split_files({"kind": "svmlight", "train": "data/x/train.txt"})["train"].name
    'train.txt'
    >>> [str(p.relative_to(Path.cwd())) for p in split_files({"name": "synthetic", "dir": "d"}).values()]
    ['d/train.txt', 'd/vali.txt', 'd/test.txt']
    """
    kind = data_cfg.get("kind") or data_cfg.get("name")
    if kind == "synthetic":
        files = {s: Path(str(data_cfg.get("dir") or "")) / SPLIT_FILES[s] for s in SPLIT_FILES}
    elif kind == "svmlight" and (data_cfg.get("cv") or {}).get("folds"):  # every fold split comes from train
        files = {s: Path(str(data_cfg["train"])) for s in SPLITS}
    elif kind == "svmlight":
        files = {s: Path(str(data_cfg[s])) for s in SPLITS if data_cfg.get(s)}
    elif kind in REGISTRY and not isinstance(data_cfg.get("fold") or 1, int):  # a fold protocol: no one file
        return {}
    elif kind in REGISTRY:
        spec = REGISTRY[str(kind)]
        directory = Path(str(data_cfg.get("dir") or default_dir(spec.name)))
        files = {s: directory / r for s, r in spec.files(data_cfg).items()}
    else:
        return {}
    return {s: p.resolve() for s, p in files.items()}


def check_cv_inputs(data_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """``data.cv`` of an ``svmlight`` block, checked against the other keys; ``{}`` when cv is off.

    The folds split ``data.train`` alone, so ``data.valid`` / ``data.test`` must be unset and
    ``data.cv.fold`` (one fold) must be at most ``data.cv.folds``.
    """
    cv = check_data_block(data_cfg).get("cv") or {}
    if not cv.get("folds"):
        return {}
    given = [f"data.{s}" for s in ("valid", "test") if data_cfg.get(s)]
    if given:
        raise ConfigError(
            f"data.cv.folds={cv['folds']} splits data.train into train/valid/test folds; "
            f"unset {' and '.join(given)} (e.g. ~{given[0]}) or set data.cv.folds=0"
        )
    if cv.get("fold") is not None and cv["fold"] > cv["folds"]:
        raise ConfigError(f"data.cv.fold: must be in [1, {cv['folds']}] (data.cv.folds), got {cv['fold']}")
    return cv


def single_cv_fold(data_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """``data.cv`` of a config that loads one fold of the k-fold split (:func:`check_cv_inputs`); without
    ``data.cv.fold`` it is the fold protocol, which no single load returns (a ``ConfigError`` says so)."""
    cv = check_cv_inputs(data_cfg)
    if cv.get("fold") is None:
        raise ConfigError(
            f"data.cv.folds={cv['folds']} with no data.cv.fold is the fold protocol, which loads every fold: "
            "run it with python -m ltr.train (ltr.experiment.folds), or load one fold with data.cv.fold=K"
        )
    return cv


def _cv_fold(
    paths: Mapping[str, Path], kwargs: dict[str, Any], data_cfg: Mapping[str, Any], cv: Mapping[str, Any]
) -> dict:
    """One fold (``data.cv.fold``) of the k-fold split of ``data.train`` (:func:`ltr.data.splits.cv_folds`)."""
    cv = single_cv_fold(data_cfg)
    name = str(data_cfg.get("name", "svmlight"))
    data = _load_files({"train": paths["train"]}, kwargs, data_cfg, name)["train"]
    fold = cv_folds(data, int(cv["folds"]), seed=int(cv["seed"]), valid=bool(cv["valid"]))[
        int(cv["fold"]) - 1
    ]
    wanted = data_cfg.get("splits")
    return {s: d for s, d in fold.items() if not wanted or s in wanted}


def declared_label_range(data_cfg: Mapping[str, Any]) -> tuple[float, float] | None:
    """The label scale a data config declares: ``data.label_range`` (``data.parse.label_range``), else
    the registry entry's, else the synthetic generator's; ``None`` for your own files without one
    (the caller infers it from the training labels).

    >>> declared_label_range({"kind": "mq2008"}), declared_label_range({"kind": "synthetic"})
    ((0.0, 2.0), (0.0, 4.0))
    >>> declared_label_range({"kind": "svmlight", "label_range": [1, 5]}), declared_label_range({"kind": "svmlight"})
    ((1.0, 5.0), None)
    """
    cfg = plain(data_cfg)
    kind = str(cfg.get("kind") or cfg.get("name"))
    given = cfg.get("label_range")
    if given is None:
        given = (cfg.get("parse") or {}).get("label_range")
    if given is None:
        given = (
            SYNTHETIC_LABEL_RANGE if kind == "synthetic" else getattr(REGISTRY.get(kind), "label_range", None)
        )
    return check_label_range(given, "data.label_range")


def svmlight_sources(
    data_cfg: Mapping[str, Any], *, every_split: bool = False
) -> tuple[dict[str, str], dict[str, Any]]:
    """For ``kind: svmlight``: the wanted splits' paths as written (``data.train`` …; a glob or a
    directory for data the Dask workers parse; every split's with ``every_split``, as a k-fold split
    of ``data.train`` needs) and the ``load_svmlight`` options of the config."""
    check_data_block(data_cfg)
    paths = {s: str(data_cfg[s]) for s in SPLITS if data_cfg.get(s)}
    if "train" not in paths:
        raise ConfigError("data.train must name the training file for kind 'svmlight'")
    kwargs = _parse_kwargs({k: data_cfg[k] for k in PARSE_KEYS if k in data_cfg}, "data")
    kwargs.update(_parse_kwargs(data_cfg.get("parse"), "data.parse"))
    wanted = data_cfg.get("splits")
    if wanted and not every_split:
        paths = {s: p for s, p in paths.items() if s in wanted}
    return paths, kwargs


def load_dataset(data_cfg: Mapping[str, Any]) -> dict[str, RankingData]:
    """Load the splits of the dataset a ``conf/data/*.yaml`` config describes (:func:`load_all_columns`),
    cut to the columns its ``features`` block keeps (:func:`ltr.data.features.select_features`). When the
    width is known before reading (synthetic, a registry entry, ``n_features`` set) the block is
    resolved first, so a bad selection fails before any file is read."""
    block = data_cfg.get("features")
    check_features_block(block)  # the keys and a names file, selection or not, before any data
    width = declared_width(data_cfg) if is_selection(block) else None
    if width:
        resolve_features(block, width)
    return select_features(load_all_columns(data_cfg), block)


def declared_width(data_cfg: Mapping[str, Any]) -> int | None:
    """The number of feature columns a data config's files have, when the config says it (else ``None``).

    >>> declared_width({"kind": "synthetic"}), declared_width({"kind": "mq2007"}), declared_width({"kind": "svmlight"})
    (46, 46, None)
    """
    kind = str(data_cfg.get("kind") or data_cfg.get("name"))
    if kind == "synthetic":
        return SYNTHETIC_WIDTH
    if kind in REGISTRY:
        return REGISTRY[kind].n_features
    parse = plain(data_cfg.get("parse")) or {}
    width = data_cfg.get("n_features") or parse.get("n_features")
    return int(width) if isinstance(width, int) and not isinstance(width, bool) else None


def load_all_columns(data_cfg: Mapping[str, Any]) -> dict[str, RankingData]:
    """Load the splits of the dataset a ``conf/data/*.yaml`` config describes, every column.

    ``kind`` (default: ``name``) picks the entry: ``synthetic`` (the built-in generator),
    ``svmlight`` (``train``/``valid``/``test`` paths and parse options at top level), or a registry
    entry (``dir``, ``fold`` or ``variant``, optional ``parse:`` overrides). ``cache_dir`` (optional)
    reads through the binary cache (``verify_cache``: keyed on every byte). ``splits`` (optional) restricts which splits are loaded. The keys
    are first checked against the kind's schema (:mod:`ltr.data.config`; paths may be ``os.PathLike``).
    """
    kind = data_cfg.get("kind") or data_cfg.get("name")
    if kind == "synthetic":
        return load_synthetic(data_cfg)
    check_data_block(data_cfg)  # a misspelt key or a wrong type fails here, before any file is read
    wanted = data_cfg.get("splits")
    if kind == "svmlight":
        sources, kwargs = svmlight_sources(data_cfg, every_split=True)
        paths = {s: Path(p) for s, p in sources.items()}
        cv = plain(data_cfg.get("cv")) or {}
        if int(cv.get("folds") or 0):
            return _cv_fold(paths, kwargs, data_cfg, cv)
        if wanted:
            paths = {s: p for s, p in paths.items() if s in wanted}
        return _load_files(paths, kwargs, data_cfg, str(data_cfg.get("name", "svmlight")))
    spec, paths, kwargs = registry_sources(data_cfg)
    return _load_files(paths, kwargs, data_cfg, spec.name)


def registry_sources(data_cfg: Mapping[str, Any]) -> tuple[DatasetSpec, dict[str, Path], dict[str, Any]]:
    """For a registry dataset: its entry, the file of each wanted split (``dir`` + the fold's or
    variant's layout, restricted to ``data.splits``) and the strict ``load_svmlight`` options (the
    entry's ``n_features``, the declared ``label_range``, ``data.parse`` overrides); a missing file is a
    ``DataError`` saying how to obtain the data. What :func:`load_dataset` reads, and what the Dask
    workers parse (:mod:`ltr.distributed.data`)."""
    check_data_block(data_cfg)
    spec = get_spec(str(data_cfg.get("kind") or data_cfg.get("name")))
    wanted = data_cfg.get("splits")
    directory = Path(data_cfg.get("dir") or default_dir(spec.name))
    rel = spec.files(data_cfg)
    if wanted:
        unknown = set(wanted) - set(rel)
        if unknown:
            raise ConfigError(
                f"data.splits {sorted(unknown)} do not exist for {spec.name}; it has {list(rel)}"
            )
        rel = {s: r for s, r in rel.items() if s in wanted}
    kwargs = {"n_features": spec.n_features, "label_range": declared_label_range(data_cfg)}
    kwargs.update(_parse_kwargs(data_cfg.get("parse"), "data.parse"))
    if kwargs["n_features"] != spec.n_features:
        raise ConfigError(
            f"data.parse.n_features: {spec.name} has {spec.n_features} features, got {kwargs['n_features']}"
        )
    paths = {s: directory / r for s, r in rel.items()}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        raise DataError(
            f"{spec.name}: expected file(s) not found: {', '.join(missing)}. {placement_hint(spec, directory)}"
        )
    return spec, paths, kwargs
