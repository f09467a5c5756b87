"""What the three experiment scripts share: pre-training runs at a fixed FLOPs budget, fine-tuning
jobs, zero-shot BLiMP jobs, a resumable job queue, and the results JSON / markdown / PNG they write.

The paper compares objectives "at equal pre-training compute" (Clark et al. 2020, Sec. 3.3,
Figure 1, Table 1): we turn one FLOPs budget into a number of updates per objective with
report.flops_per_step,

    steps = floor(budget / flops_per_step(model config, batch, seq_len))

and run train.py (in-process, its own main) with that many steps, stopping at a few points along the
way (--stop-at, then --resume) to keep a weight-only snapshot of each. Each snapshot is fine-tuned
with finetune.py's main on the GLUE tasks, one job per (task, seed), with per-task settings
(--ft-examples sst2=20000 --ft-epochs sst2=1); every task is summarised over seeds by its mean, its
median (the paper reports medians, Sec. 3.1) and its min-max spread, and each script's table says
which it shows. With --blimp-dir each fine-tuned snapshot is also scored zero-shot on BLiMP
(evaluate.py's scores, one job per snapshot), and a snapshot with a discriminator gets its context
AUC from the evaluation train.py logged at that step.

Everything is resumable. Pre-training runs live in --runs-dir (default runs/experiments, ignored by
git), named by a hash of what defines them (the vocab's contents included), so the three scripts
share identical runs (ELECTRA with a 1/4 generator is in all three, BERT in two). A job's result is
written to its run folder and to the experiment's results JSON as soon as it finishes; a second
invocation skips what either records, and an interrupted pre-training run continues from its last
checkpoint with train.py's --resume. Two scripts can run at once on the same --runs-dir: a job being
done by one is skipped by the other (lock files) and picked up when its result appears.

    from experiments import common
    ctx = common.setup(args)                 # corpus, shared vocab, BLiMP's pairs, runs folder
    runs = [common.make_run(ctx, "electra", "tiny", "ELECTRA"),
            common.make_run(ctx, "bert", "tiny", "BERT")]
    results = common.run_experiment(ctx, "exp1", runs, "all+init", markdown, plot, sys.argv[1:])
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the core files are flat modules at the repo's top level

import data
import finetune
import train
from electra import ElectraConfig, generator_config, get_config
from support import (
    cli,
    evaluate,
    glue,
    plumbing,
    train_cli,
)
from support.report import flops_per_step, read_metrics
from tokenizer import Tokenizer

# under the repo's /runs/, which .gitignore leaves out (checkpoints)
DEFAULT_RUNS_DIR = "runs/experiments"
# snapshots per run, evenly spaced in steps (Figure 1 shows several per model)
DEFAULT_CHECKPOINTS = 3
DEFAULT_SEEDS = 3  # fine-tuning seeds per task (paper: 10, Sec. 3.1; 3 keeps a CPU run affordable)
LOCK_POLL_S = 2.0  # seconds between looks at jobs another process is doing
# what finetune.py reads
SNAPSHOT_KEYS = ("model", "model_config", "vocab_hash", "step", "train_config")


# -----------------------------------------------------------------------------
# Command line shared by the three scripts


def arg_parser(doc: str, default_tasks: str) -> argparse.ArgumentParser:
    """A script's parser: its docstring's first paragraph as description, plus the shared flags."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_common_args(p, default_tasks)
    return p


def parse(p: argparse.ArgumentParser, argv, name: str) -> argparse.Namespace:
    """Parse argv and check the fine-tuning settings (a bad one ends in parser.error's one line);
    --ft-examples and --ft-epochs become {task or "all": N} (per_task); --out defaults to
    experiments/results/<name>."""
    args = p.parse_args(argv)
    args.out = args.out or f"experiments/results/{name}"
    try:
        args.ft_examples = per_task(args.ft_examples, "--ft-examples")
        args.ft_epochs = per_task(args.ft_epochs, "--ft-epochs")
    except ValueError as e:
        p.error(str(e))
    if args.ft_lr is not None and not (math.isfinite(args.ft_lr) and args.ft_lr > 0):
        p.error(f"--ft-lr {args.ft_lr}: must be a positive number (fine-tuning's peak lr)")
    if args.ft_layer_decay is not None and not 0 < args.ft_layer_decay <= 1:
        p.error(f"--ft-layer-decay {args.ft_layer_decay}: must be in (0, 1] (1: no decay)")
    if args.ft_head_first_epochs is not None and args.ft_head_first_epochs < 0:
        p.error(f"--ft-head-first-epochs {args.ft_head_first_epochs}: must be >= 0")
    if args.blimp_pairs < 0:
        p.error(f"--blimp-pairs {args.blimp_pairs}: must be >= 0 (0: every pair)")
    if args.vocab is not None and args.vocab_size is not None:
        p.error("--vocab and --vocab-size: give one (--vocab-size trains a vocab on --data)")
    return args


def per_task(text: str | None, flag: str) -> dict[str, int]:
    """A per-task setting: one number for every task, or comma-separated task=N items, tasks as
    GLUE names them ("SST-2" or "sst2"); {} when the flag is not given. Any item that is neither
    raises ValueError with a line naming `flag`.

    >>> per_task("20000", "--ft-examples")
    {'all': 20000}
    >>> per_task("SST-2=20000,mrpc=500", "--ft-examples")
    {'sst2': 20000, 'mrpc': 500}
    >>> per_task("1000,sst2=20000", "--ft-examples")  # sst2 20,000 rows, the others 1,000
    {'all': 1000, 'sst2': 20000}
    """
    out = {}
    for item in (text or "").split(","):
        if not item:
            continue
        name, _, number = item.rpartition("=")
        key = "all"
        if name:
            try:
                key = glue.get_task(name).name
            except ValueError as e:
                raise ValueError(f"{flag} {text}: {e}") from None
        try:
            value = int(number)
        except ValueError:
            raise ValueError(f"{flag} {text}: {item!r} is not N or task=N with N a whole number, "
                             f"e.g. {flag} sst2=20000") from None
        if value < 1:
            raise ValueError(f"{flag} {text}: {item!r}: N must be at least 1")
        out[key] = value
    return out


