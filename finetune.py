"""Fine-tune a pre-trained ELECTRA (or BERT) discriminator on GLUE, with the paper's recipe.

Clark et al. 2020 (arXiv 2003.10555) measure a pre-trained discriminator by what it scores on GLUE after
fine-tuning: section 3.1 and Appendix A, Table 7 (the recipe), Tables 1, 2 and 8 (the scores). This file
reads beside Appendix A, its plumbing last (glue.py holds the tasks, their files, the metrics, the GLUE score):

    recipe       Table 7's hyperparameters, by model size
    head         the official code's classifier on the [CLS] state
    lr decay     layer-wise learning rates, the official optimizer, warm-up + linear decay
    the loop     one seed: train, evaluate on dev per epoch, predict the test split (SQuAD's loop too)
    main         the CLI: --init (a train.py run, an HF folder or a hub name: hf.load_pretrained), GLUE's
                 splits tokenised (glue.prepare_task); report.py writes results.json, the table of
                 medians over seeds, finetune.png and GLUE submission files

    python finetune.py --task sst2 --init ckpt.pt --data_dir ../shared/data/glue/SST-2
    python finetune.py --task mrpc,stsb --init path/to/hf-electra-small-discriminator --seeds 10
    python finetune.py --task all --init google/electra-small-discriminator --seeds 10   # from the hub
"""
import argparse
import math
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

import glue
import report
from electra import ElectraConfig, Encoder, decays, get_config, lr_factor
from hf import HubError, Pretrained, is_hub_name, load_pretrained, pretrained_folder
from plumbing import (
    DownloadError,
    add_options,
    at_least,
    check_flags,
    given,
    mixed_precision,
    non_negative,
    option,
    positive,
)

# -----------------------------------------------------------------------------
# The recipe: paper Appendix A, Table 7

# Table 7, "Learning Rate": 3e-4 Small, 1e-4 Base, 5e-5 Large; "Layerwise LR decay": 0.8, 0.8, 0.9.
RECIPE_BY_SIZE = {"small": dict(lr=3e-4, layer_decay=0.8), "base": dict(lr=1e-4, layer_decay=0.8),
                  "large": dict(lr=5e-5, layer_decay=0.9)}


@dataclass
class FinetuneConfig:
    """Fine-tuning hyperparameters; None means "the paper's value for this model size or task".
    Fields with help are command-line flags (--lr, --layer_decay, ...)."""
    lr: float | None = option(None, "peak learning rate; default: Table 7's for the model size",
                              check=positive("the peak learning rate"))
    layer_decay: float | None = option(None, "layer-wise lr decay; default: 0.8 (0.9 for large)",
                                       check=(lambda v: 0 < v <= 1, "in (0, 1] (1: no layer-wise decay)"))
    official_layer_decay: bool = option(True, "top layer gets lr*decay, not the official code's lr*decay^2 "
                                              "(see layer_lr_scales)", flag="--layer_decay_fixed")
    weight_decay: float = option(0.0, "Table 7's is 0 (the official config's default is 0.01)",
                                 check=non_negative("decoupled weight decay"))
    warmup_fraction: float = 0.1        # Table 7 "Warmup fraction 0.1"
    batch_size: int = option(32, "examples per update (Table 7)", check=at_least(1, "examples per update"))
    epochs: int | None = option(None, "default: 3, or 10 for RTE and STS-B (Table 7)",
                                check=at_least(1, "passes over train.tsv; leave it out for the paper's 3, "
                                                  "or 10 for RTE and STS-B"))
    max_seq_len: int = option(128, "tokens per example (official max_seq_length), or the model's positions "
                                   "if it has fewer", check=at_least(3, "room for [CLS], [SEP] and a token"))
    head_dropout: float = 0.1           # Table 7 "Dropout 0.1"; the official head: dropout(keep_prob=0.9)
    adam_betas: tuple[float, float] = (0.9, 0.999)  # Table 7 "Adam beta1, beta2"
    adam_eps: float = 1e-6              # Table 7 "Adam epsilon 1e-6"
    adam_bias_correction: bool = option(False, "torch's AdamW (bias-corrected) instead of the official "
                                               "optimizer, which has no bias correction")
    grad_clip: float = 1.0              # official optimization.py: clip_by_global_norm(grads, 1.0)
    double_unordered: bool = option(True, "do not also train MRPC/STS-B on swapped sentence pairs (the "
                                          "official code does)", flag="--single_order")
    eval_batch_size: int = 128          # evaluation only: no effect on results, larger is faster
    max_train_examples: int | None = option(None, "use only the first N rows of train.tsv (before MRPC/STS-B's "
                                                  "swapped copies); for quick runs, not the paper",
                                            check=at_least(1, "rows of train.tsv"))


