"""Pre-training ELECTRA (Clark et al. 2020, arXiv 2003.10555).

    python train.py --size small                 # WikiText-103, downloaded once into ./cache
    python train.py --size tiny --data my_texts/ # a laptop's CPU: any .txt file or folder of them

    python train.py --out out --resume           # continue a stopped run exactly
    python train.py --out out --export-hf hf/    # HuggingFace ELECTRA layout (config.json, weights)
    python train.py --init-from google/electra-small --data my_texts/ --steps 10000 --lr 1e-4 \\
        --warmup 500                             # continued pre-training of Google's G and D
    torchrun --nproc_per_node 4 train.py --size base   # DDP on 4 GPUs
    python train.py --presets                    # every preset's parameters and FLOPs per step

Read top to bottom, like nanoGPT's train.py: the recipe (paper Table 6), the model, the optimizer
and its schedule, what a checkpoint holds, the run's set-up (the data, the model, the optimizer,
DDP, compile and mixed precision), the loop, then the command line. The data pipeline is data.py
and the model electra.py. What a run prints, logs and draws is support/report.py; the command
line's checks support/train_cli.py; the loop's guards (Ctrl-C, out of memory, a loss that is not
finite) and the plumbing (checkpoint files, the run folder, DDP, devices) support/plumbing.py.
"""
from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import asdict, dataclass, field
from dataclasses import replace as dc_replace
from pathlib import Path

from support import train_cli

# -----------------------------------------------------------------------------
# The recipe: per size (paper Table 6, official configure_pretraining.py), every value a flag. The
# model of each size, and its vocabulary size, is electra.SIZES.


@dataclass(frozen=True)
class Recipe:
    batch_size: int  # sequences per update, all GPUs and accumulation steps together
    lr: float  # peak learning rate
    steps: int  # updates for objective "electra"
    bert_steps: int  # updates for objective "bert" (Table 6 "Train Steps (BERT/ELECTRA)")
    seq_len: int  # tokens per example
    warmup: int  # linear warm-up updates
    log_interval: int = 100  # ours: updates between metrics.jsonl lines
    eval_interval: int = 2000  # ours: updates between held-out evaluations (and curves.png)
    ckpt_interval: int = 2000  # ours: updates between checkpoints (Ctrl-C saves one as well)


RECIPES = {
    # ours, for a laptop CPU: Small's sequence length, a quarter of its batch and twice its peak
    # lr (a 4-layer 128-wide model trains stably at 1e-3, and a short run needs it), for 1,800
    # updates, the 10 minutes of the README's CPU run on 2 idle cores. It logs every 10 updates and
    # evaluates every 50, so that a student sees the curves and D's view of a held-out sentence
    # within the first minutes, and saves every 300, so a run killed without Ctrl-C loses minutes.
    "tiny": Recipe(batch_size=32, lr=1e-3, steps=1_800, bert_steps=1_800, seq_len=128,
                   warmup=100, log_interval=10, eval_interval=50, ckpt_interval=300),
    "small": Recipe(batch_size=128, lr=5e-4, steps=1_000_000, bert_steps=1_450_000, seq_len=128,
                    warmup=10_000),
    "base": Recipe(batch_size=256, lr=2e-4, steps=766_000, bert_steps=1_000_000, seq_len=512,
                   warmup=10_000),
    "large": Recipe(batch_size=2048, lr=2e-4, steps=400_000, bert_steps=464_000, seq_len=512,
                    warmup=10_000),
}
ADAM_BETAS = (0.9, 0.999)  # Table 6 "Adam beta1, beta2"
ADAM_EPS = 1e-6  # Table 6 "Adam epsilon"
# official: max_predictions_per_seq = int((mask_prob + 0.005) * max_seq_length)
MASK_SLACK = 0.005


