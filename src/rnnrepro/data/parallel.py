"""Parallel text for translation (major_minor §V-D4): the generated stand-in corpus of the
reduced scales, WMT's SGML test sets, a joint subword vocabulary (sentencepiece in BPE mode),
the prepared pair files and BLEU (sacrebleu; Moses tokenization by sacremoses).

A prepared split is a TSV file of BPE pieces, ``source pieces<TAB>target pieces`` a line; a
test set also has ``<name>.ref``, its raw reference sentences for BLEU. Lines end at ``\n``
alone and pieces are separated by single spaces: a raw corpus line may hold a ``\r``, and a
piece may be other whitespace (sentencepiece keeps U+0085 as a piece), which Python's default
line reading and ``str.split()`` would take for separators.

The stand-in: source sentences of words ``s<i>`` drawn with Zipf frequencies; the target is a
deterministic function of the source, each word mapped to ``t<π(i)>`` (a fixed permutation) and
every block of three words reversed (local reordering). A model that attends learns it exactly
(BLEU near 100); one that does not stays near 0.
"""

from __future__ import annotations

import html
import json
import random
import re
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path

# sentencepiece's special ids: <pad> first, so that index 0 pads as everywhere else here
SPECIAL_IDS = {"pad_id": 0, "bos_id": 1, "eos_id": 2, "unk_id": 3}
REORDER_BLOCK = 3


def stand_in_target(source: Sequence[str], mapping: dict[str, str]) -> list[str]:
    """The stand-in's translation of ``source``: mapped word by word, each block of
    ``REORDER_BLOCK`` words reversed."""
    mapped = [mapping[word] for word in source]
    return [
        word
        for start in range(0, len(mapped), REORDER_BLOCK)
        for word in reversed(mapped[start : start + REORDER_BLOCK])
    ]


def stand_in_pairs(
    sentences: int, seed: int, words: int = 200, min_length: int = 4, max_length: int = 16
) -> list[tuple[str, str]]:
    """``sentences`` (source, target) pairs of the stand-in, from a generator seeded with
    ``seed``; the word mapping depends on ``words`` only (every split shares it)."""
    permutation = list(range(words))
    random.Random(f"mapping{words}").shuffle(permutation)
    mapping = {f"s{i}": f"t{permutation[i]}" for i in range(words)}
    rng = random.Random(seed)
    weights = [1 / (rank + 1) for rank in range(words)]
    pairs = []
    for _ in range(sentences):
        length = rng.randint(min_length, max_length)
        source = [f"s{i}" for i in rng.choices(range(words), weights, k=length)]
        pairs.append((" ".join(source), " ".join(stand_in_target(source, mapping))))
    return pairs


def train_bpe(texts: Iterable[str], vocab_size: int) -> bytes:
    """A joint BPE model of ``vocab_size`` subwords over ``texts`` (source and target lines),
    as the bytes of its file: deterministic (one thread, no sampling of the input) and the
    same bytes for the same texts (trained from an iterator into memory, so that no file name
    is recorded in it)."""
    import io

    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(list(texts)),
        model_writer=model,
        vocab_size=vocab_size,
        model_type="bpe",
        character_coverage=1.0,
        num_threads=1,
        shuffle_input_sentence=False,
        hard_vocab_limit=False,  # a tiny corpus (the smoke scale's) may have fewer pieces
        minloglevel=2,
        **SPECIAL_IDS,
    )
    return model.getvalue()


def remake(path: str | Path) -> str:
    """How to remake a damaged prepared file: the rule that wrote it, forced."""
    return (
        f"Remake it: snakemake {path} --force --cores 1, with the --directory and --config of "
        "the run that made it (the same corpus gives the same files)"
    )