def paper_size(config: ElectraConfig) -> str:
    """The paper's size whose recipe a model takes: the widest of RECIPE_BY_SIZE's no wider than the
    model (electra.SIZES); narrower models (our tiny) take Small's.

    >>> [paper_size(get_config(s)) for s in ("tiny", "small", "base", "large")]
    ['small', 'small', 'base', 'large']
    """
    hidden = {s: get_config(s).hidden_size for s in RECIPE_BY_SIZE}
    return max((s for s in hidden if hidden[s] <= config.hidden_size), key=hidden.get, default="small")


def recipe_for(model_config: ElectraConfig, ft: FinetuneConfig) -> FinetuneConfig:
    """`ft` with lr and layer_decay filled in from the model's size.

    >>> r = recipe_for(get_config("base"), FinetuneConfig()); (r.lr, r.layer_decay)
    (0.0001, 0.8)
    """
    preset = RECIPE_BY_SIZE[paper_size(model_config)]
    return replace(ft, lr=preset["lr"] if ft.lr is None else ft.lr,
                   layer_decay=preset["layer_decay"] if ft.layer_decay is None else ft.layer_decay)


# -----------------------------------------------------------------------------
# The head: the official code's classifier on the [CLS] state


class Classifier(nn.Module):
    """The pre-trained encoder plus a task head on the [CLS] state: logits = W dropout(h_[CLS]) + b.

    This is the official code's head (classification_tasks.py: get_pooled_output() is the first token's
    state, then dropout(keep_prob=0.9) and one dense layer; the weights Glorot-uniform, tf.layers.dense's
    default). HuggingFace's ElectraForSequenceClassification differs: dropout -> dense(H, H) -> GELU ->
    dropout -> dense(H, C), one more layer. STS-B has one output (regression), the others one per class.
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
        return self.classifier(self.dropout(h[:, 0]))  # [CLS] state [B, H] -> [B, C]


# -----------------------------------------------------------------------------
# Layer-wise learning-rate decay and the official optimizer


def layer_depth(name: str, num_layers: int) -> int:
    """Depth of a fine-tuning parameter: embeddings (and their projection) 0, block i -> i + 1, the
    task head num_layers + 1. Parameter names are the Classifier's.

    >>> [layer_depth(n, 12) for n in ("encoder.embeddings.word.weight", "encoder.layers.11.fc1.bias", "classifier.weight")]
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

    Layer-wise lr decay (paper Appendix A): lr_depth = lr * decay^(top - depth), lower layers learning
    more slowly. The official code (model/optimization.py, _get_layer_lrs) puts the embeddings at depth 0,
    layer i at i + 1, but the task head at num_layers + 2, skipping num_layers + 1; every encoder layer
    thus gets one extra factor of decay (its top layer decay^2, not decay^1). official=True reproduces that,
    since it is what produced the paper's numbers; official=False is the schedule as described, head lr,
    top layer lr * decay.

    >>> [round(s, 4) for s in layer_lr_scales(2, 0.5)]                  # emb, layer 0, layer 1, head
    [0.0625, 0.125, 0.25, 1.0]
    >>> [round(s, 4) for s in layer_lr_scales(2, 0.5, official=False)]
    [0.125, 0.25, 0.5, 1.0]
    """
    top = num_layers + 2 if official else num_layers + 1
    return [decay ** (top - depth) for depth in range(num_layers + 1)] + [1.0]


def param_groups(model, num_layers: int, lr: float, decay: float, weight_decay: float, official: bool = True):
    """Optimizer groups, one per (depth, with or without weight decay), each with its own lr.

    Weight decay (zero in Table 7) never touches biases and LayerNorm, as the official optimizer's
    exclude_from_weight_decay (electra.decays).
    """
    scales = layer_lr_scales(num_layers, decay, official)
    groups: dict[tuple[int, bool], dict] = {}
    for name, p in model.named_parameters():
        depth, wd = layer_depth(name, num_layers), decays(p)
        group = groups.setdefault((depth, wd), {"params": [], "names": [], "lr": lr * scales[depth],
                                                "weight_decay": weight_decay if wd else 0.0})
        group["params"].append(p)
        group["names"].append(name)
    return [groups[k] for k in sorted(groups)]


class AdamWeightDecay(torch.optim.Optimizer):
    """The official fine-tuning optimizer (model/optimization.py AdamWeightDecayOptimizer, BERT's): Adam
    with decoupled weight decay and *no* bias correction. Per parameter p with gradient g:

        m = beta1 m + (1 - beta1) g;   v = beta2 v + (1 - beta2) g^2
        p = p - lr (m / (sqrt(v) + eps) + weight_decay p)

    torch's AdamW divides m by (1 - beta1^t) and v by (1 - beta2^t). For a steady gradient the official
    update is (1 - beta1^t) / sqrt(1 - beta2^t) times AdamW's: 3.16x at update 1, 6.57x at 12 (the
    largest), 1.26x at 1,000 with betas 0.9/0.999, and most GLUE runs (RTE: ~780 updates) end in that
    range. The paper's numbers were produced with this one.
    """

    def __init__(self, params, lr: float, betas: tuple[float, float], eps: float, weight_decay: float = 0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in (p for p in group["params"] if p.grad is not None):
                state = self.state[p]
                if not state:
                    state["m"], state["v"] = torch.zeros_like(p), torch.zeros_like(p)
                m, v = state["m"], state["v"]
                m.mul_(beta1).add_(p.grad, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                update = m / (v.sqrt() + group["eps"]) + group["weight_decay"] * p
                p.sub_(group["lr"] * update)


def build_optimizer(groups: list[dict], ft: FinetuneConfig) -> torch.optim.Optimizer:
    """The official AdamWeightDecay over param_groups' groups, or torch's AdamW with --adam_bias_correction."""
    optimizer = torch.optim.AdamW if ft.adam_bias_correction else AdamWeightDecay
    return optimizer(groups, lr=ft.lr, betas=ft.adam_betas, eps=ft.adam_eps, weight_decay=ft.weight_decay)


def optimizer_and_schedule(model: nn.Module, num_layers: int, ft: FinetuneConfig, total_steps: int):
    """Table 7's optimizer over layer-wise lr groups and its schedule: warm-up over ft.warmup_fraction of
    `total_steps`, then linear decay to zero (electra.lr_factor). Shared by GLUE and SQuAD."""
    opt = build_optimizer(param_groups(model, num_layers, ft.lr, ft.layer_decay, ft.weight_decay,
                                       ft.official_layer_decay), ft)
    warmup = round(ft.warmup_fraction * total_steps)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda step: lr_factor(step, total_steps, warmup))


# -----------------------------------------------------------------------------
# The loop: one seed fine-tuned, evaluated on dev after every epoch


LOSS_WINDOW = 50  # the progress bar shows the mean loss of the last 50 batches (display only)


def task_loss(task: glue.Task, logits, labels):
    """Cross-entropy for classification; for STS-B the squared error on label / 5 (official RegressionTask)."""
    if task.regression:
        return F.mse_loss(logits.squeeze(-1), labels / glue.STSB_MAX)
    return F.cross_entropy(logits, labels)


def fine_tuning_loop(model: nn.Module, num_layers: int, batch_loss, num_examples: int, ft: FinetuneConfig,
                     seed: int, what: str):
    """The loop, shared by GLUE and SQuAD: Table 7's optimizer and schedule over ft.epochs passes, each over
    the training rows in a new random order (drawn from `seed`), one update per ft.batch_size rows on
    batch_loss(rows), its gradients clipped to a global norm of ft.grad_clip. Yields (epoch, mean loss)
    after every epoch, for the caller to evaluate; a loss that is not finite stops the run with one line.
    """
    opt, sched = optimizer_and_schedule(model, num_layers, ft, ft.epochs * math.ceil(num_examples / ft.batch_size))
    order_rng = torch.Generator().manual_seed(seed)
    for epoch in range(1, ft.epochs + 1):
        model.train()
        order = torch.randperm(num_examples, generator=order_rng).tolist()
        losses = []
        with tqdm(total=num_examples, unit="ex", desc=f"{what} epoch {epoch}/{ft.epochs}", dynamic_ncols=True,
                  leave=False) as bar:
            for start in range(0, num_examples, ft.batch_size):
                rows = order[start:start + ft.batch_size]
                loss = batch_loss(rows)
                if not torch.isfinite(loss):
                    raise SystemExit(f"error: {what}: the loss is not finite at step {sched.last_epoch + 1:,} (epoch "
                                     f"{epoch}, lr {ft.lr:g}): fine-tuning diverged; nothing was written for this "
                                     f"task. Lower --lr")
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), ft.grad_clip)
                opt.step()
                sched.step()
                losses.append(loss.item())
                bar.update(len(rows))
                bar.set_postfix(loss=f"{np.mean(losses[-LOSS_WINDOW:]):.4f}")
        yield epoch, float(np.mean(losses))


def finetune_seed(task: glue.Task, pre: Pretrained, train: glue.Encoded, dev: dict[str, glue.Encoded], test: dict[str, glue.Encoded],
                  ft: FinetuneConfig, seed: int, device) -> dict:
    """Fine-tune one copy of the pre-trained encoder with `seed`; dev metrics after every epoch.

    Returns {"seed", "history": [{"epoch", "train_loss", dev metrics...}], "dev": last epoch's metrics,
    "test": {split: predictions}, "seconds"}. As in the official code, the reported model is the last
    one (no early stopping, no choosing the best epoch on dev).
    """
    device, pad_id = torch.device(device), pre.tokenizer.pad_id
    _, autocast = mixed_precision(device, "auto")  # bf16 on GPUs with native bf16, else fp32 (as pre-training)
    torch.manual_seed(seed)  # the head's init and dropout
    model = Classifier(pre.config, task.num_outputs, ft.head_dropout)
    model.encoder.load_state_dict(pre.encoder_state)
    model.to(device)
    labels = torch.tensor(train.labels, dtype=torch.float32 if task.regression else torch.long)

    def batch_loss(rows):
        with autocast:
            logits = model(*train.batch(rows, pad_id, device)).float()  # [B, C]
        return task_loss(task, logits, labels[rows].to(device))

    ft = replace(ft, epochs=task.epochs if ft.epochs is None else ft.epochs)
    history, t0 = [], time.time()
    for epoch, loss in fine_tuning_loop(model, pre.config.num_layers, batch_loss, len(train), ft, seed,
                                        f"{task.name} seed {seed}"):
        metrics = evaluate(model, task, dev, ft.eval_batch_size, pad_id, device)
        history.append({"epoch": epoch, "train_loss": loss, **metrics})
        tqdm.write(f"{task.name} seed {seed} epoch {epoch}: loss {loss:.4f} "
                   + " ".join(f"{k} {v:.2f}" for k, v in metrics.items()))
    test_pred = {split: predict(model, task, data, ft.eval_batch_size, pad_id, device) for split, data in test.items()}
    return {"seed": seed, "history": history, "dev": {k: v for k, v in history[-1].items()
                                                      if k not in ("epoch", "train_loss")},
            "test": test_pred, "seconds": time.time() - t0}


@torch.no_grad()
def predict(model: Classifier, task: glue.Task, data: glue.Encoded, batch_size: int, pad_id: int, device) -> np.ndarray:
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


def evaluate(model, task: glue.Task, dev: dict[str, glue.Encoded], batch_size: int, pad_id: int, device) -> dict:
    """The task's dev metrics (all dev splits; MNLI: matched and mismatched)."""
    metrics = {}
    for split, suffix in task.dev_splits:
        pred = predict(model, task, dev[split], batch_size, pad_id, device)
        metrics.update(glue.task_metrics(task, pred, dev[split].labels, suffix))
    return metrics


