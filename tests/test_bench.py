"""bench/: the benchmarks run (seconds, with the smallest settings) and compare like with like."""
import importlib.util
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load(name):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_train_step_bench_times_the_same_step_on_both_sides(capsys):
    """Ours and HuggingFace's generator + discriminator, same weights, masks and samples: the same
    loss (the check the bench prints before timing), and every figure of the table is there."""
    results = load("train_step").main(["--size", "tiny", "--batch", "2", "--seq", "32",
                                       "--steps", "1", "--warmup", "0", "--threads", "1",
                                       "--device", "cpu"])
    printed = capsys.readouterr().out
    ours, hf = results
    assert (ours["variant"], hf["variant"]) == ("ours", "hf")
    assert (ours["check_loss"] == pytest.approx(hf["check_loss"], rel=1e-5)
            and "WARNING" not in printed)
    assert all(r["steps_per_s"] > 0
               and r["tokens_per_s"] == pytest.approx(r["steps_per_s"] * 2 * 32)
               for r in results)
    assert "ours / hf:" in printed and "cpu, 1 threads" in printed


def test_train_step_bench_orders_and_pairs_its_variants(monkeypatch, capsys):
    """--compile --cuda-graphs: five points, HF's compiled step last (its compiling is the slowest,
    past 100 s on an H100); each of ours is compared with HF's step eager or compiled as ours is
    (CUDA graphs: HF compiled). The points' processes are replaced by made-up speeds."""
    bench = load("train_step")
    commands = []
    speeds = {"ours": 2.0, "hf": 1.0, "ours compiled": 4.0, "ours CUDA graphs": 8.0,
              "hf compiled": 2.0}

    def point(cmd, what):
        commands.append(cmd)
        mode = cmd[cmd.index("--mode") + 1] if "--mode" in cmd else None
        name = what + {None: "", "default": " compiled", "reduce-overhead": " CUDA graphs"}[mode]
        return {"variant": name, "steps_per_s": speeds[name], "tokens_per_s": 0.0,
                "peak_mib": 1.0, "mfu": None, "check_loss": 1.0, "device": "cpu"}

    monkeypatch.setattr(bench, "run_point", point)
    results = bench.main(["--size", "tiny", "--device", "cpu", "--compile", "--cuda-graphs"])
    assert [r["variant"] for r in results] == list(speeds)
    assert [r.get("speedup_vs_hf") for r in results] == [2.0, None, 2.0, 4.0, None]
    assert all("--cuda-graphs" not in c for c in commands)
    assert [c.count("--compile") for c in commands] == [0, 0, 1, 1, 1]
    assert "ours CUDA graphs / hf compiled: 4.00x the steps/s" in capsys.readouterr().out


def test_tokenizer_bench_runs_and_agrees_with_both_references(tmp_path, capsys):
    """The bench exits with an error when our ids differ from the Python or the Rust reference."""
    words = ["the", "river", "Runs", "quickly", "naïve", "café", "unbelievable", "x-ray", "Don't",
             "42", "北京"]
    lines = [" ".join(words[(i * 7 + j) % len(words)] for j in range(3 + i % 9))
             for i in range(400)]
    (tmp_path / "corpus.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    load("tokenizer").main(["--data", str(tmp_path / "corpus.txt"), "--vocab-size", "120",
                            "--mb", "0.01", "--repeat", "1"])
    printed = capsys.readouterr().out
    # Python and Rust
    assert "trainer, vocab_size=120" in printed and printed.count(" 0 of 223 lines") == 2
    assert "ours (tokenizer.py, Python)" in printed and "BertWordPieceTokenizer (Rust)" in printed