@dataclass
class TrainConfig:
    """One pre-training run; every field is a flag (batch_size: --batch-size). The recipe's fields
    default to ELECTRA-Small's, RECIPES["small"]; recipe_config fills in the recipe of the size
    asked for, as the command line does. RESUME_FIELDS are what a --resume keeps as the
    checkpoint has them; the other fields control the session."""

    size: str = "small"  # the model (electra.SIZES) and its recipe (RECIPES)
    objective: str = "electra"  # electra.OBJECTIVES (ELECTRA, BERT, Sec. 3.5's), or "electric"
    sharing: str = "embeddings"  # electra.SHARING: the weights G and D share (Sec. 3.2)
    algorithm: str = "joint"  # electra.ALGORITHMS: joint, two-stage or adversarial (Sec. 3.2)
    data: str = "wikitext-103"  # a .txt file, a folder of them, or a name in data.CORPUS_NAMES
    # where the known corpora are downloaded from (a mirror, a test's server): data.DATA_URL
    data_url: str = field(default_factory=lambda: DATA_URL)
    cache_dir: str = "cache"  # downloads and tokenised corpora, shared between runs
    out_dir: str = "out"  # the run folder (--out): ckpt.pt, vocab.txt, metrics.jsonl, curves.png
    vocab: str | None = None  # a BERT-format vocab.txt or a hub model's; None: train one
    vocab_size: int = 30522  # the vocab trained: Small's, BERT's uncased WordPiece (electra.SIZES)
    seq_len: int = RECIPES["small"].seq_len  # tokens per example (Table 6)
    batch_size: int = RECIPES["small"].batch_size  # sequences per update, all GPUs (Table 6)
    grad_accum: int = 1  # ours: micro-batches per update, to fit the paper's batch on a small GPU
    lr: float = RECIPES["small"].lr  # peak learning rate (Table 6)
    steps: int = RECIPES["small"].steps  # updates (Table 6; objective bert: Recipe.bert_steps)
    warmup: int = RECIPES["small"].warmup  # linear warm-up updates (Table 6)
    weight_decay: float = 0.01  # Table 6 "Weight Decay"; official excludes LayerNorm and bias
    clip_norm: float = 1.0  # official optimization.py: clip_by_global_norm(grads, 1.0)
    # False: one norm over G and D together, as the official code; True: G's and D's gradients
    # clipped apart, each to clip_norm, as DeBERTa's rtd_task.py (microsoft/DeBERTa: a trainer
    # each for G and D); sharing none or gdes, where no weight belongs to both
    clip_apart: bool = False
    eval_fraction: float = 0.01  # ours: the share of documents held out (0: none)
    eval_batches: int = 10  # ours: micro-batches per evaluation, a few thousand sequences on a GPU
    log_interval: int = RECIPES["small"].log_interval  # updates between metrics.jsonl lines
    eval_interval: int = RECIPES["small"].eval_interval  # updates between held-out evaluations
    ckpt_interval: int = RECIPES["small"].ckpt_interval  # updates between checkpoints
    stop_at: int | None = None  # stop with a checkpoint after this update (None: at steps)
    seed: int = 0  # the data order, masks, dropout and initialisation
    device: str = "auto"  # auto: cuda if available; cpu, cuda or cuda:N
    # torch.compile the model (the first update compiles, slowly); None: on a CUDA device
    # (train_cli.step_path decides, and why)
    compile: bool | None = None
    # with compile: CUDA graphs (mode "reduce-overhead") replay the compiled step in one launch,
    # for small models whose step is bound by kernel launches (bench/README.md); None: on one CUDA
    # device without accumulation
    cuda_graphs: bool | None = None
    precision: str = "auto"  # auto, bf16 or fp32: plumbing.mixed_precision
    peak_tflops: float | None = None  # accelerator peak for MFU; None: looked up from the GPU name
    overrides: dict = field(default_factory=dict)  # --set's ElectraConfig fields: {"num_layers": 2}
    init_from: str | None = None  # continue pre-training a released ELECTRA (hub name or folder)
    generator: str | None = None  # with init_from: the generator's hub name or folder
    revision: str = "main"  # hub revision of init_from: a branch, tag or commit
    hub_cache_dir: str | None = None  # hub checkpoints; None: ~/.cache/electra-from-scratch/hub


