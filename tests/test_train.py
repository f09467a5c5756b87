"""train.py end to end on text the tests write: tiny runs on CPU, a few steps each."""
import contextlib
import dataclasses
import errno
import fcntl
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers
from torch._dynamo.utils import counters

import data
import train
from electra import Electra, get_config
from support import plumbing, report
from support.report import disc_auc
from tokenizer import Tokenizer
from tokenizer import train as train_vocab

ROOT = Path(__file__).resolve().parents[1]
# The smallest model that still has every part: one layer, 32 wide (generator 8 wide), 1 head.
TINY = ["--size", "tiny", "--seq-len", "32", "--batch-size", "8", "--lr", "3e-3", "--warmup", "5",
        "--set", "hidden_size=32", "--set", "embedding_size=32", "--set", "num_layers=1",
        "--set", "num_heads=1", "--set", "intermediate_size=64",
        "--eval-fraction", "0.1", "--eval-batches", "2"]
SUBJECTS = ["the cat", "a dog", "the old man", "my sister", "the bird", "a child", "the king",
            "our teacher"]
VERBS = ["sees", "likes", "finds", "follows", "paints", "hears"]
OBJECTS = ["the red ball", "a small house", "the river", "an apple", "the green tree", "a book"]


def write_corpus(folder: Path, paragraphs: int = 120, seed: int = 0) -> Path:
    """Paragraphs of 3-8 sentences from a small grammar, one sentence a line, blank lines
    between."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    paras = ["\n".join(f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} ."
                       for _ in range(rng.randint(3, 8))) for _ in range(paragraphs)]
    (folder / "a.txt").write_text("\n\n".join(paras[: paragraphs // 2]) + "\n")
    (folder / "b.txt").write_text("\n\n".join(paras[paragraphs // 2:]) + "\n")
    return folder


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """(corpus folder, vocab.txt, cache folder) shared by the tests of this file."""
    root = tmp_path_factory.mktemp("train")
    folder = write_corpus(root / "corpus")
    tok = train_vocab([p.read_text() for p in sorted(folder.glob("*.txt"))], vocab_size=60,
                      progress=False)
    tok.save(root / "vocab.txt")
    return folder, root / "vocab.txt", root / "cache"


def args(corpus, out, *extra):
    folder, vocab, cache = corpus
    return ["--data", str(folder), "--vocab", str(vocab), "--cache-dir", str(cache),
            "--out", str(out), *TINY, *extra]


def rows(out, split="train"):
    return [r for r in map(json.loads, (Path(out) / "metrics.jsonl").read_text().splitlines())
            if r["split"] == split]


def test_tiny_run_learns_and_writes_metrics_and_curves(corpus, tmp_path, capsys):
    out = tmp_path / "run"
    result = train.main(args(corpus, out, "--steps", "40", "--log-interval", "1",
                             "--eval-interval", "20"))
    printed = capsys.readouterr().out
    for line in ("ELECTRA pre-training: size tiny", "params   discriminator", "compute  ",
                 "FLOPs per update"):
        assert line in printed
    train_rows = rows(out)
    assert [r["step"] for r in train_rows] == list(range(1, 41))
    first, last = train_rows[:5], train_rows[-5:]
    mean = lambda rs, k: sum(r[k] for r in rs) / len(rs)  # noqa: E731
    # L_MLM starts near ln(60) = 4.09 (uniform over the vocab) and must fall well below it
    # (measured: 4.08 -> 3.61 over these 40 steps).
    assert mean(first, "mlm_loss") > 3.5 and mean(last, "mlm_loss") < mean(first, "mlm_loss") - 0.35
    assert mean(last, "disc_loss") < mean(first, "disc_loss") - 0.05
    for key in ("loss", "mlm_loss", "disc_loss", "gen_acc", "disc_acc", "disc_precision",
                "disc_recall", "disc_auc", "replaced_frac", "all_original_acc", "lr", "grad_norm",
                "tokens_per_s", "steps_per_s", "elapsed_s"):
        assert key in train_rows[-1]
    assert "D_AUC" in printed
    # no hook: the model's temperature throughout, not logged
    assert not any("temperature" in r for r in train_rows + rows(out, "eval"))
    assert 0 < train_rows[0]["elapsed_s"] < train_rows[-1]["elapsed_s"]
    assert train_rows[-1]["loss"] == pytest.approx(train_rows[-1]["mlm_loss"]
                                                   + 50 * train_rows[-1]["disc_loss"])
    held = rows(out, "eval")
    assert [r["step"] for r in held] == [20, 40] and held[1]["mlm_loss"] < held[0]["mlm_loss"]
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert result["step"] == 40 and not result["interrupted"]
    ckpt = torch.load(out / "ckpt.pt", weights_only=True)
    assert ckpt["step"] == 40 and set(ckpt) >= {"model", "optimizer", "rng", "train_config",
                                                "vocab_hash"}
    assert ckpt["vocab_hash"] == Tokenizer.load(corpus[1]).hash() and (out / "vocab.txt").is_file()
    assert not list(out.glob("*.tmp*"))


def test_the_cpu_preset_logs_evaluates_and_draws_within_its_first_minutes(corpus, tmp_path,
                                                                          capsys):
    """A student who stops the CPU preset's run after a few minutes has a metrics.jsonl, held-out
    rows, curves.png and D's view of a held-out sentence: with the tiny recipe's own intervals
    (~2-3 updates/s on 2 cores), the first log comes within 20 updates and the first evaluation
    within 50, long before the run's end. The GPU presets keep theirs."""
    tiny = train.recipe_config(size="tiny")
    assert tiny.log_interval <= 20 and tiny.eval_interval <= 50
    for size in ("small", "base", "large"):
        cfg = train.recipe_config(size=size)
        assert (cfg.log_interval, cfg.eval_interval) == (100, 2000)
    out = tmp_path / "run"
    # the recipe's 1,800 updates and intervals (not given), stopped after 52 of them
    train.main(args(corpus, out, "--steps", "1800", "--stop-at", "52"))
    assert [r["step"] for r in rows(out)][:2] == [tiny.log_interval, 2 * tiny.log_interval]
    assert [r["step"] for r in rows(out, "eval")] == [tiny.eval_interval, 52]
    assert (out / "curves.png").is_file()
    printed = capsys.readouterr().out
    assert f"step {tiny.eval_interval} held-out:" in printed
    assert "held-out sentence" in printed