# -----------------------------------------------------------------------------
# The command line


@dataclass
class Run:
    """Where the model and the data come from, where results go, how many seeds: not the recipe.
    Each field is a command-line flag (--task and --init, required, are added by parse_args)."""
    revision: str = option("main", "hub revision of --init: a branch, tag or commit")
    hub_cache_dir: str | None = option(None, "where hub checkpoints are kept (default "
                                             "~/.cache/electra-from-scratch/hub)")
    vocab: str | None = option(None, "vocab.txt (default: the one beside --init)")
    data_dir: str | None = option(None, "the task's GLUE folder, or a folder of GLUE task folders (default: "
                                        "download into --cache_dir)")
    cache_dir: str = option(str(glue.DEFAULT_CACHE), "where downloaded GLUE files are kept")
    glue_url: str = option(glue.GLUE_BASE_URL, "base URL of GLUE's zips")
    mrpc_url: str = option(glue.MRPC_BASE_URL, "base URL of the MRPC source files")
    out_dir: str = option("out/finetune", "results.json, finetune.png, glue_submission/")
    seeds: int = option(1, "runs per task; the median is reported (paper: 10)", check=at_least(1, "runs per task"))
    seed: int = option(0, "first seed; runs use seed, seed+1, ...", check=at_least(0, "the first seed"))
    device: str = option("cuda" if torch.cuda.is_available() else "cpu", "cuda or cpu")


