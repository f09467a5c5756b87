"""What a run tells its user; nothing here changes what is trained.

train.py calls these. Read in order: the metrics of a step (METRICS, step_stats: G's and D's
accuracy, D's precision, recall and AUC, disc_auc), the same on held-out text with D's context
AUC (evaluate_heldout), the metrics file (MetricsLog writes metrics.jsonl,
read_metrics reads it), the curves drawn from it (plot_pretraining_curves) and over other runs
(comparison_figure: python -m support.report RUN --compare-to REFERENCE), the printed lines
(progress_line, one held-out sentence as D reads it: marked_sentence, startup_report),
the FLOPs of a step in two conventions (flops_per_step, flops_per_step_official: Table 1's compute)
and every preset's (preset_costs: python train.py --presets), MFU (peak_flops) and the time
projection of a GPU-sized run started on a CPU (CpuProjection).
Fine-tuning's results (the table, finetune.png) are finetune.py's own.
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from dataclasses import replace as dc_replace
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from tqdm import tqdm

from data import pretraining_batch
from electra import (
    HEAD_SIZE,
    WITH_DISCRIMINATOR,
    Electra,
    ElectraConfig,
    count_params,
    generator_config,
)
from support.plumbing import atomic_write

# -----------------------------------------------------------------------------
# The metrics: what each update measures, from the tensors of its step (electra.ElectraOutput),
# summed between two lines of metrics.jsonl, and the same measured on held-out text

# The scalars of one step that metrics.jsonl logs; a metric the objective lacks reads 0
METRICS = ("loss", "mlm_loss", "disc_loss", "gen_acc", "disc_acc", "disc_precision", "disc_recall",
           "disc_auc", "replaced_frac", "main_mlm_loss")


def mean_where(values: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """The mean of `values` over the positions where `where` is nonzero (0 if there are none)."""
    w = where.float()
    return (values.float() * w).sum() / w.sum().clamp_min(1.0)


@torch.no_grad()
def step_stats(out, x: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The METRICS of one step as one detached tensor [len(METRICS)] (no host sync), from its
    ElectraOutput `out` and its inputs x, attention_mask [B, T]:

    - gen_acc: G's top-1 accuracy at the masked positions;
    - replaced_frac: the share of real tokens labelled replaced (see below);
    - disc_acc: D's accuracy over the real tokens (D calls a token replaced when D(x, t) < 0.5);
    - disc_precision: the share of D's "replaced" calls that are right; disc_recall: the share of
      the replaced tokens D finds; disc_auc: how D ranks them (disc_auc).

    "Replaced" is what D's loss labels so, out.is_original(x): for ELECTRA a token G's sample
    changed; for Electric every sampled position, noise to L_NCE even where the sample equals the
    original (electric.ElectricOutput.is_original: such a token gets the logit of data, a floor
    under D's errors).
    """
    zero = torch.zeros((), device=out.loss.device)
    real = attention_mask.bool()
    values = {"loss": out.loss, "mlm_loss": out.mlm_loss,
              "gen_acc": mean_where(out.logits_G.argmax(-1) == x.gather(1, out.m), out.m_valid)}
    if out.x_corrupt is not None:
        is_original = out.is_original(x)  # the loss's own labels
        values["replaced_frac"] = mean_where(~is_original, real)
    if out.logits_D is not None:
        replaced = ~is_original & real
        called_replaced = (out.logits_D < 0) & real
        values.update(disc_loss=out.disc_loss,
                      disc_acc=mean_where(called_replaced == replaced, real),
                      disc_precision=mean_where(replaced, called_replaced),
                      disc_recall=mean_where(called_replaced, replaced),
                      disc_auc=disc_auc(out.p_original, is_original, attention_mask))
    if out.main_mlm_loss is not None:
        values["main_mlm_loss"] = out.main_mlm_loss
    return torch.stack([values.get(n, zero).detach().float() for n in METRICS])


def entropy(logits: torch.Tensor) -> torch.Tensor:
    """H(p) = -sum_v p(v) log p(v), p = softmax(logits), per row, in nats: [..., V] -> [...].
    0 for a distribution on one token, log V for a uniform one.

    >>> entropy(torch.tensor([[0.0, 0.0, 0.0, 0.0], [50.0, 0.0, 0.0, 0.0]])).round(decimals=4)
    tensor([1.3863, 0.0000])
    """
    log_p = torch.log_softmax(logits.float(), dim=-1)
    return -(log_p.exp() * log_p).sum(-1)


def generator_spread(out) -> tuple[torch.Tensor, torch.Tensor]:
    """G's output distribution p_G(. | x_masked, t) at the masked positions, averaged over them:
    its entropy (nats) and the probability of its most likely token. Sec. 3.2 finds the
    adversarially trained G low in entropy, "most of the probability mass ... on a single token".
    Read at temperature 1, whatever temperature G samples at: the distribution G learnt."""
    logits = out.logits_G.float()  # [B, K, V]
    p_max = torch.exp(logits.amax(-1) - logits.logsumexp(-1))  # [B, K], no second [B, K, V]
    return mean_where(entropy(logits), out.m_valid), mean_where(p_max, out.m_valid)


def stats_dict(t: torch.Tensor) -> dict:
    """step_stats' tensor (or a mean of them) as {metric: value}, with D's all-original baseline."""
    d = dict(zip(METRICS, t.tolist()))
    # the accuracy of a D that calls every token original
    d["all_original_acc"] = 1.0 - d["replaced_frac"]
    return d