def test_train_config_defaults_are_their_sources():
    """TrainConfig is defined before torch loads, so two defaults are written out there: the vocab
    size is ELECTRA-Small's model's, the corpora's URL data.py's."""
    cfg = train.TrainConfig()
    assert cfg.vocab_size == get_config("small").vocab_size
    assert cfg.data_url == data.DATA_URL
    assert train.recipe_config() == cfg  # the defaults are Small's recipe


def test_a_mistyped_flag_answers_before_torch_loads(tmp_path):
    """python train.py --szie / --steps abc: argparse's one line and exit status 2, before torch
    is imported (it takes seconds to load): a `torch` that fails on import is first on the path."""
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('torch was imported')\n")
    env = {**os.environ, "PYTHONPATH": f"{fake.parent}{os.pathsep}{ROOT}"}
    for flags, error in [(["--szie", "tiny"], "unrecognized arguments: --szie tiny"),
                         (["--steps", "abc"], "argument --steps: invalid int value: 'abc'"),
                         (["--size", "huge"], "argument --size: invalid choice: 'huge'")]:
        done = subprocess.run([sys.executable, str(ROOT / "train.py"), *flags], env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done.stderr
        assert f"train.py: error: {error}" in done.stderr
        assert "torch was imported" not in done.stderr and "Traceback" not in done.stderr
    # a correct command line gets past the parsing, to the import that fails here
    done = subprocess.run([sys.executable, str(ROOT / "train.py"), "--size", "tiny"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "torch was imported" in done.stderr


def test_held_out_auc_ranks_all_held_out_tokens_together(corpus, tmp_path):
    """evaluate_heldout's disc_auc is one ranking over every held-out token, not a mean of
    per-batch AUCs."""
    result = train.main(args(corpus, tmp_path / "run", "--steps", "6", "--eval-interval", "6",
                             "--eval-batches", "3"))
    cfg, model, tok = result["config"], result["model"], result["tokenizer"]
    ids, line_offsets = data.encode_corpus(Path(corpus[0]), tok, corpus[2], progress=False)
    _, eval_ex = data.build_examples(line_offsets, cfg.seq_len, cfg.seed, cfg.eval_fraction)
    special = (tok.cls_id, tok.sep_id, tok.pad_id)
    # micro-batches of 8
    layout = data.Batches(ids, eval_ex, 8, 8, 0, 1, cfg.seq_len, special, cfg.seed)
    got = report.evaluate_heldout(model, eval_ex, layout, cfg, contextlib.nullcontext())
    # the same held-out batches and corruptions, redone by hand
    model.eval()
    torch.manual_seed(cfg.seed)
    p, orig, real, per_batch = [], [], [], []
    for i in range(3):
        x, s, m = (torch.from_numpy(a)
                   for a in data.pretraining_batch(ids, eval_ex[i * 8:(i + 1) * 8], cfg.seq_len,
                                                   *special))
        with torch.no_grad():
            out = model(x, s, m)
        p.append(out.p_original)
        orig.append(out.x_corrupt == x)
        real.append(m)
        per_batch.append(disc_auc(out.p_original, out.x_corrupt == x, m).item())
    pooled = disc_auc(torch.cat(p), torch.cat(orig), torch.cat(real)).item()
    assert got["disc_auc"] == pytest.approx(pooled, abs=1e-6)
    # the mean of batches differs
    assert got["disc_auc"] != pytest.approx(sum(per_batch) / 3, abs=1e-6)


@pytest.mark.parametrize("temperature", [2.0, 1.0])
def test_held_out_rows_carry_the_context_auc_and_the_sentence_is_printed(corpus, tmp_path, capsys,
                                                                          temperature):
    """Every evaluation row of metrics.jsonl has context_auc (D against G's samples at temperature
    1): a second measure at the tiny preset's temperature 2, disc_auc itself at 1. Each evaluation
    prints the same held-out sentence, plain text (capsys is no terminal)."""
    out = tmp_path / "run"
    train.main(args(corpus, out, "--steps", "4", "--log-interval", "1", "--eval-interval", "2",
                    "--set", f"temperature={temperature}"))
    printed = capsys.readouterr().out
    held = rows(out, "eval")
    assert [r["step"] for r in held] == [2, 4] and all("context_auc" in r for r in held)
    assert not any("context_auc" in r for r in rows(out))  # training rows: held-out only
    if temperature == 1.0:
        assert all(r["context_auc"] == r["disc_auc"] for r in held)
    else:
        assert all(r["context_auc"] != r["disc_auc"] for r in held)
    assert printed.count("ctx_AUC") == 2
    sentences = [line for line in printed.splitlines() if line.startswith("held-out sentence")]
    assert (len(sentences) == 2 and "*: D calls it replaced" in sentences[0]
            and "\x1b" not in printed)
    lines = printed.splitlines()
    shown = [lines[i + 1] for i, line in enumerate(lines) if line.startswith("held-out sentence")]
    assert shown[0].startswith("  [CLS] ") and "->" in shown[0]  # G replaced something


def test_presets_table_counts_the_predictions_a_run_of_each_recipe_makes(capsys):
    """--presets: k's cap follows each recipe's sequence length and mask rate, as a run's
    model_config sets it (int((mask_prob + 0.005) * seq_len), the official rule), not the
    ElectraConfig default of 19: tiny 0.255 x 128 = 32.6, Base 0.155 x 512 = 79.4, Large
    0.255 x 512 = 130.6."""
    caps = {size: mc.max_predictions for size, mc in train.preset_configs().items()}
    assert caps == {"tiny": 32, "small": 19, "base": 79, "large": 130}
    table = train.main(["--presets"])["presets"]
    tiny = train.preset_configs()["tiny"]
    assert f"{report.flops_per_step(tiny, 32, 128):16.3e}" in table  # the tiny row: 32 predictions
    # fewer predictions, fewer FLOPs: the count follows max_predictions
    fewer = dataclasses.replace(tiny, max_predictions=19)
    assert report.flops_per_step(tiny, 32, 128) > report.flops_per_step(fewer, 32, 128)


def test_gpu_sized_run_on_a_cpu_projects_its_time_and_names_the_cpu_preset(corpus, tmp_path,
                                                                           capsys):
    small = [a if a != "tiny" else "small"
             for a in args(corpus, tmp_path / "small", "--steps", "6")]
    train.main(small)
    printed = capsys.readouterr().out
    assert "no GPU: --size small's remaining 2 updates take about" in printed
    assert f"python train.py --size {report.CPU_PRESET} --data" in printed
    train.main(args(corpus, tmp_path / "tiny", "--steps", "6"))
    assert "no GPU" not in capsys.readouterr().out  # the CPU preset itself says nothing


def test_duration_picks_a_readable_unit():
    assert report.duration(90) == "90 seconds"
    assert report.duration(600) == "10 minutes"
    assert report.duration(1e7) == "116 days"  # 1e7 / 86,400 = 115.7
    assert report.duration(3 * 365 * 86400) == "3 years"


def test_resume_equals_an_uninterrupted_run(corpus, tmp_path):
    common = ["--steps", "10", "--log-interval", "1", "--eval-interval", "1000"]
    train.main(args(corpus, tmp_path / "a", *common))
    train.main(args(corpus, tmp_path / "b", *common, "--stop-at", "4"))
    assert [r["step"] for r in rows(tmp_path / "b")] == [1, 2, 3, 4]
    result = train.main(["--out", str(tmp_path / "b"), "--resume", "--cache-dir", str(corpus[2]),
                         "--log-interval", "1", "--eval-interval", "1000"])
    assert result["step"] == 10
    a, b = rows(tmp_path / "a"), rows(tmp_path / "b")
    assert [r["step"] for r in b] == list(range(1, 11))
    # the minutes carry over the resume: the curves are drawn against them
    assert all(r1["elapsed_s"] < r2["elapsed_s"] for r1, r2 in zip(b, b[1:]))
    for ra, rb in zip(a, b):  # dropout, masks, samples and data order all continue exactly
        for key in ("loss", "mlm_loss", "disc_loss", "gen_acc", "disc_acc", "lr", "grad_norm"):
            assert ra[key] == rb[key], (ra["step"], key)
    sa, sb = (torch.load(p / "ckpt.pt", weights_only=True)["model"]
              for p in (tmp_path / "a", tmp_path / "b"))
    assert all(torch.equal(sa[k], sb[k]) for k in sa)


def test_gpu_code_path_on_cpu_compile_bf16_and_exact_resume(corpus, tmp_path, capsys):
    """The GPU's settings (torch.compile, bf16 autocast, fused AdamW) run through train.py on a CPU:
    the run learns, and a compiled run stopped and resumed still equals an uninterrupted one."""
    common = ["--steps", "8", "--log-interval", "1", "--eval-interval", "4", "--compile",
              "--precision", "bf16"]
    torch._dynamo.reset()
    counters.clear()
    train.main(args(corpus, tmp_path / "a", *common))
    # two graphs, the training forward and its metrics (report.step_stats): the evaluations (eval
    # mode, other shapes) run eagerly, as compiling them would cost more than it saves
    assert counters["stats"]["unique_graphs"] == 2
    assert "device   cpu, bf16 (bf16 autocast; weights, optimizer and losses fp32), torch.compile" \
        in capsys.readouterr().out
    train.main(args(corpus, tmp_path / "b", *common, "--stop-at", "4"))
    train.main(["--out", str(tmp_path / "b"), "--resume", "--cache-dir", str(corpus[2]),
                "--log-interval", "1", "--eval-interval", "4", "--compile", "--precision", "bf16"])
    a, b = rows(tmp_path / "a"), rows(tmp_path / "b")
    assert [r["step"] for r in a] == [r["step"] for r in b] == list(range(1, 9))
    for ra, rb in zip(a, b):
        for key in ("loss", "mlm_loss", "disc_loss", "grad_norm"):
            assert ra[key] == rb[key], (ra["step"], key)
    # L_MLM starts at ln(60) = 4.09 and falls (measured 4.10 -> 3.83 in 8 steps at lr 3e-3)
    assert a[0]["mlm_loss"] > 3.9 and a[-1]["mlm_loss"] < a[0]["mlm_loss"] - 0.1
    assert [r["step"] for r in rows(tmp_path / "a", "eval")] == [4, 8]


@pytest.mark.parametrize("name, tflops", [("NVIDIA H100 80GB HBM3", 989), ("NVIDIA H100 PCIe", 756),
                                           ("NVIDIA A100-SXM4-80GB", 312), ("NVIDIA A10", 125),
                                           ("NVIDIA L40S", 362), ("NVIDIA L4", 121),
                                           ("Tesla V100-SXM2-16GB", 125),
                                           ("Some Future GPU", None)])
def test_peak_flops_looked_up_from_the_gpu_name(monkeypatch, name, tflops):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)
    assert report.peak_flops(torch.device("cuda", 0), None) == (tflops * 1e12 if tflops else None)
    assert report.peak_flops(torch.device("cuda", 0), 500) == 500e12  # --peak-tflops wins
    assert report.peak_flops(torch.device("cpu"), None) is None


def test_mfu_is_model_flops_over_peak(corpus, tmp_path, capsys):
    """MFU = flops_per_step x steps/s / peak. On a CPU only with --peak-tflops (a GPU looks it
    up)."""
    result = train.main(args(corpus, tmp_path / "run", "--steps", "4", "--log-interval", "2",
                             "--peak-tflops", "0.5"))
    assert "peak 0.5 TFLOP/s per GPU for MFU" in capsys.readouterr().out
    flops = report.flops_per_step(result["model_config"], 8, 32)
    for row in rows(tmp_path / "run"):
        assert row["mfu"] == pytest.approx(flops * row["steps_per_s"] / 0.5e12)


def test_ctrl_c_saves_a_loadable_checkpoint(corpus, tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, str(ROOT / "train.py"),
                             *args(corpus, out, "--steps", "100000", "--log-interval", "1")],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    metrics = out / "metrics.jsonl"
    # 180 s: on a loaded 2-core machine importing torch._dynamo alone took over a minute, and a
    # Ctrl-C sent before the loop has started tests nothing
    deadline = time.time() + 180
    started = False
    while time.time() < deadline and proc.poll() is None:
        if metrics.is_file() and len(metrics.read_text().splitlines()) >= 3:
            started = True
            break
        time.sleep(0.1)
    if not started:
        proc.kill()
        pytest.fail(f"train.py logged no 3 updates in 180 s: {proc.communicate()[0][-2000:]}")
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, output
    assert "stopped at step" in output and "--resume" in output
    ckpt = torch.load(out / "ckpt.pt", weights_only=True)
    assert 3 <= ckpt["step"] < 100000
    model = Electra(train.ElectraConfig(**ckpt["model_config"]))
    model.load_state_dict(ckpt["model"])
    assert not list(out.glob("*.tmp*"))


DDP_SCRIPT = """
import functools, os, signal, sys, torch, train
torch.set_num_threads(1)
if os.environ.get("COMPILE_BACKEND"):  # a test's backend for train.py's torch.compile
    torch.compile = functools.partial(torch.compile, backend=os.environ["COMPILE_BACKEND"])
term_at = os.environ.get("SIGTERM_RANK1_AT")
# only rank 1 is told to stop, during update term_at (0-based)
if term_at and os.environ["RANK"] == "1":
    lr = train.learning_rate
    def learning_rate(step, cfg):
        if step == int(term_at):
            signal.raise_signal(signal.SIGTERM)
        return lr(step, cfg)
    train.learning_rate = learning_rate
result = train.main(sys.argv[1:])  # each rank saves the weights it ended with
torch.save(result["model"].state_dict(),
           os.path.join(result["config"].out_dir, f"rank{os.environ['RANK']}.pt"))
print(f"rank {os.environ['RANK']} ended at step {result['step']}, "
      f"interrupted {result['interrupted']}")
"""


def run_ddp(corpus, tmp_path, *extra, env=()):
    script = tmp_path / "ddp_run.py"
    script.write_text(DDP_SCRIPT)
    out = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), **dict(env)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(script),
           *args(corpus, out, "--log-interval", "2", "--grad-accum", "2", "--device", "cpu",
                 *extra)]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    w0, w1 = (torch.load(out / f"rank{r}.pt", weights_only=True) for r in (0, 1))
    assert all(torch.equal(w0[k], w1[k]) for k in w0)
    return out, done.stdout, w0


