"""The training loop's procedures on their own: stopping rules, plateau decay, best-epoch choice,
non-finite losses (scripted validation losses, a one-parameter model)."""

from __future__ import annotations

import math
import os
import signal

import pytest
import torch
from torch import nn

from rnnrepro.procedures import BatchLoss, DecayOnIncrease, Procedure
from rnnrepro.training import (
    NonFiniteLoss,
    Task,
    TrainingInterrupted,
    history_columns_for,
    train,
)


class Counter(nn.Module):
    """One weight; each optimiser step moves it, so the best state tells which epoch it is."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(()))

    def set_epoch(self, epoch: int) -> None:
        pass


def run(tmp_path, val_losses, train_losses=None, **settings):
    """Train for len(val_losses) epochs at most with the given validation losses (one batch per
    epoch); returns the result, the best state and the model."""
    defaults = dict(lr=0.1, batch_size=1, max_epochs=len(val_losses), early_stopping_patience=99)
    model = Counter()
    epochs = iter(val_losses)
    batch_values = iter(train_losses or [])

    def batch_loss(m, batch):
        value = next(batch_values, None)
        loss = -m.w if value is None else m.w * 0 + value  # gradient -1: w grows by lr per step
        return loss, 1

    task = ScriptedTask(batch_loss, lambda m: {"loss": next(epochs)})
    result, best = train(
        model,
        Procedure(**{**defaults, **settings}),
        task,
        checkpoint=tmp_path / "ckpt.pt",
        digest="test",
        log=lambda line: None,
    )
    return result, best, model


class ScriptedTask(Task):
    """One batch per epoch; loss and validation from the test's script; no carried state."""

    history_columns = history_columns_for(())

    def __init__(self, batch_loss, evaluate):
        self.batch_loss, self.evaluate = batch_loss, evaluate

    def batches(self, epoch):
        return [None]


def test_patience_stops_and_keeps_the_best_epoch(tmp_path):
    result, best, model = run(tmp_path, [3.0, 2.0, 2.5, 2.6, 2.7, 1.0], early_stopping_patience=3)
    assert len(result.history) == 5 and result.stopped_because == "no improvement for 3 epochs"
    assert result.best_epoch == 2 and result.best_loss == 2.0
    # Adam moves w by ~lr per step: the kept state is the one after epoch 2, not the last
    assert model.w.item() == pytest.approx(0.5, abs=0.02)
    assert best["w"].item() == pytest.approx(0.2, abs=0.02)


def test_stop_loss(tmp_path):
    result, _, _ = run(tmp_path, [1e-3, 1e-6, 1e-7], stop_loss=1e-5)
    assert len(result.history) == 2 and result.stopped_because == "validation loss below 1e-05"


def test_max_epochs(tmp_path):
    result, _, _ = run(tmp_path, [3.0, 2.0, 1.0])
    assert result.stopped_because == "reached max_epochs=3" and result.best_epoch == 3


def test_plateau_decay_halves_the_lr_after_patience_bad_epochs(tmp_path):
    losses = [3.0, 2.0, 2.5, 2.6, 2.7, 2.8, 1.0]
    result, _, _ = run(tmp_path, losses, lr_decay=0.5, lr_patience=1)
    lrs = [row["lr"] for row in result.history]
    # the row records the lr used in that epoch; ReduceLROnPlateau(patience=1) decays once more
    # than one epoch in a row has not improved: after epochs 4 and 6
    assert lrs == pytest.approx([0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.025])


def test_no_decay_without_lr_decay(tmp_path):
    result, _, _ = run(tmp_path, [3.0, 4.0, 5.0, 6.0])
    assert {row["lr"] for row in result.history} == {0.1}


def test_non_finite_training_loss_stops_at_once(tmp_path):
    with pytest.raises(NonFiniteLoss, match=r"training loss nan in epoch 2, batch 1"):
        run(tmp_path, [3.0, 2.0, 1.0], train_losses=[1.0, math.nan, 1.0])


def test_non_finite_validation_loss_stops_at_once(tmp_path):
    with pytest.raises(NonFiniteLoss, match=r"validation loss inf after epoch 2"):
        run(tmp_path, [3.0, math.inf, 1.0])


