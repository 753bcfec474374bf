"""PTB text preprocessing (multi_matrix and general_second_order), LM batches and stream windows."""

import pytest
import torch

from rnnrepro.data import text
from rnnrepro.data.batching import IGNORE_INDEX, lm_batches, stream_batches
from rnnrepro.scripts import prepare_text

WORD_TRAIN = " the cat sat \n the dog <unk> N \n"
WORD_VALID = " the cat \n dog sat N \n"
WORD_TEST = " the <unk> \n"


def char_file(word_text: str) -> str:
    """The ptb.char rendering of a word-level text (lone space after the last newline)."""
    lines = [" ".join(line.strip().replace(" ", "_")) for line in word_text.splitlines()]
    return "".join(f" {line} \n" for line in lines) + " "


def write(path, content):
    path.write_text(content, encoding="utf-8")
    return path


def read_written(out_dir):
    """The splits and vocabulary a ``prepare_text`` command wrote, read as a training job reads
    them, every token checked against the vocabulary."""
    vocab = text.read_vocab(out_dir / "vocab.txt")
    splits = {name: text.read_token_file(out_dir / f"{name}.txt") for name in text.SPLITS}
    for name, seqs in splits.items():
        text.check_in_vocab(seqs, vocab, out_dir / f"{name}.txt")
    return splits, vocab


@pytest.fixture
def raw(tmp_path):
    files = {}
    for level, render in (("word", str), ("char", char_file)):
        for split, content in (("train", WORD_TRAIN), ("valid", WORD_VALID), ("test", WORD_TEST)):
            files[level, split] = write(tmp_path / f"{level}_{split}.txt", render(content))
    return files


# --- token files -----------------------------------------------------------------------------


def test_token_file_round_trip_and_validation(tmp_path):
    seqs = [["a", "b"], [], ["<eos>"]]
    text.write_token_file(seqs, tmp_path / "x.txt")
    assert (tmp_path / "x.txt").read_text() == "a b\n\n<eos>\n"
    assert text.read_token_file(tmp_path / "x.txt", empty_lines=True) == seqs  # a stream's
    with pytest.raises(ValueError, match=r"x\.txt:2: empty line"):  # a sentence has tokens
        text.read_token_file(tmp_path / "x.txt")
    bad = write(tmp_path / "bad.txt", "a b\na  b\n")
    with pytest.raises(ValueError, match=r"bad\.txt:2: empty token"):
        text.read_token_file(bad)
    with pytest.raises(ValueError, match="empty or contains whitespace"):
        text.write_token_file([["a b"]], tmp_path / "y.txt")
    assert list(tmp_path.glob(".*tmp")) == []


def test_vocab_round_trip_and_duplicates(tmp_path):
    text.write_vocab(["<eos>", "a", "_"], tmp_path / "v.txt")
    assert text.read_vocab(tmp_path / "v.txt") == ["<eos>", "a", "_"]
    with pytest.raises(ValueError, match=r"dup\.txt:3: duplicate token 'a'"):
        text.read_vocab(write(tmp_path / "dup.txt", "<eos>\na\na\n"))
    with pytest.raises(ValueError, match="duplicate"):
        text.write_vocab(["a", "a"], tmp_path / "w.txt")


def test_head_and_truncate():
    seqs = [list("abcdef"), list("ab_c"), list("x")]
    assert text.head(seqs, 2) == seqs[:2]
    assert text.head(seqs, None) == seqs
    assert text.truncate(seqs, 3) == [["a", "b", "c"], ["a", "b", "_"], ["x"]]
    with pytest.raises(ValueError):
        text.truncate(seqs, 0)


# --- multi_matrix: word / char PTB ---------------------------------------------------------------


def test_ptb_word_and_char_vocab_and_splits(raw):
    splits, vocab = text.prepare_ptb(
        raw["word", "train"], raw["word", "valid"], raw["word", "test"], "word"
    )
    assert vocab == ["<eos>", "the", "cat", "sat", "dog", "<unk>", "N"]
    assert splits["val"] == [["the", "cat"], ["dog", "sat", "N"]]
    splits, vocab = text.prepare_ptb(
        raw["char", "train"], raw["char", "valid"], raw["char", "test"], "char", cutoff=5
    )
    assert vocab[:6] == ["<eos>", "t", "h", "e", "_", "c"]
    assert "<" in vocab and "N" in vocab and len(vocab) == len(set(vocab))
    assert splits["train"] == [list("the_c"), list("the_d")]
    assert splits["test"] == [list("the_<unk>")]  # only train is truncated


