"""Fine-tune a pre-trained ELECTRA (or BERT) discriminator on GLUE, with the paper's recipe.

Clark et al. 2020 (arXiv 2003.10555) measure a pre-trained discriminator by what it scores on GLUE
after fine-tuning: section 3.1 and Appendix A, Table 7 (the recipe), Tables 1, 2 and 8 (the
scores). This file reads beside Appendix A:

    recipe       Table 7's hyperparameters or the official code's defaults (RECIPES), by size
    head         the official code's classifier on the [CLS] state
    lr decay     layer-wise learning rates, the official optimizer, warm-up + linear decay
    the loop     one seed: epochs of batches, the dev metrics after each epoch
    evaluation   predictions (dev and test) and the task's metrics
    main         the command line

What is not the method lives in support/: GLUE's tasks, files and metrics (support/glue.py),
loading --init (support/hf.py), the flags and their checks (support/cli.py), and running many
tasks and seeds with results.json, its resuming, the table and finetune.png
(support/finetune_runs.py).

    python finetune.py --task sst2 --init ckpt.pt --data-dir ../shared/data/glue/SST-2
    python finetune.py --task mrpc,stsb --init path/to/hf-electra-small-discriminator --seeds 10
    python finetune.py --task all --init google/electra-small-discriminator --seeds 10  # the hub

Run the same command again after Ctrl-C (or a crash) and it resumes: the (task, seed) runs that
results.json holds are kept, the others run; --restart starts over.
"""
import math
import time
from dataclasses import dataclass, replace

from support import cli

if __name__ == "__main__":  # the flags first: torch takes seconds to load, a typo answers at once
    cli.finetune_args(description=__doc__.split("\n\n")[0])

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

from electra import ElectraConfig, Encoder, decays, init_weights, lr_factor
from support import finetune_runs as runs
from support import glue
from support.hf import Pretrained, paper_size
from support.plumbing import mixed_precision

# -----------------------------------------------------------------------------
# The recipe: paper Appendix A, Table 7

# Two recipes, by model size; they differ only in Small's lr and in the weight decay.
# table7: the paper's Table 7, "Learning Rate" 3e-4 Small, 1e-4 Base, 5e-5 Large; "Layerwise LR
#   decay" 0.8, 0.8, 0.9; "Weight Decay" 0.
# official: the official configure_finetuning.py's defaults, which its README's commands ran and
#   so produced its "Expected Results" for the released checkpoints: learning_rate 1e-4
#   (5e-5 for large), layerwise_lr_decay 0.8 (0.9 for large), weight_decay_rate 0.01.
RECIPES = {
    "table7": {
        "small": dict(lr=3e-4, layer_decay=0.8, weight_decay=0.0),
        "base": dict(lr=1e-4, layer_decay=0.8, weight_decay=0.0),
        "large": dict(lr=5e-5, layer_decay=0.9, weight_decay=0.0),
    },
    "official": {
        "small": dict(lr=1e-4, layer_decay=0.8, weight_decay=0.01),
        "base": dict(lr=1e-4, layer_decay=0.8, weight_decay=0.01),
        "large": dict(lr=5e-5, layer_decay=0.9, weight_decay=0.01),
    },
}
MAX_SEQ_LEN = 128  # tokens per example, all sizes (official configure_finetuning.py max_seq_length)


