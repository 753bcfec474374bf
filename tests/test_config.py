"""Invalid configurations stop before any job with a message naming the key."""

from __future__ import annotations

import copy
import re

import pytest
from pipeline_utils import ROOT, base_config, run_snakemake, snakemake_cli

from rnnrepro import config as cfg
from rnnrepro.config_check import check_config, check_masked_layers
from rnnrepro.reporting.notes import scale_notes


def smoke() -> dict:
    config = base_config()
    config["scale"] = "smoke"
    return config


def mutate_unknown_model(c):
    c["experiments"]["second_order_lstm"]["models"]["lstm"]["architecture"] = "transformer"


def mutate_misspelled_key(c):
    c["training"]["second_order_lstm_dyck"]["learning_rate"] = 0.1


def mutate_negative_size(c):
    c["scales"]["smoke"]["dyck"]["sizes"]["train"] = -5


def mutate_bad_scale(c):
    c["scale"] = "huge"


def mutate_missing_training(c):
    c["experiments"]["multi_matrix"]["models"]["rnn"]["training"] = "nonexistent"


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (mutate_unknown_model, "transformer"),
        (mutate_misspelled_key, "learning_rate"),
        (mutate_negative_size, "train"),
        (mutate_bad_scale, "huge"),
        (mutate_missing_training, "nonexistent"),
    ],
)
def test_invalid_config_stops_before_any_job(tmp_path, mutate, expected):
    config = smoke()
    mutate(config)
    proc = run_snakemake(tmp_path, config, "-n", check=False)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert expected in output
    assert "Job stats" not in output
    assert not (tmp_path / "results").exists()


