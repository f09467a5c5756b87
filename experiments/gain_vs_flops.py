"""SST-2 gain over random weights against pre-training compute: every run of the project's
presets under the SST-2 protocol in one picture (experiments/README.md, "Where transfer does
not show").

Each point is one pre-training run (one seed). Its y is the gain sst2_check.py wrote into its
table (experiments/results/transfer/*.md), read from there, not retyped:

    gain = mean_s acc(run, s) - mean_{d,s} acc(draw d, s)

over fine-tuning seeds s and draws d of random weights of the same config and vocab. Its bar spans
the run's fine-tuning seeds (their min and max, less the same random mean), and the grey band at
each group's FLOPs spans the random jobs (min and max less their mean): the spread a gain must
clear. Its x is the run's pre-training FLOPs, updates x report.flops_per_step of its config at its
recipe's batch and sequence length. The dashed line is the target, +2.

    python experiments/gain_vs_flops.py   # experiments/results/transfer/gain_vs_flops.png

The groups are the presets of the CPU search (candidates numbered as in experiments/README.md's
table), each with the fine-tuning recipe it was read with (the protocol: 20,000 SST-2 rows, 1
epoch, seeds 0 1 2):

- tiny, 15 minutes on 2 CPU cores: candidates 19 (1,800 updates) and 20 (2,700 updates, the whole
  15 minutes), the corpus of tapt_corpus.py with its 4,096-piece vocab, lr 1e-3, head first;
- tiny-hour, 60 minutes on 2 CPU cores: candidate 16 and its seeds 1 and 2, lr 1e-3;
- ELECTRA-Small on one H100, 8 to 10 minutes: the books and WikiText-2 (seed 0 at 4,136 and 29,651
  updates, seed 1 at 24,669), and the books, WikiText-2 and SST-2's unlabelled training sentences
  (seed 1, 18,719 updates; seed 2, 20,223 updates, its table written from the recorded scores);
  Table 7's Small recipe;
- BERT's objective at candidate 20's FLOPs (2,955 updates), the same corpus, vocab and recipe as
  candidate 20, three seeds: the paper's Figure-1 comparison at one budget;
- candidate 21, candidate 20's preset over the hour (10,800 updates, seeds 0, 1 and 2) and seed 0's
  checkpoint at 5,400, read as candidate 20.

A second panel reads the runs fine-tuned with every block drawn afresh (finetune.py
--reinit-layers set to the config's layers: the pre-trained embeddings alone), where
ELECTRA-Small's gain is: candidates 20 and 21, BERT at candidate
20's FLOPs, and ELECTRA-Small's two seed-1 runs. Their zero point is random weights fine-tuned
with the same flag: the twin for BERT and Small, three draws pooled for the tiny ELECTRA runs
(one job of seed 0's twin collapsed, 59.63, and a draw of random weights can fail again: the
grey bars).
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the core files are flat modules at the repo's top level

import train
from support.report import flops_per_step

TABLES = ROOT / "experiments" / "results" / "transfer"
# sst2_check's cell "mean [min-max] sd" (", median" after it in later tables)
CELL = re.compile(r"^\s*([\d.]+) \[([\d.]+)-([\d.]+)\]")
TARGET = 2.0  # the CPU search's target: SST-2 >= random weights + 2 points
# the y axis starts here: a fine-tuning job that failed (the majority class, 50.92) reaches -28,
# and would squash every other point into a band; a bar cut here is labelled with its end
Y_BOTTOM = -20.0
# one a group, in RUNS' order (grey: the books runs; no C2, the target line's green)
COLOURS = ("C0", "C1", "C7", "C3", "C4", "C9", "C6", "C5")
# what fine-tuning starts from: every pre-trained weight (the protocol, the paper's fine-tuning),
# or the pre-trained embeddings alone (finetune.py --reinit-layers set to the config's layers)
WHOLE = "whole encoder"
EMBEDDINGS = "embeddings alone (every block redrawn)"


@dataclass
class Run:
    """One pre-training run: where its sst2_check row is, and what its compute was."""

    group: str  # the legend's label: the preset and its budget
    table: str  # sst2_check's markdown table under TABLES
    init: str  # the row's first cell (sst2_check's --init)
    size: str  # its preset (electra.SIZES, train.RECIPES)
    vocab_size: int  # its vocab (the FLOPs of G's output layer)
    updates: int  # the updates made
    objective: str = "electra"  # train.py --objective: BERT's has no G (fewer FLOPs an update)
    start: str = WHOLE  # what fine-tuning started from: WHOLE or EMBEDDINGS


CPU_15 = "tiny, 15 min on 2 CPU cores (tapt corpus, vocab 4,096)"
CPU_60 = "tiny-hour, 60 min on 2 CPU cores (tapt corpus, vocab 8,192)"
GPU_BOOKS = "ELECTRA-Small, one H100 (books + WikiText-2)"
GPU_TAPT = "ELECTRA-Small, one H100 (+ SST-2's unlabelled sentences)"
CPU_15_BERT = "BERT, tiny, candidate 20's FLOPs on 2 CPU cores (tapt corpus, vocab 4,096)"
CPU_15_HOUR = "tiny, the 15-minute preset over 60 min (candidate 21, 3 seeds; a 30-min checkpoint)"
CPU_HOUR_STRETCHED = ("tiny, candidate 21 with the lr's decay stretched to 21,600 updates, "
                      "stopped at 10,800 (60 min, 3 seeds)")
CPU_15_DROPOUT = ("tiny, candidate 20 with the paper's dropout 0.1 in pre-training (candidate 22; "
                  "fine-tuned at dropout 0)")
SEED_SUFFIXES = ("", "s1", "s2")  # pre-training seeds 0, 1, 2: runs/X, runs/Xs1, runs/Xs2
# candidate 21's runs: seed 0's checkpoint at update 5,400, then seeds 0, 1, 2 at 10,800
CANDIDATE_21 = (("-at5400", 5400), *((s, 10800) for s in SEED_SUFFIXES))
RUNS = [
    *(Run(CPU_15, "v4096-lpft-sst2.md", f"runs/v4096{s}", "tiny", 4096, 1800)
      for s in SEED_SUFFIXES),
    *(Run(CPU_15, "v4096-2700-lpft-sst2.md", f"runs/v4096-2700{s}", "tiny", 4096, 2700)
      for s in SEED_SUFFIXES),
    Run(CPU_60, "tiny-hour-9600-sst2.md", "runs/hour", "tiny-hour", 8192, 9600),
    Run(CPU_60, "hours1-sst2.md", "runs/hours1", "tiny-hour", 8192, 9600),
    Run(CPU_60, "hours2-sst2.md", "runs/hours2", "tiny-hour", 8192, 9600),
    Run(GPU_BOOKS, "gpu_small-sst2.md", "runs/gpu_small", "small", 30522, 4136),
    Run(GPU_BOOKS, "gpu_small2-sst2.md", "runs/gpu_small2", "small", 30522, 29651),
    Run(GPU_BOOKS, "gpu_small3-sst2.md", "runs/gpu_small3", "small", 30522, 24669),
    Run(GPU_TAPT, "gpu_small_tapt-sst2.md", "runs/gpu_small_tapt", "small", 30522, 18719),
    Run(GPU_TAPT, "gpu_small_tapt2-sst2.md", "runs/gpu_small_tapt2", "small", 30522, 20223),
    *(Run(CPU_15_BERT, "v4096-bert-2955-sst2.md", f"runs/v4096-bert-2955{s}", "tiny", 4096, 2955,
          "bert")
      for s in SEED_SUFFIXES),
    *(Run(CPU_15_HOUR, "v4096-10800-lpft-sst2.md", f"runs/v4096-10800{at}", "tiny", 4096, n)
      for at, n in CANDIDATE_21),
    *(Run(CPU_15, "v4096-reinit4-draws3-sst2.md", f"runs/v4096-2700{s}", "tiny", 4096, 2700,
          start=EMBEDDINGS)
      for s in SEED_SUFFIXES),
    *(Run(CPU_15_HOUR, "v4096-reinit4-draws3-sst2.md", f"runs/v4096-10800{at}", "tiny", 4096, n,
          start=EMBEDDINGS)
      for at, n in CANDIDATE_21),
    *(Run(CPU_15_BERT, "v4096-bert-2955-reinit4-sst2.md", f"runs/v4096-bert-2955{s}", "tiny",
          4096, 2955, "bert", EMBEDDINGS)
      for s in SEED_SUFFIXES),
    *(Run(CPU_HOUR_STRETCHED, "v4096-21600-at10800-sst2.md", f"runs/v4096-21600-at10800{s}",
          "tiny", 4096, 10800)
      for s in SEED_SUFFIXES),
    *(Run(CPU_15_DROPOUT, "v4096-2700-drop-sst2.md", f"runs/v4096-2700-drop{s}", "tiny", 4096,
          2700)
      for s in SEED_SUFFIXES),
    Run(GPU_BOOKS, "gpu_small-reinit12-sst2.md", "runs/gpu_small3", "small", 30522, 24669,
        start=EMBEDDINGS),
    Run(GPU_TAPT, "gpu_small-reinit12-sst2.md", "runs/gpu_small_tapt", "small", 30522, 18719,
        start=EMBEDDINGS),
]


def read_row(table: Path, init: str) -> dict:
    """The row of `init` in sst2_check's markdown `table`: the pre-trained jobs' mean, min and max,
    the random jobs' mean, min and max, and the gain as printed.

    >>> import tempfile
    >>> md = Path(tempfile.mkdtemp()) / "t.md"
    >>> _ = md.write_text("| init | pre-trained | random weights | gain |\\n|---|---|---|---:|\\n"
    ...                   "| runs/a | 77.10 [76.83-77.29] 0.24, 77.18 | 77.22 [73.28-78.44] 1.54 "
    ...                   "| -0.11 |\\n")
    >>> read_row(md, "runs/a")["gain"], read_row(md, "runs/a")["random"]
    (-0.11, (77.22, 73.28, 78.44))
    """
    for line in table.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] != init:
            continue
        pretrained, random = (CELL.match(c) for c in cells[1:3])
        if pretrained is None or random is None:
            raise SystemExit(f"{table}: the row of {init} is not an sst2_check row: {line}")
        gain = next(float(c) for c in cells[3:] if re.fullmatch(r"[+-][\d.]+", c))
        return {"pretrained": tuple(float(g) for g in pretrained.groups()),
                "random": tuple(float(g) for g in random.groups()),
                "gain": gain}
    raise SystemExit(f"{table} has no row for {init}")


HOUR_CHANGES = dict(mask_prob=0.15, max_predictions=train.max_predictions(0.15, 128))


def run_flops(run: Run) -> float:
    """Pre-training FLOPs of `run`: its updates x flops_per_step of its preset as its recipe builds
    it (train.preset_configs) with its vocab, at the recipe's batch and sequence length."""
    # the hour's runs (experiments/hooks.py tiny-hour) are the tiny preset at 15% masked
    size, changes = ("tiny", HOUR_CHANGES) if run.size == "tiny-hour" else (run.size, {})
    recipe = train.RECIPES[size]
    config = replace(train.preset_configs()[size], vocab_size=run.vocab_size,
                     objective=run.objective, **changes)
    return run.updates * flops_per_step(config, recipe.batch_size, recipe.seq_len)


