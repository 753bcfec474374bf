"""Model registry: one name per architecture, used in config, rules, file paths and code.

``build_model(name, vocab, **hparams)`` constructs a model; ``vocab`` is the list of token
strings (index = token id; index 0 is ``<pad>``). Every language model is a ``base.RNNModel``
(embedding, recurrent body, dropouts, decoder). Hyper-parameters per name (dropouts default 0;
AWD-LSTM's names: ``dropoute`` embedding rows, ``dropouti`` input, ``dropouth`` between layers,
``dropout`` output):

- ``lstm``            embedding_dim, hidden_size, num_layers=1, dropout, dropouti, dropouth,
                      dropoute, tie_weights=False
- ``attention_lstm``  embedding_dim, hidden_size, cells=2, temperature_decay=0.9, dropout,
                      dropouti, dropoute
- ``assignment_lstm`` embedding_dim, hidden_size, cells=2, dropout, dropouti (Dyck map: type a
                      -> cell 0, type b -> cell 1, specials -> cell 0)
- ``dyck_rnn``        stack_depth (m), slot_dim=1, trainable_embedding=False
- ``rnn``             embedding_dim, hidden_size, num_layers=1, dropout=0.0
- ``mrnn``, ``mlstm`` embedding_dim, hidden_size, dropout=0.0
- ``mmrnn``, ``mmlstm`` embedding_dim, hidden_size, num_layers=1, choices=4, dropout=0.0
- ``second_order_rnn`` hidden_size, inner_size, use_d=True, use_e=True, activation="tanh"
                      ("tanh" | "identity"), dropout=0.0 (general_second_order: one-hot
                      inputs, no embedding)
- ``first_order_rnn`` hidden_size, dropout=0.0 (general_second_order baseline)
- ``mi_rnn``          hidden_size, activation="tanh", dropout=0.0 (general_second_order baseline)
- ``memory_lstm``     hidden_size (= embedding size, tied), memory ("none" | "attention" |
                      "continuous_stack" | "discrete_stack" | "multipop_stack"), slots=10,
                      dropout, dropouti, candidate_dropout, candidate_mask="step" ("step" |
                      "window"), forget_bias=0.0, cap_input_gate=False (memory)
- ``awd_lstm``        embedding_dim, layer_sizes, major_proportions=None (Major-Minor layers,
                      major_minor), minor_input="embedding", experts=0 (mixture of softmaxes),
                      dropout, dropouth, dropouti, dropoute, dropoutl, weight_drop,
                      tie_weights=True (AWD-LSTM, AWD-LSTM-MoS, AWD-MMLSTM-MoS)
- ``luong_nmt``       embedding_dim, layer_sizes, major_proportions=None, dropout, init_range
                      (major_minor's translation model: an encoder-decoder, not a language
                      model; ``rnnrepro.translation_task`` trains it)
"""

from __future__ import annotations

from importlib import import_module

from .base import RecurrentLM

# name -> (module, class)
REGISTRY: dict[str, tuple[str, str]] = {
    "lstm": ("lstm", "LSTMLM"),
    "attention_lstm": ("attention_lstm", "AttentionLSTMLM"),
    "assignment_lstm": ("attention_lstm", "AssignmentLSTMLM"),
    "dyck_rnn": ("dyck_rnn", "DyckRNN"),
    "rnn": ("rnn", "RNNLM"),
    "mrnn": ("multiplicative", "MRNNLM"),
    "mlstm": ("multiplicative", "MLSTMLM"),
    "mmrnn": ("multi_matrix", "MMRNNLM"),
    "mmlstm": ("multi_matrix", "MMLSTMLM"),
    "second_order_rnn": ("second_order", "SecondOrderRNNLM"),
    "first_order_rnn": ("second_order", "FirstOrderRNNLM"),
    "mi_rnn": ("second_order", "MIRNNLM"),
    "memory_lstm": ("memory", "MemoryLSTMLM"),
    "awd_lstm": ("awd", "AWDLSTMLM"),
    "luong_nmt": ("seq2seq", "LuongNMT"),
}

MODEL_NAMES = tuple(REGISTRY)


def build_model(name: str, vocab: list[str], **hparams) -> RecurrentLM:
    """Construct the model called ``name`` over ``vocab`` with the given hyper-parameters."""
    if name not in REGISTRY:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(MODEL_NAMES)}")
    module, cls = REGISTRY[name]
    return getattr(import_module(f".{module}", __name__), cls)(vocab, **hparams)


def save_model(
    model: RecurrentLM, path, name: str, vocab: list[str], hparams: dict, **extra
) -> None:
    """Write a self-describing model file, atomically: enough to rebuild the model with
    ``load_model``."""
    from rnnrepro.fileio import save_torch

    save_torch(
        {
            "name": name,
            "vocab": vocab,
            "hparams": hparams,
            "state_dict": model.state_dict(),
            **extra,
        },
        path,
    )


def read_model_file(path, map_location: str = "cpu") -> dict:
    """The record ``save_model`` wrote; an unreadable file is an ``UnreadableFile`` naming it
    and the command that remakes it."""
    from rnnrepro.fileio import UnreadableFile, load_torch

    try:
        return load_torch(path, map_location)
    except UnreadableFile as error:
        raise UnreadableFile(
            f"{error}. Remake it: snakemake {path} --force --cores 1, with the --directory and "
            "--config of the run that made it (its training resumes from its checkpoint, or "
            "starts again)"
        ) from None


def load_model(path, map_location: str = "cpu") -> tuple[RecurrentLM, dict]:
    """Rebuild a model saved by ``save_model``; returns (model in eval mode, the saved record)."""
    record = read_model_file(path, map_location)
    model = build_model(record["name"], record["vocab"], **record["hparams"])
    model.load_state_dict(record["state_dict"])
    model.eval()
    return model, record
