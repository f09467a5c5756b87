"""D's context AUC against updates, several pre-training runs in one picture: does the rise one
run shows belong to its preset, or to its seed? (experiments/README.md, "What the discriminator
learns")

The context AUC is D's held-out AUC against G's samples drawn at the paper's temperature 1
(report.evaluate_heldout), logged in each run's metrics.jsonl at every held-out evaluation. One
line a run; the dashed line is the target the CPU search set, 0.65. For each run the script
prints the last value and the first update where the curve reached --rise (0.6 unless told):

    python experiments/context_curves.py runs/v4096-10800 runs/v4096-10800s1 \
        runs/v4096-10800s2 --out context.png

--label names the runs in the legend and the printout, one per run in their order (default: the
run folder's name, or the metrics file's).

A run is a train.py run folder or a metrics.jsonl file (experiments/results/transfer keeps
copies of the runs' metrics.jsonl).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the core files are flat modules at the repo's top level

from support.report import read_metrics

TARGET = 0.65  # the CPU search's target: context AUC >= 0.65 on held-out text
RISE = 0.6  # the level whose first crossing dates the rise


def context_curve(run: Path) -> tuple[list[int], list[float]]:
    """The held-out rows' updates and context AUCs of `run` (a run folder or its metrics.jsonl).
    A segment redone after a resume logs its updates again: the last row of an update counts."""
    path = run / "metrics.jsonl" if run.is_dir() else run
    rows = read_metrics(path)
    if not rows:
        raise SystemExit(f"{path}: no metrics rows; give a train.py run folder or its "
                         f"metrics.jsonl")
    curve = {r["step"]: r["context_auc"] for r in rows
             if r.get("split") == "eval" and "context_auc" in r}
    steps = sorted(curve)
    return steps, [curve[s] for s in steps]


def run_name(run: Path) -> str:
    """The legend's name of `run`: a run folder's name, or that of the folder holding its
    metrics.jsonl; a copy of metrics.jsonl by its own name.

    >>> run_name(Path("runs/v4096-10800")), run_name(Path("runs/v4096-10800/metrics.jsonl"))
    ('v4096-10800', 'v4096-10800')
    >>> run_name(Path("hours1-metrics.jsonl"))
    'hours1-metrics'
    """
    if run.name == "metrics.jsonl":
        return run.parent.name
    return run.stem if run.suffix == ".jsonl" else run.name


def first_at(steps: list[int], values: list[float], level: float) -> int | None:
    """The first update whose value is `level` or more (None: never).

    >>> first_at([300, 600, 900], [0.55, 0.61, 0.58], 0.6)
    600
    >>> first_at([300, 600], [0.55, 0.58], 0.6) is None
    True
    """
    return next((s for s, v in zip(steps, values) if v >= level), None)


def line_style(i: int, colours: int) -> str:
    """The format of the i-th run's line: matplotlib's colours repeat after `colours` lines, so
    each further `colours` runs get another dash pattern and no two runs look alike.

    >>> line_style(0, 10), line_style(9, 10), line_style(10, 10), line_style(20, 10)
    ('o-', 'o-', 'o--', 'o:')
    """
    dashes = ("-", "--", ":", "-.")
    return "o" + dashes[i // colours % len(dashes)]


def plot(runs: list[Path], png: Path, rise: float = RISE,
         labels: list[str] | None = None) -> list[dict]:
    """The figure, written to `png`; returns each run's last value and the update of its rise.
    `labels`: the runs' names (default: run_name of each)."""
    import matplotlib
    from matplotlib.figure import Figure

    names = labels if labels is not None else [run_name(run) for run in runs]
    fig = Figure(figsize=(8, 5))
    ax = fig.subplots()
    summary = []
    colours = len(matplotlib.rcParams["axes.prop_cycle"])  # 10 by default
    for i, (run, name) in enumerate(zip(runs, names, strict=True)):  # a label per run
        steps, values = context_curve(run)
        ax.plot(steps, values, line_style(i, colours), ms=2.5, label=name)
        summary.append({"run": name, "last_step": steps[-1], "last": values[-1],
                        "rise": first_at(steps, values, rise)})
    ax.axhline(TARGET, color="C2", ls="--", lw=1, label=f"target: {TARGET:g}")
    ax.axhline(0.5, color="black", lw=0.8)
    ax.set_xlabel("update")
    ax.set_ylabel("context AUC (held out, G sampling at temperature 1)")
    ax.set_title("D's context AUC during pre-training (0.5: D cannot tell G's samples apart)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=120)
    return summary


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path,
                        help="train.py run folders or metrics.jsonl files")
    parser.add_argument("--out", type=Path, required=True, help="the PNG to write")
    parser.add_argument("--rise", type=float, default=RISE,
                        help="the level whose first crossing is printed (default: %(default)s)")
    parser.add_argument("--label", action="append", dest="labels", metavar="NAME",
                        help="the name of a run in the legend, one per run in their order")
    args = parser.parse_args(argv)
    if args.labels is not None and len(args.labels) != len(args.runs):
        raise SystemExit(f"{len(args.labels)} --label for {len(args.runs)} runs: give one "
                         f"--label per run, in the runs' order, or none")
    summary = plot(args.runs, args.out, args.rise, args.labels)
    for s in summary:
        rise = f"update {s['rise']:,}" if s["rise"] is not None else "never"
        print(f"{s['run']:40} context AUC {s['last']:.3f} at update {s['last_step']:,}; "
              f"first >= {args.rise:g}: {rise}")
    print(f"wrote {args.out}")
    return summary


if __name__ == "__main__":
    main()
