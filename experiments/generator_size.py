"""Experiment 3: the generator's size, the discriminator fixed (paper Sec. 3.2, Figure 3 left).

The generator's hidden size (and its heads and FFN, as the official code derives them) is a fraction
of the discriminator's; every run gets the same FLOPs budget, so a bigger generator means fewer
updates. Paper: "models work best with generators 1/4-1/2 the size of the discriminator" (Figure 3,
left; a generator as large as the discriminator does worse, and also costs about twice the compute).

    python experiments/generator_size.py --data ../shared/data/corpus --flops 5e12 --size tiny \\
        --glue-dir ../shared/data/glue --seeds 3 --ft-examples 500 --fractions 1/8 1/4 1/2 1

Only each run's final snapshot is fine-tuned. Writes --out/results.json, generator_size.md and
generator_size.png (score vs generator size). Run it again to continue after an interruption; the
ELECTRA run of electra_vs_bert.py (the size preset's fraction, same --runs-dir) is reused.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments import common  # noqa: E402

NAME = "generator_size"
FRACTIONS = ("1/8", "1/4", "1/2", "1")  # Figure 3's range, as fractions of the discriminator's hidden size
TASKS = "sst2,mrpc,stsb"


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

    return common.run_experiment(ctx, NAME, runs, "last", markdown, plot, argv)


def markdown(results: dict, runs, tasks: list[str]) -> str:
    blimp = any("blimp" in r for r in results["rows"])  # with --blimp-dir
    lines = [[r["label"], f"{r['generator_hidden']}", r["size"], f"{r['steps']:,}", f"{r['flops']:.2e}"]
             + [common.cell(r, t) for t in tasks] + [f"{r['score']:.1f}" if "score" in r else "-"]
             + (common.blimp_cells(r) if blimp else []) for r in results["rows"]]
    header = (["generator / discriminator", "G hidden", "size", "updates", "pre-train FLOPs"]
              + [common.task_header(t) for t in tasks] + ["mean"]
              + (common.blimp_headers() if blimp else []))
    return (f"# Generator size, discriminator fixed (Sec. 3.2, Figure 3 left)\n\n"
            f"{common.settings_line(results, runs)}\n" + common.markdown_table(header, lines))


def plot(plt, rows: list[dict], tasks: list[str]):
    """Dev score vs generator size (log2 axis), one line per task and one for the mean, min-max bars."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for size in dict.fromkeys(r["size"] for r in rows):
        mine = [r for r in rows if r["size"] == size]
        for i, task in enumerate(tasks):
            have = [r for r in mine if task in r["tasks"]]
            if have:
                med, err = common.error_bars(have, task)
                ax.errorbar([r["generator_fraction"] for r in have], med, yerr=err, fmt="o-", capsize=3,
                            color=f"C{i}", label=f"{common.task_header(task)} ({size})")
        have = [r for r in mine if "score" in r]
        ax.plot([r["generator_fraction"] for r in have], [r["score"] for r in have], "s--", color="k",
                label=f"mean of medians ({size})")
    ax.set_xscale("log", base=2)
    fractions = sorted({r["generator_fraction"] for r in rows})
    ax.set_xticks(fractions, [common.fraction_label(f) for f in fractions])
    ax.set_xlabel("generator size / discriminator size (hidden)")
    ax.set_ylabel("dev score (median over seeds)")
    ax.set_title("Generator size at equal pre-training FLOPs")
    common.score_axes(ax)
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    main()
