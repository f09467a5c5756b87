"""experiments/figure1.py: the commands it runs, in order and resumably, and the folder names the
step that writes them and the step that reads them back agree on. train.py and sst2_check.py are
replaced by fakes that parse the real command lines and write what the real scripts write."""
import dataclasses
import doctest
import json
import subprocess
import sys

import pytest
import torch

import train
from electra import get_config
from experiments import figure1, sst2_check


def tiny(objective):
    """The tiny preset's config as train.py builds it for the shown runs: the books' 8,192-token
    vocab, and as many predictions as its mask rate makes of 128 tokens."""
    config = get_config("tiny", objective=objective, vocab_size=8192)
    return dataclasses.replace(config, max_predictions=train.max_predictions(config.mask_prob, 128))


class Fakes:
    """subprocess.run for train.py (a ckpt.pt at --stop-at, vocab.txt, metrics.jsonl) and
    sst2_check.py (stsb_check.json: one row per --init, twin per run), recording each call."""

    def __init__(self):
        self.calls = []

    def __call__(self, command, *args, **kwargs):
        script = command[1].rsplit("/", 1)[-1]
        self.calls.append((script, command[2:]))
        if script == "train.py":
            self.train(command[2:])
        else:
            assert script == "sst2_check.py"
            self.stsb(command[2:])
        return subprocess.CompletedProcess(command, 0)

    def train(self, argv):
        a = train.parse_args(argv)  # the real parser: every flag figure1 passes exists
        out = __import__("pathlib").Path(a.out_dir)
        if a.resume:
            assert torch.load(out / "ckpt.pt", weights_only=True)["step"] < a.stop_at
        else:
            assert not (out / "ckpt.pt").exists()
        out.mkdir(parents=True, exist_ok=True)
        config = tiny(a.objective or "electra")
        torch.save({"step": a.stop_at, "model_config": dataclasses.asdict(config),
                    "train_config": {"batch_size": 32, "seq_len": 128, "seed": a.seed}},
                   out / "ckpt.pt")
        if a.vocab is None:
            (out / "vocab.txt").write_text("[PAD]\nthe\n")
        else:
            (out / "vocab.txt").write_text(open(a.vocab).read())
        (out / "metrics.jsonl").write_text(json.dumps({"step": a.stop_at}) + "\n")

    def stsb(self, argv):
        a, rest = sst2_check.parse_args(argv)  # the real parser: every --init has its ckpt.pt
        assert a.task == "stsb" and rest == []
        table = __import__("pathlib").Path(a.out) / "stsb_check.json"
        rows = json.loads(table.read_text())["rows"] if table.exists() else []
        for init in a.init:
            step = torch.load(f"{init}/ckpt.pt", weights_only=True)["step"]
            bert = "bert-" in init
            rows.append({"init": init,
                         "pretrained": {"scores": [float(step) + s + 100 * bert
                                                   for s in a.seeds]},
                         "random": {"scores": [1.0 + s + 100 * bert for s in a.seeds]}})
        table.parent.mkdir(parents=True, exist_ok=True)
        table.write_text(json.dumps({"seeds": a.seeds, "rows": rows}))


def test_doctests():
    assert doctest.testmod(figure1).failed == 0


def test_bert_runs_at_electras_flops_at_every_quarter():
    """The constant that sets BERT's updates agrees with flops_per_step of both configs."""
    from support.report import flops_per_step

    electra, bert = figure1.runs([0])
    assert (electra.steps, bert.steps, bert.warmup) == (10_800, 11_707, 108)
    per = {r.objective: flops_per_step(tiny(r.objective), 32, 128) for r in (electra, bert)}
    for e, b in zip(electra.stops(), bert.stops()):
        assert e * per["electra"] == pytest.approx(b * per["bert"], rel=1e-3)
    assert electra.steps * per["electra"] == pytest.approx(3.41e14, rel=1e-2)


