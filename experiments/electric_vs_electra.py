"""Electric (electric.py) against ELECTRA and BERT at equal pre-training FLOPs on STS-B, with
figure1.py's protocol, and on BLiMP zero-shot: Electric's one-pass energy score against the masked
LMs' pseudo-log-likelihood, accuracy and seconds per pair.

    python experiments/electric_vs_electra.py             # runs what is missing, then table, figure
    python experiments/electric_vs_electra.py --seeds 0   # one pre-training seed instead of three
    python experiments/electric_vs_electra.py --dry-run   # prints the commands, runs none

Per pre-training seed s, figure1.py's ELECTRA and BERT runs (the same commands and folders: with
the same --out, runs figure1.py made are reused, not redone) and Electric's:

    python train.py --size tiny --objective electric --steps 6408 --warmup 59 --eval-interval 300 \
        --seed s

Electric's update costs 1.69x ELECTRA's (support.report.flops_per_step: both towers of the noise
model and its softmax at all 128 positions), so 6,408 updates cost ELECTRA's 10,800, and its
warm-up is ELECTRA's 100 scaled the same way. Every quarter's snapshot, and each run's random
twin, is fine-tuned on STS-B by sst2_check.py as figure1.py does (jobs already done are reused).
Then each run's last snapshot and its random twin (support.evaluate --random --seed s: the weights
the run started from) are scored on BLiMP, 200 pairs per paradigm:

    python -m support.evaluate blimp --init RUN/stepN --out OUT/blimp/RUN [--random --seed s]

which gives ELECTRA's D sum and its generator's PLL, BERT's PLL and Electric's energy sum, each
with its seconds per pair.

`--reference RESULTS` takes ELECTRA's and BERT's cells from a comparison already made at the same
FLOPs and protocol instead of running them again (an electra_vs_bert.py results.json pooled over
its seeds, such as experiments/results/figure1-stsb/seeds012/results.json, the 15-minute budget
of `--steps 1800`): only Electric is trained and fine-tuned, and the seconds per pair of
ELECTRA's and BERT's BLiMP scores, which that file does not hold, are measured on fresh weights
of their configs (a forward pass costs the same whatever the weights):

    python -m support.evaluate blimp --random --size tiny --objective O --vocab OUT/vocab.txt

Everything stays under --out (default runs/figure1, figure1.py's); a second invocation runs only
what is missing. It writes electric.md (the STS-B table at each quarter's FLOPs and the BLiMP
table, means over pre-training seeds with [min-max]) and electric.png (STS-B against FLOPs; BLiMP
accuracy against seconds per pair).
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the core files are flat modules at the repo's top level

from experiments import figure1
from experiments.figure1 import BERT, ELECTRA, Run, cell, flops_per_update, snapshot

ELECTRIC = "electric"
# Electric's updates at ELECTRA's FLOPs: 5.315e10 against 3.154e10 FLOPs per update
# (support.report.flops_per_step of the tiny preset, 8,192-token vocab, batch 32 x 128)
ELECTRIC_PER_ELECTRA = 6_408 / 10_800
LABELS = {ELECTRA: "ELECTRA", BERT: "BERT", ELECTRIC: "Electric"}
COLOURS = {ELECTRA: "C0", BERT: "C1", ELECTRIC: "C2"}
# the BLiMP scores of each objective's run (support.evaluate.SCORES): D's summed log D and G's
# PLL for ELECTRA, the masked LM's PLL for BERT, the energy sum for Electric
BLIMP_SCORES = {ELECTRA: ("d_sum", "mlm_pll"), BERT: ("mlm_pll",), ELECTRIC: ("electric",)}
BLIMP_NAMES = {"d_sum": "D sum, one pass", "mlm_pll": "PLL, a pass per token",
               "electric": "sum of -E, one pass"}


def runs(seeds, steps: int = figure1.ELECTRA_STEPS) -> list[Run]:
    """Per seed, figure1.py's ELECTRA and BERT runs, then Electric's at the same FLOPs.

    >>> [(r.name, r.steps, r.warmup) for r in runs([0])]
    [('electra-s0', 10800, 100), ('bert-s0', 11707, 108), ('electric-s0', 6408, 59)]
    """
    warmup = round(figure1.ELECTRA_WARMUP * ELECTRIC_PER_ELECTRA)
    return [run for seed in seeds
            for run in (*figure1.runs([seed], steps),
                        Run(ELECTRIC, seed, round(steps * ELECTRIC_PER_ELECTRA), warmup))]


def blimp_command(run: Run, out: Path, blimp_dir: str | None, random: bool) -> list[str]:
    """support.evaluate's command line: BLiMP of `run`'s last snapshot, or of its random twin."""
    command = [sys.executable, "-m", "support.evaluate", "blimp",
               "--init", str(snapshot(out, run, run.stops()[-1])),
               "--out", str(out / "blimp" / run.name)]
    command += ["--data-dir", blimp_dir] if blimp_dir else []
    return command + (["--random", "--seed", str(run.seed)] if random else [])


def timing_command(objective: str, out: Path, blimp_dir: str | None) -> list[str]:
    """support.evaluate's command line: BLiMP on fresh weights of `objective`'s tiny model, for
    the seconds per pair of a score whose accuracy comes from --reference."""
    command = [sys.executable, "-m", "support.evaluate", "blimp", "--random", "--size", "tiny",
               "--objective", objective, "--vocab", str(out / "vocab.txt"),
               "--out", str(out / "blimp" / f"timing-{objective}")]
    return command + (["--data-dir", blimp_dir] if blimp_dir else [])


def timing_file(out: Path, objective: str) -> Path:
    """Where support.evaluate writes the results of timing_command."""
    return out / "blimp" / f"timing-{objective}" / "blimp-random-seed0.json"


def blimp_file(out: Path, run: Run, random: bool) -> Path:
    """Where support.evaluate writes the results of blimp_command."""
    name = f"blimp-random-seed{run.seed}.json" if random else "blimp.json"
    return out / "blimp" / run.name / name


def execute(command: list[str], dry: bool) -> None:
    """figure1.execute for a script; a module (-m) is printed and run as such, from the root."""
    if command[1] != "-m":
        return figure1.execute(command, dry)
    print(f"$ python {' '.join(command[1:])}", flush=True)
    if not dry and subprocess.run(command, cwd=ROOT).returncode != 0:
        raise SystemExit(f"{command[2]} failed (its error is above); fix that and run this again: "
                         f"what is done is kept")


def orchestrate(args: argparse.Namespace) -> None:
    """Every missing pre-training stop, STS-B job and BLiMP score, seed by seed."""
    out = Path(args.out)
    if not args.dry_run:
        out.mkdir(parents=True, exist_ok=True)
    shared = out / "vocab.txt"
    reference = args.reference is not None
    for i, run in enumerate(trained(args.seeds, args.steps, reference)):
        # the first run trains the vocab; every other run, and the first after its start, share it
        vocab = shared if shared.is_file() or i > 0 else None
        figure1.pretrain(run, out, args.data, vocab, args.dry_run)
        own = out / run.name / "vocab.txt"
        if not shared.is_file() and own.is_file():
            shutil.copyfile(own, shared)
        if run.objective != ELECTRIC:
            continue
        mine = trained([run.seed], args.steps, reference)  # the seed's runs are done
        inits = [snapshot(out, r, stop) for r in mine for stop in r.stops()]
        if not figure1.fine_tuned(out, inits, args.finetune_seeds):
            execute(figure1.stsb_command(inits, out, args.finetune_seeds, args.stsb_dir),
                    args.dry_run)
        for r in mine:
            for random in (False, True):
                if not blimp_file(out, r, random).is_file():
                    execute(blimp_command(r, out, args.blimp_dir, random), args.dry_run)
    for objective in (ELECTRA, BERT) if reference else ():
        if not timing_file(out, objective).is_file():
            execute(timing_command(objective, out, args.blimp_dir), args.dry_run)


def trained(seeds, steps: int, reference: bool) -> list[Run]:
    """The runs this invocation trains: all three objectives', or Electric's alone when
    --reference holds ELECTRA's and BERT's."""
    return [r for r in runs(seeds, steps) if not reference or r.objective == ELECTRIC]


def read_reference(path: Path, steps: int) -> tuple[dict, list[dict]]:
    """ELECTRA's and BERT's STS-B lines (stsb_points' form) and BLiMP accuracies (blimp_points'
    form, seconds still None) from an electra_vs_bert.py results.json whose ELECTRA ran `steps`
    updates; its BLiMP accuracies are the pooled means, one value per cell."""
    try:
        found = json.loads(path.read_text())
        rows, their = found["rows"], {r["objective"]: r["steps"] for r in found["runs"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"--reference {path}: not an electra_vs_bert.py results.json "
                         f"({type(e).__name__}: {e})") from None
    if their.get(ELECTRA) != steps:
        raise SystemExit(f"--reference {path}: its ELECTRA ran {their.get(ELECTRA)} updates, "
                         f"this comparison --steps {steps}; give the same budget")
    lines, blimp = {}, []
    for objective in (ELECTRA, BERT):
        mine = sorted((r for r in rows if r["objective"] == objective),
                      key=lambda r: (not r["random"], r["step"]))
        if len(mine) != figure1.QUARTERS + 1 or not mine[0]["random"]:
            raise SystemExit(f"--reference {path}: {LABELS[objective]} needs its random "
                             f"weights and {figure1.QUARTERS} snapshots, it has {len(mine)} rows")
        lines[objective] = [{"flops": r["flops"], "scores": r["tasks"]["stsb"]["seeds"]}
                            for r in mine]
        for score in BLIMP_SCORES[objective]:
            blimp.append({"objective": objective, "score": score,
                          "acc": [mine[-1]["blimp"][score]], "random": [mine[0]["blimp"][score]],
                          "seconds": None})
    return lines, blimp


# -----------------------------------------------------------------------------
# The tables and the figure, read back from stsb_check.json and the BLiMP results


def stsb_points(out: Path, seeds, steps: int, objectives=tuple(LABELS)) -> dict:
    """Per objective, [{"flops", "scores"}] from update 0 (the random twins) to the last quarter,
    every pre-training seed's fine-tuning jobs pooled (figure1.points, for three objectives)."""
    table = out / "stsb" / "stsb_check.json"
    if not table.is_file():
        raise SystemExit(f"{table} is not there yet: run this without --draw-only first")
    rows = {row["init"]: row for row in json.loads(table.read_text())["rows"]}
    every = [snapshot(out, r, stop) for r in runs(seeds, steps) for stop in r.stops()
             if r.objective in objectives]
    missing = [str(i) for i in every if str(i) not in rows]
    if missing:
        raise SystemExit(f"{table} has no row for {', '.join(missing)}: run this again without "
                         f"--draw-only to fine-tune them")
    result = {}
    for objective in objectives:
        mine = [r for r in runs(seeds, steps) if r.objective == objective]
        firsts = [rows[str(snapshot(out, r, r.stops()[0]))] for r in mine]
        line = [{"flops": 0.0, "scores": [s for row in firsts for s in row["random"]["scores"]]}]
        for q in range(figure1.QUARTERS):
            inits = [snapshot(out, r, r.stops()[q]) for r in mine]
            line.append({"flops": mine[0].stops()[q] * flops_per_update(inits[0]),
                         "scores": [s for i in inits for s in rows[str(i)]["pretrained"]
                                    ["scores"]]})
        result[objective] = line
    return result