def test_a_hyper_parameter_the_model_does_not_take_stops_before_any_job(tmp_path):
    config = smoke()
    config["experiments"]["second_order_lstm"]["models"]["lstm"]["hparams"]["choices"] = 4
    proc = run_snakemake(tmp_path, config, "-n", check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Job stats" not in output
    assert (
        "config key 'experiments.second_order_lstm.models.lstm.hparams.choices': model 'lstm' "
        "takes no 'choices'; it takes embedding_dim, hidden_size, num_layers, dropout, "
        "dropouti, dropouth, dropoute, tie_weights"
    ) in output


def test_hyper_parameters_are_checked_per_architecture_and_family():
    config = smoke()
    models = config["experiments"]["multi_matrix"]["models"]
    models["rnn"].setdefault("dataset_hparams", {}).setdefault("ptb_char", {})["cells"] = 2
    with pytest.raises(cfg.ConfigError, match=r"models\.rnn\.dataset_hparams\.ptb_char\.cells'"):
        check_config(config)
    config = smoke()
    models = config["experiments"]["multi_matrix"]["models"]
    hparams = models["mmrnn"]["hparams"]
    hparams.pop("hidden_size", None)
    hparams.pop("hidden_size_per_m", None)
    for per_family in models["mmrnn"].get("dataset_hparams", {}).values():
        per_family.pop("hidden_size", None)
        per_family.pop("hidden_size_per_m", None)
    with pytest.raises(cfg.ConfigError, match=r"model 'mmrnn' needs hidden_size"):
        check_config(config)


def test_the_accepted_hyper_parameters_are_the_model_classes_arguments():
    """provenance.architecture_hparams reads them from the source without torch; they must be
    what the classes take."""
    import inspect
    from importlib import import_module

    from rnnrepro.models import REGISTRY
    from rnnrepro.provenance import architecture_hparams

    for name, (module, cls) in REGISTRY.items():
        init = getattr(import_module(f"rnnrepro.models.{module}"), cls).__init__
        params = list(inspect.signature(init).parameters.values())[2:]  # self, vocab
        required = tuple(p.name for p in params if p.default is inspect.Parameter.empty)
        optional = tuple(p.name for p in params if p.default is not inspect.Parameter.empty)
        assert architecture_hparams(name) == (required, optional), name


def test_a_yaml_syntax_error_names_the_line_and_column(tmp_path):
    lines = (ROOT / "config.yaml").read_text().splitlines()
    number = next(i for i, line in enumerate(lines) if line.startswith("data_mirror:"))
    lines[number] = 'data_mirror: "" : [oops'
    (tmp_path / "config.yaml").write_text("\n".join(lines) + "\n")
    snakefile = str(ROOT / "Snakefile")
    proc = snakemake_cli(["-n", "--snakefile", snakefile, "--directory", str(tmp_path)])
    assert proc.returncode != 0
    assert (
        f"{tmp_path / 'config.yaml'}, line {number + 1}, column 17: invalid YAML: mapping values "
        "are not allowed here"
    ) in proc.stdout + proc.stderr


def test_a_directory_without_a_config_file_reads_the_repositorys(tmp_path):
    proc = snakemake_cli(
        ["dyck", "-n", "--snakefile", str(ROOT / "Snakefile"), "--directory", str(tmp_path)]
        + ["--config", "scale=smoke"]
    )
    assert proc.returncode == 0, proc.stderr
    assert "train" in proc.stdout and not (tmp_path / "results").exists()


def test_negative_size_message_names_the_key_path(tmp_path):
    config = smoke()
    mutate_negative_size(config)
    proc = run_snakemake(tmp_path, config, "-n", check=False)
    output = proc.stdout + proc.stderr
    assert "'sizes'" in output and "-5" in output


def test_run_config_resolves_per_m_and_scale_cap():
    config = smoke()
    run = cfg.run_config(config, "second_order_lstm", "dyck_m6", "attention_lstm")
    assert run["hparams"]["hidden_size"] == 18
    assert "hidden_size_per_m" not in run["hparams"]
    assert run["training"]["max_epochs"] == 2
    paper = copy.deepcopy(config)
    paper["scale"] = "paper"
    assert (
        cfg.run_config(paper, "second_order_lstm", "dyck_m6", "lstm")["training"]["max_epochs"]
        == 1000
    )


def test_run_config_names_the_task_and_the_stage_procedure():
    config = smoke()
    tasks = {
        dataset: cfg.run_config(config, experiment, dataset, "lstm")["task"]
        for experiment, dataset in [
            ("second_order_lstm", "dyck_m4"),
            ("second_order_lstm", "wikitext2"),
            ("multi_matrix", "ptb_word"),
        ]
    }
    assert tasks == {"dyck_m4": "dyck", "wikitext2": "stream", "ptb_word": "sentences"}
    model = config["experiments"]["second_order_lstm"]["models"]["lstm"]
    assert cfg.stages(config, "second_order_lstm", "lstm", "wikitext2") == ["train"]
    model["finetune"] = "multi_matrix_lm"
    assert cfg.stages(config, "second_order_lstm", "lstm", "wikitext2") == ["train", "finetune"]
    tuned = cfg.run_config(config, "second_order_lstm", "wikitext2", "lstm", "finetune")
    assert tuned["stage"] == "finetune" and tuned["training"]["lr"] == 1e-3
    assert tuned["training"]["max_epochs"] == 2  # the scale's cap applies to every stage
    model["finetune"] = "nowhere"
    with pytest.raises(cfg.ConfigError, match=r"models.lstm.finetune': 'nowhere' is not defined"):
        check_config(config)


def test_scale_datasets_thin_a_models_datasets_at_a_scale():
    config = base_config()
    counts = {}
    for scale in ("paper", "cpu", "smoke"):
        config["scale"] = scale
        counts[scale] = len(cfg.runs(config, "major_minor"))
    assert counts == {"paper": 113, "cpu": 64, "smoke": 21}  # 2 translation runs at each
    config["scale"] = "cpu"
    sweep = {r.dataset for r in cfg.runs(config, "major_minor", "awd_lstm_layer1_200")}
    assert sweep == {"ptb_stream"}  # WikiText-2 too at paper scale
    assert not cfg.runs(config, "major_minor", "awd_lstm_mos_layer1_200")  # a thinned grid
    entry = config["experiments"]["major_minor"]["models"]["awd_lstm_layer1_200"]
    entry["scale_datasets"] = {"tiny": ["ptb_stream"]}
    with pytest.raises(cfg.ConfigError, match=r"awd_lstm_layer1_200\.scale_datasets\.tiny"):
        check_config(config)
    entry["scale_datasets"] = {"cpu": ["wikitext103"]}
    with pytest.raises(cfg.ConfigError, match="'wikitext103' is not a dataset of the model"):
        check_config(config)


def test_translation_runs_read_the_stand_in_at_reduced_scales_with_their_own_caps():
    config = base_config()
    paper = cfg.run_config(config, "major_minor", "wmt14_de_en", "nmt_mmlstm")
    assert paper["task"] == "translation" and paper["translation"]["corpus"] == "wmt"
    assert paper["hparams"]["layer_sizes"] == [1070] * 4 and "width" not in paper
    assert "beam_width" not in paper["translation"]  # the translate rule's: no retraining
    config["scale"] = "cpu"
    cpu = cfg.run_config(config, "major_minor", "wmt14_de_en", "nmt_mmlstm")
    assert cpu["translation"]["corpus"] == "stand_in" and cpu["translation"]["stand_in"]
    assert cpu["hparams"]["layer_sizes"] == [137] * 4 and cpu["hparams"]["embedding_dim"] == 128
    # the model's own (empty) caps replace major_minor's 3 epochs x 8 batches
    assert cpu["training"]["max_epochs"] == 10 and "max_batches" not in cpu["training"]
    lm = cfg.run_config(config, "major_minor", "ptb_stream", "awd_mmlstm_mos")
    assert lm["training"]["max_batches"] == 8 and lm["training"]["max_epochs"] == 3


def test_translation_models_and_language_models_keep_to_their_data():
    config = base_config()
    models = config["experiments"]["major_minor"]["models"]
    models["nmt_lstm"]["datasets"] = ["ptb_stream", "wmt14_de_en"]
    with pytest.raises(cfg.ConfigError, match=r"nmt_lstm\.datasets': 'luong_nmt' is a translat"):
        check_config(config)
    config = base_config()
    config["experiments"]["major_minor"]["models"]["awd_lstm"]["datasets"] = ["wmt14_de_en"]
    with pytest.raises(cfg.ConfigError, match="'awd_lstm' is a language model and cannot"):
        check_config(config)


def test_feature_masking_grid_follows_the_scale():
    config = base_config()
    paper = cfg.feature_masking(config)
    assert paper["layers"] == ["all", "1", "2", "3"] and paper["mask_seeds"] == [1, 2, 3, 4, 5]
    assert paper["probabilities"][:3] == [0.0, 0.05, 0.1] and paper["probabilities"][-1] == 0.5
    config["scale"] = "cpu"
    assert cfg.feature_masking(config)["probabilities"] == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]


