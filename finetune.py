"""Fine-tune a pre-trained ELECTRA (or BERT) discriminator on GLUE, with the paper's recipe.

Clark et al. 2020 (arXiv 2003.10555) measure a pre-trained discriminator by what it scores on GLUE
after fine-tuning: section 3.1 and Appendix A, Table 7 (the recipe), Tables 1, 2 and 8 (the
scores). This file reads beside Appendix A, its plumbing last (glue.py holds the tasks, their
files, the metrics, the GLUE score):

    recipe       Table 7's hyperparameters, by model size
    head         the official code's classifier on the [CLS] state (or, ours, on the mean state)
    lr decay     layer-wise learning rates, the official optimizer, warm-up + linear decay
    the loop     one seed: train, evaluate on dev per epoch, predict the test split; Ctrl-C or
                 SIGTERM stops it between two updates, and it is dropped
    results      the median over seeds, results.json (rewritten after every seed), the table,
                 finetune.png, GLUE's submission files
    resuming     what results.json records of the init, the recipe and the data, checked before
                 its finished seeds are kept and the others run
    main         the CLI: --init (a train.py run, an HF folder or a hub name: hf.load_init),
                 GLUE's splits tokenised (glue.prepare_task), one bar over all the runs

    python finetune.py --task sst2 --init ckpt.pt --data-dir ../shared/data/glue/SST-2
    python finetune.py --task mrpc,stsb --init path/to/hf-electra-small-discriminator --seeds 10
    python finetune.py --task all --init google/electra-small-discriminator --seeds 10  # the hub

Run the same command again after Ctrl-C (or a crash) and it resumes: the (task, seed) runs that
results.json holds are kept, the others run; --restart starts over.
"""
import argparse
import contextlib
import hashlib
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

from electra import ElectraConfig, Encoder, decays, init_weights, lr_factor
from support import glue
from support.hf import HubError, Pretrained, is_hub_name, load_init, paper_size
from support.plumbing import DownloadError, StopOnSignal, add_flag, atomic_write, mixed_precision

# -----------------------------------------------------------------------------
# The recipe: paper Appendix A, Table 7

# Table 7, "Learning Rate": 3e-4 Small, 1e-4 Base, 5e-5 Large; "Layerwise LR decay": 0.8, 0.8, 0.9.
RECIPE_BY_SIZE = {
    "small": dict(lr=3e-4, layer_decay=0.8),
    "base": dict(lr=1e-4, layer_decay=0.8),
    "large": dict(lr=5e-5, layer_decay=0.9),
}
MAX_SEQ_LEN = 128  # tokens per example, all sizes (official configure_finetuning.py max_seq_length)
POOLS = ("cls", "mean")  # FinetuneConfig.pool's values: what the head reads


@dataclass
class FinetuneConfig:
    """Fine-tuning hyperparameters. None means "the paper's value": for the model's size
    (recipe_for) or, for epochs, the task's (glue.Task.epochs)."""
    lr: float | None = None  # peak lr; None: RECIPE_BY_SIZE's (Table 7 "Learning Rate")
    layer_decay: float | None = None  # None: RECIPE_BY_SIZE's (Table 7 "Layerwise LR decay")
    layer_decay_fixed: bool = False  # top layer lr*decay, not official lr*decay^2 (layer_lr_scales)
    weight_decay: float = 0.0  # Table 7 "Weight Decay 0" (the official config's default is 0.01)
    warmup_fraction: float = 0.1  # Table 7 "Warmup fraction 0.1"
    batch_size: int = 32  # Table 7 "Batch Size 32"
    epochs: int | None = None  # None: the task's, 10 for RTE and STS-B, else 3 (Table 7)
    max_seq_len: int | None = None  # None: MAX_SEQ_LEN, or the model's positions if it has fewer
    head_dropout: float = 0.1  # Table 7 "Dropout 0.1"; the official head: dropout(keep_prob=0.9)
    # ours: the encoder's dropout and attention_dropout (encoder_config); None: the checkpoint's,
    # 0 for the tiny preset, which pre-trains without dropout (issue 27's lever)
    dropout: float | None = None
    adam_betas: tuple[float, float] = (0.9, 0.999)  # Table 7 "Adam beta1, beta2"
    adam_eps: float = 1e-6  # Table 7 "Adam epsilon 1e-6"
    adam_bias_correction: bool = False  # torch's AdamW; the official Adam has no bias correction
    grad_clip: float = 1.0  # official optimization.py: clip_by_global_norm(grads, 1.0)
    single_order: bool = False  # MRPC/STS-B on one sentence order (official double_unordered: both)
    eval_batch_size: int = 128  # evaluation only: no effect on results, larger is faster
    max_train_examples: int | None = None  # first N rows of train.tsv: quick runs, not the paper
    # ours, not the paper's: draw the top K encoder layers afresh before fine-tuning
    # (Zhang et al. 2021, "Revisiting Few-sample BERT Fine-tuning"; issue 27's lever)
    reinit_layers: int = 0
    # ours, not the paper's: epochs that train the head alone on the frozen encoder before every
    # weight is fine-tuned (linear probing then fine-tuning, Kumar et al. 2022, "Fine-Tuning can
    # Distort Pretrained Features"; issue 27's lever: ELECTRA-Small's frozen probe beat its
    # fine-tuned score). 0: the paper's recipe, the head and the encoder trained together
    head_first_epochs: int = 0
    # what the head reads: "cls", the [CLS] state (the official code's get_pooled_output()), or
    # ours, not the paper's, "mean": the mean of the last layer's states over the sentence's tokens
    # (issue 27's lever: a tiny run's frozen [CLS] reads less sentiment than random weights' while
    # its mean-pooled states read more; RESULTS.md, "SST-2 with a mean-pooled head")
    pool: str = "cls"


