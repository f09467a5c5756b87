"""experiments/figure1_hour.py: the pairs it compares, the table it writes, the figure it draws."""
import doctest
import json
import sys
from argparse import Namespace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))

import figure1_hour as f
import gain_vs_flops as g
from sst2_check import format_table, spread


def write_table(path: Path, rows: dict[str, list[float]],
                random: list[float] | dict[str, list[float]]) -> None:
    """An sst2_check table, as sst2_check writes it: a row per init, every job's score; `random`
    is every row's random jobs, or each row's."""
    args = Namespace(task="stsb", seeds=[0, 1, 2], max_train_examples=None, epochs=3, draws=1)
    randoms = random if isinstance(random, dict) else dict.fromkeys(rows, random)
    made = [{"init": init, "pretrained": spread(jobs), "random": spread(randoms[init]),
             "draws": [spread(randoms[init])],
             "gain": spread(jobs)["mean"] - spread(randoms[init])["mean"], "median_gain": 0.0}
            for init, jobs in rows.items()]
    path.write_text(format_table(made, args) + "\n")


def write_blimp(path: Path, **overall: float) -> None:
    """The part of evaluate.py's blimp.json that the figure reads."""
    path.write_text(json.dumps({"overall": {"pairs": 13400, **overall}}))


def write_seed(tmp_path: Path, seed: int, stsb: dict, sst2: dict, blimp: dict,
               updates: tuple[int, int] = (2700, 2927)) -> list[g.Run]:
    """Pre-training seed `seed`'s snapshot of each objective at `updates` (ELECTRA's, BERT's; by
    default the first quarter, 2,700 and 2,927: the same FLOPs), written as sst2_check and
    evaluate.py write them. Each dict maps "e" (ELECTRA) and "b" (BERT) to a pair: the snapshot's
    and its random weights' jobs on STS-B and on SST-2 (one table for both objectives), their
    overall accuracies on BLiMP."""
    tag = str(seed) if seed else ""
    groups = {"e": f.ELECTRA, "b": f.BERT}
    for key, group in groups.items():
        write_table(tmp_path / f"{key}{tag}.md", {f"runs/{key}{tag}": stsb[key][0]}, stsb[key][1])
        write_blimp(tmp_path / f"{key}{tag}-blimp.json", **blimp[key][0])
        write_blimp(tmp_path / f.RANDOM_BLIMP[seed][group], **blimp[key][1])
    write_table(tmp_path / f.SST2_TABLES[seed], {f"runs/{k}{tag}": sst2[k][0] for k in groups},
                {f"runs/{k}{tag}": sst2[k][1] for k in groups})
    return [g.Run(f.ELECTRA, f"e{tag}.md", f"runs/e{tag}", "tiny", f.VOCAB, updates[0]),
            g.Run(f.BERT, f"b{tag}.md", f"runs/b{tag}", "tiny", f.VOCAB, updates[1], "bert")]


@pytest.fixture
def runs(tmp_path):
    """Pre-training seed 0: one snapshot per objective at the same FLOPs."""
    return write_seed(
        tmp_path, 0,
        stsb={"e": ([30.0, 32.0, 34.0], [15.0, 16.0, 17.0]),
              "b": ([20.0, 21.0, 22.0], [14.0, 15.0, 16.0])},
        sst2={"e": ([80.0, 81.0, 82.0], [76.0, 77.0, 78.0]),
              "b": ([77.0, 78.0, 79.0], [75.0, 77.0, 79.0])},
        blimp={"e": ({"d_sum": 0.505, "d_mean": 0.504, "mlm_pll": 0.521},
                     {"d_sum": 0.531, "d_mean": 0.530, "mlm_pll": 0.497}),
               "b": ({"mlm_pll": 0.566}, {"mlm_pll": 0.506})})


def test_docstring_examples():
    result = doctest.testmod(f)
    # verdict's three readings, blimp_file, pooled, seed_names, target's two readings, bars
    assert (result.failed, result.attempted) == (0, 9)