def test_runs_cover_every_experiment_model_dataset_and_seed():
    config = base_config()
    runs = cfg.runs(config)
    # second_order_lstm: 3 models x 3 Dyck m x 3 seeds + 3 WikiText-2 models x 3 seeds;
    # multi_matrix: 7 Dyck models x 3 m x 3 seeds, 10 char, 6 word and 4 x 3 cutoff models x 3
    # seeds; general_second_order: (10 + 2 x 8) models x 5 folds x 1 seed; memory: 10 models x
    # 2 corpora x 1 seed x 10 search trials; major_minor: 4 models x 2 corpora + 2 WikiText-103
    # models, 1 seed (fine-tuning is a stage of a run, not a run), and its studies: Figs. 3-4's
    # 24 AWD-LSTM sweep points x 2 corpora and 30 MoS ones on PTB, Fig. 5's 3 models, MMLM-2,
    # Table IX's 6 ratios and Table X's 3 ablations x 2 corpora; Table XII's 2 translation models
    expected = {
        "second_order_lstm": 27 + 9,
        "multi_matrix": 63 + 30 + 18 + 36,
        "general_second_order": 130,
        "memory": 200,
        "major_minor": 8 + 2 + 48 + 30 + 3 + 2 + 12 + 6 + 2,
    }
    for experiment, count in expected.items():
        assert len(cfg.runs(config, experiment)) == count, experiment
    assert len(runs) == sum(expected.values())
    assert len(set(runs)) == len(runs)


def test_dataset_families_expand_per_scale():
    config = smoke()
    assert cfg.datasets(config, "multi_matrix") == [
        "dyck_m4",
        "dyck_m6",
        "ptb_char",
        "ptb_word",
        "ptb_char_cut25",
        "ptb_char_cut50",
        "ptb_char_cut75",
    ]
    assert cfg.datasets(config, "general_second_order") == [
        "ptb_lines_unigram_fold1",
        "ptb_lines_bigram_fold1",
    ]
    assert cfg.family("ptb_lines_bigram_fold3") == "ptb_lines_bigram"
    assert cfg.family("ptb_char_cut25") == "ptb_char_cut"
    with pytest.raises(ValueError, match="unknown dataset"):
        cfg.family("ptb_chars")


