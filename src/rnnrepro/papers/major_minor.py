"""major_minor: the Major-Minor LSTM on AWD-LSTM-MoS: Tables II, III (PTB and WikiText-2 at
each stage) and VII (WikiText-103), the configurations of Tables IV and V, and the translation
models of Tables XI (their configuration) and XII (WMT'14 German→English)."""

from collections.abc import Callable

from rnnrepro import config as cfg
from rnnrepro.papers.base import Claim, Ordering, Output, Runs

MODELS = ("awd_lstm", "awd_lstm_mos_minus", "awd_lstm_mos", "awd_mmlstm_mos")
LABELS = {
    "awd_lstm": "AWD-LSTM",
    "awd_lstm_mos_minus": "MoS⁻",
    "awd_lstm_mos": "MoS",
    "awd_mmlstm_mos": "MMLSTM-MoS",
}
STAGE_NAMES = {"train": "trained", "finetune": "fine-tuned", "dynamic_eval": "dynamic evaluation"}


def stage_orderings(dataset: str) -> tuple[Ordering, ...]:
    """What §V-A states about Tables II and III (test perplexity, at each stage): the MMLSTM
    beats every other model, MoS beats MoS⁻ (the MoS with the Major LSTMs' smaller sizes), and
    fine-tuning and then dynamic evaluation improve every model."""
    exceeds = (
        "major_minor §V-A: 'AWD-MMLSTMs-MoS exceeds other baselines in all stages on both PTB "
        "and WT2'"
    )
    smaller = (
        "major_minor §V-A: MoS⁻ was built 'with the same LSTM hidden sizes as the Major LSTMs "
        "[...] for exploring the influence of smaller LSTM hidden sizes on the model "
        "performance'; Tables II and III: the MoS⁻ row is above the MoS row at every stage"
    )
    tuned = (
        "major_minor §V-A: 'After the training, we can obtain a preliminary model, which will "
        "be tuned to achieve better results in the further stages namely the fine-tuning and "
        "dynamic estimation'"
    )
    later = {"finetune": "train", "dynamic_eval": "finetune"}
    return (
        *(
            ordering
            for stage, name in STAGE_NAMES.items()
            for ordering in (
                Ordering(
                    f"MMLSTM-MoS beats every other model ({name})",
                    exceeds,
                    better=("awd_mmlstm_mos",),
                    worse=MODELS[:-1],
                    metric="test_ppl",
                    dataset=dataset,
                    stage=stage,
                ),
                Ordering(
                    f"MoS beats MoS⁻ ({name})",
                    smaller,
                    better=("awd_lstm_mos",),
                    worse=("awd_lstm_mos_minus",),
                    metric="test_ppl",
                    dataset=dataset,
                    stage=stage,
                ),
            )
        ),
        *(
            Ordering(
                f"{'fine-tuning' if stage == 'finetune' else 'dynamic evaluation'} improves "
                f"{LABELS[model]}",
                tuned,
                better=(model,),
                worse=(model,),
                metric="test_ppl",
                dataset=dataset,
                better_stage=stage,
                worse_stage=before,
            )
            for stage, before in later.items()
            for model in MODELS
        ),
    )


def staged(name: str, family: str, label: str, models: tuple[str, ...], **declared) -> Output:
    """A table of every stage of ``models``' runs on ``family`` (trained, + fine-tuning, +
    dynamic evaluation), against the paper's table ``label``; made when the config has such
    runs."""
    return Output(
        name,
        maker="compare",
        runs=Runs("major_minor", (family,), models),
        files=("metrics.json",),
        labels=(label,),
        families=(family,),
        stages=True,
        optional=True,
        **declared,
    )


# Tables IV and V are written from config.yaml (the settings of the PTB and WikiText-2 runs).
CONFIGURED = {"maker": "config", "runs": Runs("major_minor", ("ptb_stream", "wikitext2"), MODELS)}