@pytest.mark.parametrize("compile", [False, True], ids=["eager", "compiled"])
def test_ddp_two_gloo_processes_end_with_identical_weights(corpus, tmp_path, compile):
    out, printed, w0 = run_ddp(corpus, tmp_path, "--steps", "4",
                               *(["--compile"] if compile else []))
    assert "x 2 processes" in printed and "= 2 x 2 accumulation x 2 process(es)" in printed
    init = Electra(train.ElectraConfig(
        **torch.load(out / "ckpt.pt", weights_only=True)["model_config"])).state_dict()
    assert not all(torch.equal(w0[k], init[k]) for k in w0)  # and they did train


def test_ddp_ranks_agree_on_the_step_they_stop_at(corpus, tmp_path):
    """Only rank 1 gets SIGTERM, during update 3; the ranks compare notes at the log steps (every
    2), so both save and stop at step 4 with identical weights instead of one rank waiting
    forever."""
    out, printed, _ = run_ddp(corpus, tmp_path, "--steps", "10", env={"SIGTERM_RANK1_AT": "2"})
    assert "rank 0 ended at step 4, interrupted True" in printed
    assert "rank 1 ended at step 4, interrupted True" in printed
    assert torch.load(out / "ckpt.pt", weights_only=True)["step"] == 4


