"""Experiment 2: where ELECTRA's gain comes from (paper Sec. 3.5, Table 5), at equal pre-training compute.

    ELECTRA         replaced token detection on every input token
    ELECTRA 15%     the same, but L_Disc only on the 15% of positions that were masked
    Replace MLM     BERT's MLM on inputs whose masked tokens were replaced by generator samples
    All-Tokens MLM  Replace MLM predicting every token, with ELECTRA's copy mechanism
    BERT            the masked-LM baseline

Paper (Table 5, Base size, GLUE score): ELECTRA 85.0, All-Tokens MLM 84.3, Replace MLM 82.4,
ELECTRA 15% 82.4, BERT 82.2 -- most of the gain comes from learning from all tokens.

    python experiments/ablations.py --data ../shared/data/corpus --flops 5e12 --size tiny \\
        --glue-dir ../shared/data/glue --seeds 3 --ft-examples 500

Each run gets the same FLOPs budget and only its final snapshot is fine-tuned. Writes --out/results.json,
ablations.md and ablations.png (a point per objective and task, min-max over seeds). Run it again to
continue after an interruption; runs shared with electra_vs_bert.py (same --runs-dir) are reused.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments import common  # noqa: E402

NAME = "ablations"
OBJECTIVES = (("electra", "ELECTRA"), ("all_tokens_mlm", "All-Tokens MLM"), ("replace_mlm", "Replace MLM"),
              ("electra_15", "ELECTRA 15%"), ("bert", "BERT"))  # Table 5's order
PAPER_GLUE = {"electra": 85.0, "all_tokens_mlm": 84.3, "replace_mlm": 82.4, "electra_15": 82.4,
              "bert": 82.2}  # Table 5, GLUE dev score of Base-sized models
TASKS = "sst2,mrpc,stsb"


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
    runs = [common.make_run(ctx, obj, size, labels[obj] if len(args.size) == 1 else f"{labels[obj]}-{size}")
            for size in args.size for obj, _ in OBJECTIVES if obj in chosen]

    return common.run_experiment(ctx, NAME, runs, "last", markdown, plot, argv)


def markdown(results: dict, runs, tasks: list[str]) -> str:
    blimp = any("blimp" in r for r in results["rows"])  # with --blimp-dir
    lines = [[r["label"], f"{r['steps']:,}", f"{r['flops']:.2e}"] + [common.cell(r, t) for t in tasks]
             + [f"{r['score']:.1f}" if "score" in r else "-", f"{PAPER_GLUE[r['objective']]:.1f}"]
             + (common.blimp_cells(r) if blimp else []) for r in results["rows"]]
    header = (["objective", "updates", "pre-train FLOPs"] + [common.task_header(t) for t in tasks]
              + ["mean", "paper GLUE (Table 5, Base)"] + (common.blimp_headers() if blimp else []))
    return (f"# Efficiency ablations (Sec. 3.5) at equal pre-training compute\n\n"
            f"{common.settings_line(results, runs)}\n" + common.markdown_table(header, lines))


def plot(plt, rows: list[dict], tasks: list[str]):
    """One group per task (and the mean): a point per objective at its median, whiskers from the lowest
    to the highest seed. Points rather than bars, so that small gaps and negative correlations show."""
    groups = tasks + ["mean"]
    fig, ax = plt.subplots(figsize=(2.4 * len(groups) + 3, 4))
    width = 0.8 / max(1, len(rows))
    for i, r in enumerate(rows):
        x = np.arange(len(groups)) + (i - (len(rows) - 1) / 2) * width
        med = [r["tasks"][t]["median"] if t in r["tasks"] else np.nan for t in tasks] + [r.get("score", np.nan)]
        lo = [r["tasks"][t]["median"] - r["tasks"][t]["min"] if t in r["tasks"] else 0 for t in tasks] + [0]
        hi = [r["tasks"][t]["max"] - r["tasks"][t]["median"] if t in r["tasks"] else 0 for t in tasks] + [0]
        ax.errorbar(x, med, yerr=[lo, hi], fmt="o", capsize=3, label=r["label"], color=f"C{i}")
    ax.set_xticks(np.arange(len(groups)), [common.task_header(t) for t in tasks] + ["mean of medians"])
    for edge in np.arange(len(groups) - 1) + 0.5:
        ax.axvline(edge, color="0.8", lw=0.8)
    ax.set_ylabel("dev score (median over seeds)")
    ax.set_title("Sec. 3.5 ablations at equal pre-training FLOPs")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    main()
