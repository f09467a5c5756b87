"""The paper's Figure 3 (right) on a laptop: ELECTRA's joint training against two-stage and
adversarial training (Sec. 3.2, Appendix F), BERT beside them, at equal pre-training FLOPs, each
snapshot fine-tuned on STS-B beside random weights of the same config and vocab.

    python experiments/training_algorithms.py              # runs what is missing, then the table
    python experiments/training_algorithms.py --dry-run    # prints the commands, runs none

Per pre-training seed s, four runs of train.py on the same corpus and vocab (the tiny preset):

    joint        --size tiny --steps 1800 --seed s                (ELECTRA, figure1.py's run)
    BERT         --objective bert, its updates at joint's FLOPs   (figure1.py's run)
    adversarial  --algorithm adversarial, joint's updates (the same FLOPs per update)
    two-stage    --algorithm two-stage --sharing none --set generator_fraction=1: G as large as
                 D (D starts from G's weights), its updates at joint's FLOPs (two_stage_flops)

--steps 1800 is the tiny preset's 15 minutes; --steps 10800 the hour of figure1.py. The runs stop
at the quarters of their schedule and each stop is fine-tuned on STS-B by sst2_check.py, as
figure1.py does (its machinery runs this one), beside the run's random-weights twin; two-stage's
snapshots start at its switch, where D has just been given G's weights (before it, D is still its
random initialisation). The table also gives G's held-out MLM accuracy at the end, joint against
adversarial (the paper, with a G of hidden size 256: 65% against 58%).

Time per seed on 2 cores: four pre-training runs (about 32 minutes) and 19 snapshots and twins to
fine-tune on STS-B (15 snapshots, 4 twins), about 1.5 minutes each per fine-tuning seed: about an
hour with --finetune-seeds 0, about 2 hours with the default three.

Everything stays under --out (default runs/training_algorithms); run it again to continue:

    vocab.txt, electra-s0/, bert-s0/, adversarial-s0/, two-stage-s0/ (with stepN/ snapshots)
    stsb/                                  sst2_check.py's jobs and table
    training_algorithms.png, .md           the figure and the table, pooled over seeds
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from dataclasses import replace as dc_replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from experiments import figure1  # noqa: E402 (after the path)

NAME = "training_algorithms"
STEPS = 1_800  # the tiny preset's 15 minutes (train.RECIPES["tiny"]), where joint training pays
SEEDS = (0, 1, 2)
SEQ, BATCH = 128, 32  # the tiny preset's (train.RECIPES["tiny"])
SAME_SIZE = ("--sharing", "none", "--set", "generator_fraction=1")  # G as large as D, untied
TWO_STAGE = "two-stage"
ADVERSARIAL = "adversarial"
LABELS = {figure1.ELECTRA: "joint (ELECTRA)", figure1.BERT: "BERT", ADVERSARIAL: "adversarial",
          TWO_STAGE: "two-stage"}


@dataclass(frozen=True)
class TwoStageRun(figure1.Run):
    """A two-stage run: snapshots at its switch (D given G's weights) and in stage 2."""

    def stops(self) -> list[int]:
        """The switch (train.stage_switch: half the updates), then the last two quarters.

        >>> TwoStageRun("electra", 0, 1000, 100).stops()
        [500, 750, 1000]
        """
        return [self.steps // 2, round(self.steps * 3 / 4), self.steps]


def tiny_config(**fields):
    """The tiny preset's ElectraConfig as train.py builds it on the books: the 8,192-token vocab
    and as many predictions as its mask rate makes of 128 tokens, with `fields` changed."""
    import train
    from electra import get_config

    config = get_config("tiny", **fields)
    return dc_replace(config, max_predictions=train.max_predictions(config.mask_prob, SEQ))


def two_stage_flops(config, steps: int, step: int) -> float:
    """Pre-training FLOPs of the first `step` updates of a two-stage run of `steps` (G and D of
    one shape), as the paper's procedure spends them, in support.report.flops_per_step's counting
    (a backward pass costs twice its forward, so a forward is a third of forward and backward):

        stage 1, per update: G forward and backward  = flops_per_step of a masked LM of D's
                                                       config (G's shape: the two are one shape)
        stage 2, per update: G forward (the samples) and D forward and backward
                           = (stage 1) / 3 + (a joint step of these shapes - stage 1)

    Our loop also runs D forward in stage 1 (for its metrics) and keeps G's graph in stage 2;
    neither is part of the procedure, so neither is counted."""
    from support.report import flops_per_step

    stage1 = flops_per_step(dc_replace(config, objective="bert"), BATCH, SEQ)
    stage2 = stage1 / 3 + flops_per_step(config, BATCH, SEQ) - stage1
    switch = steps // 2  # train.stage_switch
    return stage1 * min(step, switch) + stage2 * max(0, step - switch)


def two_stage_steps(steps: int) -> int:
    """Two-stage's updates at the FLOPs of `steps` joint updates of the tiny preset.

    >>> two_stage_steps(1800)
    1838
    """
    from support.report import flops_per_step

    budget = steps * flops_per_step(tiny_config(), BATCH, SEQ)
    same = tiny_config(sharing="none", algorithm=TWO_STAGE, generator_fraction=1.0)
    per_pair = two_stage_flops(same, 2, 2)  # one update of each stage
    return 2 * round(budget / per_pair)


def plan(seed: int, steps: int) -> list[figure1.Run]:
    """The seed's runs: joint and BERT (figure1.py's), adversarial, two-stage.

    >>> [(r.name, r.steps) for r in plan(0, 1800)]
    [('electra-s0', 1800), ('bert-s0', 1951), ('adversarial-s0', 1800), ('two-stage-s0', 1838)]
    """
    joint, bert = figure1.runs([seed], steps)
    adversarial = dc_replace(joint, label=ADVERSARIAL, flags=("--algorithm", ADVERSARIAL))
    two_stage = TwoStageRun(figure1.ELECTRA, seed, two_stage_steps(steps), joint.warmup,
                            label=TWO_STAGE, flags=("--algorithm", TWO_STAGE, *SAME_SIZE))
    return [joint, bert, adversarial, two_stage]


# -----------------------------------------------------------------------------
# The table and the figure, read back from sst2_check.py's stsb_check.json


def kind(run: figure1.Run) -> str:
    """The LABELS key of a run."""
    return run.label or run.objective


def stsb_rows(out: Path, inits: list[Path]) -> dict:
    """sst2_check.py's rows of `inits`, by init folder; one line naming what is missing."""
    table = out / "stsb" / "stsb_check.json"
    if not table.is_file():
        raise SystemExit(f"{table} is not there yet: run this without --draw-only first")
    rows = {row["init"]: row for row in json.loads(table.read_text())["rows"]}
    missing = [str(i) for i in inits if str(i) not in rows]
    if missing:
        raise SystemExit(f"{table} has no row for {', '.join(missing)}: run this again without "
                         f"--draw-only to fine-tune them")
    return rows


def update_flops(run: figure1.Run, folder: Path, step: int) -> float:
    """Pre-training FLOPs of `run` up to update `step` (its snapshot in `folder`)."""
    if kind(run) != TWO_STAGE:
        return step * figure1.flops_per_update(folder)
    import torch

    from electra import ElectraConfig

    saved = torch.load(folder / "ckpt.pt", map_location="cpu", weights_only=True)
    return two_stage_flops(ElectraConfig(**saved["model_config"]), run.steps, step)


def g_accuracy(folder: Path) -> float | None:
    """G's held-out MLM accuracy at the last evaluation in the snapshot's metrics.jsonl."""
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()
            if line.strip()]
    accs = [r["gen_acc"] for r in rows if r.get("split") == "eval" and "gen_acc" in r]
    return accs[-1] if accs else None


def per_seed(accs: list) -> str:
    """G's accuracies, one per seed, for a table cell ("-" where a run has none).

    >>> per_seed([0.2141, None])
    '0.214 / -'
    """
    return " / ".join("-" if a is None else f"{a:.3f}" for a in accs)


def curves(out: Path, seeds, steps: int) -> dict:
    """Per algorithm: "points", from update 0 (the random twins) to its last stop, each
    {"flops", "scores"} with every seed's fine-tuning jobs pooled; "g_acc", G's held-out MLM
    accuracy at the end, per seed."""
    every = [r for seed in seeds for r in plan(seed, steps)]
    rows = stsb_rows(out, [figure1.snapshot(out, r, s) for r in every for s in r.stops()])
    result = {}
    for name in LABELS:
        mine = [r for r in every if kind(r) == name]
        firsts = [rows[str(figure1.snapshot(out, r, r.stops()[0]))] for r in mine]
        points = [{"flops": 0.0, "scores": [s for row in firsts for s in row["random"]["scores"]]}]
        for q, step in enumerate(mine[0].stops()):
            inits = [figure1.snapshot(out, r, r.stops()[q]) for r in mine]
            points.append({"flops": update_flops(mine[0], inits[0], step), "step": step,
                           "scores": [s for i in inits for s in rows[str(i)]["pretrained"]
                                      ["scores"]]})
        last = [figure1.snapshot(out, r, r.stops()[-1]) for r in mine]
        result[name] = {"points": points, "g_acc": [g_accuracy(f) for f in last]}
    return result


def markdown(result: dict, seeds) -> str:
    """Per algorithm, its random weights and each snapshot: updates, FLOPs, STS-B mean
    [min-max]; the last snapshot read against joint's (figure1.verdict); G's MLM accuracy."""
    jobs = len(result[figure1.ELECTRA]["points"][0]["scores"])
    joint_end = figure1.cell(result[figure1.ELECTRA]["points"][-1]["scores"])
    lines = [f"STS-B dev Spearman (x100): mean [min-max] of {jobs} jobs, pre-training seeds "
             f"{' '.join(map(str, seeds))} x their fine-tuning seeds. Two-stage's G is as large "
             f"as D with nothing tied (D starts from G's weights); the others' G is a quarter of "
             f"D with the embeddings tied (ELECTRA's)\n",
             "| algorithm | update | pre-training FLOPs | STS-B | at the end, against joint "
             "| G's held-out MLM accuracy at the end, per seed |",
             "|---|---:|---:|---|---|---|"]
    for name, data in result.items():
        for i, p in enumerate(data["points"]):
            c = figure1.cell(p["scores"])
            end = i == len(data["points"]) - 1
            versus = (figure1.verdict(c, joint_end) if end and name != figure1.ELECTRA else "")
            acc = per_seed(data["g_acc"]) if end and name != figure1.BERT else ""
            update = f"{p['step']:,}" if i else "0 (random weights)"
            lines.append(f"| {LABELS[name]} | {update} | {p['flops']:.2e} "
                         f"| {c[0]:.2f} [{c[1]:.2f}-{c[2]:.2f}] | {versus} | {acc} |")
    return "\n".join(lines) + "\n"


def figure(result: dict, seeds):
    """STS-B against pre-training FLOPs, one line per algorithm (bars: min-max of the jobs),
    random weights as hollow markers at 0."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5))
    ax = fig.subplots()
    for i, (name, data) in enumerate(result.items()):
        cells = [figure1.cell(p["scores"]) for p in data["points"]]
        x = [p["flops"] for p in data["points"]]
        ax.errorbar(x[1:], [c[0] for c in cells[1:]],
                    yerr=[[c[0] - c[1] for c in cells[1:]], [c[2] - c[0] for c in cells[1:]]],
                    fmt="o-", capsize=3, color=f"C{i}", label=LABELS[name])
        ax.errorbar([0], [cells[0][0]], yerr=[[cells[0][0] - cells[0][1]],
                                              [cells[0][2] - cells[0][0]]],
                    fmt="o", mfc="none", capsize=3, color=f"C{i}")
    ax.set_xlabel("pre-training FLOPs (support.report.flops_per_step)")
    ax.set_ylabel("STS-B dev Spearman (x100)")
    ax.set_title(f"Figure 3 (right) on a laptop: seeds {', '.join(map(str, seeds))}; hollow: "
                 f"random weights; bars: min-max", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def draw(out: Path, seeds, steps: int, name: str, curves_fn, markdown_fn, figure_fn) -> str:
    """out/{name}.png and .md from the fine-tuning table; returns the table."""
    from support.plumbing import atomic_write

    result = curves_fn(out, seeds, steps)
    table = markdown_fn(result, seeds)
    fig = figure_fn(result, seeds)
    atomic_write(out / f"{name}.png", lambda path: fig.savefig(path, dpi=120, format="png"))
    atomic_write(out / f"{name}.md", table)
    return table


def parse_args(argv, doc: str, name: str, steps_help: str, modes=()) -> argparse.Namespace:
    """figure1.py's flags, with this experiment's defaults; --modes where `modes` are given (the
    table reads every mode against ELECTRA's, embeddings, so it must be among them)."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--data", default="books",
                   help="the corpus: 'books' or a .txt file or folder (default %(default)s)")
    p.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS),
                   help="pre-training seeds (default %(default)s)")
    p.add_argument("--finetune-seeds", type=int, nargs="+", default=list(figure1.FINETUNE_SEEDS),
                   help="fine-tuning seeds of every snapshot and twin (default %(default)s)")
    p.add_argument("--out", default=f"runs/{name}",
                   help="runs, snapshots, fine-tuning jobs, the figure and table "
                        "(default %(default)s)")
    p.add_argument("--stsb-dir", default=None,
                   help="GLUE's STS-B folder; default: finetune.py downloads it")
    p.add_argument("--steps", type=int, default=STEPS, help=steps_help)
    p.add_argument("--dry-run", action="store_true", help="print the commands, run none")
    p.add_argument("--draw-only", action="store_true",
                   help="only draw the figure and table from the jobs done")
    if modes:
        p.add_argument("--modes", nargs="+", choices=modes, default=list(modes),
                       help="the --sharing modes to compare (default %(default)s)")
    args = p.parse_args(argv)
    if modes and "embeddings" not in args.modes:
        p.error("--modes: include embeddings, ELECTRA's choice, which the table reads against")
    if args.steps < figure1.QUARTERS:
        p.error(f"--steps {args.steps}: give at least {figure1.QUARTERS}")
    return args


def main(argv=None) -> str | None:
    args = parse_args(argv, __doc__, NAME, "joint's updates; the others' at its FLOPs (default "
                                           "%(default)s, the 15-minute preset)")
    if not args.draw_only:
        figure1.orchestrate(args, lambda seed: plan(seed, args.steps))
    if args.dry_run:
        return None
    table = draw(Path(args.out), args.seeds, args.steps, NAME, curves, markdown, figure)
    print(table, end="")
    print(f"wrote {Path(args.out) / NAME}.png and .md")
    return table


if __name__ == "__main__":
    main()
