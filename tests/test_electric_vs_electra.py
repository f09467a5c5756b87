"""experiments/electric_vs_electra.py: Electric's updates at ELECTRA's FLOPs, the commands it runs
(train.py, sst2_check.py and support.evaluate replaced by fakes that parse the real command lines
and write what the real ones write), and the tables read back from what they wrote."""
import doctest
import json
import subprocess
from pathlib import Path

import pytest
from test_figure1 import Fakes, tiny

from experiments import electric_vs_electra as exp
from support import evaluate


class WithBlimp(Fakes):
    """test_figure1's fakes, and support.evaluate blimp: a results file whose accuracy tells the
    run (0.5 + step / 100) from its random twin (0.5), and 1 ms per pair for every score."""

    def __call__(self, command, *args, **kwargs):
        if command[1] != "-m":
            return super().__call__(command, *args, **kwargs)
        assert command[2] == "support.evaluate" and kwargs["cwd"] == exp.ROOT
        self.calls.append(("evaluate", command[3:]))
        a = evaluate.parse_args(command[3:])  # the real parser
        import torch

        if a.init is None:  # fresh weights of --objective's config: the timing of --reference
            objective, acc, seconds = a.objective, 0.5, 0.002
        else:
            saved = torch.load(Path(a.init) / "ckpt.pt", weights_only=True)
            objective = saved["model_config"]["objective"]
            acc, seconds = (0.5 if a.random else 0.5 + saved["step"] / 100), 0.001
        scores = exp.BLIMP_SCORES[objective]
        name = f"blimp-random-seed{a.seed}.json" if a.random else "blimp.json"
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / name).write_text(json.dumps({
            "overall": {"pairs": 10, **dict.fromkeys(scores, acc)},
            "seconds_per_pair": dict.fromkeys(scores, seconds)}))
        return subprocess.CompletedProcess(command, 0)


def test_doctests():
    assert doctest.testmod(exp).failed == 0


def test_electric_runs_at_electras_flops_at_every_quarter():
    from support.report import flops_per_step

    electra, _, electric = exp.runs([0])
    assert (electric.steps, electric.warmup) == (6_408, 59)
    per = {r.objective: flops_per_step(tiny(r.objective), 32, 128) for r in (electra, electric)}
    for e, c in zip(electra.stops(), electric.stops()):
        assert e * per["electra"] == pytest.approx(c * per["electric"], rel=1e-3)


def test_dry_run_from_nothing_lists_every_command(tmp_path, capsys):
    out = tmp_path / "fig"
    assert exp.main(["--seeds", "0", "--out", str(out), "--dry-run"]) is None
    assert not out.exists()
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("$ ")]
    assert len(printed) == 12 + 1 + 6  # 3 runs x 4 quarters, STS-B, BLiMP of 3 runs and twins
    assert printed[8] == (f"$ python train.py --size tiny --data books --steps 6408 "
                          f"--eval-interval 300 --seed 0 --out {out / 'electric-s0'} --stop-at "
                          f"1602 --objective electric --warmup 59 --vocab {out / 'vocab.txt'}")
    assert printed[12].endswith(f"--init {out / 'electric-s0' / 'step6408'} --out {out / 'stsb'} "
                                f"--seeds 0 1 2")
    assert printed[-1] == (f"$ python -m support.evaluate blimp --init "
                           f"{out / 'electric-s0' / 'step6408'} --out "
                           f"{out / 'blimp' / 'electric-s0'} --random --seed 0")