def test_export_hf_matches_huggingface(corpus, tmp_path):
    out = tmp_path / "run"
    train.main(args(corpus, out, "--steps", "3", "--log-interval", "1"))
    result = train.main(["--out", str(out), "--export-hf", str(tmp_path / "hf")])
    model = result["model"].eval()
    disc = transformers.ElectraForPreTraining.from_pretrained(
        tmp_path / "hf" / "discriminator").eval()
    gen = transformers.ElectraForMaskedLM.from_pretrained(tmp_path / "hf" / "generator").eval()
    x = torch.tensor([[2, 10, 11, 12, 3, 13, 14, 3]])
    seg = torch.tensor([[0, 0, 0, 0, 0, 1, 1, 1]])
    mask = torch.ones_like(x)
    with torch.no_grad():
        ours = model.discriminator(x, seg, mask)  # logit of "original"
        # logit of "replaced"
        theirs = disc(input_ids=x, token_type_ids=seg, attention_mask=mask).logits
        torch.testing.assert_close(theirs, -ours, atol=1e-5, rtol=1e-5)
        h = model.generator.hidden_states(x, seg, mask)
        ours_g = model.generator.logits(h, torch.arange(8)[None])  # [1, 8, V] at every position
        theirs_g = gen(input_ids=x, token_type_ids=seg, attention_mask=mask).logits
        torch.testing.assert_close(theirs_g, ours_g, atol=1e-4, rtol=1e-4)
    for d in ("discriminator", "generator"):
        assert (tmp_path / "hf" / d / "vocab.txt").read_text() == (out / "vocab.txt").read_text()
        # safetensors is installed here
        assert (tmp_path / "hf" / d / "model.safetensors").is_file()