# What a --resume keeps as the checkpoint has it: a run changed half-way is not the run started.
RESUME_FIELDS = ("size", "objective", "sharing", "algorithm", "data", "vocab_size", "seq_len",
                 "batch_size", "lr", "steps", "warmup", "weight_decay", "clip_norm", "clip_apart",
                 "eval_fraction", "seed", "overrides")


def recipe_config(**flags) -> TrainConfig:
    """A TrainConfig of `flags`, the fields not given from the recipe of its size (RECIPES, and
    electra.SIZES' vocab size) or TrainConfig's defaults.

    >>> cfg = recipe_config(size="tiny", lr=3e-3)
    >>> cfg.lr, cfg.batch_size, cfg.steps, cfg.vocab_size, cfg.log_interval, cfg.eval_interval
    (0.003, 32, 1800, 8192, 10, 50)
    >>> recipe_config(objective="bert").steps  # Table 6: BERT-Small trains 1.45M updates
    1450000
    """
    given = TrainConfig(**flags)  # its size and objective
    r = RECIPES[given.size]
    recipe = {
        "vocab_size": get_config(given.size).vocab_size,
        "seq_len": r.seq_len,
        "batch_size": r.batch_size,
        "lr": r.lr,
        "steps": r.bert_steps if given.objective == "bert" else r.steps,
        "warmup": r.warmup,
        "log_interval": r.log_interval,
        "eval_interval": r.eval_interval,
        "ckpt_interval": r.ckpt_interval,
    }
    return TrainConfig(**{**recipe, **flags})


if __name__ == "__main__":
    # The command line is read before torch loads (seconds): a mistyped flag answers at once.
    train_cli.parse_args(sys.argv[1:], TrainConfig, RECIPES)

import torch
import torch.distributed as dist
import torch.nn as nn
from tqdm import tqdm

from data import DATA_URL, PretrainingData, pretraining_data
from electra import (
    Electra,
    ElectraConfig,
    decays,
    drop_frozen_gradients,
    get_config,
    init_discriminator_from_generator,
    lr_factor,
    two_stage_loss,
)
from electric import pretraining_model
from support import plumbing, report
from support.hf import export_hf, load_electra
from tokenizer import Tokenizer

# -----------------------------------------------------------------------------
# The model: the size's preset (electra.SIZES) with the vocabulary and the recipe's lengths


def model_config(cfg: TrainConfig, tok: Tokenizer) -> ElectraConfig:
    """The model preset for cfg.size with the tokenizer's vocabulary and the recipe's lengths."""
    mc = get_config(cfg.size, **cfg.overrides)
    mc = dc_replace(mc, vocab_size=len(tok), pad_id=tok.pad_id, cls_id=tok.cls_id,
                    sep_id=tok.sep_id, mask_id=tok.mask_id, objective=cfg.objective,
                    sharing=cfg.sharing, algorithm=cfg.algorithm,
                    max_position=max(mc.max_position, cfg.seq_len))
    if "max_predictions" not in cfg.overrides:
        mc = dc_replace(mc, max_predictions=max_predictions(mc.mask_prob, cfg.seq_len))
    return mc


def max_predictions(mask_prob: float, seq_len: int) -> int:
    """The cap on k a run of `seq_len` gets, as the official max_predictions_per_seq:
    int((mask_prob + 0.005) * seq_len). Small at 128: 19; Base at 512: 79; tiny at 25%: 32."""
    return max(1, int((mask_prob + MASK_SLACK) * seq_len))