def staged_caption(table: str, corpus: str, minus: str, mos: str, mmlstm: str) -> str:
    """The caption of Table II or III (``corpus``): the four models (the layer sizes of
    MoS⁻, MoS and the MMLSTM) at each stage."""
    return f"""major_minor, {table} ({corpus}): AWD-LSTM, AWD-LSTM-MoS⁻ (the MoS recipe with the
    Major LSTMs' sizes, {minus}), AWD-LSTM-MoS ({mos}, 15 experts) and AWD-MMLSTM-MoS (layers
    {mmlstm} split 90/90/60 % Major, the Minor LSTMs reading the embedding) at each stage:
    *train* (SGD then NT-ASGD, the best averaged model), *finetune* (ASGD from the trained
    model, stopped at the non-monotone condition) and *dynamic_eval* (the fine-tuned model
    adapted to the evaluated stream, MoS's dynamiceval.py; settings in Table V). Test
    perplexity on the stream in one column. The AWD-LSTM rows are prior work ([6], [38]) that
    major_minor quotes. **reproduced** is mean ± sample std over seeds, **delta** = reproduced
    mean − paper; at a reduced scale every verdict names the scale. The orderings the paper
    states follow (at every stage the MMLSTM beats the other models and MoS beats MoS⁻;
    fine-tuning, then dynamic evaluation, improve every model), on test perplexity, checked on
    the paper's numbers and on the reproduced means."""


OUTPUTS = (
    staged(
        "major_minor_table2",
        "ptb_stream",
        "Table II",
        MODELS,
        orderings=stage_orderings("ptb_stream"),
        title="major_minor Table II (PTB: trained, + fine-tuning, + dynamic evaluation): paper "
        "vs reproduction",
        caption=staged_caption("Table II", "PTB", "972/972/372", "960/960/620", "1080/1080/620"),
    ),
    staged(
        "major_minor_table3",
        "wikitext2",
        "Table III",
        MODELS,
        orderings=stage_orderings("wikitext2"),
        title="major_minor Table III (WikiText-2: trained, + fine-tuning, + dynamic "
        "evaluation): paper vs reproduction",
        caption=staged_caption(
            "Table III", "WikiText-2", "1080/1080/390", "1150/1150/650", "1200/1200/650"
        ),
    ),
    Output(
        "major_minor_table4",
        title="major_minor Table IV: paper vs config.yaml",
        caption="""major_minor, Table IV: the AWD-MMLSTM-MoS hyper-parameters the paper prints
        (learning rate, layer sizes, Major proportions, embedding and hidden-state variational
        dropout, non-monotone interval), next to the values config.yaml resolves for the run at
        paper scale and, where they differ, at the selected scale. A reader's check that the
        configuration is the paper's.""",
        labels=("Table IV",),
        optional=True,
        **CONFIGURED,
    ),
    Output(
        "major_minor_table5",
        title="major_minor Table V: paper vs config.yaml",
        caption="""major_minor, Table V: the dynamic-evaluation settings of AWD-MMLSTM-MoS
        (gradient-statistics batch, η, ε, λ, window length) next to config.yaml's
        (``dynamic_eval``).""",
        labels=("Table V",),
        optional=True,
        **CONFIGURED,
    ),
    staged(
        "major_minor_table7",
        "wikitext103",
        "Table VII",
        ("wt103_lstm", "wt103_mmlstm"),
        title="major_minor Table VII (WikiText-103): paper vs reproduction",
        caption="""major_minor, Table VII (WikiText-103): a plain two-layer LSTM language model
        (embedding 256, layers 1024 and 256, tied, full softmax over the vocabulary) and its
        Major-Minor version (layers 1100 and 256, 90 % Major), trained with Adam (lr 1e-3, batch
        128, BPTT 70, 50 epochs, output dropout 0.1, recurrent weight dropout 0.15). The note
        under the title says whether the WikiText-103 files the runs read are the published ones
        (their SHA-1) or a stand-in.""",
        # tested on a stand-in here: the title says whether the runs read the published files
        corpus="wikitext103",
    ),
)