def test_seq_len_bench_measures_both_objectives_at_every_length(tmp_path, capsys):
    """ELECTRA (G + D) and BERT (one MLM of D's size) at each length: a row each, the same model at
    every length, ELECTRA the larger by its generator, and the plot and JSON written."""
    out = tmp_path / "seq"
    results = load("seq_len_memory").main(["--size", "tiny", "--seq", "16", "32", "--batch", "2",
                                           "--steps", "1", "--warmup", "0", "--threads", "1",
                                           "--device", "cpu", "--out", str(out)])
    assert [(r["objective"], r["seq"]) for r in results] == [("electra", 16), ("bert", 16),
                                                             ("electra", 32), ("bert", 32)]
    params = {o: {r["params"] for r in results if r["objective"] == o} for o in ("electra", "bert")}
    # the sequence length changes no weight
    assert len(params["electra"]) == len(params["bert"]) == 1
    # the generator on top of a D of BERT's size
    assert params["electra"].pop() > params["bert"].pop()
    assert all(r["steps_per_s"] > 0 for r in results)
    assert out.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    assert len(json.loads(out.with_suffix(".json").read_text())) == 4
    assert "seq 32: ELECTRA / BERT" in capsys.readouterr().out


def test_gpu_profile_writes_its_tables(tmp_path):
    """bench/gpu_profile.py on a CPU: the step profiled, both tables (by operator, by operator and
    input shape) written."""
    out = tmp_path / "profile.txt"
    load("gpu_profile").main(["--device", "cpu", "--size", "tiny", "--batch", "2", "--seq", "32",
                              "--steps", "1", "--warmup", "1", "--rows", "3", "--out", str(out)])
    text = out.read_text()
    assert text.startswith("1 joint steps of ELECTRA-tiny, batch 2, seq 32, eager, on cpu: ")
    assert "top 3 operators by cpu_time_total:" in text and "Input Shapes" in text


