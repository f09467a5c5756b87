"""bench/: the benchmarks run (seconds, with the smallest settings) and compare like with like."""
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load(name):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_train_step_bench_times_the_same_step_on_both_sides(capsys):
    """Ours and HuggingFace's generator + discriminator, same weights, masks and samples: the same loss
    (the check the bench prints before timing), and every figure of the table is there."""
    results = load("train_step").main(["--size", "tiny", "--batch", "2", "--seq", "32", "--steps", "1",
                                       "--warmup", "0", "--threads", "1", "--device", "cpu"])
    printed = capsys.readouterr().out
    ours, hf = results
    assert (ours["variant"], hf["variant"]) == ("ours", "hf")
    assert ours["check_loss"] == pytest.approx(hf["check_loss"], rel=1e-5) and "WARNING" not in printed
    assert all(r["steps_per_s"] > 0 and r["tokens_per_s"] == pytest.approx(r["steps_per_s"] * 2 * 32)
               for r in results)
    assert "ours / hf:" in printed and "cpu, 1 threads" in printed


def test_tokenizer_bench_runs_and_agrees_with_both_references(tmp_path, capsys):
    """The bench exits with an error when our ids differ from the Python or the Rust reference."""
    words = ["the", "river", "Runs", "quickly", "naïve", "café", "unbelievable", "x-ray", "Don't", "42", "北京"]
    lines = [" ".join(words[(i * 7 + j) % len(words)] for j in range(3 + i % 9)) for i in range(400)]
    (tmp_path / "corpus.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    load("tokenizer").main(["--data", str(tmp_path / "corpus.txt"), "--vocab-size", "120", "--mb", "0.01",
                            "--repeat", "1"])
    printed = capsys.readouterr().out
    assert "trainer, vocab_size=120" in printed and printed.count(" 0 of 223 lines") == 2  # Python and Rust
    assert "ours (tokenizer.py, Python)" in printed and "BertWordPieceTokenizer (Rust)" in printed


def test_seq_len_bench_measures_both_objectives_at_every_length(tmp_path, capsys):
    """ELECTRA (G + D) and BERT (one MLM of D's size) at each length: a row each, the same model at every
    length, ELECTRA the larger by its generator, and the plot and JSON written."""
    out = tmp_path / "seq"
    results = load("seq_len_memory").main(["--size", "tiny", "--seq", "16", "32", "--batch", "2", "--steps", "1",
                                           "--warmup", "0", "--threads", "1", "--device", "cpu", "--out", str(out)])
    assert [(r["objective"], r["seq"]) for r in results] == [("electra", 16), ("bert", 16), ("electra", 32),
                                                             ("bert", 32)]
    params = {o: {r["params"] for r in results if r["objective"] == o} for o in ("electra", "bert")}
    assert len(params["electra"]) == len(params["bert"]) == 1  # the sequence length changes no weight
    assert params["electra"].pop() > params["bert"].pop()       # the generator on top of a D of BERT's size
    assert all(r["steps_per_s"] > 0 for r in results)
    assert out.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    assert len(json.loads(out.with_suffix(".json").read_text())) == 4
    assert "seq 32: ELECTRA / BERT" in capsys.readouterr().out