def for_task(setting: dict[str, int], task: str) -> int | None:
    """The value of a per_task setting for `task`: its own, else the one for all tasks, else None
    (finetune.py's default).

    >>> for_task({"all": 1000, "sst2": 20000}, "sst2"), for_task({"sst2": 20000}, "mrpc")
    (20000, None)
    """
    return setting.get(task, setting.get("all"))


def blimp_axes(ax) -> None:
    """The frame of a BLiMP panel: chance at 0.5, its title, y label and grid."""
    ax.axhline(0.5, color="grey", lw=0.8)  # chance
    ax.set_title("BLiMP, zero-shot")
    ax.set_ylabel("accuracy over minimal pairs")
    ax.grid(alpha=0.3, axis="y")


def score_axes(ax, stat: str = "median") -> None:
    """The y label, grid and legend every results plot shares; `stat`: what the points are."""
    ax.set_ylabel(f"dev score ({stat} over seeds)")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def add_common_args(p: argparse.ArgumentParser, default_tasks: str) -> None:
    p.add_argument("--data", required=True,
                   help="pre-training corpus: a .txt file, a folder of them, or a "
                        "train.py known corpus (wikitext-2, wikitext-103)")
    p.add_argument("--flops", type=float, required=True,
                   help="pre-training budget per run in FLOPs (report.flops_per_step's counting); "
                        "each objective gets floor(FLOPs / its FLOPs per update) updates. train.py "
                        "prints a run's FLOPs per update at start-up")
    p.add_argument("--size", nargs="+", default=["tiny"],
                   help="model size preset(s) of electra.SIZES")
    p.add_argument("--seeds", type=int, default=DEFAULT_SEEDS,
                   help="fine-tuning seeds 0..N-1 per task")
    p.add_argument("--glue-dir", default=None,
                   help="folder of GLUE task folders (SST-2/, MRPC/, STS-B/ with "
                        "train.tsv and dev.tsv); default: finetune.py downloads")
    p.add_argument("--tasks", default=default_tasks,
                   help="comma-separated GLUE tasks to fine-tune on")
    p.add_argument("--out", default=None,
                   help="folder for the results JSON, markdown table and PNG")
    p.add_argument("--runs-dir", default=DEFAULT_RUNS_DIR,
                   help="pre-training runs and fine-tuning outputs, shared between the scripts")
    p.add_argument("--checkpoints", type=int, default=DEFAULT_CHECKPOINTS,
                   help="snapshots per pre-training run, evenly spaced (the same in all scripts "
                        "so that they can share runs)")
    p.add_argument("--seed", type=int, default=0, help="pre-training seed")
    p.add_argument("--seq-len", type=int, default=None,
                   help="pre-training sequence length (default: recipe)")
    p.add_argument("--batch-size", type=int, default=None,
                   help="pre-training batch (default: recipe)")
    p.add_argument("--vocab-size", type=int, default=None,
                   help="WordPiece vocab trained once on --data "
                        "(default: the size's recipe)")
    p.add_argument("--vocab", default=None,
                   help="a BERT-format vocab.txt for every run, instead of one trained on --data")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                   help="ElectraConfig override for every run, as train.py --set (repeatable)")
    p.add_argument("--ft-examples", default=None,
                   help="fine-tune on the first N training rows: N for every task, or "
                        "comma-separated task=N items (sst2=20000); a task not named: all rows")
    p.add_argument("--ft-epochs", default=None,
                   help="fine-tuning epochs: N for every task, or comma-separated task=N items "
                        "(sst2=1); a task not named: Table 7's")
    cli.add_flag(p, "ft_lr", type=float, default=None,
                      help="fine-tuning peak lr (finetune.py --lr; default: Table 7's)")
    cli.add_flag(p, "ft_layer_decay", type=float, default=None,
                      help="fine-tuning layer-wise lr decay (finetune.py --layer-decay; default: "
                           "Table 7's)")
    cli.add_flag(p, "ft_head_first_epochs", type=int, default=None,
                      help="fine-tuning epochs of the head alone on the frozen encoder first "
                           "(finetune.py --head-first-epochs; default: none, as Table 7)")
    cli.add_flag(p, "blimp_dir", default=None,
                      help="a folder of BLiMP's jsonl files (evaluate.py --data-dir): score every "
                           "fine-tuned snapshot zero-shot on BLiMP too (default: no BLiMP)")
    cli.add_flag(p, "blimp_pairs", type=int, default=evaluate.PER_PARADIGM,
                      help="BLiMP: the first N pairs of each paradigm, 0 for all")
    p.add_argument("--single-order", action="store_true",
                   help="fine-tune MRPC/STS-B on one sentence order only "
                        "(finetune.py --single-order)")
    p.add_argument("--reuse", action="append", default=[], metavar="RESULTS_JSON",
                   help="results.json of an earlier experiment (a committed experiments/results/"
                        "*/results.json): its fine-tuning and BLiMP results, and D's context AUC, "
                        "count as done for the same runs and settings, for a machine without the "
                        "run folders (repeatable)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")


# -----------------------------------------------------------------------------
# Context: corpus, shared vocabulary, settings


