"""The paper's weight-sharing comparison (Sec. 3.2) on a laptop: G as large as D, with nothing
tied, the embeddings tied (ELECTRA's choice), every weight tied, or DeBERTa-v3's
gradient-disentangled embeddings (gdes), each run fine-tuned on STS-B beside random weights of the
same config and vocab. The paper, on GLUE: 83.6, 84.3, 84.4 (gdes is not the paper's).

    python experiments/weight_sharing.py              # runs what is missing, then the table
    python experiments/weight_sharing.py --dry-run    # prints the commands, runs none
    python experiments/weight_sharing.py --modes none embeddings gdes --out runs/gdes
                                                      # DeBERTa-v3's comparison, its own folder

Per pre-training seed s and mode M, one run of train.py (the tiny preset, G as large as D):

    --size tiny --sharing M --set generator_fraction=1 --steps N --seed s

N = 1,091 by default: the tiny preset's 15 minutes of FLOPs (1,800 updates with G at a quarter
of D) spent with G as large as D; the modes cost the same per update. Each run's last
snapshot is fine-tuned by sst2_check.py as figure1.py does (its machinery runs this one), beside
the run's random-weights twin, its update 0.

Everything stays under --out (default runs/weight_sharing); run it again to continue:

    vocab.txt, sharing-none-s0/, sharing-embeddings-s0/, sharing-all-s0/, sharing-gdes-s0/
                                           (with stepN/ snapshots)
    stsb/                                  sst2_check.py's jobs and table
    weight_sharing.png, .md                the figure and the table, pooled over seeds
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from experiments import figure1  # noqa: E402 (after the path)
from experiments import training_algorithms as ta  # noqa: E402

NAME = "weight_sharing"
MODES = ("none", "embeddings", "all", "gdes")  # electra.SHARING
PAPER_GLUE = {"none": 83.6, "embeddings": 84.3, "all": 84.4}  # Sec. 3.2, G the size of D


@dataclass(frozen=True)
class FinalRun(figure1.Run):
    """A run fine-tuned at its end only."""

    def stops(self) -> list[int]:
        """
        >>> FinalRun("electra", 0, 1091, 100).stops()
        [1091]
        """
        return [self.steps]


def same_size_steps(steps: int) -> int:
    """Updates with G as large as D at the FLOPs of `steps` updates of the tiny preset.

    >>> same_size_steps(1800)
    1091
    """
    from support.report import flops_per_step

    budget = steps * flops_per_step(ta.tiny_config(), ta.BATCH, ta.SEQ)
    return round(budget / flops_per_step(ta.tiny_config(generator_fraction=1.0), ta.BATCH, ta.SEQ))


def plan(seed: int, steps: int, modes=MODES) -> list[figure1.Run]:
    """The seed's runs, one per mode.

    >>> [(r.name, r.steps, r.flags[1]) for r in plan(0, 1800)][0]
    ('sharing-none-s0', 1091, 'none')
    """
    n = same_size_steps(steps)
    return [FinalRun(figure1.ELECTRA, seed, n, figure1.ELECTRA_WARMUP, label=f"sharing-{mode}",
                     flags=("--sharing", mode, "--set", "generator_fraction=1"))
            for mode in modes]


def parameters(mode: str) -> int:
    """Distinct parameters of the tiny preset with G as large as D under `mode`
    (electra.count_params: a tied tensor counts once)."""
    from electra import Electra, count_params

    return count_params(Electra(ta.tiny_config(sharing=mode, generator_fraction=1.0)))


def curves(out: Path, seeds, steps: int, modes=MODES) -> dict:
    """Per mode: random weights' and the final snapshot's scores, every seed's jobs pooled; G's
    held-out MLM accuracy at the end, per seed."""
    every = [r for seed in seeds for r in plan(seed, steps, modes)]
    rows = ta.stsb_rows(out, [figure1.snapshot(out, r, r.steps) for r in every])
    result = {}
    for mode in modes:
        folders = [figure1.snapshot(out, r, r.steps) for r in every if r.flags[1] == mode]
        mine = [rows[str(f)] for f in folders]
        result[mode] = {"random": [s for row in mine for s in row["random"]["scores"]],
                        "g_acc": [ta.g_accuracy(f) for f in folders],
                        "trained": [s for row in mine for s in row["pretrained"]["scores"]],
                        "steps": every[0].steps,
                        "flops": every[0].steps * figure1.flops_per_update(
                            figure1.snapshot(out, every[0], every[0].steps))}
    return result


def markdown(result: dict, seeds) -> str:
    """One row per mode: parameters, STS-B mean [min-max] pre-trained and of random weights, G's
    MLM accuracy per seed, the pre-trained read against ELECTRA's choice (figure1.verdict), the
    paper's GLUE."""
    base = figure1.cell(result["embeddings"]["trained"])
    jobs = len(result["embeddings"]["trained"])
    any_mode = result["embeddings"]
    lines = [f"STS-B dev Spearman (x100): mean [min-max] of {jobs} jobs, pre-training seeds "
             f"{' '.join(map(str, seeds))} x their fine-tuning seeds; {any_mode['steps']:,} "
             f"updates, {any_mode['flops']:.2e} pre-training FLOPs\n",
             "| sharing | parameters | STS-B | random weights "
             "| G's held-out MLM accuracy, per seed | against embeddings | paper, GLUE |",
             "|---|---:|---|---|---|---|---:|"]
    for mode, data in result.items():
        t, r = figure1.cell(data["trained"]), figure1.cell(data["random"])
        versus = "" if mode == "embeddings" else figure1.verdict(t, base)
        acc = ta.per_seed(data["g_acc"])
        lines.append(f"| {mode} | {parameters(mode):,} | {t[0]:.2f} [{t[1]:.2f}-{t[2]:.2f}] "
                     f"| {r[0]:.2f} [{r[1]:.2f}-{r[2]:.2f}] | {acc} | {versus} "
                     f"| {PAPER_GLUE.get(mode, '-')} |")
    return "\n".join(lines) + "\n"


def figure(result: dict, seeds):
    """Per mode, pre-trained and random weights' STS-B (bars: min-max of the jobs)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    for x, data in enumerate(result.values()):
        for key, style in (("trained", {}), ("random", {"mfc": "none"})):
            c = figure1.cell(data[key])
            ax.errorbar([x], [c[0]], yerr=[[c[0] - c[1]], [c[2] - c[0]]], fmt="o", capsize=3,
                        color="C0" if key == "trained" else "C7", **style)
    ax.set_xticks(range(len(result)), [f"sharing {m}" for m in result])
    ax.set_ylabel("STS-B dev Spearman (x100)")
    ax.set_title(f"Weight sharing, G as large as D: seeds {', '.join(map(str, seeds))}; "
                 f"hollow: random weights", fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def main(argv=None) -> str | None:
    args = ta.parse_args(argv, __doc__, NAME, "the tiny preset's updates whose FLOPs every run "
                                              "spends (default %(default)s, 15 minutes)",
                         modes=MODES)
    if not args.draw_only:
        figure1.orchestrate(args, lambda seed: plan(seed, args.steps, args.modes))
    if args.dry_run:
        return None
    table = ta.draw(Path(args.out), args.seeds, args.steps, NAME,
                    lambda out, seeds, steps: curves(out, seeds, steps, args.modes), markdown,
                    figure)
    print(table, end="")
    print(f"wrote {Path(args.out) / NAME}.png and .md")
    return table


if __name__ == "__main__":
    main()
