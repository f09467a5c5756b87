"""The reference curves of a healthy ELECTRA-Small run, drawn from the runs measured on GPUs
(gpu_h100/metrics.jsonl, gpu_h200/metrics.jsonl: `python train.py --size small` compiled with CUDA
graphs, seed 0, logging every 50 updates and evaluating every 500):

    python bench/reference_curves.py      # writes bench/reference_curves.png, prints the table

The corpus is small (WikiText-2's validation and test splits and 13 Gutenberg books, 1.84M tokens,
bench/README.md), seen 136 times in the H100 run's 29,651 updates, 3% of the paper's 1M on far
less text: the held-out curves part from the training ones as the corpus is memorised. Put your
run over them with python -m support.report RUN --compare-to bench/gpu_h100/metrics.jsonl.
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from support import report  # noqa: E402

HERE = Path(__file__).resolve().parent
# (label, metrics): the shorter run first, drawn on top of the longer one it agrees with
RUNS = [("one H200, seed 0", HERE / "gpu_h200" / "metrics.jsonl"),
        ("one H100, seed 0", HERE / "gpu_h100" / "metrics.jsonl")]
TITLE = ("ELECTRA-Small (batch 128, seq 128) on 1.84M tokens (WikiText-2 valid/test + 13 Gutenberg "
         "books) seen 136 times in 29,651 updates:\n3% of the paper's 1M updates on far less text, "
         "so the held-out curves overfit. Not a reference for a long run on a large corpus.")
STEPS = (500, 1_000, 2_000, 5_000, 10_000, 20_000, 29_500)  # the table's updates (held-out at each)


def table(rows: list[dict], steps=STEPS) -> str:
    """The markdown table of a run's COMPARED quantities at `steps`: training / held-out (the
    context AUC is measured on held-out text only), with the times the corpus was seen."""
    train = {r["step"]: r for r in rows if r["split"] == "train"}
    held = {r["step"]: r for r in rows if r["split"] == "eval"}
    keys = list(report.COMPARED)
    names = ["L_MLM", "L_Disc", "G's accuracy", "D's AUC"]
    lines = ["| update | epochs | " + " | ".join(f"{n} (train / held-out)" for n in names)
             + " | D's context AUC (held-out) |",
             "|---:|---:|" + "---:|" * len(keys)]
    for step in steps:
        t, h = train[step], held[step]
        cells = [f"{t[k]:.3f} / {h[k]:.3f}" for k in keys[:-1]] + [f"{h['context_auc']:.3f}"]
        lines.append(f"| {step:,} | {t['epoch']:.0f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(png: Path = HERE / "reference_curves.png") -> str:
    """Draw the figure into `png` and return the table (of the H100 run, the longer one)."""
    runs = [(label, report.read_metrics(path)) for label, path in RUNS]
    report.comparison_figure(runs, TITLE).savefig(png, dpi=100)
    return table(runs[-1][1])


if __name__ == "__main__":
    print(main())
