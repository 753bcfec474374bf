"""Dynamic evaluation (docs/methods.md §12.2, mos/dynamiceval.py): gradient statistics, decay rates,
the update rule, static evaluation as its η = 0 limit, and an interrupted job resuming exactly."""

from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn.functional as F

from rnnrepro.evaluation.dynamic import (
    DynamicEvalSettings,
    Progress,
    adapt,
    decay_rates,
    gradient_statistics,
)
from rnnrepro.evaluation.text import evaluate_stream
from rnnrepro.models import build_model, save_model
from rnnrepro.scripts import dynamic_eval as script

VOCAB = ["<eos>", *[f"w{i}" for i in range(11)]]


def model():
    torch.manual_seed(0)
    return build_model("awd_lstm", VOCAB, embedding_dim=6, layer_sizes=[10, 6],
                       major_proportions=[0.8, 1.0], dropout=0.3, weight_drop=0.5)  # fmt: skip


def stream(n, seed):
    return torch.randint(0, len(VOCAB), (n,), generator=torch.Generator().manual_seed(seed))


SETTINGS = DynamicEvalSettings(batch_size=4, lr=0.002, epsilon=0.001, lamb=0.02, bptt=5)


def test_gradient_statistics_are_the_root_of_summed_squares():
    lm, ids = model(), stream(203, 1)
    ms = gradient_statistics(lm, ids, SETTINGS)
    expected = {n: torch.zeros_like(p) for n, p in lm.named_parameters()}
    columns = ids[:200].view(4, 50).T  # 4 columns of 50 tokens
    state = None
    for start in range(0, 49, 5):
        lm.zero_grad()
        inputs, targets = columns[start : start + 5], columns[start + 1 : start + 6]
        steps = min(5, 49 - start)
        logits, state = lm(inputs[:steps], state)
        F.cross_entropy(logits.reshape(-1, len(VOCAB)), targets[:steps].reshape(-1)).backward()
        state = [((h.detach(), c.detach()), s2 and (s2[0].detach(), s2[1].detach()))
                 for (h, c), s2 in state]  # fmt: skip
        for n, p in lm.named_parameters():
            expected[n] += p.grad**2
    for n in expected:
        assert torch.allclose(ms[n], expected[n].sqrt(), atol=1e-6), n
    assert not lm.training  # statistics without dropout


def test_decay_rates_are_normalised_by_the_summed_means_and_clipped():
    ms = {"a": torch.tensor([1.0, 3.0]), "b": torch.tensor([2.0, 2.0, 2.0, 2.0])}
    rates = decay_rates(ms, lamb=0.5)  # sum of means = 2 + 2 = 4; clip at 2
    assert torch.allclose(rates["a"], torch.tensor([0.25, 0.75]))
    rates = decay_rates({"a": torch.tensor([100.0, 1.0])}, lamb=0.5)  # mean 50.5: no clip
    assert rates["a"].max() == pytest.approx(100 / 50.5)
    rates = decay_rates({"a": torch.tensor([1.0]), "b": torch.tensor([1e-3])}, lamb=2.0)
    assert rates["a"].item() == pytest.approx(0.5)  # 1 / 1.001 clipped at 1 / λ


def test_one_step_follows_the_update_rule():
    lm, ids = model(), stream(7, 2)
    ms = {n: torch.rand_like(p) for n, p in lm.named_parameters()}
    decay = decay_rates(ms, SETTINGS.lamb)
    theta0 = {n: p.detach() + 0.01 for n, p in lm.named_parameters()}  # pulled towards these
    before = {n: p.detach().clone() for n, p in lm.named_parameters()}
    lm.eval()
    lm.zero_grad()
    logits, _ = lm(ids[:5].view(5, 1))
    F.cross_entropy(logits.view(-1, len(VOCAB)), ids[1:6]).backward()
    grads = {n: p.grad.clone() for n, p in lm.named_parameters()}
    progress = Progress()
    adapt(lm, ids[:6], ms, decay, theta0, SETTINGS, progress, should_stop=lambda: True)
    for n, p in lm.named_parameters():
        expected = before[n] + SETTINGS.lamb * decay[n] * (theta0[n] - before[n])
        expected -= SETTINGS.lr * grads[n] / (ms[n] + SETTINGS.epsilon)
        assert torch.allclose(p, expected, atol=1e-6), n


def test_without_updates_it_is_static_evaluation_in_one_column():
    lm, ids = model(), stream(58, 3)
    ms = gradient_statistics(lm, stream(120, 4), SETTINGS)
    theta0 = {n: p.detach().clone() for n, p in lm.named_parameters()}
    frozen = DynamicEvalSettings(batch_size=4, lr=1e-12, epsilon=1.0, lamb=1e-12, bptt=5)
    progress = Progress()
    assert adapt(lm, ids, ms, decay_rates(ms, frozen.lamb), theta0, frozen, progress)
    static = evaluate_stream(lm, ids, batch_size=1, bptt=5)
    assert progress.tokens == static.tokens == 57  # the last, shorter window counts by length
    assert progress.nll / progress.tokens == pytest.approx(static.loss, rel=1e-5)
    adapted = Progress()
    with torch.no_grad():
        for n, p in lm.named_parameters():
            p.copy_(theta0[n])
    adapt(lm, ids, ms, decay_rates(ms, SETTINGS.lamb), theta0, SETTINGS, adapted)
    assert adapted.nll != pytest.approx(progress.nll, rel=1e-6)  # adaptation changes the score


