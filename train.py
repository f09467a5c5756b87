"""Pre-training ELECTRA (Clark et al. 2020, arXiv 2003.10555): the recipe, the optimizer and the loop.

    python train.py --size small                 # WikiText-103, downloaded once into ./cache
    python train.py --size tiny --data my_texts/ # any .txt file or folder of them

    python train.py --out out --resume           # continue a stopped run exactly
    python train.py --out out --export-hf hf/    # HuggingFace ELECTRA layout (config.json + weights)
    python train.py --init-from google/electra-small --data my_texts/ --steps 10000 --lr 1e-4 --warmup 500
                                                 # continued pre-training of Google's released G and D
    torchrun --nproc_per_node 4 train.py --size base   # DDP on 4 GPUs

Read top to bottom, like nanoGPT's train.py: the recipe (paper Table 6) and TrainConfig, whose
fields are the flags; the learning-rate schedule and the optimizer; what a checkpoint holds; the run
in named steps (set_up_model, update, diverged, save_run) and train(), the loop that calls them; last
the command line (parse_args, resolve_config, main). The data pipeline is data.py, the model
electra.py, what a run prints, logs and draws report.py, and the plumbing (checkpoint files, DDP,
devices, signals, the command-line machinery) plumbing.py.
"""
from __future__ import annotations

import argparse
import contextlib
import os
from dataclasses import asdict, dataclass
from dataclasses import replace as dc_replace
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
from tqdm import tqdm

import plumbing
import report
from data import (
    DATA_URL,
    KNOWN_CORPORA,
    SHORT_SEQ_MIN,
    Batches,
    pretraining_data,
)
from electra import (
    METRICS,
    OBJECTIVES,
    Electra,
    ElectraConfig,
    check_config,
    decays,
    get_config,
    lr_factor,
)
from hf import HubError, export_hf, load_electra, released_start
from plumbing import add_options, at_least, given, non_negative, option, positive
from tokenizer import CONFIG as WORDPIECE
from tokenizer import Tokenizer

# -----------------------------------------------------------------------------
# The recipe: per size (paper Table 6, official configure_pretraining.py), every value a flag. The model
# of each size, and its vocabulary size, is electra.SIZES.


@dataclass(frozen=True)
class Recipe:
    batch_size: int  # sequences per update, all GPUs and accumulation steps together
    lr: float  # peak learning rate
    steps: int  # updates for objective "electra"
    bert_steps: int  # updates for objective "bert" (Table 6 "Train Steps (BERT/ELECTRA)")
    seq_len: int  # tokens per example
    warmup: int  # linear warm-up updates
    eval_interval: int = 2000  # updates between held-out evaluations (and curves.png redraws)


RECIPES = {
    # ours, for a laptop CPU: the discriminator visibly learns in 15 minutes on 2 cores (README, "See
    # ELECTRA learn on a CPU"; the search is experiments/cpu_preset.py). ELECTRA-Small's seq 128; a
    # quarter of its batch; twice its peak lr (a 4-layer 128-wide model trains stably at 1e-3 and a
    # short run needs it); 1,800 updates, what fits the 15 minutes on 2 cores (the README gives the
    # measured run), with a warm-up of 100; held-out AUC every 100 updates, so the curve is visible.
    "tiny": Recipe(batch_size=32, lr=1e-3, steps=1_800, bert_steps=1_800, seq_len=128, warmup=100, eval_interval=100),
    "small": Recipe(batch_size=128, lr=5e-4, steps=1_000_000, bert_steps=1_450_000, seq_len=128, warmup=10_000),
    "base": Recipe(batch_size=256, lr=2e-4, steps=766_000, bert_steps=1_000_000, seq_len=512, warmup=10_000),
    "large": Recipe(batch_size=2048, lr=2e-4, steps=400_000, bert_steps=464_000, seq_len=512, warmup=10_000),
}
ADAM_BETAS = (0.9, 0.999)  # Table 6 "Adam beta1, beta2"
ADAM_EPS = 1e-6  # Table 6 "Adam epsilon"
WEIGHT_DECAY = 0.01  # Table 6 "Weight Decay"; official excludes LayerNorm and bias
CLIP_NORM = 1.0  # official optimization.py: clip_by_global_norm(grads, 1.0)
MASK_SLACK = 0.005  # official: max_predictions_per_seq = int((mask_prob + 0.005) * max_seq_length)