# Tables XI-XII (§V-D4): Luong et al.'s attention NMT with LSTM and Major-Minor LSTM layers.
NMT = ("nmt_lstm", "nmt_mmlstm")
NMT_DATASET = "wmt14_de_en"
NMT_SETS = cfg.TRANSLATION_FAMILIES[NMT_DATASET]
# what a translation run read (its resolved ``translation.corpus``), stated under each table as
# "<n> runs <line>"
NMT_CORPORA = {
    "stand_in": "read the generated stand-in, NOT WMT: source sentences of words s<i> whose "
    "target maps each word to t<π(i)> and reverses every block of three "
    "(rnnrepro.data.parallel), under the dataset's and the test sets' names "
    f"({', '.join(NMT_SETS['tests'])}); no WMT data was read, so their rows test the pipeline "
    "and are no evidence for or against the paper's numbers.",
    "wmt": "read WMT'14 English-German training data (Europarl v7, Common Crawl, News "
    f"Commentary v9; about 4.5M pairs), {NMT_SETS['val']} for validation and "
    f"{' and '.join(NMT_SETS['tests'])} (the WMT'15 and WMT'16 test sets) as German→English "
    "tests.",
}
NMT_SOURCE = (
    "major_minor §V-D4: 'Compare MMLSTM-NMT model with baseline model, we can find that the "
    "former consistently outperforms the latter in both PPL and BLEU' (Table XII)"
)
NMT_ORDERINGS = tuple(
    Ordering(
        f"MMLSTM-NMT beats the LSTM baseline ({test_set}, {name})",
        NMT_SOURCE,
        better=("nmt_mmlstm",),
        worse=("nmt_lstm",),
        metric=f"{test_set}_{metric}",
        dataset=NMT_DATASET,
        higher_is_better=metric != "ppl",
    )
    for test_set in NMT_SETS["tests"]
    for metric, name in (
        ("ppl", "perplexity"),
        ("bleu", "BLEU"),
        ("bleu_tokenized", "tokenized BLEU"),
    )
)

CLAIMS = (
    Claim(
        "AWD-MMLSTM-MoS beats every other model on PTB and WikiText-2, at every stage",
        "major_minor abstract and §V-A (Tables II, III)",
        orderings=tuple(
            f"MMLSTM-MoS beats every other model ({stage})"
            for stage in ("trained", "fine-tuned", "dynamic evaluation")
        ),
    ),
    Claim(
        "On WikiText-103 the Major-Minor LSTM beats the LSTM by 3.3 perplexity at equal size",
        "major_minor abstract (Table VII)",
        checked_in="major_minor_table7",
    ),
    Claim(
        "Major-Minor LSTM layers improve attention NMT",
        "major_minor §V-E (Table XII)",
        orderings=tuple(o.name for o in NMT_ORDERINGS),
    ),
)


OUTPUTS += (
    Output(
        "major_minor_table11",
        title="major_minor Table XI (NMT hyper-parameters): paper vs config.yaml",
        caption="""major_minor, Table XI: the hyper-parameters the paper prints for its NMT
        models, the LSTM baseline ("Baseline (we implement)", nmt_lstm) and MMLSTM-NMT
        (nmt_mmlstm): embedding size, layers per encoder and decoder (the length of the layer
        sizes), layer sizes, Major proportions (unset for the baseline: plain LSTM layers, 100 %
        Major), initial learning rate and training steps, next to the values config.yaml
        resolves at paper scale and, where they differ, at the selected scale. The printed
        "Dropout rate 1.0" is read as a keep probability [A]: config.yaml sets the dropout
        probability 0.0, and the row compares the derived keep probability 1 − dropout. The
        note under the title says which corpus the runs configured at the selected scale
        read.""",
        maker="config",
        runs=Runs("major_minor", (NMT_DATASET,), NMT),
        labels=("Table XI",),
        optional=True,
        setting_notes={"translation.corpus": NMT_CORPORA},
    ),
    Output(
        "major_minor_table12",
        title="major_minor Table XII (WMT'14 German→English): paper vs reproduction",
        caption="""major_minor, Table XII: Luong et al.'s global-attention NMT ("general"
        score, input feeding, 4 layers each side, BPE) with LSTM layers (baseline, 1000 units)
        and Major-Minor LSTM layers (MMLSTM-NMT, 1070 units split 70/70/80/90 % Major),
        trained German→English with Table XI's settings: parameters, and on newstest2015 and
        newstest2016 the perplexity and the BLEU of beam search. The paper does not say how its
        BLEU was tokenized: each printed BLEU is compared with sacrebleu's detokenized BLEU
        (`*_bleu`) and with the tokenized BLEU of its era (`*_bleu_tokenized`), each with its
        verdict; a section lists the signature of every BLEU row. The paper's "Baseline [47]"
        column (Luong et al.'s own model without BPE: 170.7M parameters, newstest2015
        perplexity 9.7 and BLEU 24.9) is prior work it quotes, not a reproduction target, and
        has no row here. The note under the title says which corpus the runs read (the
        reduced scales read a generated stand-in, not WMT). The orderings follow: MMLSTM-NMT
        beats the baseline in perplexity (lower) and BLEU (higher) on both test sets.""",
        maker="compare",
        runs=Runs("major_minor", (NMT_DATASET,), NMT),
        files=("translation.json",),
        track="translation",
        labels=("Table XII",),
        families=(NMT_DATASET,),
        orderings=NMT_ORDERINGS,
        optional=True,
        setting_notes={"translation.corpus": NMT_CORPORA},
    ),
)