def check_finetune_config(ft: FinetuneConfig) -> None:
    """One line naming the flag of a value out of its range. None (the paper's value) passes."""
    if ft.lr is not None and not (math.isfinite(ft.lr) and ft.lr > 0):
        raise SystemExit(f"--lr {ft.lr}: must be a positive number (the peak learning rate)")
    if ft.dropout is not None and not 0 <= ft.dropout < 1:
        raise SystemExit(f"--dropout {ft.dropout}: must be a probability in [0, 1) (the "
                         f"encoder's dropout; leave it out for the checkpoint's)")
    if ft.layer_decay is not None and not 0 < ft.layer_decay <= 1:
        raise SystemExit(f"--layer-decay {ft.layer_decay}: must be in (0, 1] "
                         f"(1: no layer-wise decay)")
    if not (math.isfinite(ft.weight_decay) and ft.weight_decay >= 0):
        raise SystemExit(f"--weight-decay {ft.weight_decay}: must be a number >= 0 "
                         f"(decoupled weight decay)")
    if ft.batch_size < 1:
        raise SystemExit(f"--batch-size {ft.batch_size}: must be an integer >= 1 "
                         f"(examples per update)")
    if ft.epochs is not None and ft.epochs < 1:
        raise SystemExit(f"--epochs {ft.epochs}: must be an integer >= 1 (passes over train.tsv; "
                         f"leave it out for the paper's 3, or 10 for RTE and STS-B)")
    if ft.max_seq_len is not None and ft.max_seq_len < 3:
        raise SystemExit(f"--max-seq-len {ft.max_seq_len}: must be an integer >= 3 "
                         f"(room for [CLS], [SEP] and a token)")
    if ft.max_train_examples is not None and ft.max_train_examples < 1:
        raise SystemExit(f"--max-train-examples {ft.max_train_examples}: must be an integer >= 1 "
                         f"(rows of train.tsv)")
    if ft.reinit_layers < 0:
        raise SystemExit(f"--reinit-layers {ft.reinit_layers}: must be an integer >= 0 "
                         f"(top encoder layers drawn afresh; 0 keeps them all)")
    if ft.pool not in POOLS:
        raise SystemExit(f"--pool {ft.pool}: must be one of {', '.join(POOLS)} (what the head "
                         f"reads: the [CLS] state, the paper's, or the mean of the token states)")
    if ft.head_first_epochs < 0:
        raise SystemExit(f"--head-first-epochs {ft.head_first_epochs}: must be an integer >= 0 "
                         f"(epochs of the head alone on the frozen encoder; 0: none)")


def recipe_for(model_config: ElectraConfig, ft: FinetuneConfig) -> FinetuneConfig:
    """`ft` with lr, layer_decay and max_seq_len filled in from the model's size
    (hf.paper_size: the widest of the paper's sizes no wider than the model).

    >>> from electra import get_config
    >>> r = recipe_for(get_config("base"), FinetuneConfig())
    >>> r.lr, r.layer_decay, r.max_seq_len
    (0.0001, 0.8, 128)
    """
    preset = RECIPE_BY_SIZE[paper_size(model_config)]
    lr = preset["lr"] if ft.lr is None else ft.lr
    layer_decay = preset["layer_decay"] if ft.layer_decay is None else ft.layer_decay
    max_seq_len = ft.max_seq_len
    if max_seq_len is None:
        max_seq_len = min(MAX_SEQ_LEN, model_config.max_position)
    return replace(ft, lr=lr, layer_decay=layer_decay, max_seq_len=max_seq_len)


def encoder_config(config: ElectraConfig, ft: FinetuneConfig) -> ElectraConfig:
    """The fine-tuned encoder's config: the checkpoint's `config`, its dropout and
    attention_dropout set to ft.dropout when given (--dropout).

    A checkpoint's config carries its pre-training dropout into fine-tuning: the paper's 0.1 for
    Small and up, which Table 7 fine-tunes with, but 0 for the tiny preset. The task head's dropout
    is ft.head_dropout either way: the official head's is a fixed keep_prob 0.9, whatever the
    encoder's (HuggingFace's head takes the encoder's hidden_dropout_prob instead).

    >>> from electra import get_config
    >>> tiny = get_config("tiny")
    >>> c = encoder_config(tiny, FinetuneConfig(dropout=0.1))
    >>> c.dropout, c.attention_dropout, encoder_config(tiny, FinetuneConfig()).dropout
    (0.1, 0.1, 0.0)
    """
    if ft.dropout is None:
        return config
    return replace(config, dropout=ft.dropout, attention_dropout=ft.dropout)


# -----------------------------------------------------------------------------
# The head: the official code's classifier on the [CLS] state (or, ours, on the mean state)


def mean_pool(h, attention_mask):
    """h: [B, T, H] -> [B, H], each row's states averaged over its real tokens (padding left out).

    >>> h = torch.tensor([[[1.0, 2.0], [3.0, 6.0], [100.0, 100.0]]])  # the third token is padding
    >>> mean_pool(h, torch.tensor([[1, 1, 0]]))
    tensor([[2., 4.]])
    """
    a = attention_mask[..., None].to(h.dtype)  # [B, T] -> [B, T, 1]
    return (h * a).sum(1) / a.sum(1)


class Classifier(nn.Module):
    """The pre-trained encoder plus a task head on the [CLS] state: logits = W dropout(h_[CLS]) + b.

    This is the official code's head (classification_tasks.py: get_pooled_output() is the first
    token's state, then dropout(keep_prob=0.9) and one dense layer; the weights Glorot-uniform,
    tf.layers.dense's default). HuggingFace's ElectraForSequenceClassification differs: dropout ->
    dense(H, H) -> GELU -> dropout -> dense(H, C), one more layer. STS-B has one output
    (regression), the others one per class.

    Deviation, only with pool="mean" (FinetuneConfig.pool): the head reads the mean of the last
    layer's token states instead, logits = W dropout(mean_pool(h)) + b. ELECTRA's pre-training
    never asks D's [CLS] state to hold the sentence; measured on tiny runs, the mean gives SST-2
    no gain over [CLS] (RESULTS.md, "SST-2 with a mean-pooled head").
    """

    def __init__(self, config: ElectraConfig, num_outputs: int, dropout: float, pool: str = "cls"):
        super().__init__()
        self.encoder = Encoder(config)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(config.hidden_size, num_outputs)
        nn.init.xavier_uniform_(self.classifier.weight)
        nn.init.zeros_(self.classifier.bias)
        self.pool = pool

    def forward(self, input_ids, segment_ids, attention_mask):
        h = self.encoder.hidden_states(input_ids, segment_ids, attention_mask)  # [B, T, H]
        if self.pool == "mean":
            pooled = mean_pool(h, attention_mask)  # [B, T, H] -> [B, H]
        else:
            pooled = h[:, 0]  # [CLS] state [B, H]
        return self.classifier(self.dropout(pooled))  # [B, H] -> [B, C]


def reinit_top_layers(encoder: Encoder, k: int) -> None:
    """Draw the top `k` blocks of a pre-trained `encoder` afresh, as pre-training starts them
    (electra.init_weights; LayerNorm back to the identity); the blocks below and the embeddings
    keep their pre-trained weights.

    Not the paper's: a lever from "Revisiting Few-sample BERT Fine-tuning" (Zhang et al. 2021),
    whose top layers, specialised to pre-training's task, fine-tune worse than fresh ones. For
    issue 27: a tiny run's frozen middle layers can read more sentiment than random weights' while
    its last layer reads no more (experiments/probe.py; RESULTS.md, "Transfer"). k = num_layers
    keeps the embeddings alone.

    >>> from electra import get_config
    >>> enc = Encoder(get_config("tiny"))
    >>> low, top = enc.layers[0].fc1.weight.clone(), enc.layers[-1].fc1.weight.clone()
    >>> _ = enc.layers[-1].ln1.weight.data.zero_()  # as if pre-training had moved it
    >>> reinit_top_layers(enc, 1)
    >>> bool((enc.layers[0].fc1.weight == low).all())  # the layers below: kept
    True
    >>> bool((enc.layers[-1].fc1.weight == top).any())  # the top layer: drawn afresh
    False
    >>> enc.layers[-1].ln1.weight.tolist() == [1.0] * 128  # LayerNorm back to the identity
    True
    """
    for block in encoder.layers[len(encoder.layers) - k:]:
        init_weights(block, encoder.config.init_std)
        for mod in block.modules():
            if isinstance(mod, nn.LayerNorm):
                mod.reset_parameters()


