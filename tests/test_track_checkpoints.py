"""src/rnnrepro/scripts/archive.py: an unfinished run's checkpoint archived compacted and, when
large, in parts that restore joins back into a checkpoint with the same state."""

from __future__ import annotations

import io
import os

import pytest
import torch

from rnnrepro.scripts import archive as ta


def checkpoint_state(best_is_current: bool) -> dict:
    """The layout ``rnnrepro.training`` saves: a tied model, RMSprop's accumulator (two equal
    tensors of it, as for parameters no gradient has reached yet), the best epoch's clones, and
    the task's carried hidden state, the last step of the recurrence's outputs (a view)."""
    torch.manual_seed(0)
    embedding, recurrent = torch.randn(500, 40), torch.randn(160, 40)
    model = {"encoder.weight": embedding, "decoder.weight": embedding, "rnn.weight": recurrent}
    best = {k: v.clone() for k, v in model.items()}
    if not best_is_current:
        best["rnn.weight"] += 1.0
    square_avg = {0: torch.zeros(500, 40), 1: torch.zeros(500, 40)}
    optimizer = {
        "state": {k: {"square_avg": v, "step": torch.tensor(3.0)} for k, v in square_avg.items()}
    }
    outputs = torch.randn(35, 2, 32, 40)  # BPTT steps, (h, c), batch, hidden
    task = {"state": [(outputs[-1, 0:1], outputs[-1, 1:2]), None], "baseline": None}
    return {"model": model, "optimizer": optimizer, "best_state": best, "task": task, "epoch": 2}


def size(state: dict) -> int:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return len(buffer.getbuffer())


@pytest.mark.parametrize("best_is_current", [True, False])
def test_compacting_keeps_every_value_and_stores_the_best_weights_once(best_is_current):
    state = checkpoint_state(best_is_current)
    compacted = ta.compact(state)
    buffer = io.BytesIO()
    torch.save(compacted, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=True)
    for part in ("model", "best_state"):
        for name, tensor in state[part].items():
            assert torch.equal(loaded[part][name], tensor), (part, name)
    for mine, theirs in zip(loaded["task"]["state"][0], state["task"]["state"][0], strict=True):
        assert torch.equal(mine, theirs)
    floats = 4 * (500 * 40 + 160 * 40)  # the model's weights, tied ones once
    # before: the model, the accumulator, and the best epoch with its tied weights cloned apart
    assert size(state) > floats + 2 * 4 * 500 * 40 + floats + 4 * 500 * 40
    # after: the best epoch is the model (or, but for one tensor, the model); the hidden state
    # is its last step, not the 35 steps' outputs
    extra = 0 if best_is_current else 4 * 160 * 40
    assert size(compacted) < floats + 2 * 4 * 500 * 40 + extra + 20_000
    best = loaded["best_state"]
    assert best["encoder.weight"].untyped_storage().data_ptr() == (
        best["decoder.weight"].untyped_storage().data_ptr()
    )
    # the accumulator is updated in place after a resume: equal tensors keep their own storage
    accumulators = [s["square_avg"] for s in loaded["optimizer"]["state"].values()]
    assert accumulators[0].untyped_storage().data_ptr() != (
        accumulators[1].untyped_storage().data_ptr()
    )


def test_a_large_checkpoint_is_kept_in_parts_and_joined_back(tmp_path):
    source = tmp_path / "run.pt"
    torch.save(checkpoint_state(False), source)
    kept = tmp_path / "archive/checkpoints/run.pt"
    archived = ta.keep_checkpoint(source, kept, part_mb=0.05)
    parts = sorted(kept.parent.glob("run.pt.part[0-9]*"))
    assert len(parts) == -(-archived // int(0.05 * 2**20)) > 1
    assert not kept.exists() and ta.parts_index(kept).exists()

    target = tmp_path / "machine/run.pt"
    ta.unpack_checkpoint(ta.parts_index(kept), target)
    assert target.stat().st_size == archived
    restored = torch.load(target, weights_only=True)
    original = torch.load(source, weights_only=True)
    for part in ("model", "best_state"):
        for name in original[part]:
            assert torch.equal(restored[part][name], original[part][name])

    # kept again, small enough to be one file: the parts go
    ta.keep_checkpoint(source, kept, part_mb=64)
    assert kept.exists() and not list(kept.parent.glob("run.pt.part[0-9]*"))
    ta.keep_checkpoint(source, kept, part_mb=0.05)

    damaged = bytearray(parts[1].read_bytes())
    damaged[100] ^= 0xFF  # one damaged byte
    parts[1].write_bytes(bytes(damaged))
    target.unlink()
    with pytest.raises(SystemExit, match="its parts do not join to the checkpoint it indexes"):
        ta.unpack_checkpoint(ta.parts_index(kept), target)
    assert not target.exists()


@pytest.mark.parametrize("best_is_current", [True, False])
def test_save_sees_what_a_kept_checkpoint_takes_and_whether_its_best_weights_are_apart(
    tmp_path, best_is_current
):
    source = tmp_path / "run.pt"
    torch.save(checkpoint_state(best_is_current), source)
    assert ta.best_weights_apart(source) is not best_is_current
    kept = tmp_path / "archive/checkpoints/run.pt"
    assert ta.archived_bytes(kept) == 0
    archived = ta.keep_checkpoint(source, kept, part_mb=0.05)
    index = ta.parts_index(kept).stat().st_size
    assert ta.archived_bytes(kept) == archived + index  # every part once, and the index
    assert ta.keep_checkpoint(source, kept, part_mb=64) == ta.archived_bytes(kept)  # one file


def test_the_machine_a_save_records_names_its_cores_vector_unit_and_torch():
    host = ta.machine()
    assert f"({os.cpu_count()} cores, " in host
    capability = torch.backends.cpu.get_cpu_capability()
    assert host.endswith(f", {capability}, torch {torch.__version__})")
