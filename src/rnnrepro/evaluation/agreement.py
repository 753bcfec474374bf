"""Linzen et al. (2016) subject-verb number agreement, scored with a language model (memory Table 2,
docs/methods.md §11.4).

An item is a prefix up to (not including) the verb; the LM reads ``<eos>`` + prefix and is
right when the verb form of the subject's number is more probable than the other number's:

- items with the verb (``subj_agr_filtered``: ``.text`` sentence, ``.gold`` index, correct form,
  wrong form, attractors): p(correct) > p(wrong); an item is skipped when either form is outside
  the vocabulary;
- items with only the verb's tag (``numpred.test.N``: ``VBZ|VBP<TAB>prefix``, N homogeneous
  attractors): the probability mass of the singular forms against that of the plural forms over
  the verb pairs of the ``.gold`` file with both forms in the vocabulary [A] (the file does not
  say which verb follows);
- Linzen's own test dependencies (``data.linzen``, the paper's setting): the verb against its
  re-inflection (``inflect``'s ``plural_verb`` over the data's VBZ verbs, both ways, as Linzen's
  ``gen_inflect_from_vocab``); attractors count only under homogeneous intervention.

Words outside the vocabulary read as ``<unk>`` (Linzen's rare words are POS tags, e.g. ``NN``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from rnnrepro.models.base import RNNModel

UNK, EOS = "<unk>", "<eos>"
SINGULAR, PLURAL = "VBZ", "VBP"


@dataclass(frozen=True)
class Item:
    """One agreement item: where it comes from, its prefix, the subject's number (VBZ/VBP),
    the verb forms when known and the number of attractors."""

    source: str
    line: int  # 1-based line of the source file
    prefix: tuple[str, ...]
    number: str
    attractors: int
    correct: str | None = None
    wrong: str | None = None
    homogeneous: bool = True  # every intervening noun contrasts with the subject (or none is)

    @property
    def text(self) -> str:
        forms = f"{{{self.correct},{self.wrong}}}" if self.correct else f"{{{self.number}}}"
        return f"{' '.join(self.prefix)} {forms}"


def singular_form(a: str, b: str) -> str:
    """The singular (VBZ) form of a verb pair: the one ending in "s" (is, has, does, was,
    makes), the longer one when both do (focuses / focus)."""
    if a.endswith("s") != b.endswith("s"):
        return a if a.endswith("s") else b
    return a if len(a) >= len(b) else b


def read_filtered(text_path: str | Path, gold_path: str | Path) -> tuple[list[Item], list[str]]:
    """Items and whole sentences (for perplexity) of the ``subj_agr_filtered`` files."""
    sentences = Path(text_path).read_text(encoding="utf-8").splitlines()
    gold = Path(gold_path).read_text(encoding="utf-8").splitlines()
    if len(sentences) != len(gold):
        raise ValueError(
            f"{text_path} has {len(sentences)} lines but {gold_path} has {len(gold)}: "
            "they must be line-aligned"
        )
    items = []
    for n, (sentence, row) in enumerate(zip(sentences, gold, strict=True), start=1):
        fields = row.split("\t")
        if len(fields) != 4:
            raise ValueError(f"{gold_path}, line {n}: expected 4 tab-separated fields")
        # the sentences are lowercased; a few gold forms are not ("Are")
        index, correct, wrong = int(fields[0]), fields[1].lower(), fields[2].lower()
        attractors = int(fields[3])
        words = sentence.split()
        if not 0 < index < len(words) or words[index] != correct:
            raise ValueError(
                f"{gold_path}, line {n}: word {index} of the sentence is not {correct!r}"
            )
        number = SINGULAR if singular_form(correct, wrong) == correct else PLURAL
        items.append(
            Item(Path(text_path).name, n, tuple(words[:index]), number, attractors, correct, wrong)
        )
    return items, sentences


def read_numpred(path: str | Path, attractors: int, limit: int | None = None) -> list[Item]:
    """Items of a ``numpred.test.N`` file (``VBZ|VBP<TAB>prefix``; the first ``limit`` only)."""
    items = []
    with open(path, encoding="utf-8") as f:
        for n, row in enumerate(f, start=1):
            if limit is not None and len(items) >= limit:
                break
            number, sep, prefix = row.rstrip("\n").partition("\t")
            if not sep or number not in (SINGULAR, PLURAL) or not prefix.strip():
                raise ValueError(f"{path}, line {n}: expected 'VBZ|VBP<TAB>prefix'")
            items.append(Item(Path(path).name, n, tuple(prefix.split()), number, attractors))
    return items


def verb_inflections(rows: Iterable[dict]) -> dict[str, str]:
    """Singular <-> plural present forms of the data's VBZ verbs (``inflect``'s plural_verb)."""
    import inflect

    engine = inflect.engine()
    table = {}
    for row in rows:
        if row["verb_pos"] != SINGULAR:
            continue
        verb = row["sentence"].split()[int(row["verb_index"]) - 1]
        if verb not in table:
            plural = engine.plural_verb(verb)
            if plural and plural != verb:
                table[verb], table[plural] = plural, verb
    return table


def dependency_items(path: str | Path, limit: int | None = None) -> Iterator[Item]:
    """Items of Linzen's test dependencies (``data.linzen.write_dependencies``; the first
    ``limit`` only), read as a stream in two passes (the re-inflections, then the items); a verb
    without a known re-inflection has an empty ``wrong`` (skipped)."""
    from itertools import islice

    from rnnrepro.data.linzen import iter_dependencies

    inflections = verb_inflections(islice(iter_dependencies(path), limit))
    for line, row in enumerate(islice(iter_dependencies(path), limit), start=2):
        words = row["sentence"].split()
        v = int(row["verb_index"]) - 1
        if row["verb_pos"] not in (SINGULAR, PLURAL):
            raise ValueError(f"{path}, line {line}: verb_pos {row['verb_pos']!r} is not VBZ/VBP")
        yield Item(
            Path(path).name,
            line,
            tuple(words[:v]),
            row["verb_pos"],
            int(row["n_diff_intervening"]),
            words[v],
            inflections.get(words[v], ""),
            row["n_intervening"] == row["n_diff_intervening"],
        )


def verb_pairs(items: Sequence[Item], vocab: Sequence[str]) -> list[tuple[str, str]]:
    """(singular, plural) pairs of the items with verb forms, both in ``vocab``, sorted."""
    known = set(vocab)
    pairs = set()
    for item in items:
        if item.correct and item.correct in known and item.wrong in known:
            singular = singular_form(item.correct, item.wrong)
            plural = item.wrong if singular == item.correct else item.correct
            pairs.add((singular, plural))
    return sorted(pairs)


@torch.no_grad()
def final_log_probs(
    model: RNNModel,
    prefixes: Sequence[Sequence[int]],
    start_id: int,
    reduce: Callable[[torch.Tensor, list[int]], torch.Tensor],
    batch_size: int = 256,
    device: str | torch.device = "cpu",
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """``reduce(log p(next word | <start> + prefix) [b, V], item indices)`` for every prefix,
    batched by length; only the last position of each prefix is decoded (padding after a
    prefix cannot change its causal state). The model is in evaluation mode (no dropout), so
    the body's output is the decoder's input."""
    order = sorted(range(len(prefixes)), key=lambda i: len(prefixes[i]))
    out = np.zeros(len(prefixes))
    for first in range(0, len(order), batch_size):
        chunk = order[first : first + batch_size]
        lengths = torch.tensor([len(prefixes[i]) + 1 for i in chunk])
        tokens = torch.full((int(lengths.max()), len(chunk)), start_id, dtype=torch.long)
        for b, i in enumerate(chunk):
            tokens[1 : len(prefixes[i]) + 1, b] = torch.tensor(prefixes[i], dtype=torch.long)
        features = model.body(model.embed(tokens.to(device)), None, tokens.to(device))[0]
        last = features[lengths.to(device) - 1, torch.arange(len(chunk), device=device)]
        log_p = F.log_softmax(model.decoder(last).float(), dim=-1)
        out[chunk] = reduce(log_p, chunk).double().cpu().numpy()
        if progress:
            progress(len(chunk))
    return out


def score_items(
    model: RNNModel,
    items: Sequence[Item],
    vocab: Sequence[str],
    pairs: Sequence[tuple[str, str]],
    batch_size: int = 256,
    device: str | torch.device = "cpu",
    progress: Callable[[int], None] | None = None,
) -> list[dict]:
    """One record per item: its margin (log-probability of the right number minus the wrong
    one's) and whether it is correct; ``skipped`` items (a verb form outside the vocabulary)
    have no margin."""
    index = {token: i for i, token in enumerate(vocab)}
    for token in (UNK, EOS):
        if token not in index:
            raise ValueError(f"the model's vocabulary has no {token!r}")
    if not pairs and any(item.correct is None for item in items):
        raise ValueError("no verb pair with both forms in the vocabulary: cannot score numpred")
    singular = torch.tensor([index[s] for s, _ in pairs], dtype=torch.long, device=device)
    plural = torch.tensor([index[p] for _, p in pairs], dtype=torch.long, device=device)
    unk = index[UNK]
    scored = [
        i
        for i, item in enumerate(items)
        if item.correct is None or (item.correct in index and item.wrong in index)
    ]
    sign = torch.tensor([1.0 if item.number == SINGULAR else -1.0 for item in items])
    right = torch.tensor([index.get(item.correct or UNK, unk) for item in items])
    wrong = torch.tensor([index.get(item.wrong or UNK, unk) for item in items])
    has_verb = torch.tensor([item.correct is not None for item in items])

    def reduce(log_p: torch.Tensor, chunk: list[int]) -> torch.Tensor:
        ids = torch.tensor([scored[i] for i in chunk])
        rows = torch.arange(len(chunk), device=log_p.device)
        exact = log_p[rows, right[ids].to(log_p.device)] - log_p[rows, wrong[ids].to(log_p.device)]
        if len(pairs):
            mass = torch.logsumexp(log_p[:, singular], -1) - torch.logsumexp(log_p[:, plural], -1)
            by_class = sign[ids].to(log_p.device) * mass
        else:
            by_class = torch.zeros_like(exact)
        return torch.where(has_verb[ids].to(log_p.device), exact, by_class)

    prefixes = [[index.get(w, unk) for w in items[i].prefix] for i in scored]
    margins = final_log_probs(model, prefixes, index[EOS], reduce, batch_size, device, progress)
    by_item = dict(zip(scored, margins, strict=True))
    records = []
    for i, item in enumerate(items):
        margin = by_item.get(i)
        records.append(
            {
                "source": item.source,
                "line": item.line,
                "attractors": item.attractors,
                "homogeneous": item.homogeneous,
                "number": item.number,
                "scoring": "verb" if item.correct else "verb class",
                "skipped": margin is None,
                "margin": np.nan if margin is None else float(margin),
                "correct": None if margin is None else bool(margin > 0),
                "text": item.text,
            }
        )
    return records


@torch.no_grad()
def sentence_perplexity(
    model: RNNModel,
    sentences: Sequence[str],
    vocab: Sequence[str],
    batch_size: int = 32,
    device: str | torch.device = "cpu",
) -> dict:
    """Perplexity of whole sentences (each read after ``<eos>``, its words and final ``<eos>``
    scored; words outside the vocabulary as ``<unk>``), tokens and the ``<unk>`` rate."""
    from rnnrepro.evaluation.syneval import sentence_logprobs

    index = {token: i for i, token in enumerate(vocab)}
    unk = index[UNK]
    encoded = []
    unknown = 0
    for sentence in sentences:
        words = sentence.split()
        if not words or words[-1] != EOS:
            words.append(EOS)
        ids = [index.get(w, unk) for w in words]
        unknown += sum(w not in index for w in words)
        encoded.append(ids)
    logp = sentence_logprobs(model, encoded, index[EOS], batch_size, device)
    tokens = sum(len(ids) for ids in encoded)
    return {
        "ppl": float(np.exp(-logp.sum() / tokens)),
        "tokens": tokens,
        "unk_rate": unknown / tokens,
        "sentences": len(encoded),
    }