def preset_configs() -> dict[str, ElectraConfig]:
    """Each size's ElectraConfig as a run of its recipe builds it (the preset's vocabulary), for
    `--presets`: max_predictions follows the recipe's sequence length and the size's mask rate."""
    configs = {}
    for size, recipe in RECIPES.items():
        mc = get_config(size)
        configs[size] = dc_replace(mc, max_predictions=max_predictions(mc.mask_prob,
                                                                       recipe.seq_len))
    return configs


def build_model(mc: ElectraConfig, device) -> Electra:
    """A freshly initialised Electra (or the BERT baseline for objective "bert", or electric.py's
    Electric for "electric") on `device`."""
    return pretraining_model(mc).to(device)


# -----------------------------------------------------------------------------
# The optimizer and the learning-rate schedule


def learning_rate(step: int, cfg: TrainConfig) -> float:
    """Pre-training lr of update `step`: cfg.lr * lr_factor, linear warm-up then linear decay.

    Example: lr 1e-3, warmup 10, steps 100: step 0 -> 1e-4, step 9 -> 9.1e-4, step 50 -> 5e-4.

    >>> cfg = TrainConfig(lr=1e-3, warmup=10, steps=100)
    >>> [round(learning_rate(step, cfg), 8) for step in (0, 9, 50, 100)]
    [0.0001, 0.00091, 0.0005, 0.0]
    """
    total = cfg.steps
    if cfg.algorithm == "two-stage":  # ours: each stage its own warm-up and decay, as two runs
        switch = stage_switch(cfg)
        step, total = (step, switch) if step < switch else (step - switch, cfg.steps - switch)
    return cfg.lr * lr_factor(step, total, cfg.warmup)


def stage_switch(cfg: TrainConfig) -> int:
    """Two-stage training's first update of stage 2 (Sec. 3.2: n updates each, n = steps / 2)."""
    return cfg.steps // 2


def stage(step: int, cfg: TrainConfig) -> int:
    """Two-stage training's stage at update `step`: 1 (G alone) or 2 (D alone)."""
    return 1 if step < stage_switch(cfg) else 2


def start_stage_2(raw: Electra, optimizer: torch.optim.AdamW) -> None:
    """Two-stage training's switch, after stage 1's last update: D starts from G's weights
    (init_discriminator_from_generator) and AdamW forgets both models, so that D starts as a
    training of D alone would, and G, frozen from now on, keeps no state. Running it twice changes
    nothing more (G does not move in between), so a run resumed at the switch runs it again, for a
    checkpoint there that still holds stage 1's optimizer state."""
    init_discriminator_from_generator(raw)
    optimizer.state.clear()


def clip_groups(model: Electra, apart: bool) -> list[list[nn.Parameter]]:
    """The parameters the clip takes one norm over: all of them as one group, or (apart) G's and
    the rest (D's) as two. Built once per run: the parameters do not change during it."""
    if not apart:
        return [list(model.parameters())]
    g_params = list(model.generator.parameters())
    mine = {id(p) for p in g_params}
    return [g_params, [p for p in model.parameters() if id(p) not in mine]]


def clip_gradients(groups: list[list[nn.Parameter]], max_norm: float) -> torch.Tensor:
    """g <- g * min(1, max_norm / ||g||), ||g|| over each group of clip_groups as one vector.
    Returns ||g|| of all the parameters, before the clip.

    One norm, the official code's, couples G and D: when lambda * L_Disc's gradient is large, G's
    update shrinks with it. Clipped apart, each network's scale is its own."""
    norms = [nn.utils.clip_grad_norm_(params, max_norm) for params in groups]
    return norms[0] if len(norms) == 1 else torch.stack(norms).norm()