@dataclass
class TrainConfig:
    """One pre-training run. Every field is a flag (batch_size: --batch-size); a field left None is
    the recipe's, RECIPES[size]. run=True marks what a --resume keeps as the checkpoint has it; the
    other fields control the session."""

    size: str = option("small", "model and recipe preset (default small)", choices=tuple(RECIPES), run=True)
    objective: str = option(
        "electra", "electra: replaced token detection; bert: the masked-LM baseline; electra_15, replace_mlm, "
        "all_tokens_mlm: the ablations of Sec. 3.5 (default electra)", choices=OBJECTIVES, run=True)
    data: str = option("wikitext-103", f".txt file, folder of .txt files, or one of {list(KNOWN_CORPORA)}", run=True)
    data_url: str = option(DATA_URL, f"base URL of the known corpora (or $ELECTRA_DATA_URL; default {DATA_URL})",
                           show_default=False)
    cache_dir: str = option("cache", "downloads and tokenised corpora")  # shared between runs
    out_dir: str = option("out", "run folder: ckpt.pt, vocab.txt, metrics.jsonl, curves.png",
                          flag="--out", metavar="OUT")
    vocab: str | None = option(None, "a BERT-format vocab.txt (default: train one on the corpus)")
    vocab_size: int | None = option(None, "size of the trained vocab (preset)", run=True, check=at_least(
        len(WORDPIECE.specials) + 1, "the special tokens and at least one piece"))
    seq_len: int | None = option(None, "tokens per example (preset)", run=True,
                                 check=at_least(SHORT_SEQ_MIN, "the example builder's shortest target length"))
    # the batch counts every accumulation step; --grad-accum fits the paper's batch on a small GPU
    batch_size: int | None = option(None, "sequences per update, all GPUs together (preset)", run=True,
                                    check=at_least(1, "sequences per update"))
    grad_accum: int = option(1, "micro-batches per update", check=at_least(1, "micro-batches per update"))
    lr: float | None = option(None, "peak learning rate (preset)", run=True,
                              check=positive("the peak learning rate"))
    steps: int | None = option(None, "updates (preset)", run=True, check=at_least(1, "updates"))
    warmup: int | None = option(None, "warm-up updates (preset)", run=True, check=at_least(0, "warm-up updates"))
    weight_decay: float = option(WEIGHT_DECAY, "AdamW weight decay", run=True,
                                 check=non_negative("AdamW weight decay"))
    clip_norm: float = option(CLIP_NORM, "gradient-norm clip", run=True, check=positive("the gradient-norm clip"))
    # ours: the held-out set, and a few thousand sequences of it per evaluation on a GPU
    eval_fraction: float = option(0.01, "share of documents held out", run=True,
                                  check=(lambda v: 0 <= v < 1, "a share in [0, 1) (0: no held-out set)"))
    eval_batches: int = option(10, "micro-batches per evaluation", check=at_least(1, "micro-batches per evaluation"))
    log_interval: int = option(100, "updates between metrics.jsonl lines",
                               check=at_least(1, "updates between metrics lines"))
    eval_interval: int | None = option(None, "updates between held-out evaluations (preset)",  # and curves.png
                                       check=at_least(1, "updates between evaluations"))
    ckpt_interval: int = option(2000, "updates between checkpoints", check=at_least(1, "updates between checkpoints"))
    stop_at: int | None = option(None, "stop with a checkpoint after this update (the schedule still runs to "
                                 "--steps)", check=at_least(1, "the update to stop after"))
    # the data order, masks, dropout and initialisation
    seed: int = option(0, "random seed", run=True, check=at_least(0, "the random seed"))
    device: str = option("auto", "auto (default: cuda if available), cpu, cuda or cuda:N", show_default=False)
    # mostly for GPUs; the first steps are slow while it compiles
    compile: bool = option(False, "torch.compile the model")
    precision: str = option("auto", "auto (default): bf16 autocast on GPUs with bf16 tensor cores, fp32 elsewhere",
                            choices=("auto", "bf16", "fp32"))
    peak_tflops: float | None = option(
        None, "accelerator peak TFLOP/s for MFU (default: looked up from the GPU name)",
        check=positive("the accelerator's peak TFLOP/s"))
    # the flag gives FIELD=VALUE strings; the run holds them parsed: {"num_layers": 2}
    overrides: dict = option({}, "override an ElectraConfig field, e.g. --set num_layers=2 (repeatable)",
                             flag="--set", metavar="FIELD=VALUE", action="append", run=True)
    init_from: str | None = option(
        None, "continue pre-training a released ELECTRA (e.g. google/electra-small, its hub name or a folder): "
        "its shape, vocab, generator and discriminator", metavar="NAME_OR_FOLDER")
    generator: str | None = option(None, "with --init-from: the generator's hub name or folder")
    revision: str = option("main", "hub revision of --init-from (branch, tag or commit)", show_default=False)
    hub_cache_dir: str | None = option(None, "hub checkpoints (default ~/.cache/electra-from-scratch/hub)")

    def __post_init__(self):
        r = RECIPES[self.size]
        preset = dict(vocab_size=get_config(self.size).vocab_size, seq_len=r.seq_len, batch_size=r.batch_size,
                      lr=r.lr, warmup=r.warmup, steps=r.bert_steps if self.objective == "bert" else r.steps,
                      eval_interval=r.eval_interval)
        for name, value in preset.items():
            if getattr(self, name) is None:
                setattr(self, name, value)


