"""Experiment 1: ELECTRA vs BERT at equal pre-training compute (paper Sec. 3.3, Figure 1, Table 1).

Both objectives get the same FLOPs budget (so BERT, cheaper per update, gets more updates), are
snapshotted --checkpoints times along the way, and every snapshot is fine-tuned on the GLUE tasks,
as is each objective's random initialisation (update 0, the weights its run starts from; ELECTRA's
and BERT's differ): what pre-training adds is measured against the zero point of its own
objective. The paper's claim: at any compute, the ELECTRA discriminator fine-tunes better than the
BERT encoder (Figure 1: GLUE score vs pre-train FLOPs; Table 1: ELECTRA-Small 79.9 vs BERT-Small
75.1).

The transfer protocol, on a laptop: one vocab for every run; SST-2 at 20,000 training rows, 1 epoch,
3 seeds, and MRPC at full size; every snapshot also scored zero-shot on BLiMP (200 pairs per
paradigm):

    python experiments/electra_vs_bert.py --data runs/tapt --vocab runs/vocab-tapt/vocab.txt \\
        --size tiny --flops 5.7e13 --checkpoints 4 --glue-dir ../shared/data/glue \\
        --tasks sst2,mrpc --seeds 3 --ft-examples sst2=20000 --ft-epochs sst2=1 --ft-lr 1e-3 \\
        --blimp-dir ../shared/data/blimp

Cells are the mean over seeds with the [min-max] spread (the protocol's; the paper reports medians,
which results.json keeps beside the means). Writes --out/results.json, electra_vs_bert.md (a table:
objective, update, FLOPs, each task's mean [min-max], the mean of the task means, BLiMP's D sum,
D mean and MLM PLL (ELECTRA: its generator's), D's context AUC at that update, and SST-2's gain
over the objective's random weights) and electra_vs_bert.png (score vs FLOPs, one panel per task,
one for the mean and one for BLiMP). Run it again to continue after an interruption: nothing
finished is redone.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments import common

NAME = "electra_vs_bert"
OBJECTIVES = (("electra", "ELECTRA"), ("bert", "BERT"))  # (train.py --objective, label)
TASKS = "sst2,mrpc,stsb"  # the three GLUE tasks in ../shared/data/glue
STAT = "mean"  # the mean over seeds beside its spread (the paper reports the median)
GAIN_TASK = "sst2"  # the transfer check: SST-2's gain over the objective's random weights
BLIMP_CHANCE = 0.5  # a minimal pair has two sentences: guessing is right half the time


def parse_args(argv=None) -> argparse.Namespace:
    p = common.arg_parser(__doc__, TASKS)
    p.add_argument("--ft-checkpoints", default=None,
                   help="fine-tune only these snapshots, 1-based and comma-separated, e.g. 1,3 of "
                        "--checkpoints 3 (default: all); the others are still saved, for a later "
                        "run to fine-tune")
    args = common.parse(p, argv, NAME)
    try:
        args.ft_checkpoints = ([int(i) for i in args.ft_checkpoints.split(",") if i]
                               if args.ft_checkpoints else None)
    except ValueError:
        p.error(f"--ft-checkpoints {args.ft_checkpoints}: expected snapshot numbers such as 1,3")
    return args


def main(argv=None) -> dict:
    """Run (or continue) the experiment; returns the results dict with its summary "rows"."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    ctx = common.setup(args)
    runs = [common.make_run(ctx, obj, size, label if len(args.size) == 1 else f"{label}-{size}")
            for size in args.size for obj, label in OBJECTIVES]

    return common.run_experiment(ctx, NAME, runs, "all+init", markdown, plot, argv,
                                 args.ft_checkpoints)


