"""What D's BLiMP choice follows: grammar, word frequency, or the number of tokens.

evaluate.py scores a BLiMP pair by D's sum of log D(x, t) over each sentence's tokens, and is
right when the grammatical sentence scores higher. Issue 27 found trained discriminators below
chance and explained it by a preference for the sentence with the more frequent word. This script
puts that explanation, and one more, to a test with two choosers that read no context:

- the unigram chooser prefers the sentence whose tokens are more frequent in the corpus:

      score_U(x) = sum_t log p(x_t),   p(v) = (c_v + 1) / (N + V)

  c_v the count of token v in the run's corpus (its own vocab), N the corpus's tokens, V the vocab
  size (add-one smoothing, so a token the corpus lacks is rare, not impossible);
- the fewer-tokens chooser prefers the sentence of fewer tokens: every token adds a negative
  log D(x, t) to D's sum, so a D with no opinion prefers short sentences.

For each model the table gives D's BLiMP accuracy, how often D picks the sentence the unigram
chooser picks on the pairs of equal length in tokens (where length cannot decide), how often it
picks the fewer-tokens chooser's sentence over all pairs, and D's accuracy on the equal-length
pairs split by whether the more frequent sentence is the grammatical one. A D that follows
frequency agrees with the unigram chooser on well over half the pairs and is right mostly where
the frequent sentence is the grammatical one; a D with no opinion on either sits near 0.5.
Random weights of the same config (one draw per --random-seeds, as evaluate.py --random) are the
zero point.

    python experiments/blimp_choosers.py --data runs/books --blimp-dir ../shared/data/blimp \\
        --init runs/tiny-books-15 runs/tiny-books-hour-s2 --random-seeds 0 1 2

Every --init must share one vocab (the unigram counts are per vocab). Writes results.json,
blimp-choosers.md and blimp-choosers.png to --out.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the core files are flat modules at the repo's top level

import data  # noqa: E402
import evaluate  # noqa: E402
from experiments import common  # noqa: E402

OUT = ROOT / "experiments" / "results" / "blimp_choosers"
NAME = "blimp-choosers"


def unigram_log_probs(ids: np.ndarray, vocab_size: int) -> np.ndarray:
    """log p(v) = log((c_v + 1) / (N + V)) for every token v of the vocab, from a corpus's ids.

    Example: ids 0 0 0 1 in a vocab of 3: c = 3, 1, 0, N = 4, V = 3, so p = 4/7, 2/7, 1/7.

    >>> np.exp(unigram_log_probs(np.array([0, 0, 0, 1]), 3)) * 7
    array([4., 2., 1.])
    """
    counts = np.bincount(ids, minlength=vocab_size).astype(np.float64)  # [V]
    return np.log((counts + 1) / (counts.sum() + vocab_size))


def agreement(a: np.ndarray, b: np.ndarray) -> float:
    """How often two choosers pick the same sentence: the mean of a b + (1 - a)(1 - b) over pairs,
    a and b each chooser's credit per pair (1 the grammatical sentence, 0 the other, 1/2 a tie, so
    a tie agrees half the time).

    Example: both pick the grammatical one, both the other, one ties: (1 + 1 + 1/2) / 3.

    >>> round(agreement(np.array([1, 0, 0.5]), np.array([1, 0, 1])), 4)
    0.8333
    """
    return float(np.mean(a * b + (1 - a) * (1 - b)))


def chooser_credits(tok, pairs: list, log_p: np.ndarray) -> dict[str, np.ndarray]:
    """Per pair: the unigram chooser's and the fewer-tokens chooser's credits, and whether the two
    sentences have as many tokens (the same credit rule as evaluate.py: ties count half)."""
    good = [tok.encode(p.good) for p in pairs]
    bad = [tok.encode(p.bad) for p in pairs]
    unigram = [evaluate.pair_credit(log_p[g].sum(), log_p[b].sum()) for g, b in zip(good, bad)]
    fewer = [evaluate.pair_credit(-len(g), -len(b)) for g, b in zip(good, bad)]
    return {"unigram": np.array(unigram), "fewer_tokens": np.array(fewer),
            "same_length": np.array([len(g) == len(b) for g, b in zip(good, bad)])}


def d_credits(model, tok, pairs: list, device: str) -> np.ndarray:
    """D's credit per pair, from its sum of log D(x, t) (evaluate.py's d_sum)."""
    model = model.to(device).eval()
    credits, _ = evaluate.blimp_credits(model, tok, pairs, evaluate.BATCH_SIZE, device,
                                        score_mlm=False)
    return np.array(credits["d_sum"])  # [pairs]


def follows(d: np.ndarray, choosers: dict) -> dict:
    """D's BLiMP accuracy, its agreement with the unigram chooser on the equal-length pairs and
    with the fewer-tokens chooser on all, and its accuracy on the equal-length pairs where the
    more frequent sentence is the grammatical one (unigram credit 1) and where it is not (0)."""
    u = choosers["unigram"]
    same = choosers["same_length"]
    return {
        "blimp": float(d.mean()),
        "agrees_unigram": agreement(d[same], u[same]),
        "agrees_fewer_tokens": agreement(d, choosers["fewer_tokens"]),
        "acc_frequent_good": float(d[same & (u == 1)].mean()),
        "acc_frequent_bad": float(d[same & (u == 0)].mean()),
    }


def markdown(results: dict) -> str:
    """The choosers' own accuracies, then one row per model."""
    c = results["choosers"]
    lines = [f"The unigram chooser is right on {c['unigram']:.3f} of the {c['pairs']:,} pairs, "
             f"the fewer-tokens chooser on {c['fewer_tokens']:.3f}; "
             f"{c['same_length']:,} pairs have as many tokens in both sentences, and on "
             f"{c['frequent_good']:,} of those the more frequent sentence is the grammatical "
             f"one (on {c['frequent_bad']:,} the other).\n"]
    header = ["model", "D's BLiMP accuracy", "agrees with the unigram chooser (equal length)",
              "agrees with the fewer-tokens chooser", "right where the frequent one is good",
              "right where the frequent one is bad"]
    rows = [[r["model"]] + [f"{r[k]:.3f}" for k in ("blimp", "agrees_unigram",
                                                    "agrees_fewer_tokens", "acc_frequent_good",
                                                    "acc_frequent_bad")]
            for r in results["models"]]
    return "\n".join(lines) + "\n" + common.markdown_table(header, rows)