def blimp_points(out: Path, seeds, steps: int, objectives=tuple(LABELS)) -> list[dict]:
    """Per objective and score: the accuracies and seconds per pair of every seed's last
    snapshot, and its random twins' accuracies."""
    found = []
    for objective in objectives:
        scores = BLIMP_SCORES[objective]
        mine = [r for r in runs(seeds, steps) if r.objective == objective]
        files = [blimp_file(out, r, random) for r in mine for random in (False, True)]
        if not all(f.is_file() for f in files):
            raise SystemExit(f"BLiMP results missing under {out / 'blimp'}: run this again "
                             f"without --draw-only")
        trained = [json.loads(blimp_file(out, r, False).read_text()) for r in mine]
        twins = [json.loads(blimp_file(out, r, True).read_text()) for r in mine]
        for score in scores:
            found.append({"objective": objective, "score": score,
                          "acc": [t["overall"][score] for t in trained],
                          "random": [t["overall"][score] for t in twins],
                          "seconds": [t["seconds_per_pair"][score] for t in trained]})
    return found


def spread(values: list[float], scale: float = 1.0, digits: int = 2) -> str:
    """mean [min-max] of `values` times `scale`.

    >>> spread([0.5, 0.6, 0.7], 100, 1)
    '60.0 [50.0-70.0]'
    """
    mean, low, high = cell([v * scale for v in values])
    return f"{mean:.{digits}f} [{low:.{digits}f}-{high:.{digits}f}]"