# -----------------------------------------------------------------------------
# Layer-wise learning-rate decay and the official optimizer


def layer_depth(name: str, num_layers: int) -> int:
    """Depth of a fine-tuning parameter: embeddings (and their projection) 0, block i -> i + 1,
    the task head num_layers + 1. Parameter names are the Classifier's.

    >>> names = ("encoder.embeddings.word.weight", "encoder.layers.11.fc1.bias", "classifier.bias")
    >>> [layer_depth(n, 12) for n in names]
    [0, 12, 13]
    """
    if name.startswith(("encoder.embeddings.", "encoder.embeddings_project.")):
        return 0
    if name.startswith("encoder.layers."):
        return int(name.split(".")[2]) + 1
    if name.startswith("classifier."):
        return num_layers + 1
    raise ValueError(f"no layer-wise learning rate for parameter {name!r}")


def layer_lr_scales(num_layers: int, decay: float, official: bool = True) -> list[float]:
    """Multiplier of the peak lr at each depth 0..num_layers+1 (embeddings .. task head).

    Layer-wise lr decay (paper Appendix A): lr_depth = lr * decay^(top - depth), lower layers
    learning more slowly. The official code (model/optimization.py, _get_layer_lrs) puts the
    embeddings at depth 0, layer i at i + 1, but the task head at num_layers + 2, skipping
    num_layers + 1; every encoder layer thus gets one extra factor of decay (its top layer
    decay^2, not decay^1). official=True reproduces that, since it is what produced the paper's
    numbers; official=False (--layer-decay-fixed) is the schedule as described, head lr, top layer
    lr * decay.

    >>> [round(s, 4) for s in layer_lr_scales(2, 0.5)]              # emb, layer 0, layer 1, head
    [0.0625, 0.125, 0.25, 1.0]
    >>> [round(s, 4) for s in layer_lr_scales(2, 0.5, official=False)]
    [0.125, 0.25, 0.5, 1.0]
    """
    top = num_layers + 2 if official else num_layers + 1
    return [decay ** (top - depth) for depth in range(num_layers + 1)] + [1.0]


def param_groups(model, num_layers: int, lr: float, decay: float, weight_decay: float,
                 official: bool = True):
    """Optimizer groups, one per (depth, with or without weight decay), each with its own lr.

    Weight decay (zero in Table 7) never touches biases and LayerNorm, as the official optimizer's
    exclude_from_weight_decay (electra.decays).
    """
    scales = layer_lr_scales(num_layers, decay, official)
    groups: dict[tuple[int, bool], dict] = {}
    for name, p in model.named_parameters():
        depth = layer_depth(name, num_layers)
        wd = decays(p)
        if (depth, wd) not in groups:
            groups[(depth, wd)] = {"params": [], "names": [], "lr": lr * scales[depth],
                                   "weight_decay": weight_decay if wd else 0.0}
        groups[(depth, wd)]["params"].append(p)
        groups[(depth, wd)]["names"].append(name)
    return [groups[k] for k in sorted(groups)]


