"""The paper's Figure 1 on a laptop: ELECTRA and BERT at equal pre-training FLOPs over the CPU
hour, each snapshot fine-tuned on STS-B beside random weights of the same config and vocab.

    python experiments/figure1.py                # runs what is missing, then the figure and table
    python experiments/figure1.py --seeds 0      # one pre-training seed instead of three
    python experiments/figure1.py --dry-run      # prints the commands, runs none

Per pre-training seed s, two runs of train.py on the same corpus and vocab:

    ELECTRA  --size tiny --steps 10800 --eval-interval 300 --seed s
    BERT     --size tiny --objective bert --steps 11707 --warmup 108 --eval-interval 300 --seed s

BERT's update is cheaper (no discriminator), so 11,707 of them cost the FLOPs of ELECTRA's
10,800 (3.41e14, support.report.flops_per_step), and its warm-up is ELECTRA's 100 scaled the same
way. Each run stops at the quarters of its schedule (`--stop-at`, then `--resume`: resuming is
exact) and each stop is copied to a snapshot folder. Every snapshot is fine-tuned on STS-B by
sst2_check.py (all 5,749 pairs, 3 epochs, lr 1e-3, the head alone for the first epoch,
fine-tuning seeds 0 1 2), beside the run's random-weights twin, its update 0. Both scripts are
called through their command lines, so each step is the command it prints.

The corpus is `--data books` (data.py): 12 books of NLTK's Gutenberg selection and WikiText-2's
valid and test splits, downloaded once, the text the numbers in experiments/README.md came from;
the first run trains the 8,192-token vocab on it and every run shares it. `--data PATH` takes
your own text instead.

Time on a 2-core CPU, from the recorded runs: ELECTRA's hour about 90 minutes of training loop,
BERT's 71-81, an STS-B job 3 to 3.5 minutes (30 per pre-training seed: 8 snapshots and 2 twins,
3 fine-tuning seeds each). One pre-training seed: about 4.5 hours; three: about 14.

Everything stays under --out (default runs/figure1); a second invocation runs only what is
missing, so an interrupted one is resumed by running it again:

    vocab.txt                     the shared vocab, copied from the first run
    electra-s0/                   train.py's run folder (ckpt.pt, metrics.jsonl, curves.png)
    electra-s0/step2700/ ...      the snapshots: ckpt.pt, vocab.txt, metrics.jsonl
    bert-s0/step2927/ ...         BERT's
    stsb/                         sst2_check.py's jobs, twins and table (stsb_check.json, .md)
    figure1.png, figure1.md       the figure and the table, pooled over pre-training seeds
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the core files are flat modules at the repo's top level
# torch, electra and matplotlib are imported where they are used, so that --help and a mistyped
# flag answer at once

SEEDS = (0, 1, 2)  # pre-training seeds of the shown figure
FINETUNE_SEEDS = (0, 1, 2)  # sst2_check.py's protocol
ELECTRA_STEPS = 10_800  # the tiny preset's 15-minute run stretched to the hour
ELECTRA_WARMUP = 100  # the tiny preset's warm-up (train.RECIPES["tiny"])
# BERT's updates at ELECTRA's FLOPs: 3.154e10 against 2.909e10 FLOPs per update
# (support.report.flops_per_step of the tiny preset, 8,192-token vocab, batch 32 x 128)
BERT_PER_ELECTRA = 11_707 / 10_800
EVAL_INTERVAL = 300  # held-out evaluation every 300 updates: 36 points over the hour
QUARTERS = 4
# md5 of the vocab train.py trains on `--data books`: the same corpus as the shown runs
BOOKS_VOCAB_MD5 = "c6881268ae74def219a6e73fd1d01855"
ELECTRA, BERT = "electra", "bert"
LABELS = {ELECTRA: "ELECTRA (tiny preset)", BERT: "BERT (the same preset, --objective bert)"}
COLOURS = {ELECTRA: "C0", BERT: "C1"}


@dataclass(frozen=True)
class Run:
    """One pre-training run: an objective at a seed, its updates and warm-up (and, for the other
    experiments that reuse this machinery, a label naming its folder and train.py flags)."""

    objective: str  # ELECTRA or BERT
    seed: int
    steps: int
    warmup: int
    label: str = ""  # the run's name before -s{seed}; "": the objective
    flags: tuple[str, ...] = ()  # more train.py flags, e.g. ("--algorithm", "adversarial")

    @property
    def name(self) -> str:
        return f"{self.label or self.objective}-s{self.seed}"

    def stops(self) -> list[int]:
        """The updates at the end of each quarter of the run.

        >>> Run(ELECTRA, 0, 10_800, 100).stops(), Run(BERT, 0, 11_707, 108).stops()
        ([2700, 5400, 8100, 10800], [2927, 5854, 8780, 11707])
        """
        return [round(self.steps * q / QUARTERS) for q in range(1, QUARTERS + 1)]


def runs(seeds, steps: int = ELECTRA_STEPS) -> list[Run]:
    """Per seed, ELECTRA's run for `steps` updates and BERT's at the same FLOPs, in that order.

    >>> [(r.name, r.steps, r.warmup) for r in runs([0])]
    [('electra-s0', 10800, 100), ('bert-s0', 11707, 108)]
    """
    bert_warmup = round(ELECTRA_WARMUP * BERT_PER_ELECTRA)
    return [run for seed in seeds
            for run in (Run(ELECTRA, seed, steps, ELECTRA_WARMUP),
                        Run(BERT, seed, round(steps * BERT_PER_ELECTRA), bert_warmup))]


def snapshot(out: Path, run: Run, step: int) -> Path:
    """Where the copy of `run` stopped at `step` is kept: what sst2_check.py fine-tunes and the
    table reads back (the one name both sides use)."""
    return out / run.name / f"step{step}"


def saved_step(folder: Path) -> int:
    """The update of folder/ckpt.pt; 0 when there is none."""
    ckpt = folder / "ckpt.pt"
    if not ckpt.is_file():
        return 0
    import torch

    return int(torch.load(ckpt, map_location="cpu", weights_only=True)["step"])


def train_command(run: Run, out: Path, data: str, vocab: Path | None, stop: int,
                  resume: bool) -> list[str]:
    """train.py's command line for `run` up to update `stop`."""
    command = [sys.executable, str(ROOT / "train.py"), "--size", "tiny", "--data", data,
               "--steps", str(run.steps), "--eval-interval", str(EVAL_INTERVAL),
               "--seed", str(run.seed), "--out", str(out / run.name), "--stop-at", str(stop)]
    if run.objective != ELECTRA:  # BERT, or electric_vs_electra.py's Electric
        command += ["--objective", run.objective, "--warmup", str(run.warmup)]
    command += run.flags
    if vocab is not None:
        command += ["--vocab", str(vocab)]
    return command + (["--resume"] if resume else [])