def test_the_table_reads_each_pair_at_its_flops(runs, tmp_path):
    points = [f.point(r, tmp_path) for r in runs]
    lines = f.markdown(points).splitlines()
    assert len(lines) == 4  # header, its rule, the random weights, the one pair
    # the random weights: 16.00 against 15.00, their jobs overlap (15-17 and 14-16)
    # and BLiMP: D sum and G's PLL for ELECTRA, the MLM's PLL for BERT
    assert lines[2] == ("| 0 | 0 (random weights) | 16.00 [15.00-17.00] | 0 (random weights) "
                        "| 15.00 [14.00-16.00] | +1.00 | inside the spread | 0.531 / 0.497 "
                        "| 0.506 |")
    # 32 against 21; ELECTRA's lowest job (30) above BERT's highest (22)
    assert lines[3] == ("| 8.51e+13 | 2,700 | 32.00 [30.00-34.00] | 2,927 | 21.00 [20.00-22.00] "
                        "| +11.00 | ahead beyond the spread | 0.505 / 0.521 | 0.566 |")


def test_the_sst2_table_reads_the_target_and_the_pair(runs, tmp_path):
    lines = f.sst2_markdown([f.point(r, tmp_path) for r in runs]).splitlines()
    assert len(lines) == 4  # header, its rule, the random weights, the one pair
    # both random weights at 77, their jobs overlap (76-78 and 75-79)
    assert lines[2] == ("| 0 | 0 (random weights) | 77.00 [76.00-78.00] | | 0 (random weights) "
                        "| 77.00 [75.00-79.00] | | +0.00 | inside the spread |")
    # ELECTRA 81 - 77 = +4 with its lowest job (80) above its random's highest (78): met;
    # BERT 78 - 77 = +1: not met; ELECTRA's lowest (80) above BERT's highest (79)
    assert lines[3] == ("| 8.51e+13 | 2,700 | 81.00 [80.00-82.00] | +4.00, met | 2,927 "
                        "| 78.00 [77.00-79.00] | +1.00, not met | +3.00 "
                        "| ahead beyond the spread |")


def test_snapshots_at_other_flops_are_not_compared(runs, tmp_path):
    late_bert = [runs[0], g.Run(f.BERT, "b.md", "runs/b", "tiny", f.VOCAB, 2955, "bert")]
    with pytest.raises(ValueError, match="not at the same compute"):
        f.pairs([f.point(r, tmp_path) for r in late_bert])
    with pytest.raises(ValueError, match="1 ELECTRA snapshots against 0 BERT"):
        f.pairs([f.point(runs[0], tmp_path)])


def test_the_figure_draws_each_objective_with_its_bars_and_its_random_weights(runs, tmp_path):
    from matplotlib.colors import to_hex

    points = [f.point(r, tmp_path) for r in runs]
    stsb, sst2, grammar = f.figure([points]).axes
    lines = {c.get_label(): c for c in stsb.containers}
    assert set(lines) == {f.ELECTRA, f.BERT}
    line, _, (bars,) = lines[f.ELECTRA]
    assert list(line.get_ydata()) == [32.0]
    assert list(line.get_xdata()) == [points[0]["flops"]]
    assert to_hex(line.get_color()) == to_hex(f.COLOURS[f.ELECTRA])
    assert list(bars.get_segments()[0][:, 1]) == [30.0, 34.0]  # the lowest and highest job
    dashed = {ln.get_label(): ln.get_ydata()[0] for ln in stsb.lines if ln.get_linestyle() == "--"}
    assert dashed == {f"{f.ELECTRA}: random weights": 16.0, f"{f.BERT}: random weights": 15.0}
    # BLiMP: ELECTRA's D and G, BERT's MLM (no D), each beside its random weights, and chance
    drawn = {ln.get_label(): list(ln.get_ydata()) for ln in grammar.lines}
    assert drawn == {"ELECTRA D sum": [0.505], "ELECTRA D sum: random weights": [0.531, 0.531],
                     "ELECTRA G PLL": [0.521], "ELECTRA G PLL: random weights": [0.497, 0.497],
                     "BERT MLM PLL": [0.566], "BERT MLM PLL: random weights": [0.506, 0.506],
                     "chance": [0.5, 0.5]}
    sst2_lines = {c.get_label(): list(c[0].get_ydata()) for c in sst2.containers}
    assert sst2_lines == {f.ELECTRA: [81.0], f.BERT: [78.0]}
    dashed = {ln.get_label(): ln.get_ydata()[0] for ln in sst2.lines if ln.get_linestyle() == "--"}
    assert dashed == {f"{f.ELECTRA}: random weights": 77.0, f"{f.BERT}: random weights": 77.0}
    for ax in (stsb, sst2, grammar):
        assert ax.get_xlim()[0] == 0  # update 0 is on the axis


def test_the_png_and_its_table_are_written(runs, tmp_path):
    out = tmp_path / "fig" / "figure1.png"
    f.write([runs], out, tmp_path)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    points = [f.point(r, tmp_path) for r in runs]
    assert out.with_suffix(".md").read_text() == f.tables_markdown([points])