@dataclass
class Context:
    args: argparse.Namespace
    runs_dir: Path
    corpus: Path  # the resolved corpus path
    vocab: Path  # one vocab.txt for every run: runs are comparable and share the tokenised corpus
    tok: object  # tokenizer.Tokenizer of `vocab`
    tasks: list[str]
    overrides: dict  # the --set overrides, typed by support.train_cli.parse_set
    blimp: list | None = None  # evaluate.MinimalPair of --blimp-dir, --blimp-pairs per paradigm
    blimp_signature: str = ""  # in a BLiMP job's key: the pairs scored, by count and a hash


def setup(args: argparse.Namespace) -> Context:
    """Check the arguments, resolve the corpus and train (once) the vocabulary all runs share."""
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.flops <= 0:
        raise SystemExit(f"--flops {args.flops:g}: the budget must be a positive number of FLOPs, "
                         "e.g. 5e12")
    if args.seeds < 1 or args.checkpoints < 1:
        raise SystemExit("--seeds and --checkpoints must be at least 1")
    for size in args.size:
        if size not in train.RECIPES:
            raise SystemExit(f"unknown size {size!r}: choose from {', '.join(train.RECIPES)}")
    try:
        tasks = [glue.get_task(t).name for t in args.tasks.split(",") if t]
    except ValueError as e:
        raise SystemExit(f"--tasks: {e}") from None
    if not tasks:
        raise SystemExit("--tasks: give at least one GLUE task, e.g. sst2,mrpc,stsb")
    if args.glue_dir is not None and not Path(args.glue_dir).is_dir():
        raise SystemExit(f"--glue-dir {args.glue_dir}: no such folder "
                         "(it should hold SST-2/, MRPC/, STS-B/)")
    overrides = train_cli.parse_set(args.overrides)
    runs_dir = Path(args.runs_dir)
    try:
        runs_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SystemExit(f"--runs-dir {runs_dir}: cannot write there ({e.strerror or e})") from e
    cache = runs_dir / "cache"
    try:
        corpus = data.resolve_corpus(args.data, cache).resolve()
    except (plumbing.DownloadError, FileNotFoundError, ValueError) as e:
        raise SystemExit(str(e)) from e
    vocab, tok = shared_vocab(args, runs_dir, corpus)
    blimp, signature = read_blimp(args)
    return Context(args, runs_dir, corpus, vocab, tok, tasks, overrides, blimp, signature)


def shared_vocab(args: argparse.Namespace, runs_dir: Path, corpus: Path):
    """(vocab.txt, its tokenizer.Tokenizer): --vocab, or one of --vocab-size trained once on the
    corpus. Runs are named by the vocab's hash (make_run): another vocab, other runs."""
    if args.vocab is not None:
        vocab = Path(args.vocab).resolve()
        try:
            return vocab, Tokenizer.load(vocab)
        except (FileNotFoundError, ValueError) as e:
            raise SystemExit(f"--vocab {args.vocab}: {e}") from e
    vocab_size = args.vocab_size or get_config(args.size[0]).vocab_size
    vocab_dir = runs_dir / "vocab" / f"{_slug(corpus.name)}-{vocab_size}-{_digest(str(corpus))}"
    cfg = train.TrainConfig(vocab_size=vocab_size)
    vocab_dir.mkdir(parents=True, exist_ok=True)
    try:
        tok = data.load_or_train_vocab(cfg, corpus, vocab_dir)
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"--data {args.data}: {e}") from e
    return vocab_dir / "vocab.txt", tok


def read_blimp(args: argparse.Namespace) -> tuple[list | None, str]:
    """(BLiMP's pairs of --blimp-dir, their signature "p200-<hash of the pairs>"), or (None, "")
    without --blimp-dir. The hash makes results on other pairs other results."""
    if args.blimp_dir is None:
        return None, ""
    if not any(Path(args.blimp_dir).glob("*.jsonl")):
        raise SystemExit(f"--blimp-dir {args.blimp_dir}: no .jsonl files there; pass the data "
                         f"folder of github.com/alexwarstadt/blimp (python -m support.evaluate "
                         f"blimp "
                         f"downloads it into {evaluate.BLIMP_CACHE})")
    try:
        pairs = evaluate.read_blimp(args.blimp_dir, args.blimp_pairs or None)
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"--blimp-dir: {e}") from e
    digest = _digest(json.dumps([asdict(pair) for pair in pairs]))
    return pairs, f"p{args.blimp_pairs or 'all'}-{digest}"


def parse_fraction(text: str) -> float:
    """"1/4" -> 0.25, "0.5" -> 0.5, "1" -> 1.0 (generator sizes as the paper writes them)."""
    try:
        value = float(Fraction(text))
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction such as 1/4 "
                                         "or 0.25") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a generator size must be positive")
    return value


def fraction_label(x: float) -> str:
    """0.25 -> "1/4", 1.0 -> "1", 0.3 -> "3/10"."""
    return str(Fraction(x).limit_denominator(64))


# -----------------------------------------------------------------------------
# Pre-training runs


@dataclass
class Run:
    """One pre-training run of train.py, defined by `argv` (without --stop-at / --resume)."""
    label: str  # how tables and plots name it, e.g. "ELECTRA" or "1/4"
    name: str  # folder name in --runs-dir: readable prefix + hash of what defines the run
    objective: str
    size: str
    generator_fraction: float | None  # None for BERT (no generator)
    generator_hidden: int | None
    steps: int
    flops_per_step: float
    stops: list[int]  # snapshot steps, the last one == steps
    model_config: dict = field(repr=False)  # the ElectraConfig train.py builds for this run
    vocab_hash: str = field(repr=False)
    seed: int  # pre-training seed (initial weights, data order, masks)
    argv: list[str] = field(repr=False)
    dir: Path = field(repr=False)

    def snapshot(self, step: int) -> Path:
        return self.dir / "snapshots" / f"step{step}.pt"

    def describe(self) -> dict:
        d = asdict(self)
        for hidden in ("argv", "model_config", "vocab_hash"):
            d.pop(hidden)
        d["dir"] = str(self.dir)
        d["train_command"] = "python train.py " + " ".join(self.argv)
        return d