class AdamWeightDecay(torch.optim.Optimizer):
    """The official fine-tuning optimizer (model/optimization.py AdamWeightDecayOptimizer, BERT's):
    Adam with decoupled weight decay and *no* bias correction. Per parameter p with gradient g:

        m = beta1 m + (1 - beta1) g;   v = beta2 v + (1 - beta2) g^2
        p = p - lr (m / (sqrt(v) + eps) + weight_decay p)

    torch's AdamW divides m by (1 - beta1^t) and v by (1 - beta2^t). For a steady gradient the
    official update is (1 - beta1^t) / sqrt(1 - beta2^t) times AdamW's: 3.16x at update 1, 6.57x
    at 12 (the largest), 1.26x at 1,000 with betas 0.9/0.999, and most GLUE runs (RTE: ~780
    updates) end in that range. The paper's numbers were produced with this one.
    """

    def __init__(self, params, lr: float, betas: tuple[float, float], eps: float,
                 weight_decay: float = 0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in (p for p in group["params"] if p.grad is not None):
                state = self.state[p]
                if not state:
                    state["m"] = torch.zeros_like(p)
                    state["v"] = torch.zeros_like(p)
                m, v = state["m"], state["v"]
                m.mul_(beta1).add_(p.grad, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                update = m / (v.sqrt() + group["eps"]) + group["weight_decay"] * p
                p.sub_(group["lr"] * update)


def build_optimizer(groups: list[dict], ft: FinetuneConfig) -> torch.optim.Optimizer:
    """The official AdamWeightDecay over param_groups' groups, or torch's AdamW with
    --adam-bias-correction."""
    optimizer = torch.optim.AdamW if ft.adam_bias_correction else AdamWeightDecay
    return optimizer(groups, lr=ft.lr, betas=ft.adam_betas, eps=ft.adam_eps,
                     weight_decay=ft.weight_decay)


def optimizer_and_schedule(model: nn.Module, num_layers: int, ft: FinetuneConfig, total_steps: int):
    """Table 7's optimizer over layer-wise lr groups and its schedule: warm-up over
    ft.warmup_fraction of `total_steps`, then linear decay to zero (electra.lr_factor).
    Shared by GLUE and SQuAD."""
    groups = param_groups(model, num_layers, ft.lr, ft.layer_decay, ft.weight_decay,
                          official=not ft.layer_decay_fixed)
    opt = build_optimizer(groups, ft)
    return opt, warmup_then_decay(opt, ft, total_steps)


def warmup_then_decay(opt: torch.optim.Optimizer, ft: FinetuneConfig, total_steps: int):
    """Table 7's schedule: warm-up over ft.warmup_fraction of `total_steps`, then linear decay to
    zero (electra.lr_factor), each group's lr scaled by it."""
    warmup = round(ft.warmup_fraction * total_steps)
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda step: lr_factor(step, total_steps, warmup))


# -----------------------------------------------------------------------------
# The loop: one seed fine-tuned, evaluated on dev after every epoch


LOSS_WINDOW = 50  # the progress bar shows the mean loss of the last 50 batches (display only)
# Ctrl-C or SIGTERM in fine-tuning: results.json (SQuAD: its checkpoint) keeps what finished
STOPPING = "stopping before the next update: the unfinished seed (SQuAD: epoch) is dropped"


def task_loss(task: glue.Task, logits, labels):
    """Cross-entropy for classification; for STS-B the squared error on label / 5 (official
    RegressionTask)."""
    if task.regression:
        return F.mse_loss(logits.squeeze(-1), labels / glue.STSB_MAX)
    return F.cross_entropy(logits, labels)


def update(model: nn.Module, opt, schedule, loss: torch.Tensor, grad_clip: float) -> None:
    """One fine-tuning update, GLUE's and SQuAD's: the gradient of `loss`, its global norm clipped
    to grad_clip (official optimization.py), the AdamW step, then the schedule's next lr."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    opt.step()
    schedule.step()


def diverged(what: str, step: int, epoch: int, lr: float) -> SystemExit:
    """The one line that ends a run whose loss is not finite (GLUE's loop and SQuAD's)."""
    return SystemExit(f"error: {what}: the loss is not finite at step {step:,} (epoch {epoch}, "
                      f"lr {lr:g}): fine-tuning diverged; no results were written for this seed. "
                      f"Lower --lr")


class Stopped(Exception):
    """Ctrl-C or SIGTERM stopped a run between two updates; what it had not finished is dropped."""


@dataclass
class Runtime:
    """How a run is carried out, not what it computes: where, what stops it, what it resumes."""
    device: str  # cuda or cpu
    stop: StopOnSignal | None = None  # .requested (Ctrl-C, SIGTERM): stop before the next update
    checkpoint: Path | None = None  # squad.py: written after every epoch, resumed from; GLUE: none
    identity: dict = field(default_factory=dict)  # squad.py: what the run is, kept in checkpoint


def check_stop(runtime: Runtime) -> None:
    """Raise Stopped when Ctrl-C or SIGTERM asked the run to stop (plumbing.StopOnSignal)."""
    if runtime.stop is not None and runtime.stop.requested:
        raise Stopped


@dataclass
class EpochOf:
    """One pass over the training rows in a new random order, one update per ft.batch_size rows:
    what both phases of fit_head_first and finetune_seed's epochs share. Returns the losses."""
    task: glue.Task
    train: glue.Encoded
    labels: torch.Tensor  # [N] the training rows' labels
    ft: FinetuneConfig
    order_rng: torch.Generator  # the rows' orders, drawn from the seed
    runtime: Runtime
    device: torch.device
    autocast: contextlib.AbstractContextManager  # bf16 on GPUs that have it, else a no-op
    what: str  # "sst2 seed 0", for the bar and the error lines
    pad_id: int  # the tokenizer's [PAD]

    def __call__(self, model: nn.Module, opt, schedule, desc: str, epoch: int) -> list[float]:
        order = torch.randperm(len(self.train), generator=self.order_rng).tolist()
        losses = []
        with tqdm(total=len(self.train), unit="ex", desc=f"{self.what} {desc}",
                  dynamic_ncols=True, leave=False) as bar:
            for start in range(0, len(self.train), self.ft.batch_size):
                check_stop(self.runtime)
                rows = order[start:start + self.ft.batch_size]
                batch = self.train.batch(rows, self.pad_id, self.device)
                with self.autocast:
                    logits = model(*batch).float()  # [B, C]
                loss = task_loss(self.task, logits, self.labels[rows].to(self.device))
                if not torch.isfinite(loss):
                    raise diverged(self.what, schedule.last_epoch + 1, epoch, self.ft.lr)
                update(model, opt, schedule, loss, self.ft.grad_clip)
                losses.append(loss.item())
                bar.update(len(rows))
                bar.set_postfix(loss=f"{np.mean(losses[-LOSS_WINDOW:]):.4f}")
        return losses


def fit_head_first(model: Classifier, epoch_of: EpochOf, ft: FinetuneConfig) -> None:
    """Linear probing before fine-tuning (Kumar et al. 2022; not the paper's): the head alone is
    trained for ft.head_first_epochs on the frozen encoder, which reads its states as a probe does
    (eval mode: no dropout, no gradient); then finetune_seed fine-tunes every weight from there,
    with Table 7's recipe. The head gets Table 7's lr and schedule over this phase, as it gets them
    in fine-tuning (layer_lr_scales: the head's scale is 1). A head fitted first gives the encoder
    useful gradients from the first update, where a random head's may first move the pre-trained
    features away from what they hold."""
    head = [p for name, p in model.named_parameters() if not name.startswith("encoder.")]
    steps = ft.head_first_epochs * math.ceil(len(epoch_of.train) / ft.batch_size)
    opt = build_optimizer([{"params": head}], ft)
    schedule = warmup_then_decay(opt, ft, steps)
    model.encoder.requires_grad_(False)
    for epoch in range(1, ft.head_first_epochs + 1):
        model.train()
        model.encoder.eval()
        losses = epoch_of(model, opt, schedule, f"head alone {epoch}/{ft.head_first_epochs}",
                          epoch)
        tqdm.write(f"{epoch_of.what} head alone, epoch {epoch}: loss {np.mean(losses):.4f}")
    model.encoder.requires_grad_(True)


def finetune_seed(task: glue.Task, pre: Pretrained, splits: glue.Splits, ft: FinetuneConfig,
                  seed: int, runtime: Runtime) -> dict:
    """Fine-tune one copy of the pre-trained encoder with `seed`; dev metrics after every epoch.

    Table 7's optimizer and schedule over `epochs` passes, each over the training rows in a new
    random order (drawn from `seed`), one update per ft.batch_size rows, its gradients clipped to
    a global norm of ft.grad_clip. A loss that is not finite stops the run with one line; Ctrl-C or
    SIGTERM (runtime.stop) raises Stopped before the next update.

    Returns {"seed", "history": [{"epoch", "train_loss", dev metrics...}], "dev": last epoch's
    metrics, "test": {split: predictions}, "seconds": wall-clock}. As in the official code, the
    reported model is the last one (no early stopping, no choosing the best epoch on dev).
    """
    t0 = time.time()
    device = torch.device(runtime.device)
    pad_id = pre.tokenizer.pad_id
    _, autocast = mixed_precision(device, "auto")  # bf16 on GPUs that have it, else fp32
    torch.manual_seed(seed)  # the head's init and dropout
    model = Classifier(encoder_config(pre.config, ft), task.num_outputs, ft.head_dropout,
                       ft.pool)
    model.encoder.load_state_dict(pre.encoder_state)
    reinit_top_layers(model.encoder, ft.reinit_layers)
    model.to(device)
    train = splits.train
    labels = torch.tensor(train.labels, dtype=torch.float32 if task.regression else torch.long)
    epochs = task.epochs if ft.epochs is None else ft.epochs
    steps = epochs * math.ceil(len(train) / ft.batch_size)
    order_rng = torch.Generator().manual_seed(seed)
    what = f"{task.name} seed {seed}"
    epoch_of = EpochOf(task, train, labels, ft, order_rng, runtime, device, autocast, what, pad_id)
    if ft.head_first_epochs:
        fit_head_first(model, epoch_of, ft)
    opt, schedule = optimizer_and_schedule(model, pre.config.num_layers, ft, steps)
    history = []
    for epoch in range(1, epochs + 1):
        model.train()
        losses = epoch_of(model, opt, schedule, f"epoch {epoch}/{epochs}", epoch)
        metrics = evaluate(model, task, splits.dev, ft.eval_batch_size, pad_id, device)
        history.append({"epoch": epoch, "train_loss": float(np.mean(losses)), **metrics})
        scores = " ".join(f"{k} {v:.2f}" for k, v in metrics.items())
        tqdm.write(f"{what} epoch {epoch}: loss {np.mean(losses):.4f} {scores}")
    test_pred = {split: predict(model, task, data, ft.eval_batch_size, pad_id, device)
                 for split, data in splits.test.items()}
    dev = {k: v for k, v in history[-1].items() if k not in ("epoch", "train_loss")}
    return {"seed": seed, "history": history, "dev": dev, "test": test_pred,
            "seconds": time.time() - t0}


@torch.no_grad()
def predict(model: Classifier, task: glue.Task, data: glue.Encoded, batch_size: int, pad_id: int,
            device) -> np.ndarray:
    """Class ids (argmax) or STS-B scores on the 0-5 scale, for every row of `data`, in its order.

    Rows are batched shortest first, so each batch pads little; the outputs are put back in order.
    """
    model.eval()
    _, autocast = mixed_precision(device, "auto")
    order = np.argsort([len(ids) for ids in data.ids], kind="stable")
    out = []
    for start in range(0, len(data), batch_size):
        rows = order[start:start + batch_size]
        with autocast:
            logits = model(*data.batch(rows, pad_id, device)).float()  # [B, C]
        out.append(logits.squeeze(-1) * glue.STSB_MAX if task.regression else logits.argmax(-1))
    pred = np.zeros(len(data), dtype=np.float64 if task.regression else np.int64)
    if out:
        pred[order] = torch.cat(out).cpu().numpy()
    return pred


def evaluate(model, task: glue.Task, dev: dict[str, glue.Encoded], batch_size: int, pad_id: int,
             device) -> dict:
    """The task's dev metrics (all dev splits; MNLI: matched and mismatched)."""
    metrics = {}
    for split, suffix in task.dev_splits:
        pred = predict(model, task, dev[split], batch_size, pad_id, device)
        metrics.update(glue.task_metrics(task, pred, dev[split].labels, suffix))
    return metrics


# -----------------------------------------------------------------------------
# Results: the median over seeds, results.json, the table, finetune.png, GLUE's submission files


def summarize(task: glue.Task, runs: list[dict]) -> dict:
    """The finished seeds' records (dev metrics, history, seconds) and their median (the paper
    reports the median of 10 seeds, section 3.1)."""
    median = {m: float(np.median([r["dev"][m] for r in runs])) for m in runs[0]["dev"]}
    return {"seeds": runs, "median": median, "paper_metric": task.paper_metric}


SEED_PREDICTIONS = "seed_predictions"  # in --out-dir: each finished seed's test predictions


def seed_predictions_path(out: Path, task: glue.Task, seed: int) -> Path:
    """Where a seed's test predictions (.npz) wait for its task's submission files."""
    return out / SEED_PREDICTIONS / f"{task.name}_seed{seed}.npz"


def save_seed_predictions(path: Path, test: dict[str, np.ndarray]) -> None:
    """A seed's test predictions {split: array}, written atomically (never half a file)."""
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:  # a file, not a name: np.savez would add .npz to the .tmp name
            np.savez(f, **test)
    atomic_write(path, write)


def load_seed_predictions(path: Path) -> dict[str, np.ndarray]:
    """save_seed_predictions' arrays; one line if the file is gone or unreadable."""
    try:
        with np.load(path) as saved:
            return {split: saved[split] for split in saved.files}
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: {path} cannot be read ({type(e).__name__}: {e}); it holds a "
                         f"finished seed's test predictions: start over with --restart") from None


