"""The search for a CPU preset whose discriminator visibly learns: D's held-out AUC against minutes.

Each candidate is a train.py command on one corpus and one shared vocabulary; every number it
changes is a preset value (ElectraConfig or the recipe), never the algorithm. The script runs the
candidates one after another (a finished one is skipped), then draws one PNG of held-out AUC
against wall-clock minutes for all of them and writes a markdown table:

    python experiments/cpu_preset.py --data ../shared/data/corpus/gutenberg  # run all, then draw
    python experiments/cpu_preset.py --data ... --only t1 t2 --threads 1     # some of them
    python experiments/cpu_preset.py --data ... --draw-only                  # redraw from the runs

Next to D's AUC the table gives the AUC of the best *context-free* detector, one that sees only
which token stands at a position (context_free_auc): the part of D's ranking that needs no context.
A D whose AUC is no higher than that has learned token identities, not language.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the core files are flat modules at the repo's top level

import data
import train
from electra import Electra, ElectraConfig
from support.report import disc_auc
from tokenizer import Tokenizer

# name -> (what it changes, train.py flags). Every candidate: --size tiny with the paper's values
# for what it does not change (temperature 1, 15% masked, dropout 0.1), a
# 1,500-update schedule (warm-up 100) stopped at 600, held-out evaluation every 100 updates.
PAPER = ["--set", "temperature=1.0", "--set", "mask_prob=0.15", "--set", "dropout=0.1", "--set",
         "attention_dropout=0.1"]
BASE_FLAGS = [*PAPER, "--size", "tiny", "--steps", "1500", "--warmup", "100", "--stop-at", "600",
              "--log-interval", "50", "--eval-interval", "100"]
NO_DROPOUT = ["--set", "dropout=0", "--set", "attention_dropout=0"]
CANDIDATES = {
    "paper": ("the paper's values (the old tiny preset): temperature 1, 15% masked, dropout 0.1",
              []),
    "g0": ("G with no layers (a position-wise unigram model)", ["--set", "generator_layers=0"]),
    "g0-seq64": ("G with no layers; seq 64, lr 3e-3, 4 heads, no dropout",
                 ["--seq-len", "64", "--lr", "3e-3", "--set", "generator_layers=0",
                  "--set", "num_heads=4", *NO_DROPOUT]),
    "t1.5": ("sampling temperature 1.5, no dropout", ["--set", "temperature=1.5", *NO_DROPOUT]),
    "t2": ("sampling temperature 2", ["--set", "temperature=2.0"]),
    "t2-lr2e-3": ("sampling temperature 2, lr 2e-3, no dropout",
                  ["--lr", "2e-3", "--set", "temperature=2.0", *NO_DROPOUT]),
    "t1.5-m25": ("temperature 1.5, 25% masked, no dropout",
                 ["--set", "temperature=1.5", "--set", "mask_prob=0.25", *NO_DROPOUT]),
    "t2-m25": ("temperature 2, 25% masked, no dropout: the new tiny preset's model",
               ["--set", "temperature=2.0", "--set", "mask_prob=0.25", *NO_DROPOUT]),
}
# training batches whose corruptions estimate each token type's replaced rate
CONTEXT_FREE_BATCHES = 40
# add-(0.5 replaced, 4 seen) smoothing of a type's rate: a rare type gets ~1/8
RATE_PRIOR = (0.5, 4.0)


def type_replaced_rate(x_corrupt, is_original, real, vocab_size: int):
    """The best context-free score of a token: how often a token of its type was a replacement.

    rate[v] = (#replaced tokens of type v + 0.5) / (#tokens of type v + 4), counted over x_corrupt's
    real tokens. Ranking tokens by it is the best any detector can do that sees only the token
    itself.
    Example: type 7 seen 4 times, replaced once: (1 + 0.5) / (4 + 4) = 0.1875.
    """
    xc, replaced = x_corrupt[real], (~is_original[real]).float()  # [N] each
    seen = torch.zeros(vocab_size).index_add_(0, xc, torch.ones_like(replaced))
    hits = torch.zeros(vocab_size).index_add_(0, xc, replaced)
    return (hits + RATE_PRIOR[0]) / (seen + RATE_PRIOR[1])  # [V]


@torch.no_grad()
def context_free_auc(run_dir: Path, cache_dir: Path) -> tuple[float, float]:
    """(D's held-out AUC, the context-free detector's AUC on the same corrupted held-out tokens)."""
    ckpt = torch.load(run_dir / "ckpt.pt", map_location="cpu", weights_only=True)
    mc = ElectraConfig(**ckpt["model_config"])
    model = Electra(mc).eval()
    model.load_state_dict(ckpt["model"])
    cfg = train.TrainConfig(**{k: v for k, v in ckpt["train_config"].items()
                               if k in train.TrainConfig.__annotations__})
    tok = Tokenizer.load(run_dir / "vocab.txt")
    ids, line_offsets = data.encode_corpus(data.resolve_corpus(cfg.data, cache_dir), tok, cache_dir,
                                           progress=False)
    train_ex, eval_ex = data.build_examples(line_offsets, cfg.seq_len, cfg.seed, cfg.eval_fraction)
    special = (tok.cls_id, tok.sep_id, tok.pad_id)
    temperature = mc.temperature  # the temperature the run trained at

    def corrupt(rows):
        x, s, m = (torch.from_numpy(a)
                   for a in data.pretraining_batch(ids, rows, cfg.seq_len, *special))
        out = model(x, s, m, temperature=temperature)
        return out, out.is_original(x), m.bool()  # the loss's own labels

    rng = np.random.default_rng(cfg.seed)
    torch.manual_seed(cfg.seed + 1)
    seen = [corrupt(train_ex[rng.choice(len(train_ex), cfg.batch_size, replace=False)])
            for _ in range(CONTEXT_FREE_BATCHES)]
    rate = type_replaced_rate(*(torch.cat([t.flatten() for t in ts]) for ts in
                                ([o.x_corrupt for o, _, _ in seen], [i for _, i, _ in seen],
                                 [r for *_, r in seen])),
                              mc.vocab_size)  # [V]
    torch.manual_seed(cfg.seed)  # the held-out corruptions of report.evaluate_heldout
    held = [corrupt(eval_ex[i * cfg.batch_size:(i + 1) * cfg.batch_size])
            for i in range(cfg.eval_batches)]
    is_original = torch.cat([i.flatten() for _, i, _ in held])
    real = torch.cat([r.flatten() for *_, r in held])
    p_d = torch.cat([o.p_original.flatten() for o, _, _ in held])
    p_free = 1 - rate[torch.cat([o.x_corrupt.flatten() for o, _, _ in held])]  # as a P(original)
    return disc_auc(p_d, is_original, real).item(), disc_auc(p_free, is_original, real).item()


def run_candidate(name: str, flags: list[str], args) -> Path:
    out = Path(args.runs_dir) / name
    held = []
    if (out / "metrics.jsonl").is_file():
        held = [r for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())
                if r["split"] == "eval"]
    stop = int(BASE_FLAGS[BASE_FLAGS.index("--stop-at") + 1])
    if held and held[-1]["step"] >= stop:
        print(f"{name}: done already ({out})")
        return out
    vocab = Path(args.runs_dir) / "vocab.txt"
    if not vocab.is_file():  # one vocabulary for every candidate, trained once
        cfg = train.recipe_config(size="tiny", data=args.data)
        data.load_or_train_vocab(cfg, data.resolve_corpus(args.data, Path(args.runs_dir) / "cache"),
                                  Path(args.runs_dir))
    argv = [*BASE_FLAGS, *flags, "--data", args.data, "--vocab", str(vocab), "--cache-dir",
            str(Path(args.runs_dir) / "cache"), "--out", str(out)]
    if (out / "ckpt.pt").is_file():
        argv.append("--resume")
    print(f"{name}: python train.py {' '.join(argv)}")
    train.main(argv)
    return out


def draw(args) -> None:
    """auc_vs_minutes.png and candidates.md under --out from the runs in --runs-dir."""
    from matplotlib.figure import Figure

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = [n for n in [*CANDIDATES, *args.extra]
             if (Path(args.runs_dir) / n / "metrics.jsonl").is_file()]
    fig = Figure(figsize=(8, 5))
    ax = fig.subplots()
    table = ["| candidate | what it changes | updates | minutes | held-out AUC "
             "| context-free AUC | D precision / recall at 0.5 | G accuracy |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for i, name in enumerate(names):
        run = Path(args.runs_dir) / name
        held = [r for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())
                if r["split"] == "eval"]
        ax.plot([r["elapsed_s"] / 60 for r in held], [r["disc_auc"] for r in held], "o-", ms=3,
                color=f"C{i}", label=name)
        last = held[-1]
        # a run stopped by hand before its first checkpoint has curves but no model to measure
        free = (f"{context_free_auc(run, Path(args.runs_dir) / 'cache')[1]:.3f}"
                if (run / "ckpt.pt").is_file() else "n/a")
        what = (CANDIDATES[name][0] if name in CANDIDATES
                else "the new tiny preset (2 threads, idle machine)")
        table.append(f"| {name} | {what} | {last['step']:,} | {last['elapsed_s'] / 60:.1f} | "
                     f"{last['disc_auc']:.3f} | {free} | "
                     f"{last['disc_precision']:.2f} / {last['disc_recall']:.2f} | "
                     f"{last['gen_acc']:.3f} |")
    ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax.axhline(0.8, color="k", lw=0.8, ls="--", label="target 0.80")
    ax.set_xlabel("minutes of training (wall clock, evaluations included)")
    ax.set_ylabel("D's held-out AUC, replaced vs original")
    ax.set_title("Which CPU preset lets the discriminator learn?")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "auc_vs_minutes.png", dpi=100)
    (out / "candidates.md").write_text("\n".join(table) + "\n")
    print("\n".join(table))
    print(f"wrote {out / 'auc_vs_minutes.png'} and {out / 'candidates.md'}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None,
                   help="the corpus: a .txt file or folder (required to run candidates)")
    p.add_argument("--runs-dir", default="runs/cpu_preset",
                   help="one folder per candidate, and the shared vocab")
    p.add_argument("--out", default="experiments/results/cpu_preset",
                   help="where the PNG and table go")
    p.add_argument("--only", nargs="+", default=None, choices=list(CANDIDATES),
                   help="run only these candidates")
    p.add_argument("--extra", nargs="*", default=[],
                   help="other run folders in --runs-dir to draw too")
    p.add_argument("--draw-only", action="store_true",
                   help="draw from the runs already there; run nothing")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if not args.draw_only:
        if args.data is None:
            raise SystemExit("--data is required to run candidates (or pass --draw-only)")
        for name in args.only or CANDIDATES:
            run_candidate(name, CANDIDATES[name][1], args)
    draw(args)


if __name__ == "__main__":
    main()