@dataclass
class FinetuneConfig:
    """Fine-tuning hyperparameters. None means "the recipe's value": for the model's size
    (recipe_for) or, for epochs, the task's (glue.Task.epochs)."""
    recipe_name: str = "table7"  # RECIPES: the paper's Table 7, or the official code's defaults
    lr: float | None = None  # peak lr; None: the recipe's (Table 7 "Learning Rate")
    layer_decay: float | None = None  # None: the recipe's (Table 7 "Layerwise LR decay")
    weight_decay: float | None = None  # None: the recipe's (Table 7 "Weight Decay" 0)
    # the batch's loss: the "sum" of the per-example losses, as the official run_finetuning.py
    # (tf.reduce_sum), which makes the gradient batch_size times larger before grad_clip than
    # their "mean"; on the one task a laptop run learns (STS-B) the two stay inside the seeds'
    # spread, with Table 7's recipe and with the CPU protocol, so nothing measured is a reason to
    # leave the official code's choice (experiments/README.md)
    loss_reduction: str = "sum"
    warmup_fraction: float = 0.1  # Table 7 "Warmup fraction 0.1"
    batch_size: int = 32  # Table 7 "Batch Size 32"
    epochs: int | None = None  # None: the task's, 10 for RTE and STS-B, else 3 (Table 7)
    max_seq_len: int | None = None  # None: MAX_SEQ_LEN, or the model's positions if it has fewer
    head_dropout: float = 0.1  # Table 7 "Dropout 0.1"; the official head: dropout(keep_prob=0.9)
    # the encoder's dropout and attention_dropout (encoder_config); None: the checkpoint's. The
    # tiny preset pre-trains without dropout, so Table 7's 0.1 needs --dropout 0.1 there
    dropout: float | None = None
    adam_betas: tuple[float, float] = (0.9, 0.999)  # Table 7 "Adam beta1, beta2"
    adam_eps: float = 1e-6  # Table 7 "Adam epsilon 1e-6"
    grad_clip: float = 1.0  # official optimization.py: clip_by_global_norm(grads, 1.0)
    single_order: bool = False  # MRPC/STS-B on one sentence order (official double_unordered: both)
    eval_batch_size: int = 128  # evaluation only: no effect on results, larger is faster
    max_train_examples: int | None = None  # first N rows of train.tsv: quick runs, not the paper
    # not the paper's: draw the top K encoder layers afresh before fine-tuning (Zhang et al. 2021,
    # "Revisiting Few-sample BERT Fine-tuning"), for small models whose top layers pre-training
    # specialised to its own task
    reinit_layers: int = 0
    # not the paper's: epochs that train the head alone on the frozen encoder before every weight
    # is fine-tuned (linear probing then fine-tuning, Kumar et al. 2022, "Fine-Tuning can Distort
    # Pretrained Features"); 0: the paper's recipe, the head and the encoder trained together
    head_first_epochs: int = 0


def recipe_for(model_config: ElectraConfig, ft: FinetuneConfig) -> FinetuneConfig:
    """`ft` with lr, layer_decay, weight_decay and max_seq_len filled in where they are None, from
    the recipe (ft.recipe_name) for the model's size (hf.paper_size: the widest of the paper's
    sizes no wider than the model).

    >>> from electra import get_config
    >>> r = recipe_for(get_config("base"), FinetuneConfig())
    >>> r.lr, r.layer_decay, r.weight_decay, r.max_seq_len
    (0.0001, 0.8, 0.0, 128)
    """
    preset = RECIPES[ft.recipe_name][paper_size(model_config)]
    given = {k: v for k, v in preset.items() if getattr(ft, k) is None}
    max_seq_len = ft.max_seq_len
    if max_seq_len is None:
        max_seq_len = min(MAX_SEQ_LEN, model_config.max_position)
    return replace(ft, **given, max_seq_len=max_seq_len)


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
# The head: the official code's classifier on the [CLS] state


class Classifier(nn.Module):
    """The pre-trained encoder plus a task head on the [CLS] state: logits = W dropout(h_[CLS]) + b.

    This is the official code's head (classification_tasks.py: get_pooled_output() is the first
    token's state, then dropout(keep_prob=0.9) and one dense layer; the weights Glorot-uniform,
    tf.layers.dense's default). HuggingFace's ElectraForSequenceClassification differs: dropout ->
    dense(H, H) -> GELU -> dropout -> dense(H, C), one more layer. STS-B has one output
    (regression), the others one per class.
    """

    def __init__(self, config: ElectraConfig, num_outputs: int, dropout: float):
        super().__init__()
        self.encoder = Encoder(config)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(config.hidden_size, num_outputs)
        nn.init.xavier_uniform_(self.classifier.weight)
        nn.init.zeros_(self.classifier.bias)

    def forward(self, input_ids, segment_ids, attention_mask):
        h = self.encoder.hidden_states(input_ids, segment_ids, attention_mask)  # [B, T, H]
        return self.classifier(self.dropout(h[:, 0]))  # the [CLS] state [B, H] -> [B, C]


def reinit_top_layers(encoder: Encoder, k: int) -> None:
    """Draw the top `k` blocks of a pre-trained `encoder` afresh, as pre-training starts them
    (electra.init_weights; LayerNorm back to the identity); the blocks below and the embeddings
    keep their pre-trained weights.

    Not the paper's: a lever from "Revisiting Few-sample BERT Fine-tuning" (Zhang et al. 2021),
    whose top layers, specialised to pre-training's task, fine-tune worse than fresh ones. A small
    model's middle layers can hold more of what a task needs than its last one
    (experiments/probe.py measures it layer by layer). k = num_layers keeps the embeddings alone.

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
    decay^2, not decay^1). Fine-tuning uses official=True, since it is what produced the paper's
    numbers; official=False is the schedule as the paper describes it, the top layer lr * decay.

    >>> [round(s, 4) for s in layer_lr_scales(2, 0.5)]              # emb, layer 0, layer 1, head
    [0.0625, 0.125, 0.25, 1.0]
    >>> [round(s, 4) for s in layer_lr_scales(2, 0.5, official=False)]
    [0.125, 0.25, 0.5, 1.0]
    """
    top = num_layers + 2 if official else num_layers + 1
    return [decay ** (top - depth) for depth in range(num_layers + 1)] + [1.0]


