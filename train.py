"""Pre-training ELECTRA (Clark et al. 2020, arXiv 2003.10555): the recipe, the optimizer and the
loop.

    python train.py --size small                 # WikiText-103, downloaded once into ./cache
    python train.py --size tiny --data my_texts/ # any .txt file or folder of them

    python train.py --out out --resume           # continue a stopped run exactly
    python train.py --out out --export-hf hf/    # HuggingFace ELECTRA layout (config.json, weights)
    python train.py --init-from google/electra-small --data my_texts/ --steps 10000 --lr 1e-4 \\
        --warmup 500                             # continued pre-training of Google's G and D
    torchrun --nproc_per_node 4 train.py --size base   # DDP on 4 GPUs
    python train.py --presets                    # every preset's parameters and FLOPs per step

Read top to bottom, like nanoGPT's train.py: the recipe (paper Table 6) and TrainConfig, whose
fields are the flags; the learning-rate schedule and the optimizer; what a checkpoint holds; the
run's set-up (set_up: the data, the model, the optimizer) and train(), the loop: the forward and
backward of each update, the clip, the optimizer step, then the logs, held-out evaluations and
checkpoints; last the command line (parse_args, resolve_config, main). The data pipeline is
data.py, the model electra.py, what a run prints, logs and draws report.py, and the plumbing
(checkpoint files, the run folder, DDP, devices, signals) plumbing.py.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from dataclasses import asdict, dataclass, field, fields
from dataclasses import replace as dc_replace
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
from tqdm import tqdm

from data import DATA_URL, KNOWN_CORPORA, SHORT_SEQ_MIN, PretrainingData, pretraining_data
from electra import (
    METRICS,
    OBJECTIVES,
    Electra,
    ElectraConfig,
    decays,
    get_config,
    lr_factor,
)
from support import plumbing, report
from support.hf import HubError, export_hf, load_electra, released_start
from support.plumbing import add_flag
from tokenizer import CONFIG as WORDPIECE
from tokenizer import Tokenizer

MIN_VOCAB_SIZE = len(WORDPIECE.specials) + 1  # the special tokens and at least one piece

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
    eval_interval: int = 2000  # updates between held-out evaluations (and curves.png redraws)
    temperature_end: float | None = None  # G's temperature schedule (temperature_at); None: none
    # the update that schedule ends at, for the recipe's `steps` (a run of other --steps moves it
    # in proportion: recipe_config); None: the last
    temperature_steps: int | None = None


RECIPES = {
    # ours, for a laptop CPU: the discriminator visibly learns in 15 minutes on 2 cores (README,
    # "See ELECTRA learn on a CPU"; the search is experiments/cpu_preset.py). ELECTRA-Small's seq
    # 128; a quarter of its batch; twice its peak lr (a 4-layer 128-wide model trains stably at
    # 1e-3 and a short run needs it); 1,800 updates, what fits the 15 minutes on 2 cores (the
    # README gives the measured run), with a warm-up of 100; held-out AUC every 100 updates, so
    # the curve is visible.
    "tiny": Recipe(batch_size=32, lr=1e-3, steps=1_800, bert_steps=1_800, seq_len=128,
                   warmup=100, eval_interval=100),
    # ours (issue 27), the tiny model over lunch: what 60 minutes hold on 2 cores at 15% masked
    # (9,600 updates), and G's temperature moving from the model's 2 to the paper's 1 over the
    # first half, then 1: replacements D can spot while it learns to attend, the paper's
    # plausible ones for the second half. D's context AUC reaches 0.65 (target) only so; with the
    # move ending at the last update it stops at 0.63 (README, "Does what D learns transfer?").
    "tiny-hour": Recipe(batch_size=32, lr=1e-3, steps=9_600, bert_steps=9_600, seq_len=128,
                        warmup=100, eval_interval=100, temperature_end=1.0,
                        temperature_steps=4_800),
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
    objective: str = "electra"  # electra.OBJECTIVES: ELECTRA, the BERT baseline, Sec. 3.5 ablations
    data: str = "wikitext-103"  # a .txt file, a folder of them, or a name in data.KNOWN_CORPORA
    data_url: str = DATA_URL  # where the known corpora are downloaded from (a mirror, a test)
    cache_dir: str = "cache"  # downloads and tokenised corpora, shared between runs
    out_dir: str = "out"  # the run folder (--out): ckpt.pt, vocab.txt, metrics.jsonl, curves.png
    vocab: str | None = None  # a BERT-format vocab.txt; None: train one on the corpus
    vocab_size: int = get_config("small").vocab_size  # the vocab trained (electra.SIZES)
    seq_len: int = RECIPES["small"].seq_len  # tokens per example (Table 6)
    batch_size: int = RECIPES["small"].batch_size  # sequences per update, all GPUs (Table 6)
    grad_accum: int = 1  # ours: micro-batches per update, to fit the paper's batch on a small GPU
    lr: float = RECIPES["small"].lr  # peak learning rate (Table 6)
    steps: int = RECIPES["small"].steps  # updates (Table 6; objective bert: Recipe.bert_steps)
    warmup: int = RECIPES["small"].warmup  # linear warm-up updates (Table 6)
    weight_decay: float = 0.01  # Table 6 "Weight Decay"; official excludes LayerNorm and bias
    clip_norm: float = 1.0  # official optimization.py: clip_by_global_norm(grads, 1.0)
    # ours (issue 27): G samples at a temperature moving linearly from the model's to this one at
    # the last update (temperature_at): replacements D can tell early, plausible ones late
    temperature_end: float | None = None  # None: the model's temperature throughout (preset)
    # ours (issue 27): the update the move ends at, T_end after it, so that D spends the rest of
    # the run on the paper's plausible samples; None: the last update (preset)
    temperature_steps: int | None = None
    eval_fraction: float = 0.01  # ours: the share of documents held out (0: none)
    eval_batches: int = 10  # ours: micro-batches per evaluation, a few thousand sequences on a GPU
    log_interval: int = 100  # ours: updates between metrics.jsonl lines
    eval_interval: int = RECIPES["small"].eval_interval  # updates between held-out evaluations
    ckpt_interval: int = 2000  # ours: updates between checkpoints
    stop_at: int | None = None  # stop with a checkpoint after this update (None: at steps)
    seed: int = 0  # the data order, masks, dropout and initialisation
    device: str = "auto"  # auto: cuda if available; cpu, cuda or cuda:N
    compile: bool = False  # torch.compile the model: for GPUs (the first steps compile, slowly)
    # with compile: CUDA graphs (mode "reduce-overhead") replay the compiled step in one launch;
    # ELECTRA-Small's step is launch-bound (H100 bench: 81 steps/s, 21 compiled without them)
    cuda_graphs: bool = False
    precision: str = "auto"  # auto, bf16 or fp32: plumbing.mixed_precision
    peak_tflops: float | None = None  # accelerator peak for MFU; None: looked up from the GPU name
    overrides: dict = field(default_factory=dict)  # --set's ElectraConfig fields: {"num_layers": 2}
    init_from: str | None = None  # continue pre-training a released ELECTRA (hub name or folder)
    generator: str | None = None  # with init_from: the generator's hub name or folder
    revision: str = "main"  # hub revision of init_from: a branch, tag or commit
    hub_cache_dir: str | None = None  # hub checkpoints; None: ~/.cache/electra-from-scratch/hub


# What a --resume keeps as the checkpoint has it: a run changed half-way is not the run started.
RESUME_FIELDS = ("size", "objective", "data", "vocab_size", "seq_len", "batch_size", "lr", "steps",
                 "warmup", "weight_decay", "clip_norm", "temperature_end", "temperature_steps",
                 "eval_fraction", "seed", "overrides")


def recipe_config(**flags) -> TrainConfig:
    """A TrainConfig of `flags`, the fields not given from the recipe of its size (RECIPES, and
    electra.SIZES' vocab size) or TrainConfig's defaults.

    >>> cfg = recipe_config(size="tiny", lr=3e-3)
    >>> cfg.lr, cfg.batch_size, cfg.steps, cfg.vocab_size
    (0.003, 32, 1800, 8192)
    >>> recipe_config(objective="bert").steps  # Table 6: BERT-Small trains 1.45M updates
    1450000
    >>> cfg = recipe_config(size="tiny-hour")
    >>> cfg.steps, cfg.temperature_end, cfg.temperature_steps
    (9600, 1.0, 4800)

    A run of other --steps keeps the recipe's temperature schedule in proportion (the move over
    the first half for tiny-hour), unless --temperature-steps is given:

    >>> recipe_config(size="tiny-hour", steps=1800).temperature_steps
    900
    >>> recipe_config(size="tiny-hour", steps=1800, temperature_steps=1200).temperature_steps
    1200
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
        "eval_interval": r.eval_interval,
    }
    if given.objective != "bert":  # BERT's masked LM samples nothing: no temperature to move
        recipe["temperature_end"] = r.temperature_end
        recipe["temperature_steps"] = r.temperature_steps
        if r.temperature_steps is not None and "steps" in flags:
            # ours: the schedule is a share of the run, so a shorter run still reaches T_end
            share = r.temperature_steps / recipe["steps"]
            recipe["temperature_steps"] = max(1, round(share * flags["steps"]))
    return TrainConfig(**{**recipe, **flags})


