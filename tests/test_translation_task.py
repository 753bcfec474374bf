"""major_minor's translation runs: the prepared pairs (stand-in and SGML test sets), TF-NMT's
step schedule, the objective, and a run killed mid-epoch resuming to identical numbers."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys

import pandas as pd
import pytest
import torch
from pipeline_utils import train_signalled

from rnnrepro.data.parallel import load_bpe, read_pairs, read_sgm
from rnnrepro.models import build_model
from rnnrepro.scripts import prepare_translation
from rnnrepro.translation_task import TranslationTask, read_vocab

STAND_IN = {"train": 120, "val": 12, "test": 10, "words": 30}
RUN = {
    "architecture": "luong_nmt",
    "task": "translation",
    "hparams": {"embedding_dim": 8, "layer_sizes": [10, 10], "major_proportions": [0.7, 0.8]},
    "training": {
        "optimizer": "sgd",
        "lr": 1.0,
        "batch_size": 16,
        "grad_clip": 5.0,
        "max_epochs": 3,
        "early_stopping_patience": 3,
    },
    "translation": {
        "vocab_size": 50,
        "max_length": 50,
        "max_steps": 20,
        "halve_from": 0.5,
        "halvings": 5,
        "corpus": "stand_in",
    },
}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = tmp_path_factory.mktemp("pairs")
    prepare_translation.main(
        ["--stand-in", json.dumps(STAND_IN), "--test-names", "newstest2015", "newstest2016",
         "--vocab-size", "50", "--max-length", "50", "--out-dir", str(out)]
    )  # fmt: skip
    return out


def task(data, run=RUN) -> TranslationTask:
    files = (str(data / name) for name in ("train.tsv", "val.tsv", "vocab.txt"))
    return TranslationTask(run, 1, torch.device("cpu"), *files)


def test_the_stand_in_is_prepared_with_its_references_and_a_record(data):
    record = json.loads((data / "data.json").read_text())
    assert record["corpus"] == "stand_in"
    assert record["pairs"] == {
        "train_read": 120, "train": 120, "val": 12, "newstest2015": 10, "newstest2016": 10
    }  # fmt: skip
    vocab = read_vocab(data / "vocab.txt")
    index = {piece: i for i, piece in enumerate(vocab)}
    tests = [read_pairs(data / f"{t}.tsv", index) for t in ("newstest2015", "newstest2016")]
    assert tests[0] != tests[1] and all(len(t) == 10 for t in tests)
    references = (data / "newstest2015.ref").read_text().splitlines()
    assert len(references) == 10 and all(r.startswith("t") for r in references)
    sources = (data / "newstest2015.src").read_text().splitlines()
    assert [len(s.split()) for s in sources] == [len(r.split()) for r in references]


def test_long_training_pairs_are_left_out(tmp_path):
    prepare_translation.main(
        ["--stand-in", json.dumps(STAND_IN), "--test-names", "a", "--vocab-size", "50",
         "--max-length", "12", "--out-dir", str(tmp_path)]
    )  # fmt: skip
    record = json.loads((tmp_path / "data.json").read_text())
    kept = (tmp_path / "train.tsv").read_text().splitlines()
    assert 0 < record["pairs"]["train"] == len(kept) < 120
    assert all(len(side.split()) <= 12 for line in kept for side in line.split("\t"))
    assert record["pairs"]["val"] == 12  # the evaluated sets are kept whole


def test_a_malformed_pair_file_names_the_file_and_line(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("▁a\t▁b\n▁a ▁zzz\t▁b\n")
    with pytest.raises(ValueError, match=r"bad.tsv, line 2: piece '▁zzz'"):
        read_pairs(path, {"▁a": 4, "▁b": 5})
    path.write_text("▁a ▁b\n")
    with pytest.raises(ValueError, match=r"line 1: 1 columns, not 2"):
        read_pairs(path, {"▁a": 4, "▁b": 5})


def test_a_pair_file_cut_short_is_refused_naming_it_and_the_remake(data, tmp_path):
    """``evaluate_translation`` scored a test set cut at a line boundary over fewer sentences
    without a word."""
    for name in ("newstest2015.tsv", "vocab.txt", "data.json"):
        shutil.copy(data / name, tmp_path / name)
    index = {piece: i for i, piece in enumerate(read_vocab(tmp_path / "vocab.txt"))}
    path = tmp_path / "newstest2015.tsv"
    whole = len(read_pairs(path, index))
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:-3]))
    with pytest.raises(ValueError) as error:
        read_pairs(path, index)
    assert f"{path}: {whole - 3} pairs, but data.json beside it records {whole}" in str(error.value)
    assert f"Remake it: snakemake {path} --force" in str(error.value)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [  # sentencepiece stopped with an INTERNAL error; no training pair was kept, without a word
        ("--vocab-size", "8", "'translation.vocab_size' (or the scale's): 8, but the BPE needs"),
        ("--max-length", "1", "'translation.max_length' (or the scale's): 1, but none of the"),
    ],
)
def test_settings_the_data_cannot_honour_name_their_key(tmp_path, option, value, message):
    args = ["--stand-in", json.dumps(STAND_IN), "--test-names", "newstest2015"]
    args += ["--vocab-size", "50", "--max-length", "50", "--out-dir", str(tmp_path)]
    args[args.index(option) + 1] = value
    with pytest.raises(SystemExit, match=re.escape(f"config key {message}")):
        prepare_translation.main(args)


def test_the_bpe_model_is_the_same_bytes_wherever_it_is_made(tmp_path):
    """It embedded the name of a temporary directory."""
    for out in ("a", "b"):
        prepare_translation.main(
            ["--stand-in", json.dumps(STAND_IN), "--test-names", "newstest2015",
             "--vocab-size", "50", "--max-length", "50", "--out-dir", str(tmp_path / out)]
        )  # fmt: skip
    assert (tmp_path / "a/bpe.model").read_bytes() == (tmp_path / "b/bpe.model").read_bytes()


def test_a_damaged_bpe_model_names_the_file_and_the_remake(data, tmp_path):
    path = tmp_path / "bpe.model"
    path.write_bytes((data / "bpe.model").read_bytes()[:1000])
    with pytest.raises(ValueError) as error:
        load_bpe(path)
    assert f"{path}: not a sentencepiece model" in str(error.value)
    assert f"Remake it: snakemake {path} --force --cores 1" in str(error.value)


def test_lines_end_at_newline_alone_and_pieces_at_single_spaces(tmp_path):
    # a raw line with a carriage return stays one line (its pair stays aligned), and U+0085,
    # which sentencepiece keeps as a piece, is a piece, not a separator
    sides = {
        "src": [f"ein haus {k} \r mit garten" for k in range(30)],
        "tgt": [f"a house {k} \x85 with a garden" for k in range(30)],
    }
    for side, lines in sides.items():
        (tmp_path / f"c.{side}").write_bytes("".join(f"{x}\n" for x in lines).encode())
    files = [str(tmp_path / "c.src"), str(tmp_path / "c.tgt")]
    prepare_translation.main(
        ["--train-src", files[0], "--train-tgt", files[1], "--val", *files,
         "--test", "t", *files, "--vocab-size", "60", "--max-length", "50",
         "--out-dir", str(tmp_path / "out")]
    )  # fmt: skip
    out = tmp_path / "out"
    vocab = read_vocab(out / "vocab.txt")
    index = {piece: i for i, piece in enumerate(vocab)}
    pairs = read_pairs(out / "train.tsv", index)
    assert len(pairs) == 30
    assert all(any("\x85" in vocab[i] for i in target) for _, target in pairs)
    refs = (out / "t.ref").read_bytes().decode().split("\n")[:-1]
    assert refs == sides["tgt"]


def test_sgml_segments_are_read_in_order_and_unescaped(tmp_path):
    path = tmp_path / "t.sgm"
    path.write_text(
        '<srcset setid="x">\n<doc docid="d">\n<seg id="1">Tom &amp; Jerry</seg>\n'
        '<seg id="2"> a &lt;b&gt; </seg>\n</doc>\n</srcset>\n'
    )
    assert read_sgm(path) == ["Tom & Jerry", "a <b>"]


def test_steps_are_cut_into_epochs_and_the_rate_halves_as_luong10(data):
    t = task(data)
    steps = [[step for step, _ in t.batches(epoch)] for epoch in range(3)]
    assert steps == [list(range(0, 7)), list(range(7, 14)), list(range(14, 20))]
    # from step 10 (0.5 x 20) on, halved every 2 steps, 5 times at most
    scales = [t.lr_scale(s) for s in range(20)]
    assert scales[:12] == [1.0] * 10 + [1.0, 1.0]
    assert scales[12:] == [0.5, 0.5, 0.25, 0.25, 0.125, 0.125, 0.0625, 0.0625]


def test_a_steps_batch_depends_on_the_step_alone(data):
    a, b = task(data), task(data)
    first = dict(a.batches(0))
    # b starts in epoch 2 (another pass over the pairs); the batches agree step for step
    later = dict(b.batches(2))
    again = dict(a.batches(2))
    for step, batch in later.items():
        assert torch.equal(batch.src, again[step].src)
    assert len(a._batches) == 8  # 120 pairs in batches of 16: 8 a pass, 2.5 passes in 20 steps
    assert not torch.equal(first[0].src, later[min(later)].src)


def test_the_objective_is_the_summed_nll_per_sentence(data):
    t = task(data)
    model = build_model("luong_nmt", t.vocab, **RUN["hparams"])
    step, batch = next(iter(t.batches(0)))
    loss = t.batch_loss(model, (step, batch))
    assert loss.count == batch.src.size(1) == 16
    assert loss.nll.item() > batch.tokens * 1.0  # a sum over tokens, not a mean


def cmd(data, out, name):
    return [
        sys.executable, "-m", "rnnrepro.scripts.train_translation", "--run", json.dumps(RUN),
        "--seed", "1", "--device", "cpu", "--train", str(data / "train.tsv"),
        "--val", str(data / "val.tsv"), "--vocab", str(data / "vocab.txt"),
        "--checkpoint", str(out / f"{name}.ckpt"), "--out-model", str(out / name / "model.pt"),
        "--out-history", str(out / name / "history.csv"),
    ]  # fmt: skip


def test_a_run_killed_mid_epoch_resumes_to_identical_numbers(data, tmp_path):
    subprocess.run(cmd(data, tmp_path, "whole"), check=True, capture_output=True)
    code = train_signalled(cmd(data, tmp_path, "killed"), signal.SIGTERM, epoch=1, batch=2)
    assert code == 128 + signal.SIGTERM
    state = torch.load(tmp_path / "killed.ckpt", weights_only=True)
    assert state["epoch"] == 1 and state["partial"]["batches"] == 3  # inside epoch 2
    subprocess.run(cmd(data, tmp_path, "killed"), check=True, capture_output=True)
    histories = [
        pd.read_csv(tmp_path / n / "history.csv").drop(columns="seconds")
        for n in ("whole", "killed")
    ]
    pd.testing.assert_frame_equal(*histories)
    models = [torch.load(tmp_path / n / "model.pt", weights_only=True) for n in ("whole", "killed")]
    assert all(
        torch.equal(models[0]["state_dict"][k], v) for k, v in models[1]["state_dict"].items()
    )
    assert len(histories[0]) == 3 and histories[0]["val_ppl"].notna().all()
