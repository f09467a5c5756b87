"""The hour's Figure 1 on STS-B: ELECTRA and BERT at equal pre-training FLOPs, at the quarters of
the CPU hour's budget (experiments/RESULTS.md, "The hour's Figure 1 on STS-B").

Each point is a snapshot of one pre-training run (one objective, one pre-training seed)
fine-tuned on STS-B by sst2_check.py (every training row, 3 epochs, seeds 0 1 2), on SST-2 by
issue 27's protocol (20,000 rows, 1 epoch, seeds 0 1 2; seed 0's runs against three draws of
random weights, seeds 1's and 2's against one each) and scored zero-shot on BLiMP
by evaluate.py. Its row is read from the table sst2_check wrote (experiments/results/transfer/*.md),
its BLiMP from evaluate.py's JSON kept beside it, not retyped. Its x is the snapshot's
pre-training FLOPs, updates x report.flops_per_step (gain_vs_flops.run_flops); its bar spans the
fine-tuning seeds, lowest to highest. Each objective's random weights (update 0, the same config
and vocab) are the dashed line in its colour over the band of their jobs: the zero point its
pre-training has to beat. Pre-training seed 1 (the same commands with --seed 1) ran the same
four quarters: its points are open markers beside seed 0's on every panel, each line starting
from its own random weights (one draw on SST-2). Pre-training seed 2 ran the same quarters: its
points are open triangles. A seed's tables compare the snapshots that have a partner of the other
objective at the same FLOPs (paired), and a last table pools every seed's STS-B jobs per
objective at the FLOPs all seeds reached.

    python experiments/figure1_hour.py   # experiments/results/transfer/figure1-hour.png and .md

It also writes (and prints) the table RESULTS.md gives: at each quarter both objectives' mean
[min-max], the difference of the means and what the protocol reads from it. ELECTRA is *ahead
beyond the spread* at a quarter if its lowest job is above BERT's highest (*behind* if its highest
is below BERT's lowest); otherwise the difference is inside the fine-tuning seeds' spread. On
SST-2 it also reads issue 27's target per snapshot (target).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for folder in (ROOT, ROOT / "experiments"):  # plumbing at the top level; gain_vs_flops beside us
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import gain_vs_flops as g
from electra_vs_bert import BLIMP_CHANCE

from support.plumbing import atomic_write

VOCAB = 8192  # runs/tiny-books/vocab.txt, the books' vocab both runs share
ELECTRA = "ELECTRA (tiny preset)"
BERT = "BERT (the same preset, --objective bert)"
COLOURS = {ELECTRA: "C0", BERT: "C1"}  # the colours of electra_vs_bert.py's Figure 1
# equal compute: BERT's update count is ELECTRA's FLOPs over BERT's cheaper update, rounded to a
# whole update, so a pair's FLOPs differ by less than an update's worth
SAME_FLOPS = 1e-3  # relative
# the updates of the hour's first three quarters: ELECTRA's hour is 10,800 updates (3.406e14
# FLOPs), BERT's 11,707 at the same FLOPs; the last quarter is the whole run
ELECTRA_QUARTERS = (2700, 5400, 8100)
BERT_QUARTERS = (2927, 5854, 8780)
ELECTRA_HOUR = 10800
BERT_HOUR = 11707
# both runs, each stopped at its quarters with --stop-at and --resume
RUNS = [
    *(g.Run(ELECTRA, "tiny-books-stsb-check.md", f"runs/electra-hour-q/step{n}", "tiny", VOCAB, n)
      for n in ELECTRA_QUARTERS),
    g.Run(ELECTRA, "tiny-books-stsb-check.md", "runs/tiny-books-hour", "tiny", VOCAB,
          ELECTRA_HOUR),
    *(g.Run(BERT, "tiny-books-hour-bert-stsb-check.md", f"runs/bert-hour-q/step{n}", "tiny", VOCAB,
            n, "bert")
      for n in BERT_QUARTERS),
    g.Run(BERT, "tiny-books-hour-bert-stsb-check.md", "runs/tiny-books-hour-bert", "tiny", VOCAB,
          BERT_HOUR, "bert"),
]
# both hour commands again with --seed 1, stopped at each quarter (RESULTS.md, "The hour's
# Figure 1 on STS-B, pre-training seed 1 for its first half" and the seed-1 sections after it);
# each stop's checkpoint copied to a snapshot folder, the last one's too
SEED1_RUNS = [
    *(g.Run(ELECTRA, "tiny-books-stsb-check.md", f"runs/electra-hour-s1/step{n}", "tiny", VOCAB,
            n)
      for n in (*ELECTRA_QUARTERS, ELECTRA_HOUR)),
    *(g.Run(BERT, "tiny-books-hour-bert-stsb-check.md", f"runs/bert-hour-s1/step{n}", "tiny",
            VOCAB, n, "bert")
      for n in (*BERT_QUARTERS, BERT_HOUR)),
]
# pre-training seed 2: ELECTRA's hour ran first without stops (RESULTS.md, "G at 1/4 at the
# hour, pre-training seed 2"), its end the snapshot runs/tiny-books-hour-s2; then again with
# stops at its first three quarters ("The hour's Figure 1, ELECTRA's pre-training seed 2 at the
# quarters"), the same run to the bit up to update 8,100. BERT's stopped at its quarters ("The
# hour's Figure 1, BERT's pre-training seed 2"). Their SST-2 rows come from both runs again
# ("The hour's Figure 1 on SST-2, pre-training seed 2"): ELECTRA's equal to the bit, BERT's a
# rerun of the same seed that drifts from the first after update 100 (another machine).
SEED2_RUNS = [
    *(g.Run(ELECTRA, "tiny-books-stsb-check.md", f"runs/electra-hour-s2/step{n}", "tiny", VOCAB,
            n)
      for n in ELECTRA_QUARTERS),
    g.Run(ELECTRA, "tiny-books-stsb-check.md", "runs/tiny-books-hour-s2", "tiny", VOCAB,
          ELECTRA_HOUR),
    *(g.Run(BERT, "tiny-books-hour-bert-stsb-check.md", f"runs/bert-hour-s2/step{n}", "tiny",
            VOCAB, n, "bert")
      for n in (*BERT_QUARTERS, BERT_HOUR)),
]
# pre-training seed s's points are drawn s times this far right of seed 0's, so that the seeds'
# bars do not hide each other
SEED_NUDGE = 4e12  # FLOPs, about 1% of the hour's axis
# the open marker and line style of each later pre-training seed (seed 0's: filled, solid)
SEED_STYLES = {1: "o:", 2: "^-."}
MARKER_NAMES = {"o": "circles", "^": "triangles"}  # for the figure's title
# per pre-training seed, sst2_check's SST-2 table of its eight snapshots (issue 27's protocol;
# seed 0 against three draws of random weights per objective, seeds 1 and 2 against one each),
# beside the STS-B tables of the runs' own Run.table
SST2_TABLES = {0: "tiny-books-hour-sst2-check.md", 1: "tiny-books-hour-s1-sst2-check.md",
               2: "tiny-books-hour-s2-sst2-check.md"}
# per pre-training seed, evaluate.py blimp on random weights of each run's config and vocab
# (--random --seed <the seed>): BLiMP's zero point; a snapshot's own result is blimp_file(its init)
RANDOM_BLIMP = {
    0: {ELECTRA: "tiny-books-hour-blimp-random-seed0.json",
        BERT: "tiny-books-hour-bert-blimp-random-seed0.json"},
    1: {ELECTRA: "tiny-books-hour-s1-blimp-random-seed1.json",
        BERT: "tiny-books-hour-bert-s1-blimp-random-seed1.json"},
    2: {ELECTRA: "tiny-books-hour-s2-blimp-random-seed2.json",
        BERT: "tiny-books-hour-bert-s2-blimp-random-seed2.json"},
}


def blimp_file(init: str) -> str:
    """Where evaluate.py's blimp.json of the run folder `init` is kept under TABLES.

    >>> blimp_file("runs/electra-hour-q/step2700"), blimp_file("runs/tiny-books-hour")
    ('electra-hour-q-step2700-blimp.json', 'tiny-books-hour-blimp.json')
    """
    return init.removeprefix("runs/").replace("/", "-") + "-blimp.json"


def blimp(path: Path) -> dict:
    """The overall accuracies of evaluate.py's JSON: D sum and D mean (ELECTRA's D), and the
    masked LM's pseudo-log-likelihood (ELECTRA's G, BERT's MLM)."""
    return json.loads(path.read_text())["overall"]