def gpu_check(tmp_path, *args, **env):
    """bench/gpu_check.sh's dry run (GPU_CHECK_DRY=1: a CPU, tiny settings) on data written here:
    (its output, summary.json)."""
    env = {**os.environ, "GPU_CHECK_DRY": "1", "PYTHON": sys.executable, "OMP_NUM_THREADS": "1",
           "OUT": str(tmp_path / "out"), "WORK": str(tmp_path / "work"),
           "RUN": str(tmp_path / "run"),
           "CORPUS": str(tmp_path / "corpus"), "SST2": str(tmp_path / "SST-2"),
           "VOCAB": str(tmp_path / "vocab.txt"), "CACHE": str(tmp_path / "cache"),
           "BLIMP": str(tmp_path / "blimp"), **env}
    done = subprocess.run(["bash", str(ROOT / "bench" / "gpu_check.sh"), *args], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, json.loads((tmp_path / "out" / "summary.json").read_text())


def test_gpu_check_script_runs_its_steps_and_continues_its_run(tmp_path):
    """The GPU call's script parses, and its dry run chains the steps that hand files on: train.py
    writes the run that sst2_check.py fine-tunes on SST-2 beside its random twin, then --run resumes
    it and scores it on BLiMP. (The other steps'
    commands, run by GPU_CHECK_DRY=1 bash bench/gpu_check.sh, take a minute: they are the
    benchmarks tested above and tests/test_gpu.py.)"""
    from tokenizer import train as train_vocab

    assert subprocess.run(["bash", "-n", str(ROOT / "bench" / "gpu_check.sh")]).returncode == 0
    r = random.Random(0)
    words = ["the film", "a plot", "is", "was", "good", "bad", "dull", "moving", "."]
    lines = [" ".join(r.choice(words) for _ in range(r.randint(4, 9))) for _ in range(300)]
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("\n\n".join(lines) + "\n")
    train_vocab(lines, vocab_size=60, progress=False).save(tmp_path / "vocab.txt")
    (tmp_path / "SST-2").mkdir()
    for split, n in (("train", 24), ("dev", 8)):
        rows = [f"{lines[i]}\t{i % 2}" for i in range(n)]
        text = "sentence\tlabel\n" + "\n".join(rows) + "\n"
        (tmp_path / "SST-2" / f"{split}.tsv").write_text(text)
    (tmp_path / "blimp").mkdir()
    for uid, good, bad in (("p1", "the film was good .", "the film good was ."),
                           ("p2", "a plot is dull .", "a plot dull is .")):
        pair = {"sentence_good": good, "sentence_bad": bad, "field": "syntax", "UID": uid,
                "pairID": "0"}
        (tmp_path / "blimp" / f"{uid}.jsonl").write_text(json.dumps(pair) + "\n")

    printed, summary = gpu_check(tmp_path, STEPS="train finetune", STOP_AT="2")
    statuses = {name: s["exit"] for name, s in summary["steps"].items()}
    assert statuses == {"train": "0", "finetune": "0"}
    assert summary["train"]["step"] == 2
    sst2 = summary["finetune"]["sst2"]  # the run against its random-weights twin
    assert sst2["gain"] == sst2["pretrained"]["mean"] - sst2["random"]["mean"]
    assert "=== versions" not in printed  # STEPS leaves it out
    out = tmp_path / "out"
    assert {p.name for p in out.iterdir()} == {"gpu_check.log", "summary.json", "metrics.jsonl",
                                               "curves.png", "finetune.json", "sst2_check.md"}

    printed, summary = gpu_check(tmp_path, "--run", STOP_AT="3")
    assert "continuing the run in" in printed and summary["train"]["step"] == 3
    assert "resuming at step 2" in (out / "gpu_run.log").read_text()
    # the blimp step: D and G of the run scored there, two pairs, every score a credit of 0, 1/2
    # or 1 a pair
    assert summary["steps"]["blimp"]["exit"] == "0"
    scored = json.loads((out / "blimp.json").read_text())
    # the run as the train step left it, at update 3
    assert scored["init"].endswith("run/ckpt.pt (step 3)") and not scored["random"]
    assert summary["blimp"] == scored["overall"] and summary["blimp"]["pairs"] == 2
    assert {summary["blimp"][s] for s in ("d_sum", "d_mean", "mlm_pll")} <= {0, 0.25, 0.5, 0.75, 1}

    # RUN_S=0 with BRING_BACK=generator: the run untouched, only G exported, in parts that unpack
    printed, summary = gpu_check(tmp_path, "--run", RUN_S="0", BRING_BACK="generator",
                                 BLIMP=str(tmp_path / "none"))
    assert "no BLiMP files in" in printed and "blimp" not in summary["steps"]
    assert summary["steps"]["train"]["exit"] == "skipped" and summary["train"]["step"] == 3
    assert summary["steps"]["export"]["exit"] == "0"
    parts = sorted(out.glob("generator.tar.part-*"))
    assert parts and not list(out.glob("discriminator.tar.part-*"))
    unpacked = tmp_path / "unpacked"
    unpacked.mkdir()
    tar = subprocess.run(["tar", "x", "-C", str(unpacked)], input=b"".join(
        p.read_bytes() for p in parts), capture_output=True)
    assert tar.returncode == 0, tar.stderr
    assert {p.name for p in (unpacked / "generator").iterdir()} >= {"config.json",
                                                                    "model.safetensors"}
    # the checkpoint's update beside the export, for gpu_run_folder.py
    assert (unpacked / "generator" / "step.txt").read_text() == "3\n"


def test_gpu_run_folder_makes_a_run_of_the_discriminator_brought_back(tmp_path, capsys):
    """bench/gpu_run_folder.py: the discriminator gpu_check.sh --run brings back (HuggingFace's
    layout) becomes a run folder whose ckpt.pt fine-tunes from D's trained weights, at the step
    given, and whose random twin (sst2_check) is the run's initial draw, seed 0."""
    import torch

    import train
    from electra import Electra
    from experiments import sst2_check
    from support import hf
    from tokenizer import Tokenizer
    from tokenizer import train as train_vocab

    lines = ["the film was good .", "a plot is dull .", "the film is moving ."] * 20
    vocab = tmp_path / "vocab.txt"
    train_vocab(lines, vocab_size=60, progress=False).save(vocab)
    cfg = train.parse_config(["--size", "tiny", "--vocab", str(vocab)])
    mc = train.model_config(cfg, Tokenizer.load(vocab))
    torch.manual_seed(0)
    initial = Electra(mc)
    trained = Electra(mc)
    trained.load_state_dict(initial.state_dict())
    with torch.no_grad():  # "trained": every weight moved away from its initial draw
        for p in trained.parameters():
            p.add_(torch.randn_like(p))
    run = tmp_path / "run"
    hf.export_hf(trained, vocab, run)  # run/discriminator/ and run/generator/, as gpu_check's
    load("gpu_run_folder").main([str(run), "--step", "7", "--size", "tiny"])
    assert "D at step 7 of --size tiny, seed 0" in capsys.readouterr().out

    saved = torch.load(run / hf.TRAIN_CHECKPOINT, map_location="cpu", weights_only=True)
    assert saved["step"] == 7 and saved["train_config"]["seed"] == 0
    # without --step: gpu_check.sh's step.txt beside the export, or one line saying to give it
    with pytest.raises(SystemExit, match="give the update D was exported at with --step"):
        load("gpu_run_folder").main([str(run), "--size", "tiny"])
    (run / "discriminator" / "step.txt").write_text("29651\n")
    load("gpu_run_folder").main([str(run), "--size", "tiny"])
    saved_29651 = torch.load(run / hf.TRAIN_CHECKPOINT, map_location="cpu", weights_only=True)
    assert saved_29651["step"] == 29651
    pre = hf.load_train_checkpoint(run / hf.TRAIN_CHECKPOINT)
    want = trained.fine_tuning_encoder().state_dict()
    assert pre.encoder_state.keys() == want.keys()
    for name, w in want.items():
        torch.testing.assert_close(pre.encoder_state[name], w, msg=name)
    twin = sst2_check.random_twin(saved)
    for (name, p), q in zip(initial.named_parameters(), twin.parameters()):
        assert torch.equal(p, q), name


def test_reference_curves_are_drawn_from_the_measured_runs_and_the_table_is_theirs(tmp_path):
    """bench/reference_curves.py draws the reference figure from gpu_h100/ and gpu_h200/'s
    metrics.jsonl, and its table is the one bench/README.md shows: the documented figures are the
    measured runs', to the digit."""
    table = load("reference_curves").main(tmp_path / "reference.png")
    assert (tmp_path / "reference.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert table in (ROOT / "bench" / "README.md").read_text()
    h100 = [json.loads(line) for line in (ROOT / "bench" / "gpu_h100" / "metrics.jsonl")
            .read_text().splitlines()]
    last = next(r for r in h100 if r["split"] == "eval" and r["step"] == 29_500)
    assert f"| 29,500 | 135 | 3.476 / {last['mlm_loss']:.3f} |" in table
    # the README's "held-out rows differ from these by at most 0.005" up to the H200's last
    h200 = [json.loads(line) for line in (ROOT / "bench" / "gpu_h200" / "metrics.jsonl")
            .read_text().splitlines()]
    held = {r["step"]: r for r in h100 if r["split"] == "eval"}
    shared = [(held[r["step"]], r) for r in h200 if r["split"] == "eval"]
    assert shared[-1][1]["step"] == 5_000
    compared = ("mlm_loss", "disc_loss", "gen_acc", "disc_auc", "context_auc")
    assert max(abs(a[key] - b[key]) for a, b in shared for key in compared) < 0.005


def test_data_memory_bench_makes_distinct_copies_and_reads_the_process_tree(tmp_path):
    """bench/data_memory.py's corpora: each copy of the books renames every word by its own
    permutation (no two copies the same text, the same words and lines); and the sampler sees this
    process's anonymous memory."""
    bench = load("data_memory")
    books = tmp_path / "books"
    books.mkdir()
    (books / "a.txt").write_text("The cat sat on the mat .\n\nA dog ran far away today .\n")
    corpus = bench.make_corpus(books, 1e-7, tmp_path)  # 100 bytes: two copies
    copies = [p.read_text() for p in sorted(corpus.glob("*.txt"))]
    assert len(copies) == 2 and copies[0] != copies[1]
    # the same word types, each as often as some word of the other copy
    assert set(copies[0].split()) == set(copies[1].split())
    assert sorted(map(copies[0].split().count, set(copies[0].split()))) == \
        sorted(map(copies[1].split().count, set(copies[1].split())))
    assert [c.count("\n") for c in copies] == [copies[0].count("\n")] * 2
    assert bench.make_corpus(books, 1e-7, tmp_path) == corpus  # made once
    assert bench.tree_anon_kib(os.getpid()) > 10_000  # torch alone is more than 10 MB