def test_models_run_only_on_their_datasets():
    config = base_config()
    multi_matrix = cfg.runs(config, "multi_matrix")
    assert {r.dataset for r in multi_matrix if r.model == "rnn_2l"} == {"ptb_char"}
    assert {r.dataset for r in multi_matrix if r.model == "mmlstm_2l"} == {
        "ptb_char",
        "ptb_word",
        "ptb_char_cut25",
        "ptb_char_cut50",
        "ptb_char_cut75",
    }
    # general_second_order: five folds, one seed each (the paper's spread is over folds)
    general_second_order = cfg.runs(config, "general_second_order", "so_tanh")
    assert [r.dataset for r in general_second_order] == [
        f"ptb_lines_unigram_fold{k}" for k in range(1, 6)
    ]
    assert {r.seed for r in general_second_order} == {1}


def test_dataset_hparams_override_per_family():
    config = base_config()
    char = cfg.run_config(config, "multi_matrix", "ptb_char", "lstm")
    word = cfg.run_config(config, "multi_matrix", "ptb_word", "lstm")
    dyck = cfg.run_config(config, "multi_matrix", "dyck_m4", "lstm")
    assert char["hparams"] == {"dropout": 0.25, "embedding_dim": 128, "hidden_size": 991}
    assert word["hparams"]["hidden_size"] == 125 and word["hparams"]["embedding_dim"] == 64
    assert dyck["hparams"]["hidden_size"] == 12 and "text" not in dyck
    assert char["text"] == {"framing": "eos", "metric": "bpc"}
    assert word["text"]["metric"] == "ce"


def test_budget_solves_sizes_and_width_scales_them():
    config = base_config()
    run = cfg.run_config(config, "general_second_order", "ptb_lines_unigram_fold1", "ratio_2")
    assert (run["hparams"]["hidden_size"], run["hparams"]["inner_size"]) == (
        343,
        686,
    )  # m = round(2 * 343) (docs/methods.md §6.4)
    assert run["budget"]["params"] <= 500000
    assert run["text"]["framing"] == "none"
    bigram = cfg.run_config(config, "general_second_order", "ptb_lines_bigram_fold1", "ratio_2")
    assert (bigram["hparams"]["hidden_size"], bigram["hparams"]["inner_size"]) == (177, 354)
    config["scale"] = "smoke"
    small = cfg.run_config(config, "general_second_order", "ptb_lines_unigram_fold1", "ratio_2")
    width = config["scales"]["smoke"]["text"]["width"]
    assert small["hparams"]["hidden_size"] == max(1, round(343 * width))
    assert small["width"] == width


def test_budget_on_dyck_is_rejected(tmp_path):
    config = smoke()
    config["experiments"]["multi_matrix"]["models"]["rnn"]["budget"] = {"budget": 1000}
    proc = run_snakemake(tmp_path, config, "-n", check=False)
    assert proc.returncode != 0
    assert "experiments.multi_matrix.models.rnn.budget" in proc.stdout + proc.stderr


def test_unknown_dataset_family_of_a_model_names_the_key(tmp_path):
    config = smoke()
    config["experiments"]["general_second_order"]["models"]["so_tanh"]["datasets"] = ["ptb_char"]
    proc = run_snakemake(tmp_path, config, "-n", check=False)
    assert proc.returncode != 0
    assert "experiments.general_second_order.models.so_tanh.datasets" in proc.stdout + proc.stderr


def test_dataset_training_picks_the_procedure_per_family():
    config = base_config()
    wt2 = cfg.run_config(config, "second_order_lstm", "wikitext2", "lstm")
    dyck = cfg.run_config(config, "second_order_lstm", "dyck_m4", "lstm")
    assert wt2["training"]["bptt"] == 70 and wt2["training"]["batch_size"] == 64
    assert "bptt" not in dyck["training"] and dyck["training"]["batch_size"] == 10
    assert wt2["text"] == {"framing": "stream", "metric": "ppl"}