def point(run: g.Run, tables: Path = g.TABLES, seed: int = 0) -> dict:
    """`run`'s point, of pre-training seed `seed`: its FLOPs and STS-B row (gain_vs_flops.point),
    its SST-2 row, its BLiMP and that of the random weights of its objective and seed."""
    sst2 = g.read_row(tables / SST2_TABLES[seed], run.init)
    return {**g.point(run, tables), "sst2": sst2,
            "blimp": blimp(tables / blimp_file(run.init)),
            "random_blimp": blimp(tables / RANDOM_BLIMP[seed][run.group])}


def verdict(electra: tuple, bert: tuple) -> str:
    """What the protocol reads from two (mean, min, max) cells of the same FLOPs.

    >>> verdict((57.82, 56.02, 60.84), (27.96, 27.30, 28.37))
    'ahead beyond the spread'
    >>> verdict((30.0, 28.0, 32.0), (29.0, 27.0, 31.0))
    'inside the spread'
    >>> verdict((20.0, 19.0, 21.0), (23.0, 22.0, 24.0))
    'behind beyond the spread'
    """
    if electra[1] > bert[2]:
        return "ahead beyond the spread"
    if electra[2] < bert[1]:
        return "behind beyond the spread"
    return "inside the spread"


def target(pretrained: tuple, random: tuple) -> str:
    """Issue 27's SST-2 target on two (mean, min, max) cells: the mean at least TARGET above the
    random weights' and the lowest job above their highest.

    >>> target((80.0, 79.5, 80.5), (77.0, 76.0, 78.0))
    'met'
    >>> target((80.0, 77.5, 81.0), (77.0, 76.0, 78.0))  # the lowest job among the random jobs
    'not met'
    """
    if pretrained[0] - random[0] >= g.TARGET and pretrained[1] > random[2]:
        return "met"
    return "not met"