def disc_auc(p_original, is_original, weights):
    """AUC of D's P(replaced) = 1 - D(x, t): the chance that a replaced token outscores an original.

        AUC = 1 / (n_r n_o) * sum_{replaced i} ( #{original j : s_j < s_i}
                                                 + 1/2 #{original j : s_j = s_i} )

    the Mann-Whitney statistic, with s = 1 - D over the tokens where `weights` is 1 (n_r replaced,
    n_o original); 0.5 is chance (and the value when either count is 0), 1.0 a perfect ranking. The
    official code reports it too (run_pretraining.py). Unlike D's accuracy it moves as soon as D
    ranks replaced tokens higher, long before any of them crosses 0.5.

    p_original, is_original, weights: the same shape ([B, T], or flat) -> a 0-dim tensor.
    Example: replaced scores [0.8, 0.4], original scores [0.4, 0.3, 0.1]: 0.8 beats all three (3),
    0.4 beats two and ties one (2.5), AUC = 5.5 / 6 = 0.9167.
    """
    s = 1.0 - p_original.detach().float().flatten()  # [N] score of *replaced*
    w = weights.flatten().bool()
    orig = is_original.flatten() & w
    repl = ~is_original.flatten() & w
    # Sorting and binary search rather than torch.unique: no host sync, one graph under
    # torch.compile. s_orig: [N] the originals' scores ascending, the rest (inf) last
    s_orig = torch.where(orig, s, torch.inf).sort().values
    below = torch.searchsorted(s_orig, s, side="left")  # [N] originals scored strictly lower
    below_or_tied = torch.searchsorted(s_orig, s, side="right")  # [N] ... lower or equal
    wins = (below + below_or_tied).double() / 2  # [N] = below + ties / 2; float64: sums reach ~1e9
    pairs = repl.sum().double() * orig.sum().double()
    chance = torch.full_like(pairs, 0.5)
    auc = torch.where(pairs > 0, (wins * repl).sum() / pairs.clamp_min(1.0), chance)
    return auc.float()


# G's sampling temperature of the context AUC: the paper's (ElectraConfig's default, the official
# code's temperature 1.0), whatever temperature a run trains at
CONTEXT_TEMPERATURE = ElectraConfig.temperature


# Evaluations run eagerly, also on a model compiled in place (Module.compile): eval mode and the
# held-out shapes would compile it again, which takes longer than the few batches it would speed.
EAGER = torch.compiler.set_stance("force_eager")


def forked_rng(device: torch.device):
    """torch's RNG forked for a `with` block (the GPU's too when the model is on one), so that an
    evaluation's draws leave training's random stream where it was."""
    return torch.random.fork_rng(devices=[device.index or 0] if device.type == "cuda" else [])


@torch.no_grad()
@EAGER
def evaluate_heldout(model: torch.nn.Module, examples: np.ndarray, batches, cfg, autocast,
                     temperature: float | None = None) -> dict:
    """Held-out metrics: the same quantities as training, dropout off, the same masks every time,
    and D's context AUC: disc_auc against G's samples drawn at CONTEXT_TEMPERATURE = 1.
    `examples` are laid out as the training `batches` (a data.Batches: its ids, micro-batch size,
    length and special tokens); `cfg` is the run's train.TrainConfig; `temperature` is G's sampling
    temperature in training (None: the model's, config.temperature).

    Runs on the first cfg.eval_batches micro-batches of held-out examples with the torch RNG
    forked and seeded, so evaluations at different steps see the same corrupted inputs and the
    training RNG stream is not disturbed. D's AUC is computed once over all of those tokens
    together (a ranking does not average over batches); the other metrics are batch means.

    The context AUC: at a temperature above 1 G proposes rare tokens more often than it believes
    them, and D can flag them by their rarity alone, from the token without its context. A second
    pass, reseeded (the same masks and uniforms: only the temperature differs), samples at the
    paper's temperature 1; when the run trains at 1 it is disc_auc itself, recorded all the same.
    """
    if temperature is None:
        temperature = model.config.temperature
    device = next(model.parameters()).device  # the batches go where the model is
    model.eval()
    inputs = [tuple(torch.from_numpy(a).to(device) for a in arrays)
              for arrays in heldout_batches(examples, batches, cfg.eval_batches)]
    with forked_rng(device):
        stats = heldout_pass(model, inputs, autocast, cfg.seed, temperature)
        has_d = model.discriminator is not None
        if has_d and temperature == CONTEXT_TEMPERATURE:
            stats["context_auc"] = stats["disc_auc"]
        elif has_d:
            context = heldout_pass(model, inputs, autocast, cfg.seed, CONTEXT_TEMPERATURE)
            stats["context_auc"] = context["disc_auc"]
    model.train()
    return stats


def heldout_batches(examples: np.ndarray, batches, n: int) -> list[tuple]:
    """The first `n` micro-batches of held-out `examples`, as pretraining_batch lays them out:
    (x, segment_ids, attention_mask) numpy arrays [b, T] each."""
    b = batches.micro_batch
    starts = [i * b for i in range(n) if i * b < len(examples)]
    return [pretraining_batch(batches.ids, examples[s:s + b], batches.max_len, *batches.special)
            for s in starts]