# -----------------------------------------------------------------------------
# The learning-rate schedule and the optimizer


def learning_rate(step: int, cfg: TrainConfig) -> float:
    """Pre-training lr of update `step`: cfg.lr * lr_factor.

    Example: lr 1e-3, warmup 10, steps 100: step 0 -> 1e-4, step 9 -> 9.1e-4, step 50 -> 5e-4.
    """
    return cfg.lr * lr_factor(step, cfg.steps, cfg.warmup)


def model_config(cfg: TrainConfig, tok: Tokenizer) -> ElectraConfig:
    """The model preset for cfg.size with the tokenizer's vocabulary and the recipe's lengths."""
    mc = get_config(cfg.size, **cfg.overrides)
    mc = dc_replace(mc, vocab_size=len(tok), pad_id=tok.pad_id, cls_id=tok.cls_id, sep_id=tok.sep_id,
                    mask_id=tok.mask_id, objective=cfg.objective,
                    max_position=max(mc.max_position, cfg.seq_len))
    if "max_predictions" not in cfg.overrides:
        mc = dc_replace(mc, max_predictions=max(1, int((mc.mask_prob + MASK_SLACK) * cfg.seq_len)))
    check_config(mc)
    return mc


def build_model(mc: ElectraConfig, device) -> Electra:
    """A freshly initialised Electra (or the BERT baseline for objective "bert") on `device`."""
    return Electra(mc).to(device)


def build_optimizer(model: nn.Module, cfg: TrainConfig, fused: bool = True) -> torch.optim.AdamW:
    """AdamW with the paper's settings; weight decay on matrices only, not LayerNorm or biases.

    Deviation: the official AdamWeightDecayOptimizer has no bias correction; torch's AdamW has.
    For a steady gradient the official update is (1 - 0.9^t) / sqrt(1 - 0.999^t) times AdamW's:
    3.16x at update 1, 6.57x at update 12 (the largest), 1.96x at 300, 1.26x at 1,000, 1.03x at
    3,000, within 1% only after ~3,900 updates (finetune.AdamWeightDecay is the official one;
    tests/test_finetune_model.py measures these ratios). Pre-training runs 10k warm-up updates,
    so the difference falls where the lr is still small, and the runs are hundreds of thousands
    of updates long; and torch has a fused kernel for AdamW (one kernel for all parameters).
    """
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if decays(p)], "weight_decay": cfg.weight_decay},
              {"params": [p for p in params if not decays(p)], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=ADAM_BETAS, eps=ADAM_EPS, fused=fused)


# -----------------------------------------------------------------------------
# Checkpoints


def save_checkpoint(path: Path, model: Electra, optimizer, step: int, cfg: TrainConfig,
                    mc: ElectraConfig, vocab_hash: str, rng: list[dict]) -> None:
    """Everything --resume needs, a plain dict (plumbing.write_checkpoint: never half a file, the
    previous checkpoint kept as plumbing.load_checkpoint's fallback).

    The learning-rate schedule is a pure function of the step (learning_rate), and so is the
    data order (Batches), so `step` is their whole state. `rng` holds every rank's RNG states.
    """
    plumbing.write_checkpoint(path, {
        "model": model.state_dict(),  # generator, discriminator and their shared embeddings
        "optimizer": optimizer.state_dict(),
        "step": step,
        "train_config": asdict(cfg),
        "model_config": asdict(mc),
        "vocab_hash": vocab_hash,
        "rng": rng,
    })