def stsb_command(inits: list[Path], out: Path, finetune_seeds, stsb_dir: str | None) -> list[str]:
    """sst2_check.py's command line: STS-B's protocol on `inits` and their random twins."""
    command = [sys.executable, str(ROOT / "experiments" / "sst2_check.py"), "--task", "stsb",
               *(arg for init in inits for arg in ("--init", str(init))),
               "--out", str(out / "stsb"), "--seeds", *map(str, finetune_seeds)]
    return command + (["--data-dir", stsb_dir] if stsb_dir else [])


def copy_snapshot(run_dir: Path, dest: Path) -> None:
    """ckpt.pt, vocab.txt and metrics.jsonl of `run_dir` to `dest`, through a temporary folder
    renamed at the end: a snapshot folder is complete or absent."""
    tmp = Path(tempfile.mkdtemp(prefix=dest.name + ".", suffix=".tmp", dir=run_dir))
    for name in ("ckpt.pt", "vocab.txt", "metrics.jsonl"):
        if (run_dir / name).is_file():
            shutil.copyfile(run_dir / name, tmp / name)
    tmp.rename(dest)


def execute(command: list[str], dry: bool) -> None:
    script = Path(command[1]).relative_to(ROOT)  # printed as a user types it at the root
    print(f"$ python {script} {' '.join(command[2:])}", flush=True)
    if not dry and subprocess.run(command).returncode != 0:
        raise SystemExit(f"{Path(command[1]).name} failed (its error is above); fix that and run "
                         f"this again: what is done is kept")