def test_a_whole_run_reuses_figure1s_runs_and_reads_back_its_tables(tmp_path, monkeypatch):
    fakes = WithBlimp()
    monkeypatch.setattr(subprocess, "run", fakes)
    out = tmp_path / "fig"
    common = ["--seeds", "0", "--finetune-seeds", "0", "1", "--out", str(out), "--steps", "8",
              "--data", "books"]
    exp.figure1.main(common)  # figure1.py's runs first, in the same folder
    fakes.calls.clear()
    table = exp.main(common)
    scripts = [script for script, _ in fakes.calls]
    # only Electric is trained; STS-B is asked for all twelve snapshots (sst2_check.py reuses the
    # jobs it has); BLiMP for each run and twin
    assert scripts == ["train.py"] * 4 + ["sst2_check.py"] + ["evaluate"] * 6
    assert all("electric-s0" in " ".join(a) for s, a in fakes.calls if s == "train.py")
    lines = table.splitlines()
    # random weights (1 + seed), each quarter's update (+ seed); BERT's fake scores are 100 above
    assert lines[4] == ("| 0 (random weights) | 1.50 [1.00-2.00] | 101.50 [101.00-102.00] | "
                        "1.50 [1.00-2.00] |")
    # the last snapshots: ELECTRA's at 8, BERT's at 9, Electric's at 5 updates
    assert lines[-4:] == [
        "| ELECTRA | D sum, one pass | 58.0 [58.0-58.0] | 50.0 [50.0-50.0] | 1.0 |",
        "| ELECTRA | PLL, a pass per token | 58.0 [58.0-58.0] | 50.0 [50.0-50.0] | 1.0 |",
        "| BERT | PLL, a pass per token | 59.0 [59.0-59.0] | 50.0 [50.0-50.0] | 1.0 |",
        "| Electric | sum of -E, one pass | 55.0 [55.0-55.0] | 50.0 [50.0-50.0] | 1.0 |"]
    assert (out / "electric.png").stat().st_size > 0
    assert (out / "electric.md").read_text() == table
    fakes.calls.clear()
    assert exp.main(common) == table and fakes.calls == []  # everything done: nothing runs


def reference(path: Path, steps: int) -> Path:
    """An electra_vs_bert.py results.json, pooled: ELECTRA's cells score 30 + the quarter, BERT's
    20 + the quarter, both twins 16; BLiMP 0.6 / 0.55 trained, 0.5 random."""
    rows = []
    for objective, base, acc in (("electra", 30, 0.6), ("bert", 20, 0.55)):
        for q in range(5):
            blimp = dict.fromkeys(exp.BLIMP_SCORES[objective], 0.5 if q == 0 else acc)
            rows.append({"objective": objective, "label": objective.upper(), "random": q == 0,
                         "step": q * steps // 4, "flops": q * 1e12,
                         "tasks": {"stsb": {"seeds": [16.0] * 9 if q == 0 else
                                            [base + q - 1.0, base + q, base + q + 1.0]}},
                         "blimp": blimp})
    runs = [{"objective": "electra", "steps": steps}, {"objective": "bert", "steps": steps + 1}]
    path.write_text(json.dumps({"rows": rows, "runs": runs}))
    return path


def test_reference_trains_electric_alone_and_times_the_others_on_fresh_weights(tmp_path,
                                                                               monkeypatch):
    fakes = WithBlimp()
    monkeypatch.setattr(subprocess, "run", fakes)
    out = tmp_path / "fig"
    ref = reference(tmp_path / "results.json", 8)
    common = ["--seeds", "0", "--finetune-seeds", "0", "1", "--out", str(out), "--steps", "8",
              "--data", "books", "--reference", str(ref)]
    table = exp.main(common)
    scripts = [script for script, _ in fakes.calls]
    assert scripts == ["train.py"] * 4 + ["sst2_check.py"] + ["evaluate"] * 4
    assert all("electric-s0" in " ".join(a) for s, a in fakes.calls if s == "train.py")
    assert [a[a.index("--objective") + 1] for s, a in fakes.calls[-2:]] == ["electra", "bert"]
    lines = table.splitlines()
    assert lines[2].startswith(f"ELECTRA and BERT: {ref} (9 jobs per cell)")
    assert lines[6] == ("| 0 (random weights) | 16.00 [16.00-16.00] | 16.00 [16.00-16.00] | "
                        "1.50 [1.00-2.00] |")
    assert lines[-4:] == [
        "| ELECTRA | D sum, one pass | 60.0 [60.0-60.0] | 50.0 [50.0-50.0] | 2.0 |",
        "| ELECTRA | PLL, a pass per token | 60.0 [60.0-60.0] | 50.0 [50.0-50.0] | 2.0 |",
        "| BERT | PLL, a pass per token | 55.0 [55.0-55.0] | 50.0 [50.0-50.0] | 2.0 |",
        "| Electric | sum of -E, one pass | 55.0 [55.0-55.0] | 50.0 [50.0-50.0] | 1.0 |"]
    fakes.calls.clear()
    assert exp.main(common) == table and fakes.calls == []  # everything done: nothing runs


def test_a_reference_at_other_flops_is_refused_in_one_line(tmp_path):
    ref = reference(tmp_path / "results.json", 1800)
    with pytest.raises(SystemExit, match="ran 1800 updates, this comparison --steps 8") as e:
        exp.main(["--out", str(tmp_path / "fig"), "--steps", "8", "--reference", str(ref),
                  "--dry-run"])
    assert "\n" not in str(e.value)