def markdown(lines: dict, blimp: list[dict], seeds, reference: str | None = None) -> str:
    """The STS-B table (each quarter's FLOPs, 0: random weights) and the BLiMP table."""
    jobs = len(lines[ELECTRIC][0]["scores"])
    head = (f"STS-B dev Spearman (x100): mean [min-max] of {jobs} jobs, pre-training seeds "
            f"{' '.join(map(str, seeds))} x their fine-tuning seeds\n\n")
    if reference:
        head += (f"ELECTRA and BERT: {reference} ({len(lines[ELECTRA][0]['scores'])} jobs per "
                 f"cell); their BLiMP accuracies are its pooled means, their seconds per pair "
                 f"measured on fresh weights of their configs\n\n")
    head += (
             "| ELECTRA's FLOPs | ELECTRA | BERT | Electric |\n|---:|---|---|---|\n")
    rows = []
    for points in zip(*(lines[o] for o in LABELS)):
        flops = f"{points[0]['flops']:.2e}" if points[0]["flops"] else "0 (random weights)"
        rows.append(f"| {flops} | " + " | ".join(spread(p["scores"]) for p in points) + " |\n")
    blimp_head = (f"\nBLiMP accuracy (x100, 200 pairs per paradigm) of each run's last snapshot "
                  f"and its random weights, mean [min-max] over pre-training seeds "
                  f"{' '.join(map(str, seeds))}\n\n"
                  "| model | score | trained | random weights | ms per pair |\n"
                  "|---|---|---|---|---:|\n")
    blimp_rows = [f"| {LABELS[b['objective']]} | {BLIMP_NAMES[b['score']]} | "
                  f"{spread(b['acc'], 100, 1)} | {spread(b['random'], 100, 1)} | "
                  f"{1000 * sum(b['seconds']) / len(b['seconds']):.1f} |\n" for b in blimp]
    return head + "".join(rows) + blimp_head + "".join(blimp_rows)


