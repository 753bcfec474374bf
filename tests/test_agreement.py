"""Linzen agreement scoring (memory Table 2), its report (Fig. 2, Table 3) and Fig. 3's
stack statistics."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch
from pipeline_utils import base_config

from rnnrepro import config as cfg
from rnnrepro.config_check import check_config
from rnnrepro.data import linzen
from rnnrepro.data.batching import stream_batches
from rnnrepro.evaluation.agreement import (
    Item,
    dependency_items,
    read_filtered,
    read_numpred,
    score_items,
    sentence_perplexity,
    singular_form,
    verb_pairs,
)
from rnnrepro.models.memory import MemoryLSTMLM
from rnnrepro.reporting.agreement import example_lines, examples, mistakes, venn_counts
from rnnrepro.reporting.analysis import stack_actions

VOCAB = ["<unk>", "<eos>", "the", "dog", "dogs", "near", "cars", "is", "are", "has", "have", "."]


def model(memory: str = "multipop_stack", seed: int = 0) -> MemoryLSTMLM:
    torch.manual_seed(seed)
    return MemoryLSTMLM(VOCAB, hidden_size=8, memory=memory, slots=3).eval()


def test_singular_form_is_the_s_form():
    assert singular_form("are", "is") == "is"
    assert singular_form("have", "has") == "has"
    assert singular_form("were", "was") == "was"
    assert singular_form("focus", "focuses") == "focuses"


def test_readers_take_linzen_formats_and_name_bad_lines(tmp_path):
    text = tmp_path / "f.text"
    gold = tmp_path / "f.gold"
    text.write_text("the dogs near cars are . <eos>\nthe dog is . <eos>\n")
    gold.write_text("4\tAre\tIs\t1\n2\tis\tare\t0\n")
    items, sentences = read_filtered(text, gold)
    assert [i.prefix for i in items] == [("the", "dogs", "near", "cars"), ("the", "dog")]
    assert [(i.correct, i.wrong, i.number, i.attractors) for i in items] == [
        ("are", "is", "VBP", 1),
        ("is", "are", "VBZ", 0),
    ]
    assert len(sentences) == 2
    gold.write_text("4\tare\tis\t1\n3\tis\tare\t0\n")
    with pytest.raises(ValueError, match="f.gold, line 2: word 3"):
        read_filtered(text, gold)
    numpred = tmp_path / "numpred.test.2"
    numpred.write_text("VBP\tthe dogs near cars\nVBZ\tthe dog\n")
    assert [(i.number, i.attractors) for i in read_numpred(numpred, 2)] == [("VBP", 2), ("VBZ", 2)]
    assert len(read_numpred(numpred, 2, limit=1)) == 1
    numpred.write_text("VBP\tthe dogs\nplural the dogs\n")
    with pytest.raises(ValueError, match="numpred.test.2, line 2"):
        read_numpred(numpred, 2)


@torch.no_grad()
def _next_log_probs(net: MemoryLSTMLM, words: tuple[str, ...]) -> torch.Tensor:
    """log p(next word | <eos> + words) from the plain forward pass (the oracle)."""
    index = {w: i for i, w in enumerate(VOCAB)}
    ids = torch.tensor([index["<eos>"], *(index.get(w, 0) for w in words)]).unsqueeze(1)
    logits, _ = net(ids)
    return torch.log_softmax(logits[-1, 0], -1)


@pytest.mark.parametrize("memory", ["none", "attention", "multipop_stack"])
def test_batched_margins_equal_the_plain_forward_pass(memory):
    net = model(memory)
    items = [
        Item("f", 1, ("the", "dogs", "near", "cars"), "VBP", 1, "are", "is"),
        Item("f", 2, ("the", "dog"), "VBZ", 0, "is", "are"),
        Item("f", 3, ("the", "dog", "near"), "VBZ", 0, "runs", "run"),  # not in the vocabulary
        Item("n", 1, ("the", "dogs", "near", "NN"), "VBP", 1),
        Item("n", 2, ("the",), "VBZ", 1),
    ]
    assert verb_pairs(items, VOCAB) == [("is", "are")]  # runs/run: not in the vocabulary
    pairs = [("has", "have"), ("is", "are")]
    records = score_items(net, items, VOCAB, pairs, batch_size=2)
    index = {w: i for i, w in enumerate(VOCAB)}
    for item, record in zip(items, records, strict=True):
        if item.correct == "runs":
            assert record["skipped"] and record["correct"] is None
            continue
        log_p = _next_log_probs(net, item.prefix)
        if item.correct:
            expected = log_p[index[item.correct]] - log_p[index[item.wrong]]
        else:
            singular = torch.logsumexp(log_p[[index["has"], index["is"]]], 0)
            plural = torch.logsumexp(log_p[[index["have"], index["are"]]], 0)
            expected = (singular - plural) * (1 if item.number == "VBZ" else -1)
        assert record["margin"] == pytest.approx(float(expected), abs=1e-5)
        assert record["correct"] == (float(expected) > 0)


def test_sentence_perplexity_counts_every_token():
    net = model("none")
    result = sentence_perplexity(net, ["the dog is . <eos>", "the dogs are zebras"], VOCAB)
    assert result["tokens"] == 5 + 5 and result["unk_rate"] == pytest.approx(0.1)
    assert 1 < result["ppl"] < 10 * len(VOCAB)


def test_venn_regions_and_example_patterns():
    rows = []
    wrong = {  # item -> models wrong on it
        1: {"a", "b", "c"},
        2: {"a"},
        3: {"a"},
        4: {"b", "c"},
        5: set(),
    }
    for line, models_wrong in wrong.items():
        for model_name in "abc":
            rows.append(
                {
                    "source": "s",
                    "line": line,
                    "attractors": 1,
                    "text": f"item {line}",
                    "model": model_name,
                    "seed": 1,
                    "skipped": False,
                    "correct": model_name not in models_wrong,
                }
            )
    frame = mistakes(pd.DataFrame(rows), ["a", "b", "c"])
    counts = venn_counts(frame, ["a", "b", "c"])
    assert counts["all"] == 1 and counts["only a"] == 2 and counts["b & c only"] == 1
    assert sum(counts.values()) == 4
    table = examples(frame, ["a", "b", "c"], {"venn:all": 6115})
    assert dict(zip(table["region"], table["mistakes"], strict=True)) == counts
    paper = table.set_index("region")["paper"]
    assert paper["all"] == 6115 and paper.drop("all").isna().all()
    lines = example_lines(table, ["a", "b", "c"])
    assert "| ✗ | ✗ | ✗ | 1 | *item 1* | s:1 |" in lines
    assert "| ✓ | ✗ | ✗ | 1 | *item 4* | s:4 |" in lines
    assert "| ✗ | ✗ | ✓ |  | (no such item) |  |" in lines
    assert len(lines) == 2 + 7


def test_stack_statistics_cover_every_step_and_sum_to_one():
    net = model("multipop_stack")
    ids = torch.randint(0, len(VOCAB), (203,))
    states, histogram = stack_actions(net, ids, batch_size=4, bptt=7)
    steps = sum(inputs.numel() for inputs, _ in stream_batches(ids, 4, 7))
    assert states["argmax_count"].sum() == histogram["steps"].sum() == steps
    assert states["mean_probability"].sum() == pytest.approx(1.0, abs=1e-6)
    assert list(states["state"][:4]) == ["STAY_0", "PUSH_0", "STAY_1", "PUSH_1"]
    with pytest.raises(ValueError, match="no multipop stack"):
        stack_actions(model("attention"), ids, 4, 7)


def test_agreement_config_names_a_bad_model_or_corpus():
    config = base_config()
    check_config(config)
    bad = copy.deepcopy(config)
    bad["experiments"]["memory"]["agreement"]["models"][0] = "lstm_9000"
    with pytest.raises(cfg.ConfigError, match=r"experiments.memory.agreement.models.*lstm_9000"):
        check_config(bad)
    bad = copy.deepcopy(config)
    bad["experiments"]["memory"]["agreement"]["corpus"] = "ptb_word"
    with pytest.raises(cfg.ConfigError, match=r"experiments.memory.agreement.corpus"):
        check_config(bad)


def test_margins_do_not_depend_on_the_batch_size():
    net = model("attention")
    items = [
        Item("n", k, tuple(np.random.default_rng(k).choice(VOCAB[2:7], k % 5 + 1)), "VBZ", 1)
        for k in range(1, 12)
    ]
    pairs = [("is", "are")]
    one = [r["margin"] for r in score_items(net, items, VOCAB, pairs, batch_size=1)]
    many = [r["margin"] for r in score_items(net, items, VOCAB, pairs, batch_size=5)]
    assert one == pytest.approx(many, abs=1e-5)


def _write_deps(path, rows):
    header = "sentence\tverb_index\tverb_pos\tn_intervening\tn_diff_intervening\tsubj\n"
    path.write_text(header + "".join("\t".join(map(str, r)) + "\tx\n" for r in rows))


def test_linzen_split_follows_the_protocol_and_is_reproducible(tmp_path):
    rows = [
        {"sentence": f"w{i} is", "verb_index": "2", "verb_pos": "VBZ", "n_intervening": "0",
         "n_diff_intervening": "0"}
        for i in range(1000)
    ]  # fmt: skip
    parts = linzen.split(rows)
    assert (len(parts.train), len(parts.val), len(parts.test)) == (90, 10, 900)
    assert parts == linzen.split(rows)  # the same seed, the same split
    seen = [r["sentence"] for r in parts.train + parts.val + parts.test]
    assert sorted(seen) == sorted(r["sentence"] for r in rows)
    assert linzen.split(rows, seed=2).train != parts.train


def test_linzen_dependencies_are_checked_and_re_inflected(tmp_path):
    path = tmp_path / "agreement.tsv"
    _write_deps(
        path,
        [
            ("the dogs near cars are .", 5, "VBP", 1, 1),
            ("the dog near cars is .", 5, "VBZ", 1, 1),
            ("the dog near the cars has .", 6, "VBZ", 2, 1),  # not homogeneous
            ("the dog barks .", 3, "VBZ", 0, 0),
            ("dogs bark .", 2, "VBP", 0, 0),  # re-inflected through the VBZ "barks" above
            ("dogs run .", 2, "VBP", 0, 0),  # no VBZ "runs" in the data: no re-inflection
        ],
    )
    items = list(dependency_items(path))
    assert [(i.correct, i.wrong) for i in items] == [
        ("are", "is"), ("is", "are"), ("has", "have"), ("barks", "bark"), ("bark", "barks"),
        ("run", ""),
    ]  # fmt: skip
    assert [i.homogeneous for i in items] == [True, True, False, True, True, True]
    assert items[0].prefix == ("the", "dogs", "near", "cars") and items[0].number == "VBP"
    _write_deps(path, [("the dog is .", 7, "VBZ", 0, 0)])
    with pytest.raises(ValueError, match="line 2: verb_index 7"):
        list(dependency_items(path))
    path.write_text("sentence\tverb_pos\nthe dog is .\tVBZ\n")
    with pytest.raises(ValueError, match="verb_index"):
        list(dependency_items(path))
