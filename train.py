"""Pre-training ELECTRA (Clark et al. 2020, arXiv 2003.10555) end to end.

    python train.py --size small                 # WikiText-103, downloaded once into ./cache
    python train.py --size tiny --data my_texts/ # any .txt file or folder of them

    python train.py --out out --resume           # continue a stopped run exactly
    python train.py --out out --export-hf hf/    # HuggingFace ELECTRA layout (config.json + weights)
    python train.py --init-from google/electra-small --data my_texts/ --steps 10000 --lr 1e-4 --warmup 500
                                                 # continued pre-training of Google's released G and D
    torchrun --nproc_per_node 4 train.py --size base   # DDP on 4 GPUs

Read top to bottom like nanoGPT's train.py: downloads, corpora, examples (the official
build_pretraining_dataset.py), the recipe (paper Table 6), checkpoints, metrics, the loop.
Every piece is importable: download / extract_zip, resolve_corpus, ExampleBuilder /
build_examples / collate / Batches, RECIPES / TrainConfig / learning_rate, model_config /
build_model / build_optimizer, save_checkpoint / load_checkpoint / export_hf, evaluate,
plot_curves, and main(argv) itself.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field, fields
from dataclasses import replace as dc_replace
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from tqdm import tqdm

from data import (
    DATA_URL,
    KNOWN_CORPORA,
    SENTENCE_END_TOKENS,
    SHORT_SEQ_MIN,
    Batches,
    build_examples,
    encode_corpus,
    load_or_train_vocab,
    pretraining_batch,
    resolve_corpus,
    split_long_lines,
)
from electra import (
    OBJECTIVES,
    Electra,
    ElectraConfig,
    check_config,
    count_params,
    disc_auc,
    flops_per_step,
    flops_per_step_official,
    get_config,
)
from hf import HubError, export_hf, load_electra, released_start
from plumbing import (
    DownloadError,
    StopOnSignal,
    at_least,
    atomic_write,
    barrier,
    check_writable,
    mixed_precision,
    non_negative,
    positive,
    rng_state,
    run_lock,
    set_rng_state,
    setup_distributed,
)
from tokenizer import CONFIG as WORDPIECE
from tokenizer import Tokenizer

# -----------------------------------------------------------------------------
# The recipe: presets per size (paper Table 6, official configure_pretraining.py), every value a flag.


@dataclass(frozen=True)
class Recipe:
    batch_size: int  # sequences per update, all GPUs and accumulation steps together
    lr: float  # peak learning rate
    steps: int  # updates for objective "electra"
    bert_steps: int  # updates for objective "bert" (Table 6 "Train Steps (BERT/ELECTRA)")
    seq_len: int  # tokens per example
    warmup: int  # linear warm-up updates
    vocab_size: int  # WordPiece vocabulary trained when --vocab is not given
    eval_interval: int = 2000  # updates between held-out evaluations (and curves.png redraws)


RECIPES = {
    # ours, for a laptop CPU: one command that shows the discriminator learning in 15 minutes on 2
    # cores (README, "See ELECTRA learn on a CPU"; the search is experiments/cpu_preset.py).
    # ELECTRA-Small's seq 128 (same example builder); a quarter of its batch so a step takes ~0.4 s;
    # twice its peak lr (a 4-layer 128-wide model trains stably at 1e-3 and a short run needs it);
    # 1,800 updates (~12.5 minutes at the 2.45 steps/s measured, plus data preparation and
    # evaluations) with a warm-up of 100; an 8k vocab so the embedding table (V x 128) does not
    # dwarf a 4-layer encoder; held-out AUC every 100 updates, so the curve is visible.
    "tiny": Recipe(batch_size=32, lr=1e-3, steps=1_800, bert_steps=1_800, seq_len=128, warmup=100,
                   vocab_size=8192, eval_interval=100),
    "small": Recipe(batch_size=128, lr=5e-4, steps=1_000_000, bert_steps=1_450_000, seq_len=128,
                    warmup=10_000, vocab_size=30522),
    "base": Recipe(batch_size=256, lr=2e-4, steps=766_000, bert_steps=1_000_000, seq_len=512,
                   warmup=10_000, vocab_size=30522),
    "large": Recipe(batch_size=2048, lr=2e-4, steps=400_000, bert_steps=464_000, seq_len=512,
                    warmup=10_000, vocab_size=30522),
}
ADAM_BETAS = (0.9, 0.999)  # Table 6 "Adam beta1, beta2"
ADAM_EPS = 1e-6  # Table 6 "Adam epsilon"
WEIGHT_DECAY = 0.01  # Table 6 "Weight Decay"; official excludes LayerNorm and bias
CLIP_NORM = 1.0  # official optimization.py: clip_by_global_norm(grads, 1.0)
MASK_SLACK = 0.005  # official: max_predictions_per_seq = int((mask_prob + 0.005) * max_seq_length)

CPU_PRESET = "tiny"  # the preset made to show ELECTRA learning on a laptop CPU (see RECIPES)
CPU_PRESET_MINUTES = 15  # what the CPU preset's run takes on a 2-core CPU (measured, README)
PROJECTION_STEPS = 3  # ours: updates timed, after the first (one-off set-up), for the CPU time projection

# Peak dense bf16 tensor-core FLOP/s per GPU, from the vendors' data sheets, for MFU. The first
# name found in torch.cuda.get_device_name() wins; --peak-tflops overrides.
GPU_PEAK_TFLOPS = {"H100 PCIe": 756, "H100": 989, "H200": 989, "GH200": 989, "B200": 2250, "A100": 312,
                   "L40S": 362, "L40": 181, "L4": 121, "A10": 125, "RTX 4090": 165, "RTX 3090": 71,
                   "V100": 125, "T4": 65}


@dataclass
class TrainConfig:
    size: str = "small"  # model preset in electra.SIZES and recipe in RECIPES
    objective: str = "electra"  # "electra" (replaced token detection), "bert" (MLM baseline, Table 1) or a Sec. 3.5 ablation
    data: str = "wikitext-103"  # .txt file, folder of them, or a name in KNOWN_CORPORA
    data_url: str = DATA_URL  # where known corpora are downloaded from
    cache_dir: str = "cache"  # downloads and the tokenised corpus, shared between runs
    out_dir: str = "out"  # checkpoint, vocab.txt, metrics.jsonl, curves.png of this run
    vocab: str | None = None  # a BERT-format vocab.txt; None: train one on the corpus
    vocab_size: int = 30522  # size of the trained vocabulary (preset)
    seq_len: int = 128  # tokens per example (preset)
    batch_size: int = 128  # sequences per update, all ranks and accumulation steps (preset)
    grad_accum: int = 1  # micro-batches per update: the paper's batch on a small GPU
    lr: float = 5e-4  # peak learning rate (preset)
    steps: int = 1_000_000  # updates (preset)
    warmup: int = 10_000  # linear warm-up updates (preset)
    weight_decay: float = WEIGHT_DECAY
    clip_norm: float = CLIP_NORM
    eval_fraction: float = 0.01  # share of documents held out for evaluation (ours)
    eval_batches: int = 10  # micro-batches per evaluation (ours: a few thousand sequences on a GPU)
    log_interval: int = 100  # updates between metrics.jsonl lines
    eval_interval: int = 2000  # updates between held-out evaluations (and curves.png redraws)
    ckpt_interval: int = 2000  # updates between checkpoints
    stop_at: int | None = None  # stop (with a checkpoint) after this update; the schedule still runs to `steps`
    seed: int = 0  # data order, masks, dropout, initialisation
    device: str = "auto"  # "auto": cuda if available, else cpu
    compile: bool = False  # torch.compile the model (mostly for GPUs; the first steps are slow while it compiles)
    precision: str = "auto"  # "auto": bf16 autocast on a GPU with bf16 tensor cores, else fp32; "bf16"; "fp32"
    peak_tflops: float | None = None  # the accelerator's peak, for MFU; None: look it up
    overrides: dict = field(default_factory=dict)  # ElectraConfig fields, e.g. {"num_layers": 2}
    init_from: str | None = None  # start from this released (or exported) G and D: hub name or folder
    generator: str | None = None  # with init_from: the generator, when Google's naming does not find it
    revision: str = "main"  # hub revision of init_from / generator
    hub_cache_dir: str | None = None  # where hub checkpoints are kept (None: ~/.cache/electra-from-scratch/hub)


# The fields a --resume must keep as the checkpoint has them; the others control the session.
RUN_FIELDS = ("size", "objective", "data", "vocab_size", "seq_len",
              "batch_size", "lr", "steps", "warmup", "weight_decay", "clip_norm", "eval_fraction",
              "seed", "overrides")


def lr_factor(step: int, total_steps: int, warmup_steps: int) -> float:
    """Multiplier of the peak lr at update `step` (0-based): linear warm-up, then linear decay to zero.

    Official optimization.py: lr * min(1, step / warmup) * (1 - step / total) (polynomial decay,
    power 1), for pre-training and fine-tuning alike (Table 7: "Learning Rate Decay Linear").
    Deviation: warm-up counts step + 1, so that update 0 is not a no-op with lr 0.

    >>> [round(lr_factor(s, 10, 2), 2) for s in range(10)]
    [0.5, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]
    """
    warm = min(1.0, (step + 1) / warmup_steps) if warmup_steps > 0 else 1.0
    return warm * max(0.0, 1.0 - step / total_steps)


def learning_rate(step: int, cfg: TrainConfig) -> float:
    """Pre-training lr of update `step`: cfg.lr * lr_factor.

    Example: lr 1e-3, warmup 10, steps 100: step 0 -> 1e-4, step 9 -> 9.1e-4, step 50 -> 5e-4.
    """
    return cfg.lr * lr_factor(step, cfg.steps, cfg.warmup)


def decays(p: torch.Tensor) -> bool:
    """Whether weight decay applies to `p`: matrices only, never biases or LayerNorm.

    Official optimization.py excludes "LayerNorm", "layer_norm" and "bias" by name; here that is
    every parameter with fewer than 2 dimensions.
    """
    return p.dim() >= 2


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
    of updates long; torch has a fused kernel for AdamW (one kernel for all parameters on a GPU;
    8x faster than the default loop on a CPU for `tiny`: 1.4 ms instead of 10.9 ms per update).
    """
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if decays(p)], "weight_decay": cfg.weight_decay},
              {"params": [p for p in params if not decays(p)], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=ADAM_BETAS, eps=ADAM_EPS, fused=fused)