def pooled(*cells: tuple) -> tuple:
    """(mean, min, max) cells of as many jobs each as one cell over all their jobs.

    >>> pooled((30.0, 28.0, 32.0), (40.0, 39.0, 41.0))
    (35.0, 28.0, 41.0)
    """
    return (sum(c[0] for c in cells) / len(cells), min(c[1] for c in cells),
            max(c[2] for c in cells))


def same_flops(a: dict, b: dict) -> bool:
    """Whether two points' pre-training FLOPs agree within SAME_FLOPS (relative to a's)."""
    return abs(a["flops"] - b["flops"]) <= SAME_FLOPS * a["flops"]


def pairs(points: list[dict]) -> list[tuple[dict, dict]]:
    """ELECTRA's and BERT's points matched in order, the i-th snapshot of each; an error if a pair
    is not at the same FLOPs (the comparison is at equal compute or it is not Figure 1)."""
    electra = [p for p in points if p["run"].group == ELECTRA]
    bert = [p for p in points if p["run"].group == BERT]
    if len(electra) != len(bert):
        raise ValueError(f"{len(electra)} ELECTRA snapshots against {len(bert)} BERT snapshots")
    for e, b in zip(electra, bert):
        if not same_flops(e, b):
            raise ValueError(f"{e['run'].init} ({e['flops']:.4e} FLOPs) and {b['run'].init} "
                             f"({b['flops']:.4e}) are not at the same compute")
    return list(zip(electra, bert))


def cell(values: tuple) -> str:
    mean, low, high = values
    return f"{mean:.2f} [{low:.2f}-{high:.2f}]"