@pytest.fixture
def job(tmp_path):
    files = {}
    for split, (n, seed) in {"train": (300, 5), "val": (61, 6), "test": (73, 7)}.items():
        ids = stream(n, seed).tolist()
        files[split] = tmp_path / f"{split}.txt"
        files[split].write_text(" ".join(VOCAB[i] for i in ids if i) + "\n")
    record = {"experiment": "e", "dataset": "d", "model": "m", "seed": 1, "stage": "finetune"}
    files["model"] = tmp_path / "model.pt"
    save_model(model(), files["model"], "awd_lstm", VOCAB, dict(
        embedding_dim=6, layer_sizes=[10, 6], major_proportions=[0.8, 1.0], dropout=0.3,
        weight_drop=0.5), run={"training": {}}, identity=record, epochs=1, best_epoch=1,
        train_seconds=1.0, stopped_because="", params={"total": 1, "recurrent": 1})  # fmt: skip
    settings = {"batch_size": 3, "lr": 0.01, "epsilon": 0.001, "lamb": 0.02, "bptt": 4}

    def run(name, checkpoint, mode=None, **extra):
        mode = {"mode": mode} if mode else {}
        argv = [f"--{k}={v}" for k, v in files.items() if k != "model"]
        argv += [f"--model={files['model']}", f"--settings={json.dumps(settings | mode)}",
                 "--scale=smoke",
                 "--device=cpu", f"--checkpoint={tmp_path / checkpoint}",
                 f"--out={tmp_path / name}"]  # fmt: skip
        argv += [f"--{k}={v}" for k, v in extra.items()]
        status = script.main(argv)
        return status, json.loads((tmp_path / name).read_text()) if status == 0 else None

    run.tmp_path = tmp_path
    return run


class Killed(Exception):
    pass


def test_the_job_records_its_mode_and_the_modes_differ(job):
    status, krause = job("krause.json", "krause.ckpt")
    assert status == 0 and krause["dynamic_eval_mode"] == "krause"
    status, mos = job("mos.json", "mos.ckpt", "mos")
    assert (
        status == 0 and mos["dynamic_eval_mode"] == "mos" and mos["dynamic_eval"]["mode"] == "mos"
    )
    assert mos["test"]["loss"] != pytest.approx(krause["test"]["loss"], rel=1e-4)
    with pytest.raises(ValueError, match=r"dynamic_eval\.<name>\.mode"):
        job("bad.json", "bad.ckpt", "Krause")


@pytest.mark.parametrize("mode", [None, "mos"])
def test_a_killed_job_resumes_to_the_same_numbers(job, monkeypatch, mode):
    status, whole = job("whole.json", "whole.ckpt", mode)
    assert status == 0 and whole["stage"] == "dynamic_eval"
    assert whole["evaluated_stage"] == "finetune" and math.isfinite(whole["test"]["ppl"])
    saves = []
    real_save = script.save_torch

    def save_then_die(obj, path):  # killed right after the 3rd checkpoint (mid validation)
        real_save(obj, path)
        saves.append(obj["split"] and obj["split"]["windows"])
        if len(saves) == 3:
            raise Killed

    monkeypatch.setattr(script, "save_torch", save_then_die)
    with pytest.raises(Killed):
        job("resumed.json", "resumed.ckpt", mode, **{"save-every": 0})
    assert saves == [None, 1, 2]  # statistics, then after windows 1 and 2 of validation
    monkeypatch.setattr(script, "save_torch", real_save)
    torch.manual_seed(4321)  # another random state in the process: nothing changes
    status, resumed = job("resumed.json", "resumed.ckpt", mode, **{"save-every": 0})
    assert status == 0
    for split in ("val", "test"):
        assert resumed[split] == whole[split]


def test_sigterm_checkpoints_and_the_rerun_resumes_to_the_same_numbers(job, monkeypatch):
    import os
    import signal

    _, whole = job("whole.json", "whole.ckpt")
    calls = []

    def signal_at_window_5(seconds):
        def due():
            calls.append(1)
            if len(calls) == 5:  # SLURM's SIGTERM arrives during the 5th validation window
                os.kill(os.getpid(), signal.SIGTERM)
            return False

        return due

    monkeypatch.setattr(script, "every", signal_at_window_5)
    status, _ = job("resumed.json", "resumed.ckpt")
    assert status == 128 + signal.SIGTERM
    saved = torch.load(job.tmp_path / "resumed.ckpt", weights_only=True)
    assert saved["split"]["name"] == "val" and saved["split"]["windows"] in (5, 6)
    monkeypatch.undo()
    status, resumed = job("resumed.json", "resumed.ckpt")
    assert status == 0 and resumed["val"] == whole["val"] and resumed["test"] == whole["test"]