def check_train_config(cfg: TrainConfig) -> None:
    """One line (SystemExit) for a value out of its range, naming its flag.

    >>> check_train_config(TrainConfig(lr=-1.0))
    Traceback (most recent call last):
    SystemExit: --lr -1.0: must be a positive number (the peak learning rate)
    >>> check_train_config(TrainConfig(eval_fraction=1.0))
    Traceback (most recent call last):
    SystemExit: --eval-fraction 1.0: must be a share in [0, 1) (0: no held-out set)
    >>> check_train_config(TrainConfig(seq_len=4))
    Traceback (most recent call last):
    SystemExit: --seq-len 4: must be an integer >= 5 (the example builder's shortest target length)
    """
    def refuse(flag: str, value, must: str) -> SystemExit:
        return SystemExit(f"{flag} {value}: must be {must}")

    def positive(v) -> bool:
        return math.isfinite(v) and v > 0

    if cfg.vocab_size < MIN_VOCAB_SIZE:
        raise refuse("--vocab-size", cfg.vocab_size,
                     f"an integer >= {MIN_VOCAB_SIZE} (the special tokens and at least one piece)")
    if cfg.seq_len < SHORT_SEQ_MIN:
        raise refuse("--seq-len", cfg.seq_len, f"an integer >= {SHORT_SEQ_MIN} "
                     f"(the example builder's shortest target length)")
    if cfg.batch_size < 1:
        raise refuse("--batch-size", cfg.batch_size, "an integer >= 1 (sequences per update)")
    if cfg.grad_accum < 1:
        raise refuse("--grad-accum", cfg.grad_accum, "an integer >= 1 (micro-batches per update)")
    if not positive(cfg.lr):
        raise refuse("--lr", cfg.lr, "a positive number (the peak learning rate)")
    if cfg.steps < 1:
        raise refuse("--steps", cfg.steps, "an integer >= 1 (updates)")
    if cfg.warmup < 0:
        raise refuse("--warmup", cfg.warmup, "an integer >= 0 (warm-up updates)")
    if not (math.isfinite(cfg.weight_decay) and cfg.weight_decay >= 0):
        raise refuse("--weight-decay", cfg.weight_decay, "a number >= 0 (AdamW weight decay)")
    if not positive(cfg.clip_norm):
        raise refuse("--clip-norm", cfg.clip_norm, "a positive number (the gradient-norm clip)")
    if cfg.cuda_graphs and not cfg.compile:
        raise SystemExit("--cuda-graphs replays torch.compile's graphs: add --compile")
    if cfg.cuda_graphs and cfg.grad_accum > 1:
        # the first micro-batch's gradients may be the graph's own output buffers, which the next
        # replay overwrites; untested on a GPU, so refused rather than risked
        raise SystemExit(f"--cuda-graphs with --grad-accum {cfg.grad_accum} is not tested on a GPU "
                         f"yet: drop one of them")
    if cfg.temperature_end is not None and not positive(cfg.temperature_end):
        raise refuse("--temperature-end", cfg.temperature_end,
                     "a positive number (G's sampling temperature at the last update)")
    if cfg.temperature_end is not None and cfg.objective == "bert":
        raise refuse("--temperature-end", cfg.temperature_end,
                     "left out with --objective bert (BERT's masked LM samples no replacements)")
    if cfg.temperature_steps is not None and cfg.temperature_steps < 1:
        raise refuse("--temperature-steps", cfg.temperature_steps,
                     "an integer >= 1 (the update that reaches --temperature-end)")
    if cfg.temperature_steps is not None and cfg.temperature_end is None:
        raise refuse("--temperature-steps", cfg.temperature_steps,
                     "given with --temperature-end (the temperature it moves to)")
    if not 0 <= cfg.eval_fraction < 1:
        raise refuse("--eval-fraction", cfg.eval_fraction, "a share in [0, 1) (0: no held-out set)")
    if cfg.eval_batches < 1:
        raise refuse("--eval-batches", cfg.eval_batches,
                     "an integer >= 1 (micro-batches per evaluation)")
    if cfg.log_interval < 1:
        raise refuse("--log-interval", cfg.log_interval,
                     "an integer >= 1 (updates between metrics lines)")
    if cfg.eval_interval < 1:
        raise refuse("--eval-interval", cfg.eval_interval,
                     "an integer >= 1 (updates between evaluations)")
    if cfg.ckpt_interval < 1:
        raise refuse("--ckpt-interval", cfg.ckpt_interval,
                     "an integer >= 1 (updates between checkpoints)")
    if cfg.stop_at is not None and cfg.stop_at < 1:
        raise refuse("--stop-at", cfg.stop_at, "an integer >= 1 (the update to stop after)")
    if cfg.seed < 0:
        raise refuse("--seed", cfg.seed, "an integer >= 0 (the random seed)")
    if cfg.peak_tflops is not None and not positive(cfg.peak_tflops):
        raise refuse("--peak-tflops", cfg.peak_tflops,
                     "a positive number (the accelerator's peak TFLOP/s)")


