"""The batch's loss as its sum (the official fine-tuning code, and finetune.py by default) or its
mean, each followed by clipping the gradient's global norm at 1.0:

    mean:  g = (1/B) sum_i grad l_i          sum:  g = sum_i grad l_i = B * g_mean
    clip:  g <- g * min(1, 1 / ||g||)

With a batch of B = 32 the summed gradient is 32 times larger before clipping, so clipping acts
on far more updates; Adam's normalisation undoes a constant scale, not one that changes from
update to update. This asks whether that moves the dev score: a pre-training run and its
random-weights twin are fine-tuned on each task under both reductions, every fine-tuning seed,
by experiments/sst2_check.py (its protocols: every MRPC and STS-B training pair, the first
20,000 SST-2 rows), and the table puts the two side by side:

    python train.py --size tiny --data books --out runs/tiny
    python experiments/loss_reduction.py --init runs/tiny --glue ../shared/data/glue

Each (task, reduction) is one sst2_check.py --out folder under --out; a second invocation reuses
every job done. The table (--report) gives per task and init the mean [min-max] over seeds under
each reduction, sum minus mean, on how many seeds the sum is the lower (a seed starts both
reductions from the same head and the same order of examples, so the pair shares its luck), and
the pre-trained run's gain over its twin under each.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the core files are flat modules at the repo's top level

from experiments import sst2_check  # noqa: E402 (after the path is set)
from support import plumbing  # noqa: E402

TASKS = {"mrpc": "MRPC", "stsb": "STS-B", "sst2": "SST-2"}  # sst2_check's task: GLUE's folder
REDUCTIONS = ("mean", "sum")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--init", required=True, metavar="RUN", help="a train.py run folder")
    p.add_argument("--glue", required=True, metavar="DIR",
                   help="GLUE's folders (MRPC/, STS-B/, SST-2/, each with train.tsv, dev.tsv)")
    p.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS))
    p.add_argument("--seeds", type=int, nargs="+", default=list(sst2_check.SEEDS))
    p.add_argument("--out", default="runs/loss_reduction", help="every job (default %(default)s)")
    p.add_argument("--report", default=None, metavar="MD",
                   help="the table (default: <--out>/loss_reduction.md)")
    return p.parse_args(argv)


def check(task: str, reduction: str, args: argparse.Namespace) -> dict:
    """sst2_check.py's row for --init on `task` with the batch's loss reduced by `reduction`."""
    argv = ["--init", args.init, "--task", task, "--data-dir", str(Path(args.glue) / TASKS[task]),
            "--out", str(Path(args.out) / f"{task}-{reduction}"),
            "--seeds", *map(str, args.seeds), "--loss-reduction", reduction]
    return sst2_check.main(argv)[0]


def cell(s: dict) -> str:
    return f"{s['mean']:.2f} [{s['min']:.2f}-{s['max']:.2f}]"


def lower(total: dict, mean: dict) -> str:
    """On how many seeds the sum's job scored below the mean's (the same seed, the same order).

    >>> lower({"scores": [24.0, 29.0, 26.0]}, {"scores": [26.0, 28.0, 30.0]})
    '2 of 3'
    """
    pairs = list(zip(total["scores"], mean["scores"], strict=True))
    return f"{sum(s < m for s, m in pairs)} of {len(pairs)}"


def table(rows: dict, args: argparse.Namespace) -> str:
    """One line per task: each init under mean and sum, their difference, and the gains."""
    lines = [f"Dev score (`sst2_check.py` protocol per task: MRPC accuracy, STS-B Spearman, SST-2 "
             f"accuracy, x100) of `{args.init}` and its random-weights twin, fine-tuning seeds "
             f"{' '.join(map(str, args.seeds))}: mean [min-max]; the batch's loss reduced by its "
             f"mean or its sum before clipping at 1.0.",
             "",
             "| task | pre-trained, mean | pre-trained, sum | sum - mean | sum lower on "
             "| twin, mean | twin, sum | sum - mean | sum lower on | gain over twin: mean / sum |",
             "|---|---|---|---:|---|---|---|---:|---|---|"]
    for task in args.tasks:
        mean, total = rows[task]["mean"], rows[task]["sum"]
        diffs = [total[k]["mean"] - mean[k]["mean"] for k in ("pretrained", "random")]
        lines.append(f"| {TASKS[task]} | {cell(mean['pretrained'])} | {cell(total['pretrained'])} "
                     f"| {diffs[0]:+.2f} | {lower(total['pretrained'], mean['pretrained'])} "
                     f"| {cell(mean['random'])} | {cell(total['random'])} | {diffs[1]:+.2f} "
                     f"| {lower(total['random'], mean['random'])} "
                     f"| {mean['gain']:+.2f} / {total['gain']:+.2f} |")
    return "\n".join(lines)


def main(argv=None) -> str:
    args = parse_args(argv)
    rows = {task: {r: check(task, r, args) for r in REDUCTIONS} for task in args.tasks}
    text = table(rows, args)
    out = Path(args.out)
    report = Path(args.report) if args.report else out / "loss_reduction.md"
    plumbing.atomic_write(report, text + "\n")
    plumbing.atomic_write(out / "loss_reduction.json", json.dumps(rows, indent=2))
    print(text)
    return text


if __name__ == "__main__":
    main()