def test_ptb_unknown_eval_token_names_file_line_token(tmp_path, raw):
    valid = write(tmp_path / "valid.txt", " the cat \n the zebra \n")
    with pytest.raises(ValueError, match=r"valid\.txt:2: token 'zebra' is not in the vocabulary"):
        text.prepare_ptb(raw["word", "train"], valid, raw["word", "test"], "word")


def test_ptb_reader_rejects_blank_line_and_words_at_char_level(tmp_path, raw):
    with pytest.raises(ValueError, match=r"blank\.txt:2: blank line"):
        text.read_ptb(write(tmp_path / "blank.txt", " a \n\n b \n"), "word")
    with pytest.raises(ValueError, match=r"word_train\.txt:1: token 'the'"):
        text.read_ptb(raw["word", "train"], "char")


def test_cli_ptb_round_trip(tmp_path, raw, capsys):
    out = tmp_path / "out"
    prepare_text.main(
        ["ptb", "--level", "char", "--out-dir", str(out), "--train-lines", "1"]
        + ["--eval-lines", "1", "--cutoff", "4"]
        + [f"--{s}={raw['char', s]}" for s in ("train", "valid", "test")]
    )
    assert (out / "train.txt").read_text() == "t h e _\n"
    assert (out / "val.txt").read_text() == "t h e _ c a t\n"
    splits, vocab = read_written(out)
    full_vocab = text.build_vocab(text.read_ptb(raw["char", "train"], "char"))
    assert vocab == full_vocab  # built from the full, unsliced train split
    assert splits["test"] == [list("the_<unk>")]
    assert "vocabulary 17" in capsys.readouterr().out


# --- general_second_order: normalised lines, tokenisations, folds ---------------------------------


def test_normalise_line():
    assert text.normalise_line(" Mr. <unk> paid $ N  million in 1989's Q3 \n") == (
        "mr unk paid n million in s q"
    )
    assert text.normalise_line(" -- 42 ") == ""
    assert text.normalise_lines([" a b ", " N ", "$ 5", "Hi"]) == (["a b", "hi"], 2)


def test_unigram_and_bigram_tokens():
    assert text.unigram_tokens("the cat") == ["t", "h", "e", "_", "c", "a", "t"]
    assert text.bigram_tokens("state") == ["st", "at", "e"]
    assert text.bigram_tokens("the state") == ["th", "e", "_", "st", "at", "e"]
    assert text.bigram_tokens("a to") == ["a", "_", "to"]


def test_closed_vocabularies_and_char_lengths():
    lines = ["the state of it", "a cat"]
    (_, uni), (_, bi) = (text.prepare_fold(lines, t, 0, k=2) for t in ("unigram", "bigram"))
    assert len(uni) == 27 and uni[0] == "_" and uni[1:3] == ["a", "b"]
    assert len(bi) == 703 == len(set(bi)) and bi[:27] == uni and bi[27:29] == ["aa", "ab"]
    assert text.token_char_lengths(["<eos>", "_", "a", "st"]) == [1, 1, 1, 2]
    line = "the state of it"
    lengths = dict(zip(bi, text.token_char_lengths(bi), strict=True))
    assert sum(lengths[t] for t in text.bigram_tokens(line)) == len(line)


@pytest.mark.parametrize("n", [50, 53, 1003])
def test_folds_partition(n):
    folds = text.folds(n, 5, seed=3)
    assert len(folds) == 5
    tests = [set(te) for _, _, te in folds]
    assert sorted(i for t in tests for i in t) == list(range(n))  # disjoint and covering
    for train, val, test in folds:
        assert len(set(train) | set(val) | set(test)) == len(train) + len(val) + len(test) == n
        assert abs(len(train) - 0.72 * n) <= 1
        assert abs(len(val) - 0.08 * n) <= 1
        assert abs(len(test) - 0.20 * n) <= 1
    assert text.folds(n, 5, seed=3) == folds
    assert text.folds(n, 5, seed=4) != folds