def markdown(points: list[dict]) -> str:
    """The table: a line for the random weights, then one per pair of snapshots; STS-B's Spearman
    and its reading, then BLiMP's accuracies."""
    header = ("| pre-train FLOPs | ELECTRA update | ELECTRA STS-B | BERT update | BERT STS-B "
              "| ELECTRA - BERT | read | ELECTRA BLiMP: D sum / G PLL | BERT BLiMP: MLM PLL |\n"
              "|---:|---:|---|---:|---|---:|---|---:|---:|\n")
    first = pairs(points)[0]
    zero = {"flops": 0.0, "updates": "0 (random weights)"}
    rows = [({**zero, "spearman": first[0]["random"], "blimp": first[0]["random_blimp"]},
             {**zero, "spearman": first[1]["random"], "blimp": first[1]["random_blimp"]})]
    rows += [tuple({"flops": p["flops"], "updates": f"{p['run'].updates:,}",
                    "spearman": p["pretrained"], "blimp": p["blimp"]} for p in pair)
             for pair in pairs(points)]
    lines = []
    for e, b in rows:
        flops = f"{e['flops']:.2e}" if e["flops"] else "0"
        d_and_g = f"{e['blimp']['d_sum']:.3f} / {e['blimp']['mlm_pll']:.3f}"
        lines.append(f"| {flops} | {e['updates']} | {cell(e['spearman'])} | {b['updates']} "
                     f"| {cell(b['spearman'])} | {e['spearman'][0] - b['spearman'][0]:+.2f} "
                     f"| {verdict(e['spearman'], b['spearman'])} | {d_and_g} "
                     f"| {b['blimp']['mlm_pll']:.3f} |\n")
    return header + "".join(lines)


def sst2_markdown(points: list[dict]) -> str:
    """The SST-2 table: each objective's random weights, then one line per pair of snapshots with
    each one's gain over its random weights and the target's reading, and ELECTRA against BERT."""
    header = ("| pre-train FLOPs | ELECTRA update | ELECTRA SST-2 | gain, target | BERT update "
              "| BERT SST-2 | gain, target | ELECTRA - BERT | read |\n"
              "|---:|---:|---|---|---:|---|---|---:|---|\n")
    first_e, first_b = pairs(points)[0]
    random_e = first_e["sst2"]["random"]
    random_b = first_b["sst2"]["random"]
    lines = [f"| 0 | 0 (random weights) | {cell(random_e)} | | 0 (random weights) "
             f"| {cell(random_b)} | | {random_e[0] - random_b[0]:+.2f} "
             f"| {verdict(random_e, random_b)} |\n"]
    for e, b in pairs(points):
        ends = []
        for p in (e, b):
            mine = p["sst2"]
            reading = target(mine["pretrained"], mine["random"])
            ends.append(f"{p['run'].updates:,} | {cell(mine['pretrained'])} "
                        f"| {mine['pretrained'][0] - mine['random'][0]:+.2f}, {reading}")
        difference = e["sst2"]["pretrained"][0] - b["sst2"]["pretrained"][0]
        lines.append(f"| {e['flops']:.2e} | {ends[0]} | {ends[1]} | {difference:+.2f} "
                     f"| {verdict(e['sst2']['pretrained'], b['sst2']['pretrained'])} |\n")
    return header + "".join(lines)


def paired(points: list[dict]) -> list[dict]:
    """The snapshots that have a partner of the other objective at the same FLOPs: what the
    tables compare. A snapshot without one is drawn in the figure but has no row."""
    def partnered(p: dict) -> bool:
        return any(q["run"].group != p["run"].group and same_flops(p, q) for q in points)
    return [p for p in points if partnered(p)]


def seed_names(count: int) -> str:
    """The pre-training seeds 0 to count - 1 in words.

    >>> seed_names(2), seed_names(3)
    ('0 and 1', '0, 1 and 2')
    """
    return ", ".join(str(s) for s in range(count - 1)) + f" and {count - 1}"


def seeds_markdown(seeds: list[list[dict]]) -> str:
    """The STS-B table over pre-training seeds, `seeds[s]` seed s's points: at update 0 (each
    seed's random weights) and at each quarter every seed reached, both objectives' mean per seed,
    all their jobs pooled, the difference of the pooled means and its reading, and the last seed's
    pair read alone."""
    names = " / ".join(f"seed {s}" for s in range(len(seeds)))
    last = len(seeds) - 1
    header = (f"| pre-train FLOPs | ELECTRA {names} | BERT {names} "
              "| ELECTRA, all seeds | BERT, all seeds | ELECTRA - BERT | read, all seeds "
              f"| read, seed {last} alone |\n"
              "|---:|---|---|---|---|---:|---|---|\n")
    # per seed, its pairs by ELECTRA's updates (the same updates, so the same FLOPs, on every seed)
    by_seed = [{e["run"].updates: (e, b) for e, b in pairs(points)} for points in seeds]
    firsts = [pairs(points)[0] for points in seeds]
    rows = [(0.0, [first[0]["random"] for first in firsts],
             [first[1]["random"] for first in firsts])]
    for updates, (e0, _) in by_seed[0].items():
        if all(updates in mine for mine in by_seed):
            rows.append((e0["flops"], [mine[updates][0]["pretrained"] for mine in by_seed],
                         [mine[updates][1]["pretrained"] for mine in by_seed]))
    lines = []
    for flops, electra, bert in rows:
        all_e = pooled(*electra)
        all_b = pooled(*bert)
        at = f"{flops:.2e}" if flops else "0 (random weights)"
        means_e = " / ".join(f"{c[0]:.2f}" for c in electra)
        means_b = " / ".join(f"{c[0]:.2f}" for c in bert)
        lines.append(f"| {at} | {means_e} | {means_b} | {cell(all_e)} | {cell(all_b)} "
                     f"| {all_e[0] - all_b[0]:+.2f} | {verdict(all_e, all_b)} "
                     f"| {verdict(electra[-1], bert[-1])} |\n")
    return header + "".join(lines)