def markdown(results: dict, runs, tasks: list[str]) -> str:
    """The table: a line per snapshot, each objective's random weights (update 0) first."""
    rows = results["rows"]
    blimp = any("blimp" in r for r in rows)
    header = (["objective", "update", "pre-train FLOPs"]
              + common.protocol_headers(tasks, blimp, GAIN_TASK))
    lines = []
    for r in rows:
        line = [r["label"], "0 (random weights)" if r["random"] else f"{r['step']:,}",
                f"{r['flops']:.2e}"]
        line += common.protocol_cells(r, rows, tasks, blimp, GAIN_TASK, STAT)
        lines.append(line)
    return (f"# ELECTRA vs BERT at equal pre-training compute\n\n"
            f"{common.settings_line(results, runs, STAT)}\n" + common.markdown_table(header, lines))


def plot(plt, rows: list[dict], tasks: list[str]):
    """Figure 1 on our scale: a panel per task, one for the mean of the tasks and, with BLiMP, one
    for BLiMP. Score against pre-training FLOPs, a line per objective (its colour in every panel),
    whiskers from the lowest to the highest seed; its random weights (update 0) a dashed
    horizontal line in its colour, the zero point pre-training has to beat, over a band from
    their lowest to their highest seed."""
    blimp = any("blimp" in r for r in rows)
    panels = tasks + ["mean"] + (["blimp"] if blimp else [])
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.6), squeeze=False)
    labels = list(dict.fromkeys(r["label"] for r in rows))
    for ax, panel in zip(axes[0], panels):
        for i, label in enumerate(labels):
            mine = [r for r in rows if r["label"] == label and not r["random"]]
            zero = [r for r in rows if r["label"] == label and r["random"]]
            if panel == "blimp":
                blimp_lines(ax, mine, zero, label, f"C{i}")
            elif panel == "mean":
                have = [r for r in mine if "score_mean" in r]
                ax.plot([r["flops"] for r in have], [r["score_mean"] for r in have], "o-",
                        color=f"C{i}", label=label)
                for r in (z for z in zero if "score_mean" in z):
                    ax.axhline(r["score_mean"], color=f"C{i}", ls="--", label=f"{label}, random")
            else:
                have = [r for r in mine if panel in r["tasks"]]
                if have:
                    mean, err = common.error_bars(have, panel, STAT)
                    ax.errorbar([r["flops"] for r in have], mean, yerr=err, fmt="o-", capsize=3,
                                color=f"C{i}", label=label)
                for r in (z for z in zero if panel in z["tasks"]):
                    ax.axhline(r["tasks"][panel][STAT], color=f"C{i}", ls="--",
                               label=f"{label}, random")
                    # its seeds' spread: a gain has to clear this band to be more than noise
                    ax.axhspan(r["tasks"][panel]["min"], r["tasks"][panel]["max"], color=f"C{i}",
                               alpha=0.1, lw=0)
        ax.set_xlabel("pre-training FLOPs")
        ax.set_xlim(left=0)  # where the random weights are: the dashed lines start there
        if panel == "blimp":
            ax.axhline(BLIMP_CHANCE, color="0.6", lw=1, label="chance")
            ax.set_title("BLiMP, zero-shot")
            ax.set_ylabel("accuracy")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
            continue
        ax.set_title(common.task_header(panel) if panel != "mean" else "mean of the tasks")
        common.score_axes(ax, STAT)
    fig.tight_layout()
    return fig


def blimp_lines(ax, mine: list[dict], zero: list[dict], label: str, color: str) -> None:
    """One objective's BLiMP lines: D sum (ELECTRA) and the masked LM's PLL (ELECTRA's G, BERT's
    MLM), each with its random weights as a dashed line in the objective's colour."""
    mlm = "MLM" if any(r["objective"] == "bert" for r in mine + zero) else "G"
    for score, name, style in (("d_sum", "D sum", "o-"), ("mlm_pll", f"{mlm} PLL", "s:")):
        have = [r for r in mine if score in r.get("blimp", {})]
        if have:
            ax.plot([r["flops"] for r in have], [r["blimp"][score] for r in have], style,
                    color=color, label=f"{label} {name}")
        for r in (z for z in zero if score in z.get("blimp", {})):
            ax.axhline(r["blimp"][score], color=color, ls="--" if score == "d_sum" else "-.",
                       label=f"{label} {name}, random")


if __name__ == "__main__":
    main()