@pytest.fixture
def seed1_runs(tmp_path):
    """Pre-training seed 1 at the same quarter, each objective with its own random weights."""
    return write_seed(
        tmp_path, 1,
        stsb={"e": ([26.0, 27.0, 28.0], [14.0, 15.0, 16.0]),
              "b": ([22.0, 23.0, 24.0], [13.0, 14.0, 15.0])},
        sst2={"e": ([72.0, 73.0, 74.0], [76.0, 77.5, 79.0]),
              "b": ([74.0, 75.0, 76.0], [76.0, 77.0, 78.0])},
        blimp={"e": ({"d_sum": 0.490, "d_mean": 0.495, "mlm_pll": 0.518},
                     {"d_sum": 0.525, "d_mean": 0.526, "mlm_pll": 0.499}),
               "b": ({"mlm_pll": 0.560}, {"mlm_pll": 0.503})})


def test_the_seeds_table_pools_six_jobs_per_objective(runs, seed1_runs, tmp_path):
    points = [f.point(r, tmp_path) for r in runs]
    seed1 = [f.point(r, tmp_path, seed=1) for r in seed1_runs]
    lines = f.seeds_markdown([points, seed1]).splitlines()
    assert len(lines) == 4  # header, its rule, the random weights, the one quarter
    # random weights: ELECTRA 16 and 15 pool to 15.5 over jobs 14-17, BERT 15 and 14 to 14.5 over
    # 13-16; they overlap, for both seeds and for seed 1 alone (14-16 against 13-15)
    assert lines[2] == ("| 0 (random weights) | 16.00 / 15.00 | 15.00 / 14.00 "
                        "| 15.50 [14.00-17.00] | 14.50 [13.00-16.00] | +1.00 | inside the spread "
                        "| inside the spread |")
    # ELECTRA (32 + 27) / 2 = 29.5 over 26-34, BERT (21 + 23) / 2 = 22 over 20-24: the lowest
    # ELECTRA job of either seed (26) is above the highest BERT job of either (24)
    assert lines[3] == ("| 8.51e+13 | 32.00 / 27.00 | 21.00 / 23.00 | 29.50 [26.00-34.00] "
                        "| 22.00 [20.00-24.00] | +7.50 | ahead beyond the spread "
                        "| ahead beyond the spread |")
    seed0 = (f"**Pre-training seed 0: STS-B and BLiMP**\n\n{f.markdown(points)}\n"
             f"**Pre-training seed 0: SST-2**\n\n{f.sst2_markdown(points)}")
    assert f.tables_markdown([points]) == seed0
    assert f.tables_markdown([points, seed1]) == (
        f"{seed0}\n**Pre-training seed 1: STS-B and BLiMP**\n\n{f.markdown(seed1)}\n"
        f"**Pre-training seed 1: SST-2**\n\n{f.sst2_markdown(seed1)}\n"
        f"**STS-B over pre-training seeds 0 and 1**\n\n{f.seeds_markdown([points, seed1])}")


def test_seed_1_reads_its_own_sst2_table_and_blimp_zero_point(runs, seed1_runs, tmp_path):
    seed1 = [f.point(r, tmp_path, seed=1) for r in seed1_runs]
    lines = f.sst2_markdown(seed1).splitlines()
    # its random weights: ELECTRA's twin 77.5 over 76-79, BERT's 77 over 76-78
    assert lines[2] == ("| 0 | 0 (random weights) | 77.50 [76.00-79.00] | | 0 (random weights) "
                        "| 77.00 [76.00-78.00] | | +0.50 | inside the spread |")
    # ELECTRA 73 - 77.5 = -4.5, BERT 75 - 77 = -2; ELECTRA's highest (74) is BERT's lowest (74)
    assert lines[3] == ("| 8.51e+13 | 2,700 | 73.00 [72.00-74.00] | -4.50, not met | 2,927 "
                        "| 75.00 [74.00-76.00] | -2.00, not met | -2.00 | inside the spread |")
    # BLiMP against seed 1's own random weights (0.525 / 0.499 and 0.503)
    assert f.markdown(seed1).splitlines()[2].endswith("| 0.525 / 0.499 | 0.503 |")
    assert f.markdown(seed1).splitlines()[3].endswith("| 0.490 / 0.518 | 0.560 |")