@pytest.mark.parametrize(
    "mutate, key",
    [
        (
            lambda c: c["experiments"]["second_order_lstm"]["models"]["lstm"].update(
                dataset_training={"wikitext2": "nonexistent"}
            ),
            "experiments.second_order_lstm.models.lstm.dataset_training.wikitext2",
        ),
        (
            lambda c: c["experiments"]["second_order_lstm"].update(datasets=["dyck", "wikitext3"]),
            "experiments.second_order_lstm.datasets",
        ),
        (
            lambda c: c["experiments"]["second_order_lstm"]["models"]["lstm"].update(
                architecture="transformer"
            ),
            "experiments.second_order_lstm.models.lstm",
        ),
        (  # the grid would end at P = 1.05, and the job stop there after scoring two
            lambda c: c["feature_masking"].update(step=0.35, max_probability=0.9),
            "feature_masking.step': 0.35 does not divide 0.9",
        ),
        (  # a grid of P = 0 alone: a figure without masking
            lambda c: c["feature_masking"].update(step=1.5),
            "feature_masking.step': 1.5 > 0.5",
        ),
        (
            lambda c: c["scales"]["smoke"]["feature_masking"].update(step=0.3),
            "scales.smoke.feature_masking.step': 0.3 does not divide 0.5",
        ),
        (  # accepted, then the training job stopped on it
            lambda c: c["experiments"]["major_minor"]["models"]["awd_mmlstm_mos"]["hparams"].update(
                major_proportions=[0.5, 0.5]
            ),
            "experiments.major_minor.models.awd_mmlstm_mos.hparams.major_proportions': 2 entries",
        ),
        (  # misspelt: "Nothing to be done", then a Dyck run asks SLURM for a GPU
            lambda c: c["cluster"].update(cpu_families=["dyk"]),
            "cluster.cpu_families': unknown dataset family 'dyk'",
        ),
    ],
)
def test_cross_reference_errors_name_the_key(mutate, key):
    config = base_config()
    mutate(config)
    with pytest.raises(cfg.ConfigError, match=re.escape(f"config key '{key}")):
        check_config(config)


def test_masked_layers_must_exist_in_every_masked_model():
    config = base_config()
    config["scale"] = "smoke"
    runs = [run for run in cfg.runs(config, "major_minor") if run.model == "awd_lstm_mos"]
    check_masked_layers(config, runs)  # 3 layers: all, 1, 2, 3
    config["feature_masking"]["layers"] = ["all", 1, 2, 3, 4]
    with pytest.raises(cfg.ConfigError, match=r"'feature_masking.layers': 4 named, but model "):
        check_masked_layers(config, runs)