def load_bpe(path: str | Path):
    """The sentencepiece processor of a prepared ``bpe.model``; a damaged file is a ValueError
    naming it and the command that remakes it."""
    import sentencepiece as spm

    try:
        return spm.SentencePieceProcessor(model_file=str(path))
    except (RuntimeError, OSError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{path}: not a sentencepiece model ({reason}). {remake(path)}") from None


def prepared_count(path: str | Path) -> int | None:
    """The pairs ``data.json`` beside a prepared split records for it (by the file's stem), or
    None where there is no such record."""
    record = Path(path).with_name("data.json")
    if not record.is_file():
        return None
    return json.loads(record.read_text(encoding="utf-8")).get("pairs", {}).get(Path(path).stem)


_SEGMENT = re.compile(r"<seg[^>]*>(.*)</seg>")


def read_sgm(path: str | Path) -> list[str]:
    """The segments of a WMT SGML file, in order, XML entities unescaped."""
    with open(path, encoding="utf-8", newline="\n") as f:
        return [html.unescape(m[1]).strip() for line in f if (m := _SEGMENT.search(line))]


def moses_tokenized(lines: Sequence[str], lang: str) -> list[str]:
    """``lines`` as the Moses tokenizer (sacremoses, no escaping) splits them."""
    from sacremoses import MosesTokenizer

    tokenizer = MosesTokenizer(lang=lang)
    return [tokenizer.tokenize(line, escape=False, return_str=True) for line in lines]


def bleu(hypotheses: Sequence[str], references: Sequence[str], lang: str = "en") -> dict:
    """Corpus BLEU of detokenized ``hypotheses`` against one reference each: sacrebleu's
    default (13a tokenization) with its signature, and the tokenized BLEU of the papers' era
    (both sides Moses-tokenized, then scored as they are, as multi-bleu.perl did)."""
    from sacrebleu.metrics import BLEU

    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    detok, tokenized = BLEU(), BLEU(tokenize="none")
    hyp_tok, ref_tok = moses_tokenized(hypotheses, lang), moses_tokenized(references, lang)
    return {
        "bleu": detok.corpus_score(list(hypotheses), [list(references)]).score,
        "signature": str(detok.get_signature()),
        "bleu_tokenized": tokenized.corpus_score(hyp_tok, [ref_tok]).score,
        "signature_tokenized": f"moses-{lang}+" + str(tokenized.get_signature()),
    }


class Pairs(Sequence):
    """Sentence pairs as ids, stored flat (two int32 arrays and their offsets: WMT'14's 4.5M
    pairs take ~1 GB, not the ~9 GB of Python lists); ``pairs[i]`` is (source ids, target ids)
    as lists, ``tokens(side)`` all ids of the ``"source"`` or ``"target"`` sides in order,
    ``lengths(side)`` the length of each pair's side."""

    def __init__(self, sources: array, targets: array, source_ends: array, target_ends: array):
        self._data = {"source": sources, "target": targets}
        self._ends = {"source": source_ends, "target": target_ends}

    def __len__(self) -> int:
        return len(self._ends["source"])

    def _side(self, side: str, i: int) -> list[int]:
        ends = self._ends[side]
        return self._data[side][ends[i - 1] if i else 0 : ends[i]].tolist()

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        return self._side("source", i), self._side("target", i)

    def tokens(self, side: str) -> array:
        """Every pair's ``side`` ids, one after another."""
        return self._data[side]

    def lengths(self, side: str) -> list[int]:
        ends = self._ends[side]
        return [end - (ends[i - 1] if i else 0) for i, end in enumerate(ends)]


def read_pairs(path: str | Path, index: dict[str, int]) -> Pairs:
    """The (source ids, target ids) of a prepared TSV split; ValueError naming the file and
    line of a malformed line or a piece outside the vocabulary, or the file and the command that
    remakes it where its pairs are not as many as ``data.json`` records."""
    data = {side: array("i") for side in ("source", "target")}
    ends = {side: array("q") for side in ("source", "target")}
    with open(path, encoding="utf-8", newline="\n") as f:
        for number, line in enumerate(f, 1):
            sides = line.removesuffix("\n").split("\t")
            if len(sides) != 2:
                raise ValueError(f"{path}, line {number}: {len(sides)} columns, not 2")
            for side, text in zip(("source", "target"), sides, strict=True):
                try:
                    data[side].extend(index[p] for p in (text.split(" ") if text else ()))
                except KeyError as error:
                    raise ValueError(
                        f"{path}, line {number}: piece {error.args[0]!r} is not in the vocabulary"
                    ) from None
                ends[side].append(len(data[side]))
    expected = prepared_count(path)
    if expected is not None and expected != len(ends["source"]):
        raise ValueError(
            f"{path}: {len(ends['source'])} pairs, but data.json beside it records {expected}: "
            f"the file was cut or changed since it was prepared. {remake(path)}"
        )
    return Pairs(data["source"], data["target"], ends["source"], ends["target"])


def write_pairs(path: str | Path, pairs: Iterable[tuple[Sequence[str], Sequence[str]]]) -> int:
    """Write (source pieces, target pieces) as a TSV split, atomically; the pairs written."""
    from rnnrepro.fileio import atomic_open

    count = 0
    with atomic_open(path, "w", encoding="utf-8") as f:
        for source, target in pairs:
            f.write(f"{' '.join(source)}\t{' '.join(target)}\n")
            count += 1
    return count