def test_the_figure_draws_seed_1_open_from_its_own_random_weights(runs, seed1_runs, tmp_path):
    points = [f.point(r, tmp_path) for r in runs]
    seed1 = [f.point(r, tmp_path, seed=1) for r in seed1_runs]
    stsb, sst2, grammar = f.figure([points, seed1]).axes
    x = [f.SEED_NUDGE, points[0]["flops"] + f.SEED_NUDGE]
    lines = {c.get_label(): c for c in stsb.containers}
    line, _, (bars,) = lines[f"{f.ELECTRA}, pre-training seed 1"]
    assert list(line.get_ydata()) == [15.0, 27.0]  # its random weights, then its quarter
    assert list(line.get_xdata()) == x
    assert line.get_markerfacecolor() == "white"
    assert [list(s[:, 1]) for s in bars.get_segments()] == [[14.0, 16.0], [26.0, 28.0]]
    assert f"{f.BERT}, pre-training seed 1" in lines
    # SST-2: from its own twin (77.5, jobs 76-79), then its quarter
    lines = {c.get_label(): c for c in sst2.containers}
    line, _, (bars,) = lines[f"{f.ELECTRA}, pre-training seed 1"]
    assert list(line.get_ydata()) == [77.5, 73.0]
    assert [list(s[:, 1]) for s in bars.get_segments()] == [[76.0, 79.0], [72.0, 74.0]]
    assert list(lines[f"{f.BERT}, pre-training seed 1"][0].get_ydata()) == [77.0, 75.0]
    # BLiMP: each score from seed 1's random weights, open, beside seed 0's lines
    drawn = {ln.get_label(): ln for ln in grammar.lines if "seed 1" in ln.get_label()}
    assert {k: list(v.get_ydata()) for k, v in drawn.items()} == {
        "ELECTRA D sum, pre-training seed 1": [0.525, 0.490],
        "ELECTRA G PLL, pre-training seed 1": [0.499, 0.518],
        "BERT MLM PLL, pre-training seed 1": [0.503, 0.560]}
    bert_x = [f.SEED_NUDGE, seed1[1]["flops"] + f.SEED_NUDGE]
    assert [list(ln.get_xdata()) for ln in drawn.values()] == [x, x, bert_x]
    assert all(ln.get_markerfacecolor() == "white" for ln in drawn.values())


def test_every_committed_snapshot_has_its_row_and_its_blimp_at_equal_compute():
    points = [f.point(run) for run in f.RUNS]
    assert len(f.pairs(points)) == 4  # the hour's four quarters, each a pair at the same FLOPs
    for p in points:
        lo, hi = p["pretrained"][1:]
        assert lo <= p["pretrained"][0] <= hi
        assert ("d_sum" in p["blimp"]) == (p["run"].objective == "electra")
    # pre-training seed 1: its four quarters' pairs, at the FLOPs of seed 0's, each with its
    # SST-2 row and its BLiMP
    seed1 = [f.point(run, seed=1) for run in f.SEED1_RUNS]
    assert len(f.pairs(seed1)) == 4
    for one, zero in zip(f.pairs(seed1), f.pairs(points)):
        assert one[0]["flops"] == zero[0]["flops"]
        assert one[1]["flops"] == zero[1]["flops"]
    random0 = {p["run"].group: p["sst2"]["random"] for p in points}
    for p in seed1:
        assert ("d_sum" in p["blimp"]) == (p["run"].objective == "electra")
        assert p["sst2"]["random"] != random0[p["run"].group]  # its own twin, not seed 0's draws
    # a header, its rule, the random weights, four quarters
    assert len(f.seeds_markdown([points, seed1]).splitlines()) == 7
    # pre-training seed 2: its four quarters' pairs, at the FLOPs of seed 0's, each with its
    # SST-2 row against its own twin and its BLiMP
    seed2 = [f.point(run, seed=2) for run in f.SEED2_RUNS]
    assert f.paired(seed2) == seed2  # every snapshot has its partner
    assert len(f.pairs(seed2)) == 4
    for two, zero in zip(f.pairs(seed2), f.pairs(points)):
        assert (two[0]["flops"], two[1]["flops"]) == (zero[0]["flops"], zero[1]["flops"])
    for p in seed2:
        assert ("d_sum" in p["blimp"]) == (p["run"].objective == "electra")
        assert p["sst2"]["random"] != random0[p["run"].group]
    # the random weights and the four quarters, on every seed
    assert len(f.seeds_markdown([points, seed1, seed2]).splitlines()) == 7


