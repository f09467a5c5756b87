"""experiments/gain_vs_flops.py: the rows it reads, the FLOPs it computes, the figure it draws."""
import doctest
import sys
from dataclasses import replace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))

import gain_vs_flops as g

# sst2_check's two table formats: without the median (the older tables) and with it
TABLE = """SST-2 dev accuracy, 20,000 training rows, 1 epoch(s), seeds 0 1 2: mean [min-max] std

| init | pre-trained | random weights, same config and vocab | mean of each draw | gain |
|---|---|---|---|---:|
| runs/old | 76.38 [74.54-77.64] 1.63 | 77.85 [76.38-79.47] 1.07 | 78.48 / 77.03 / 78.06 | -1.48 |
"""
TABLE_WITH_MEDIANS = (
    "| init | pre-trained | random weights | mean of each draw | gain | median gain |\n"
    "|---|---|---|---|---:|---:|\n"
    "| runs/new | 70.60 [69.38-71.33] 1.07, 71.10 | 66.58 [64.22-69.04] 1.39, 66.63 "
    "| 65.29 / 66.63 | +4.03 | +4.47 |\n"
)


def test_docstring_example():
    assert doctest.testmod(g, optionflags=doctest.ELLIPSIS).failed == 0


def test_a_row_of_either_format_is_read_as_printed(tmp_path):
    (tmp_path / "old.md").write_text(TABLE)
    (tmp_path / "new.md").write_text(TABLE_WITH_MEDIANS)
    old = g.read_row(tmp_path / "old.md", "runs/old")
    assert old == {"pretrained": (76.38, 74.54, 77.64), "random": (77.85, 76.38, 79.47),
                   "gain": -1.48}
    new = g.read_row(tmp_path / "new.md", "runs/new")
    # the gain of the means, not the median gain beside it
    assert new == {"pretrained": (70.60, 69.38, 71.33), "random": (66.58, 64.22, 69.04),
                   "gain": 4.03}


def test_a_table_sst2_check_writes_now_is_read(tmp_path):
    """The format of today's sst2_check.format_table, every job's scores in its last column."""
    from argparse import Namespace

    from sst2_check import format_table, spread

    draws = [spread([66.0, 68.0]), spread([65.0, 67.0])]
    row = {"init": "runs/now", "pretrained": spread([70.0, 72.0]),
           "random": spread([66.0, 68.0, 65.0, 67.0]), "draws": draws, "gain": 4.5,
           "median_gain": 4.5}
    args = Namespace(task="sst2", seeds=[0, 1], max_train_examples=20000, epochs=1, draws=2)
    (tmp_path / "now.md").write_text(format_table([row], args) + "\n")
    assert g.read_row(tmp_path / "now.md", "runs/now") == {
        "pretrained": (71.0, 70.0, 72.0), "random": (66.5, 65.0, 68.0), "gain": 4.5}


def test_a_missing_row_is_one_line_that_names_the_table(tmp_path):
    (tmp_path / "old.md").write_text(TABLE)
    with pytest.raises(SystemExit, match="old.md has no row for runs/other"):
        g.read_row(tmp_path / "old.md", "runs/other")


def test_the_flops_are_those_the_runs_printed():
    # train.py's start-up line: "compute  2.83e+10 FLOPs per update (fwd+bwd), 7.64e+13 for
    # 2,700 updates" (candidate 20); ELECTRA-Small's run: 4,136 updates are 4.76e15 FLOPs
    tiny = g.Run("tiny", "t.md", "runs/t", "tiny", 4096, 2700)
    small = g.Run("small", "s.md", "runs/s", "small", 30522, 4136)
    assert g.run_flops(tiny) == pytest.approx(7.64e13, rel=1e-3)
    assert g.run_flops(small) == pytest.approx(4.76e15, rel=1e-3)
    # BERT (no G) at candidate 20's FLOPs: 2,955 updates of 2.59e10 (its start-up line)
    bert = g.Run("bert", "b.md", "runs/b", "tiny", 4096, 2955, "bert")
    assert g.run_flops(bert) == pytest.approx(7.64e13, rel=1e-3)
    assert g.run_flops(bert) < g.run_flops(replace(bert, objective="electra"))