def build_optimizer(model: nn.Module, cfg: TrainConfig, fused: bool = True) -> torch.optim.AdamW:
    """AdamW with the paper's settings; weight decay on matrices only, not LayerNorm or biases.

    Deviation: the official AdamWeightDecayOptimizer has no bias correction; torch's AdamW has.
    For a steady gradient the official update is (1 - 0.9^t) / sqrt(1 - 0.999^t) times AdamW's:
    3.16x at update 1, 6.57x at update 12 (the largest), 1.26x at 1,000, within 1% only after
    ~3,900 updates (finetune.AdamWeightDecay is the official one; tests/test_finetune_model.py
    checks these ratios). Pre-training warms up for 10k updates, so the difference falls where
    the lr is still small, in runs hundreds of thousands of updates long; and torch has a fused
    kernel for AdamW (one kernel for all parameters).
    """
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if decays(p)], "weight_decay": cfg.weight_decay},
              {"params": [p for p in params if not decays(p)], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=ADAM_BETAS, eps=ADAM_EPS, fused=fused)


# -----------------------------------------------------------------------------
# Checkpoints


def checkpoint(model: Electra, optimizer, step: int, cfg: TrainConfig, vocab_hash: str,
               rng: list[dict]) -> dict:
    """Everything --resume needs, a plain dict (written by plumbing.write_checkpoint: never half a
    file, the previous checkpoint kept as plumbing.load_checkpoint's fallback).

    The learning-rate schedule is a pure function of the step (learning_rate), and so is the
    data order (data.Batches), so `step` is their whole state. `rng` holds every rank's RNG
    states.
    """
    return {
        "model": model.state_dict(),  # generator, discriminator and their shared embeddings
        "optimizer": optimizer.state_dict(),
        "step": step,
        "train_config": asdict(cfg),
        "model_config": asdict(model.config),
        "vocab_hash": vocab_hash,
        "rng": rng,
    }


# -----------------------------------------------------------------------------
# The run's set-up: the data, the model and its optimizer, DDP, compile and mixed precision


@dataclass
class Run:
    """A run set up (set_up): where it runs, its data, its model and optimizer, where it starts."""

    rank: int  # this process, of `world` (torchrun's RANK; 0 without torchrun)
    world: int  # processes (torchrun's WORLD_SIZE; 1 without torchrun)
    device: torch.device
    data: PretrainingData  # the corpus, its tokenizer and ids, the batches, the held-out examples
    mc: ElectraConfig  # the model's config: cfg.size's, with the vocabulary and --set
    raw: Electra  # the model itself; its state_dict is what a checkpoint holds
    model: nn.Module  # what each update runs: `raw`, DDP-wrapped and compiled per `path`
    optimizer: torch.optim.AdamW
    precision: str  # "bf16" or "fp32" (plumbing.mixed_precision)
    autocast: contextlib.AbstractContextManager  # the context each forward pass runs in
    step: int  # the update to start at: 0, or the checkpoint's
    path: str  # how each update runs: "cuda-graphs", "compile" or "eager" (train_cli.step_path)
    why: str  # the reason for `path`, printed at start-up


