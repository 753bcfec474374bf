"""Fetch one registered data file (offline mirror or internet), verified and written atomically.

Example:
    python -m rnnrepro.scripts.fetch_data --corpus ptb --name train.txt \\
        --out results/downloads/ptb/train.txt --mirror /path/to/mirror
"""

from __future__ import annotations

import argparse
import sys

from rnnrepro.data.download import DownloadError, fetch
from rnnrepro.data.sources import apply_overrides


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--name", required=True, help="file name within the corpus, e.g. train.txt")
    parser.add_argument("--out", required=True, help="destination path")
    parser.add_argument(
        "--mirror",
        default=None,
        help="local directory holding the files at their mirror paths ('' = none)",
    )
    parser.add_argument(
        "--sources", default="", help="YAML overriding registry entries (config data_sources)"
    )
    parser.add_argument("--retries", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    args = parser.parse_args(argv)
    try:
        if args.sources:
            apply_overrides(args.sources)
        fetch(
            args.corpus,
            args.name,
            args.out,
            args.mirror or None,
            retries=args.retries,
            timeout=args.timeout,
        )
    # ChecksumError, UnknownSource and UnsafePickleError are ValueErrors
    except (DownloadError, ValueError, OSError) as exc:
        print("fetch_data: error: " + " ".join(str(exc).split()), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