# The studies (§III-B, §V-C, §V-D): Figs. 3-6 and Tables VIII-X. Their runs are config entries
# (experiments.major_minor.models); a sweep's standard size c is the main table's run itself.
STUDIES = ("major_minor_studies",)  # their target group
SIZES = (200, 400, 600, 800, 1000, 1200)  # Fig. 3
FRACTIONS = (0.6, 0.7, 0.8, 0.9, 1.1, 1.2)  # Fig. 4, of c
STANDARD_SIZES = {"awd_lstm": (1150, 1150, 400), "awd_lstm_mos": (960, 960, 620)}
STANDARD_LABELS = {"awd_lstm": "AWD-LSTM", "awd_lstm_mos": "AWD-LSTM-MoS"}


def swept(model: str, layers: tuple[int, ...], sizes: tuple[int, ...] = (), fractions=()) -> tuple:
    """The config names of ``model``'s sweep points: layer i at each size, or at each fraction
    of its standard size c."""
    c = STANDARD_SIZES[model]
    return tuple(
        f"{model}_layer{i}_{size}"
        for i in layers
        for size in (*sizes, *(round(f * c[i - 1]) for f in fractions))
    )


def sweep(*points: str) -> Callable[[dict], list[cfg.Run]]:
    """The runs of a size sweep: its ``points`` and the standard models (their size c), or
    none when the config has no point of it (a standard alone is no sweep)."""
    chosen = Runs("major_minor", models=(*STANDARD_SIZES, *points))

    def select(config: dict) -> list[cfg.Run]:
        runs = chosen.select(config)
        return runs if any(run.model not in STANDARD_SIZES for run in runs) else []

    return select


FIG3 = sweep(*swept("awd_lstm", (1, 2), SIZES), *swept("awd_lstm_mos", (1, 2), SIZES))
FIG4 = sweep(
    *swept("awd_lstm", (1, 2), fractions=FRACTIONS),
    *swept("awd_lstm_mos", (1, 2, 3), fractions=FRACTIONS),
)
MASKING_LABELS = {
    "awd_lstm_mos": "LM",
    "awd_lstm_mos_plus": "LM+",
    "awd_lstm_mos_wide": "LM#",
    "awd_lstm_mos_wide_tuned": "LM##",
    "awd_mmlstm_mos": "MMLM",
}
RATIOS = tuple(f"awd_mmlstm_ratio_{major}_{10 - major}" for major in range(5, 11))
# Table IX's layer sizes L (layers L, L, 400) on PTB and WikiText-2, as config.yaml sets them
# (tests/test_papers.py checks that they agree)
RATIO_SIZES = dict(
    zip(
        RATIOS,
        ((1560, 1550), (1500, 1500), (1420, 1440), (1330, 1330), (1240, 1230), (1150, 1150)),
        strict=True,
    )
)
ABLATION = tuple(f"awd_mmlstm_mos_no_minor{i}" for i in (1, 2, 3))


def ratio_orderings() -> tuple[Ordering, ...]:
    """§V-D2 on Fig. 6: perplexity falls from 5:5 to 9:1 and rises at 10:0 (validation and
    test, each corpus)."""
    source = (
        "major_minor §V-D2: 'as the ratio of the Major and the Minor LSTMs decreases, the "
        "perplexities on valid and test sets continue to decline from the ratios of 5 : 5 to "
        "9 : 1, but when the ratio reaches 10:0 [...] the perplexities rebound' (Fig. 6)"
    )
    pairs = [*zip(RATIOS[1:5], RATIOS[:4], strict=True), (RATIOS[4], RATIOS[5])]
    return tuple(
        Ordering(
            f"{better.removeprefix('awd_mmlstm_ratio_').replace('_', ':')} beats "
            f"{worse.removeprefix('awd_mmlstm_ratio_').replace('_', ':')} ({split})",
            source,
            better=(better,),
            worse=(worse,),
            metric=f"{split}_ppl",
            dataset=dataset,
        )
        for dataset in ("ptb_stream", "wikitext2")
        for split in ("val", "test")
        for better, worse in pairs
    )