def set_up(cfg: TrainConfig, saved: dict | None, rank: int, world: int, device) -> Run:
    """The run on process `rank` of `world`: its data, and its model and optimizer with weights
    new, --init-from's released ones, or the checkpoint `saved`'s (with the optimizer's state and
    the RNG states, so the run continues exactly)."""
    path, why = train_cli.step_path(device.type, world, cfg.grad_accum, cfg.compile,
                                    cfg.cuda_graphs)
    data = pretraining_data(cfg, rank, world, saved and saved["vocab_hash"])
    try:
        mc = model_config(cfg, data.tok)
        torch.manual_seed(cfg.seed)  # the same initial weights on every rank
        raw = build_model(mc, device)  # Electra() checks mc: a ValueError names the field
    except ValueError as e:
        raise SystemExit(str(e)) from e
    if saved is None and cfg.init_from:  # the released weights, not a random start
        released, _ = load_electra(cfg.init_from, cfg.generator, cfg.revision, cfg.hub_cache_dir)
        if released.config.sharing != mc.sharing:  # read from the weights: hf.hf_sharing
            raise SystemExit(f"--init-from {cfg.init_from}: its generator and discriminator share "
                             f"{released.config.sharing!r}: add --sharing "
                             f"{released.config.sharing}")
        raw.load_state_dict(released.state_dict())
    optimizer = build_optimizer(raw, cfg, fused=device.type in ("cuda", "cpu"))  # torch fuses these
    step = 0
    if saved is not None:
        raw.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        step = saved["step"]
        plumbing.set_rng_state(saved["rng"][rank])
        if cfg.algorithm == "two-stage" and step == stage_switch(cfg):  # whatever state it holds
            start_stage_2(raw, optimizer)
    else:
        torch.manual_seed(cfg.seed + rank)  # different masks and dropout on each rank
    model = raw
    if device.type == "cuda":  # TF32 for any fp32 matmul left outside autocast
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    if world > 1:  # DDP: each process its own micro-batches, gradients averaged in backward
        device_ids = [device.index] if device.type == "cuda" else None
        # two-stage trains half the model at a time: DDP must expect parameters without gradient
        model = nn.parallel.DistributedDataParallel(
            model, device_ids=device_ids, find_unused_parameters=cfg.algorithm == "two-stage")
    if path != "eager":
        # Compiling the DDP wrapper (not the model inside it) lets torch split the graph at DDP's
        # gradient buckets and overlap communication; `raw` keeps the state_dict's keys.
        model = torch.compile(model, mode="reduce-overhead" if path == "cuda-graphs" else None)
    # bf16 autocast on GPUs that have it, fp32 elsewhere
    precision, autocast = plumbing.mixed_precision(device, cfg.precision)
    return Run(rank=rank, world=world, device=device, data=data, mc=mc, raw=raw, model=model,
               optimizer=optimizer, precision=precision, autocast=autocast, step=step, path=path,
               why=why)


def run_eagerly(run: Run) -> None:
    """The run after torch.compile failed to build its step: the model it wrapped, no CUDA
    graphs, and none of the gradients the failed update left."""
    run.model = run.model._orig_mod  # the module torch.compile wrapped
    run.path = "eager"
    run.optimizer.zero_grad(set_to_none=True)


def save_run(cfg: TrainConfig, run: Run, step: int) -> None:
    """The checkpoint, with every rank's RNG states (gathered on rank 0), and curves.png."""
    states = plumbing.all_rng_states(run.world)
    if run.rank == 0:
        out_dir = Path(cfg.out_dir)
        state = checkpoint(run.raw, run.optimizer, step, cfg, run.data.tok.hash(), states)
        plumbing.write_checkpoint(out_dir / "ckpt.pt", state)
        report.plot_pretraining_curves(out_dir / "metrics.jsonl", out_dir / "curves.png",
                                       cfg.objective)


# -----------------------------------------------------------------------------
# The loop: updates, then logs, held-out evaluations and checkpoints