@pytest.mark.parametrize(
    "val_losses, train_losses, message, best_w",
    [  # scripted training losses have no gradient: w stays 0; otherwise it grows 0.1 a step
        ([3.0, 2.0, 1.0, 0.5], [1.0, 1.0, math.nan], "training loss nan in epoch 3, batch 1", 0),
        ([3.0, 2.0, math.nan, 0.5], None, "validation loss nan after epoch 3", 0.2),
    ],
)
def test_a_procedure_may_declare_the_run_diverged(
    tmp_path, val_losses, train_losses, message, best_w
):
    result, best, _ = run(tmp_path, val_losses, train_losses, on_nonfinite="diverged")
    assert result.diverged and result.stopped_because == f"diverged: {message}"
    assert [row["epoch"] for row in result.history] == [1, 2]  # nothing after the divergence
    assert result.best_epoch == 2 and best["w"].item() == pytest.approx(best_w)


def test_per_batch_lr_scale_moves_by_the_scaled_lr_and_restores_the_base_lr(tmp_path):
    """AWD-LSTM's variable BPTT: the step of a batch uses lr · scale; schedules see lr."""
    scales = iter([0.5, 2.0])
    task = ScriptedTask(
        lambda m, batch: BatchLoss(-m.w, 1, None, next(scales)), lambda m: {"loss": 1.0}
    )
    settings = Procedure(lr=0.1, batch_size=1, max_epochs=2, early_stopping_patience=9,
                         optimizer="sgd")  # fmt: skip
    model = Counter()
    result, _ = train(model, settings, task, tmp_path / "c.pt", "lr", lambda _: None)
    assert model.w.item() == pytest.approx(0.05 + 0.2)
    assert [row["lr"] for row in result.history] == [0.1, 0.1]


def test_objective_adds_ar_tar_and_the_model_terms():
    raw = torch.tensor([[1.0], [3.0], [6.0]])  # [T, features]: steps differ by 2 and 3
    aux = {"output": 2 * raw, "raw_output": raw, "losses": {"policy": torch.tensor(0.25)}}
    batch = BatchLoss(torch.tensor(8.0), 4, aux)
    plain = Procedure(lr=1, batch_size=1, max_epochs=1, early_stopping_patience=1)
    assert plain.objective(batch).item() == pytest.approx(2.0 + 0.25)
    awd = Procedure(lr=1, batch_size=1, max_epochs=1, early_stopping_patience=1, ar=2.0, tar=1.0)
    ar = 2.0 * (4 + 36 + 144) / 3
    tar = 1.0 * (4 + 9) / 2
    assert awd.objective(batch).item() == pytest.approx(2.0 + 0.25 + ar + tar)
    assert awd.objective(BatchLoss(torch.tensor(8.0), 4)).item() == pytest.approx(2.0)


@pytest.mark.parametrize(
    "optimizer, expected",
    [
        ("sgd", 0.1),  # w - lr * grad, grad = -1
        ("adam", 0.1),  # Adam's first step is lr * sign(grad)
        ("rmsprop", 0.1 / (0.01**0.5 + 1e-8)),  # lr * g / sqrt((1 - alpha) g^2)
        ("rmsprop_tf", 0.1 / (0.9 + 0.1 + 1e-10) ** 0.5),  # v from 1: lr * g / sqrt(0.9 + 0.1 g^2)
        ("rmsprop_corrected", 0.1 / (1 + 1e-8)),  # bias-corrected: v / (1 - β2) = g^2
    ],
)
def test_optimizer_choice(tmp_path, optimizer, expected):
    _, _, model = run(tmp_path, [1.0], optimizer=optimizer)
    assert model.w.item() == pytest.approx(expected, rel=1e-4)


def test_weight_decay_enters_the_gradient(tmp_path):
    _, _, model = run(tmp_path, [1.0, 1.0], optimizer="sgd", weight_decay=0.5)
    # step 1: w = 0.1; step 2: grad = -1 + 0.5 * 0.1 = -0.95 -> w = 0.1 + 0.095
    assert model.w.item() == pytest.approx(0.195)


def test_tensorflow_rmsprop_follows_its_update_rule_with_l2_in_the_gradient(tmp_path):
    """Three steps of ``rmsprop_tf`` with weight decay against the rule written out: the ℓ2 term
    enters the gradient before the accumulator, which starts at 1 and decays by 0.9."""
    _, _, model = run(tmp_path, [1.0] * 3, optimizer="rmsprop_tf", weight_decay=0.5)
    w, v = 0.0, 1.0
    for _ in range(3):
        g = -1.0 + 0.5 * w
        v = 0.9 * v + 0.1 * g * g
        w -= 0.1 * g / math.sqrt(v + 1e-10)
    assert model.w.item() == pytest.approx(w, rel=1e-6)
    torch_rmsprop = run(tmp_path / "torch", [1.0] * 3, optimizer="rmsprop", weight_decay=0.5)[2]
    assert abs(torch_rmsprop.w.item() - w) > 0.5  # the two forms differ from the first step


