"""Experiment 2: where ELECTRA's gain comes from (paper Sec. 3.5, Table 5), at equal pre-training
compute.

    ELECTRA         replaced token detection on every input token
    ELECTRA 15%     the same, but L_Disc only on the 15% of positions that were masked
    Replace MLM     BERT's MLM on inputs whose masked tokens were replaced by generator samples
    All-Tokens MLM  Replace MLM predicting every token, with ELECTRA's copy mechanism
    BERT            the masked-LM baseline

Paper (Table 5, Base size, GLUE score): ELECTRA 85.0, All-Tokens MLM 84.3, Replace MLM 82.4,
ELECTRA 15% 82.4, BERT 82.2 -- most of the gain comes from learning from all tokens.

On STS-B at the 15-minute budget, as experiments/README.md shows it (--runs-dir shared with
electra_vs_bert.py and generator_size.py reuses their ELECTRA and BERT runs):

    python experiments/ablations.py --data books --size tiny --flops 5.6765e13 --checkpoints 4 \\
        --tasks stsb --seeds 3 --ft-epochs stsb=3 --ft-lr 1e-3 --ft-head-first-epochs 1

Each run gets the same FLOPs budget; its final snapshot is fine-tuned, and so are its random
weights (update 0), the zero point pre-training has to beat. Writes
--out/results.json, ablations.md and ablations.png (a point per objective and task, min-max over
seeds). Run it again to continue after an interruption; runs shared with electra_vs_bert.py (same
--runs-dir) are reused.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments import common
from support import evaluate

NAME = "ablations"
OBJECTIVES = (("electra", "ELECTRA"), ("all_tokens_mlm", "All-Tokens MLM"),
              ("replace_mlm", "Replace MLM"), ("electra_15", "ELECTRA 15%"),
              ("bert", "BERT"))  # Table 5's order
PAPER_GLUE = {"electra": 85.0, "all_tokens_mlm": 84.3, "replace_mlm": 82.4, "electra_15": 82.4,
              "bert": 82.2}  # Table 5, GLUE dev score of Base-sized models
TASKS = "sst2,mrpc,stsb"
GAIN_TASK = "sst2"  # the transfer check: SST-2's gain over the run's own random weights
STAT = "mean"  # the mean over seeds beside its spread (the paper reports the median)


def parse_args(argv=None) -> argparse.Namespace:
    p = common.arg_parser(__doc__, TASKS)
    p.add_argument("--objectives", default=",".join(o for o, _ in OBJECTIVES),
                   help="comma-separated subset of the objectives to compare")
    return common.parse(p, argv, NAME)


def main(argv=None) -> dict:
    """Run (or continue) the experiment; returns the results dict with its summary "rows"."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    labels = dict(OBJECTIVES)
    chosen = [o for o in args.objectives.split(",") if o]
    unknown = [o for o in chosen if o not in labels]
    if unknown or not chosen:
        raise SystemExit(f"--objectives {args.objectives}: choose from {', '.join(labels)}")
    ctx = common.setup(args)
    runs = [common.make_run(ctx, obj, size,
                            labels[obj] if len(args.size) == 1 else f"{labels[obj]}-{size}")
            for size in args.size for obj, _ in OBJECTIVES if obj in chosen]

    return common.run_experiment(ctx, NAME, runs, "last+init", markdown, plot, argv)


def markdown(results: dict, runs, tasks: list[str]) -> str:
    """The table: per objective, its random weights (update 0) and then its final snapshot."""
    rows = results["rows"]
    blimp = any("blimp" in r for r in rows)  # with --blimp-dir
    header = (["objective", "update", "pre-train FLOPs", "paper GLUE (Table 5, Base)"]
              + common.protocol_headers(tasks, blimp, GAIN_TASK))
    lines = []
    for r in rows:
        line = [r["label"], "0 (random weights)" if r["random"] else f"{r['step']:,}"]
        line += [f"{r['flops']:.2e}"]
        line += ["" if r["random"] else f"{PAPER_GLUE[r['objective']]:.1f}"]
        line += common.protocol_cells(r, rows, tasks, blimp, GAIN_TASK, STAT)
        lines.append(line)
    return (f"# Efficiency ablations (Sec. 3.5) at equal pre-training compute\n\n"
            f"{common.settings_line(results, runs, STAT)}\n" + common.markdown_table(header, lines))


def plot(plt, rows: list[dict], tasks: list[str]):
    """One group per task (and, with two tasks or more, their mean): a point per objective at its
    mean over seeds, whiskers from the lowest to the highest seed, its random weights a hollow
    point beside it. Points rather than bars, so that small gaps and negative correlations show.
    With BLiMP, a second panel: D's summed score and the MLM's PLL per objective, the same way."""
    groups = tasks + (["mean"] if len(tasks) > 1 else [])
    blimp = any("blimp" in r for r in rows)
    scores = ("d_sum", "mlm_pll")  # D's sum and the MLM's PLL: the two the protocol compares
    labels = list(dict.fromkeys(r["label"] for r in rows))
    width = 0.8 / max(1, 2 * len(labels))
    fig, axes = plt.subplots(1, 2 if blimp else 1,
                             figsize=(2.4 * len(groups) + (8 if blimp else 3), 4),
                             squeeze=False, width_ratios=[len(groups), 2] if blimp else None)
    ax, ax_blimp = axes[0, 0], (axes[0, 1] if blimp else None)
    for i, label in enumerate(labels):
        for random in (True, False):
            mine = [r for r in rows if r["label"] == label and r["random"] == random]
            if not mine:
                continue
            row = mine[0]
            slot = 2 * i + (0 if random else 1)  # the random weights left of the pre-trained
            offset = (slot - (2 * len(labels) - 1) / 2) * width
            have = [row["tasks"].get(t) for t in tasks]
            mean = [t[STAT] if t else np.nan for t in have]
            lo = [t[STAT] - t["min"] if t else 0 for t in have]
            hi = [t["max"] - t[STAT] if t else 0 for t in have]
            if len(groups) > len(tasks):  # the mean of tasks, without whiskers
                mean.append(row.get("score_mean", np.nan))
                lo.append(0)
                hi.append(0)
            style = {"color": f"C{i}", "mfc": "none" if random else f"C{i}"}
            ax.errorbar(np.arange(len(groups)) + offset, mean, yerr=[lo, hi], fmt="o", capsize=3,
                        label=f"{label}, random weights" if random else label, **style)
            if blimp:
                have = [row.get("blimp", {}).get(s, np.nan) for s in scores]
                ax_blimp.plot(np.arange(len(scores)) + offset, have, "o", **style)
    ax.set_xticks(np.arange(len(groups)), [common.task_header(t) for t in tasks]
                  + (["mean of tasks"] if len(groups) > len(tasks) else []))
    for edge in np.arange(len(groups) - 1) + 0.5:
        ax.axvline(edge, color="0.8", lw=0.8)
    ax.set_ylabel(f"dev score ({STAT} over seeds)")
    fig.suptitle("Sec. 3.5 ablations at equal pre-training FLOPs (hollow: random weights)")
    ax.set_title("fine-tuned")
    ax.grid(alpha=0.3, axis="y")
    if blimp:
        ax_blimp.set_xticks(np.arange(len(scores)), [evaluate.SCORE_TITLES[s] for s in scores])
        ax_blimp.axvline(0.5, color="0.8", lw=0.8)
        common.blimp_axes(ax_blimp)
    axes[0, -1].legend(*ax.get_legend_handles_labels(), fontsize=8, loc="center left",
                       bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    main()