def parse_args(argv=None) -> argparse.Namespace:
    """The flags of Run (filled with their defaults) and of FinetuneConfig (None when not given: the
    recipe fills them in), each checked against its range."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", required=True, help=f"one of {', '.join(glue.TASKS)}, a comma-separated list, or 'all'")
    p.add_argument("--init", required=True, help="train.py checkpoint, HuggingFace ELECTRA/BERT folder, or a hub "
                                                 "name such as google/electra-small-discriminator (fetched once)")
    add_options(p, Run, sep="_", filled=True)
    add_options(p, FinetuneConfig, sep="_")
    args = p.parse_args(argv)
    for config in (Run, FinetuneConfig):
        check_flags(args, config, sep="_")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    out = Path(args.out_dir)
    try:
        names = list(glue.TASKS) if args.task == "all" else [n for n in args.task.split(",") if n]
        tasks = [glue.get_task(n) for n in names]
        pre = load_pretrained(pretrained_folder(args.init, args.revision, args.hub_cache_dir), args.vocab)
        if is_hub_name(args.init):
            pre = replace(pre, source=f"{args.init} (revision {args.revision}; {pre.source})")
    except (FileNotFoundError, ValueError, HubError) as e:
        raise SystemExit(f"error: {e}") from None
    if args.max_seq_len is not None and args.max_seq_len > pre.config.max_position:
        raise SystemExit(f"--max_seq_len {args.max_seq_len}: must be at most {pre.config.max_position}, the "
                         f"positions {pre.source} has embeddings for")
    ft = FinetuneConfig(**{"max_seq_len": min(FinetuneConfig.max_seq_len, pre.config.max_position),
                           **given(args, FinetuneConfig)})
    ft = recipe_for(pre.config, ft)
    print(f"fine-tuning {pre.source} ({pre.config.num_layers} layers, hidden {pre.config.hidden_size}) on "
          f"{args.device}: lr {ft.lr:g}, layer decay {ft.layer_decay}, batch {ft.batch_size}, "
          f"{'AdamW (bias-corrected)' if ft.adam_bias_correction else 'Adam without bias correction (official)'}")
    results = {"init": pre.source, "device": args.device, "recipe": asdict(ft), "tasks": {}}
    for task in tasks:
        try:
            folder = glue.task_folder(task, args.data_dir, args.cache_dir, args.glue_url, args.mrpc_url)
            train, dev, test = glue.prepare_task(task, folder, pre.tokenizer, ft.max_seq_len, ft.max_train_examples,
                                                 ft.double_unordered)
        except DownloadError as e:
            raise SystemExit(f"error: {e}\nFor GLUE, you can also fetch {task.folder}'s files yourself and pass "
                             f"--data_dir FOLDER (the folder holding train.tsv and dev.tsv).") from None
        except (FileNotFoundError, ValueError) as e:
            raise SystemExit(f"error: {e}") from None
        print(f"{task.name}: {len(train):,} training rows, "
              + ", ".join(f"{s} {len(d):,}" for s, d in dev.items())
              + (", test " + ", ".join(f"{s} {len(d):,}" for s, d in test.items()) if test else ", no test file"))
        runs = [finetune_seed(task, pre, train, dev, test, ft, args.seed + i, args.device) for i in range(args.seeds)]
        report.write_finetuning_results(results, task, runs, test, out)
    print(report.format_table(results["tasks"]))
    print(f"wrote {out / 'results.json'}, {out / 'finetune.png'}"
          + (f", {out / 'glue_submission'}/" if (out / "glue_submission").is_dir() else ""))
    return results


if __name__ == "__main__":
    main()
