"""The tug-of-war of shared embeddings (DeBERTa-v3, He, Gao, Chen 2021), measured on
a short CPU run: the notebooks' tiny model on chapters I-V of *Emma*, about a minute for the
three modes.

    python experiments/tug_of_war.py --out runs/tug_of_war
    python experiments/tug_of_war.py --out runs/tug_of_war --steps 600 --every 20   # longer
    python experiments/tug_of_war.py --out runs/tug_of_war --steps 600 --every 20 --seed 1

1. Under --sharing embeddings, every --every updates: the cosine between the gradients that
   L_MLM and lam * L_Disc send into the shared token table, on the rows of the batch's tokens
   (tug_cosines). Beside it its noise floor: the cosine between two different batches' L_MLM
   gradients on the same rows. Two losses that agree sit above the floor; a cosine below zero is
   the tug-of-war, the two losses pulling the same vectors apart. lam does not change a cosine.
2. At the end of a run under each of none, embeddings and gdes: DeBERTa-v3's diagnostic (its
   Table 1), the average cosine similarity between different tokens' embedding vectors
   (mean_pairwise_cosine), of G's token table and of the one D reads (gdes: E_G + E_Delta);
   beside them its zero point, the same networks freshly initialised.

Writes --out/tug_of_war_sSEED.png and .json and each mode's run folder (sharing-MODE-sSEED), so
that several seeds share one --out.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import train
from electra import Electra, plain_state_dict
from notebooks._helpers import SAMPLE_TEXT, TINY_MODEL, word_vocab
from support import plumbing

MODES = ("none", "embeddings", "gdes")  # electra.SHARING, the three DeBERTa-v3 compares


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """cos(a, b) = <a, b> / (|a| |b|) of two tensors read as flat vectors (0 if one is zero).

    >>> cosine(torch.tensor([[1., 0.], [0., 1.]]), torch.tensor([[1., 0.], [0., -1.]]))
    0.0
    """
    a, b = a.flatten().double(), b.flatten().double()
    norms = a.norm() * b.norm()
    return 0.0 if norms == 0 else (a @ b / norms).item()


def table_gradient(loss: torch.Tensor, table: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """d loss / d table at `rows`: [len(rows), E]. Leaves .grad alone (training's is untouched)."""
    (grad,) = torch.autograd.grad(loss, table, retain_graph=True, allow_unused=True)
    return torch.zeros_like(table)[rows] if grad is None else grad[rows]


def tug_cosines(model, batch, other, seed: int) -> tuple[float, float]:
    """(cos(g_MLM, g_Disc), the noise floor cos(g_MLM, g'_MLM)) on the shared token table, on the
    rows of `batch`'s tokens: g_MLM and g_Disc the gradients of L_MLM and lam * L_Disc on
    `batch`, g'_MLM that of L_MLM on `other`, a different batch. Each pass draws its masks and
    samples from a generator seeded by `seed`, so the run's own random stream is not consumed."""
    table = model.embeddings.word.weight
    x, seg, am = batch
    rows = x[am.bool()].unique()
    out = model(x, seg, am, rng=torch.Generator(x.device).manual_seed(seed))
    g_mlm = table_gradient(out.mlm_loss, table, rows)
    g_disc = table_gradient(model.config.lam * out.disc_loss, table, rows)
    out_other = model(*other, rng=torch.Generator(x.device).manual_seed(seed))
    g_other = table_gradient(out_other.mlm_loss, table, rows)
    return cosine(g_mlm, g_disc), cosine(g_mlm, g_other)


def mean_pairwise_cosine(table: torch.Tensor) -> float:
    """The average cosine similarity between different rows (tokens) of an embedding table,
    DeBERTa-v3's Table 1: mean over i != j of cos(e_i, e_j).

    >>> round(mean_pairwise_cosine(torch.tensor([[1., 0.], [0., 1.], [1., 1.]])), 4)  # 0, .71, .71
    0.4714
    """
    unit = torch.nn.functional.normalize(table.detach().double(), dim=1)
    n = unit.shape[0]
    s = unit.sum(0)
    return ((s @ s - (unit * unit).sum()) / (n * (n - 1))).item()


def similarity(model) -> dict:
    """mean_pairwise_cosine of G's token table and of the one D reads: {"G": ..., "D": ...}."""
    return {"G": mean_pairwise_cosine(model.generator.embeddings.word.weight),
            "D": mean_pairwise_cosine(d_table(model))}


def d_table(model) -> torch.Tensor:
    """The token table D reads: its own, the shared one, or under gdes E_G + E_Delta."""
    return plain_state_dict(model.discriminator)["embeddings.word.weight"]


@dataclass
class TugHook:
    """A train.py before_update hook: tug_cosines every `every` updates, on the update's batch and
    the next update's (a different batch)."""

    every: int
    rows: list = field(default_factory=list)

    def __call__(self, step: int, cfg, run) -> dict:
        if step % self.every == 0:
            batches, device = run.data.batches, run.device
            batch = plumbing.to_device(batches.get(step, 0), device)
            other = plumbing.to_device(batches.get(step + 1, 0), device)
            tug, floor = tug_cosines(run.raw, batch, other, seed=step)
            self.rows.append({"step": step, "tug": tug, "floor": floor})
        return {}


def run_mode(out: Path, mode: str, steps: int, seed: int, hook=None) -> dict:
    """A short tiny run (as notebooks/_helpers.short_run) under --sharing `mode`: its model."""
    vocab = out / "words_vocab.txt"
    if not vocab.is_file():
        word_vocab(vocab, SAMPLE_TEXT)
    folder = out / f"sharing-{mode}-s{seed}"
    argv = ["--size", "tiny", "--sharing", mode, "--data", str(SAMPLE_TEXT), "--vocab", str(vocab),
            "--out", str(folder), "--cache-dir", str(out / "cache"), "--steps", str(steps),
            "--warmup", str(max(1, steps // 10)), "--batch-size", "16", "--seq-len", "64",
            "--lr", "2e-3", "--log-interval", "10", "--eval-interval", str(steps),
            "--eval-batches", "4", "--eval-fraction", "0.1", "--ckpt-interval", str(steps),
            "--seed", str(seed), "--device", "cpu"]
    for key, value in TINY_MODEL.items():
        argv += ["--set", f"{key}={value}"]
    if folder.exists():  # the tug is measured as the run goes: a run is not continued
        raise SystemExit(f"{folder} exists: remove it or choose another --out")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return train.main(argv, before_update=hook)["model"]


def mode_label(mode: str, space: str = " ") -> str:
    """How a mode of the similarity table is named in the figure and the printout."""
    return mode if mode == "random weights" else f"sharing{space}{mode}"


def figure(result: dict):
    """Left: the tug cosine and its noise floor over the run; right: the average cosine between
    tokens' vectors of G's and D's tables per mode."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4))
    left, right = fig.subplots(1, 2)
    steps = [r["step"] for r in result["tug"]]
    left.plot(steps, [r["tug"] for r in result["tug"]], "o-", label="cos(g_MLM, g_Disc)")
    left.plot(steps, [r["floor"] for r in result["tug"]], "s--", color="C7",
              label="noise floor: cos(g_MLM, g_MLM of another batch)")
    left.axhline(0, color="k", lw=0.5)
    left.set_xlabel("update")
    left.set_ylabel("cosine on the batch's rows of the shared table")
    left.set_title("--sharing embeddings: the gradients into the shared table", fontsize=10)
    left.legend(fontsize=8)
    modes = list(result["similarity"])
    for i, who in enumerate(("G", "D")):
        right.bar([m + i * 0.4 for m in range(len(modes))],
                  [result["similarity"][m][who] for m in modes], width=0.4, label=f"{who}'s table")
    right.set_xticks([m + 0.2 for m in range(len(modes))],
                     [mode_label(m, "\n") for m in modes])
    right.set_ylabel("average cosine between tokens' vectors")
    right.set_title("DeBERTa-v3's Table 1 diagnostic, at the end", fontsize=10)
    right.legend(fontsize=8)
    fig.tight_layout()
    return fig


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="runs/tug_of_war", help="the folder of the runs and results")
    p.add_argument("--steps", type=int, default=150, help="updates per mode (default %(default)s)")
    p.add_argument("--every", type=int, default=10, help="updates between tug measurements")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    hook = TugHook(args.every)
    trained = {}
    for mode in MODES:
        model = run_mode(out, mode, args.steps, args.seed, hook if mode == "embeddings" else None)
        trained[mode] = similarity(model)
    torch.manual_seed(args.seed)  # the zero point: the same networks, freshly initialised
    zero = similarity(Electra(model.config))
    result = {"steps": args.steps, "seed": args.seed, "tug": hook.rows,
              "similarity": {"random weights": zero, **trained}}
    name = out / f"tug_of_war_s{args.seed}"
    name.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    figure(result).savefig(name.with_suffix(".png"), dpi=120)
    tug = [r["tug"] for r in hook.rows]
    floor = [r["floor"] for r in hook.rows]
    if tug:
        print(f"cos(g_MLM, g_Disc) mean {sum(tug) / len(tug):+.3f} over {len(tug)} points "
              f"(range {min(tug):+.3f} to {max(tug):+.3f}); noise floor mean "
              f"{sum(floor) / len(floor):+.3f}")
    for mode, s in result["similarity"].items():
        print(f"{mode_label(mode):18s} average cosine between tokens: "
              f"G {s['G']:.3f}, D {s['D']:.3f}")
    print(f"wrote {name}.png and .json")
    return result


if __name__ == "__main__":
    main()