def write_test_predictions(task: glue.Task, runs: list[dict], test: dict, out: Path) -> int | None:
    """GLUE submission files from the seed whose dev score is the (lower) median, the run the
    paper would report; returns that seed (None when the task has no test file)."""
    if not test:
        return None
    chosen = sorted(runs, key=lambda r: r["dev"][task.paper_metric])[(len(runs) - 1) // 2]
    predictions = load_seed_predictions(seed_predictions_path(out, task, chosen["seed"]))
    for split, stem in task.test_splits:
        if split in test:
            path = out / "glue_submission" / f"{stem or task.folder}.tsv"
            glue.write_submission(task, path, test[split].index, predictions[split])
    return chosen["seed"]


def write_results(results: dict, out: Path) -> None:
    """results.json, with the GLUE score of the tasks so far, written atomically: after every
    seed, so that an interruption or a later failure loses no finished run."""
    medians = {n: r["median"] for n, r in results["tasks"].items()}
    if any(n in glue.PAPER_AVERAGE_TASKS for n in medians):
        results["glue_score"] = glue.glue_score(medians)
    results["glue_score_leaderboard"] = glue.glue_score(medians, leaderboard=True)
    # allow_nan=False: NaN is not JSON, and no metric may be one
    atomic_write(out / "results.json", json.dumps(results, indent=2, allow_nan=False))


def finish_task(results: dict, task: glue.Task, test: dict, out: Path) -> None:
    """Once all of a task's seeds are in `results`: its submission files, results.json (saying
    which seed they are from) and finetune.png."""
    record = results["tasks"][task.name]
    record["test_predictions_seed"] = write_test_predictions(task, record["seeds"], test, out)
    write_results(results, out)
    plot_finetuning_curves(results["tasks"], out / "finetune.png")


def format_table(results: dict[str, dict]) -> str:
    """One line per task: each seed's paper metric, the median of every metric."""
    lines = [f"{'task':6} {'metric':9} {'median':>7}  seeds"]
    for name, r in results.items():
        metric = glue.get_task(name).paper_metric
        per_seed = " ".join(f"{s['dev'][metric]:.2f}" for s in r["seeds"])
        lines.append(f"{name:6} {metric:9} {r['median'][metric]:7.2f}  {per_seed}")
        others = ", ".join(f"{m} {v:.2f}" for m, v in r["median"].items() if m != metric)
        if others:
            lines.append(f"{'':6} {'':9} {'':7}  (median {others})")
    medians = {name: r["median"] for name, r in results.items()}
    if any(n in glue.PAPER_AVERAGE_TASKS for n in medians):
        lines.append(f"GLUE score (paper: one metric per task, no WNLI) over {len(medians)} "
                     f"task(s): {glue.glue_score(medians):.2f}")
    return "\n".join(lines)


def plot_finetuning_curves(results: dict[str, dict], path: Path) -> None:
    """finetune.png: the dev metric the paper reports, after each epoch, one line per seed, one
    panel per task."""
    from matplotlib.figure import Figure  # its own canvas: no pyplot, the global backend untouched

    fig = Figure(figsize=(4.5 * len(results), 3.5))
    axes = fig.subplots(1, len(results), squeeze=False)
    for ax, (name, r) in zip(axes[0], results.items()):
        metric = r["paper_metric"]
        for s in r["seeds"]:
            epochs = [h["epoch"] for h in s["history"]]
            scores = [h[metric] for h in s["history"]]
            ax.plot(epochs, scores, marker="o", label=f"seed {s['seed']}")
        ax.set(title=f"{name}: median {r['median'][metric]:.2f}", xlabel="epoch",
               ylabel=f"dev {metric}")
        ax.xaxis.get_major_locator().set_params(integer=True)  # epochs are whole numbers
        ax.grid(alpha=0.3)
        if len(r["seeds"]) <= 10:
            ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=120)
    os.replace(tmp, path)