def ablation_orderings() -> tuple[Ordering, ...]:
    """§V-D3 on Table X: every Minor helps (the MMLM beats each ablation), layer 3's most, then
    layer 1's, then layer 2's (removing it costs most)."""
    source = (
        "major_minor §V-D3: 'the Minor LSTM of the third layer has the greatest effect on the "
        "final performance of the model, followed by the first Minor LSTM and finally the "
        "second' (Table X)"
    )
    no1, no2, no3 = ABLATION
    claims = (
        ("every Minor LSTM helps", ("awd_mmlstm_mos",), ABLATION),
        ("layer 3's Minor matters more than layer 1's", (no1,), (no3,)),
        ("layer 1's Minor matters more than layer 2's", (no2,), (no1,)),
    )
    return tuple(
        Ordering(name, source, better=better, worse=worse, metric="test_ppl", dataset=dataset)
        for dataset in ("ptb_stream", "wikitext2")
        for name, better, worse in claims
    )


MINOR_INPUT_ORDERINGS = tuple(
    Ordering(
        f"MMLM-1 (Minor reads the embedding) beats MMLM-2 (the previous layer) ({split})",
        "major_minor §V-D1: 'the MMLM-1 steadily surpasses MMLM-2 on both datasets' (Table VIII)",
        better=("awd_mmlstm_mos",),
        worse=("awd_mmlstm_mos_prev",),
        metric=f"{split}_ppl",
        dataset=dataset,
    )
    for dataset in ("ptb_stream", "wikitext2")
    for split in ("val", "test")
)


def study(name: str, **declared) -> Output:
    """An output of the studies: in their target group, made when the config has its runs."""
    return Output(name, groups=STUDIES, optional=True, **declared)