# -----------------------------------------------------------------------------
# Vocabulary, checkpoints, export


def save_checkpoint(path: Path, model: Electra, optimizer, step: int, cfg: TrainConfig,
                    mc: ElectraConfig, vocab_hash: str, rng: list[dict]) -> None:
    """Everything --resume needs, written to a temporary file and renamed (never half a file).

    The learning-rate schedule is a pure function of the step (learning_rate), and so is the
    data order (Batches), so `step` is their whole state. `rng` holds every rank's RNG states.
    """
    state = {
        "model": model.state_dict(),  # generator, discriminator and their shared embeddings
        "optimizer": optimizer.state_dict(),
        "step": step,
        "train_config": asdict(cfg),
        "model_config": asdict(mc),
        "vocab_hash": vocab_hash,
        "rng": rng,
    }
    atomic_write(path, lambda p: torch.save(state, p), keep_previous=previous_checkpoint(path))


def previous_checkpoint(path: Path) -> Path:
    """Where save_checkpoint keeps the checkpoint it replaced: ckpt.pt -> ckpt.prev.pt."""
    return path.with_name(path.stem + ".prev" + path.suffix)


def _read_checkpoint(path: Path) -> tuple[dict | None, str]:
    """(the checkpoint, "") or (None, why it cannot be read)."""
    if not path.is_file():
        return None, "missing"
    try:
        return torch.load(path, map_location="cpu", weights_only=True), ""
    except Exception as e:  # truncated (an interrupted copy), corrupt, or not a checkpoint at all
        return None, f"unreadable: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def _no_checkpoint(path: Path, flag: str) -> SystemExit:
    return SystemExit(f"{flag}: no checkpoint at {path}; point --out at the run folder that has "
                      f"ckpt.pt (or start a new run without {flag})")