def bars(cells: list[tuple]) -> tuple[list, list, list]:
    """(mean, min, max) cells -> errorbar's means and the distances below and above them.

    >>> bars([(30.0, 28.0, 33.0)])
    ([30.0], [2.0], [3.0])
    """
    return ([c[0] for c in cells], [c[0] - c[1] for c in cells], [c[2] - c[0] for c in cells])


def seed_x(mine: list[dict], seed: int) -> list[float]:
    """Where pre-training seed `seed`'s line is drawn: its random weights at update 0, then its
    snapshots, all `seed` x SEED_NUDGE right of seed 0's so that the seeds' bars do not hide each
    other."""
    nudge = seed * SEED_NUDGE
    return [nudge, *(p["flops"] + nudge for p in mine)]


def draw_task(ax, mine: list[dict], task: str, colour: str, group: str, seed: int = 0) -> None:
    """One objective's line on a fine-tuned task's panel: the mean and min-max bars of each
    snapshot. `task` is "stsb" (the point's own row) or "sst2". Seed 0's random weights are dashed
    over the band of their jobs; a later pre-training seed's are the first of its open markers
    (SEED_STYLES), at update 0."""
    rows = [p if task == "stsb" else p[task] for p in mine]
    cells = [r["pretrained"] for r in rows]
    if seed:
        mean, below, above = bars([rows[0]["random"], *cells])
        ax.errorbar(seed_x(mine, seed), mean, yerr=[below, above], fmt=SEED_STYLES[seed],
                    capsize=3, color=colour, markerfacecolor="white",
                    label=f"{group}, pre-training seed {seed}")
        return
    mean, below, above = bars(cells)
    x = [p["flops"] for p in mine]
    ax.errorbar(x, mean, yerr=[below, above], fmt="o-", capsize=3, color=colour, label=group)
    random_mean, random_low, random_high = rows[0]["random"]
    ax.axhline(random_mean, color=colour, ls="--", lw=1, label=f"{group}: random weights")
    ax.axhspan(random_low, random_high, color=colour, alpha=0.1, lw=0)


def draw_blimp(ax, mine: list[dict], colour: str, group: str, seed: int = 0) -> None:
    """One objective's BLiMP accuracies: D sum (ELECTRA only) and the masked LM's PLL. Seed 0's
    random weights are a line across the panel; a later pre-training seed's are the first of its
    open markers, at update 0, as on the fine-tuned panels."""
    short = group.split()[0]
    mlm = "MLM" if mine[0]["run"].objective == "bert" else "G"
    for score, name, style in (("d_sum", "D sum", "o-"), ("mlm_pll", f"{mlm} PLL", "s:")):
        if score not in mine[0]["blimp"]:
            continue  # BERT has no D
        values = [p["blimp"][score] for p in mine]
        random = mine[0]["random_blimp"][score]
        if seed:
            marker = SEED_STYLES[seed][0]  # the seed's marker, the score's line style
            ax.plot(seed_x(mine, seed), [random, *values], marker + style[1:], color=colour,
                    markerfacecolor="white", label=f"{short} {name}, pre-training seed {seed}")
            continue
        ax.plot([p["flops"] for p in mine], values, style, color=colour, label=f"{short} {name}")
        ax.axhline(random, color=colour, lw=1, ls="--" if score == "d_sum" else "-.",
                   label=f"{short} {name}: random weights")


