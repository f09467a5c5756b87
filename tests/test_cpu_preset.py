"""experiments/cpu_preset.py and experiments/dynamics.py: the context-free detector by hand, and
both scripts end to end on a corpus written here with a 1-layer 16-wide model and a handful of
updates."""
import json
import random

import pytest
import torch

from experiments import cpu_preset, dynamics
from tokenizer import train as train_vocab

WORDS = ("the cat sat on a mat while dogs ran over green hills and birds sang songs of old "
         "kings").split()
MODEL = ["--set", "embedding_size=16", "--set", "hidden_size=16", "--set", "num_layers=1",
         "--set", "num_heads=1", "--set", "intermediate_size=32"]
SHORT = ["--size", "tiny", "--steps", "6", "--warmup", "1", "--stop-at", "4", "--log-interval", "2",
         "--eval-interval", "2", "--eval-batches", "2", "--eval-fraction", "0.2", "--seq-len", "32",
         "--batch-size", "4"]


@pytest.fixture
def corpus(tmp_path):
    rng = random.Random(0)
    docs = ["\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 12))) + " ."
                      for _ in range(6))
            for _ in range(30)]
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("\n\n".join(docs) + "\n")
    runs = tmp_path / "runs"
    runs.mkdir()
    # the candidates' shared vocab
    train_vocab(docs, vocab_size=80, progress=False).save(runs / "vocab.txt")
    return tmp_path


def test_type_replaced_rate_by_hand():
    # type 7 seen 4 times, replaced once: (1 + 0.5) / (4 + 4) = 0.1875; type 5 seen twice, never
    # replaced: 0.5 / 6; the padding token (real False) is not counted; unseen types get 0.5 / 4.
    x_corrupt = torch.tensor([[7, 7, 7, 7, 5, 5, 0]])
    is_original = torch.tensor([[False, True, True, True, True, True, False]])
    real = torch.tensor([[True, True, True, True, True, True, False]])
    rate = cpu_preset.type_replaced_rate(x_corrupt, is_original, real, vocab_size=8)
    assert rate[7].item() == pytest.approx(0.1875)
    assert rate[5].item() == pytest.approx(0.5 / 6)
    assert rate[0].item() == rate[1].item() == pytest.approx(0.5 / 4)


def test_cpu_preset_runs_candidates_draws_and_skips_what_is_done(corpus, monkeypatch, capsys):
    monkeypatch.setattr(cpu_preset, "BASE_FLAGS", SHORT)
    monkeypatch.setattr(cpu_preset, "CANDIDATES", {
        "a": ("temperature 1", MODEL),
        "b": ("temperature 2", [*MODEL, "--set", "temperature=2.0"]),
    })
    argv = ["--data", str(corpus / "corpus"), "--runs-dir", str(corpus / "runs"),
            "--out", str(corpus / "out"), "--threads", "1"]
    cpu_preset.main(argv)
    assert (corpus / "out" / "auc_vs_minutes.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = (corpus / "out" / "candidates.md").read_text().splitlines()
    assert [line.split(" | ")[0] for line in table[2:]] == ["| a", "| b"]
    for name in ("a", "b"):
        held = [r for r in map(json.loads,
                               (corpus / "runs" / name / "metrics.jsonl").read_text().splitlines())
                if r["split"] == "eval"]
        assert [r["step"] for r in held] == [2, 4]
        # the held-out corruptions are report.evaluate_heldout's: D's AUC measured here is the
        # run's own
        d_auc, free_auc = cpu_preset.context_free_auc(corpus / "runs" / name,
                                                      corpus / "runs" / "cache")
        assert d_auc == pytest.approx(held[-1]["disc_auc"], abs=1e-6)
        assert 0.0 <= free_auc <= 1.0
        assert f"| {held[-1]['disc_auc']:.3f} | {free_auc:.3f} |" in table[2 + "ab".index(name)]
    capsys.readouterr()
    cpu_preset.main(argv)  # a second call trains nothing
    assert capsys.readouterr().out.count("done already") == 2


def test_cpu_preset_needs_data_unless_drawing(tmp_path):
    with pytest.raises(SystemExit, match="--data is required"):
        cpu_preset.main(["--runs-dir", str(tmp_path)])


def test_dynamics_writes_one_row_per_evaluation(corpus):
    out = corpus / "dyn" / "rows.jsonl"
    dynamics.main(["--data", str(corpus / "corpus"), "--vocab", str(corpus / "runs" / "vocab.txt"),
                   "--cache-dir", str(corpus / "cache"), "--out", str(out), "--stop", "4",
                   "--every", "2", "--window", "2", "--threads", "1", *MODEL, "--seq-len", "32",
                   "--batch-size", "4", "--eval-fraction", "0.2", "--eval-batches", "2"])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["step"] for r in rows] == [2, 4]
    for r in rows:
        assert (0 <= r["disc_auc"] <= 1 and 0 <= r["context_free_auc"] <= 1
                and 0 <= r["gen_acc"] <= 1)
        assert 0.1 < r["replaced_frac"] < 0.3  # the tiny preset masks 25%; most samples differ