def test_seed_2_is_read_at_the_hour_and_an_unpartnered_snapshot_drawn_without_a_row(tmp_path):
    at_hour = (f.ELECTRA_HOUR, f.BERT_HOUR)
    blimp = {"e": ({"d_sum": 0.5, "d_mean": 0.5, "mlm_pll": 0.52}, {"d_sum": 0.5, "d_mean": 0.5,
                                                                    "mlm_pll": 0.5}),
             "b": ({"mlm_pll": 0.55}, {"mlm_pll": 0.5})}
    sst2 = {"e": ([77.0, 78.0, 79.0], [77.0, 78.0, 79.0]), "b": ([77.0, 78.0, 79.0], [77.0] * 3)}
    seeds = []
    for seed, (electra, bert) in enumerate([(56.0, 27.0), (57.0, 28.0), (60.0, 26.0)]):
        stsb = {"e": ([electra - 1, electra, electra + 1], [15.0, 16.0, 17.0]),
                "b": ([bert - 1, bert, bert + 1], [14.0, 15.0, 16.0])}
        runs = write_seed(tmp_path, seed, stsb, sst2, blimp, at_hour)
        seeds.append([f.point(r, tmp_path, seed) for r in runs])
    # seed 2's BERT snapshot at its first quarter: no ELECTRA snapshot to pair it with
    write_table(tmp_path / "bq.md", {"runs/bq": [20.0, 21.0, 22.0]}, [14.0, 15.0, 16.0])
    write_table(tmp_path / f.SST2_TABLES[2],
                {"runs/e2": sst2["e"][0], "runs/b2": sst2["b"][0], "runs/bq": [74.0, 75.0, 76.0]},
                {"runs/e2": sst2["e"][1], "runs/b2": sst2["b"][1], "runs/bq": [77.0] * 3})
    write_blimp(tmp_path / "bq-blimp.json", mlm_pll=0.51)
    quarter = g.Run(f.BERT, "bq.md", "runs/bq", "tiny", f.VOCAB, f.BERT_QUARTERS[0], "bert")
    seeds[2].append(f.point(quarter, tmp_path, 2))
    lines = f.seeds_markdown([*seeds[:2], f.paired(seeds[2])]).splitlines()
    assert lines[0].startswith("| pre-train FLOPs | ELECTRA seed 0 / seed 1 / seed 2 |")
    assert lines[0].endswith("| read, seed 2 alone |")
    # ELECTRA (56 + 57 + 60) / 3 = 57.67 over jobs 55-61, BERT (27 + 28 + 26) / 3 = 27 over 25-29
    assert lines[3] == ("| 3.41e+14 | 56.00 / 57.00 / 60.00 | 27.00 / 28.00 / 26.00 "
                        "| 57.67 [55.00-61.00] | 27.00 [25.00-29.00] | +30.67 "
                        "| ahead beyond the spread | ahead beyond the spread |")
    # the tables compare the hour's pair only: the quarter has no ELECTRA partner
    assert [p["run"].init for p in f.paired(seeds[2])] == ["runs/e2", "runs/b2"]
    text = f.tables_markdown(seeds)
    assert f"**Pre-training seed 2: STS-B and BLiMP**\n\n{f.markdown(f.paired(seeds[2]))}" in text
    sst2_table = f.sst2_markdown(f.paired(seeds[2]))
    assert f"**Pre-training seed 2: SST-2**\n\n{sst2_table}" in text
    assert len(sst2_table.splitlines()) == 4  # header, rule, random weights, the hour's pair
    every = f.seeds_markdown([*seeds[:2], f.paired(seeds[2])])
    assert text.endswith(f"**STS-B over pre-training seeds 0, 1 and 2**\n\n{every}")
    stsb, sst2_panel, grammar = f.figure(seeds).axes
    lines = {c.get_label(): c for c in stsb.containers}
    line = lines[f"{f.BERT}, pre-training seed 2"][0]
    # from its random weights through its quarter to the hour, two nudges right of seed 0's
    assert list(line.get_ydata()) == [15.0, 21.0, 26.0]
    assert line.get_xdata()[0] == 2 * f.SEED_NUDGE
    assert line.get_marker() == "^"
    assert f"{f.ELECTRA}, pre-training seed 2" in lines
    sst2_lines = {c.get_label(): c for c in sst2_panel.containers}
    # BERT's seed 2 on SST-2: its twin, its quarter, the hour
    bert2 = sst2_lines[f"{f.BERT}, pre-training seed 2"][0]
    assert list(bert2.get_ydata()) == [77.0, 75.0, 78.0]
    assert any("seed 2" in ln.get_label() for ln in grammar.lines)