# -----------------------------------------------------------------------------
# Resuming: results.json records what its runs were made from, checked before they are kept


def sha256_of_encoder(pre: Pretrained) -> str:
    """sha256 of what fine-tuning starts from: the encoder's config and weights, and the vocab.
    It tells apart two checkpoints at one path, and a hub revision fetched again after it moved."""
    h = hashlib.sha256()
    h.update(json.dumps(asdict(pre.config), sort_keys=True).encode())
    h.update(f"vocab {pre.tokenizer.hash()} lowercase {pre.tokenizer.lowercase}".encode())
    for name in sorted(pre.encoder_state):
        h.update(name.encode())
        weights = pre.encoder_state[name].detach().cpu().contiguous().reshape(-1)
        h.update(weights.view(torch.uint8).numpy())  # the raw bytes, whatever the dtype
    return h.hexdigest()


def init_identity(init: str, revision: str, pre: Pretrained) -> dict:
    """What --init was: a hub name and its revision, or a path; and the sha256 of what it holds."""
    if is_hub_name(init):
        return {"hub": init, "revision": revision, "sha256": sha256_of_encoder(pre)}
    return {"path": str(Path(init).resolve()), "sha256": sha256_of_encoder(pre)}


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes, read in chunks (MNLI's train.tsv is 300 MB)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def data_identity(task: glue.Task, folder: Path) -> dict[str, str]:
    """{file name: sha256} of the task's TSVs in `folder` that exist (train, dev and test)."""
    stems = ["train"] + [s for s, _ in task.dev_splits] + [s for s, _ in task.test_splits]
    paths = [folder / f"{stem}.tsv" for stem in stems]
    return {path.name: file_sha256(path) for path in paths if path.is_file()}


def as_json(value):
    """`value` as it reads back from JSON (tuples become lists), to compare with what was read."""
    return json.loads(json.dumps(value))


def short(value) -> str:
    """A value for a one-line message; a hash cut to its first 12 characters."""
    text = str(value)
    return text if len(text) <= 24 else text[:12] + "..."


def differences(saved: dict, now: dict, where: str = "") -> list[str]:
    """Each value that differs between a record read back (`saved`) and this run's, by its path.

    >>> differences({"recipe": {"lr": 3e-4, "epochs": 2}}, {"recipe": {"lr": 1e-3, "epochs": 2}})
    ['recipe.lr 0.001 here, 0.0003 before']
    """
    found = []
    for key in dict.fromkeys([*saved, *now]):  # both records' keys, in order, once each
        old = saved.get(key)
        new = now.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            found += differences(old, new, f"{where}{key}.")
        elif old != new:
            found.append(f"{where}{key} {short(new)} here, {short(old)} before")
    return found


def refuse(path: Path, found: list[str]) -> SystemExit:
    """The one line that refuses to continue what `path` (results.json, squad.py's checkpoint)
    holds, made with other settings."""
    return SystemExit(f"--out-dir {path.parent}: its {path.name} holds runs made with other "
                      f"settings: {'; '.join(found[:3])}. Run with its settings to resume, pass "
                      f"--restart to start over, or use another --out-dir")


RECORDED = ("init_id", "recipe", "data", "tasks")  # what results.json must hold to be resumed


def read_results(out: Path) -> dict | None:
    """results.json in `out`, or None when there is none; one line if it cannot be resumed."""
    path = out / "results.json"
    if not path.is_file():
        return None
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SystemExit(f"--out-dir {out}: results.json cannot be read ({e}): pass --restart to "
                         f"start over, or use another --out-dir") from None
    if not isinstance(saved, dict) or any(key not in saved for key in RECORDED):
        raise SystemExit(f"--out-dir {out}: results.json does not record its init, recipe and "
                         f"data (an older finetune.py wrote it): pass --restart to start over, or "
                         f"use another --out-dir")
    return saved


def with_recipe_defaults(recipe: dict) -> dict:
    """A recipe saved before some FinetuneConfig field existed, with that field's default: the run
    that saved it ran with the default (FinetuneConfig's defaults keep the earlier behaviour:
    head_first_epochs 0 trains head and encoder together)."""
    return {**as_json(asdict(FinetuneConfig())), **recipe}


def resumed_results(fresh: dict, out: Path, restart: bool) -> dict:
    """results.json's record, its finished seeds kept, when it was made from the same init with
    the same recipe; `fresh` (no seeds) when there is none or with --restart."""
    saved = None if restart else read_results(out)
    if saved is None:
        return fresh
    saved = {**saved, "recipe": with_recipe_defaults(saved["recipe"])}
    compared = ("init_id", "recipe")
    found = differences({k: saved[k] for k in compared}, as_json({k: fresh[k] for k in compared}))
    if found:
        raise refuse(out / "results.json", found)
    return {**saved, "init": fresh["init"], "device": fresh["device"]}


def check_data(results: dict, task: glue.Task, data: dict[str, str], out: Path) -> None:
    """Record the task's data identity; one line if the seeds kept were run on other data."""
    saved = results["data"].get(task.name)
    if saved is not None and task.name in results["tasks"]:
        found = differences(saved, data, f"data.{task.name}.")
        if found:
            raise refuse(out / "results.json", found)
    results["data"][task.name] = data


def finished_seeds(results: dict, task: glue.Task) -> list[int]:
    """The seeds of `task` that results.json holds."""
    record = results["tasks"].get(task.name)
    return [r["seed"] for r in record["seeds"]] if record else []


def seed_list(seeds: list[int]) -> str:
    """Seeds for a message, a run of three or more consecutive ones as first-last.

    >>> seed_list([0, 1, 2, 3]), seed_list([0, 1]), seed_list([0, 2, 3])
    ('0-3', '0, 1', '0, 2, 3')
    """
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


def say_kept(results: dict, tasks: list[glue.Task], seeds: list[int], out: Path) -> int:
    """Print one line naming the finished (task, seed) runs that are kept; return their number."""
    kept = []
    count = 0
    for task in tasks:
        finished = finished_seeds(results, task)
        done = [s for s in seeds if s in finished]
        count += len(done)
        if done:
            kept.append(f"{task.name} seed{'s' if len(done) > 1 else ''} {seed_list(done)}")
    if count:
        print(f"resuming {out / 'results.json'}: skipping {count} finished run(s) "
              f"({'; '.join(kept)}), running the other {len(tasks) * len(seeds) - count}")
    return count


# -----------------------------------------------------------------------------
# The command line


@dataclass
class Run:
    """Where the model and the data come from, where results go, how many seeds: not the recipe."""
    task: str  # a GLUE task, a comma-separated list, or "all"
    init: str  # train.py checkpoint or run folder, HF ELECTRA/BERT folder, or hub name
    revision: str = "main"  # hub revision of --init: a branch, tag or commit
    hub_cache_dir: str | None = None  # None: ~/.cache/electra-from-scratch/hub (hf.hub_cache_dir)
    vocab: str | None = None  # None: the vocab.txt beside --init
    data_dir: str | None = None  # None: download GLUE into cache_dir
    cache_dir: str = str(glue.DEFAULT_CACHE)  # where downloaded GLUE files are kept
    glue_url: str = glue.GLUE_BASE_URL  # GLUE's own download script's URLs
    mrpc_url: str = glue.MRPC_BASE_URL
    out_dir: str = "out/finetune"  # results.json, finetune.png, glue_submission/
    seeds: int = 1  # runs per task, the median reported (paper: 10, section 3.1)
    seed: int = 0  # the first seed; runs use seed, seed+1, ...
    device: str = "cuda" if torch.cuda.is_available() else "cpu"
    restart: bool = False  # False: keep the finished runs results.json in out_dir holds


def check_run(run: Run) -> None:
    """One line naming the flag of a value out of its range."""
    if run.seeds < 1:
        raise SystemExit(f"--seeds {run.seeds}: must be an integer >= 1 (runs per task)")
    if run.seed < 0:
        raise SystemExit(f"--seed {run.seed}: must be an integer >= 0 (the first seed)")


def from_flags(config_cls, args: argparse.Namespace):
    """A config dataclass with every field that is a flag set from the command line."""
    return config_cls(**{f.name: getattr(args, f.name) for f in fields(config_cls)
                         if hasattr(args, f.name)})


def add_init_flags(p: argparse.ArgumentParser) -> None:
    """--init and its companions, the same for GLUE and SQuAD: what fine-tuning starts from, and
    --dropout, the one setting of its config that fine-tuning may change (encoder_config)."""
    p.add_argument("--init", required=True,
                   help="train.py checkpoint, HuggingFace ELECTRA/BERT folder, or a hub name "
                        "such as google/electra-small-discriminator (fetched once)")
    p.add_argument("--revision", default=Run.revision,
                   help="hub revision of --init: a branch, tag or commit (default %(default)s)")
    add_flag(p, "hub_cache_dir",
             help="where hub checkpoints are kept (default ~/.cache/electra-from-scratch/hub)")
    p.add_argument("--vocab", help="vocab.txt (default: the one beside --init)")
    p.add_argument("--dropout", type=float,
                   help="the encoder's dropout and attention dropout in fine-tuning (default: "
                        "--init's, 0 for the tiny preset; the head's stays Table 7's 0.1)")


def parse_args(argv=None) -> argparse.Namespace:
    """Run's flags and the recipe's (FinetuneConfig's), each checked against its range. A recipe
    flag left out is None where the paper's value depends on the model or the task."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    tasks = ", ".join(glue.TASKS)
    p.add_argument("--task", required=True,
                   help=f"one of {tasks}, a comma-separated list, or 'all'")
    add_init_flags(p)
    add_flag(p, "data_dir", help="the task's GLUE folder, or a folder of GLUE task folders "
                                 "(default: download into --cache-dir)")
    add_flag(p, "cache_dir", default=Run.cache_dir,
             help="where downloaded GLUE files are kept (default %(default)s)")
    add_flag(p, "glue_url", default=Run.glue_url, help="base URL of GLUE's zips")
    add_flag(p, "mrpc_url", default=Run.mrpc_url, help="base URL of the MRPC source files")
    add_flag(p, "out_dir", default=Run.out_dir,
             help="results.json, finetune.png, glue_submission/ (default %(default)s)")
    p.add_argument("--seeds", type=int, default=Run.seeds,
                   help="runs per task; the median is reported (paper: 10) (default %(default)s)")
    p.add_argument("--seed", type=int, default=Run.seed,
                   help="first seed; runs use seed, seed+1, ... (default %(default)s)")
    p.add_argument("--device", default=Run.device, help="cuda or cpu (default %(default)s)")
    p.add_argument("--restart", action="store_true",
                   help="start over: without it, the (task, seed) runs that --out-dir's "
                        "results.json holds are kept and only the others run")
    # the recipe (FinetuneConfig)
    p.add_argument("--lr", type=float,
                   help="peak learning rate; default: Table 7's for the model size")
    add_flag(p, "layer_decay", type=float,
             help="layer-wise lr decay; default: 0.8 (0.9 for large)")
    add_flag(p, "layer_decay_fixed", action="store_true",
             help="top layer gets lr*decay, not the official code's lr*decay^2 "
                  "(see layer_lr_scales)")
    add_flag(p, "weight_decay", type=float, default=FinetuneConfig.weight_decay,
             help="Table 7's is 0 (the official config's default is 0.01) (default %(default)s)")
    add_flag(p, "batch_size", type=int, default=FinetuneConfig.batch_size,
             help="examples per update (Table 7) (default %(default)s)")
    p.add_argument("--epochs", type=int, help="default: 3, or 10 for RTE and STS-B (Table 7)")
    add_flag(p, "max_seq_len", type=int,
             help=f"tokens per example (official max_seq_length; default {MAX_SEQ_LEN}, or the "
                  f"model's positions if it has fewer)")
    add_flag(p, "adam_bias_correction", action="store_true",
             help="torch's AdamW (bias-corrected) instead of the official optimizer, which has no "
                  "bias correction")
    add_flag(p, "single_order", action="store_true",
             help="do not also train MRPC/STS-B on swapped sentence pairs (the official code does)")
    add_flag(p, "max_train_examples", type=int,
             help="use only the first N rows of train.tsv (before MRPC/STS-B's swapped copies); "
                  "for quick runs, not the paper")
    add_flag(p, "reinit_layers", type=int, default=FinetuneConfig.reinit_layers,
             help="draw the top N encoder layers afresh before fine-tuning (Zhang et al. 2021; "
                  "not the paper's) (default %(default)s)")
    add_flag(p, "head_first_epochs", type=int, default=FinetuneConfig.head_first_epochs,
             help="first train the head alone for N epochs on the frozen encoder, then every "
                  "weight (linear probing then fine-tuning, Kumar et al. 2022; not the paper's) "
                  "(default %(default)s)")
    p.add_argument("--pool", default=FinetuneConfig.pool,
                   help="what the head reads: cls, the [CLS] state (the paper's), or mean, the "
                        "mean of the last layer's token states (not the paper's) "
                        "(default %(default)s)")
    args = p.parse_args(argv)
    check_run(from_flags(Run, args))
    check_finetune_config(from_flags(FinetuneConfig, args))
    return args


def glue_folder(task: glue.Task, run: Run) -> Path:
    """The folder of the task's TSVs (--data-dir, or GLUE downloaded once into --cache-dir)."""
    try:
        return glue.task_folder(task, run.data_dir, run.cache_dir, run.glue_url, run.mrpc_url)
    except DownloadError as e:
        raise SystemExit(f"error: {e}\nFor GLUE, you can also fetch {task.folder}'s files "
                         f"yourself and pass --data-dir FOLDER (the folder holding train.tsv "
                         f"and dev.tsv).") from None
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"error: {e}") from None