def train(cfg: TrainConfig, saved: dict | None, rank: int, world: int, device,
          before_update=None) -> dict:
    """The run: set up, then the loop of updates with its logs, held-out evaluations and
    checkpoints (see main for the arguments and what it returns)."""
    run = set_up(cfg, saved, rank, world, device)
    model, optimizer, batches = run.model, run.optimizer, run.data.batches
    out_dir = Path(cfg.out_dir)
    master = rank == 0
    say = print if master else (lambda *a, **k: None)
    step = run.step
    end = min(cfg.steps, cfg.stop_at or cfg.steps)
    say(report.startup_report(cfg, run, end))
    log = report.MetricsLog(out_dir / "metrics.jsonl", cfg, run, end)
    last_train = last_eval = None
    logged = {}  # what an experiment's hook adds to metrics.jsonl's rows
    stop = False
    # the metrics of each update (G's accuracy, D's accuracy, precision, recall, AUC), compiled
    # beside the model so that on a GPU they cost no extra kernel launches
    compiled = run.path != "eager"
    step_stats = torch.compile(report.step_stats) if compiled else report.step_stats
    clipped = clip_groups(run.raw, cfg.clip_apart)  # what each gradient-norm clip is taken over
    with (tqdm(total=cfg.steps, initial=step, unit="step", dynamic_ncols=True, disable=not master,
               desc=f"{cfg.objective}-{cfg.size}") as bar,
          plumbing.LoopGuards(cfg, world, device, batches.micro_batch,
                              last_ckpt=step if saved else None) as guards):
        # torch.compile builds the step during the first update: its wait, and eager if it fails
        first = plumbing.FirstCompile(compiled, bar, bar.write if master else lambda line: None)
        while step < end:
            # the learning rate of this update: warm-up, then linear decay to 0 at cfg.steps
            lr = learning_rate(step, cfg)
            for group in optimizer.param_groups:
                group["lr"] = lr
            if before_update is not None:  # an experiment's hook (experiments/hooks.py)
                logged = before_update(step, cfg, run) or {}
            # cfg.grad_accum micro-batches of forward and backward, the clip, the AdamW step
            stats = torch.zeros(len(report.METRICS), device=device)  # the update's mean metrics
            # out of GPU memory: one line, how to fit the batch; a failed compile: one line
            with guards.update(), first.update():
                for micro in range(cfg.grad_accum):
                    batch = plumbing.to_device(batches.get(step, micro), device)
                    x, segment_ids, attention_mask = batch  # [b, T] each
                    # DDP all-reduces the gradients in backward: at the last micro-batch only
                    last = micro == cfg.grad_accum - 1
                    sync = model.no_sync() if world > 1 and not last else contextlib.nullcontext()
                    if run.path == "cuda-graphs":  # a new step: the last replay's outputs may
                        torch.compiler.cudagraph_mark_step_begin()  # be overwritten
                    with sync:
                        with run.autocast:  # masks and samples are drawn inside, fresh each call
                            out = model(x, segment_ids, attention_mask)
                        loss = (two_stage_loss(out, stage(step, cfg))
                                if cfg.algorithm == "two-stage" else out.loss)
                        (loss / cfg.grad_accum).backward()
                    stats += step_stats(out, x, attention_mask) / cfg.grad_accum
                # two-stage: no update of the model the stage freezes. Eager backward leaves its
                # gradients None; a compiled backward fills them with zeros, which AdamW would use
                if cfg.algorithm == "two-stage":
                    drop_frozen_gradients(run.raw, stage(step, cfg))
                grad_norm = clip_gradients(clipped, cfg.clip_norm)
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
            if first.failed:  # torch.compile could not build the step: this update again, eager
                run_eagerly(run)
                model, step_stats = run.model, report.step_stats
                continue
            step += 1
            if cfg.algorithm == "two-stage" and step == stage_switch(cfg):
                # the end of stage 1: D starts from G's weights, with fresh AdamW state, and the
                # checkpoint of this step holds them, so a snapshot here fine-tunes what G learnt
                start_stage_2(run.raw, optimizer)

            log_step = step % cfg.log_interval == 0 or step == end
            eval_step = step % cfg.eval_interval == 0 or step == end
            ckpt_step = step % cfg.ckpt_interval == 0 or step == end
            # a loss that is not finite ends the run here; Ctrl-C on any process stops them all
            stop = guards.after_update(step, stats[0], grad_norm, log_step,
                                       sync=log_step or eval_step or ckpt_step)
            log.add(step, stats, grad_norm)
            bar.update(1)
            if log_step:
                last_train = log.train_row(step, lr, batches.epoch(step), logged)
                bar.set_postfix_str(report.progress_line(last_train, cfg.objective), refresh=False)
            if master and eval_step and len(run.data.eval_ex):
                last_eval, lines = report.heldout_evaluation(cfg, run, step, log, logged)
                bar.write(lines)
            if ckpt_step or stop:
                save_run(cfg, run, step)
                guards.saved(step)
            if stop:
                break
            if log_step:
                log.restart_clock()  # evaluation and checkpoint time is not training speed
    ckpt_path = out_dir / "ckpt.pt"
    if stop:
        say(f"stopped at step {step:,}: checkpoint saved to {ckpt_path}. Continue with the same "
            f"command plus --resume.")
    else:
        say(f"{'reached --stop-at' if end < cfg.steps else 'done'}: step {step:,}, checkpoint "
            f"{ckpt_path}, curves {out_dir / 'curves.png'}, metrics {out_dir / 'metrics.jsonl'}")
    return {"model": run.raw, "step": step, "config": cfg, "model_config": run.mc,
            "tokenizer": run.data.tok, "train": last_train, "eval": last_eval, "interrupted": stop}


