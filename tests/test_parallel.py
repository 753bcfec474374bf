"""major_minor's translation data: the generated stand-in, the joint BPE vocabulary's round trip
and BLEU against sacrebleu's command line."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from rnnrepro.data.parallel import bleu, stand_in_pairs, stand_in_target, train_bpe


def test_stand_in_maps_every_word_and_reverses_blocks_of_three():
    mapping = {"s1": "a", "s2": "b", "s3": "c", "s4": "d"}
    assert stand_in_target(["s1", "s2", "s3", "s4"], mapping) == ["c", "b", "a", "d"]
    pairs = stand_in_pairs(50, seed=1)
    assert pairs == stand_in_pairs(50, seed=1) and pairs != stand_in_pairs(50, seed=2)
    # the mapping is shared by every split: one source word, one target word
    seen = {}
    for source, target in pairs + stand_in_pairs(50, seed=2):
        src, tgt = source.split(), target.split()
        assert len(src) == len(tgt) and 4 <= len(src) <= 16
        reordered = [w for i in range(0, len(src), 3) for w in reversed(src[i : i + 3])]
        for s, t in zip(reordered, tgt, strict=True):
            assert seen.setdefault(s, t) == t


def test_bpe_round_trip_and_special_ids():
    import sentencepiece as spm

    lines = [text for pair in stand_in_pairs(300, seed=3) for text in pair]
    model = train_bpe(lines, vocab_size=120)
    assert train_bpe(lines, vocab_size=120) == model  # the same bytes: no path recorded
    sp = spm.SentencePieceProcessor(model_proto=model)
    assert sp.get_piece_size() == 120
    assert (sp.pad_id(), sp.bos_id(), sp.eos_id(), sp.unk_id()) == (0, 1, 2, 3)
    for text in lines[:50] + ["s0 s1 t7 s199"]:
        assert sp.decode(sp.encode(text)) == text


def test_bleu_is_sacrebleus_command_line_answer(tmp_path):
    hypotheses = ["the cat sat on the mat .", "a quick brown dog jumps", "hello world"]
    references = ["the cat sat on a mat .", "the quick brown fox jumps", "hello , world"]
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("\n".join(hypotheses) + "\n")
    ref.write_text("\n".join(references) + "\n")
    cli = shutil.which("sacrebleu") or pytest.skip("no sacrebleu command")
    out = subprocess.run(
        [cli, str(ref), "-i", str(hyp), "-b", "-w", "4"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    scores = bleu(hypotheses, references)
    assert f"{scores['bleu']:.4f}" == out.stdout.strip()
    assert scores["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    assert "tok:none" in scores["signature_tokenized"]
    assert bleu(references, references)["bleu"] == pytest.approx(100.0)
    with pytest.raises(ValueError, match="3 hypotheses for 2 references"):
        bleu(hypotheses, references[:2])
    assert sys.executable  # the CLI is the one installed with this interpreter's sacrebleu