def prepare(task: glue.Task, folder: Path, pre: Pretrained, ft: FinetuneConfig) -> glue.Splits:
    """The task's splits read and tokenised, with one line saying how many rows each has."""
    try:
        splits = glue.prepare_task(task, folder, pre.tokenizer, ft.max_seq_len,
                                   ft.max_train_examples, double_unordered=not ft.single_order)
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"error: {e}") from None
    dev = ", ".join(f"{s} {len(d):,}" for s, d in splits.dev.items())
    test = ", ".join(f"{s} {len(d):,}" for s, d in splits.test.items())
    tqdm.write(f"{task.name}: {len(splits.train):,} training rows, {dev}, "
               + (f"test {test}" if test else "no test file"))
    return splits


@dataclass
class Job:
    """What all the (task, seed) runs of one command share."""
    pre: Pretrained  # the encoder every run starts from
    ft: FinetuneConfig  # the recipe, filled in for the model's size
    seeds: list[int]  # the seeds asked for, of every task
    out: Path  # --out-dir
    runtime: Runtime  # the device, and Ctrl-C / SIGTERM
    bar: tqdm  # one step per finished (task, seed) run, with the ETA of them all


def stopped(task: glue.Task, seed: int, results: dict, out: Path) -> SystemExit:
    """The one line after Ctrl-C or SIGTERM: what was dropped, what is kept, how to resume."""
    count = sum(len(r["seeds"]) for r in results["tasks"].values())
    kept = f"{out / 'results.json'} holds the {count} finished run(s)" if count else \
        "no run had finished"
    return SystemExit(f"stopped by Ctrl-C or SIGTERM in {task.name} seed {seed}, which was "
                      f"dropped: {kept}. Run the same command again to resume")