def heldout_pass(model: torch.nn.Module, inputs: list[tuple], autocast, seed: int,
                 temperature: float, discriminator: torch.nn.Module | None = None) -> dict:
    """One pass over the held-out micro-batches `inputs`, the torch RNG seeded with `seed`, G
    sampling at `temperature`: the batch means of METRICS and of generator_spread (gen_entropy,
    gen_p_max), and disc_auc pooled over every held-out token (objectives with a discriminator).
    `discriminator`: another Electra whose D scores `model`'s corrupted text in disc_auc
    (experiments/heldout_auc.py --generator); None: model's."""
    torch.manual_seed(seed)
    per_batch = []  # step_stats of each micro-batch, [len(METRICS)] each
    spread = []  # generator_spread of each micro-batch
    # D's scores and labels of every held-out token
    p_original = []
    is_original = []
    real = []
    for x, segment_ids, attention_mask in inputs:
        with autocast:
            out = model(x, segment_ids, attention_mask, temperature=temperature)
        per_batch.append(step_stats(out, x, attention_mask))
        spread.append(torch.stack(generator_spread(out)))
        p = out.p_original  # [B, T], None without a discriminator
        if discriminator is not None:
            with autocast:
                p = discriminator.p_original(out.x_corrupt, segment_ids, attention_mask)
        if p is not None:
            p_original.append(p.flatten())
            is_original.append(out.is_original(x).flatten())  # the loss's labels, as step_stats
            real.append(attention_mask.flatten())
    means = torch.stack(per_batch).mean(0) if per_batch else torch.zeros(len(METRICS))
    stats = stats_dict(means)
    if spread:
        stats["gen_entropy"], stats["gen_p_max"] = torch.stack(spread).mean(0).tolist()
    if p_original:
        auc = disc_auc(torch.cat(p_original), torch.cat(is_original), torch.cat(real))
        stats["disc_auc"] = auc.item()
    return stats


class MetricsLog:
    """metrics.jsonl of a run: the training rows (means since the last row, with speed and MFU) and
    the held-out rows. Only rank 0 writes; every rank sums, and the ranks average at each row.

    elapsed_s is the wall-clock time of the loop (evaluations included), carried over a --resume
    from the last row kept: what the AUC-vs-minutes curves are drawn against. `cfg` is the run's
    train.TrainConfig, `run` its train.Run (a resumed one starts at run.step > 0), `end` the update
    it stops after. A run of a GPU-sized preset on a CPU also gets its time projected, once
    (CpuProjection).
    """

    def __init__(self, path: Path, cfg, run, end: int):
        self.path = path
        self.master = run.rank == 0
        self.world = run.world
        self.tokens_per_update = cfg.batch_size * cfg.seq_len
        self.flops_per_update = flops_per_step(run.mc, cfg.batch_size, cfg.seq_len)
        self.peak = peak_flops(run.device, cfg.peak_tflops)
        # A resumed run drops the rows written after its checkpoint: it writes them again.
        rows = [r for r in read_metrics(path) if r["step"] <= run.step] if run.step else []
        if self.master and not run.step:
            path.unlink(missing_ok=True)
        elif self.master:
            atomic_write(path, lambda p: p.write_text("".join(json.dumps(r) + "\n" for r in rows)))
        self.elapsed0 = rows[-1].get("elapsed_s", 0.0) if rows else 0.0
        self.t_start = time.perf_counter()
        self.t_last = self.t_start
        # the summed stats and gradient norm since the last row
        self.sums = torch.zeros(len(METRICS) + 1, device=run.device)
        self.n = 0
        self.projection = CpuProjection(cfg.size, run.device, run.step, end, tqdm.write)

    def add(self, step: int, stats: torch.Tensor, grad_norm: torch.Tensor) -> None:
        """Update `step`'s mean metrics (step_stats) and gradient norm."""
        self.sums += torch.cat([stats, grad_norm.detach().float().reshape(1)])
        self.n += 1
        if self.master:
            self.projection.after_update(step)

    def elapsed(self) -> float:
        return self.elapsed0 + time.perf_counter() - self.t_start

    def train_row(self, step: int, lr: float, epoch: float, extra: dict | None = None) -> dict:
        """The means since the last row, averaged over the ranks, written as one row with
        `extra` (what an experiment's hook adds, e.g. G's temperature)."""
        if self.world > 1:
            dist.all_reduce(self.sums)
            self.sums /= self.world
        now = time.perf_counter()
        steps_per_s = self.n / max(now - self.t_last, 1e-9)
        means = self.sums / self.n
        row = {"step": step, "split": "train", **stats_dict(means[:-1]),
               "grad_norm": means[-1].item(), "lr": lr, **(extra or {}), "epoch": round(epoch, 4),
               "steps_per_s": steps_per_s, "tokens_per_s": steps_per_s * self.tokens_per_update,
               "elapsed_s": self.elapsed()}
        if self.peak:
            row["mfu"] = self.flops_per_update * steps_per_s / (self.peak * self.world)
        self.write(row)
        self.sums.zero_()
        self.n = 0
        self.t_last = now
        return row

    def write(self, row: dict) -> None:
        if self.master:
            with open(self.path, "a") as f:
                f.write(json.dumps(row) + "\n")

    def restart_clock(self) -> None:
        """Evaluation and checkpoint time is not training speed."""
        self.t_last = time.perf_counter()


def read_metrics(metrics_path: Path) -> list[dict]:
    """The rows of metrics.jsonl ([] when there is none yet). A last line cut short (the process
    was killed mid-write, or the disk filled) is dropped; a broken line before it is an error
    naming it."""
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
            raise SystemExit(f"{metrics_path}, line {i}: not a JSON metrics row ({e}); delete or "
                             f"repair that line (the checkpoint does not depend on it)") from e
    return rows


