"""m-bounded Dyck-k sampler, exact probabilities and file I/O."""

import math
import random

import pytest

from rnnrepro.data.dyck import (
    check_sequence,
    close_token_ids,
    close_type_ids,
    floor_perplexity,
    generate,
    next_token_distribution,
    read_sequences,
    sample_sequence,
    sequence_log_prob,
    vocabulary,
    write_sequences,
)


def depths(seq):
    depth, out = 0, []
    for tok in seq:
        depth += 1 if tok.startswith("(") else -1
        out.append(depth)
    return out


def test_vocabulary_and_close_ids():
    vocab = vocabulary(2)
    assert vocab == ["<pad>", "<start>", "<end>", "(a", "a)", "(b", "b)"]
    assert close_type_ids(vocab) == [-1, -1, -1, -1, 0, -1, 1]
    assert close_token_ids(vocab) == [4, 6]
    assert [vocabulary(3)[i] for i in close_token_ids(vocabulary(3))] == ["a)", "b)", "c)"]


@pytest.mark.parametrize(("k", "m", "min_len", "max_len"), [(2, 4, 1, 40), (3, 2, 20, 30)])
def test_samples_are_bounded_dyck_words_within_length(k, m, min_len, max_len):
    seqs = generate(300, k, m, min_len, max_len, seed=3)
    for seq in seqs:
        assert check_sequence(seq, k, m) is None
        assert min_len <= len(seq) <= max_len
        assert max(depths(seq)) <= m
    # all types and the full depth actually occur
    assert {tok for seq in seqs for tok in seq} == set(vocabulary(k)[3:])
    assert max(max(depths(seq)) for seq in seqs) == m


def test_generate_is_deterministic_for_a_seed():
    a = generate(50, 2, 4, 1, 60, seed=11)
    assert a == generate(50, 2, 4, 1, 60, seed=11)
    assert a != generate(50, 2, 4, 1, 60, seed=12)
    rng1, rng2 = random.Random(5), random.Random(5)
    assert sample_sequence(rng1, 2, 4, 1, 60) == sample_sequence(rng2, 2, 4, 1, 60)


def test_empirical_transition_frequencies():
    """P(END | empty, len >= min_len) = 0.5 and P(close | 0 < depth < m) = 0.5 on samples."""
    k, m, min_len = 2, 3, 6
    seqs = generate(3000, k, m, min_len, 10_000, seed=0)  # max_len far from binding
    end_hits = end_trials = close_hits = close_trials = opens_a = 0
    for seq in seqs:
        depth = 0
        for pos, tok in enumerate([*seq, "<end>"]):
            if depth == 0 and pos >= min_len:
                end_trials += 1
                end_hits += tok == "<end>"
            if depth == 0 and pos < min_len:
                assert tok != "<end>"
            if 0 < depth < m:
                close_trials += 1
                close_hits += tok.endswith(")")
                opens_a += tok == "(a"
            if depth == m:
                assert tok.endswith(")")
            depth += 1 if tok.startswith("(") else -1 if tok.endswith(")") else 0
    assert end_trials > 2000 and close_trials > 10_000
    assert abs(end_hits / end_trials - 0.5) < 0.03
    assert abs(close_hits / close_trials - 0.5) < 0.02
    assert abs(opens_a / close_trials - 0.25) < 0.02


def test_next_token_distribution_cases():
    assert next_token_distribution([], 0, 2, 4, 1) == {"(a": 0.5, "(b": 0.5}
    assert next_token_distribution([], 3, 2, 4, 1) == {"(a": 0.25, "(b": 0.25, "<end>": 0.5}
    assert next_token_distribution([0, 1], 2, 2, 4, 1) == {"(a": 0.25, "(b": 0.25, "b)": 0.5}
    assert next_token_distribution([0, 1, 1, 0], 4, 2, 4, 1) == {"a)": 1.0}
    with pytest.raises(TypeError):  # shared by every state alike: read-only
        next_token_distribution([], 0, 2, 4, 1)["(a"] = 1.0


def test_sequence_log_prob_and_floor_by_hand():
    short, nested = ["(a", "a)"], ["(a", "(b", "b)", "a)"]
    # min_len 0, m 2: (a .25, a) .5, END .5 -> 1/16
    assert sequence_log_prob(short, 2, 2, 0) == pytest.approx(math.log(1 / 16))
    # min_len 0, m 2: (a .25, (b .25, b) 1 (stack full), a) .5, END .5 -> 1/64
    assert sequence_log_prob(nested, 2, 2, 0) == pytest.approx(math.log(1 / 64))
    # min_len 4: the first (a has .5 (END barred at an empty stack) -> 1/32
    assert sequence_log_prob(nested, 2, 2, 4) == pytest.approx(math.log(1 / 32))
    # floor = exp(-sum log p / sum(len + 1)) = (16 * 64) ** (1 / 8)
    assert floor_perplexity([short, nested], 2, 2, 0) == pytest.approx(1024 ** (1 / 8))
    assert floor_perplexity([nested, nested], 2, 2, 4) == pytest.approx(32 ** (1 / 5))