# -----------------------------------------------------------------------------
# The run in steps: the data, the model, one update, then the loop that logs, evaluates and checkpoints


def set_up_model(cfg: TrainConfig, saved: dict | None, tok: Tokenizer, rank: int, world: int, device):
    """(model config, the Electra, the module each update runs: DDP-wrapped and compiled when asked, the
    optimizer, the step to start at). The weights are new, --init-from's released ones, or the checkpoint's."""
    try:
        mc = model_config(cfg, tok)
    except ValueError as e:
        raise SystemExit(str(e)) from e
    torch.manual_seed(cfg.seed)  # the same initial weights on every rank
    raw = build_model(mc, device)
    if saved is None and cfg.init_from:  # the released weights, not a random start
        raw.load_state_dict(load_electra(cfg.init_from, cfg.generator, cfg.revision, cfg.hub_cache_dir)[0].state_dict())
    optimizer = build_optimizer(raw, cfg, fused=device.type in ("cuda", "cpu"))  # torch fuses AdamW on these
    step = 0
    if saved is not None:
        raw.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        step = saved["step"]
        plumbing.set_rng_state(saved["rng"][rank])
    else:
        torch.manual_seed(cfg.seed + rank)  # different masks and dropout on each rank
    return mc, raw, plumbing.parallel_model(raw, world, device, cfg.compile), optimizer, step


def update(model: nn.Module, raw: Electra, optimizer, batches: Batches, step: int, cfg: TrainConfig,
           device: torch.device, autocast) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Update `step`: its learning rate, cfg.grad_accum micro-batches of forward and backward (DDP
    averages the gradients at the last), the clip and the AdamW step. Returns (the update's mean
    stats [len(METRICS)], the gradient norm before clipping, the lr); neither tensor is read here."""
    lr = learning_rate(step, cfg)
    for group in optimizer.param_groups:
        group["lr"] = lr
    stats = torch.zeros(len(METRICS), device=device)
    try:
        for micro in range(cfg.grad_accum):
            x, segment_ids, attention_mask = plumbing.to_device(batches.get(step, micro), device)  # [b, T] each
            last = micro == cfg.grad_accum - 1
            with model.no_sync() if batches.world > 1 and not last else contextlib.nullcontext():
                with autocast:
                    out = model(x, segment_ids, attention_mask)  # masks and samples are drawn inside, fresh each call
                (out.loss / cfg.grad_accum).backward()
            stats += report.step_stats(out) / cfg.grad_accum
        grad_norm = torch.nn.utils.clip_grad_norm_(raw.parameters(), cfg.clip_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    except torch.OutOfMemoryError as e:
        raise SystemExit(
            f"out of GPU memory at micro-batch {batches.micro_batch} x seq {cfg.seq_len}: add --grad-accum "
            f"{cfg.grad_accum * 2} (same batch {cfg.batch_size} per update, half the memory per step) or lower "
            f"--batch-size. The last checkpoint ({Path(cfg.out_dir) / 'ckpt.pt'}) is intact; continue with --resume."
        ) from e
    return stats, grad_norm.detach(), lr


def diverged(step: int, cfg: TrainConfig, last_ckpt: int | None) -> SystemExit:
    """The one line that stops a run whose loss or gradient norm was not finite at update `step`."""
    ckpt_path = Path(cfg.out_dir) / "ckpt.pt"
    good = ckpt_path if ckpt_path.is_file() else plumbing.previous_checkpoint(ckpt_path)  # after a fallback
    kept = (f"the last good checkpoint, {good} at step {last_ckpt:,}, is untouched"
            if last_ckpt is not None else "no checkpoint was written")
    return SystemExit(f"the loss is not finite at step {step:,} (lr {cfg.lr:g}): the run diverged and was "
                      f"stopped; {kept}. Start a new run with a lower --lr (e.g. {cfg.lr / 10:g}) or a longer --warmup")


def save_run(raw: Electra, optimizer, step: int, cfg: TrainConfig, mc: ElectraConfig, tok: Tokenizer,
             world: int, master: bool) -> None:
    """The checkpoint, with every rank's RNG states (gathered on rank 0), and curves.png."""
    states = plumbing.all_rng_states(world)
    if master:
        out_dir = Path(cfg.out_dir)
        save_checkpoint(out_dir / "ckpt.pt", raw, optimizer, step, cfg, mc, tok.hash(), states)
        report.plot_pretraining_curves(out_dir / "metrics.jsonl", out_dir / "curves.png")


