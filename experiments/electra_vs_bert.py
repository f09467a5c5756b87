"""Experiment 1: ELECTRA vs BERT at equal pre-training compute (paper Sec. 3.3, Figure 1, Table 1).

Both objectives get the same FLOPs budget (so BERT, cheaper per update, gets more updates), are
snapshotted --checkpoints times along the way, and every snapshot is fine-tuned on the GLUE tasks, as
is the random initialisation (step 0, "no pre-training"): what pre-training adds is measured against it.
The paper's claim: at any compute, the ELECTRA discriminator fine-tunes better than the BERT encoder
(Figure 1: GLUE score vs pre-train FLOPs; Table 1: ELECTRA-Small 79.9 vs BERT-Small 75.1).

    python experiments/electra_vs_bert.py --data ../shared/data/corpus --flops 5e12 --size tiny \\
        --glue-dir ../shared/data/glue --seeds 3 --ft-examples 500

Writes --out/results.json, electra_vs_bert.md (a table: objective, snapshot step, FLOPs, each task's
median (min-max) over seeds, the mean of the medians) and electra_vs_bert.png (score vs FLOPs, one panel
per task). Run it again to continue after an interruption.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments import common  # noqa: E402

NAME = "electra_vs_bert"
OBJECTIVES = (("electra", "ELECTRA"), ("bert", "BERT"))  # (train.py --objective, label)
TASKS = "sst2,mrpc,stsb"  # the three GLUE tasks in ../shared/data/glue


def parse_args(argv=None) -> argparse.Namespace:
    p = common.arg_parser(__doc__, TASKS)
    p.add_argument("--ft-checkpoints", default=None,
                   help="fine-tune only these snapshots, 1-based and comma-separated, e.g. 1,3 of --checkpoints "
                        "3 (default: all); the others are still saved, for a later run to fine-tune")
    args = common.parse(p, argv, NAME)
    try:
        args.ft_checkpoints = [int(i) for i in args.ft_checkpoints.split(",") if i] if args.ft_checkpoints else None
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

    return common.run_experiment(ctx, NAME, runs, "all+init", markdown, plot, argv, args.ft_checkpoints)


def markdown(results: dict, runs, tasks: list[str]) -> str:
    lines = [[r["label"], f"{r['step']:,}", f"{r['flops']:.2e}"] + [common.cell(r, t) for t in tasks]
             + [f"{r['score']:.1f}" if "score" in r else "-"] for r in results["rows"]]
    header = ["objective", "update", "pre-train FLOPs"] + [common.task_header(t) for t in tasks] + ["mean"]
    return (f"# ELECTRA vs BERT at equal pre-training compute\n\n{common.settings_line(results, runs)}\n"
            + common.markdown_table(header, lines))


def plot(plt, rows: list[dict], tasks: list[str]):
    """One panel per task and one for the mean: dev score vs pre-training FLOPs, a line per objective,
    error bars from the lowest to the highest seed; a dashed line for the random initialisation."""
    panels = tasks + ["mean"]
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.6), squeeze=False)
    init = [r for r in rows if r["label"] == common.INIT_LABEL]
    rows = [r for r in rows if r["label"] != common.INIT_LABEL]
    labels = list(dict.fromkeys(r["label"] for r in rows))
    for ax, panel in zip(axes[0], panels):
        base = [r["score"] if panel == "mean" else r["tasks"][panel]["median"] for r in init
                if (panel == "mean" and "score" in r) or panel in r["tasks"]]
        if base:
            ax.axhline(base[0], color="0.5", ls="--", label=common.INIT_LABEL)
        for i, label in enumerate(labels):
            mine = [r for r in rows if r["label"] == label]
            if panel == "mean":
                have = [r for r in mine if "score" in r]
                ax.plot([r["flops"] for r in have], [r["score"] for r in have], "o-", color=f"C{i}", label=label)
                continue
            have = [r for r in mine if panel in r["tasks"]]
            med, err = common.error_bars(have, panel)
            if len(have):
                ax.errorbar([r["flops"] for r in have], med, yerr=err, fmt="o-", capsize=3, color=f"C{i}",
                            label=label)
        ax.set_title(common.task_header(panel) if panel != "mean" else "mean of the task medians")
        ax.set_xlabel("pre-training FLOPs")
        common.score_axes(ax)
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    main()
