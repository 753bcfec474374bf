"""Split Linzen's agreement data set into an LM corpus and test dependencies (memory Table 2).

Example:
    python -m rnnrepro.scripts.prepare_linzen --deps agr_50_mostcommon_10K.tsv.gz \\
        --out-dir results/data/linzen

Writes ``{train,val,test}.txt`` (one sentence per line: the training task reads them as a
stream, each line then ``<eos>``), ``vocab.txt`` (``<eos>``, ``<unk>``, then the training
words; val/test words outside it become ``<unk>``) and ``agreement.tsv`` (every test dependency,
for ``evaluate_agreement --dependencies``). ``--train-lines`` / ``--eval-lines`` keep the first N
training / validation and test sentences (reduced scales); the test dependencies are all kept.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rnnrepro.data import linzen, text

UNK = "<unk>"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deps", required=True, help="agr_50_mostcommon_10K.tsv(.gz)")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--train-lines", type=int, help="keep the first N training sentences")
    parser.add_argument("--eval-lines", type=int, help="keep the first N val/test sentences")
    args = parser.parse_args(argv)

    parts = linzen.split(linzen.read_dependencies(args.deps))
    train = text.head(linzen.sentences(parts.train), args.train_lines)
    vocab = text.build_vocab(train, specials=(text.EOS, UNK))
    known = set(vocab)
    splits = {"train": train}
    for name, rows in (("val", parts.val), ("test", parts.test)):
        splits[name] = [
            [w if w in known else UNK for w in s]
            for s in text.head(linzen.sentences(rows), args.eval_lines)
        ]
    text.write_dataset(args.out_dir, splits, vocab)
    linzen.write_dependencies(parts.test, Path(args.out_dir) / "agreement.tsv")
    print(
        f"{args.out_dir}: {len(parts.train)} / {len(parts.val)} / {len(parts.test)} "
        f"dependencies (train / val / test); {sum(map(len, train))} training tokens; "
        f"vocabulary {len(vocab)}"
    )


if __name__ == "__main__":
    main()