def train(cfg: TrainConfig, saved: dict | None, rank: int, world: int, device: torch.device) -> dict:
    """The run: data, model and optimizer, then the loop of updates with its logs, held-out evaluations
    and checkpoints (see main for the arguments and what it returns)."""
    master = rank == 0
    say = print if master else (lambda *a, **k: None)
    out_dir = Path(cfg.out_dir)
    metrics_path, ckpt_path, curves_path = out_dir / "metrics.jsonl", out_dir / "ckpt.pt", out_dir / "curves.png"
    corpus, tok, ids, batches, eval_ex = pretraining_data(cfg, rank, world, say, saved and saved["vocab_hash"])
    mc, raw, model, optimizer, step = set_up_model(cfg, saved, tok, rank, world, device)
    precision, autocast = plumbing.mixed_precision(device, cfg.precision)
    flops = report.flops_per_step(mc, cfg.batch_size, cfg.seq_len)
    peak = report.peak_flops(device, cfg.peak_tflops)
    end = min(cfg.steps, cfg.stop_at or cfg.steps)
    say(report.startup_report(cfg, mc, raw, optimizer, tok, corpus, ids, batches.examples, eval_ex,
                              batches.micro_batch, world, device, flops, peak, step, end, precision))

    log = report.MetricsLog(metrics_path, step if saved is not None else None, master, device, world,
                            cfg.batch_size * cfg.seq_len, flops, peak)
    # The first update whose loss or gradient norm was not finite (0: none), kept on the device and read
    # only where the loop waits for the device anyway (logs, evaluations, checkpoints, the end).
    diverged_at = torch.zeros((), dtype=torch.long, device=device)
    last_ckpt = step if saved is not None else None
    last_train = last_eval = None
    interrupted = False
    bar = tqdm(total=cfg.steps, initial=step, unit="step", dynamic_ncols=True, disable=not master,
               desc=f"{cfg.objective}-{cfg.size}")
    projection = report.CpuProjection(cfg.size, device, step, end, bar.write)
    with plumbing.StopOnSignal() as stop:
        while step < end:
            stats, grad_norm, lr = update(model, raw, optimizer, batches, step, cfg, device, autocast)
            step += 1
            finite = torch.isfinite(stats[0]) & torch.isfinite(grad_norm)
            diverged_at = torch.where((diverged_at == 0) & ~finite, step, diverged_at)
            log.add(stats, grad_norm)
            bar.update(1)
            if master:
                projection.after_update(step)
            log_step = step % cfg.log_interval == 0 or step == end
            eval_step = step % cfg.eval_interval == 0 or step == end
            ckpt_step = step % cfg.ckpt_interval == 0 or step == end
            if (log_step or eval_step or ckpt_step or stop.requested) and diverged_at.item():
                bar.close()
                raise diverged(diverged_at.item(), cfg, last_ckpt)
            if log_step:
                last_train = log.train_row(step, lr, batches.epoch(step))
                bar.set_postfix_str(report.progress_line(last_train, cfg.objective), refresh=False)
            if master and len(eval_ex) and eval_step:
                held = report.evaluate_heldout(raw, ids, eval_ex, cfg, batches.micro_batch, batches.special, device, autocast)
                last_eval = {"step": step, "split": "eval", **held, "elapsed_s": log.elapsed()}
                log.write(last_eval)
                report.plot_pretraining_curves(metrics_path, curves_path)
                bar.write(f"step {step:,} held-out: {report.progress_line(last_eval, cfg.objective)}")
            interrupted = plumbing.agree_to_stop(stop.requested, log_step, world, device)
            if ckpt_step or interrupted:
                save_run(raw, optimizer, step, cfg, mc, tok, world, master)
                last_ckpt = step
            if interrupted:
                break
            if log_step:
                log.restart_clock()
    bar.close()
    if interrupted:
        say(f"stopped at step {step:,}: checkpoint saved to {ckpt_path}. Continue with the same command "
            f"plus --resume.")
    else:
        say(f"{'reached --stop-at' if end < cfg.steps else 'done'}: step {step:,}, checkpoint {ckpt_path}, "
            f"curves {curves_path}, metrics {metrics_path}")
    return {"model": raw, "step": step, "config": cfg, "model_config": mc, "tokenizer": tok, "train": last_train,
            "eval": last_eval, "interrupted": interrupted}