def make_run(ctx: Context, objective: str, size: str, label: str,
             generator_fraction: float | None = None) -> Run:
    """The run for `objective` at `size` within the --flops budget.

    generator_fraction None: the size preset's. A fraction equal to the preset's is not passed to
    train.py, so that the run is the very same one (same folder) as a run that did not ask for it.
    """
    a = ctx.args
    recipe = train.RECIPES[size]
    overrides = dict(ctx.overrides)
    preset = get_config(size, **overrides).generator_fraction
    if generator_fraction is not None and not math.isclose(generator_fraction, preset):
        overrides["generator_fraction"] = generator_fraction
    seq_len = a.seq_len or recipe.seq_len
    batch = a.batch_size or recipe.batch_size
    cfg = train.recipe_config(size=size, objective=objective, seq_len=seq_len, overrides=overrides)
    try:
        mc = train.model_config(cfg, ctx.tok)
    except ValueError as e:
        raise SystemExit(f"--set: {e}") from e
    flops = flops_per_step(mc, batch, seq_len)
    steps = int(a.flops // flops)
    if steps < a.checkpoints:
        raise SystemExit(f"--flops {a.flops:g} buys {steps} update(s) of {objective} "
                         f"at size {size} ({flops:.3g} FLOPs each), fewer than "
                         f"--checkpoints {a.checkpoints}: raise --flops")
    # Deviation: the recipe's warm-up is for its full length; a short run keeps the same proportion
    # (tiny: 500 of 10,000 updates) so it still has a decay phase.
    warmup = max(1, round(steps * recipe.warmup / recipe.steps))
    stops = sorted({round(steps * k / a.checkpoints) for k in range(1, a.checkpoints + 1)})
    defining = {"objective": objective, "size": size,
                "model": {k: v for k, v in vars(mc).items()},
                "corpus": str(ctx.corpus), "vocab": ctx.tok.hash(), "seq_len": seq_len,
                "batch": batch, "steps": steps, "warmup": warmup, "seed": a.seed, "stops": stops}
    frac = mc.generator_fraction if objective != "bert" else None
    name = (f"{size}-{objective}"
            + (f"-g{fraction_label(frac).replace('/', 'over')}" if frac else "")
            + f"-{steps}steps-{_digest(json.dumps(defining, sort_keys=True))}")
    run_dir = ctx.runs_dir / name
    argv = ["--size", size, "--objective", objective, "--data", str(ctx.corpus),
            "--cache-dir", str(ctx.runs_dir / "cache"), "--out", str(run_dir / "train"),
            "--vocab", str(ctx.vocab), "--seq-len", str(seq_len), "--batch-size", str(batch),
            "--steps", str(steps), "--warmup", str(warmup), "--seed", str(a.seed),
            "--log-interval", str(max(1, steps // 50)), "--eval-interval", str(steps),
            "--ckpt-interval", str(steps), "--device", a.device]
    for key, value in overrides.items():
        argv += ["--set", f"{key}={value}"]
    return Run(label, name, objective, size, frac,
               generator_config(mc).hidden_size if frac else None, steps, flops,
               stops, asdict(mc), ctx.tok.hash(), a.seed, argv, run_dir)


def pretrain(run: Run) -> None:
    """Train `run` through all its snapshot steps, resuming from its checkpoint if there is one.

    After each stop, ckpt.pt (which the next segment overwrites) is copied without its optimizer
    state to snapshots/step{N}.pt, what finetune.py --init needs.
    """
    save_init(run)
    ckpt = run.dir / "train" / "ckpt.pt"
    for stop in run.stops:
        if run.snapshot(stop).is_file():
            continue
        step = _checkpoint_step(ckpt)
        if step is not None and step > stop:
            raise SystemExit(f"{ckpt} is at step {step}, past the missing snapshot "
                             f"{run.snapshot(stop)}: delete {run.dir} to pre-train that run again")
        if step is None or step < stop:
            result = train.main(run.argv + ["--stop-at", str(stop)]
                                + (["--resume"] if step is not None else []))
            if result["interrupted"]:
                raise KeyboardInterrupt
        saved = torch.load(ckpt, map_location="cpu", weights_only=True)
        _atomic(run.snapshot(stop),
                lambda p, s=saved: torch.save({k: s[k] for k in SNAPSHOT_KEYS}, p))


def save_init(run: Run) -> None:
    """snapshots/step0.pt: the weights train.py starts `run` from (same seed, same build), so that
    fine-tuning it measures what pre-training adds."""
    if run.snapshot(0).is_file():
        return
    mc = ElectraConfig(**run.model_config)
    torch.manual_seed(run.seed)  # as train.set_up: torch.manual_seed(cfg.seed), then build_model
    model = train.build_model(mc, "cpu")
    state = {"model": model.state_dict(), "model_config": run.model_config,
             "vocab_hash": run.vocab_hash, "step": 0, "train_config": {}}
    _atomic(run.snapshot(0), lambda p: torch.save(state, p))


def _checkpoint_step(ckpt: Path) -> int | None:
    if not ckpt.is_file():
        return None
    return int(torch.load(ckpt, map_location="cpu", weights_only=True)["step"])


# -----------------------------------------------------------------------------
# Fine-tuning jobs


def ft_signature(args: argparse.Namespace, task: str) -> str:
    """`task`'s fine-tuning settings in a job's key: results with other settings are other results.
    A setting left at finetune.py's default adds nothing, so that earlier results stay found."""
    examples = for_task(args.ft_examples, task)
    epochs = for_task(args.ft_epochs, task)
    signature = f"n{examples or 'all'}-e{epochs or 'recipe'}"
    if args.ft_lr is not None:
        signature += f"-lr{args.ft_lr:g}"
    if args.ft_layer_decay is not None:
        signature += f"-ld{args.ft_layer_decay:g}"
    if args.ft_head_first_epochs:
        signature += f"-hf{args.ft_head_first_epochs}"
    if args.single_order:
        signature += "-single"
    return signature


def ft_key(run: Run, step: int, task: str, seed: int, args) -> str:
    return f"{run.name}/step{step}/{task}/seed{seed}/{ft_signature(args, task)}"


def fine_tune(ctx: Context, run: Run, step: int, task: str, seed: int) -> dict:
    """Fine-tune snapshot `step` of `run` on `task` with one seed (finetune.py's main); its dev
    metrics."""
    a = ctx.args
    out = run.dir / "finetune" / _slug(f"step{step}-{task}-seed{seed}-{ft_signature(a, task)}")
    # the batch's loss as its mean, with which the snapshots of experiments/README.md were scored
    argv = ["--task", task, "--init", str(run.snapshot(step)), "--vocab", str(ctx.vocab),
            "--out-dir", str(out), "--seeds", "1", "--seed", str(seed), "--loss-reduction", "mean"]
    if a.glue_dir is not None:
        argv += ["--data-dir", str(a.glue_dir)]
    if a.device != "auto":
        argv += ["--device", a.device]
    examples = for_task(a.ft_examples, task)
    if examples:
        argv += ["--max-train-examples", str(examples)]
    epochs = for_task(a.ft_epochs, task)
    if epochs:
        argv += ["--epochs", str(epochs)]
    if a.ft_lr is not None:
        argv += ["--lr", str(a.ft_lr)]
    if a.ft_layer_decay is not None:
        argv += ["--layer-decay", str(a.ft_layer_decay)]
    if a.ft_head_first_epochs:
        argv += ["--head-first-epochs", str(a.ft_head_first_epochs)]
    if a.single_order:
        argv += ["--single-order"]
    report = finetune.main(argv)
    return report["tasks"][task]["seeds"][0]["dev"]


# -----------------------------------------------------------------------------
# Zero-shot measures of a snapshot: BLiMP, and D's context AUC from pre-training's log


def blimp_key(ctx: Context, run: Run, step: int) -> str:
    return f"{run.name}/step{step}/blimp/{ctx.blimp_signature}"


def score_blimp(ctx: Context, run: Run, step: int) -> dict:
    """Zero-shot BLiMP accuracy of snapshot `step` with evaluate.py's scores: an ELECTRA snapshot
    gets D's summed and mean log D (d_sum, d_mean) and its generator's pseudo-log-likelihood
    (mlm_pll), a BERT snapshot its masked LM's PLL. Overall and per field."""
    device = ctx.args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        scored = evaluate.load_run(run.snapshot(step), ctx.vocab)
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"BLiMP of {run.snapshot(step)}: {e}") from e
    model = scored.model.to(device).eval()
    credits, identical = evaluate.blimp_credits(model, scored.tokenizer, ctx.blimp,
                                                evaluate.BATCH_SIZE, device)
    accuracy = evaluate.accuracies(ctx.blimp, credits)
    return {"per_paradigm": ctx.args.blimp_pairs or None, "identical_pairs": identical,
            "overall": accuracy["overall"], "fields": accuracy["fields"]}


def context_auc(run: Run, step: int) -> float | None:
    """D's held-out AUC against G's samples at temperature 1 after update `step`: the `context_auc`
    of the evaluation row train.py wrote to metrics.jsonl at that step (it evaluates at every
    --stop-at). None without one: BERT has no D, and step 0 was never evaluated."""
    found = None
    for row in read_metrics(run.dir / "train" / "metrics.jsonl"):
        if row.get("split") == "eval" and row.get("step") == step and "context_auc" in row:
            found = row["context_auc"]  # the last one: a segment redone after a crash wrote again
    return found


# -----------------------------------------------------------------------------
# The job queue


@dataclass
class Job:
    key: str
    run: Run
    kind: str  # "pretrain", "finetune" or "blimp"; the results of the last two: results[kind]
    step: int = 0
    task: str = ""
    seed: int = 0


def fine_tuned_steps(runs: list[Run], steps: str,
                     select: list[int] | None = None) -> list[tuple[Run, int]]:
    """The snapshots an experiment fine-tunes: steps "last" (each run's final one), "all" (every
    snapshot), "all+init" (every snapshot, and before them step 0 of each run: its random
    initialisation, the zero point of its objective; ELECTRA's and BERT's differ, as their models
    do) or "last+init" (step 0 and the final snapshot of each run).
    `select`: with "all"/"all+init", only these snapshots (1-based, e.g. [1, 3] of 3)."""
    if steps not in ("last", "all", "all+init", "last+init"):
        raise ValueError(f"steps {steps!r}: expected 'last', 'all', 'all+init' or 'last+init'")
    out = []
    for run in runs:
        chosen = (run.stops if select is None
                  else [s for i, s in enumerate(run.stops, start=1) if i in select])
        out += [(run, 0)] if steps.endswith("+init") else []
        out += [(run, s) for s in (chosen if steps.startswith("all") else run.stops[-1:])]
    return out


def run_experiment(ctx: Context, name: str, runs: list[Run], steps: str, markdown, plot,
                   argv: list[str], select: list[int] | None = None) -> dict:
    """Pre-train `runs`, fine-tune their snapshots (see fine_tuned_steps) on every task and seed,
    and with --blimp-dir score each of those snapshots on BLiMP.

    After every finished job the outputs are redrawn (summarize, then write_outputs with
    `markdown(results, runs, tasks)` and `plot(plt, rows, tasks)`), so an interrupted experiment
    leaves its results so far. Returns the results dict (see load_results).
    """
    a = ctx.args
    out = Path(a.out)

    def write(results):
        results["rows"] = summarize(results, ctx, runs, steps, select)
        write_outputs(out, name, results, markdown(results, runs, ctx.tasks),
                      lambda plt: plot(plt, results["rows"], ctx.tasks))

    results = load_results(out / "results.json", name)
    results.update(experiment=name,
                   command="python " + " ".join([f"experiments/{name}.py"] + argv),
                   settings={k: v for k, v in vars(a).items()}, corpus=str(ctx.corpus),
                   vocab=str(ctx.vocab), runs=[r.describe() for r in runs])
    jobs = []
    for run, step in fine_tuned_steps(runs, steps, select):
        for task in ctx.tasks:
            for seed in range(a.seeds):
                jobs.append(Job(ft_key(run, step, task, seed, a), run, "finetune",
                                step, task, seed))
        if ctx.blimp is not None:
            jobs.append(Job(blimp_key(ctx, run, step), run, "blimp", step))
    for path in a.reuse:
        reuse(results, Path(path), jobs, runs)
    for job in jobs:  # a result another script already has (same run, same settings) is reused
        _finished(job, results)
    pending_scores = [j for j in jobs if j.key not in results[j.kind]]
    need = {j.run.name: j.run for j in pending_scores if not j.run.snapshot(j.step).is_file()}
    pending = [Job(f"pretrain/{r.name}", r, "pretrain") for r in need.values()] + pending_scores
    write(results)
    try:
        _work(ctx, pending, results, write, len(jobs) + len(need),
              len(jobs) - len(pending_scores), name)
    except KeyboardInterrupt:
        raise SystemExit(f"{name}: interrupted. Finished work is kept in {out / 'results.json'} "
                         f"and {ctx.runs_dir}; run the same command again to continue.") from None
    write(results)
    return results


def reuse(results: dict, path: Path, jobs: list[Job], runs: list[Run]) -> None:
    """Copy into `results` the entries of the earlier results JSON `path` that `jobs` would redo,
    and its context AUCs of `runs`. A job's key names its run by a hash of everything that defines
    the run, and its snapshot and settings, so an entry with the same key is the same result."""
    try:
        earlier = json.loads(path.read_text())
    except FileNotFoundError:
        raise SystemExit(f"--reuse {path}: no such file") from None
    except json.JSONDecodeError as e:
        raise SystemExit(f"--reuse {path}: not a results JSON ({e})") from None
    for job in jobs:
        entry = earlier.get(job.kind, {}).get(job.key)
        if entry is not None and job.key not in results[job.kind]:
            results[job.kind][job.key] = entry
    names = {run.name for run in runs}
    for row in earlier.get("rows", []):
        if row.get("run") in names and row.get("context_auc") is not None:
            key = f"{row['run']}/step{row['step']}"
            results.setdefault("context_auc", {}).setdefault(key, row["context_auc"])


def _work(ctx: Context, pending: list[Job], results: dict, write, total: int, initial: int,
          name: str) -> None:
    """Do the pending jobs, those another process holds last, with one progress bar."""
    t0 = time.time()
    with tqdm(total=total, initial=initial, unit="job", desc=name, dynamic_ncols=True) as bar:
        while pending:
            progressed = False
            for job in list(pending):
                if _finished(job, results):
                    pending.remove(job)
                    bar.update(1)
                    progressed = True
                    continue
                if job.kind != "pretrain" and not job.run.snapshot(job.step).is_file():
                    continue  # its pre-training is still to do (here or in another process)
                lock = ctx.runs_dir / "locks" / (_slug(job.key) + ".lock")
                if not _try_lock(lock):
                    continue  # another process is doing it: look again later
                try:
                    if not _finished(job, results):
                        bar.set_postfix_str(job.key.split("/", 1)[-1][:60])
                        _do(ctx, job, results)
                finally:
                    lock.unlink(missing_ok=True)
                pending.remove(job)
                bar.update(1)
                progressed = True
                results["seconds"] = results.get("seconds", 0.0) + (time.time() - t0)
                t0 = time.time()
                write(results)
            if pending and not progressed:
                time.sleep(LOCK_POLL_S)
    results["seconds"] = results.get("seconds", 0.0) + (time.time() - t0)


def _do(ctx: Context, job: Job, results: dict) -> None:
    t = time.time()
    if job.kind == "pretrain":
        pretrain(job.run)
        return
    if job.kind == "blimp":
        entry = {"run": job.run.name, "step": job.step, **score_blimp(ctx, job.run, job.step)}
    else:
        dev = fine_tune(ctx, job.run, job.step, job.task, job.seed)
        entry = {"run": job.run.name, "step": job.step, "task": job.task, "seed": job.seed,
                 "dev": dev}
    entry["seconds"] = round(time.time() - t, 1)
    _atomic(_result_file(job), lambda p: p.write_text(json.dumps(entry, indent=1)))
    results[job.kind][job.key] = entry


def _finished(job: Job, results: dict) -> bool:
    """Whether `job` is done; a result in its run folder (another process's, or an earlier
    experiment's) is copied into results[job.kind]."""
    if job.kind == "pretrain":
        return all(job.run.snapshot(s).is_file() for s in [0] + job.run.stops)
    done = results[job.kind]
    if job.key not in done and _result_file(job).is_file():
        done[job.key] = json.loads(_result_file(job).read_text())
    return job.key in done


def _result_file(job: Job) -> Path:
    """runs-dir/RUN/finetune/ or RUN/blimp/: the job's key less the run's name, as a file name."""
    return job.run.dir / job.kind / (_slug(job.key.split("/", 1)[1]) + ".json")


def _try_lock(path: Path) -> bool:
    """Create `path` holding our pid, atomically; False when a live process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            try:
                pid = int(path.read_text() or 0)
            except (OSError, ValueError):
                pid = 0
            if pid and pid != os.getpid() and _alive(pid):
                return False
            path.unlink(missing_ok=True)  # left behind by a process that is gone
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return True
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -----------------------------------------------------------------------------
# Results: JSON, summaries, markdown cells


def load_results(path: Path, name: str) -> dict:
    """The results JSON of an earlier invocation (its finished fine-tunings are kept), or a new
    one."""
    if path.is_file():
        try:
            results = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise SystemExit(f"{path} is not valid JSON ({e}); move it away to start the "
                             "experiment afresh") from e
        if results.get("experiment") not in (None, name):
            raise SystemExit(f"{path} holds the results of {results['experiment']}, not {name}: "
                             "choose another --out")
        results.setdefault("finetune", {})
        results.setdefault("blimp", {})
        return results
    return {"experiment": name, "finetune": {}, "blimp": {}}


def summarize(results: dict, ctx: Context, runs: list[Run], steps: str,
              select: list[int] | None = None) -> list[dict]:
    """One row per (run, snapshot) of fine_tuned_steps, `random` True at step 0 (random weights):

        tasks        every task's mean, median, min and max over seeds of the paper's metric
        score        the mean of the task medians (the paper's GLUE score over these tasks) and
        score_mean   the mean of the task means, once every task has all its seeds
        blimp        with --blimp-dir: the snapshot's BLiMP accuracy per score (evaluate.SCORES)
        context_auc  with a discriminator, after update 1 or later: D's held-out context AUC
    """
    a = ctx.args
    rows = []
    for run, step in fine_tuned_steps(runs, steps, select):
        row = {"label": run.label, "run": run.name, "objective": run.objective, "random": step == 0,
               "size": run.size, "generator_fraction": run.generator_fraction,
               "generator_hidden": run.generator_hidden,
               "step": step, "steps": run.steps, "flops": step * run.flops_per_step, "tasks": {}}
        for task in ctx.tasks:
            metric = glue.get_task(task).paper_metric
            keys = [ft_key(run, step, task, s, a) for s in range(a.seeds)]
            done = [results["finetune"][k] for k in keys if k in results["finetune"]]
            scores = [entry["dev"][metric] for entry in done]
            if scores:
                row["tasks"][task] = seed_stats(metric, scores)
        complete = all(len(t["seeds"]) == a.seeds for t in row["tasks"].values())
        if len(row["tasks"]) == len(ctx.tasks) and complete:
            row["score"], row["score_mean"] = glue_scores(row["tasks"])
        blimp = results["blimp"].get(blimp_key(ctx, run, step)) if ctx.blimp is not None else None
        if blimp is not None:
            overall = blimp["overall"]
            row["blimp"] = {s: overall[s] for s in evaluate.SCORES if s in overall}
        auc = context_auc(run, step) if step else None
        if auc is None and step:  # pre-trained on another machine: the AUC --reuse brought
            auc = results.get("context_auc", {}).get(f"{run.name}/step{step}")
        row["context_auc"] = auc
        rows.append(row)
    return rows


def seed_stats(metric: str, scores: list[float]) -> dict:
    """A row's cell for one task: `metric`'s mean, median, min and max over `scores`, one per
    fine-tuning job, and the scores themselves."""
    return {"metric": metric, "mean": float(np.mean(scores)), "median": float(np.median(scores)),
            "min": float(min(scores)), "max": float(max(scores)), "seeds": scores}


def glue_scores(tasks: dict) -> tuple[float, float]:
    """(score, score_mean) of a row's tasks (seed_stats cells): the GLUE average of the task
    medians (the paper's) and of the task means."""
    medians = {t: {v["metric"]: v["median"]} for t, v in tasks.items()}
    means = {t: {v["metric"]: v["mean"]} for t, v in tasks.items()}
    return glue.glue_score(medians), glue.glue_score(means)


def cell(row: dict, task: str, stat: str = "median") -> str:
    """"61.2 (58.0-63.1)": the median over seeds and the min-max spread; stat "mean":
    "61.2 [58.0-63.1]", the mean (as experiments/sst2_check.py writes it); "-" until it is
    fine-tuned."""
    t = row["tasks"].get(task)
    if t is None:
        return "-"
    if len(t["seeds"]) == 1:
        return f"{t[stat]:.1f}"
    if stat == "mean":
        return f"{t['mean']:.1f} [{t['min']:.1f}-{t['max']:.1f}]"
    return f"{t['median']:.1f} ({t['min']:.1f}-{t['max']:.1f})"


def protocol_headers(tasks: list[str], blimp: bool, gain_task: str) -> list[str]:
    """The columns the transfer protocol reports after a row's own: each task, their mean, BLiMP
    (with --blimp-dir), D's context AUC and, when `gain_task` is fine-tuned, its gain over the
    run's random weights. protocol_cells fills them."""
    gain = [f"{task_header(gain_task)} gain over random"] if gain_task in tasks else []
    mean = ["mean of tasks"] if len(tasks) > 1 else []  # one task's mean is that task again
    return ([task_header(t) for t in tasks] + mean
            + (blimp_headers() if blimp else []) + ["context AUC"] + gain)


def protocol_cells(row: dict, rows: list[dict], tasks: list[str], blimp: bool, gain_task: str,
                   stat: str) -> list[str]:
    """`row`'s cells under protocol_headers; `stat` the statistic over seeds ("mean")."""
    cells = [cell(row, t, stat) for t in tasks]
    if len(tasks) > 1:
        cells += [f"{row['score_mean']:.1f}" if "score_mean" in row else "-"]
    cells += blimp_cells(row) if blimp else []
    cells += [f"{row['context_auc']:.3f}" if row["context_auc"] is not None else "-"]
    cells += [gain_cell(row, rows, gain_task, stat)] if gain_task in tasks else []
    return cells


def gain_cell(row: dict, rows: list[dict], task: str, stat: str) -> str:
    """`task`'s `stat` over seeds minus that of the same run's random weights (its update 0 in
    `rows`): "+1.2"; "-" for the random weights themselves or until both are in."""
    zero = next((r for r in rows if r["run"] == row["run"] and r["random"]), None)
    if row["random"] or zero is None:
        return "-"
    if task not in row["tasks"] or task not in zero["tasks"]:
        return "-"
    return f"{row['tasks'][task][stat] - zero['tasks'][task][stat]:+.1f}"


# The BLiMP scores of the runs these comparisons train: ELECTRA's and BERT's (Electric's energy sum
# belongs to electric_vs_electra.py)
TABLE_SCORES = tuple(s for s in evaluate.SCORES if s != "electric")


def blimp_cells(row: dict) -> list[str]:
    """The row's BLiMP accuracy per score of TABLE_SCORES, "-" where it has none."""
    blimp = row.get("blimp", {})
    return [f"{blimp[s]:.3f}" if s in blimp else "-" for s in TABLE_SCORES]


def blimp_headers() -> list[str]:
    """"BLiMP D sum", ...: the columns of blimp_cells."""
    return [f"BLiMP {evaluate.SCORE_TITLES[s]}" for s in TABLE_SCORES]


def task_header(task: str) -> str:
    """"SST-2 acc" for a table's column."""
    t = glue.get_task(task)
    return f"{t.folder} {t.paper_metric}"


def markdown_table(header: list[str], lines: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(line) + " |" for line in lines]
    return "\n".join(out) + "\n"


def settings_line(results: dict, runs: list[Run], stat: str = "median") -> str:
    """One paragraph saying what the numbers are, for the top of the markdown file; `stat`: what
    the cells show (cell's)."""
    s = results["settings"]
    steps = ", ".join(f"{r.label} {r.steps:,}" for r in runs)
    recipe = ""
    if s["ft_lr"] is not None:
        recipe += f", lr {s['ft_lr']:g}"
    if s["ft_layer_decay"] is not None:
        recipe += f", layer-wise lr decay {s['ft_layer_decay']:g}"
    if s.get("ft_head_first_epochs"):  # absent from results written before the flag
        recipe += f", the head alone first for {s['ft_head_first_epochs']} epoch(s)"
    spread = "[min-max]" if stat == "mean" else "(min-max)"
    # pool_seeds' results: a cell holds every fine-tuning seed of every pre-training seed
    pooled = results.get("pooled", [])
    seeds = f"{s['seeds']} seed(s)"
    over = "seeds"
    if pooled:
        seeds += f" on each of {len(pooled)} pre-training seeds"
        over = "jobs"
    blimp = ""
    if s["blimp_dir"] is not None:
        pairs = s["blimp_pairs"] or "all"
        blimp = (f"BLiMP: zero-shot accuracy on the first {pairs} pairs of each paradigm in "
                 f"`{s['blimp_dir']}` (evaluate.py's scores; chance 0.5). ")
    return (f"Command: `{results['command']}`\n\n"
            f"Pre-training budget {s['flops']:.3g} FLOPs per run (report.flops_per_step), size(s) "
            f"{', '.join(s['size'])}, corpus `{results['corpus']}`, vocab `{results['vocab']}`; "
            f"updates per run: {steps}. "
            f"Fine-tuning: {seeds}, training examples per task "
            f"{_per_task_text(s['ft_examples'], 'all')}, "
            f"epochs {_per_task_text(s['ft_epochs'], 'Table 7')}"
            f"{recipe}{', one sentence order' if s['single_order'] else ''}; cells "
            f"are the {stat} over {over} of the dev metric the paper reports, {spread} over "
            f"{over}. "
            f"{blimp}"
            f"Time spent on jobs so far: {results.get('seconds', 0) / 60:.1f} min (summed over "
            f"invocations and processes, including waiting for jobs another process held).\n")


def _per_task_text(setting: dict, default: str) -> str:
    """{"all": 500} -> "500"; {"sst2": 20000} -> "sst2 20000, others all" (default "all")."""
    others = str(setting.get("all", default))
    named = [f"{task} {n}" for task, n in setting.items() if task != "all"]
    return ", ".join(named + [f"others {others}"]) if named else others


def write_outputs(out: Path, name: str, results: dict, markdown: str, plot) -> None:
    """results.json, {name}.md and {name}.png in `out`, each written to a temporary file then
    renamed."""
    out.mkdir(parents=True, exist_ok=True)
    _atomic(out / "results.json", lambda p: p.write_text(json.dumps(results, indent=1)))
    _atomic(out / f"{name}.md", lambda p: p.write_text(markdown))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plot(plt)
    _atomic(out / f"{name}.png", lambda p: fig.savefig(p, dpi=110, format="png"))
    plt.close(fig)


def error_bars(rows: list[dict], task: str, stat: str = "median"):
    """(medians, [[median - min], [max - median]]) of `task` over rows that have it, for
    plt.errorbar; stat "mean": the same around the means."""
    have = [r["tasks"][task] for r in rows if task in r["tasks"]]
    med = np.array([t[stat] for t in have])
    return med, np.array([[m - t["min"] for m, t in zip(med, have)],
                          [t["max"] - m for m, t in zip(med, have)]])


def _atomic(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)
