"""experiments/context_curves.py: the rows it reads, the rise it dates, the figure it writes."""
import doctest
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))

import context_curves as c


def write_run(folder: Path, rows: list[dict]) -> Path:
    folder.mkdir()
    lines = [json.dumps(r) for r in rows]
    (folder / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def held(step: int, auc: float) -> dict:
    return {"step": step, "split": "eval", "disc_auc": 0.8, "context_auc": auc}


def test_docstring_example():
    result = doctest.testmod(c)
    assert result.attempted >= 2
    assert result.failed == 0


def test_the_curve_is_the_held_out_rows_and_a_resumed_update_counts_once(tmp_path):
    run = write_run(tmp_path / "run", [
        {"step": 300, "split": "train", "loss": 1.0},  # a training row: no context AUC
        held(300, 0.55),
        held(600, 0.58),
        held(600, 0.62),  # update 600 logged again after a resume: this one counts
        held(900, 0.70),
    ])
    assert c.context_curve(run) == ([300, 600, 900], [0.55, 0.62, 0.70])
    # the same file given directly
    assert c.context_curve(run / "metrics.jsonl") == ([300, 600, 900], [0.55, 0.62, 0.70])


def test_main_prints_each_runs_last_value_and_rise_and_writes_the_png(tmp_path, capsys):
    a = write_run(tmp_path / "a", [held(300, 0.55), held(600, 0.66), held(900, 0.71)])
    b = write_run(tmp_path / "b", [held(300, 0.54), held(600, 0.57)])
    png = tmp_path / "out" / "context.png"
    summary = c.main([str(a), str(b), "--out", str(png)])
    assert png.stat().st_size > 0
    assert summary == [
        {"run": "a", "last_step": 900, "last": 0.71, "rise": 600},
        {"run": "b", "last_step": 600, "last": 0.57, "rise": None},
    ]
    out = capsys.readouterr().out
    assert "context AUC 0.710 at update 900; first >= 0.6: update 600" in out
    assert "first >= 0.6: never" in out


def test_a_folder_without_metrics_is_one_clear_line(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit, match="no metrics rows"):
        c.main([str(tmp_path / "empty"), "--out", str(tmp_path / "x.png")])


def test_labels_name_the_runs_in_order_and_must_be_one_per_run(tmp_path):
    a = write_run(tmp_path / "a", [held(300, 0.55), held(600, 0.66)])
    b = write_run(tmp_path / "b", [held(300, 0.54)])
    png = tmp_path / "context.png"
    summary = c.main([str(a), str(b), "--out", str(png), "--label", "G 1/4", "--label", "G 1/2"])
    assert [s["run"] for s in summary] == ["G 1/4", "G 1/2"]
    assert [s["last"] for s in summary] == [0.66, 0.54]
    with pytest.raises(SystemExit, match="1 --label for 2 runs"):
        c.main([str(a), str(b), "--out", str(png), "--label", "G 1/4"])