def test_lines_and_folds_cli(tmp_path, capsys):
    train = write(tmp_path / "train.txt", " the state <unk> \n $ N \n")
    valid = write(tmp_path / "valid.txt", " A cat . \n")
    test = write(tmp_path / "test.txt", "".join(f" line {w} \n" for w in "abcdefgh"))
    lines_path = tmp_path / "lines.txt"
    prepare_text.main(
        ["lines", f"--train={train}", f"--valid={valid}", f"--test={test}"]
        + ["--out", str(lines_path)]
    )
    assert "10 normalised lines kept, 1 dropped" in capsys.readouterr().out
    lines = text.read_lines(lines_path)
    assert lines[:2] == ["the state unk", "a cat"]
    out = tmp_path / "fold"
    args = ["folds", "--lines", str(lines_path), "--fold", "1", "--seed", "7", "--out-dir"]
    prepare_text.main([*args, str(out), "--tokenization", "bigram"])
    splits, vocab = read_written(out)
    assert len(vocab) == 703 and [len(splits[s]) for s in text.SPLITS] == [7, 1, 2]
    expected = {" ".join(text.bigram_tokens(line)) for line in lines}
    assert {" ".join(s) for seqs in splits.values() for s in seqs} == expected
    prepare_text.main([*args, str(out), "--tokenization", "unigram", "--train-lines", "2"])
    splits, vocab = read_written(out)
    assert len(vocab) == 27 and len(splits["train"]) == 2


def test_read_lines_rejects_unnormalised(tmp_path):
    with pytest.raises(ValueError, match=r"l\.txt:2: not a normalised line"):
        text.read_lines(write(tmp_path / "l.txt", "ok line\nBad line\n"))


# --- batches ---------------------------------------------------------------------------------


def test_lm_batches_with_bos_eos():
    (batch,) = lm_batches([[3, 4], [5]], 2, shuffle=False, bos_id=0, eos_id=0, input_pad=9)
    assert batch.indices == [0, 1]
    assert batch.inputs.tolist() == [[0, 0], [3, 5], [4, 9]]
    assert batch.targets.tolist() == [[3, 5], [4, 0], [0, IGNORE_INDEX]]


def test_lm_batches_shifted_skip_short_and_ignore_padding():
    seqs = [[3, 4, 5], [6], [7, 8], []]
    (batch,) = lm_batches(seqs, 8, shuffle=False)
    assert batch.indices == [0, 2]  # sequences without a target are skipped
    assert batch.inputs.tolist() == [[3, 7], [4, 0]]
    assert batch.targets.tolist() == [[4, 8], [5, IGNORE_INDEX]]


def test_lm_batches_shuffle_is_deterministic():
    seqs = [[1] * (i % 5 + 2) for i in range(17)]

    def order(seed):
        return [i for b in lm_batches(seqs, 4, shuffle=True, seed=seed) for i in b.indices]

    assert order(3) == order(3) != order(4)
    assert sorted(order(3)) == list(range(17)) != order(3)
    with pytest.raises(ValueError):
        lm_batches(seqs, 0, shuffle=False)


def test_stream_batches_continuity():
    ids = list(range(100, 153))  # 53 tokens, 4 columns of 13, 1 dropped
    windows = list(stream_batches(ids, 4, 5))
    assert [tuple(x.shape) for x, _ in windows] == [(5, 4), (5, 4), (2, 4)]
    inputs = torch.cat([x for x, _ in windows])
    targets = torch.cat([y for _, y in windows])
    for b in range(4):
        column = ids[13 * b : 13 * (b + 1)]
        assert inputs[:, b].tolist() == column[:-1]
        assert targets[:, b].tolist() == column[1:]
    with pytest.raises(ValueError, match="too few"):
        stream_batches(list(range(7)), 4, 5)
    x, y = next(stream_batches(torch.arange(10), 1, 20))
    assert x.flatten().tolist() == list(range(9)) and y.flatten().tolist() == list(range(1, 10))