def curve_panels(objective: str) -> dict[tuple[int, int], tuple[str, list[tuple[str, str]]]]:
    """What curves.png draws for `objective`: {(row, column): (title, [(metric, label)])}. The
    objectives without D (BERT, Replace MLM, All-Tokens MLM) get no D curves: their metrics rows
    hold D's fields as zeros, which would draw a D that never learns.

    >>> sorted(curve_panels("bert"))
    [(0, 0), (1, 0)]
    """
    if objective in WITH_DISCRIMINATOR:
        # Electric's losses sit in the same metrics: its noise model's cloze loss and its NCE loss
        electric = objective == "electric"
        return {
            (0, 0): ("L_cloze (two-tower q)" if electric else "L_MLM (generator)",
                     [("mlm_loss", "")]),
            (0, 1): ("L_NCE (energy network)" if electric else "L_Disc (discriminator)",
                     [("disc_loss", "")]),
            (1, 0): ("accuracy", [("gen_acc", "G top-1 on masked"),
                                  ("disc_acc", "D, all tokens"),
                                  ("all_original_acc", "D baseline: all original"),
                                  ("disc_precision", "D precision (replaced)"),
                                  ("disc_recall", "D recall (replaced)"),
                                  ("disc_auc", "D AUC, replaced vs original (0.5 = chance)"),
                                  ("context_auc", "D AUC vs G's samples at temperature 1")]),
        }
    if objective == "bert":
        return {
            (0, 0): ("L_MLM (BERT's masked LM)", [("mlm_loss", "")]),
            (1, 0): ("accuracy", [("gen_acc", "top-1 on masked")]),
        }
    # replace_mlm, all_tokens_mlm (Sec. 3.5): G, and the main model's MLM loss on x_corrupt
    return {
        (0, 0): ("L_MLM (generator)", [("mlm_loss", "")]),
        (0, 1): ("L_MLM (main model, on x_corrupt)", [("main_mlm_loss", "")]),
        (1, 0): ("accuracy", [("gen_acc", "G top-1 on masked")]),
    }


def plot_pretraining_curves(metrics_path: Path, png_path: Path, objective: str) -> None:
    """Redraw curves.png from metrics.jsonl (curves_figure), written whole or not at all."""
    rows = read_metrics(metrics_path)
    if not rows:
        # a checkpoint before the first log line (--ckpt-interval < --log-interval): nothing yet
        return
    fig = curves_figure(rows, objective)
    tmp = png_path.with_name(png_path.name + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, png_path)


def curves_figure(rows: list[dict], objective: str):
    """The pre-training curves of metrics rows: losses, accuracies (with D's all-original
    baseline, its AUC and its held-out context AUC), lr; for an objective without D, its masked
    LM's."""
    # its own canvas: no pyplot, no switch of the global backend
    from matplotlib.figure import Figure

    train = [r for r in rows if r["split"] == "train"]
    held = [r for r in rows if r["split"] == "eval"]
    fig = Figure(figsize=(11, 7.5))
    axes = fig.subplots(2, 2)
    spec = curve_panels(objective)
    panels = [(axes[at], title, keys) for at, (title, keys) in spec.items()]
    if (0, 1) not in spec:
        axes[0, 1].axis("off")  # BERT: no second loss
    for ax, title, keys in panels:
        # one colour per quantity: train solid, held-out dashed
        for i, (key, label) in enumerate(keys):
            # one legend entry per quantity, on its first line: the figure's title says which
            # style is which split (two entries each hid the accuracy panel's curves)
            legend = label or key
            for split, style in ((train, "-"), (held, "o--")):
                # context_auc is measured on held-out text only
                if any(key in r for r in split):
                    steps = [r["step"] for r in split]
                    values = [r.get(key, math.nan) for r in split]
                    ax.plot(steps, values, style, color=f"C{i}", ms=3, label=legend)
                    legend = "_nolegend_"
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    ax = axes[1, 1]
    ax.plot([r["step"] for r in train], [r["lr"] for r in train])
    ax.set_title("learning rate")
    ax.set_xlabel("step")
    ax.grid(alpha=0.3)
    fig.suptitle("solid lines: training batches; dots on dashed lines: held-out text", fontsize=9)
    fig.tight_layout()
    return fig


# -----------------------------------------------------------------------------
# A run beside others: the quantities that show a healthy ELECTRA run, one panel each, to put a
# run over the reference runs in bench/ (python -m support.report RUN --compare-to REFERENCE)

COMPARED = {
    "mlm_loss": "L_MLM (generator)",
    "disc_loss": "L_Disc (discriminator)",
    "gen_acc": "G's top-1 accuracy on masked tokens",
    "disc_auc": "D's AUC, replaced vs original (0.5: chance)",
    "context_auc": "D's context AUC (held-out, G's samples at temperature 1)",
}


def comparison_figure(runs: list[tuple[str, list[dict]]], title: str):
    """The quantities of COMPARED for each (label, metrics rows) of `runs`, one colour per run,
    the first drawn on top: training batches as lines, held-out text as dots on dashed lines."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 7.5))
    axes = fig.subplots(2, 3).flat
    for ax, (key, name) in zip(axes, COMPARED.items()):
        for i, (label, rows) in enumerate(runs):
            for split, style, which in (("train", "-", "training"), ("eval", "o--", "held-out")):
                points = [(r["step"], r[key]) for r in rows if r["split"] == split and key in r]
                if points:
                    steps, values = zip(*points)
                    ax.plot(steps, values, style, color=f"C{i}", ms=2.5, lw=1,
                            label=f"{label}, {which}", zorder=len(runs) - i)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("update")
        ax.grid(alpha=0.3)
    legend = axes[5]  # the sixth panel holds the legend: the curves stay uncovered
    legend.axis("off")
    legend.legend(*axes[0].get_legend_handles_labels(), loc="center", fontsize=9)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def compare_main(argv=None) -> Path:
    """python -m support.report RUN [--compare-to REFERENCE ...] [--out PNG]: a run's curves of
    COMPARED drawn over the reference runs' (comparison_figure); returns the PNG written."""
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m support.report",
        description="Draw a pre-training run's curves (L_MLM, L_Disc, G's accuracy, D's AUC and "
                    "context AUC) over reference runs, e.g. bench/gpu_h100/metrics.jsonl")
    p.add_argument("run", help="a run's metrics.jsonl, or its run folder")
    p.add_argument("--compare-to", action="append", default=[], metavar="REFERENCE",
                   help="another run's metrics.jsonl or folder drawn beside it (repeatable)")
    p.add_argument("--out", help="the PNG (default: compare.png beside the run's metrics)")
    args = p.parse_args(argv)
    runs = []
    for given in [args.run, *args.compare_to]:
        path = Path(given)
        path = path / "metrics.jsonl" if path.is_dir() else path
        rows = read_metrics(path)
        if not rows:
            raise SystemExit(f"{given}: no metrics rows (a train.py run folder, or its "
                             f"metrics.jsonl)")
        runs.append((path.parent.name or str(path), rows))
    run = Path(args.run)
    out = Path(args.out) if args.out else (run if run.is_dir() else run.parent) / "compare.png"
    others = f" against {', '.join(label for label, _ in runs[1:])}" if len(runs) > 1 else ""
    fig = comparison_figure(runs, f"{runs[0][0]}{others}")
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")
    return out


