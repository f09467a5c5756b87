"""Experiment 3: the generator's size, the discriminator fixed (paper Sec. 3.2, Figure 3 left).

The generator's hidden size (and its heads and FFN, as the official code derives them) is a fraction
of the discriminator's; every run gets the same FLOPs budget, so a bigger generator means fewer
updates. Paper: "models work best with generators 1/4-1/2 the size of the discriminator" (Figure 3,
left; a generator as large as the discriminator does worse, and also costs about twice the compute).

On STS-B at the 15-minute budget, as experiments/README.md shows it:

    python experiments/generator_size.py --data books --size tiny --flops 5.6765e13 \\
        --checkpoints 4 --fractions 1/8 1/4 1/2 1 --tasks stsb --seeds 3 --ft-epochs stsb=3 \\
        --ft-lr 1e-3 --ft-head-first-epochs 1

Each run's final snapshot is fine-tuned, and so are its random weights (update 0, the weights the
run starts from): the zero point pre-training has to beat. A generator of
another width draws D's random weights in another order, so each fraction has its own zero point.
Writes --out/results.json, generator_size.md and generator_size.png (score vs generator size). Run
it again to continue after an interruption; the ELECTRA run of electra_vs_bert.py (the size
preset's fraction, same --runs-dir) is reused.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments import common
from support import evaluate

NAME = "generator_size"
# Figure 3's range, as fractions of the discriminator's hidden size
FRACTIONS = ("1/8", "1/4", "1/2", "1")
TASKS = "sst2,mrpc,stsb"
GAIN_TASK = "sst2"  # the transfer check: SST-2's gain over the run's own random weights
STAT = "mean"  # the mean over seeds beside its spread (the paper reports the median)


def parse_args(argv=None) -> argparse.Namespace:
    p = common.arg_parser(__doc__, TASKS)
    p.add_argument("--fractions", nargs="+", type=common.parse_fraction,
                   default=[common.parse_fraction(f) for f in FRACTIONS],
                   help="generator hidden size / discriminator hidden size, e.g. 1/8 1/4 1/2 1")
    return common.parse(p, argv, NAME)


def main(argv=None) -> dict:
    """Run (or continue) the experiment; returns the results dict with its summary "rows"."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    ctx = common.setup(args)
    runs = [common.make_run(ctx, "electra", size, common.fraction_label(f) if len(args.size) == 1
                            else f"{common.fraction_label(f)}-{size}", generator_fraction=f)
            for size in args.size for f in args.fractions]

    return common.run_experiment(ctx, NAME, runs, "last+init", markdown, plot, argv)


def markdown(results: dict, runs, tasks: list[str]) -> str:
    """The table: per generator size, smallest G first, its random weights (update 0) and then its
    final snapshot."""
    rows = results["rows"]
    blimp = any("blimp" in r for r in rows)  # with --blimp-dir
    sizes = list(dict.fromkeys(r["size"] for r in rows))
    # rows come in --fractions order; the table reads top to bottom as Figure 3 reads left to
    # right (a stable sort: random weights stay before their run's snapshot)
    table_rows = sorted(rows, key=lambda r: (sizes.index(r["size"]), r["generator_fraction"]))
    header = (["generator / discriminator", "G hidden", "size", "update", "pre-train FLOPs"]
              + common.protocol_headers(tasks, blimp, GAIN_TASK))
    lines = []
    for r in table_rows:
        line = [r["label"], f"{r['generator_hidden']}", r["size"]]
        line += ["0 (random weights)" if r["random"] else f"{r['step']:,}", f"{r['flops']:.2e}"]
        line += common.protocol_cells(r, rows, tasks, blimp, GAIN_TASK, STAT)
        lines.append(line)
    return (f"# Generator size, discriminator fixed (Sec. 3.2, Figure 3 left)\n\n"
            f"{common.settings_line(results, runs, STAT)}\n" + common.markdown_table(header, lines))


def plot(plt, rows: list[dict], tasks: list[str]):
    """Dev score vs generator size (log2 axis), one line per task (whiskers: lowest to highest
    seed) and, with two tasks or more, one for their mean; each size's random weights as hollow
    markers on a dotted line in the same colour, the zero point pre-training has to beat. With
    BLiMP, a second panel: D's summed score and the MLM's PLL, pre-trained and random weights."""
    blimp = any("blimp" in r for r in rows)
    fig, axes = plt.subplots(1, 2 if blimp else 1, figsize=(12 if blimp else 6.5, 4), squeeze=False)
    ax = axes[0, 0]
    for size in dict.fromkeys(r["size"] for r in rows):
        for random in (False, True):
            mine = [r for r in rows if r["size"] == size and r["random"] == random]
            # left to right, whatever order --fractions gave the runs in
            mine.sort(key=lambda r: r["generator_fraction"])
            style = {"ls": ":", "mfc": "none"} if random else {"ls": "-"}
            kind = "random weights" if random else "pre-trained"
            for i, task in enumerate(tasks):
                have = [r for r in mine if task in r["tasks"]]
                if have:
                    mean, err = common.error_bars(have, task, STAT)
                    x = [r["generator_fraction"] for r in have]
                    ax.errorbar(x, mean, yerr=err, marker="o", capsize=3, color=f"C{i}",
                                label=f"{common.task_header(task)} ({size}, {kind})", **style)
            have = [r for r in mine if "score_mean" in r]
            if len(tasks) > 1 and have:  # with one task the mean is that task's line
                x = [r["generator_fraction"] for r in have]
                ax.plot(x, [r["score_mean"] for r in have], marker="s", color="k",
                        ls=":" if random else "--", mfc="none" if random else "k",
                        label=f"mean of tasks ({size}, {kind})")
            if blimp:
                have = [r for r in mine if "blimp" in r]
                x = [r["generator_fraction"] for r in have]
                for score, colour in (("d_sum", "C3"), ("mlm_pll", "C2")):
                    title = evaluate.SCORE_TITLES[score]
                    axes[0, 1].plot(x, [r["blimp"][score] for r in have], marker="o",
                                    color=colour, label=f"{title} ({size}, {kind})", **style)
    fractions = sorted({r["generator_fraction"] for r in rows})
    for a in axes[0]:
        a.set_xscale("log", base=2)
        a.set_xticks(fractions, [common.fraction_label(f) for f in fractions])
        a.set_xlabel("generator size / discriminator size (hidden)")
    ax.set_title("Generator size at equal pre-training FLOPs")
    common.score_axes(ax, STAT)
    if blimp:
        common.blimp_axes(axes[0, 1])
        axes[0, 1].legend(fontsize=8)
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    main()