def test_corrected_rmsprop_is_adam_without_momentum_and_keeps_one_moment(tmp_path):
    """Three steps of ``rmsprop_corrected`` (deepmind/lamb's "rmsprop") with weight decay
    against the rule written out: v from 0 with β2 = 0.999, divided by 1 − β2^t, ε outside the
    root; the same weights as ``torch.optim.Adam`` with β1 = 0, and one state tensor, not two."""
    _, _, model = run(tmp_path, [1.0] * 3, optimizer="rmsprop_corrected", weight_decay=0.5)
    w, v = 0.0, 0.0
    for t in range(1, 4):
        g = -1.0 + 0.5 * w
        v = 0.999 * v + 0.001 * g * g
        w -= 0.1 * g / (math.sqrt(v / (1 - 0.999**t)) + 1e-8)
    assert model.w.item() == pytest.approx(w, rel=1e-6)
    weight = nn.Parameter(torch.zeros(()))
    adam = torch.optim.Adam([weight], lr=0.1, betas=(0.0, 0.999), weight_decay=0.5)
    for _ in range(3):
        adam.zero_grad()
        (-weight).backward()
        adam.step()
    assert model.w.item() == pytest.approx(weight.item(), rel=1e-6)
    optimizer = Procedure(lr=0.1, batch_size=1, max_epochs=1, early_stopping_patience=1,
                          optimizer="rmsprop_corrected").make_optimizer(model)  # fmt: skip
    model.w.grad = torch.ones(())
    optimizer.step()
    assert set(optimizer.state[model.w]) == {"step", "square_avg"}


def test_unknown_optimizer_and_asgd_without_sgd_are_refused():
    with pytest.raises(ValueError, match="unknown optimizer 'adagrad'"):
        Procedure(lr=1, batch_size=1, max_epochs=1, early_stopping_patience=1,
                  optimizer="adagrad")  # fmt: skip
    with pytest.raises(ValueError, match="needs optimizer: sgd"):
        Procedure(lr=1, batch_size=1, max_epochs=1, early_stopping_patience=1,
                  asgd_nonmono=5)  # fmt: skip
    with pytest.raises(ValueError, match="on_nonfinite must be one of error, diverged"):
        Procedure(lr=1, batch_size=1, max_epochs=1, early_stopping_patience=1,
                  on_nonfinite="ignore")  # fmt: skip


def asgd_run(tmp_path, losses, nonmono):
    """SGD (w grows by lr = 0.1 per step) with NT-ASGD; returns (history, best state, the
    weight each validation saw)."""
    seen, scripted = [], iter(losses)

    def evaluate(m):
        seen.append(m.w.item())
        return {"loss": next(scripted)}

    settings = Procedure(
        lr=0.1, batch_size=1, max_epochs=len(losses), early_stopping_patience=99,
        optimizer="sgd", asgd_nonmono=nonmono,
    )  # fmt: skip
    task = ScriptedTask(lambda m, batch: (-m.w, 1), evaluate)
    result, best = train(
        Counter(), settings, task, tmp_path / f"{len(losses)}-{nonmono}.pt", "asgd", lambda _: None
    )
    return result.history, best, seen


def test_nt_asgd_switches_and_validates_on_the_averaged_weights(tmp_path):
    # no switch before the last epoch: 1.5 and 1.6 are better than the best loss more than two
    # epochs back (3.0, then 2.0), 0.5 improves, and only 2.0 in the last epoch is worse
    history, _, seen = asgd_run(tmp_path, [3.0, 2.0, 1.0, 1.5, 1.6, 0.5, 2.0], nonmono=2)
    assert [row["averaged"] for row in history] == [False] * 7
    assert seen == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    # epoch 3: 3.0 > min(1.0) with 2 earlier epochs -> average from epoch 4 on; the iterates
    # after epochs 4, 5, 6 are 0.4, 0.5, 0.6 -> validation sees their running means
    history, best, seen = asgd_run(tmp_path, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], nonmono=1)
    assert [row["averaged"] for row in history] == [False] * 3 + [True] * 3
    assert seen == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.45, 0.5])
    assert best["w"].item() == pytest.approx(0.1)  # the best epoch (1) before averaging
    _, best, _ = asgd_run(tmp_path, [1.0, 2.0, 3.0, 0.5], nonmono=1)
    assert best["w"].item() == pytest.approx(0.4)  # best epoch 4 keeps the averaged weights