def param_groups(model, num_layers: int, lr: float, decay: float, weight_decay: float):
    """Optimizer groups, one per (depth, with or without weight decay), each with its own lr
    (layer_lr_scales, the official code's).

    Weight decay (zero in Table 7) never touches biases and LayerNorm, as the official optimizer's
    exclude_from_weight_decay (electra.decays).
    """
    scales = layer_lr_scales(num_layers, decay)
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


def warmup_then_decay(opt: torch.optim.Optimizer, ft: FinetuneConfig, total_steps: int):
    """Table 7's schedule: warm-up over ft.warmup_fraction of `total_steps`, then linear decay to
    zero (electra.lr_factor), each group's lr scaled by it."""
    warmup = round(ft.warmup_fraction * total_steps)
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda step: lr_factor(step, total_steps, warmup))


def optimizer_and_schedule(model: nn.Module, num_layers: int, ft: FinetuneConfig, total_steps: int):
    """Table 7's optimizer over layer-wise lr groups, and its schedule. Shared by GLUE and SQuAD."""
    groups = param_groups(model, num_layers, ft.lr, ft.layer_decay, ft.weight_decay)
    opt = AdamWeightDecay(groups, lr=ft.lr, betas=ft.adam_betas, eps=ft.adam_eps,
                          weight_decay=ft.weight_decay)
    return opt, warmup_then_decay(opt, ft, total_steps)


# -----------------------------------------------------------------------------
# The loop: one seed fine-tuned, evaluated on dev after every epoch


def task_loss(task: glue.Task, logits, labels, reduction: str = "sum"):
    """Cross-entropy for classification; for STS-B the squared error on label / 5 (official
    RegressionTask). The per-example losses are summed over the batch as the official code does,
    or with reduction "mean" averaged (FinetuneConfig.loss_reduction)."""
    if task.regression:
        return F.mse_loss(logits.squeeze(-1), labels / glue.STSB_MAX, reduction=reduction)
    return F.cross_entropy(logits, labels, reduction=reduction)


def train_epoch(model: nn.Module, opt, schedule, task: glue.Task, train: glue.Encoded,
                labels: torch.Tensor, order: list[int], ft: FinetuneConfig, pad_id: int,
                device: torch.device, stop, what: str, epoch: int) -> list[float]:
    """One pass over the training rows in `order`, one update per ft.batch_size rows; returns the
    batches' losses. A loss that is not finite ends the run in one line; Ctrl-C or SIGTERM (`stop`)
    raises runs.Stopped before the next update."""
    desc = f"{what} epoch {epoch}"
    _, autocast = mixed_precision(device, "auto")  # bf16 on GPUs that have it, else fp32
    losses = []
    with tqdm(total=len(train), unit="ex", desc=desc, dynamic_ncols=True, leave=False) as bar:
        for start in range(0, len(train), ft.batch_size):
            runs.check_stop(stop)
            rows = order[start:start + ft.batch_size]
            with autocast:
                logits = model(*train.batch(rows, pad_id, device)).float()  # [B, C]
            loss = task_loss(task, logits, labels[rows].to(device), ft.loss_reduction)
            if not torch.isfinite(loss):
                raise runs.diverged(what, schedule.last_epoch + 1, epoch, ft.lr)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), ft.grad_clip)  # official: 1.0
            opt.step()
            schedule.step()  # the next update's lr: warm-up, then linear decay
            losses.append(loss.item())
            bar.update(len(rows))
            bar.set_postfix(loss=f"{np.mean(losses[-runs.LOSS_WINDOW:]):.4f}")
    return losses