def test_bert_objective_trains_the_mlm_baseline(corpus, tmp_path):
    result = train.main(args(corpus, tmp_path / "bert", "--objective", "bert", "--steps", "6",
                             "--log-interval", "3"))
    assert result["model"].discriminator is None and result["model"].mlm is not None
    r = rows(tmp_path / "bert")[-1]
    assert r["disc_loss"] == 0 and r["loss"] == r["mlm_loss"] > 0


def test_known_corpus_downloads_from_the_mirror(http_server, tmp_path, monkeypatch):
    root, url = http_server
    raw = " \n = Alpha = \n\n the cat sees the river . the dog likes a book .\n\n" \
          " = = Life = = \n a child paints .\n" \
          " = Beta = \n\n the king hears an apple .\n"
    with zipfile.ZipFile(root / "wikitext-2-raw-v1.zip", "w") as z:
        z.writestr("wikitext-2-raw/wiki.train.raw", raw)
    size = (root / "wikitext-2-raw-v1.zip").stat().st_size
    monkeypatch.setitem(data.KNOWN_CORPORA, "wikitext-2",
                        ("wikitext-2-raw-v1.zip", size, "wikitext-2-raw", "wiki.train.raw"))
    folder = data.resolve_corpus("wikitext-2", tmp_path / "cache", url)
    assert (folder / "train.txt").read_text() == ("the cat sees the river .\n"
                                                  "the dog likes a book .\n"
                                                  "a child paints .\n\n"
                                                  "the king hears an apple .\n")
    # cached
    assert data.resolve_corpus("wikitext-2", tmp_path / "cache", "http://127.0.0.1:9") == folder
    # Offline (nothing listens on port 9): one message saying how to pass a local path instead.
    with pytest.raises(SystemExit, match=r"(?s)could not download wikitext-2.*--data PATH"):
        train.main(["--data", "wikitext-2", "--data-url", "http://127.0.0.1:9",
                    "--cache-dir", str(tmp_path / "c2"), "--out", str(tmp_path / "run"), *TINY])
    assert not (tmp_path / "c2" / "wikitext-2-raw-v1.zip").exists()


# --- errors users cause: one clear message each, nothing lost

def test_missing_and_empty_corpus(corpus, tmp_path):
    with pytest.raises(SystemExit, match="no such file or folder.*known corpora"):
        train.main(args(corpus, tmp_path / "r1", "--data", str(tmp_path / "nope.txt")))
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "e.txt").write_text("\n \n")
    with pytest.raises(SystemExit, match="has no text"):
        train.main(args(corpus, tmp_path / "r2", "--data", str(tmp_path / "empty")))


def test_unknown_size(corpus, tmp_path, capsys):
    with pytest.raises(SystemExit):
        train.main(args(corpus, tmp_path / "r", "--size", "huge"))
    assert "invalid choice: 'huge'" in capsys.readouterr().err


def test_resume_errors_and_existing_run(corpus, tmp_path):
    out = tmp_path / "run"
    train.main(args(corpus, out, "--steps", "4", "--stop-at", "2", "--log-interval", "1"))
    before = (out / "ckpt.pt").read_bytes()
    with pytest.raises(SystemExit, match=r"holds a run \(.*ckpt.pt\): continue it with --resume"):
        train.main(args(corpus, out, "--steps", "4"))
    with pytest.raises(SystemExit, match=r"different settings: --size small \(checkpoint: tiny\)"):
        train.main(["--out", str(out), "--resume", "--size", "small"])
    other = Tokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"])
    other.save(tmp_path / "other_vocab.txt")
    with pytest.raises(SystemExit, match="does not match the checkpoint"):
        train.main(["--out", str(out), "--resume", "--cache-dir", str(corpus[2]),
                    "--vocab", str(tmp_path / "other_vocab.txt")])
    with pytest.raises(SystemExit, match="no checkpoint at"):
        train.main(["--out", str(tmp_path / "none"), "--resume"])
    assert (out / "ckpt.pt").read_bytes() == before  # nothing lost


def test_out_of_memory_suggests_grad_accum(corpus, tmp_path, monkeypatch):
    def oom(self, *a, **k):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    monkeypatch.setattr(Electra, "forward", oom)
    with pytest.raises(SystemExit, match=r"out of GPU memory.*--grad-accum 2 \(same batch 8"):
        train.main(args(corpus, tmp_path / "run", "--steps", "3"))


def test_unwritable_output_folder(corpus, tmp_path):
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(SystemExit, match="cannot write there.*--out DIR"):
        train.main(args(corpus, tmp_path / "a_file" / "run", "--steps", "3"))


# --- one clear line for every user error