def test_fine_tuning_averages_from_the_start_and_stops_when_non_monotone(tmp_path):
    # the starting model scores 1.0; epochs then 2.0, 1.5, 0.8, 0.9, 0.95, 1.2 (interval 2):
    # epoch 6's 1.2 is worse than the best (0.8) of the epochs more than 2 back -> stop
    result, best, _ = run(
        tmp_path, [1.0, 2.0, 1.5, 0.8, 0.9, 0.95, 1.2, 0.1], optimizer="sgd", asgd_nonmono=2,
        average_from_start=True,
    )  # fmt: skip
    assert len(result.history) == 6 and result.stopped_because.startswith("non-monotone")
    assert all(row["averaged"] for row in result.history)
    assert result.best_epoch == 3
    assert best["w"].item() == pytest.approx(0.2)  # the mean of the iterates 0.1, 0.2, 0.3


def test_fine_tuning_keeps_the_starting_model_when_no_epoch_beats_it(tmp_path):
    result, best, _ = run(
        tmp_path, [0.5, 1.0, 2.0, 3.0, 4.0], optimizer="sgd", asgd_nonmono=1,
        average_from_start=True,
    )  # fmt: skip
    assert result.best_epoch == 0 and best["w"].item() == 0.0
    assert len(result.history) == 3  # 3.0 > min(1.0) of the epochs more than 1 back


def test_fine_tuning_needs_the_non_monotone_interval():
    with pytest.raises(ValueError, match="average_from_start"):
        Procedure(lr=1, batch_size=1, max_epochs=1, early_stopping_patience=1, optimizer="sgd",
                  average_from_start=True)  # fmt: skip


def test_decay_on_increase_counts_rises_in_a_row_not_epochs_without_a_best(tmp_path):
    """second_order_lstm's "LR decay of 0.5, with patience 3" read as rises of the validation
    loss."""
    losses = [3.0, 2.0, 2.5, 2.4, 2.45, 2.5, 2.6, 2.7, 2.0]
    result, _, _ = run(tmp_path, losses, lr_decay=0.5, lr_patience=2, lr_decay_on="increase")
    lrs = [row["lr"] for row in result.history]
    # rises in epochs 3, then 5, 6, 7 in a row: more than 2 in a row first after epoch 7
    assert lrs == pytest.approx([0.1] * 7 + [0.05] * 2)
    plateau, _, _ = run(tmp_path / "p", losses, lr_decay=0.5, lr_patience=2)
    # the plateau reading decays after 3 epochs without a new best: after epochs 5 and 8
    assert [row["lr"] for row in plateau.history] == pytest.approx([0.1] * 5 + [0.05] * 3 + [0.025])


def test_the_plateau_threshold_is_relative(tmp_path):
    """A new best by less than lr_decay_threshold (relative) counts as no improvement."""
    losses = [1.0, 0.99995, 0.9999, 0.99985, 0.5]
    result, _, _ = run(tmp_path, losses, lr_decay=0.5, lr_patience=1, lr_decay_threshold=1e-4)
    assert [row["lr"] for row in result.history] == pytest.approx([0.1, 0.1, 0.1, 0.05, 0.05])
    exact, _, _ = run(tmp_path / "e", losses, lr_decay=0.5, lr_patience=1, lr_decay_threshold=0)
    assert {row["lr"] for row in exact.history} == {0.1}


def test_stopping_on_rises_in_a_row(tmp_path):
    losses = [3.0, 2.0, 2.5, 2.4, 2.5, 2.6, 2.7, 1.0]
    result, _, _ = run(tmp_path, losses, early_stopping_patience=3, stop_on="increase")
    assert len(result.history) == 7 and result.best_epoch == 2
    assert result.stopped_because == "validation loss rose 3 epochs in a row"
    plateau, _, _ = run(tmp_path / "p", losses, early_stopping_patience=3)
    assert len(plateau.history) == 5 and plateau.stopped_because == "no improvement for 3 epochs"


