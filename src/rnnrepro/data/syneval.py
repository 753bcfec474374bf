"""The sub-categories of Marvin & Linzen's syntactic evaluation as second_order_lstm's Table 3
reports them (``rnnrepro.evaluation.syneval`` scores them); torch-free, for the reports."""

AGREEMENT = (
    "simple_agrmt",
    "sent_comp",
    "vp_coord",
    "long_vp_coord",
    "prep",
    "subj_rel",
    "obj_rel_across",
    "obj_rel_within",
    "obj_rel_no_comp_across",
    "obj_rel_no_comp_within",
)
REFLEXIVES = ("simple_reflexives", "reflexive_sent_comp", "reflexives_across")
NPI = ("simple_npi", "npi_across")
# NPI comparisons: (label, column of the preferred sentence, column of the other)
NPI_COMPARISONS = (
    ("G>I", "grammatical", "ungrammatical"),  # the TSV's 2nd sentence is the intrusive one
    ("I>U", "ungrammatical", "ungrammatical_2"),
    ("G>U", "grammatical", "ungrammatical_2"),
)
CATEGORIES = (
    *AGREEMENT,
    *REFLEXIVES,
    *(f"{case} {label}" for case in NPI for label, _, _ in NPI_COMPARISONS),
)
GROUPS = {**dict.fromkeys(AGREEMENT, "agreement"), **dict.fromkeys(REFLEXIVES, "reflexives")}