def load_checkpoint(path: Path, flag: str = "--resume", set_aside: bool = False) -> dict:
    """The checkpoint at `path`, or, when it is missing or unreadable, the previous one that
    save_checkpoint kept (saying so). Neither: one line naming both. set_aside (--resume): rename an
    unreadable `path` to path.unreadable, so the next save does not keep it as the previous one."""
    saved, why = _read_checkpoint(path)
    if saved is not None:
        return saved
    prev = previous_checkpoint(path)
    fallback, why_prev = _read_checkpoint(prev)
    if fallback is None:
        if why == why_prev == "missing":
            raise _no_checkpoint(path, flag)
        raise SystemExit(f"{flag}: no readable checkpoint: {path} is {why}; the previous one {prev} is {why_prev}")
    note = ""
    if set_aside and path.is_file():
        aside = path.with_name(path.name + ".unreadable")
        os.replace(path, aside)
        note = f" ({path.name} moved to {aside.name})"
    print(f"{flag}: {path} is {why}; falling back to the previous checkpoint {prev} (step {fallback['step']:,})"
          f"{note}")
    return fallback


# Metrics: what a user sees

METRICS = ("loss", "mlm_loss", "disc_loss", "gen_acc", "disc_acc", "disc_precision", "disc_recall",
           "disc_auc", "replaced_frac", "main_mlm_loss")


def step_stats(out) -> torch.Tensor:
    """The ElectraOutput scalars as one detached tensor [len(METRICS)] (no host sync)."""
    return torch.stack([getattr(out, n).detach().float() for n in METRICS])


def stats_dict(t: torch.Tensor) -> dict:
    d = dict(zip(METRICS, t.tolist()))
    d["all_original_acc"] = 1.0 - d["replaced_frac"]  # the accuracy of a D that calls every token original
    return d


@torch.no_grad()
def evaluate(model: nn.Module, ids: np.ndarray, examples: np.ndarray, cfg: TrainConfig, micro_batch: int,
             special: tuple[int, int, int], device: torch.device, autocast) -> dict:
    """Held-out metrics: the same quantities as training, dropout off, the same masks every time.

    Runs on the first cfg.eval_batches micro-batches of held-out examples with the torch RNG
    forked and seeded, so evaluations at different steps see the same corrupted inputs and the
    training RNG stream is not disturbed. D's AUC is computed once over all of those tokens
    together (a ranking does not average over batches); the other metrics are batch means.
    """
    model.eval()
    total, n = torch.zeros(len(METRICS), device=device), 0
    p_original, is_original, real = [], [], []  # D's scores and labels of every held-out token
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(cfg.seed)
        for i in range(cfg.eval_batches):
            rows = examples[i * micro_batch:(i + 1) * micro_batch]
            if len(rows) == 0:
                break
            x, s, m = (torch.from_numpy(a).to(device) for a in pretraining_batch(ids, rows, cfg.seq_len, *special))
            with autocast:
                out = model(x, s, m)
            total += step_stats(out)
            n += 1
            if out.p_original is not None:
                p_original.append(out.p_original.flatten())
                is_original.append((out.x_corrupt == x).flatten())
                real.append(m.flatten())
    model.train()
    stats = stats_dict(total / max(n, 1))
    if p_original:
        stats["disc_auc"] = disc_auc(torch.cat(p_original), torch.cat(is_original), torch.cat(real)).item()
    return stats


def read_metrics(metrics_path: Path) -> list[dict]:
    """The rows of metrics.jsonl ([] when there is none yet). A last line cut short (the process was
    killed mid-write, or the disk filled) is dropped; a broken line before it is an error naming it."""
    if not metrics_path.is_file():
        return []
    lines = metrics_path.read_text().splitlines()
    rows = []
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as e:
            if i == len(lines):
                break
            raise SystemExit(f"{metrics_path}, line {i}: not a JSON metrics row ({e}); delete or repair that "
                             f"line (the checkpoint does not depend on it)") from e
    return rows


def plot_curves(metrics_path: Path, png_path: Path) -> None:
    """Redraw curves.png from metrics.jsonl: losses, accuracies (with D's all-original baseline), lr."""
    from matplotlib.figure import Figure  # its own canvas: no pyplot, no switch of the global backend

    rows = read_metrics(metrics_path)
    if not rows:
        return  # a checkpoint before the first log line (--ckpt-interval < --log-interval): nothing to draw yet
    train = [r for r in rows if r["split"] == "train"]
    held = [r for r in rows if r["split"] == "eval"]
    fig = Figure(figsize=(11, 7.5))
    axes = fig.subplots(2, 2)
    panels = [
        (axes[0, 0], "L_MLM (generator)", [("mlm_loss", "")]),
        (axes[0, 1], "L_Disc (discriminator)", [("disc_loss", "")]),
        (axes[1, 0], "accuracy", [("gen_acc", "G top-1 on masked"), ("disc_acc", "D, all tokens"),
                                  ("all_original_acc", "D baseline: all original"),
                                  ("disc_precision", "D precision (replaced)"),
                                  ("disc_recall", "D recall (replaced)"),
                                  ("disc_auc", "D AUC, replaced vs original (0.5 = chance)")]),
    ]
    for ax, title, keys in panels:
        for i, (key, label) in enumerate(keys):  # one colour per quantity: train solid, held-out dashed
            for split, style in ((train, "-"), (held, "o--")):
                if split:
                    ax.plot([r["step"] for r in split], [r.get(key, math.nan) for r in split], style, color=f"C{i}",
                            ms=3, label=f"{label or key} ({split[0]['split']})")
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    ax = axes[1, 1]
    ax.plot([r["step"] for r in train], [r["lr"] for r in train])
    ax.set_title("learning rate")
    ax.set_xlabel("step")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    tmp = png_path.with_name(png_path.name + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, png_path)