def finetune_task(job: Job, task: glue.Task, folder: Path, results: dict) -> None:
    """Fine-tune the seeds of `task` that results.json does not hold, rewriting it after each;
    then, with all of its seeds done, its submission files and finetune.png."""
    done = finished_seeds(results, task)
    todo = [s for s in job.seeds if s not in done]
    if not todo and "test_predictions_seed" in results["tasks"][task.name]:
        return  # finished by an earlier run
    splits = prepare(task, folder, job.pre, job.ft)
    runs = results["tasks"][task.name]["seeds"] if done else []
    for seed in todo:
        try:
            run = finetune_seed(task, job.pre, splits, job.ft, seed, job.runtime)
        except Stopped:
            raise stopped(task, seed, results, job.out) from None
        if run["test"]:  # first the predictions, so that a seed in results.json always has them
            save_seed_predictions(seed_predictions_path(job.out, task, seed), run["test"])
        record = {k: v for k, v in run.items() if k != "test"}
        runs = sorted(runs + [record], key=lambda r: r["seed"])
        results["tasks"][task.name] = summarize(task, runs)
        write_results(results, job.out)
        job.bar.update(1)
    finish_task(results, task, splits.test, job.out)


def main(argv=None) -> dict:
    args = parse_args(argv)
    run = from_flags(Run, args)
    out = Path(run.out_dir)
    try:
        names = list(glue.TASKS) if run.task == "all" else [n for n in run.task.split(",") if n]
        tasks = [glue.get_task(n) for n in names]
        pre = load_init(run.init, run.revision, run.hub_cache_dir, run.vocab)
    except (FileNotFoundError, ValueError, HubError) as e:
        raise SystemExit(f"error: {e}") from None
    ft = from_flags(FinetuneConfig, args)
    if ft.max_seq_len is not None and ft.max_seq_len > pre.config.max_position:
        raise SystemExit(f"--max-seq-len {ft.max_seq_len}: must be at most "
                         f"{pre.config.max_position}, the positions {pre.source} has "
                         f"embeddings for")
    if ft.reinit_layers > pre.config.num_layers:
        raise SystemExit(f"--reinit-layers {ft.reinit_layers}: must be at most "
                         f"{pre.config.num_layers}, the layers {pre.source} has")
    ft = recipe_for(pre.config, ft)
    optimizer = "Adam without bias correction (official)"
    if ft.adam_bias_correction:
        optimizer = "AdamW (bias-corrected)"
    dropout = f"dropout {encoder_config(pre.config, ft).dropout:g}"
    if ft.dropout is None:
        dropout += " (--init's)"
    print(f"fine-tuning {pre.source} ({pre.config.num_layers} layers, hidden "
          f"{pre.config.hidden_size}) on {run.device}: lr {ft.lr:g}, layer decay {ft.layer_decay}, "
          f"batch {ft.batch_size}, {dropout}, {optimizer}")
    if ft.reinit_layers:
        print(f"the top {ft.reinit_layers} of {pre.config.num_layers} layers start from fresh "
              f"random weights (--reinit-layers)")
    if ft.pool == "mean":
        print("the head reads the mean of the last layer's token states, not [CLS] (--pool mean)")
    if ft.head_first_epochs:
        print(f"the head is trained alone on the frozen encoder for {ft.head_first_epochs} "
              f"epoch(s) first (--head-first-epochs)")
    fresh = {"init": pre.source, "init_id": init_identity(run.init, run.revision, pre),
             "device": run.device, "recipe": asdict(ft), "data": {}, "tasks": {}}
    results = resumed_results(fresh, out, run.restart)
    folders = {task.name: glue_folder(task, run) for task in tasks}
    for task in tasks:
        check_data(results, task, data_identity(task, folders[task.name]), out)
    seeds = [run.seed + i for i in range(run.seeds)]
    kept = say_kept(results, tasks, seeds, out)
    with tqdm(total=len(tasks) * len(seeds), initial=kept, unit="run", desc="GLUE runs",
              smoothing=0, dynamic_ncols=True) as bar, StopOnSignal(STOPPING) as stop:
        job = Job(pre, ft, seeds, out, Runtime(run.device, stop), bar)
        for task in tasks:
            finetune_task(job, task, folders[task.name], results)
    print(format_table(results["tasks"]))
    submission = out / "glue_submission"
    print(f"wrote {out / 'results.json'}, {out / 'finetune.png'}"
          + (f", {submission}/" if submission.is_dir() else ""))
    return results


if __name__ == "__main__":
    main()