# -----------------------------------------------------------------------------
# The schedules (learning rate, G's sampling temperature) and the optimizer


def learning_rate(step: int, cfg: TrainConfig) -> float:
    """Pre-training lr of update `step`: cfg.lr * lr_factor.

    Example: lr 1e-3, warmup 10, steps 100: step 0 -> 1e-4, step 9 -> 9.1e-4, step 50 -> 5e-4.

    >>> cfg = TrainConfig(lr=1e-3, warmup=10, steps=100)
    >>> [round(learning_rate(step, cfg), 8) for step in (0, 9, 50, 100)]
    [0.0001, 0.00091, 0.0005, 0.0]
    """
    return cfg.lr * lr_factor(step, cfg.steps, cfg.warmup)


def temperature_at(step: int, cfg: TrainConfig, config: ElectraConfig) -> float:
    """G's sampling temperature at update `step` (counted from 0, as in learning_rate):

        T(step) = T_0 + (T_end - T_0) * min(step / (S - 1), 1),  S = temperature_steps, or steps

    T_0 = config.temperature (the model's: the paper's 1, the tiny preset's 2) at the first update,
    T_end = cfg.temperature_end at update S (counted from 1: step S - 1) and after, linear
    between; S is the run's last update unless cfg.temperature_steps is given; a single update
    samples at T_0. --stop-at does not shorten it (nor the lr schedule). cfg.temperature_end
    None: T_0 throughout, the paper's constant temperature.

    ours (issue 27): at a high temperature G proposes rare tokens, which D learns to flag from the
    token alone, an early signal; lowered towards 1, G's samples become plausible and D has to read
    their context to find them.

    Example: T_0 2, T_end 1, 5 updates: 2, 1.75, 1.5, 1.25, 1; reaching 1 at update 3 instead:
    2, 1.5, 1, 1, 1.

    >>> cfg = TrainConfig(steps=5, temperature_end=1.0)
    >>> [temperature_at(step, cfg, ElectraConfig(temperature=2.0)) for step in range(5)]
    [2.0, 1.75, 1.5, 1.25, 1.0]
    >>> cfg = TrainConfig(steps=5, temperature_end=1.0, temperature_steps=3)
    >>> [temperature_at(step, cfg, ElectraConfig(temperature=2.0)) for step in range(5)]
    [2.0, 1.5, 1.0, 1.0, 1.0]
    >>> temperature_at(3, TrainConfig(steps=5), ElectraConfig(temperature=2.0))  # no schedule
    2.0
    """
    if cfg.temperature_end is None:
        return config.temperature
    S = cfg.temperature_steps if cfg.temperature_steps is not None else cfg.steps
    fraction = min(step / max(S - 1, 1), 1.0)
    return config.temperature + (cfg.temperature_end - config.temperature) * fraction