def test_checkpoint_before_the_first_log_line(corpus, tmp_path):
    """--ckpt-interval 2 with the default --log-interval 100: the checkpoint at step 2 comes before
    any metrics line (plot_pretraining_curves once read a metrics.jsonl that did not exist yet)."""
    out = tmp_path / "run"
    result = train.main(args(corpus, out, "--steps", "4", "--ckpt-interval", "2",
                             "--eval-interval", "1000"))
    assert result["step"] == 4 and torch.load(out / "ckpt.pt", weights_only=True)["step"] == 4
    assert [r["step"] for r in rows(out)] == [4]


def test_a_diverged_run_stops_with_one_line(corpus, tmp_path):
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as e:
        train.main(args(corpus, out, "--lr", "1e6", "--warmup", "1", "--steps", "20",
                        "--log-interval", "1", "--ckpt-interval", "1"))
    message = str(e.value.code)  # a message, so the exit status is 1
    assert re.fullmatch(r"the loss is not finite at step \d+ \(lr 1e\+06\): "
                        r"the run diverged and was stopped; "
                        r".*Start a new run with a lower --lr \(e.g. 100000\) "
                        r"or a longer --warmup", message)
    # no NaN row written (NaN is not JSON either)
    assert all(math.isfinite(r["loss"]) for r in rows(out))
    if (out / "ckpt.pt").exists():  # every checkpoint written holds finite weights
        assert all(torch.isfinite(t).all()
                   for t in torch.load(out / "ckpt.pt", weights_only=True)["model"].values())


def test_divergence_keeps_the_last_good_checkpoint(corpus, tmp_path, monkeypatch):
    forward, calls = Electra.forward, []

    def nan_from_update_5(self, *a, **k):
        out = forward(self, *a, **k)
        calls.append(1)
        if len(calls) >= 5:
            out.loss = out.loss * float("nan")
        return out
    monkeypatch.setattr(Electra, "forward", nan_from_update_5)
    out = tmp_path / "run"
    with pytest.raises(SystemExit, match=r"not finite at step 5 .*the last good checkpoint, "
                                         r".*ckpt.pt at step 4, is untouched"):
        train.main(args(corpus, out, "--steps", "10", "--ckpt-interval", "2", "--log-interval", "3",
                        "--eval-interval", "1000"))
    saved = torch.load(out / "ckpt.pt", weights_only=True)
    assert saved["step"] == 4 and all(torch.isfinite(t).all() for t in saved["model"].values())
    assert [r["step"] for r in rows(out)] == [3]