def figure(seeds: list[list[dict]]):
    """Three panels against pre-training FLOPs: STS-B's Spearman and SST-2's accuracy, a line per
    objective with its seeds' bars and its random weights as a dashed line over their jobs' band
    (draw_task); BLiMP's accuracy, D sum and the masked LM's PLL, each with its random weights
    (draw_blimp). `seeds[s]` is pre-training seed s's points; a later seed's are open markers,
    each line from its own random weights at update 0."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(19, 5.2))
    stsb, sst2, grammar = fig.subplots(1, 3)
    for seed, points in enumerate(seeds):
        for group in (ELECTRA, BERT):
            mine = sorted((p for p in points if p["run"].group == group),
                          key=lambda p: p["flops"])
            colour = COLOURS[group]
            draw_task(stsb, mine, "stsb", colour, group, seed)
            draw_task(sst2, mine, "sst2", colour, group, seed)
            draw_blimp(grammar, mine, colour, group, seed)
    grammar.axhline(BLIMP_CHANCE, color="0.6", lw=1, label="chance")
    stsb.set_ylabel("STS-B dev Spearman (x100)")
    stsb.set_title("STS-B, fine-tuned (dots: mean of 3 fine-tuning seeds; bars: min-max)",
                   fontsize=10)
    sst2.set_ylabel("SST-2 dev accuracy")
    random_jobs = "3 draws x 3 seeds" + (", later seeds one draw" if len(seeds) > 1 else "")
    sst2.set_title(f"SST-2, 20,000 rows, 1 epoch (random weights: {random_jobs})", fontsize=10)
    grammar.set_ylabel("BLiMP accuracy, 200 pairs per paradigm")
    grammar.set_title("BLiMP, zero-shot", fontsize=10)
    for ax in (stsb, sst2, grammar):
        ax.set_xlim(left=0)  # update 0, where the random weights are
        ax.set_xlabel("pre-training FLOPs (report.flops_per_step)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    if len(seeds) > 1:
        later = ", ".join(f"{s} (open {MARKER_NAMES[SEED_STYLES[s][0]]})"
                          for s in range(1, len(seeds)))
        title = f"pre-training seeds 0 (filled circles), {later}"
    else:
        title = "one pre-training seed each"
    fig.suptitle("Figure 1 on a laptop: ELECTRA and BERT at equal compute over the CPU hour, "
                 + title, fontsize=11)
    fig.tight_layout()
    return fig


def tables_markdown(seeds: list[list[dict]]) -> str:
    """Each pre-training seed's tables (STS-B and BLiMP, then SST-2, at the snapshots both
    objectives have at the same FLOPs) under a title, then the STS-B table over every seed, at
    the FLOPs all of them reached."""
    every = [paired(points) for points in seeds]
    sections = []
    for seed, both in enumerate(every):
        sections.append((f"Pre-training seed {seed}: STS-B and BLiMP", markdown(both)))
        sections.append((f"Pre-training seed {seed}: SST-2", sst2_markdown(both)))
    if len(seeds) > 1:
        sections.append((f"STS-B over pre-training seeds {seed_names(len(seeds))}",
                         seeds_markdown(every)))
    return "\n".join(f"**{title}**\n\n{table}" for title, table in sections)


def write(seed_runs: list[list[g.Run]], out: Path, tables: Path = g.TABLES) -> list[list[dict]]:
    """The figure to `out` and the tables beside it (`out` with .md), from `seed_runs[s]`,
    pre-training seed s's runs; returns each seed's points."""
    seeds = [[point(run, tables, seed) for run in runs] for seed, runs in enumerate(seed_runs)]
    fig = figure(seeds)
    # a temporary file, then a rename: an interrupted run leaves the last whole figure and table
    atomic_write(out, lambda path: fig.savefig(path, dpi=120, format="png"))
    atomic_write(out.with_suffix(".md"), tables_markdown(seeds))
    return seeds


def main(argv=None) -> list[list[dict]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(g.TABLES / "figure1-hour.png"),
                        help="the PNG to write, its table beside it (default: %(default)s)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    seeds = write([RUNS, SEED1_RUNS, SEED2_RUNS], out)
    print(tables_markdown(seeds), end="")
    print(f"wrote {out} and {out.with_suffix('.md').name}")
    return seeds


if __name__ == "__main__":
    main()