def test_every_point_of_the_figure_is_a_committed_row_whose_gain_is_its_means_difference():
    for run in g.RUNS:
        row = g.point(run)
        # the tables print two decimals, so the difference of the rounded means is within 0.01
        assert row["gain"] == pytest.approx(row["pretrained"][0] - row["random"][0], abs=0.011)
        lo, hi = row["pretrained"][1:]
        assert lo <= row["pretrained"][0] <= hi


def test_the_figure_is_written_with_one_point_per_run(tmp_path):
    (tmp_path / "old.md").write_text(TABLE)
    (tmp_path / "new.md").write_text(TABLE_WITH_MEDIANS)
    runs = [g.Run("cpu", "old.md", "runs/old", "tiny", 4096, 1800),
            g.Run("gpu", "new.md", "runs/new", "small", 30522, 18719)]
    png = tmp_path / "fig" / "gain.png"
    points = g.plot(runs, png, tables=tmp_path)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p["gain"] for p in points] == [-1.48, 4.03]
    assert points[0]["flops"] < points[1]["flops"]


def test_more_groups_than_colours_is_an_error_not_a_missing_group(tmp_path):
    (tmp_path / "old.md").write_text(TABLE)
    runs = [g.Run(f"group {i}", "old.md", "runs/old", "tiny", 4096, 1800)
            for i in range(len(g.COLOURS) + 1)]
    with pytest.raises(ValueError, match="add one to COLOURS"):
        g.plot(runs, tmp_path / "gain.png", tables=tmp_path)


def test_each_start_is_a_panel_and_a_group_keeps_its_colour_across_panels(tmp_path):
    from matplotlib.colors import to_hex

    (tmp_path / "old.md").write_text(TABLE)
    (tmp_path / "new.md").write_text(TABLE_WITH_MEDIANS)
    # the embeddings panel's one point is higher than anything in the first panel
    high = TABLE_WITH_MEDIANS.replace("70.60 [69.38-71.33]", "80.60 [79.38-81.33]")
    (tmp_path / "high.md").write_text(high.replace("| +4.03 |", "| +14.02 |"))
    runs = [g.Run("cpu", "old.md", "runs/old", "tiny", 4096, 1800),
            g.Run("gpu", "new.md", "runs/new", "small", 30522, 18719),
            g.Run("gpu", "high.md", "runs/new", "small", 30522, 18719, start=g.EMBEDDINGS)]
    points = g.plot(runs, tmp_path / "gain.png", tables=tmp_path)
    fig = g.figure(points)
    whole, embeddings = fig.axes
    assert whole.get_title() == f"fine-tuned from the {g.WHOLE}"
    assert embeddings.get_title() == f"fine-tuned from the {g.EMBEDDINGS}"

    def colours(ax):  # each group's errorbar: its label and its dots' colour
        return {c.get_label(): to_hex(c.lines[0].get_color()) for c in ax.containers}

    assert colours(whole) == {"cpu": to_hex("C0"), "gpu": to_hex("C1")}
    assert colours(embeddings) == {"gpu": to_hex("C1")}  # not the first colour: gpu's own
    # the shared y axis holds every panel's bars, the later panels' too
    for ax in fig.axes:
        for container in ax.containers:
            _, top = container.lines[2][0].get_segments()[0][:, 1]
            assert ax.get_ylim()[1] >= top


def test_a_single_start_draws_one_panel(tmp_path):
    (tmp_path / "old.md").write_text(TABLE)
    runs = [g.Run("cpu", "old.md", "runs/old", "tiny", 4096, 1800)]
    assert len(g.figure(g.plot(runs, tmp_path / "gain.png", tables=tmp_path)).axes) == 1