# -----------------------------------------------------------------------------
# The command line


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Pre-train ELECTRA (Clark et al. 2020). Presets per --size follow the paper's "
                    "Table 6; every value can be overridden.")
    add_options(p, TrainConfig)
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its ckpt.pt")
    p.add_argument("--export-hf", default=None, metavar="DIR",
                   help="write the checkpoint in --out in HuggingFace's ELECTRA layout to DIR, then exit")
    args = p.parse_args(argv)
    plumbing.check_flags(args, TrainConfig)
    return args


# ElectraConfig fields that --set may not change: they come from --objective and the vocabulary
NOT_SET = ("objective", "vocab_size", "pad_id", "cls_id", "sep_id", "mask_id")


def parse_overrides(items: list[str]) -> dict:
    """--set's ["num_layers=2", "dropout=0"] -> {"num_layers": 2, "dropout": 0.0}, typed by ElectraConfig."""
    return plumbing.parse_overrides(items, ElectraConfig, "--set", NOT_SET, "--objective / the vocabulary")


def resolve_config(args: argparse.Namespace, saved: dict | None) -> TrainConfig:
    """The run's TrainConfig: the flags given, the rest from the recipe; on --resume the checkpoint's
    run fields, which flags may not contradict (a run changed half-way is not the run that was started)."""
    flags = given(args, TrainConfig)
    if "overrides" in flags:
        flags["overrides"] = parse_overrides(flags["overrides"])
    if saved is not None:
        return TrainConfig(**plumbing.resumed(TrainConfig, flags, saved, args.out_dir or TrainConfig.out_dir))
    size = flags.get("size", TrainConfig.size)
    try:
        check_config(get_config(size, **flags.get("overrides", {})))
    except ValueError as e:
        raise SystemExit(f"--set {' '.join(args.overrides or [])}: {e} (size {size})") from e
    return TrainConfig(**flags)


def main(argv=None) -> dict:
    """python train.py [flags]; returns what the run produced (for tests and notebooks):
    {"model", "step", "config", "model_config", "tokenizer", "train", "eval", "interrupted"}."""
    args = parse_args(argv)
    out_dir = Path(args.out_dir or TrainConfig.out_dir)  # a flag not given is None (add_options)
    ckpt_path = out_dir / "ckpt.pt"
    if args.export_hf:
        saved = plumbing.load_checkpoint(ckpt_path, "--export-hf")
        model = Electra(ElectraConfig(**saved["model_config"]))
        model.load_state_dict(saved["model"])
        files = export_hf(model, out_dir / "vocab.txt", Path(args.export_hf))
        print(f"exported step {saved['step']:,} of {out_dir} in HuggingFace's ELECTRA layout:")
        for f in files:
            print(f"  {f}")
        return {"model": model, "step": saved["step"], "files": files}
    plumbing.check_run_folder(ckpt_path, args.resume)
    if args.init_from:  # continued pre-training: the released model's shape (as --set), vocab and size
        if args.resume or args.vocab or args.objective not in (None, "electra", "electra_15"):
            raise SystemExit("--init-from starts a new ELECTRA run from a released generator and discriminator, "
                             "with their vocab: drop --resume, --vocab and --objective")
        try:
            size, shape, vocab = released_start(args.init_from, args.generator, args.revision or TrainConfig.revision,
                                                args.hub_cache_dir)
        except (FileNotFoundError, ValueError, HubError) as e:
            raise SystemExit(f"--init-from {args.init_from}: {e}") from None
        args.size, args.vocab = args.size or size, str(vocab)
        args.overrides = [f"{k}={v}" for k, v in shape.items()] + (args.overrides or [])
    plumbing.check_writable(out_dir)
    rank = int(os.environ.get("RANK", "0"))  # torchrun's; plumbing.setup_distributed joins the group below
    with plumbing.run_lock(out_dir, rank):
        saved = plumbing.load_checkpoint(ckpt_path, set_aside=rank == 0) if args.resume else None
        cfg = resolve_config(args, saved["train_config"] if saved else None)
        rank, _, world, device = plumbing.setup_distributed(cfg.device)
        try:
            return train(cfg, saved, rank, world, device)
        finally:
            if world > 1:
                dist.destroy_process_group()


if __name__ == "__main__":
    main()