def figure(lines: dict, blimp: list[dict], seeds):
    """STS-B against FLOPs (figure1.figure's, three objectives), and BLiMP accuracy against
    seconds per pair (log scale), a point per score with its seeds' min-max."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.5))
    ax, bx = fig.subplots(1, 2)
    for objective, line in lines.items():
        colour = COLOURS[objective]
        trained = [cell(p["scores"]) for p in line[1:]]
        ax.errorbar([p["flops"] for p in line[1:]], [c[0] for c in trained],
                    yerr=[[c[0] - c[1] for c in trained], [c[2] - c[0] for c in trained]],
                    fmt="o-", capsize=3, color=colour, label=LABELS[objective])
        mean, low, high = cell(line[0]["scores"])
        ax.axhline(mean, color=colour, ls="--", lw=1, label=f"{LABELS[objective]}: random")
        ax.axhspan(low, high, color=colour, alpha=0.1, lw=0)
    ax.set_xlim(left=0)
    ax.set_xlabel("pre-training FLOPs (support.report.flops_per_step)")
    ax.set_ylabel("STS-B dev Spearman (x100)")
    ax.set_title(f"STS-B, pre-training seeds {', '.join(map(str, seeds))}", fontsize=10)
    for b in blimp:
        acc = cell([100 * a for a in b["acc"]])
        seconds = sum(b["seconds"]) / len(b["seconds"])
        bx.errorbar([seconds], [acc[0]], yerr=[[acc[0] - acc[1]], [acc[2] - acc[0]]], fmt="o",
                    capsize=3, color=COLOURS[b["objective"]],
                    label=f"{LABELS[b['objective']]}: {BLIMP_NAMES[b['score']]}")
    bx.axhline(50, color="0.6", lw=1, label="chance")
    bx.set_xscale("log")
    bx.set_xlabel("seconds per pair")
    bx.set_ylabel("BLiMP accuracy (x100)")
    bx.set_title("BLiMP zero-shot: accuracy against time", fontsize=10)
    for a in (ax, bx):
        a.grid(alpha=0.3)
        a.legend(fontsize=7)
    fig.tight_layout()
    return fig


def draw(out: Path, seeds, steps: int, reference: str | None = None) -> str:
    """out/electric.png and out/electric.md; returns the tables."""
    from support.plumbing import atomic_write

    if reference is None:
        lines, blimp = stsb_points(out, seeds, steps), blimp_points(out, seeds, steps)
    else:
        lines, blimp = read_reference(Path(reference), steps)
        for b in blimp:
            if not timing_file(out, b["objective"]).is_file():
                raise SystemExit(f"{timing_file(out, b['objective'])} is not there yet: run "
                                 f"this without --draw-only first")
            timed = json.loads(timing_file(out, b["objective"]).read_text())
            b["seconds"] = [timed["seconds_per_pair"][b["score"]]]
        lines |= stsb_points(out, seeds, steps, (ELECTRIC,))
        blimp += blimp_points(out, seeds, steps, (ELECTRIC,))
    table = markdown(lines, blimp, seeds, reference)
    fig = figure(lines, blimp, seeds)
    atomic_write(out / "electric.png", lambda path: fig.savefig(path, dpi=120, format="png"))
    atomic_write(out / "electric.md", table)
    return table


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="books",
                   help="the corpus: 'books' (figure1.py's) or a .txt file or folder of your own "
                        "(default %(default)s)")
    p.add_argument("--seeds", type=int, nargs="+", default=list(figure1.SEEDS),
                   help="pre-training seeds, each an ELECTRA, a BERT and an Electric run "
                        "(default %(default)s)")
    p.add_argument("--finetune-seeds", type=int, nargs="+", default=list(figure1.FINETUNE_SEEDS),
                   help="fine-tuning seeds of every snapshot and twin (default %(default)s)")
    p.add_argument("--out", default="runs/figure1",
                   help="runs, snapshots, jobs, electric.png and .md; figure1.py's folder, whose "
                        "runs are reused (default %(default)s)")
    p.add_argument("--stsb-dir", default=None,
                   help="GLUE's STS-B folder (default: finetune.py downloads it)")
    p.add_argument("--blimp-dir", default=None,
                   help="BLiMP's data folder (default: support.evaluate downloads it)")
    p.add_argument("--steps", type=int, default=figure1.ELECTRA_STEPS,
                   help="ELECTRA's updates; BERT's and Electric's at the same FLOPs "
                        "(default %(default)s)")
    p.add_argument("--reference", default=None,
                   help="an electra_vs_bert.py results.json at the same FLOPs whose ELECTRA and "
                        "BERT cells are used instead of running them (default: run them)")
    p.add_argument("--dry-run", action="store_true", help="print the commands, run none")
    p.add_argument("--draw-only", action="store_true",
                   help="only draw the figure and tables from the jobs done")
    args = p.parse_args(argv)
    if args.steps < figure1.QUARTERS:
        p.error(f"--steps {args.steps}: give at least {figure1.QUARTERS}, one update per quarter")
    return args


def main(argv=None) -> str | None:
    args = parse_args(argv)
    if args.reference is not None:
        read_reference(Path(args.reference), args.steps)  # a wrong file fails before any work
    if not args.draw_only:
        orchestrate(args)
    if args.dry_run:
        return None
    table = draw(Path(args.out), args.seeds, args.steps, args.reference)
    print(table, end="")
    print(f"wrote {Path(args.out) / 'electric.png'} and electric.md")
    return table


if __name__ == "__main__":
    main()