def test_the_rise_count_survives_a_checkpoint():
    """DecayOnIncrease's state (``state_dict``) is what a resumed run continues from."""
    losses = [3.0, 2.0, 2.5, 2.6, 2.7, 2.8, 2.9]
    whole = DecayOnIncrease(torch.optim.SGD([nn.Parameter(torch.zeros(()))], lr=1.0), 0.5, 1)
    first = DecayOnIncrease(torch.optim.SGD([nn.Parameter(torch.zeros(()))], lr=1.0), 0.5, 1)
    for loss in losses[:4]:
        whole.step(loss)
        first.step(loss)
    optimizer = torch.optim.SGD([nn.Parameter(torch.zeros(()))], lr=1.0)
    optimizer.load_state_dict(first.optimizer.state_dict())
    resumed = DecayOnIncrease(optimizer, 0.5, 1)
    resumed.load_state_dict(first.state_dict())
    for loss in losses[4:]:
        whole.step(loss)
        resumed.step(loss)
    assert resumed.optimizer.param_groups[0]["lr"] == whole.optimizer.param_groups[0]["lr"] == 0.25


@pytest.mark.parametrize("key", ["lr_decay_on", "stop_on"])
def test_an_unknown_reading_is_refused(key):
    with pytest.raises(ValueError, match=f"{key} must be one of no_improvement, increase"):
        Procedure(lr=0.1, batch_size=1, max_epochs=1, early_stopping_patience=1, **{key: "rise"})


def test_an_unknown_validation_temperature_is_refused():
    with pytest.raises(ValueError, match="validation_temperature must be one of training, test"):
        Procedure(lr=0.1, batch_size=1, max_epochs=1, early_stopping_patience=1,
                  validation_temperature="hard")  # fmt: skip


class SoftChoice(Counter):
    """A Counter with the attention LSTM's switch between soft and hard (test) choices."""

    def __init__(self):
        super().__init__()
        self.hard = False

    def set_hard(self, hard: bool) -> None:
        self.hard = hard


@pytest.mark.parametrize(("reading", "hard_in_validation"), [("training", False), ("test", True)])
def test_validation_temperature_is_a_reading_of_the_procedure(
    tmp_path, reading, hard_in_validation
):
    """second_order_lstm does not say at which temperature the attention LSTM validates: "test"
    validates hard (as it is tested) and trains soft again afterwards; "training" stays soft."""
    model, seen = SoftChoice(), {"train": [], "val": []}

    def batch_loss(m, batch):
        seen["train"].append(m.hard)
        return -m.w, 1

    def evaluate(m):
        seen["val"].append(m.hard)
        return {"loss": 1.0 / (len(seen["val"]) + 1)}

    procedure = Procedure(lr=0.1, batch_size=1, max_epochs=3, early_stopping_patience=9,
                          validation_temperature=reading)  # fmt: skip
    train(model, procedure, ScriptedTask(batch_loss, evaluate), checkpoint=tmp_path / "c.pt",
          digest="test", log=lambda line: None)  # fmt: skip
    assert seen == {"train": [False] * 3, "val": [hard_in_validation] * 3}
    assert model.hard is False


def test_history_rows_have_the_tasks_columns(tmp_path):
    """The loop fills the columns the task declares: its own, and each val_<metric> from the
    task's validation metrics (None when it reports no such metric), then the tags."""
    task = ScriptedTask(lambda m, batch: (-m.w, 1), lambda m: {"loss": 1.0, "acc": 0.5})
    task.history_columns = history_columns_for(("acc", "bpc"))
    settings = Procedure(lr=0.1, batch_size=1, max_epochs=1, early_stopping_patience=9)
    tags = {"device": "cpu"}
    result, _ = train(Counter(), settings, task, tmp_path / "a.pt", "a", lambda _: None, tags)
    (row,) = result.history
    assert list(row) == [
        "epoch", "train_loss", "val_loss", "val_acc", "val_bpc", "temperature", "lr", "seconds",
        "device",
    ]  # fmt: skip
    assert row["val_acc"] == 0.5 and row["val_bpc"] is None and row["temperature"] is None
    task.history_columns = ("epoch", "accuracy")
    with pytest.raises(ValueError, match="'accuracy'"):
        train(Counter(), settings, task, tmp_path / "b.pt", "b", lambda _: None)


class StepsTask(ScriptedTask):
    """``per_epoch`` batches an epoch; optionally a signal to itself before batch ``signal_at``
    (a global step count), as SLURM sends before a time limit."""

    def __init__(self, batch_loss, evaluate, per_epoch: int, signal_at: int | None = None):
        super().__init__(batch_loss, evaluate)
        self.per_epoch, self.signal_at, self.calls = per_epoch, signal_at, 0

    def batches(self, epoch):
        return [None] * self.per_epoch