def test_sequence_log_prob_rejects_impossible_sequences():
    with pytest.raises(ValueError, match="min_len"):
        sequence_log_prob(["(a", "a)"], 2, 4, 4)
    with pytest.raises(ValueError, match="depth"):
        sequence_log_prob(["(a", "(a", "a)", "a)"], 2, 1, 0)


def test_write_read_round_trip(tmp_path):
    seqs = generate(20, 2, 4, 1, 30, seed=1)
    path = tmp_path / "train.txt"
    write_sequences(path, seqs)
    assert read_sequences(path, k=2, m=4) == seqs
    assert [p.name for p in tmp_path.iterdir()] == ["train.txt"]  # no temp file left behind


@pytest.mark.parametrize(
    ("line", "kwargs", "message"),
    [
        ("(a (c c) a)", {"k": 2}, "unknown token '\\(c'"),
        ("(a x a)", {}, "unknown token 'x'"),
        ("(a b) a)", {}, "does not close"),
        ("(a (b b)", {}, "left open"),
        ("(a (a (a a) a) a)", {"m": 2}, "depth 3 > m=2"),
        ("", {}, "empty sequence"),
        ("(a (a (a a) a) a)", {"lengths": (2, 4)}, "length 6 is outside the split's bounds 2-4"),
    ],
)
def test_read_sequences_errors_name_file_and_line(tmp_path, line, kwargs, message):
    path = tmp_path / "bad.txt"
    path.write_text(f"(a a)\n(b b) (a a)\n{line}\n")
    with pytest.raises(ValueError, match=message) as err:
        read_sequences(path, **kwargs)
    assert "bad.txt:3:" in str(err.value)


def test_an_empty_sequence_is_no_dyck_word():
    assert check_sequence([]) == "empty sequence"


def test_an_empty_line_in_a_test_split_stops_evaluation_naming_it(tmp_path):
    """evaluate_dyck and the floor refuse a split with an empty line (it used to change the
    test perplexity silently), naming the file and line."""
    from rnnrepro.models import build_model, save_model
    from rnnrepro.scripts import dyck_floor, evaluate_dyck

    for split, seed in (("val", 2), ("test", 3)):
        write_sequences(tmp_path / f"{split}.txt", generate(6, 2, 4, 6, 30, seed=seed))
    with (tmp_path / "test.txt").open("a") as f:
        f.write("\n")
    vocab = vocabulary(2)
    save_model(
        build_model("lstm", vocab, embedding_dim=4, hidden_size=4),
        tmp_path / "model.pt",
        "lstm",
        vocab,
        {"embedding_dim": 4, "hidden_size": 4},
        run={"dyck": {"k": 2, "m": 4}},
        identity={
            "experiment": "e",
            "dataset": "dyck_m4",
            "model": "lstm",
            "seed": 1,
            "stage": "train",
        },
        params={"total": 1, "recurrent": 1},
        epochs=1,
        best_epoch=1,
        train_seconds=0.0,
        stopped_because="max_epochs",
    )
    common = ["--val", str(tmp_path / "val.txt"), "--test", str(tmp_path / "test.txt")]
    with pytest.raises(ValueError, match=r"test.txt:7: empty sequence"):
        evaluate_dyck.main(
            ["--model", str(tmp_path / "model.pt"), "--history", "unused", *common]
            + ["--scale", "smoke", "--device", "cpu", "--dyck-lengths", "6", "30"]
            + ["--out-metrics", str(tmp_path / "m.json"), "--out-ldpa", str(tmp_path / "l.csv")]
        )
    with pytest.raises(ValueError, match=r"test.txt:7: empty sequence"):
        dyck_floor.main(
            ["--k", "2", "--m", "4", "--min-length", "6", "--max-length", "30"]
            + ["--splits", str(tmp_path / "val.txt"), str(tmp_path / "test.txt")]
            + ["--out", str(tmp_path / "floor.json")]
        )
    assert not (tmp_path / "m.json").exists() and not (tmp_path / "floor.json").exists()


def test_impossible_length_window_is_rejected():
    with pytest.raises(ValueError):
        generate(1, 2, 4, 5, 5, seed=0)