# -----------------------------------------------------------------------------
# What is printed: the start-up summary, the progress bar, one held-out sentence as D sees it


def progress_line(row: dict, objective: str) -> str:
    """The few numbers shown on the progress bar and after each evaluation; ctx_AUC is the
    held-out context AUC (evaluate_heldout), D's AUC against G's samples at temperature 1."""
    if objective in ("replace_mlm", "all_tokens_mlm"):
        text = (f"L_MLM(G) {row['mlm_loss']:.3f} L_MLM(main) {row['main_mlm_loss']:.3f} "
                f"G_acc {row['gen_acc']:.3f}")
    elif objective == "bert":
        text = f"L_MLM {row['mlm_loss']:.3f} MLM_acc {row['gen_acc']:.3f}"
    elif objective == "electric":  # q's cloze loss, the NCE loss, D's metrics of data vs noise
        text = (f"L_cloze {row['mlm_loss']:.3f} L_NCE {row['disc_loss']:.4f} "
                f"q_acc {row['gen_acc']:.3f} D_acc {row['disc_acc']:.4f} "
                f"D_AUC {row['disc_auc']:.3f}")
        if "context_auc" in row:
            text += f" ctx_AUC {row['context_auc']:.3f}"
    else:
        text = (f"L_MLM {row['mlm_loss']:.3f} L_Disc {row['disc_loss']:.4f} "
                f"G_acc {row['gen_acc']:.3f} D_acc {row['disc_acc']:.4f} "
                f"(all-original {row['all_original_acc']:.4f}) "
                f"D_P/R {row['disc_precision']:.2f}/{row['disc_recall']:.2f} "
                f"D_AUC {row['disc_auc']:.3f}")
        if "context_auc" in row:  # held-out rows: D against G's samples at temperature 1
            text += f" ctx_AUC {row['context_auc']:.3f}"
    if "tokens_per_s" in row:
        text += f" | {row['tokens_per_s']:,.0f} tok/s"
    if "mfu" in row:
        text += f" MFU {row['mfu']:.1%}"
    return text


SAMPLE_TOKENS = 30  # ours: tokens of the held-out sentence shown at each evaluation (2 lines)
# ANSI colours of D's calls on a terminal
CAUGHT = "\x1b[1;32m"  # bold green: a token G replaced that D calls replaced
FALSE_ALARM = "\x1b[1;31m"  # bold red: an original token that D calls replaced
RESET = "\x1b[0m"


def marked_sentence(tokens: list[str], x: torch.Tensor, x_corrupt: torch.Tensor,
                    p_original: torch.Tensor, tty: bool) -> str:
    """A sequence as D reads it: x_corrupt, each token G replaced (x_corrupt_t != x_t) written
    [x_t->x_corrupt_t], and D's calls "replaced" (D(x_corrupt, t) < 0.5) marked: a `*` before the
    token in plain text; on a terminal (tty) colour instead, green where G did replace it, red
    where it is original. The first SAMPLE_TOKENS tokens, after a line saying the notation.

    tokens: the vocabulary (id -> piece); x, x_corrupt: [n] ids; p_original: [n] D(x_corrupt, t).

    >>> vocab = ["[CLS]", "[SEP]", "the", "cat", "dog", "sat"]
    >>> x = torch.tensor([0, 2, 3, 5, 1])
    >>> x_corrupt = torch.tensor([0, 2, 4, 5, 1])
    >>> p_original = torch.tensor([0.9, 0.2, 0.1, 0.7, 0.6])
    >>> print(marked_sentence(vocab, x, x_corrupt, p_original, tty=False))
    held-out sentence ([orig->new]: G's replacement; *: D calls it replaced):
      [CLS] *the *[cat->dog] sat [SEP]
    """
    words = []
    for t in range(min(len(x), SAMPLE_TOKENS)):
        original = tokens[x[t]]
        seen = tokens[x_corrupt[t]]
        word = seen if original == seen else f"[{original}->{seen}]"
        flagged = p_original[t].item() < 0.5
        if flagged and tty:
            word = f"{FALSE_ALARM if original == seen else CAUGHT}{word}{RESET}"
        elif flagged:
            word = "*" + word
        words.append(word)
    more = " ..." if len(x) > SAMPLE_TOKENS else ""
    if tty:
        legend = (f"[orig->new]: G's replacement; D calls replaced: {CAUGHT}right{RESET}, "
                  f"{FALSE_ALARM}wrong{RESET}")
    else:
        legend = "[orig->new]: G's replacement; *: D calls it replaced"
    return f"held-out sentence ({legend}):\n  {' '.join(words)}{more}"