OUTPUTS += (
    study(
        "major_minor_fig3_layer_sizes",
        title="Perplexity against one LSTM layer's hidden size",
        caption="""Validation (dashed) and test (solid) perplexity when one LSTM layer's hidden
        size varies from 200 to 1200 in steps of 200, every other setting the model's
        (reproduces major_minor, Figure 3): AWD-LSTM on PTB and on WikiText-2, and AWD-LSTM-MoS
        on PTB, layer 1 (LSTM-1) and layer 2 (LSTM-2). Each sweep point is trained for 500
        epochs (the paper's); the dotted line marks the standard size c, whose point is the main
        table's run (AWD-LSTM-MoS: 1000 epochs; AWD-LSTM on WikiText-2: 750). The paper's
        claims: perplexity keeps falling with the size, ever more slowly, and faster for layer 2
        than for layer 1.""",
        maker="figure",
        kind="layer_sizes",
        runs=FIG3,
        files=("metrics.json",),
        model_labels=STANDARD_LABELS,
    ),
    study(
        "major_minor_fig4_size_band",
        title="Parameters and perplexity band around the standard layer size",
        caption="""The parameter count (top) and the test perplexity (bottom) when layer i's
        size varies from 0.6c to 1.2c in steps of 0.1c, c its standard size (reproduces
        major_minor, Figure 4): AWD-LSTM on PTB and WikiText-2 (layers 1 and 2) and AWD-LSTM-MoS
        on PTB (layers 1, 2 and 3). The 1.0c point is the main table's run. The band is the
        standard model's test perplexity ± 0.25; red squares mark the sizes inside it (the
        paper: 0.9c in most layers, and 0.6c for MoS's layer 3), which the footer lists.""",
        maker="figure",
        kind="size_band",
        runs=FIG4,
        files=("metrics.json",),
        model_labels=STANDARD_LABELS,
    ),
    study(
        "major_minor_fig5_feature_masking",
        title="Test perplexity with a share of a layer's output features masked",
        caption="""Test perplexity on PTB when, at test time, a Bernoulli(P) share of the output
        features of every layer (a) or of layer 1, 2 or 3 (b-d) is zeroed, P from 0 to 0.5
        (reproduces major_minor, Figure 5); the kept features are scaled by 1 / (1 − P) and one
        mask is drawn per window and column, as dropout in training [A]; each point is the mean
        over the mask seeds. Models (trained, not fine-tuned): LM (AWD-LSTM-MoS), LM+ (its
        hidden-state and recurrent-weight dropouts + 0.025), LM# (plain LSTMs of the MMLSTM's
        layer sizes), LM## (LM# with every MMLSTM hyper-parameter) and MMLM (AWD-MMLSTM-MoS).
        The paper's claims: MMLM is lowest at every P and every masked layer, and LM+ ≈ LM. The
        footer counts, per panel, which model is lowest at how many P.""",
        maker="figure",
        kind="feature_masking",
        runs=Runs("major_minor", families=("ptb_stream",), models=tuple(MASKING_LABELS)),
        files=("feature_mask.csv",),
        model_labels=MASKING_LABELS,
    ),
    study(
        "major_minor_fig5_params",
        title="major_minor §V-C: the parameter counts of LM and LM#",
        caption="""The parameter counts §V-C prints for Figure 5's models: LM (AWD-LSTM-MoS,
        21.5M) and LM# (plain LSTMs of the MMLSTM's sizes 1080/1080/620, 24.9M) on PTB, against
        the trained runs' counts (Figure 5's footer gives all five models' counts).""",
        maker="compare",
        runs=Runs("major_minor", families=("ptb_stream",), models=tuple(MASKING_LABELS)),
        files=("metrics.json",),
        labels=("Section V-C",),
    ),
    study(
        "major_minor_table8",
        title="major_minor Table VIII (the Minor LSTMs' input): paper vs reproduction",
        caption="""major_minor, Table VIII: MMLM-1 (AWD-MMLSTM-MoS, its Minor LSTMs reading the
        embedding; the main model, trained) against MMLM-2 (its Minor LSTMs reading the previous
        layer's output; layers 1050/1050/620 on PTB, 1160/1160/650 on WikiText-2 [A], chosen
        for the printed 21.7M and 32.5M: the text's 1150 gives 24.4M on PTB), both trained with
        Table IV's settings, neither fine-tuned. The ordering follows: MMLM-1 beats MMLM-2 on
        both corpora.""",
        maker="compare",
        runs=Runs("major_minor", models=("awd_mmlstm_mos", "awd_mmlstm_mos_prev")),
        files=("metrics.json",),
        labels=("Table VIII",),
        orderings=MINOR_INPUT_ORDERINGS,
    ),
    study(
        "major_minor_table9",
        title="major_minor Table IX / Fig. 6 (Major:Minor ratios): paper vs reproduction",
        caption="""major_minor, Table IX: AWD-LSTM (no MoS) with every layer split Major:Minor
        at 5:5 ... 10:0, the layer sizes chosen so that the parameter counts stay near 24M
        (PTB) and 33.5M (WikiText-2), trained 300 epochs with AWD-LSTM's other settings. The
        paper prints the parameter counts (compared here) and draws the perplexities in Figure
        6 (their rows carry ours only, verdict info). The orderings follow: perplexity falls from
        5:5 to 9:1 and rises at 10:0.""",
        maker="compare",
        runs=Runs("major_minor", models=RATIOS),
        files=("metrics.json",),
        labels=("Table IX",),
        notes=(
            "Layer sizes L of Table IX (layers L, L, 400; PTB / WikiText-2), which the runs use: "
            + ", ".join(
                f"{name.removeprefix('awd_mmlstm_ratio_').replace('_', ':')} {ptb} / {wt2}"
                for name, (ptb, wt2) in RATIO_SIZES.items()
            )
            + ".",
        ),
        orderings=ratio_orderings(),
    ),
    study(
        "major_minor_fig6_ratio",
        title="Perplexity by Major:Minor ratio",
        caption="""Validation (dashed) and test (solid) perplexity of AWD-LSTM with every layer
        split Major:Minor at each ratio of Table IX, trained 300 epochs (reproduces major_minor,
        Figure 6); a panel per corpus. The paper's claim: perplexity falls from 5:5 to 9:1 and
        rises at 10:0 (checked in Table IX's orderings).""",
        maker="figure",
        kind="major_ratio",
        runs=Runs("major_minor", models=RATIOS),
        files=("metrics.json",),
    ),
    study(
        "major_minor_table10",
        title="major_minor Table X (the Minor LSTMs' ablation): paper vs reproduction",
        caption="""major_minor, Table X: the main AWD-MMLSTM-MoS (MMLM, trained) and MMLM
        with layer i's Minor LSTM removed and the layer a plain LSTM of the printed adjusted
        size (PTB 1030/1030/520, WikiText-2 1150/1130/550), trained with Table IV's settings,
        neither fine-tuned nor dynamically evaluated. The orderings follow: every Minor LSTM
        helps, layer 3's most, then layer 1's, then layer 2's.""",
        maker="compare",
        runs=Runs("major_minor", models=("awd_mmlstm_mos", *ABLATION)),
        files=("metrics.json",),
        labels=("Table X",),
        orderings=ablation_orderings(),
    ),
)