def model_config(cfg: TrainConfig, tok: Tokenizer) -> ElectraConfig:
    """The model preset for cfg.size with the tokenizer's vocabulary and the recipe's lengths."""
    mc = get_config(cfg.size, **cfg.overrides)
    mc = dc_replace(mc, vocab_size=len(tok), pad_id=tok.pad_id, cls_id=tok.cls_id,
                    sep_id=tok.sep_id, mask_id=tok.mask_id, objective=cfg.objective,
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
        k_cap = max_predictions(mc.mask_prob, recipe.seq_len)
        configs[size] = dc_replace(mc, max_predictions=k_cap)
    return configs


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


def checkpoint(model: Electra, optimizer, step: int, cfg: TrainConfig, vocab_hash: str,
               rng: list[dict]) -> dict:
    """Everything --resume needs, a plain dict (written by plumbing.write_checkpoint: never half a
    file, the previous checkpoint kept as plumbing.load_checkpoint's fallback).

    The learning-rate schedule is a pure function of the step (learning_rate), and so is the
    data order (Batches), so `step` is their whole state. `rng` holds every rank's RNG states.
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
# The run: its set-up (data, model, optimizer), then the loop of updates, logs, held-out
# evaluations and checkpoints


@dataclass
class Run:
    """A run set up (set_up): where it runs, its data, its model and optimizer, where it starts."""

    rank: int  # this process, of `world` (torchrun's RANK; 0 without torchrun)
    world: int  # processes (torchrun's WORLD_SIZE; 1 without torchrun)
    device: torch.device
    data: PretrainingData  # the corpus, its tokenizer and ids, the batches, the held-out examples
    mc: ElectraConfig  # the model's config: cfg.size's, with the vocabulary and --set
    raw: Electra  # the model itself; its state_dict is what a checkpoint holds
    model: nn.Module  # what each update runs: `raw`, DDP-wrapped and compiled when asked
    optimizer: torch.optim.AdamW
    precision: str  # "bf16" or "fp32" (plumbing.mixed_precision)
    autocast: contextlib.AbstractContextManager  # the context each forward pass runs in
    step: int  # the update to start at: 0, or the checkpoint's


def set_up(cfg: TrainConfig, saved: dict | None, rank: int, world: int, device) -> Run:
    """The run on process `rank` of `world`: its data, and its model and optimizer with weights
    new, --init-from's released ones, or the checkpoint `saved`'s (with the optimizer's state and
    the RNG states, so the run continues exactly)."""
    if world > 1 and cfg.cuda_graphs:
        raise SystemExit("--cuda-graphs is not tested with DDP (no multi-GPU machine yet): drop it "
                         "or run one process")
    data = pretraining_data(cfg, rank, world, saved and saved["vocab_hash"])
    try:
        mc = model_config(cfg, data.tok)
        torch.manual_seed(cfg.seed)  # the same initial weights on every rank
        raw = build_model(mc, device)  # Electra() checks mc: a ValueError names the field
    except ValueError as e:
        raise SystemExit(str(e)) from e
    if saved is None and cfg.init_from:  # the released weights, not a random start
        released, _ = load_electra(cfg.init_from, cfg.generator, cfg.revision, cfg.hub_cache_dir)
        raw.load_state_dict(released.state_dict())
    # torch fuses AdamW on these
    optimizer = build_optimizer(raw, cfg, fused=device.type in ("cuda", "cpu"))
    step = 0
    if saved is not None:
        raw.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        step = saved["step"]
        plumbing.set_rng_state(saved["rng"][rank])
    else:
        torch.manual_seed(cfg.seed + rank)  # different masks and dropout on each rank
    model = raw
    if device.type == "cuda":  # TF32 for any fp32 matmul left outside autocast
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    if world > 1:
        device_ids = [device.index] if device.type == "cuda" else None
        model = nn.parallel.DistributedDataParallel(model, device_ids=device_ids)
    if cfg.compile:
        # In place, so the model inside keeps its state_dict keys; compiling the DDP wrapper (not
        # the model inside it) lets torch split the graph at DDP's gradient buckets and overlap
        # communication.
        model.compile(mode="reduce-overhead" if cfg.cuda_graphs else None)
    precision, autocast = plumbing.mixed_precision(device, cfg.precision)
    return Run(rank=rank, world=world, device=device, data=data, mc=mc, raw=raw, model=model,
               optimizer=optimizer, precision=precision, autocast=autocast, step=step)


def diverged(step: int, cfg: TrainConfig, last_ckpt: int | None) -> SystemExit:
    """The one line that stops a run whose loss or gradient norm was not finite at update
    `step`."""
    ckpt_path = Path(cfg.out_dir) / "ckpt.pt"
    # the previous checkpoint, after a fallback
    good = ckpt_path if ckpt_path.is_file() else plumbing.previous_checkpoint(ckpt_path)
    if last_ckpt is not None:
        kept = f"the last good checkpoint, {good} at step {last_ckpt:,}, is untouched"
    else:
        kept = "no checkpoint was written"
    return SystemExit(f"the loss is not finite at step {step:,} (lr {cfg.lr:g}): the run diverged "
                      f"and was stopped; {kept}. Start a new run with a lower --lr "
                      f"(e.g. {cfg.lr / 10:g}) or a longer --warmup")


def save_run(cfg: TrainConfig, run: Run, step: int) -> None:
    """The checkpoint, with every rank's RNG states (gathered on rank 0), and curves.png."""
    states = plumbing.all_rng_states(run.world)
    if run.rank == 0:
        out_dir = Path(cfg.out_dir)
        state = checkpoint(run.raw, run.optimizer, step, cfg, run.data.tok.hash(), states)
        plumbing.write_checkpoint(out_dir / "ckpt.pt", state)
        report.plot_pretraining_curves(out_dir / "metrics.jsonl", out_dir / "curves.png",
                                       cfg.objective)


def train(cfg: TrainConfig, saved: dict | None, rank: int, world: int, device) -> dict:
    """The run: set up, then the loop of updates with its logs, held-out evaluations and
    checkpoints (see main for the arguments and what it returns)."""
    run = set_up(cfg, saved, rank, world, device)
    master = rank == 0
    say = print if master else (lambda *a, **k: None)
    out_dir = Path(cfg.out_dir)
    metrics_path = out_dir / "metrics.jsonl"
    ckpt_path = out_dir / "ckpt.pt"
    curves_path = out_dir / "curves.png"
    batches = run.data.batches
    step = run.step
    end = min(cfg.steps, cfg.stop_at or cfg.steps)
    say(report.startup_report(cfg, run, end))

    log = report.MetricsLog(metrics_path, cfg, run, end)
    # The first update whose loss or gradient norm was not finite (0: none), kept on the device
    # and read only where the loop waits for the device anyway (logs, evaluations, checkpoints).
    diverged_at = torch.zeros((), dtype=torch.long, device=device)
    last_ckpt = step if saved is not None else None
    last_train = None
    last_eval = None
    interrupted = False
    bar = tqdm(total=cfg.steps, initial=step, unit="step", dynamic_ncols=True, disable=not master,
               desc=f"{cfg.objective}-{cfg.size}")
    with plumbing.StopOnSignal() as stop:
        while step < end:
            # the learning rate of this update: warm-up, then linear decay to 0 at cfg.steps
            lr = learning_rate(step, cfg)
            for group in run.optimizer.param_groups:
                group["lr"] = lr
            # G's sampling temperature of this update: the model's, or its schedule's
            temperature = temperature_at(step, cfg, run.mc)
            # cfg.grad_accum micro-batches of forward and backward (DDP averages the gradients at
            # the last), the clip, the AdamW step
            stats = torch.zeros(len(METRICS), device=device)  # the update's mean metrics
            try:
                for micro in range(cfg.grad_accum):
                    batch = [torch.from_numpy(a) for a in batches.get(step, micro)]
                    if device.type == "cuda":  # from pinned memory, without waiting for the copy
                        batch = [t.pin_memory().to(device, non_blocking=True) for t in batch]
                    x, segment_ids, attention_mask = batch  # [b, T] each
                    last = micro == cfg.grad_accum - 1
                    if world > 1 and not last:
                        sync = run.model.no_sync()  # DDP: no gradient all-reduce before the last
                    else:
                        sync = contextlib.nullcontext()
                    # CUDA graphs: a new step, so the last replay's outputs (already read into
                    # stats) may be overwritten
                    if cfg.cuda_graphs:
                        torch.compiler.cudagraph_mark_step_begin()
                    with sync:
                        with run.autocast:
                            # masks and samples are drawn inside, fresh each call
                            out = run.model(x, segment_ids, attention_mask,
                                            temperature=temperature)
                        (out.loss / cfg.grad_accum).backward()
                    stats += report.step_stats(out) / cfg.grad_accum
                grad_norm = nn.utils.clip_grad_norm_(run.raw.parameters(), cfg.clip_norm)
                run.optimizer.step()
                run.optimizer.zero_grad(set_to_none=True)
            except torch.OutOfMemoryError as e:
                raise SystemExit(
                    f"out of GPU memory at micro-batch {batches.micro_batch} x seq {cfg.seq_len}: "
                    f"add --grad-accum {cfg.grad_accum * 2} (same batch {cfg.batch_size} per "
                    f"update, half the memory per step) or lower --batch-size. The last "
                    f"checkpoint ({ckpt_path}) is intact; continue with --resume.") from e
            step += 1

            finite = torch.isfinite(stats[0]) & torch.isfinite(grad_norm)
            diverged_at = torch.where((diverged_at == 0) & ~finite, step, diverged_at)
            log.add(step, stats, grad_norm)
            bar.update(1)
            log_step = step % cfg.log_interval == 0 or step == end
            eval_step = step % cfg.eval_interval == 0 or step == end
            ckpt_step = step % cfg.ckpt_interval == 0 or step == end
            if (log_step or eval_step or ckpt_step or stop.requested) and diverged_at.item():
                bar.close()
                raise diverged(diverged_at.item(), cfg, last_ckpt)
            # metrics.jsonl's rows carry the temperature when it moves
            logged = {"temperature": temperature} if cfg.temperature_end is not None else {}
            if log_step:
                last_train = log.train_row(step, lr, batches.epoch(step), logged)
                bar.set_postfix_str(report.progress_line(last_train, cfg.objective), refresh=False)
            if master and len(run.data.eval_ex) and eval_step:
                # D against G's samples at the temperature of the update just made, as in training
                held = report.evaluate_heldout(run.raw, run.data.eval_ex, batches, cfg,
                                               run.autocast, temperature)
                last_eval = {"step": step, "split": "eval", **held, **logged,
                             "elapsed_s": log.elapsed()}
                log.write(last_eval)
                report.plot_pretraining_curves(metrics_path, curves_path, cfg.objective)
                line = report.progress_line(last_eval, cfg.objective)
                bar.write(f"step {step:,} held-out: {line}")
                if run.raw.discriminator is not None:  # the same sentence each time, D improving
                    sample = report.heldout_example(run.raw, run.data.eval_ex, batches, cfg,
                                                    temperature)
                    bar.write(report.marked_sentence(run.data.tok.id_to_token, *sample,
                                                     tty=sys.stdout.isatty()))
            interrupted = plumbing.agree_to_stop(stop.requested, log_step, world, device)
            if ckpt_step or interrupted:
                save_run(cfg, run, step)
                last_ckpt = step
            if interrupted:
                break
            if log_step:
                log.restart_clock()
    bar.close()
    if interrupted:
        say(f"stopped at step {step:,}: checkpoint saved to {ckpt_path}. Continue with the same "
            f"command plus --resume.")
    else:
        say(f"{'reached --stop-at' if end < cfg.steps else 'done'}: step {step:,}, checkpoint "
            f"{ckpt_path}, curves {curves_path}, metrics {metrics_path}")
    return {
        "model": run.raw,
        "step": step,
        "config": cfg,
        "model_config": run.mc,
        "tokenizer": run.data.tok,
        "train": last_train,
        "eval": last_eval,
        "interrupted": interrupted,
    }


# -----------------------------------------------------------------------------
# The command line


def parse_args(argv=None) -> argparse.Namespace:
    """One flag per TrainConfig field (dashes; the underscore spelling is a hidden alias), and
    --resume, --export-hf, --presets. A flag of RESUME_FIELDS or the recipe that is not given
    parses to None: resolve_config takes it from the checkpoint or the recipe. Every flag given is
    range-checked here (check_train_config), before anything is written."""
    p = argparse.ArgumentParser(
        description="Pre-train ELECTRA (Clark et al. 2020). Presets per --size follow the paper's "
                    "Table 6; every value can be overridden.")
    c = TrainConfig  # the defaults
    add_flag(p, "size", choices=tuple(RECIPES), help=f"model and recipe preset (default {c.size})")
    add_flag(p, "objective", choices=OBJECTIVES,
             help="electra: replaced token detection; bert: the masked-LM baseline; electra_15, "
                  "replace_mlm, all_tokens_mlm: the ablations of Sec. 3.5 (default electra)")
    add_flag(p, "data", help=f".txt file, folder of .txt files, or one of {list(KNOWN_CORPORA)} "
                             f"(default {c.data})")
    add_flag(p, "data_url", default=c.data_url,
             help=f"base URL of the known corpora (or $ELECTRA_DATA_URL; default {DATA_URL})")
    add_flag(p, "cache_dir", default=c.cache_dir,
             help="downloads and tokenised corpora (default %(default)s)")
    p.add_argument("--out", dest="out_dir", metavar="OUT", default=c.out_dir,
                   help="run folder: ckpt.pt, vocab.txt, metrics.jsonl, curves.png "
                        "(default %(default)s)")
    add_flag(p, "vocab", help="a BERT-format vocab.txt (default: train one on the corpus)")
    add_flag(p, "vocab_size", type=int, help="size of the trained vocab (preset)")
    add_flag(p, "seq_len", type=int, help="tokens per example (preset)")
    add_flag(p, "batch_size", type=int, help="sequences per update, all GPUs together (preset)")
    add_flag(p, "grad_accum", type=int, default=c.grad_accum,
             help="micro-batches per update (default %(default)s)")
    add_flag(p, "lr", type=float, help="peak learning rate (preset)")
    add_flag(p, "steps", type=int, help="updates (preset)")
    add_flag(p, "warmup", type=int, help="warm-up updates (preset)")
    add_flag(p, "weight_decay", type=float, help=f"AdamW weight decay (default {c.weight_decay})")
    add_flag(p, "clip_norm", type=float, help=f"gradient-norm clip (default {c.clip_norm})")
    add_flag(p, "temperature_end", type=float,
             help="G's sampling temperature at the last update, reached linearly from the model's "
                  "(--set temperature=...; tiny 2, the paper's 1) (preset: tiny-hour 1, the "
                  "others constant)")
    add_flag(p, "temperature_steps", type=int,
             help="the update that reaches --temperature-end, held after it (preset: tiny-hour "
                  "4800, the others the last)")
    add_flag(p, "eval_fraction", type=float,
             help=f"share of documents held out (default {c.eval_fraction})")
    add_flag(p, "eval_batches", type=int, default=c.eval_batches,
             help="micro-batches per evaluation (default %(default)s)")
    add_flag(p, "log_interval", type=int, default=c.log_interval,
             help="updates between metrics.jsonl lines (default %(default)s)")
    add_flag(p, "eval_interval", type=int, help="updates between held-out evaluations (preset)")
    add_flag(p, "ckpt_interval", type=int, default=c.ckpt_interval,
             help="updates between checkpoints (default %(default)s)")
    add_flag(p, "stop_at", type=int,
             help="stop with a checkpoint after this update (the schedule still runs to --steps)")
    add_flag(p, "seed", type=int, help=f"random seed (default {c.seed})")
    add_flag(p, "device", default=c.device,
             help="auto (default: cuda if available), cpu, cuda or cuda:N")
    add_flag(p, "compile", action="store_true", help="torch.compile the model")
    add_flag(p, "cuda_graphs", action="store_true",
             help="with --compile on a GPU: CUDA graphs (torch.compile's reduce-overhead mode), "
                  "one launch per compiled step")
    add_flag(p, "precision", choices=("auto", "bf16", "fp32"), default=c.precision,
             help="auto (default): bf16 autocast on GPUs with bf16 tensor cores, fp32 elsewhere")
    add_flag(p, "peak_tflops", type=float,
             help="accelerator peak TFLOP/s for MFU (default: looked up from the GPU name)")
    p.add_argument("--set", dest="overrides", metavar="FIELD=VALUE", action="append",
                   help="override an ElectraConfig field, e.g. --set num_layers=2 (repeatable)")
    add_flag(p, "init_from", metavar="NAME_OR_FOLDER",
             help="continue pre-training a released ELECTRA (e.g. google/electra-small, its hub "
                  "name or a folder): its shape, vocab, generator and discriminator")
    add_flag(p, "generator", help="with --init-from: the generator's hub name or folder")
    add_flag(p, "revision", default=c.revision,
             help="hub revision of --init-from (branch, tag or commit)")
    add_flag(p, "hub_cache_dir",
             help="hub checkpoints (default ~/.cache/electra-from-scratch/hub)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --out from its ckpt.pt")
    add_flag(p, "export_hf", metavar="DIR",
             help="write the checkpoint in --out in HuggingFace's ELECTRA layout to DIR, then exit")
    p.add_argument("--presets", action="store_true",
                   help="print every preset's parameters and FLOPs per step, then exit")
    args = p.parse_args(argv)
    if args.overrides is not None:
        args.overrides = parse_overrides(args.overrides)
    objective_kept = args.objective in (None, "electra", "electra_15")
    if args.init_from and (args.resume or args.vocab or not objective_kept):
        raise SystemExit("--init-from starts a new ELECTRA run from a released generator and "
                         "discriminator, with their vocab: drop --resume, --vocab and --objective")
    check_train_config(recipe_config(**config_flags(args)))  # the flags given, over the preset
    return args


def config_flags(args: argparse.Namespace) -> dict:
    """The TrainConfig fields of the parsed flags, those that parsed to None (not given) left
    out."""
    values = {f.name: getattr(args, f.name) for f in fields(TrainConfig)}
    return {name: value for name, value in values.items() if value is not None}


# ElectraConfig fields that --set may not change: they come from --objective and the vocabulary
NOT_SET = ("objective", "vocab_size", "pad_id", "cls_id", "sep_id", "mask_id")


def parse_overrides(items: list[str]) -> dict:
    """--set's ["num_layers=2", "dropout=0"] -> {"num_layers": 2, "dropout": 0.0}, typed by
    ElectraConfig.

    >>> parse_overrides(["num_layers=2", "dropout=0"])
    {'num_layers': 2, 'dropout': 0.0}
    """
    return plumbing.parse_overrides(items, ElectraConfig, "--set", NOT_SET,
                                    "--objective / the vocabulary")


def resumed(flags: dict, saved: dict, out_dir: str) -> dict:
    """The fields of a resumed run: the flags given, and RESUME_FIELDS as the checkpoint's config
    `saved` has them, which a flag may not contradict: one line naming each flag that does.

    >>> saved = asdict(recipe_config(size="tiny"))
    >>> cfg = recipe_config(**resumed({"log_interval": 1}, saved, "out"))
    >>> cfg.size, cfg.lr, cfg.log_interval
    ('tiny', 0.001, 1)
    >>> resumed({"size": "small"}, saved, "out")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    SystemExit: --resume: ... different settings: --size small (checkpoint: tiny). Resume with ...
    """
    # a checkpoint written before a field existed ran with its default
    saved = {**asdict(TrainConfig()), **saved}
    changed = []
    for name in RESUME_FIELDS:
        if name in flags and flags[name] != saved[name]:
            flag = "--set" if name == "overrides" else "--" + name.replace("_", "-")
            changed.append(f"{flag} {flags[name]} (checkpoint: {saved[name]})")
    if changed:
        raise SystemExit(f"--resume: the checkpoint in {out_dir} was trained with different "
                         f"settings: {'; '.join(changed)}. Resume with the checkpoint's settings "
                         f"(drop those flags), or start a new run with another --out.")
    return {**flags, **{name: saved[name] for name in RESUME_FIELDS}}


def resolve_config(args: argparse.Namespace, saved: dict | None) -> TrainConfig:
    """The run's TrainConfig: the flags given, the rest from the recipe; on --resume the
    checkpoint's RESUME_FIELDS, which flags may not contradict (resumed)."""
    flags = config_flags(args)
    if saved is not None:
        return recipe_config(**resumed(flags, saved, args.out_dir))
    cfg = recipe_config(**flags)
    try:
        get_config(cfg.size, **cfg.overrides)  # checked: a bad --set stops here, before the data
    except ValueError as e:
        given = " ".join(f"{k}={v}" for k, v in cfg.overrides.items())
        raise SystemExit(f"--set {given}: {e} (size {cfg.size})") from e
    return cfg


def main(argv=None) -> dict:
    """python train.py [flags]; returns what the run produced (for tests and notebooks):
    {"model", "step", "config", "model_config", "tokenizer", "train", "eval", "interrupted"}."""
    args = parse_args(argv)
    out_dir = Path(args.out_dir)
    ckpt_path = out_dir / "ckpt.pt"
    if args.presets:
        table = report.preset_costs(RECIPES, preset_configs())
        print(table)
        return {"presets": table}
    if args.export_hf:
        saved = plumbing.load_checkpoint(ckpt_path, "--export-hf")
        model = Electra(ElectraConfig(**saved["model_config"]))
        model.load_state_dict(saved["model"])
        files = export_hf(model, out_dir / "vocab.txt", Path(args.export_hf))
        print(f"exported step {saved['step']:,} of {out_dir} in HuggingFace's ELECTRA layout:")
        for f in files:
            print(f"  {f}")
        return {"model": model, "step": saved["step"], "files": files}
    # torchrun's; plumbing.setup_distributed joins the group below
    rank = int(os.environ.get("RANK", "0"))
    with plumbing.open_run_folder(ckpt_path, args.resume, rank) as saved:
        if args.init_from:  # continued pre-training: the released model's shape, vocab and size
            try:
                size, shape, vocab = released_start(args.init_from, args.generator, args.revision,
                                                    args.hub_cache_dir)
            except (FileNotFoundError, ValueError, HubError) as e:
                raise SystemExit(f"--init-from {args.init_from}: {e}") from None
            args.size = args.size or size
            args.vocab = str(vocab)
            shape = parse_overrides([f"{k}={v}" for k, v in shape.items()])  # as --set gives them
            args.overrides = {**shape, **(args.overrides or {})}
        cfg = resolve_config(args, saved["train_config"] if saved else None)
        rank, _, world, device = plumbing.setup_distributed(cfg.device)
        try:
            return train(cfg, saved, rank, world, device)
        finally:
            if world > 1:
                dist.destroy_process_group()


if __name__ == "__main__":
    main()