def test_one_run_per_out_folder(corpus, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    # another run holds the lock (flock is per open file)
    with open(out / "train.lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("pid 4242\n")
        held.flush()
        with pytest.raises(SystemExit, match=r"--out .*run is in use by another train.py run "
                                             r"\(pid 4242\): wait "
                                             r"for it to finish, or choose another --out"):
            train.main(args(corpus, out, "--steps", "2"))
    assert not (out / "metrics.jsonl").exists() and not (out / "ckpt.pt").exists()
    train.main(args(corpus, out, "--steps", "2"))  # released: the folder is free again
    # and after a run
    train.main(["--out", str(out), "--resume", "--cache-dir", str(corpus[2]), "--steps", "2"])


def test_unreadable_checkpoint_falls_back_to_the_previous_one(corpus, tmp_path, capsys):
    out = tmp_path / "run"
    train.main(args(corpus, out, "--steps", "6", "--ckpt-interval", "2", "--stop-at", "4",
                    "--log-interval", "1"))
    assert torch.load(out / "ckpt.prev.pt", weights_only=True)["step"] == 2
    data = (out / "ckpt.pt").read_bytes()
    (out / "ckpt.pt").write_bytes(data[:len(data) // 2])  # an interrupted copy
    with pytest.raises(SystemExit, match=r"holds a run \(.*ckpt.pt, .*ckpt.prev.pt\): "
                                         r"continue it with --resume "
                                         r"\(which falls back to ckpt.prev.pt "
                                         r"if ckpt.pt is unreadable\)"):
        train.main(args(corpus, out, "--steps", "6"))
    exported = train.main(["--out", str(out), "--export-hf", str(tmp_path / "hf")])
    assert exported["step"] == 2 and (out / "ckpt.pt").exists()  # export only reads
    capsys.readouterr()
    result = train.main(["--out", str(out), "--resume", "--cache-dir", str(corpus[2]),
                         "--log-interval", "1"])
    printed = capsys.readouterr().out
    assert re.search(r"--resume: .*ckpt.pt is unreadable: .*; "
                     r"falling back to the previous checkpoint "
                     r".*ckpt.prev.pt \(step 2\) \(ckpt.pt moved to ckpt.pt.unreadable\)", printed)
    assert result["step"] == 6 and [r["step"] for r in rows(out)] == list(range(1, 7))
    assert (out / "ckpt.pt.unreadable").read_bytes() == data[:len(data) // 2]  # nothing deleted
    for name in ("ckpt.pt", "ckpt.prev.pt"):
        (out / name).write_bytes(b"not a checkpoint")
    with pytest.raises(SystemExit, match=r"no readable checkpoint: .*ckpt.pt is unreadable: .*; "
                                         r"the previous one .*ckpt.prev.pt is unreadable"):
        train.main(["--out", str(out), "--resume"])


def test_a_5_mb_line_is_split_into_whole_examples(corpus, tmp_path):
    """A 5 MB file with no newline: every token reaches an example (it was 1 example of 126
    tokens)."""
    rng = random.Random(0)
    sentences = [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} ."
                 for _ in range(220_000)]
    text = " ".join(sentences)[:5_000_000]  # the last sentence is cut: a piece may end without "."
    (tmp_path / "one_line.txt").write_text(text)
    tok = Tokenizer.load(corpus[1])
    ids, offsets = data.encode_corpus(tmp_path / "one_line.txt", tok, tmp_path / "cache",
                                      progress=False)
    assert len(np.diff(offsets)[np.diff(offsets) > 0]) == 1  # one line of text
    seq = 128
    pieces_offsets, n_split = data.split_long_lines(ids, offsets, seq - 2, [tok.vocab["."]])
    assert n_split == 1
    pieces = np.diff(pieces_offsets)[np.diff(pieces_offsets) > 0]
    assert pieces.sum() == len(ids) and pieces.max() <= seq - 2
    ends = pieces_offsets[1:][np.diff(pieces_offsets) > 0]
    assert (ids[ends[:-1] - 1] == tok.vocab["."]).all()  # each piece but the last ends a sentence
    # a piece is cut only where the next sentence would not fit: shorter than 126 by less than a
    # sentence
    longest_sentence = np.diff(np.flatnonzero(ids == tok.vocab["."])).max()
    assert pieces[:-1].min() > seq - 2 - longest_sentence
    train_ex, held = data.build_examples(pieces_offsets, seq, seed=0, eval_fraction=0.01)
    examples = np.concatenate([train_ex, held])
    assert len(examples) == len(pieces)  # one example per piece, none trimmed
    assert examples[:, 1].sum() + examples[:, 3].sum() == len(ids)
    unsplit = sum(len(e) for e in data.build_examples(offsets, seq, seed=0, eval_fraction=0.01))
    assert unsplit == 1  # what it was before


def test_long_lines_are_reported(corpus, tmp_path, capsys):
    folder = tmp_path / "data"
    write_corpus(folder, paragraphs=40)
    # 360 tokens, one line
    (folder / "c.txt").write_text(" ".join(["the cat sees the river ."] * 60) + "\n")
    train.main(args((folder, corpus[1], corpus[2]), tmp_path / "run", "--steps", "2"))
    assert "split 1 line(s) longer than 30 tokens (--seq-len 32 less [CLS] and [SEP]) into pieces" \
        in capsys.readouterr().out


@pytest.mark.parametrize("flag, value, message", [
    ("--steps", "0", "--steps 0: must be an integer >= 1 (updates)"),
    ("--steps", "-5", "--steps -5: must be an integer >= 1 (updates)"),
    ("--batch-size", "0", "--batch-size 0: must be an integer >= 1"),
    ("--grad-accum", "0", "--grad-accum 0: must be an integer >= 1"),
    ("--log-interval", "0", "--log-interval 0: must be an integer >= 1"),
    ("--eval-interval", "0", "--eval-interval 0: must be an integer >= 1"),
    ("--ckpt-interval", "-1", "--ckpt-interval -1: must be an integer >= 1"),
    ("--eval-batches", "0", "--eval-batches 0: must be an integer >= 1"),
    ("--lr", "nan", "--lr nan: must be a positive number"),
    ("--lr", "-1", "--lr -1.0: must be a positive number"),
    ("--lr", "inf", "--lr inf: must be a positive number"),
    ("--warmup", "-1", "--warmup -1: must be an integer >= 0"),
    ("--weight-decay", "-0.1", "--weight-decay -0.1: must be a number >= 0"),
    ("--clip-norm", "0", "--clip-norm 0.0: must be a positive number"),
    ("--eval-fraction", "1", "--eval-fraction 1.0: must be a share in [0, 1)"),
    ("--eval_fraction", "nan", "--eval-fraction nan: must be a share in [0, 1)"),
    ("--objective", "electra_20", "--objective electra_20: must be one of electra, bert, "),
    ("--seq-len", "4", "--seq-len 4: must be an integer >= 5"),
    ("--vocab-size", "3", "--vocab-size 3: must be an integer >= 6"),
    ("--stop-at", "0", "--stop-at 0: must be an integer >= 1"),
    ("--seed", "-1", "--seed -1: must be an integer >= 0"),
    ("--peak-tflops", "-2", "--peak-tflops -2.0: must be a positive number"),
])
def test_every_numeric_flag_is_range_checked(corpus, tmp_path, flag, value, message):
    with pytest.raises(SystemExit) as e:
        train.main(args(corpus, tmp_path / "run", flag, value))
    assert str(e.value.code).startswith(message) and "\n" not in str(e.value.code)
    assert not (tmp_path / "run").exists()  # refused before anything was written


@pytest.mark.parametrize("override, message", [
    ("num_heads=3", "hidden_size 32 is not divisible by num_heads 3"),
    ("num_layers=0", "num_layers = 0: must be at least 1"),
    ("dropout=1.5", "dropout = 1.5: must be a probability in [0, 1]"),
    ("generator_fraction=0", "generator_fraction = 0.0: must be in (0, 1]"),
])
def test_set_values_are_checked_against_the_model(corpus, tmp_path, override, message):
    with pytest.raises(SystemExit, match=re.escape(message)):
        train.main(args(corpus, tmp_path / "run", "--set", override))


def test_a_binary_file_is_refused_by_name(corpus, tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "ls.txt").write_bytes(Path("/bin/ls").read_bytes()
                                               if Path("/bin/ls").is_file()
                                               else b"\x7fELF\x02\x01\x01\x00" * 100)
    with pytest.raises(SystemExit, match=r"ls.txt is not a text file \(it has NUL bytes\)"):
        train.main(args(corpus, tmp_path / "run", "--data", str(tmp_path / "data"), "--steps", "2"))


@pytest.mark.parametrize("error", ["enospc", "torch_write_failed"])
def test_disk_full_while_checkpointing(corpus, tmp_path, monkeypatch, error):
    out = tmp_path / "run"
    save = torch.save

    def full_disk(obj, f, *a, **k):
        if (torch.load(out / "ckpt.pt", weights_only=True)["step"] if (out / "ckpt.pt").exists()
                else False):
            Path(f).write_bytes(b"half a checkpoint")
            if error == "enospc":
                raise OSError(errno.ENOSPC, "No space left on device")
            raise RuntimeError("[enforce fail at inline_container.cc:626] . "
                               "unexpected pos 256 vs 128")
        return save(obj, f, *a, **k)
    monkeypatch.setattr(plumbing.torch, "save", full_disk)
    if error == "torch_write_failed":  # torch's own writer reports no errno: the free space tells
        monkeypatch.setattr(shutil, "disk_usage",
                            lambda p: shutil._ntuple_diskusage(10 ** 9, 10 ** 9, 4096))
    with pytest.raises(SystemExit, match=r"^disk full: could not write .*ckpt.pt .*; "
                                         r"4,096 bytes free on its disk. "
                                         r"ckpt.pt.tmp was removed"
                                         if error != "enospc" else r"^disk full: "):
        train.main(args(corpus, out, "--steps", "6", "--ckpt-interval", "2",
                        "--log-interval", "1"))
    assert not list(out.glob("*.tmp"))
    assert torch.load(out / "ckpt.pt", weights_only=True)["step"] == 2  # the last good checkpoint


def test_a_partial_last_metrics_line_is_tolerated_on_resume(corpus, tmp_path):
    out = tmp_path / "run"
    train.main(args(corpus, out, "--steps", "4", "--stop-at", "2", "--log-interval", "1"))
    with open(out / "metrics.jsonl", "a") as f:
        f.write('{"step": 3, "split": "tr')  # killed mid-write
    result = train.main(["--out", str(out), "--resume", "--cache-dir", str(corpus[2]),
                         "--log-interval", "1"])
    assert result["step"] == 4 and [r["step"] for r in rows(out)] == [1, 2, 3, 4]
    lines = (out / "metrics.jsonl").read_text().splitlines()
    lines[1] = lines[1][:10]  # a broken line in the middle is not silently dropped
    (out / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(SystemExit, match=r"metrics.jsonl, line 2: not a JSON metrics row"):
        report.read_metrics(out / "metrics.jsonl")


def test_ctrl_c_while_training_the_vocabulary(corpus, tmp_path, monkeypatch):
    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(data, "train_vocab", interrupted)
    out = tmp_path / "run"
    folder, _, cache = corpus
    with pytest.raises(SystemExit,
                       match="interrupted while preparing the data .* nothing partial was written"):
        train.main(["--data", str(folder), "--cache-dir", str(cache), "--out", str(out), *TINY])
    assert not (out / "vocab.txt").exists() and not (out / "ckpt.pt").exists()


def calls_out_of_train_py(argv: list[str], monkeypatch) -> list[str]:
    """The functions of the project's other files that train.py calls from `train.train` up to the
    first optimizer step, in the order first met ("file.py:qualname"). A function counts when the
    nearest project frame below it is train.py's, so the model's forward counts (torch's
    Module.__call__ sits between) and what the model calls inside itself does not."""
    module_files = {str(p) for p in [*ROOT.glob("*.py"), *ROOT.glob("support/*.py")]}
    train_py = str(ROOT / "train.py")
    met = []

    def nearest_project_caller(frame) -> str | None:
        caller = frame.f_back
        while caller is not None and caller.f_code.co_filename not in module_files:
            caller = caller.f_back
        return caller and caller.f_code.co_filename

    def profile(frame, event, arg):
        code = frame.f_code
        if event != "call" or code.co_filename not in module_files - {train_py}:
            return
        name = f"{Path(code.co_filename).relative_to(ROOT)}:{code.co_qualname}"
        if nearest_project_caller(frame) == train_py and name not in met:
            met.append(name)

    def traced_train(*args, **kwargs):
        sys.setprofile(profile)
        return real_train(*args, **kwargs)

    def first_update(*args, **kwargs):
        sys.setprofile(None)
        return real_step(*args, **kwargs)

    real_train = train.train
    real_step = torch.optim.AdamW.step
    monkeypatch.setattr(train, "train", traced_train)
    monkeypatch.setattr(torch.optim.AdamW, "step", first_update)
    try:
        train.main(argv)
    finally:
        sys.setprofile(None)
    return met


def test_the_calls_out_of_train_py_before_the_first_update(corpus, tmp_path, monkeypatch):
    """What train.py hands to other files on the way to its first update, each on purpose: the data
    and the model (pretraining_data, Batches.get, to_device, pretraining_model: Electra or
    Electric, its forward), the schedule
    and the weight-decay rule that fine-tuning shares (lr_factor, decays), what a run prints and
    logs (startup_report, MetricsLog, step_stats), the loop's guards (LoopGuards: Ctrl-C, out of
    memory, a loss that is not finite; FirstCompile: the first compile's wait and failure), how
    each update runs (step_path), and the preset, the vocabulary's size and the precision.
    The loop's own steps (the clip, the optimizer step, the schedule, DDP's no_sync, autocast)
    stay in train.py. A new call fails here, so a call added to the loop's path is added on
    purpose."""
    met = calls_out_of_train_py(args(corpus, tmp_path / "run", "--steps", "2"), monkeypatch)
    assert met == [
        "support/train_cli.py:step_path",
        "data.py:pretraining_data",
        "electra.py:get_config",
        "tokenizer.py:Tokenizer.__len__",
        "electric.py:pretraining_model",
        "electra.py:decays",
        "support/plumbing.py:mixed_precision",
        "support/report.py:startup_report",
        "support/report.py:MetricsLog.__init__",
        "support/plumbing.py:LoopGuards.__init__",
        "support/plumbing.py:LoopGuards.__enter__",
        "support/plumbing.py:FirstCompile.__init__",
        "electra.py:lr_factor",
        "support/plumbing.py:LoopGuards.update",
        "support/plumbing.py:FirstCompile.update",
        "data.py:Batches.get",
        "support/plumbing.py:to_device",
        "electra.py:Electra.forward",
        "support/report.py:step_stats",
    ]