def plot(runs: list[Run], png: Path, tables: Path = TABLES) -> list[dict]:
    """The figure (`figure`), written to `png`; returns each run's point (its FLOPs and row)."""
    points = [point(r, tables) for r in runs]
    fig = figure(points)
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=120)
    return points


def point(run: Run, tables: Path = TABLES) -> dict:
    """`run`'s point: its FLOPs and its row in its table (read_row)."""
    return {"run": run, "flops": run_flops(run), **read_row(tables / run.table, run.init)}


def figure(points: list[dict]):
    """One panel per Run.start, in the points' order, one colour per group across the panels."""
    from matplotlib.figure import Figure

    runs = [p["run"] for p in points]
    groups = list(dict.fromkeys(r.group for r in runs))
    if len(groups) > len(COLOURS):  # zip would drop the groups past the last colour, silently
        raise ValueError(f"{len(groups)} groups, {len(COLOURS)} colours: add one to COLOURS")
    colour_of = dict(zip(groups, COLOURS))
    starts = list(dict.fromkeys(r.start for r in runs))
    fig = Figure(figsize=(8 * len(starts), 5.4))
    axes = fig.subplots(1, len(starts), sharey=True, squeeze=False)[0]
    for ax, start in zip(axes, starts):
        for group in groups:
            mine = [p for p in points if p["run"].group == group and p["run"].start == start]
            if mine:
                draw_group(ax, mine, colour_of[group], group)
        ax.axhline(0.0, color="black", lw=0.8)
        ax.axhline(TARGET, color="C2", ls="--", lw=1, label=f"target: random weights + {TARGET:g}")
        ax.set_xscale("log")
        ax.set_xlabel("pre-training FLOPs (report.flops_per_step)")
        ax.set_title(f"fine-tuned from the {start}")
        ax.legend(fontsize=8, loc="lower right")
    # after every panel is drawn: the panels share y, and a limit set earlier would stop the
    # later panels' points from widening it
    axes[0].set_ylim(bottom=Y_BOTTOM)
    axes[0].set_ylabel("SST-2 gain over random weights (points)")
    fig.suptitle("SST-2 after fine-tuning, against random weights of the same config "
                 "(dots: mean over 3 fine-tuning seeds; bars: their min-max; grey: random jobs)",
                 fontsize=10)
    fig.tight_layout()
    return fig