def run_steps(tmp_path, evaluate, per_epoch=3, signal_at=None, **settings):
    """Train the one-weight model (each step moves w by ~lr) under ``eval_every``."""
    defaults = dict(lr=0.1, batch_size=1, early_stopping_patience=99, optimizer="sgd")
    model = Counter()
    task = StepsTask(None, evaluate, per_epoch, signal_at)

    def batch_loss(m, batch):
        task.calls += 1
        if task.calls == task.signal_at:
            os.kill(os.getpid(), signal.SIGUSR1)
        return -m.w, 1

    task.batch_loss = batch_loss
    procedure = Procedure(**{**defaults, **settings})
    result, best = train(model, procedure, task, tmp_path / "ckpt.pt", "test", lambda _: None)
    return result, best, model


def scripted(losses):
    values = iter(losses)
    return lambda m: {"loss": next(values)}


def test_validating_every_n_steps_counts_steps_across_epochs(tmp_path):
    """3 batches an epoch, a validation every 2 steps: after steps 2, 4, 6, 8, and at the end
    of the budget's last epoch (step 9); each row names its epoch and step."""
    result, _, _ = run_steps(
        tmp_path, scripted([5.0, 4.0, 3.0, 2.0, 1.0]), max_epochs=3, eval_every=2
    )
    assert [(r["epoch"], r["step"]) for r in result.history] == [
        (1, 2), (2, 4), (2, 6), (3, 8), (3, 9)
    ]  # fmt: skip
    assert result.stopped_because == "reached max_epochs=3" and result.best_epoch == 3


def test_the_budget_ends_without_a_second_validation_of_the_same_step(tmp_path):
    result, _, _ = run_steps(tmp_path, scripted([3.0, 2.0, 1.0]), max_epochs=2, eval_every=2,
                             per_epoch=3)  # fmt: skip
    assert [r["step"] for r in result.history] == [2, 4, 6]
    assert result.stopped_because == "reached max_epochs=2"


def test_lr_is_cut_after_patience_validations_without_a_new_best_repeatedly(tmp_path):
    """deepmind/lamb's drop: × 0.1 once more than ``lr_patience`` validations in a row set no
    strictly new best, counted afresh after each drop."""
    losses = [5.0, 4.0, 4.0, 4.5, 4.0, 3.0, 3.5, 3.5, 3.5, 3.5]
    result, _, _ = run_steps(
        tmp_path, scripted(losses), per_epoch=10, max_epochs=1, eval_every=1,
        lr_decay=0.1, lr_patience=2, lr_decay_threshold=0.0,
    )  # fmt: skip
    lrs = [row["lr"] for row in result.history]
    # bad validations: 3, 4, 5 (the third in a row: cut after 5), then 7, 8, 9 (cut after 9)
    assert lrs == pytest.approx([0.1] * 5 + [0.01] * 4 + [0.001])


def test_early_stopping_counts_validations_and_stops_inside_an_epoch(tmp_path):
    result, best, model = run_steps(
        tmp_path, scripted([3.0, 2.0, 2.5, 2.6, 1.0]), per_epoch=5, max_epochs=2,
        eval_every=2, early_stopping_patience=2,
    )  # fmt: skip
    assert [r["step"] for r in result.history] == [2, 4, 6, 8]
    assert result.stopped_because == "no improvement for 2 validations"
    assert model.w.item() == pytest.approx(0.8) and best["w"].item() == pytest.approx(0.4)
    assert result.best_epoch == 1  # step 4 is in epoch 1 (5 batches an epoch)


def test_a_run_validating_every_n_steps_resumes_to_the_same_numbers(tmp_path):
    """Interrupted by a signal inside an epoch, between two validations, then resumed: the
    same rows (but the seconds) and weights as the run never interrupted."""

    def evaluate(m):
        return {"loss": (m.w.item() - 0.75) ** 2}

    settings = dict(per_epoch=4, max_epochs=3, eval_every=3, lr_decay=0.5, lr_patience=0)
    whole, _, model = run_steps(tmp_path / "a", evaluate, **settings)
    with pytest.raises(TrainingInterrupted):
        run_steps(tmp_path / "b", evaluate, signal_at=5, **settings)
    resumed, _, again = run_steps(tmp_path / "b", evaluate, **settings)

    def numbers(rows):
        return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]

    assert numbers(resumed.history) == numbers(whole.history)
    assert again.w.item() == model.w.item()
    assert [r["step"] for r in whole.history] == [3, 6, 9, 12]