# -----------------------------------------------------------------------------
# The command line (its flags and checks: support/train_cli.py)


def parse_args(argv=None):
    """The flags of `argv` (None: the command line's), every value checked before anything is
    written."""
    args = train_cli.parse_args(argv, TrainConfig, RECIPES)
    train_cli.check_args(args, recipe_config)
    return args


def parse_config(argv) -> TrainConfig:
    """The TrainConfig of a new run's command line (for tools that build a run's parts)."""
    return train_cli.resolve_config(parse_args(argv), None, recipe_config, RESUME_FIELDS)


def main(argv=None, before_update=None) -> dict:
    """python train.py [flags]; returns what the run produced (for tests and notebooks):
    {"model", "step", "config", "model_config", "tokenizer", "train", "eval", "interrupted"}.

    before_update(step, cfg, run): called before each update, for experiments that change a run as
    it goes (experiments/hooks.py: G's temperature); what it returns is added to metrics.jsonl's
    rows. The paper's method has none."""
    args = parse_args(argv)
    out_dir = Path(args.out_dir)
    if args.presets:
        table = report.preset_costs(RECIPES, preset_configs())
        print(table)
        return {"presets": table}
    if args.export_hf:
        saved = plumbing.load_checkpoint(out_dir / "ckpt.pt", "--export-hf")
        if saved["model_config"].get("objective") == "electric":  # HF has no Electric layout
            raise SystemExit(f"--export-hf: {out_dir} is an Electric run, which HuggingFace has "
                             f"no layout for; fine-tune it with finetune.py --init {out_dir}")
        model = Electra(ElectraConfig(**saved["model_config"]))
        model.load_state_dict(saved["model"])
        files = export_hf(model, out_dir / "vocab.txt", Path(args.export_hf))
        print(f"exported step {saved['step']:,} of {out_dir} in HuggingFace's ELECTRA layout:")
        for f in files:
            print(f"  {f}")
        if model.config.sharing == "all":  # two folders cannot hold one tensor
            print("  generator/ holds a copy of D's encoder: HuggingFace loads the two untied; "
                  "--init-from ties them again")
        if model.config.sharing == "gdes":  # HuggingFace has no GDES
            print("  discriminator/ holds D's embeddings merged, E_G + E_Delta; --init-from "
                  "splits them again")
        return {"model": model, "step": saved["step"], "files": files}
    rank = int(os.environ.get("RANK", "0"))  # torchrun's; setup_distributed joins the group
    with plumbing.open_run_folder(out_dir / "ckpt.pt", args.resume, rank) as saved:
        if args.init_from:  # continued pre-training: the released model's shape, vocab and size
            train_cli.released_flags(args)
        cfg = train_cli.resolve_config(args, saved and saved["train_config"], recipe_config,
                                       RESUME_FIELDS)
        rank, _, world, device = plumbing.setup_distributed(cfg.device)
        try:
            return train(cfg, saved, rank, world, device, before_update)
        finally:
            if world > 1:
                dist.destroy_process_group()


if __name__ == "__main__":
    main()