def test_figure1_runs_each_stop_once_then_fine_tunes_and_draws(tmp_path, monkeypatch, capsys):
    fakes = Fakes()
    monkeypatch.setattr(subprocess, "run", fakes)
    out = tmp_path / "fig"
    argv = ["--seeds", "0", "1", "--finetune-seeds", "0", "1", "--out", str(out),
            "--data", str(tmp_path / "books.txt"), "--steps", "8"]
    (tmp_path / "books.txt").write_text("the cat .\n")
    table = figure1.main(argv)
    trains = [argv for script, argv in fakes.calls if script == "train.py"]
    # per seed: ELECTRA to 2, 4, 6, 8 (--resume after the first), then BERT to 2, 4, 7, 9
    stops = [(a[a.index("--out") + 1].rsplit("/", 1)[-1], int(a[a.index("--stop-at") + 1]),
              "--resume" in a, "--vocab" in a) for a in trains]
    assert stops == [(f"{name}-s{seed}", stop, q > 0, seed + (name == "bert") > 0)
                     for seed in (0, 1)
                     for name, ends in (("electra", (2, 4, 6, 8)), ("bert", (2, 4, 7, 9)))
                     for q, stop in enumerate(ends)]
    bert = trains[4]
    assert bert[bert.index("--objective") + 1] == "bert"
    assert bert[bert.index("--warmup") + 1] == "108"
    assert (out / "vocab.txt").read_text() == "[PAD]\nthe\n"  # the first run's, shared
    # each seed's eight snapshots fine-tuned once, after both of its runs
    checks = [a for script, a in fakes.calls if script == "sst2_check.py"]
    assert [script for script, _ in fakes.calls] == (["train.py"] * 8 + ["sst2_check.py"]) * 2
    inits = [checks[1][i + 1] for i, x in enumerate(checks[1]) if x == "--init"]
    assert inits == [str(out / n / f"step{s}") for n, ends in (("electra-s1", (2, 4, 6, 8)),
                                                                ("bert-s1", (2, 4, 7, 9)))
                     for s in ends]
    for snap in inits:
        assert {p.name for p in (tmp_path / snap).iterdir()} == {"ckpt.pt", "vocab.txt",
                                                                  "metrics.jsonl"}
    # the table reads back the rows the fine-tuning wrote under the same names: random weights
    # (1 + seed), then each quarter's update (+ seed), BERT's 100 above
    lines = table.splitlines()
    assert "4 jobs, pre-training seeds 0 1" in lines[0]
    assert lines[4].startswith("| 0 (random weights) | 1.50 [1.00-2.00] | 101.50 [101.00-102.00]")
    assert lines[5].split(" | ")[1:4] == ["2.50 [2.00-3.00]", "102.50 [102.00-103.00]",
                                          "-100.00"]
    assert lines[-1].endswith("| behind beyond the spread |")
    electra_flops = 8 * figure1.flops_per_update(out / "electra-s0" / "step8")
    assert lines[-1].startswith(f"| {electra_flops:.2e} |")
    assert (out / "figure1.png").stat().st_size > 0
    assert (out / "figure1.md").read_text() == table

    # again: everything is there, nothing runs; the table is drawn from the same rows
    fakes.calls.clear()
    assert figure1.main(argv) == table and fakes.calls == []


def test_an_interrupted_run_resumes_from_its_checkpoint(tmp_path, monkeypatch, capsys):
    fakes = Fakes()
    monkeypatch.setattr(subprocess, "run", fakes)
    out = tmp_path / "fig"
    argv = ["--seeds", "0", "--out", str(out), "--steps", "8", "--data", "books"]
    run = figure1.runs([0], 8)[0]
    fakes.train(figure1.train_command(run, out, "books", None, 5, False)[2:])  # Ctrl-C at 5
    figure1.copy_snapshot(out / "electra-s0", out / "electra-s0" / "step2")  # not the real 2,
    # but a snapshot there is trusted: 2 is not run again, 4 cannot be made from update 5
    with pytest.raises(SystemExit, match="at update 5, past 4"):
        figure1.main(argv)
    fakes.calls.clear()
    (out / "electra-s0" / "ckpt.pt").unlink()
    fakes.train(figure1.train_command(run, out, "books", None, 3, False)[2:])  # stopped at 3
    figure1.main([*argv, "--dry-run"])
    printed = capsys.readouterr().out
    assert fakes.calls == []  # a dry run runs nothing and copies nothing
    assert "--stop-at 4 --resume" in printed
    assert "-> " + str(out / "electra-s0" / "step4") in printed
    assert not (out / "electra-s0" / "step4").exists()


def test_dry_run_from_nothing_lists_every_command(tmp_path, capsys):
    out = tmp_path / "fig"
    assert figure1.main(["--seeds", "0", "--out", str(out), "--dry-run"]) is None
    assert not out.exists()  # nothing written
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("$ ")]
    assert len(printed) == 9
    assert printed[0] == (f"$ python train.py --size tiny --data books --steps 10800 "
                          f"--eval-interval 300 --seed 0 --out {out / 'electra-s0'} --stop-at 2700")
    assert printed[7].endswith(f"--stop-at 11707 --objective bert --warmup 108 --vocab "
                               f"{out / 'vocab.txt'} --resume")
    assert printed[8].startswith(f"$ python experiments/sst2_check.py --task stsb "
                                 f"--init {out / 'electra-s0' / 'step2700'}")
    assert printed[8].endswith(f"--init {out / 'bert-s0' / 'step11707'} --out {out / 'stsb'} "
                               f"--seeds 0 1 2")


def test_draw_only_without_the_jobs_says_what_is_missing(tmp_path):
    with pytest.raises(SystemExit, match="run this without --draw-only first"):
        figure1.main(["--out", str(tmp_path), "--draw-only"])


def test_fewer_steps_than_quarters_is_one_message(capsys):
    with pytest.raises(SystemExit):
        figure1.parse_args(["--steps", "3"])
    assert "at least 4" in capsys.readouterr().err


def test_help_runs_as_a_script():
    done = subprocess.run([sys.executable, str(figure1.ROOT / "experiments" / "figure1.py"),
                           "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "--seeds" in done.stdout


def test_a_vocab_unlike_the_shown_runs_is_pointed_out(tmp_path, monkeypatch, capsys):
    """On --data books the first run's vocab is compared with the shown runs' (its md5): another
    vocab means other text, so the numbers will differ, and the run says so once."""
    monkeypatch.setattr(subprocess, "run", Fakes())
    argv = ["--seeds", "0", "--finetune-seeds", "0", "--out", str(tmp_path / "fig"), "--steps", "4"]
    figure1.main([*argv, "--data", "books"])
    assert capsys.readouterr().out.count("differs from the shown runs' vocab") == 1
    figure1.main([*argv, "--data", str(tmp_path), "--out", str(tmp_path / "own")])
    assert "differs from the shown runs' vocab" not in capsys.readouterr().out  # your own text