@torch.no_grad()
@EAGER
def heldout_example(model: torch.nn.Module, examples: np.ndarray, batches, cfg,
                    temperature: float | None = None
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One held-out example through the model, the same each time: the longest of the first
    micro-batch (the first is often a book's title), dropout off, the torch RNG forked and seeded
    with cfg.seed so that every evaluation masks the same positions, G sampling at `temperature`
    (training's at this step; None: the model's). Returns x, x_corrupt and D's p_original over its
    n real tokens, [n] each, on the CPU (marked_sentence's input)."""
    device = next(model.parameters()).device
    model.eval()
    first = examples[:batches.micro_batch]  # [b, 4] (a_start, a_len, b_start, b_len)
    i = int(np.argmax(first[:, 1] + first[:, 3]))
    arrays = heldout_batches(first[i:i + 1], batches, 1)[0]
    x, segment_ids, attention_mask = (torch.from_numpy(a).to(device) for a in arrays)  # [1, T]
    with forked_rng(device):
        torch.manual_seed(cfg.seed)
        out = model(x, segment_ids, attention_mask, temperature=temperature)
    model.train()
    real = attention_mask[0].bool()  # [T]
    return x[0, real].cpu(), out.x_corrupt[0, real].cpu(), out.p_original[0, real].cpu()


def heldout_evaluation(cfg, run, step: int, log: MetricsLog, extra: dict) -> tuple[dict, str]:
    """The held-out evaluation after update `step` of train.Run `run` (train.TrainConfig `cfg`):
    its row, written to metrics.jsonl with `extra` (an experiment's hook's values), curves.png
    redrawn, and the lines to print: the metrics, and one held-out sentence as D reads it (the
    same sentence each time, so a student sees D improve)."""
    batches = run.data.batches
    held = evaluate_heldout(run.raw, run.data.eval_ex, batches, cfg, run.autocast)
    row = {"step": step, "split": "eval", **held, **extra, "elapsed_s": log.elapsed()}
    log.write(row)
    out_dir = Path(cfg.out_dir)
    plot_pretraining_curves(out_dir / "metrics.jsonl", out_dir / "curves.png", cfg.objective)
    lines = f"step {step:,} held-out: {progress_line(row, cfg.objective)}"
    if run.raw.discriminator is not None:
        sample = heldout_example(run.raw, run.data.eval_ex, batches, cfg)
        lines += "\n" + marked_sentence(run.data.tok.id_to_token, *sample,
                                        tty=sys.stdout.isatty())
    return row, lines


def startup_report(cfg, run, end: int) -> str:
    """What the run is: config, data, parameter counts and the FLOPs estimate. `cfg` is the run's
    train.TrainConfig, `run` its train.Run (set up to start at update run.step), `end` the update
    it stops after."""
    model = run.raw
    data = run.data
    parts = [f"{name} {count_params(getattr(model, name)) / 1e6:.2f}M"
             for name in ("discriminator", "generator", "mlm")
             if getattr(model, name, None) is not None]
    embeddings = count_params(model.embeddings) / 1e6
    sharing = getattr(model.config, "sharing", "embeddings")
    if sharing == "none":
        tables = f"each with its own embeddings, D's {embeddings:.2f}M"
    elif sharing == "gdes":
        tables = f"G with E_G, D with its E_Delta, {embeddings:.2f}M each"
    else:
        tables = f"each with the shared embeddings {embeddings:.2f}M"
    params = f"{', '.join(parts)} ({tables}), total {count_params(model) / 1e6:.2f}M"
    flops = flops_per_step(run.mc, cfg.batch_size, cfg.seq_len)
    official = flops_per_step_official(run.mc, cfg.batch_size, cfg.seq_len)
    peak = peak_flops(run.device, cfg.peak_tflops)
    adam = run.optimizer.defaults
    processes = f" x {run.world} processes" if run.world > 1 else ""
    start = f"resuming at step {run.step:,}" if run.step else "new run"
    every = max(2, round(1 / cfg.eval_fraction)) if cfg.eval_fraction > 0 else 0
    examples = len(data.batches.examples)
    mfu = f"; peak {peak / 1e12:g} TFLOP/s per GPU for MFU" if peak else ""
    bf16 = " (bf16 autocast; weights, optimizer and losses fp32)" if run.precision == "bf16" else ""
    config = {k: v for k, v in asdict(cfg).items() if k != "data_url"}
    how = {"cuda-graphs": "torch.compile with CUDA graphs", "compile": "torch.compile",
           "eager": "eager"}[run.path]
    lines = [
        f"ELECTRA pre-training: size {cfg.size}, objective {cfg.objective}, on {run.device}"
        f"{processes}, {start}",
        f"config   {json.dumps(config)}",
        f"model    {json.dumps(asdict(run.mc))}",
        f"data     {data.corpus}: {len(data.ids):,} tokens, {examples:,} training examples, "
        f"{len(data.eval_ex):,} held-out (every {every}th document)",
        f"vocab    {len(data.tok):,} tokens, {Path(cfg.out_dir) / 'vocab.txt'} "
        f"(sha256 {data.tok.hash()[:12]})",
        f"params   {params}",
        f"batch    {cfg.batch_size} = {data.batches.micro_batch} x {cfg.grad_accum} accumulation x "
        f"{run.world} process(es), seq {cfg.seq_len}, {cfg.batch_size * cfg.seq_len:,} tokens per "
        f"update, {cfg.steps * cfg.batch_size / max(examples, 1):.1f} epochs",
        f"optim    AdamW lr {cfg.lr:g}, betas {adam['betas']}, eps {adam['eps']:g}, weight decay "
        f"{cfg.weight_decay}, warm-up {cfg.warmup:,} then linear decay to 0 at {cfg.steps:,}, "
        f"clip {cfg.clip_norm}{' (G and D apart)' if cfg.clip_apart else ''}",
        f"compute  {flops:.3g} FLOPs per update (fwd+bwd), {flops * cfg.steps:.3g} for "
        f"{cfg.steps:,} updates (official counting: {official * cfg.steps:.3g}; paper Table 1: "
        f"ELECTRA-Small 1.4e18){mfu}",
        f"run      steps {run.step:,} -> {end:,}; out {cfg.out_dir}; log every {cfg.log_interval}, "
        f"eval every {cfg.eval_interval}, checkpoint every {cfg.ckpt_interval}",
        f"device   {run.device}, {run.precision}{bf16}, {how}: {run.why}",
    ]
    return "\n".join(lines)


# -----------------------------------------------------------------------------
# Compute: FLOPs of one training step (Table 1's "Train FLOPs", Appendix D)


@dataclass
class Counting:
    """A convention of counting FLOPs: the forward FLOPs of each part of a model."""

    encoder: Callable  # encoder(c): one sequence through an encoder of config c
    mlm_output: Callable  # mlm_output(c, positions): an MLM output of config c at `positions`
    disc_head: float  # D's head over one sequence
    copy_head: float  # All-Tokens MLM's copy head over one sequence


def _forward_flops(config: ElectraConfig, seq: int, masked: float, count: Counting) -> float:
    """Forward FLOPs of one sequence: the parts the objective runs, each counted by `count`;
    `masked` = the positions an MLM output runs at."""
    main = count.encoder(config)  # the full-size encoder: D, or BERT's / the ablations' masked LM
    if config.objective == "bert":
        return main + count.mlm_output(config, masked)
    g = generator_config(config)
    if config.objective == "electric":
        # both towers, and the cloze output at every position, its dense layer reading the two
        # towers' states side by side (2 Hg wide); then the energy network and its head
        two_towers = dc_replace(g, hidden_size=2 * g.hidden_size)
        return (main + 2 * count.encoder(g) + count.mlm_output(two_towers, seq)
                + count.disc_head)
    fwd = main + count.encoder(g) + count.mlm_output(g, masked)
    if config.objective in WITH_DISCRIMINATOR:
        return fwd + count.disc_head
    if config.objective == "replace_mlm":
        return fwd + count.mlm_output(config, masked)
    # all_tokens_mlm: its output at every position
    return fwd + count.mlm_output(config, seq) + count.copy_head


def flops_per_step(config: ElectraConfig, batch: int, seq: int) -> float:
    """Training FLOPs of one step (forward + backward), our convention.

    Matmuls count 2mn; embedding lookups count 0 (they are gathers); backward = 2 x forward
    (gradients w.r.t. activations and w.r.t. weights), so a step is 3 x forward. An MLM output
    runs only at the k = min(max_predictions, round(mask_prob * seq)) masked positions, except
    All-Tokens MLM's and Electric's cloze output (with both of its towers), at every position.
    D's head runs at every token.

    The official flops_computation.py (flops_per_step_official) counts differently: embedding
    lookups as dense one-hot matmuls (2 E V per token, large for small models), the MLM output at
    a fixed 15.625% of positions, a few FLOPs for softmax/LayerNorm/dropout, and backward =
    forward (2 x forward per step). For ELECTRA-Small over 1M steps that script gives 1.29e18;
    the paper's Table 1 reports 1.4e18; our convention gives 1.15e18.
    """
    V, H = config.vocab_size, config.hidden_size

    def encoder(c):
        h, e = c.hidden_size, c.embedding_size  # G's e is D's E unless --sharing none
        # QKV, attention output, FFN
        layer = 2 * 3 * h * h + 2 * h * h + 2 * 2 * h * c.intermediate_size
        layer += 2 * 2 * seq * h  # Q K^T and (attention weights) V
        projection = 2 * e * h if e != h else 0  # the embedding projection
        return seq * (c.num_layers * layer + projection)

    def mlm_output(c, positions):  # dense hidden -> e, then the tied e -> V output
        e = c.embedding_size
        return positions * (2 * c.hidden_size * e + 2 * e * V)

    k = min(config.max_predictions, round(config.mask_prob * seq))
    count = Counting(encoder, mlm_output, disc_head=seq * (2 * H * H + 2 * H),
                     copy_head=seq * 2 * H)
    return 3.0 * batch * _forward_flops(config, seq, k, count)


def flops_per_step_official(config: ElectraConfig, batch: int, seq: int,
                            output_frac: float = 0.15625) -> float:
    """Training FLOPs of one step counted as the official flops_computation.py does (see
    flops_per_step for the differences): matmuls 2mn, dense embedding lookups, elementwise ops
    (dropout 4, LayerNorm 5, GELU 8, softmax 5 FLOPs per element), backward = forward, the MLM
    output at output_frac = 20/128 of positions, heads = hidden // 64. The script counts only
    ELECTRA and BERT; the Sec. 3.5 ablations are counted in its convention from their parts, the
    copy head as a dense H -> 1 and a sigmoid counted as an activation.
    """
    DROP, LN, ACT, SOFT = 4, 5, 8, 5  # FLOPs per element, as flops_computation.py
    E, V, H, s = config.embedding_size, config.vocab_size, config.hidden_size, seq

    def encoder(c):
        h, i, heads = c.hidden_size, c.intermediate_size, max(c.hidden_size // HEAD_SIZE, 1)
        attn = 2 * 3 * h * h + 3 * h + 2 * h * s + (SOFT + DROP + 1) * s * heads + 2 * h * s
        # output dense, bias, dropout, residual, LayerNorm
        attn += 2 * h * h + h + DROP * h + h + LN
        ffn = 2 * h * i + ACT * i + i + 2 * h * i + h + DROP * h + h + LN * h
        # dense lookups, LayerNorm, dropout
        inputs = 2 * E * V + 2 * E * (s + 2) + 2 * E + LN * E + DROP * E
        if E != h:
            inputs += 2 * h * E + h  # the embedding projection
        return s * (c.num_layers * (attn + ffn) + inputs)

    def mlm_output(c, positions):
        dense = 2 * c.hidden_size * E + E + ACT * E + LN * E
        return positions * (2 * E * V + dense + SOFT * V + 2 * V)

    count = Counting(encoder, mlm_output, disc_head=s * (2 * H * H + H + ACT * H + 2 * H),
                     copy_head=s * (2 * H + 1 + ACT))
    return 2.0 * batch * _forward_flops(config, s, output_frac * s, count)


def preset_costs(recipes: dict, configs: dict) -> str:
    """Every preset's parameters, and train FLOPs of one step at its recipe's batch and sequence
    length (`recipes`: train.RECIPES; `configs`: train.preset_configs, each size's ElectraConfig
    as its run builds it); then ELECTRA-Small's total over its recipe's steps."""
    lines = ["parameters, and train FLOPs of one step at the paper's batch and sequence length",
             f"{'size':9} {'D params':>12} {'G params':>12} {'FLOPs/step ours':>16} "
             f"{'official':>12}"]
    for name, config in configs.items():
        batch = recipes[name].batch_size
        seq = recipes[name].seq_len
        model = Electra(config)
        lines.append(f"{name:9} {count_params(model.discriminator):12,d} "
                     f"{count_params(model.generator):12,d} "
                     f"{flops_per_step(config, batch, seq):16.3e} "
                     f"{flops_per_step_official(config, batch, seq):12.3e}")
    small = configs["small"]
    r = recipes["small"]
    ours = flops_per_step(small, r.batch_size, r.seq_len) * r.steps
    official = flops_per_step_official(small, r.batch_size, r.seq_len) * r.steps
    lines.append(f"ELECTRA-Small, {r.steps:,} steps at batch {r.batch_size}, seq {r.seq_len}: "
                 f"ours {ours:.2e}, official convention {official:.2e} (paper Table 1: 1.4e18)")
    return "\n".join(lines)


# -----------------------------------------------------------------------------
# MFU: model FLOPs per second over the accelerator's peak

# Peak dense bf16 tensor-core FLOP/s per GPU, from the vendors' data sheets, for MFU. The first
# name found in torch.cuda.get_device_name() wins; --peak-tflops overrides.
GPU_PEAK_TFLOPS = {"H100 PCIe": 756, "H100": 989, "H200": 989, "GH200": 989, "B200": 2250,
                   "A100": 312, "L40S": 362, "L40": 181, "L4": 121, "A10": 125, "RTX 4090": 165,
                   "RTX 3090": 71, "V100": 125, "T4": 65}


def peak_flops(device: torch.device, override_tflops: float | None) -> float | None:
    """The accelerator's peak FLOP/s for MFU, or None (CPU, or an unknown GPU without
    --peak-tflops)."""
    if override_tflops:
        return override_tflops * 1e12
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((tf * 1e12 for key, tf in GPU_PEAK_TFLOPS.items() if key in name), None)


# -----------------------------------------------------------------------------
# A GPU-sized run started on a CPU: how long it would take, and the preset made for CPUs

CPU_PRESET = "tiny"  # the preset made to show ELECTRA learning on a laptop CPU (train.RECIPES)
CPU_PRESET_MINUTES = 10  # what the CPU preset's run takes on a 2-core CPU (README)
# ours: updates timed, after the first (one-off set-up), for the CPU time projection
PROJECTION_STEPS = 3


class CpuProjection:
    """Times PROJECTION_STEPS updates after the first of a run of a size != CPU_PRESET on a
    CPU, then writes cpu_projection's line once."""

    def __init__(self, size: str, device: torch.device, first_step: int, end: int, write):
        self.active = device.type == "cpu" and size != CPU_PRESET
        self.size = size
        self.first_step = first_step
        self.end = end
        self.write = write
        self.t_first = None

    def after_update(self, step: int) -> None:
        if not self.active:
            return
        if step == self.first_step + 1:
            self.t_first = time.perf_counter()
        elif step == self.first_step + 1 + PROJECTION_STEPS:
            rate = PROJECTION_STEPS / (time.perf_counter() - self.t_first)
            self.write(cpu_projection(self.size, rate, self.end - step))


def cpu_projection(size: str, steps_per_s: float, remaining: int) -> str:
    """One line for a GPU-sized run started on a CPU: how long it would take, and the CPU preset.

    Example: cpu_projection("small", 0.1, 1_000_000) -> "no GPU: --size small's remaining 1,000,000
    updates take about 116 days at the 0.1 steps/s of the first updates on this CPU ..."
    """
    return (f"no GPU: --size {size}'s remaining {remaining:,} updates take about "
            f"{duration(remaining / steps_per_s)} at the {steps_per_s:.3g} steps/s of the first "
            f"updates on this CPU (still running, in case you mean it; Ctrl-C saves a checkpoint). "
            f"To see ELECTRA learn on a CPU in {CPU_PRESET_MINUTES} minutes: python train.py "
            f"--size {CPU_PRESET} --data books (or your own .txt file or folder)")


def duration(seconds: float) -> str:
    """A length of time in the largest unit it has two of.

    >>> duration(90), duration(600), duration(1e7)
    ('90 seconds', '10 minutes', '116 days')
    """
    for unit, length in (("years", 365 * 86400), ("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * length:
            return f"{seconds / length:.3g} {unit}"
    return f"{seconds:.3g} seconds"


if __name__ == "__main__":
    compare_main()