def plot(results: dict):
    """Grouped bars, one group per model: D's accuracy and its agreement with each chooser."""
    def draw(plt):
        rows = results["models"]
        fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(rows)), 4.2))
        x = np.arange(len(rows))
        bars = [("blimp", "D's BLiMP accuracy"),
                ("agrees_unigram", "agrees with the unigram chooser (equal length)"),
                ("agrees_fewer_tokens", "agrees with the fewer-tokens chooser")]
        width = 0.8 / len(bars)
        for i, (key, title) in enumerate(bars):
            ax.bar(x + (i - 1) * width, [r[key] for r in rows], width, label=title)
        ax.axhline(0.5, color="black", linewidth=0.8, linestyle="--")
        ax.axhline(results["choosers"]["unigram"], color="grey", linewidth=0.8, linestyle=":",
                   label="the unigram chooser's own BLiMP accuracy")
        ax.set_xticks(x, [r["model"] for r in rows], rotation=20, ha="right", fontsize=8)
        ax.set_ylim(0.3, 0.75)
        ax.set_ylabel("fraction of pairs")
        ax.set_title("What D's BLiMP choice follows")
        ax.legend(fontsize=7, loc="upper left")
        fig.tight_layout()
        return fig
    return draw


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--init", nargs="+", required=True,
                   help="train.py run folders (or ckpt.pt files) sharing one vocab")
    p.add_argument("--data", required=True, help="the corpus the runs were pre-trained on")
    p.add_argument("--blimp-dir", required=True, help="a folder of BLiMP's jsonl files")
    p.add_argument("--random-seeds", type=int, nargs="*", default=[0, 1, 2],
                   help="torch seeds of the random-weights draws (as evaluate.py --random --seed)")
    p.add_argument("--per-paradigm", type=int, default=evaluate.PER_PARADIGM,
                   help=f"the first N pairs of each paradigm (default {evaluate.PER_PARADIGM})")
    p.add_argument("--cache-dir", default="cache",
                   help="where the tokenised corpus is cached (train.py's --cache-dir)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                   help="cuda or cpu (default: cuda when there is one)")
    p.add_argument("--out", default=str(OUT), help=f"output folder (default {OUT})")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    try:
        scored = [evaluate.load_run(Path(init)) for init in args.init]
        pairs = evaluate.read_blimp(args.blimp_dir, args.per_paradigm or None)
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"error: {e}") from None
    tok = scored[0].tokenizer
    if any(s.tokenizer.hash() != tok.hash() for s in scored):
        raise SystemExit("error: the --init runs have different vocabs; the unigram counts are "
                         "per vocab, so pass runs that share one")
    ids, _ = data.encode_corpus(args.data, tok, args.cache_dir)
    choosers = chooser_credits(tok, pairs, unigram_log_probs(ids, len(tok)))
    u = choosers["unigram"]
    same = choosers["same_length"]
    summary = {"pairs": len(pairs), "unigram": float(u.mean()),
               "fewer_tokens": float(choosers["fewer_tokens"].mean()),
               "same_length": int(same.sum()), "frequent_good": int((same & (u == 1)).sum()),
               "frequent_bad": int((same & (u == 0)).sum())}
    models = [(init, s.model) for init, s in zip(args.init, scored)]
    config = scored[0].model.config
    models += [(f"random weights, seed {seed}", evaluate.random_weights(config, seed))
               for seed in args.random_seeds]
    rows = [{"model": label, **follows(d_credits(model, tok, pairs, args.device), choosers)}
            for label, model in models]
    results = {"data": args.data, "blimp_dir": args.blimp_dir, "choosers": summary,
               "models": rows}
    text = markdown(results)
    print(text)
    common.write_outputs(Path(args.out), NAME, results, text, plot(results))
    print(f"wrote {args.out}/{NAME}.md, .png and results.json")
    return results


if __name__ == "__main__":
    main()
