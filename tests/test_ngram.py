"""N-gram baselines: the Kneser-Ney model, the n-gram script's conventions and the rows and
section they add to a text table."""

from __future__ import annotations

import json
import math
import random

import pandas as pd
import pytest
from pipeline_utils import TOLERANCES

from rnnrepro.evaluation.ngram import START, KneserNey, Unigram, score
from rnnrepro.reporting.baselines import ngram_lines, read_ngram, with_nats_readings
from rnnrepro.reporting.metrics import collect_metrics
from rnnrepro.reporting.tables import build_table
from rnnrepro.scripts import ngram_baselines


def ngram_script(*argv: object) -> None:
    ngram_baselines.main([str(arg) for arg in argv])


def random_corpus(vocab_size: int = 6, lines: int = 200, seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    return [
        [START, *(rng.randrange(vocab_size) for _ in range(rng.randrange(1, 12)))]
        for _ in range(lines)
    ]


@pytest.mark.parametrize("order", [1, 2, 3, 5])
def test_kneser_ney_is_a_distribution_in_every_context(order):
    model = KneserNey(random_corpus(), order, 6)
    for history in ([], [1], [START], [START, 2], [3, 4, 5, 1], [0, 0, 0, 0], [5, 5, 5, 5, 5]):
        total = sum(math.exp(model.logprob(w, history)) for w in range(6))
        assert total == pytest.approx(1.0, abs=1e-12), (order, history)


def test_kneser_ney_bigram_by_hand():
    """Chen & Goodman's interpolated modified KN, worked by hand on [<s> a b], [<s> a a] with
    V = {a, b, c}: bigram counts (<s> a) 2, (a b) 1, (a a) 1 give D1 = 1/2, D2 = 2; continuation
    counts a 2 (after <s> and a), b 1 give D1 = 1/3, D2 = 2, so p1(b) = (2/3 + (7/3)/3) / 3 =
    13/27 and p(b | a) = (1/2 + 1 · 13/27) / 2 = 53/108."""
    a, b, c = 0, 1, 2
    model = KneserNey([[START, a, b], [START, a, a]], 2, 3)
    assert math.exp(model.logprob(b, [])) == pytest.approx(13 / 27)
    assert math.exp(model.logprob(c, [])) == pytest.approx(7 / 27)
    assert math.exp(model.logprob(b, [a])) == pytest.approx(53 / 108)
    assert math.exp(model.logprob(c, [b])) == pytest.approx(7 / 27)  # unseen context: backs off
    assert model.logprob(b, [START, a]) == model.logprob(b, [a])  # only order - 1 tokens count
    fourgram = KneserNey([[START, a, b], [START, a, a]], 4, 3)
    assert fourgram.logprob(b, [START, a]) != fourgram.logprob(b, [a])  # a short history is whole


def test_unigram_is_add_one_and_never_counts_the_start_marker():
    model = Unigram([[START, 0, 0, 1]], 3)
    assert [math.exp(model.logprob(w)) for w in range(3)] == pytest.approx([3 / 6, 2 / 6, 1 / 6])


def test_higher_orders_beat_the_unigram_on_structured_text():
    train = [[START, *([0, 1, 2, 3] * 5)] for _ in range(20)]
    test = [[START, *([0, 1, 2, 3] * 3)]]
    unigram = score(Unigram(train, 5), test)[0]
    trigram, scored = score(KneserNey(train, 3, 5), test)
    assert len(scored) == 12 and trigram < unigram / 10


def write_dataset(root, name: str, lines: dict[str, list[str]], vocab: list[str]):
    path = root / name
    path.mkdir(parents=True)
    for split, text in lines.items():
        (path / f"{split}.txt").write_text("".join(f"{line}\n" for line in text))
    (path / "vocab.txt").write_text("".join(f"{token}\n" for token in vocab))
    return path


@pytest.fixture
def word_data(tmp_path):
    lines = {
        "train": ["a b c", "a b", "c a b c"] * 10,
        "val": ["a b c", "c a"],
        "test": ["a b", "b c a b"],
    }
    return write_dataset(tmp_path, "ptb_word", lines, ["<eos>", "a", "b", "c"])


def test_script_scores_the_runs_tokens(tmp_path, word_data):
    out = tmp_path / "eos.csv"
    ngram_script("--data", word_data, "--framing", "eos", "--order", "3", "--out", out)
    rows = pd.read_csv(out).set_index(["model", "split"])
    assert rows.loc[("kn3", "val"), "tokens"] == 4 + 3  # x_1..x_n <eos> of each line
    assert rows.loc[("kn3", "test"), "tokens"] == 3 + 5
    assert rows.loc[("kn3", "val"), "ppl"] < rows.loc[("unigram", "val"), "ppl"]
    assert rows.loc[("kn3", "test"), "chars"] == 8  # one character per word here
    none = tmp_path / "none.csv"
    ngram_script("--data", word_data, "--framing", "none", "--order", "3", "--out", none)
    none_rows = pd.read_csv(none).set_index(["model", "split"])
    assert none_rows.loc[("kn3", "test"), "tokens"] == 1 + 3  # characters 2..n of each line
    stream = tmp_path / "stream.csv"
    ngram_script(
        *("--data", word_data, "--framing", "stream", "--order", "3"),
        *("--eval-tokens", "0", "5", "--out", stream),
    )
    rows = pd.read_csv(stream).set_index(["model", "split", "eval_tokens"])
    assert rows.loc[("kn3", "test", 0), "tokens"] == 8 - 1  # every token after the first
    assert rows.loc[("kn3", "test", 5), "tokens"] == 5 - 1


def test_script_fits_only_the_unigram_above_the_limit(tmp_path, word_data):
    out = tmp_path / "big.csv"
    ngram_script(
        *("--data", word_data, "--framing", "eos", "--order", "5"),
        *("--max-train-tokens", "50", "--out", out),
    )
    rows = pd.read_csv(out).set_index(["model", "split"])
    assert math.isnan(rows.loc[("kn5", "test"), "ppl"])
    assert "ngram.max_train_tokens = 50" in rows.loc[("kn5", "test"), "note"]
    assert rows.loc[("unigram", "test"), "ppl"] > 1


def metrics_file(tmp_path, model: str, ppl: float, eval_tokens: int | None):
    path = tmp_path / model / "metrics.json"
    path.parent.mkdir(parents=True)
    training = {} if eval_tokens is None else {"max_eval_tokens": eval_tokens}
    path.write_text(
        json.dumps(
            {
                "experiment": "memory",
                "dataset": "ptb_stream",
                "model": model,
                "seed": 1,
                "scale": "cpu",
                "run": {"task": "stream", "training": training},
                "params": {"total": 10, "recurrent": 8},
                "epochs": 1,
                "train_seconds": 60.0,
                "val": {"loss": math.log(ppl), "ppl": ppl},
                "test": {"loss": math.log(ppl), "ppl": ppl},
            }
        )
    )
    return path


def test_table_rows_compare_with_the_ngram_baselines_on_the_same_tokens(tmp_path):
    scores = tmp_path / "ptb_stream.csv"
    rows = [
        ("unigram", "test", 0, 700.0),
        ("kn5", "test", 0, 150.0),
        ("unigram", "test", 4000, 650.0),
        ("kn5", "test", 4000, 300.0),
    ]
    pd.DataFrame(
        [
            {
                "dataset": "ptb_stream",
                "model": name,
                "order": 5,
                "split": split,
                "eval_tokens": tokens,
                "loss": math.log(ppl),
                "ppl": ppl,
                "train_tokens": 1000,
                "note": "",
            }
            for name, split, tokens, ppl in rows
        ]
    ).to_csv(scores, index=False)
    refs = read_ngram([scores])
    runs = collect_metrics(
        [
            metrics_file(tmp_path, "lstm_650", 200.0, None),  # whole split: 150 < 200 < 700
            metrics_file(tmp_path, "attention_1", 200.0, 4000),  # first 4000: 200 < 300
            metrics_file(tmp_path, "multipop_stack", 800.0, None),
        ]
    )
    paper = pd.DataFrame(
        [
            {"paper": "memory", "dataset": "ptb_stream", "model": m, "metric": "test_ppl"}
            | {"value": 80.0, "comparison": "="}
            for m in ("lstm_650", "attention_1", "multipop_stack", "discrete_stack")
        ]
    )
    table = build_table(paper, runs, {}, TOLERANCES, ngram_scores=refs).set_index("model")
    assert table.loc["lstm_650", "n-gram"] == 150.0
    assert table.loc["lstm_650", "verdict"] == "cpu-scale differs; no better than the n-gram"
    assert table.loc["attention_1", ["unigram", "n-gram"]].tolist() == [650.0, 300.0]
    assert table.loc["attention_1", "verdict"] == "cpu-scale differs"
    assert table.loc["multipop_stack", "verdict"].endswith("no better than the unigram")
    assert table.loc["discrete_stack", "n-gram"] == 150.0  # no run: the whole split
    section = "\n".join(ngram_lines(refs))
    assert "| ptb_stream | kn5 | 1000 | first 4000 | ppl |  | 300 |" in section


def test_bpc_rows_read_in_bits_and_in_nats(tmp_path):
    """A paper "BPC" of 1.2 is matched by 1.2 bits and differs from 1.2 nats (1.73 bits)."""
    paper = pd.DataFrame(
        [
            {"paper": "general_second_order", "dataset": "ptb_lines_unigram", "model": m}
            | {"metric": "test_bpc", "value": 1.2, "comparison": "="}
            for m in ("so_tanh", "so_id")
        ]
    )
    readings = with_nats_readings(paper)
    assert readings[["model", "metric"]].values.tolist() == [
        ["so_tanh", "test_bpc"],
        ["so_tanh", "test_npc"],
        ["so_id", "test_bpc"],
        ["so_id", "test_npc"],
    ]
    runs = pd.DataFrame(
        [
            {"experiment": "general_second_order", "dataset": "ptb_lines_unigram_fold1"}
            | {"model": m, "test_bpc": bpc, "test_npc": bpc * math.log(2), "params": 1}
            for m, bpc in (("so_tanh", 1.2), ("so_id", 1.2 / math.log(2)))
        ]
    )
    table = build_table(readings, runs, {}, TOLERANCES).set_index(["model", "metric"])["verdict"]
    assert table.to_dict() == {
        ("so_tanh", "test_bpc"): "match",
        ("so_tanh", "test_npc"): "differs",
        ("so_id", "test_bpc"): "differs",
        ("so_id", "test_npc"): "match",
    }


def test_out_of_range_discount_estimates_keep_every_token_possible():
    """Tiny data can estimate a discount <= 0 (here D3+: n4 > n3); the fallback keeps mass for
    unseen tokens, so no token gets probability 0."""
    seqs = [[START, 0, 1]] + [[START, 0, 2]] * 2 + [[START, 0, 3]] * 4 + [[START, 0, 4]] * 4
    model = KneserNey(seqs, 2, 6)
    assert all(d > 0 for d in model.discounts[2])
    assert all(math.isfinite(model.logprob(w, [0])) for w in range(6))