def finetune_seed(task: glue.Task, pre: Pretrained, splits: glue.Splits, ft: FinetuneConfig,
                  seed: int, device: str = "cpu", stop=None) -> dict:
    """Fine-tune one copy of the pre-trained encoder with `seed`; dev metrics after every epoch.

    Table 7's optimizer and schedule over `epochs` passes, each over the training rows in a new
    random order (drawn from `seed`). With ft.head_first_epochs, the head is first trained alone
    on the frozen encoder, which reads its states as a probe does (eval mode: no dropout, no
    gradient), with Table 7's lr and schedule over that phase; a head fitted first gives the
    encoder useful gradients from its first update, where a random head's may first move the
    pre-trained features away from what they hold.

    Returns {"seed", "history": [{"epoch", "train_loss", dev metrics...}], "dev": last epoch's
    metrics, "test": {split: predictions}, "seconds": wall-clock}. As in the official code, the
    reported model is the last one (no early stopping, no choosing the best epoch on dev).
    """
    t0 = time.time()
    device = torch.device(device)
    pad_id = pre.tokenizer.pad_id
    torch.manual_seed(seed)  # the head's init and dropout
    model = Classifier(encoder_config(pre.config, ft), task.num_outputs, ft.head_dropout)
    model.encoder.load_state_dict(pre.encoder_state)
    reinit_top_layers(model.encoder, ft.reinit_layers)
    model.to(device)
    train = splits.train
    labels = torch.tensor(train.labels, dtype=torch.float32 if task.regression else torch.long)
    batches = math.ceil(len(train) / ft.batch_size)
    order_rng = torch.Generator().manual_seed(seed)  # the rows' order in each epoch
    what = f"{task.name} seed {seed}"

    if ft.head_first_epochs:  # the head alone, the encoder frozen
        head = [p for name, p in model.named_parameters() if not name.startswith("encoder.")]
        opt = AdamWeightDecay([{"params": head}], lr=ft.lr, betas=ft.adam_betas, eps=ft.adam_eps,
                              weight_decay=ft.weight_decay)
        schedule = warmup_then_decay(opt, ft, ft.head_first_epochs * batches)
        model.encoder.requires_grad_(False)
        for epoch in range(1, ft.head_first_epochs + 1):
            model.train()
            model.encoder.eval()
            order = torch.randperm(len(train), generator=order_rng).tolist()
            losses = train_epoch(model, opt, schedule, task, train, labels, order, ft, pad_id,
                                 device, stop, f"{what} head alone", epoch)
            tqdm.write(f"{what} head alone, epoch {epoch}: loss {np.mean(losses):.4f}")
        model.encoder.requires_grad_(True)

    epochs = task.epochs if ft.epochs is None else ft.epochs
    opt, schedule = optimizer_and_schedule(model, pre.config.num_layers, ft, epochs * batches)
    history = []
    for epoch in range(1, epochs + 1):
        model.train()
        order = torch.randperm(len(train), generator=order_rng).tolist()
        losses = train_epoch(model, opt, schedule, task, train, labels, order, ft, pad_id, device,
                             stop, what, epoch)
        metrics = evaluate(model, task, splits.dev, ft.eval_batch_size, pad_id, device)
        history.append({"epoch": epoch, "train_loss": float(np.mean(losses)), **metrics})
        scores = " ".join(f"{k} {v:.2f}" for k, v in metrics.items())
        tqdm.write(f"{what} epoch {epoch}: loss {np.mean(losses):.4f} {scores}")

    test_pred = {split: predict(model, task, data, ft.eval_batch_size, pad_id, device)
                 for split, data in splits.test.items()}
    dev = {k: v for k, v in history[-1].items() if k not in ("epoch", "train_loss")}
    return {"seed": seed, "history": history, "dev": dev, "test": test_pred,
            "seconds": time.time() - t0}


# -----------------------------------------------------------------------------
# Evaluation: predictions, and the task's dev metrics (support/glue.py computes them)


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
# The command line


def main(argv=None) -> dict:
    args = cli.finetune_args(argv, description=__doc__.split("\n\n")[0])
    device = args.device or cli.default_device()
    pre = runs.load_pretrained(args)
    ft = cli.from_flags(FinetuneConfig, args)
    runs.check_against_model(ft, pre)
    ft = recipe_for(pre.config, ft)
    print(f"fine-tuning {pre.source} ({pre.config.num_layers} layers, hidden "
          f"{pre.config.hidden_size}) on {device}, recipe {ft.recipe_name}: lr {ft.lr:g}, layer "
          f"decay {ft.layer_decay}, weight decay {ft.weight_decay:g}, batch {ft.batch_size}, "
          f"dropout {encoder_config(pre.config, ft).dropout:g}"
          + (" (--init's)" if ft.dropout is None else "")
          + f", Adam without bias correction (official), the batch's loss: its {ft.loss_reduction}")
    if ft.reinit_layers:
        print(f"the top {ft.reinit_layers} of {pre.config.num_layers} layers start from fresh "
              f"random weights (--reinit-layers)")
    if ft.head_first_epochs:
        print(f"the head is trained alone on the frozen encoder for {ft.head_first_epochs} "
              f"epoch(s) first (--head-first-epochs)")
    # every (task, seed) run that results.json in --out-dir does not hold yet, by finetune_seed
    return runs.run_glue(args, pre, ft, device, finetune_seed)


if __name__ == "__main__":
    main()