def pretrain(run: Run, out: Path, data: str, vocab: Path | None, dry: bool) -> None:
    """Train `run` through its quarters, each stop copied to its snapshot folder; a snapshot
    already there is not trained again, a run stopped in between resumes."""
    done = saved_step(out / run.name)
    for stop in run.stops():
        dest = snapshot(out, run, stop)
        if (dest / "ckpt.pt").is_file():
            continue
        if done > stop:
            raise SystemExit(f"{out / run.name} is at update {done:,}, past {stop:,}, whose "
                             f"snapshot {dest} is missing: delete {out / run.name} to run it "
                             f"again")
        if done < stop:
            execute(train_command(run, out, data, vocab, stop, resume=done > 0), dry)
            done = stop
        print(f"  snapshot: {out / run.name} at update {stop:,} -> {dest}", flush=True)
        if not dry:
            copy_snapshot(out / run.name, dest)


def vocab_md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def fine_tuned(out: Path, inits: list[Path], finetune_seeds) -> bool:
    """Whether sst2_check.py's table already has a row for each of `inits` with these seeds."""
    table = out / "stsb" / "stsb_check.json"
    if not table.is_file():
        return False
    done = json.loads(table.read_text())
    rows = {row["init"] for row in done["rows"]}
    return done.get("seeds") == list(finetune_seeds) and all(str(i) in rows for i in inits)


def orchestrate(args: argparse.Namespace, plan=None) -> None:
    """Every missing pre-training stop and fine-tuning job, seed by seed. plan(seed): the seed's
    runs (default: ELECTRA's and BERT's, `runs`), whose snapshots are fine-tuned once all of
    them are done."""
    plan = plan or (lambda seed: runs([seed], args.steps))
    out = Path(args.out)
    if not args.dry_run:
        out.mkdir(parents=True, exist_ok=True)
    shared = out / "vocab.txt"
    first = True
    for seed in args.seeds:
        group = plan(seed)
        for run in group:
            # the first run trains the vocab; every other run, and the first after its start,
            # share it
            vocab = shared if shared.is_file() or not first else None
            first = False
            pretrain(run, out, args.data, vocab, args.dry_run)
            own = out / run.name / "vocab.txt"
            if not shared.is_file() and own.is_file():
                shutil.copyfile(own, shared)
                if args.data == "books" and vocab_md5(shared) != BOOKS_VOCAB_MD5:
                    print(f"note: {shared} differs from the shown runs' vocab (md5 "
                          f"{BOOKS_VOCAB_MD5[:8]}...): the downloaded books are not byte for "
                          f"byte the ones the shown numbers came from", flush=True)
        # the seed's runs done: their snapshots fine-tuned
        inits = [snapshot(out, r, stop) for r in group for stop in r.stops()]
        if not fine_tuned(out, inits, args.finetune_seeds):
            execute(stsb_command(inits, out, args.finetune_seeds, args.stsb_dir), args.dry_run)


# -----------------------------------------------------------------------------
# The table and the figure, read back from sst2_check.py's stsb_check.json


def flops_per_update(folder: Path) -> float:
    """Pre-training FLOPs of one update of the run whose checkpoint is in `folder`
    (support.report.flops_per_step of its config, batch and sequence length)."""
    import torch

    from electra import ElectraConfig
    from support.report import flops_per_step

    saved = torch.load(folder / "ckpt.pt", map_location="cpu", weights_only=True)
    train = saved["train_config"]
    return flops_per_step(ElectraConfig(**saved["model_config"]), train["batch_size"],
                          train["seq_len"])


