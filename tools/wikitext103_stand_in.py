"""Build a stand-in WikiText-103 for runs on a machine without the real corpus.

WikiText-103 (~180 MB zipped) is not in our data mirror and this machine has no internet, so the
cpu-scale Table VII is measured on a stand-in: WikiText-2's training split as the training split
and WikiText-2's validation and test splits (WikiText-103 has the same ones: major_minor, Table I).
This writes a mirror directory (every file of ``--mirror`` linked, plus ``wikitext-103/``) and
a ``data_sources`` file registering the stand-in's sha256 (and no SHA-1). Table VII then says
that its runs did not read the published WikiText-103 (its SHA-1 does not match).

    python tools/wikitext103_stand_in.py --mirror /path/to/mirror --out /tmp/wt103
    snakemake major_minor --config scale=cpu data_mirror=/tmp/wt103/mirror \\
        data_sources=/tmp/wt103/data_sources.yaml
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import shutil
from pathlib import Path

import yaml


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", required=True, help="the data mirror (with wikitext-2/)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    mirror, out = Path(args.mirror), Path(args.out)
    stand_in = out / "mirror"
    stand_in.mkdir(parents=True, exist_ok=True)
    for entry in mirror.iterdir():
        link = stand_in / entry.name
        if not link.exists():
            link.symlink_to(entry.resolve())
    target = stand_in / "wikitext-103"
    target.mkdir(exist_ok=True)
    sources = {}
    for split in ("train", "valid", "test"):
        plain, packed = mirror / f"wikitext-2/{split}.txt", mirror / f"wikitext-2/{split}.txt.gz"
        data = plain.read_bytes() if plain.exists() else gzip.decompress(packed.read_bytes())
        (target / f"{split}.txt").write_bytes(data)
        sources[f"{split}.txt"] = {"sha256": hashlib.sha256(data).hexdigest(), "sha1": None}
    (out / "data_sources.yaml").write_text(yaml.safe_dump({"wikitext103": sources}))
    shutil.copystat(mirror, stand_in)
    print(f"stand-in mirror {stand_in}; data_sources {out / 'data_sources.yaml'}")


if __name__ == "__main__":
    main()