def peak_flops(device: torch.device, override_tflops: float | None) -> float | None:
    """The accelerator's peak FLOP/s for MFU, or None (CPU, or an unknown GPU without --peak-tflops)."""
    if override_tflops:
        return override_tflops * 1e12
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((tf * 1e12 for key, tf in GPU_PEAK_TFLOPS.items() if key in name), None)



def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Pre-train ELECTRA (Clark et al. 2020). Presets per --size follow the paper's "
                    "Table 6; every value can be overridden.")
    d = TrainConfig()
    p.add_argument("--size", choices=list(RECIPES), default=None, help="model and recipe preset (default small)")
    p.add_argument("--objective", choices=OBJECTIVES, default=None,
                   help="electra: replaced token detection; bert: the masked-LM baseline; electra_15, "
                        "replace_mlm, all_tokens_mlm: the ablations of Sec. 3.5 (default electra)")
    p.add_argument("--data", default=None, help=f".txt file, folder of .txt files, or one of {list(KNOWN_CORPORA)} "
                                                f"(default {d.data})")
    p.add_argument("--data-url", default=d.data_url, help=f"base URL of the known corpora (or $ELECTRA_DATA_URL; default {d.data_url})")
    p.add_argument("--cache-dir", default=d.cache_dir, help=f"downloads and tokenised corpora (default {d.cache_dir})")
    p.add_argument("--out", default=d.out_dir, help=f"run folder: ckpt.pt, vocab.txt, metrics.jsonl, curves.png (default {d.out_dir})")
    p.add_argument("--vocab", default=None, help="a BERT-format vocab.txt (default: train one on the corpus)")
    p.add_argument("--vocab-size", type=int, default=None, help="size of the trained vocab (preset)")
    p.add_argument("--seq-len", type=int, default=None, help="tokens per example (preset)")
    p.add_argument("--batch-size", type=int, default=None, help="sequences per update, all GPUs together (preset)")
    p.add_argument("--grad-accum", type=int, default=d.grad_accum, help="micro-batches per update (default 1)")
    p.add_argument("--lr", type=float, default=None, help="peak learning rate (preset)")
    p.add_argument("--steps", type=int, default=None, help="updates (preset)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up updates (preset)")
    p.add_argument("--weight-decay", type=float, default=None, help=f"AdamW weight decay (default {d.weight_decay})")
    p.add_argument("--clip-norm", type=float, default=None, help=f"gradient-norm clip (default {d.clip_norm})")
    p.add_argument("--eval-fraction", type=float, default=None,
                   help=f"share of documents held out (default {d.eval_fraction})")
    p.add_argument("--eval-batches", type=int, default=d.eval_batches, help=f"micro-batches per evaluation (default {d.eval_batches})")
    p.add_argument("--log-interval", type=int, default=d.log_interval, help=f"updates between metrics.jsonl lines (default {d.log_interval})")
    p.add_argument("--eval-interval", type=int, default=None, help="updates between held-out evaluations (preset)")
    p.add_argument("--ckpt-interval", type=int, default=d.ckpt_interval, help=f"updates between checkpoints (default {d.ckpt_interval})")
    p.add_argument("--stop-at", type=int, default=None,
                   help="stop with a checkpoint after this update (the schedule still runs to --steps)")
    p.add_argument("--seed", type=int, default=None, help=f"random seed (default {d.seed})")
    p.add_argument("--device", default=d.device, help="auto (default: cuda if available), cpu, cuda or cuda:N")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--precision", choices=["auto", "bf16", "fp32"], default=d.precision,
                   help="auto (default): bf16 autocast on GPUs with bf16 tensor cores, fp32 elsewhere")
    p.add_argument("--peak-tflops", type=float, default=None, help="accelerator peak TFLOP/s for MFU (default: looked up from the GPU name)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                   help="override an ElectraConfig field, e.g. --set num_layers=2 (repeatable)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its ckpt.pt")
    p.add_argument("--export-hf", default=None, metavar="DIR",
                   help="write the checkpoint in --out in HuggingFace's ELECTRA layout to DIR, then exit")
    p.add_argument("--init-from", default=None, metavar="NAME_OR_FOLDER",
                   help="continue pre-training a released ELECTRA (e.g. google/electra-small, its hub name or a "
                        "folder): its shape, vocab, generator and discriminator")
    p.add_argument("--generator", default=None, help="with --init-from: the generator's hub name or folder")
    p.add_argument("--revision", default="main", help="hub revision of --init-from (branch, tag or commit)")
    p.add_argument("--hub-cache-dir", default=None, help="hub checkpoints (default ~/.cache/electra-from-scratch/hub)")
    args = p.parse_args(argv)
    check_flags(args, FLAG_RANGES)
    return args


# The range of every numeric flag: flag -> (test, what it must be). Checked by check_flags.
FLAG_RANGES = {
    # a trained vocab holds the specials and at least one piece
    "--vocab-size": at_least(len(WORDPIECE.specials) + 1, "the special tokens and at least one piece"),
    "--seq-len": at_least(SHORT_SEQ_MIN, "the example builder's shortest target length"),
    "--batch-size": at_least(1, "sequences per update"),
    "--grad-accum": at_least(1, "micro-batches per update"),
    "--lr": positive("the peak learning rate"),
    "--steps": at_least(1, "updates"),
    "--warmup": at_least(0, "warm-up updates"),
    "--weight-decay": non_negative("AdamW weight decay"),
    "--clip-norm": positive("the gradient-norm clip"),
    "--eval-fraction": (lambda v: 0 <= v < 1, "a share in [0, 1) (0: no held-out set)"),
    "--eval-batches": at_least(1, "micro-batches per evaluation"),
    "--log-interval": at_least(1, "updates between metrics lines"),
    "--eval-interval": at_least(1, "updates between evaluations"),
    "--ckpt-interval": at_least(1, "updates between checkpoints"),
    "--stop-at": at_least(1, "the update to stop after"),
    "--seed": at_least(0, "the random seed"),
    "--peak-tflops": positive("the accelerator's peak TFLOP/s"),
}


def check_flags(args: argparse.Namespace, ranges: dict) -> None:
    """One line for a numeric flag out of its range (train.py's FLAG_RANGES, finetune.py's own).
    A flag that was not given (None) is not checked: its value comes from a preset or a checkpoint."""
    for flag, (ok, what) in ranges.items():
        value = getattr(args, flag.lstrip("-").replace("-", "_"))
        if value is not None and not ok(value):
            raise SystemExit(f"{flag} {value}: must be {what}")


def parse_overrides(items: list[str]) -> dict:
    """["num_layers=2", "dropout=0"] -> {"num_layers": 2, "dropout": 0.0}, typed by ElectraConfig."""
    kinds = {f.name: f.type if isinstance(f.type, str) else f.type.__name__ for f in fields(ElectraConfig)}
    casts = {"int": int, "float": float, "bool": lambda v: v.lower() in ("1", "true", "yes")}
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in kinds:
            raise SystemExit(f"--set {item}: expected FIELD=VALUE with FIELD one of {sorted(kinds)}")
        if key in ("objective", "vocab_size", "pad_id", "cls_id", "sep_id", "mask_id"):
            raise SystemExit(f"--set {item}: {key} comes from --objective / the vocabulary, not from --set")
        try:
            out[key] = casts.get(kinds[key], str)(value)
        except ValueError as e:
            raise SystemExit(f"--set {item}: {key} must be a {kinds[key]}") from e
    return out


def resolve_config(args: argparse.Namespace, saved: dict | None) -> TrainConfig:
    """The run's TrainConfig: preset, then flags; on --resume the checkpoint's, which flags may
    not contradict (a run changed half-way is not the run that was started)."""
    overrides = parse_overrides(args.overrides)
    given = {"size": args.size, "objective": args.objective, "data": args.data, "vocab_size": args.vocab_size,
             "seq_len": args.seq_len, "batch_size": args.batch_size, "lr": args.lr, "steps": args.steps,
             "warmup": args.warmup, "weight_decay": args.weight_decay, "clip_norm": args.clip_norm,
             "eval_fraction": args.eval_fraction, "seed": args.seed}
    given = {k: v for k, v in given.items() if v is not None}
    if overrides:
        given["overrides"] = overrides
    session = dict(data_url=args.data_url, cache_dir=args.cache_dir, out_dir=args.out, vocab=args.vocab,
                   grad_accum=args.grad_accum, eval_batches=args.eval_batches, log_interval=args.log_interval,
                   eval_interval=args.eval_interval, ckpt_interval=args.ckpt_interval, stop_at=args.stop_at,
                   device=args.device, compile=args.compile, precision=args.precision,
                   peak_tflops=args.peak_tflops, init_from=args.init_from, generator=args.generator,
                   revision=args.revision, hub_cache_dir=args.hub_cache_dir)
    size = saved["size"] if saved is not None else given.get("size", TrainConfig.size)
    if session["eval_interval"] is None and size in RECIPES:
        session["eval_interval"] = RECIPES[size].eval_interval
    if saved is not None:
        run = {k: saved[k] for k in RUN_FIELDS}
        changed = {k: (run[k], v) for k, v in given.items() if run[k] != v}
        if changed:
            what = "; ".join(f"--{k.replace('_', '-')} {new} (checkpoint: {old})" for k, (old, new) in changed.items())
            raise SystemExit(f"--resume: the checkpoint in {args.out} was trained with different settings: {what}. "
                             f"Resume with the checkpoint's settings (drop those flags), or start a new run "
                             f"with another --out.")
        return TrainConfig(**run, **session)
    if size not in RECIPES:
        raise SystemExit(f"unknown size {size!r}: choose one of {', '.join(RECIPES)}")
    try:
        check_config(get_config(size, **overrides))
    except ValueError as e:
        raise SystemExit(f"--set {' '.join(args.overrides)}: {e} (size {size})") from e
    r = RECIPES[size]
    objective = given.get("objective", TrainConfig.objective)
    preset = dict(vocab_size=r.vocab_size, seq_len=r.seq_len, batch_size=r.batch_size, lr=r.lr,
                  steps=r.bert_steps if objective == "bert" else r.steps, warmup=r.warmup)
    return TrainConfig(**{**preset, **given, **session})


def main(argv=None) -> dict:
    """python train.py [flags]; returns what the run produced (for tests and notebooks):
    {"model", "step", "config", "model_config", "tokenizer", "train", "eval", "interrupted"}."""
    args = parse_args(argv)
    out_dir = Path(args.out)
    ckpt_path = out_dir / "ckpt.pt"
    if args.export_hf:
        saved = load_checkpoint(ckpt_path, "--export-hf")
        model = Electra(ElectraConfig(**saved["model_config"]))
        model.load_state_dict(saved["model"])
        files = export_hf(model, out_dir / "vocab.txt", Path(args.export_hf))
        print(f"exported step {saved['step']:,} of {out_dir} in HuggingFace's ELECTRA layout:")
        for f in files:
            print(f"  {f}")
        return {"model": model, "step": saved["step"], "files": files}
    prev_path = previous_checkpoint(ckpt_path)
    if args.resume and not (ckpt_path.exists() or prev_path.exists()):
        raise _no_checkpoint(ckpt_path, "--resume")
    if not args.resume and (ckpt_path.exists() or prev_path.exists()):
        raise SystemExit(f"{out_dir} holds a run ({', '.join(str(p) for p in (ckpt_path, prev_path) if p.exists())}): "
                         f"continue it with --resume (which falls back to {prev_path.name} if {ckpt_path.name} is "
                         f"unreadable), or start a new run with another --out (nothing was overwritten)")
    if args.init_from:  # continued pre-training: the released model's shape (as --set), vocab and size
        if args.resume or args.vocab or args.objective not in (None, "electra", "electra_15"):
            raise SystemExit("--init-from starts a new ELECTRA run from a released generator and discriminator, "
                             "with their vocab: drop --resume, --vocab and --objective")
        try:
            size, shape, vocab = released_start(args.init_from, args.generator, args.revision, args.hub_cache_dir)
        except (FileNotFoundError, ValueError, HubError) as e:
            raise SystemExit(f"--init-from {args.init_from}: {e}") from None
        args.size, args.vocab = args.size or size, str(vocab)
        args.overrides = [f"{k}={v}" for k, v in shape.items()] + args.overrides
    check_writable(out_dir)
    rank = int(os.environ.get("RANK", "0"))  # torchrun's; setup_distributed joins the group below
    with run_lock(out_dir, rank):
        saved = load_checkpoint(ckpt_path, set_aside=rank == 0) if args.resume else None
        cfg = resolve_config(args, saved["train_config"] if saved else None)
        rank, _, world, device = setup_distributed(cfg.device)
        try:
            return train(cfg, saved, rank, world, device)
        finally:
            if world > 1:
                dist.destroy_process_group()



def train(cfg: TrainConfig, saved: dict | None, rank: int, world: int, device: torch.device) -> dict:
    """The training run: data, model, optimizer, then the loop (see main for the arguments)."""
    master = rank == 0
    say = print if master else (lambda *a, **k: None)
    out_dir, cache_dir = Path(cfg.out_dir), Path(cfg.cache_dir)
    metrics_path, ckpt_path = out_dir / "metrics.jsonl", out_dir / "ckpt.pt"

    # --- data: rank 0 downloads, trains the vocab and tokenises first; the others read its caches
    for turn in (0, 1):
        if (rank == 0) == (turn == 0):
            try:
                corpus = resolve_corpus(cfg.data, cache_dir, cfg.data_url)
                tok = load_or_train_vocab(cfg, corpus, out_dir)
                ids, line_offsets = encode_corpus(corpus, tok, cache_dir, progress=master)
            except (DownloadError, FileNotFoundError, ValueError) as e:
                raise SystemExit(str(e)) from e
            except KeyboardInterrupt:
                raise SystemExit("interrupted while preparing the data (download, vocabulary or tokenising), "
                                 "before any training: nothing partial was written; run the same command "
                                 "again to start over") from None
        barrier(world)
    line_offsets, n_split = split_long_lines(ids, line_offsets, cfg.seq_len - 2,
                                             [tok.vocab[t] for t in SENTENCE_END_TOKENS if t in tok.vocab])
    if n_split:
        say(f"split {n_split:,} line(s) longer than {cfg.seq_len - 2} tokens (--seq-len {cfg.seq_len} less "
            f"[CLS] and [SEP]) into pieces, at sentence ends where possible, so none of their text is dropped")
    if saved is not None and saved["vocab_hash"] != tok.hash():
        raise SystemExit(f"the vocabulary ({cfg.vocab or out_dir / 'vocab.txt'}, sha256 {tok.hash()[:12]}) does not "
                         f"match the checkpoint's (sha256 {saved['vocab_hash'][:12]}): resume with the run's own "
                         f"{out_dir / 'vocab.txt'} (drop --vocab), or start a new run with another --out")
    train_ex, eval_ex = build_examples(line_offsets, cfg.seq_len, cfg.seed, cfg.eval_fraction)
    if len(train_ex) == 0:
        raise SystemExit(f"--data {cfg.data}: no training examples could be built ({len(ids):,} tokens in "
                         f"{len(eval_ex)} held-out example(s)); give it more text")
    if cfg.batch_size % (cfg.grad_accum * world):
        raise SystemExit(f"--batch-size {cfg.batch_size} must be a multiple of --grad-accum {cfg.grad_accum} x "
                         f"{world} process(es)")
    micro_batch = cfg.batch_size // (cfg.grad_accum * world)
    special = (tok.cls_id, tok.sep_id, tok.pad_id)
    batches = Batches(ids, train_ex, cfg.batch_size, micro_batch, rank, world, cfg.seq_len, special, cfg.seed)

    # --- model and optimizer
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
        set_rng_state(saved["rng"][rank])
        rows = [r for r in read_metrics(metrics_path) if r["step"] <= step]
        atomic_write(metrics_path, lambda p: p.write_text("".join(json.dumps(r) + "\n" for r in rows)))
    else:
        torch.manual_seed(cfg.seed + rank)  # different masks and dropout on each rank
        metrics_path.unlink(missing_ok=True)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True  # TF32 for any fp32 matmul left outside autocast
        torch.backends.cudnn.allow_tf32 = True
    precision, autocast = mixed_precision(device, cfg.precision)
    model = raw
    if world > 1:
        model = nn.parallel.DistributedDataParallel(raw, device_ids=[device.index] if device.type == "cuda" else None)
    if cfg.compile:
        # In place, so `raw` keeps its state_dict keys; compiling the DDP wrapper (not the model inside
        # it) lets torch split the graph at DDP's gradient buckets and overlap communication.
        model.compile()

    flops = flops_per_step(mc, cfg.batch_size, cfg.seq_len)
    peak = peak_flops(device, cfg.peak_tflops)
    end = min(cfg.steps, cfg.stop_at or cfg.steps)
    say(startup_report(cfg, mc, raw, tok, corpus, ids, train_ex, eval_ex, micro_batch, world, device, flops, peak,
                       step, end, precision))

    # --- the loop
    def write_row(row: dict) -> None:
        if master:
            with open(metrics_path, "a") as f:
                f.write(json.dumps(row) + "\n")

    def to_device(arrays):
        ts = [torch.from_numpy(a) for a in arrays]
        if device.type == "cuda":
            return [t.pin_memory().to(device, non_blocking=True) for t in ts]
        return ts

    # Wall-clock seconds of the loop (evaluations included), carried over a --resume from the last row
    # kept: what the AUC-vs-minutes curves are drawn against.
    elapsed0 = rows[-1].get("elapsed_s", 0.0) if saved is not None and rows else 0.0
    t_start = time.perf_counter()
    acc, n_acc = torch.zeros(len(METRICS) + 1, device=device), 0  # summed stats + grad norm since the last log
    # The first update whose loss or gradient norm was not finite (0: none), kept on the device and read
    # only where the loop waits for the device anyway (logs, evaluations, checkpoints, the end).
    diverged_at = torch.zeros((), dtype=torch.long, device=device)
    last_ckpt = step if saved is not None else None
    last_train = last_eval = None
    interrupted = False
    bar = tqdm(total=cfg.steps, initial=step, unit="step", dynamic_ncols=True, disable=not master,
               desc=f"{cfg.objective}-{cfg.size}")
    t_last = time.perf_counter()
    first_step, t_first = step, None  # for the projection of a GPU-sized run on a CPU
    with StopOnSignal() as stop:
        while step < end:
            lr = learning_rate(step, cfg)
            for group in optimizer.param_groups:
                group["lr"] = lr
            try:
                stats = torch.zeros(len(METRICS), device=device)
                for micro in range(cfg.grad_accum):
                    x, s, m = to_device(batches.get(step, micro))  # [b, T] each
                    sync = model.no_sync() if world > 1 and micro < cfg.grad_accum - 1 else contextlib.nullcontext()
                    with sync:
                        with autocast:
                            out = model(x, s, m)  # masks and samples are drawn inside, fresh each call
                        (out.loss / cfg.grad_accum).backward()
                    stats += step_stats(out) / cfg.grad_accum
                grad_norm = torch.nn.utils.clip_grad_norm_(raw.parameters(), cfg.clip_norm)
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
            except torch.OutOfMemoryError as e:
                raise SystemExit(
                    f"out of GPU memory at micro-batch {micro_batch} x seq {cfg.seq_len}: add --grad-accum "
                    f"{cfg.grad_accum * 2} (same batch {cfg.batch_size} per update, half the memory per step) or "
                    f"lower --batch-size. The last checkpoint ({ckpt_path}) is intact; continue with --resume."
                ) from e
            step += 1
            finite = torch.isfinite(stats[0]) & torch.isfinite(grad_norm.detach())
            diverged_at = torch.where((diverged_at == 0) & ~finite, step, diverged_at)
            acc += torch.cat([stats, grad_norm.detach().float().reshape(1)])
            n_acc += 1
            bar.update(1)
            if master and device.type == "cpu" and cfg.size != CPU_PRESET:
                if step == first_step + 1:
                    t_first = time.perf_counter()
                elif step == first_step + 1 + PROJECTION_STEPS:
                    rate = PROJECTION_STEPS / (time.perf_counter() - t_first)
                    bar.write(cpu_projection(cfg.size, rate, end - step))
            if (step % cfg.log_interval == 0 or step % cfg.eval_interval == 0 or step % cfg.ckpt_interval == 0
                    or step == end or stop.requested) and diverged_at.item():
                bar.close()
                good = ckpt_path if ckpt_path.is_file() else previous_checkpoint(ckpt_path)  # after a fallback
                kept = (f"the last good checkpoint, {good} at step {last_ckpt:,}, is untouched"
                        if last_ckpt is not None else "no checkpoint was written")
                raise SystemExit(f"the loss is not finite at step {diverged_at.item():,} (lr {cfg.lr:g}): the run "
                                 f"diverged and was stopped; {kept}. Start a new run with a lower --lr (e.g. "
                                 f"{cfg.lr / 10:g}) or a longer --warmup")

            if step % cfg.log_interval == 0 or step == end:
                if world > 1:
                    dist.all_reduce(acc)
                    acc /= world
                now = time.perf_counter()
                steps_per_s = n_acc / max(now - t_last, 1e-9)
                mean = (acc / n_acc).tolist()
                last_train = {"step": step, "split": "train", **stats_dict(acc[:-1] / n_acc), "grad_norm": mean[-1],
                              "lr": lr, "epoch": round(batches.epoch(step), 4), "steps_per_s": steps_per_s,
                              "tokens_per_s": steps_per_s * cfg.batch_size * cfg.seq_len,
                              "elapsed_s": elapsed0 + now - t_start}
                if peak:
                    last_train["mfu"] = flops * steps_per_s / (peak * world)
                write_row(last_train)
                bar.set_postfix_str(progress_line(last_train, cfg.objective), refresh=False)
                acc.zero_()
                n_acc = 0
                t_last = now

            if master and len(eval_ex) and (step % cfg.eval_interval == 0 or step == end):
                last_eval = {"step": step, "split": "eval",
                             **evaluate(raw, ids, eval_ex, cfg, micro_batch, special, device, autocast),
                             "elapsed_s": elapsed0 + time.perf_counter() - t_start}
                write_row(last_eval)
                plot_curves(metrics_path, out_dir / "curves.png")
                bar.write(f"step {step:,} held-out: {progress_line(last_eval, cfg.objective)}")

            requested = stop.requested
            if world > 1:
                # The ranks must agree on the step they stop at. They agree at log steps (a sync point
                # anyway): asking every step would make each step wait for the GPU (flag.item()).
                requested = False
                if step % cfg.log_interval == 0 or step == end:
                    flag = torch.tensor([float(stop.requested)], device=device)
                    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
                    requested = bool(flag.item())
            if step % cfg.ckpt_interval == 0 or step == end or requested:
                states = [rng_state()]
                if world > 1:
                    states = [None] * world
                    dist.all_gather_object(states, rng_state())
                if master:
                    save_checkpoint(ckpt_path, raw, optimizer, step, cfg, mc, tok.hash(), states)
                    plot_curves(metrics_path, out_dir / "curves.png")
                last_ckpt = step
            if requested:
                interrupted = True
                break
            if step % cfg.log_interval == 0:
                t_last = time.perf_counter()  # evaluation and checkpoint time is not training speed
    bar.close()
    if interrupted:
        say(f"stopped at step {step:,}: checkpoint saved to {ckpt_path}. Continue with the same command "
            f"plus --resume.")
    else:
        say(f"{'reached --stop-at' if end < cfg.steps else 'done'}: step {step:,}, checkpoint {ckpt_path}, "
            f"curves {out_dir / 'curves.png'}, metrics {metrics_path}")
    return {"model": raw, "step": step, "config": cfg, "model_config": mc, "tokenizer": tok, "train": last_train,
            "eval": last_eval, "interrupted": interrupted}


def cpu_projection(size: str, steps_per_s: float, remaining: int) -> str:
    """One line for a GPU-sized run started on a CPU: how long it would take, and the CPU preset.

    Example: cpu_projection("small", 0.1, 1_000_000) -> "no GPU: --size small's remaining 1,000,000
    updates take about 116 days at the 0.1 steps/s of the first updates on this CPU ..."
    """
    return (f"no GPU: --size {size}'s remaining {remaining:,} updates take about "
            f"{duration(remaining / steps_per_s)} at the {steps_per_s:.3g} steps/s of the first updates on "
            f"this CPU (still running, in case you mean it; Ctrl-C saves a checkpoint). To see ELECTRA learn "
            f"on a CPU in {CPU_PRESET_MINUTES} minutes: python train.py --size {CPU_PRESET} --data <a .txt file "
            f"or folder of books>")


def duration(seconds: float) -> str:
    """A length of time in the largest unit it has two of: 90 -> '90 seconds', 600 -> '10 minutes',
    1e7 -> '116 days'."""
    for unit, length in (("years", 365 * 86400), ("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * length:
            return f"{seconds / length:.3g} {unit}"
    return f"{seconds:.3g} seconds"


def progress_line(row: dict, objective: str) -> str:
    """The few numbers shown on the progress bar and after each evaluation."""
    if objective in ("replace_mlm", "all_tokens_mlm"):
        text = f"L_MLM(G) {row['mlm_loss']:.3f} L_MLM(main) {row['main_mlm_loss']:.3f} G_acc {row['gen_acc']:.3f}"
    elif objective == "bert":
        text = f"L_MLM {row['mlm_loss']:.3f} MLM_acc {row['gen_acc']:.3f}"
    else:
        text = (f"L_MLM {row['mlm_loss']:.3f} L_Disc {row['disc_loss']:.4f} G_acc {row['gen_acc']:.3f} "
                f"D_acc {row['disc_acc']:.4f} (all-original {row['all_original_acc']:.4f}) "
                f"D_P/R {row['disc_precision']:.2f}/{row['disc_recall']:.2f} D_AUC {row['disc_auc']:.3f}")
    if "tokens_per_s" in row:
        text += f" | {row['tokens_per_s']:,.0f} tok/s"
    if "mfu" in row:
        text += f" MFU {row['mfu']:.1%}"
    return text


def startup_report(cfg, mc, model, tok, corpus, ids, train_ex, eval_ex, micro_batch, world, device, flops, peak,
                   step, end, precision) -> str:
    """What the run is: config, data, parameter counts and the FLOPs estimate."""
    parts = [f"{name} {count_params(getattr(model, name)) / 1e6:.2f}M"
             for name in ("discriminator", "generator", "mlm") if getattr(model, name, None) is not None]
    params = (f"{', '.join(parts)} (each with the shared embeddings {count_params(model.embeddings) / 1e6:.2f}M), "
              f"total {count_params(model) / 1e6:.2f}M")
    total = flops * cfg.steps
    lines = [
        f"ELECTRA pre-training: size {cfg.size}, objective {cfg.objective}, on {device}"
        f"{f' x {world} processes' if world > 1 else ''}, {'resuming at step ' + format(step, ',') if step else 'new run'}",
        f"config   {json.dumps({k: v for k, v in asdict(cfg).items() if k not in ('data_url',)})}",
        f"model    {json.dumps({k: v for k, v in asdict(mc).items()})}",
        f"data     {corpus}: {len(ids):,} tokens, {len(train_ex):,} training examples, {len(eval_ex):,} held-out "
        f"(every {max(2, round(1 / cfg.eval_fraction)) if cfg.eval_fraction > 0 else 0}th document)",
        f"vocab    {len(tok):,} tokens, {Path(cfg.out_dir) / 'vocab.txt'} (sha256 {tok.hash()[:12]})",
        f"params   {params}",
        f"batch    {cfg.batch_size} = {micro_batch} x {cfg.grad_accum} accumulation x {world} process(es), "
        f"seq {cfg.seq_len}, {cfg.batch_size * cfg.seq_len:,} tokens per update, "
        f"{cfg.steps * cfg.batch_size / max(len(train_ex), 1):.1f} epochs",
        f"optim    AdamW lr {cfg.lr:g}, betas {ADAM_BETAS}, eps {ADAM_EPS:g}, weight decay {cfg.weight_decay}, "
        f"warm-up {cfg.warmup:,} then linear decay to 0 at {cfg.steps:,}, clip {cfg.clip_norm}",
        f"compute  {flops:.3g} FLOPs per update (fwd+bwd), {total:.3g} for {cfg.steps:,} updates "
        f"(official counting: {flops_per_step_official(mc, cfg.batch_size, cfg.seq_len) * cfg.steps:.3g}; "
        f"paper Table 1: ELECTRA-Small 1.4e18)"
        + (f"; peak {peak / 1e12:g} TFLOP/s per GPU for MFU" if peak else ""),
        f"run      steps {step:,} -> {end:,}; out {cfg.out_dir}; log every {cfg.log_interval}, eval every "
        f"{cfg.eval_interval}, checkpoint every {cfg.ckpt_interval}",
        f"device   {device}, {precision}{' (bf16 autocast; weights, optimizer and losses fp32)' if precision == 'bf16' else ''}"
        f"{', torch.compile' if cfg.compile else ''}",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