def cell(scores: list[float]) -> tuple[float, float, float]:
    """(mean, min, max) of fine-tuning jobs' scores.

    >>> cell([30.0, 28.0, 34.0])
    (30.666666666666668, 28.0, 34.0)
    """
    return sum(scores) / len(scores), min(scores), max(scores)


def verdict(electra: tuple, bert: tuple) -> str:
    """What two (mean, min, max) cells of the same FLOPs read: ELECTRA ahead beyond the spread if
    its lowest job is above BERT's highest, behind if its highest is below BERT's lowest.

    >>> verdict((57.82, 56.02, 60.84), (27.96, 27.30, 28.37))
    'ahead beyond the spread'
    >>> verdict((30.0, 28.0, 32.0), (29.0, 27.0, 31.0))
    'inside the spread'
    >>> verdict((20.0, 19.0, 21.0), (23.0, 22.0, 24.0))
    'behind beyond the spread'

    A cell whose jobs all agree (one job, say) has no spread to compare against:

    >>> verdict((26.48, 26.48, 26.48), (23.66, 23.66, 23.66))
    'no spread to compare'
    """
    if electra[1] == electra[2] or bert[1] == bert[2]:
        return "no spread to compare"
    if electra[1] > bert[2]:
        return "ahead beyond the spread"
    if electra[2] < bert[1]:
        return "behind beyond the spread"
    return "inside the spread"


def points(out: Path, seeds, steps: int = ELECTRA_STEPS) -> dict:
    """Per objective, its points from update 0 (the random twins) to the hour: each
    {"flops", "scores"}, every pre-training seed's fine-tuning jobs pooled, read from
    out/stsb/stsb_check.json by the snapshot folders sst2_check.py was given."""
    table = out / "stsb" / "stsb_check.json"
    if not table.is_file():
        raise SystemExit(f"{table} is not there yet: run this without --draw-only first")
    rows = {row["init"]: row for row in json.loads(table.read_text())["rows"]}
    every = [snapshot(out, r, stop) for r in runs(seeds, steps) for stop in r.stops()]
    missing = [str(i) for i in every if str(i) not in rows]
    if missing:
        raise SystemExit(f"{table} has no row for {', '.join(missing)}: run this again without "
                         f"--draw-only to fine-tune them")
    result = {}
    for objective in (ELECTRA, BERT):
        mine = [r for r in runs(seeds, steps) if r.objective == objective]
        firsts = [rows[str(snapshot(out, r, r.stops()[0]))] for r in mine]
        line = [{"flops": 0.0, "scores": [s for row in firsts for s in row["random"]["scores"]]}]
        for q in range(QUARTERS):
            inits = [snapshot(out, r, r.stops()[q]) for r in mine]
            flops = mine[0].stops()[q] * flops_per_update(inits[0])
            line.append({"flops": flops,
                         "scores": [s for i in inits for s in rows[str(i)]["pretrained"]
                                    ["scores"]]})
        result[objective] = line
    return result


def markdown(lines: dict, seeds) -> str:
    """The table: at each quarter's FLOPs (0: random weights) both objectives' mean [min-max]
    over every job, the difference of the means and its reading."""
    jobs = len(lines[ELECTRA][0]["scores"])
    head = (f"STS-B dev Spearman (x100): mean [min-max] of {jobs} jobs, pre-training seeds "
            f"{' '.join(map(str, seeds))} x their fine-tuning seeds\n\n"
            "| pre-training FLOPs | ELECTRA, STS-B | BERT, STS-B | ELECTRA - BERT | read |\n"
            "|---:|---|---|---:|---|\n")
    rows = []
    for e, b in zip(lines[ELECTRA], lines[BERT]):
        ce, cb = cell(e["scores"]), cell(b["scores"])
        flops = f"{e['flops']:.2e}" if e["flops"] else "0 (random weights)"
        rows.append(f"| {flops} | {ce[0]:.2f} [{ce[1]:.2f}-{ce[2]:.2f}] "
                    f"| {cb[0]:.2f} [{cb[1]:.2f}-{cb[2]:.2f}] | {ce[0] - cb[0]:+.2f} "
                    f"| {verdict(ce, cb)} |\n")
    return head + "".join(rows)