def test_masked_layers_are_checked_before_any_job(tmp_path):
    """It ran most of the grid, then stopped at ``masked layer '4'``."""
    config = smoke()
    config["feature_masking"]["layers"] = ["all", 1, 2, 3, 4]
    proc = run_snakemake(tmp_path, config, "-n", check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Job stats" not in output
    assert "config key 'feature_masking.layers': 4 named" in output


def test_families_and_architectures_have_one_source():
    from rnnrepro.models import MODEL_NAMES

    assert cfg.ARCHITECTURES == MODEL_NAMES
    assert set(cfg.FAMILIES) == {"dyck", *cfg.TEXT_FAMILIES, *cfg.TRANSLATION_FAMILIES}
    assert set(cfg.TRANSLATION_ARCHITECTURES) <= set(MODEL_NAMES)


def test_random_search_trials_are_seeded_jobs_within_their_ranges():
    config = smoke()
    config["scales"]["smoke"]["search_trials"] = 3
    model = config["experiments"]["second_order_lstm"]["models"]["lstm"]
    model["search"] = {"lr": [0.004, 0.009], "weight_decay": [1e-4, 5e-4]}
    runs = cfg.runs(config, "second_order_lstm", "lstm")
    assert [r.trial for r in runs if r.dataset == "wikitext2"] == [1, 2, 3]
    assert runs[0].path.endswith("/lstm/seed1/trial1") and runs[0].identity()["trial"] == 1
    samples = [
        cfg.trial_settings(config, "second_order_lstm", "wikitext2", "lstm", k) for k in (1, 2, 3)
    ]
    assert samples == [
        cfg.trial_settings(config, "second_order_lstm", "wikitext2", "lstm", k) for k in (1, 2, 3)
    ]  # the same draws on every call (and machine): seeded by the trial's name
    assert len({s["lr"] for s in samples}) == 3
    assert all(0.004 <= s["lr"] <= 0.009 and 1e-4 <= s["weight_decay"] <= 5e-4 for s in samples)
    run = cfg.run_config(config, "second_order_lstm", "wikitext2", "lstm", trial=2)
    assert run["training"]["lr"] == samples[1]["lr"] and run["trial"] == {"index": 2, **samples[1]}
    model["search"] = {"batch_size": [8, 16]}
    with pytest.raises(cfg.ConfigError, match=r"lstm.search': 'batch_size' cannot be searched"):
        check_config(config)
    model["search"] = {"lr": [0.01, 0.001]}
    with pytest.raises(cfg.ConfigError, match=r"search.lr': low 0.01 > high 0.001"):
        check_config(config)


def test_an_experiment_caps_its_own_runs_at_a_reduced_scale():
    config = base_config()
    config["scale"] = "cpu"
    caps = config["experiments"]["major_minor"]["scales"]["cpu"]
    run = cfg.run_config(config, "major_minor", "ptb_stream", "awd_mmlstm_mos", "finetune")
    assert run["training"]["max_epochs"] == caps["max_epochs"]
    assert run["training"]["max_batches"] == caps["max_batches"]
    assert run["training"]["max_eval_tokens"] == caps["max_eval_tokens"]
    dynamic = cfg.dynamic_eval_settings(config, "major_minor", "ptb_stream", "awd_mmlstm_mos")
    assert dynamic["max_batches"] == caps["max_batches"] and dynamic["lamb"] == 0.07
    notes = " ".join(scale_notes(config, "text", "major_minor"))
    assert f"at most {caps['max_batches']} batches per epoch" in notes
    assert f"at most {caps['max_epochs']} epochs per run" in notes
    # the studies' thinner grids: 34 models on PTB only, 15 of MoS's sweep points not run
    assert "scale_datasets): 34 on ptb_stream only; 15 not run;" in notes
    assert "scale_datasets" not in " ".join(scale_notes(config, "text", "memory"))
    # other experiments keep the scale's own caps
    lstm = cfg.run_config(config, "multi_matrix", "ptb_word", "lstm")["training"]
    assert lstm["max_epochs"] == config["scales"]["cpu"]["max_epochs"]
    assert "max_batches" not in lstm and "max_eval_tokens" not in lstm
    config["scale"] = "paper"
    paper = cfg.run_config(config, "major_minor", "ptb_stream", "awd_mmlstm_mos")["training"]
    assert paper["max_epochs"] == 1000 and "max_batches" not in paper


def test_the_fold1_scale_runs_the_papers_settings_on_one_fold():
    config = base_config()
    config["scale"] = "fold1"
    paper = {**config, "scale": "paper"}
    fold1_runs = cfg.runs(config, "general_second_order", "so_de_tanh")
    assert [r.dataset for r in fold1_runs] == ["ptb_lines_unigram_fold1"]
    run = cfg.run_config(config, "general_second_order", "ptb_lines_unigram_fold1", "so_de_tanh")
    assert run == cfg.run_config(paper, "general_second_order", "ptb_lines_unigram_fold1",
                                 "so_de_tanh")  # fmt: skip
    assert len(cfg.runs(config, "second_order_lstm")) == len(cfg.runs(paper, "second_order_lstm"))
    (note,) = scale_notes(config, "text", "general_second_order")
    assert "the papers' settings" in note and "folds [1] of 5 only" in note
    assert "no reproduction" not in note
    assert scale_notes(config, "dyck") == ["Scale fold1: the papers' settings on this track."]


def test_a_scale_replaces_named_procedures_settings_and_says_so():
    config = base_config()
    config["scale"] = "cpu"
    config["scales"]["cpu"]["training"] = {"second_order_lstm_wikitext2": {"lr": 3e-3}}
    run = cfg.run_config(config, "second_order_lstm", "wikitext2", "lstm")["training"]
    paper = config["training"]["second_order_lstm_wikitext2"]
    assert run["lr"] == 3e-3 and run["batch_size"] == paper["batch_size"]
    # the Dyck runs train with another procedure: untouched
    dyck = cfg.run_config(config, "second_order_lstm", "dyck_m4", "lstm")["training"]
    assert dyck["lr"] == config["training"]["second_order_lstm_dyck"]["lr"]
    note = "training procedure second_order_lstm_wikitext2: lr 0.0001 → 0.003;"
    assert note in scale_notes(config, "text", "second_order_lstm")
    assert note not in scale_notes(config, "dyck", "second_order_lstm")
    assert note not in scale_notes(config, "text", "memory")
    config["scales"]["cpu"]["training"] = {"second_order_lstm_wt2": {"lr": 3e-3}}
    with pytest.raises(cfg.ConfigError, match=r"'scales.cpu.training.second_order_lstm_wt2'"):
        check_config(config)