def draw_group(ax, points: list[dict], colour: str, label: str) -> None:
    """One group's runs on `ax`: each gain with its fine-tuning seeds' bar, and the random jobs'
    spread at its FLOPs in grey (what a gain must clear)."""
    x = np.array([p["flops"] for p in points])
    gain = np.array([p["gain"] for p in points])
    # each run's fine-tuning seeds, less the same random mean as its gain
    low = np.array([p["pretrained"][1] - p["random"][0] for p in points])
    high = np.array([p["pretrained"][2] - p["random"][0] for p in points])
    ax.errorbar(x, gain, yerr=[gain - low, high - gain], fmt="o", color=colour, capsize=3,
                label=label)
    for xi, lowest in zip(x, low):
        if lowest < Y_BOTTOM:
            ax.annotate(f"bar to {lowest:.0f}", (xi, Y_BOTTOM), xytext=(4, 4),
                        textcoords="offset points", fontsize=7, color=colour)
    for p in points:
        mean, lo, hi = p["random"]
        ax.plot([p["flops"]] * 2, [lo - mean, hi - mean], color="grey", lw=6, alpha=0.25,
                solid_capstyle="butt")


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(TABLES / "gain_vs_flops.png"),
                        help="the PNG to write (default: %(default)s)")
    args = parser.parse_args(argv)
    points = plot(RUNS, Path(args.out))
    for p in points:
        r = p["run"]
        print(f"{r.init:24} {r.updates:>7,} updates {p['flops']:.2e} FLOPs  gain {p['gain']:+6.2f}"
              f"  ({r.start})")
    print(f"wrote {args.out}")
    return points


if __name__ == "__main__":
    main()