def figure(lines: dict, seeds):
    """STS-B against pre-training FLOPs: per objective the mean over every job with min-max bars,
    its random weights dashed over the band of their jobs."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5))
    ax = fig.subplots()
    for objective, line in lines.items():
        colour = COLOURS[objective]
        trained = [cell(p["scores"]) for p in line[1:]]
        x = [p["flops"] for p in line[1:]]
        ax.errorbar(x, [c[0] for c in trained],
                    yerr=[[c[0] - c[1] for c in trained], [c[2] - c[0] for c in trained]],
                    fmt="o-", capsize=3, color=colour, label=LABELS[objective])
        mean, low, high = cell(line[0]["scores"])
        ax.axhline(mean, color=colour, ls="--", lw=1, label=f"{LABELS[objective]}: random weights")
        ax.axhspan(low, high, color=colour, alpha=0.1, lw=0)
    ax.set_xlim(left=0)
    ax.set_xlabel("pre-training FLOPs (support.report.flops_per_step)")
    ax.set_ylabel("STS-B dev Spearman (x100)")
    ax.set_title(f"Figure 1 on a laptop: pre-training seeds {', '.join(map(str, seeds))}; "
                 "bars: min-max of the jobs", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def draw(out: Path, seeds, steps: int = ELECTRA_STEPS) -> str:
    """out/figure1.png and out/figure1.md from the fine-tuning table; returns the table."""
    from support.plumbing import atomic_write

    lines = points(out, seeds, steps)
    table = markdown(lines, seeds)
    fig = figure(lines, seeds)
    atomic_write(out / "figure1.png", lambda path: fig.savefig(path, dpi=120, format="png"))
    atomic_write(out / "figure1.md", table)
    return table


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="books",
                   help="the corpus: 'books' (downloaded once, the shown runs' text) or a .txt "
                        "file or folder of your own (default %(default)s)")
    p.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS),
                   help="pre-training seeds, each an ELECTRA and a BERT run (default %(default)s; "
                        "one seed takes about a third of the time)")
    p.add_argument("--finetune-seeds", type=int, nargs="+", default=list(FINETUNE_SEEDS),
                   help="fine-tuning seeds of every snapshot and twin (default %(default)s)")
    p.add_argument("--out", default="runs/figure1",
                   help="runs, snapshots, fine-tuning jobs, figure1.png and .md "
                        "(default %(default)s)")
    p.add_argument("--stsb-dir", default=None,
                   help="GLUE's STS-B folder (train.tsv, dev.tsv); default: finetune.py "
                        "downloads it")
    p.add_argument("--steps", type=int, default=ELECTRA_STEPS,
                   help="ELECTRA's updates, BERT's at the same FLOPs (default %(default)s, the "
                        "hour)")
    p.add_argument("--dry-run", action="store_true", help="print the commands, run none")
    p.add_argument("--draw-only", action="store_true",
                   help="only draw the figure and table from the jobs done")
    args = p.parse_args(argv)
    if args.steps < QUARTERS:
        p.error(f"--steps {args.steps}: give at least {QUARTERS}, one update per quarter")
    return args


def main(argv=None) -> str | None:
    args = parse_args(argv)
    if not args.draw_only:
        orchestrate(args)
    if args.dry_run:
        return None
    table = draw(Path(args.out), args.seeds, args.steps)
    print(table, end="")
    print(f"wrote {Path(args.out) / 'figure1.png'} and figure1.md")
    return table


if __name__ == "__main__":
    main()
