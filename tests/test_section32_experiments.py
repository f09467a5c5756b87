"""experiments/training_algorithms.py and weight_sharing.py: the commands they plan, run once and
read back, with train.py and sst2_check.py replaced by test_figure1's fakes."""
import dataclasses
import doctest
import subprocess

import pytest
from test_figure1 import Fakes

from experiments import training_algorithms as ta
from experiments import weight_sharing as ws
from support.report import flops_per_step


def test_doctests():
    assert doctest.testmod(ta).failed == 0 and doctest.testmod(ws).failed == 0


def test_two_stage_flops_count_each_stage_by_its_models():
    same = ta.tiny_config(sharing="none", algorithm="two-stage", generator_fraction=1.0)
    g_alone = flops_per_step(dataclasses.replace(same, objective="bert"), ta.BATCH, ta.SEQ)
    joint = flops_per_step(same, ta.BATCH, ta.SEQ)
    assert ta.two_stage_flops(same, 10, 5) == pytest.approx(5 * g_alone)  # stage 1: G alone
    # stage 2: G's forward (a third of its step) and D's forward and backward
    stage2 = ta.two_stage_flops(same, 10, 10) - ta.two_stage_flops(same, 10, 5)
    assert stage2 == pytest.approx(5 * (g_alone / 3 + joint - g_alone))
    # at the plan's updates two-stage spends joint's FLOPs, within one pair of updates
    steps = ta.two_stage_steps(1800)
    budget = 1800 * flops_per_step(ta.tiny_config(), ta.BATCH, ta.SEQ)
    assert abs(ta.two_stage_flops(same, steps, steps) - budget) < ta.two_stage_flops(same, 2, 2)


def calls_of(fakes, script):
    return [argv for s, argv in fakes.calls if s == script]


def test_training_algorithms_runs_each_stop_once_then_fine_tunes_and_draws(tmp_path, monkeypatch,
                                                                         capsys):
    fakes = Fakes()
    monkeypatch.setattr(subprocess, "run", fakes)
    out = tmp_path / "ta"
    (tmp_path / "books.txt").write_text("the cat .\n")
    argv = ["--seeds", "0", "1", "--finetune-seeds", "0", "1", "--out", str(out),
            "--data", str(tmp_path / "books.txt"), "--steps", "8"]
    table = ta.main(argv)
    trains = calls_of(fakes, "train.py")
    names = [a[a.index("--out") + 1].rsplit("/", 1)[-1] for a in trains]
    stops = [int(a[a.index("--stop-at") + 1]) for a in trains]
    per_seed = (["electra"] * 4 + ["bert"] * 4 + ["adversarial"] * 4 + ["two-stage"] * 3)
    assert names == [f"{n}-s{seed}" for seed in (0, 1) for n in per_seed]
    # two-stage: 8 updates at joint's FLOPs, snapshots at its switch and in stage 2
    assert stops[:15] == [2, 4, 6, 8, 2, 4, 7, 9, 2, 4, 6, 8, 4, 6, 8]
    assert trains[8][trains[8].index("--algorithm") + 1] == "adversarial"
    two = trains[12]
    assert two[two.index("--algorithm") + 1] == "two-stage"
    assert two[two.index("--sharing") + 1] == "none" and "generator_fraction=1" in two
    # each seed's snapshots fine-tuned once, after its four runs
    assert [s for s, _ in fakes.calls] == (["train.py"] * 15 + ["sst2_check.py"]) * 2
    lines = table.splitlines()
    assert "4 jobs, pre-training seeds 0 1" in lines[0]
    rows = [line for line in lines if line.startswith("| ")][1:]
    assert [r.split(" | ")[0] for r in rows] == (["| joint (ELECTRA)"] * 5 + ["| BERT"] * 5
                                                 + ["| adversarial"] * 5 + ["| two-stage"] * 4)
    # the fake scores the update (+ seed): joint's last 8.5 [8-9]; G's accuracy per seed (the
    # fake writes no held-out rows)
    assert rows[4].split(" | ")[3] == "8.50 [8.00-9.00]"
    assert rows[4].endswith("| - / - |") and rows[9].endswith("|  |")  # BERT has no G
    assert rows[14].split(" | ")[4] == "inside the spread"
    assert (out / "training_algorithms.png").stat().st_size > 0
    fakes.calls.clear()
    assert ta.main(argv) == table and fakes.calls == []  # everything there: nothing runs


def test_training_algorithms_dry_run_lists_every_command(tmp_path, capsys):
    out = tmp_path / "ta"
    assert ta.main(["--seeds", "0", "--out", str(out), "--dry-run"]) is None
    assert not out.exists()
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("$ ")]
    assert len(printed) == 16
    assert printed[12].endswith(f"--stop-at 919 --algorithm two-stage --sharing none --set "
                                f"generator_fraction=1 --vocab {out / 'vocab.txt'}")
    assert printed[15].startswith("$ python experiments/sst2_check.py --task stsb")


def test_weight_sharing_runs_each_mode_then_reads_the_table(tmp_path, monkeypatch, capsys):
    fakes = Fakes()
    monkeypatch.setattr(subprocess, "run", fakes)
    out = tmp_path / "ws"
    argv = ["--seeds", "0", "--finetune-seeds", "0", "1", "--out", str(out),
            "--data", str(tmp_path), "--steps", "8"]
    table = ws.main(argv)
    trains = calls_of(fakes, "train.py")
    assert [a[a.index("--sharing") + 1] for a in trains] == ["none", "embeddings", "all", "gdes"]
    assert all(a[a.index("--stop-at") + 1] == "5" and "generator_fraction=1" in a
               for a in trains)  # 8 preset updates' FLOPs with G as large as D
    rows = [line for line in table.splitlines() if line.startswith("| ")][1:]
    assert [r.split(" | ")[0] for r in rows] == ["| none", "| embeddings", "| all", "| gdes"]
    # the fake gives every run the same scores: inside the spread, and the paper's GLUE beside
    assert rows[0].endswith("| - | inside the spread | 83.6 |")  # G's accuracy: no held-out rows
    params = [int(r.split(" | ")[1].replace(",", "")) for r in rows]
    assert params[0] > params[1] > params[2]  # tying removes parameters
    # gdes: D's E_Delta and LayerNorm in place of G's own embeddings, as many; no GDES in the paper
    assert params[3] == params[0] and rows[3].endswith("| - |")
    assert (out / "weight_sharing.md").read_text() == table


def test_weight_sharing_modes_runs_only_those_and_needs_electras(tmp_path, monkeypatch, capsys):
    fakes = Fakes()
    monkeypatch.setattr(subprocess, "run", fakes)
    out = tmp_path / "gdes"
    argv = ["--seeds", "0", "--finetune-seeds", "0", "--out", str(out), "--data", str(tmp_path),
            "--steps", "8", "--modes", "none", "embeddings", "gdes"]
    table = ws.main(argv)
    trains = calls_of(fakes, "train.py")
    assert [a[a.index("--sharing") + 1] for a in trains] == ["none", "embeddings", "gdes"]
    rows = [line for line in table.splitlines() if line.startswith("| ")][1:]
    assert [r.split(" | ")[0] for r in rows] == ["| none", "| embeddings", "| gdes"]
    with pytest.raises(SystemExit):
        ws.main(argv[:-3] + ["none", "gdes"])
    assert "include embeddings" in capsys.readouterr().err
