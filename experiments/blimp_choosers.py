"""What D's BLiMP choice follows: grammar, word frequency, or the number of tokens.

evaluate.py scores a BLiMP pair by D's sum of log D(x, t) over each sentence's tokens, and is
right when the grammatical sentence scores higher. Trained discriminators score below their
random weights; one explanation is a preference for the sentence with the more frequent word.
This script puts that explanation, and one more, to a test with two choosers that read no context:

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

On the equal-length pairs the two sentences differ at a few positions (the changed word's tokens)
and agree at the rest, so D's sum splits in two:

    score_D(good) - score_D(bad) = sum_{t changed} [log D(good, t) - log D(bad, t)]
                                 + sum_{t unchanged} [log D(good, t) - log D(bad, t)]

The first part is D's call on the changed word itself, the second how the change moves D's calls
on the words around it (the same words, in a different context). The second table gives each
part's accuracy (the pair counted right when the part favours the grammatical sentence) and its
agreement with the unigram chooser, which on these pairs decides by the changed word alone.

One more column says how much of D's call on any token is that token's frequency: Pearson's r
between D's logit of *original* and log p(token), over every token of the grammatical sentences.

    python experiments/blimp_choosers.py --data runs/books --blimp-dir ../shared/data/blimp \\
        --init runs/tiny-books-15 runs/tiny-books-hour-s2 --labels "15 minutes" "the hour" \\
        --random-seeds 0 1 2

Every --init must share one vocab (the unigram counts are per vocab). Writes results.json,
blimp-choosers.md and blimp-choosers.png to --out.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the core files are flat modules at the repo's top level

import data
from experiments import common
from support import evaluate
from support.plumbing import pad_batch

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
    credits, _ = evaluate.blimp_credits(model, tok, pairs, evaluate.BATCH_SIZE, device,
                                        score_mlm=False)
    return np.array(credits["d_sum"])  # [pairs]


def discriminator_logits(model, tok, sentences: list[str], device: str):
    """D's logits of *original* on `sentences`, each read as [CLS] sentence [SEP] as evaluate.py
    reads them: (x, attention_mask, logits), each [B, T]."""
    rows = [tok.encode_pair(s, max_len=model.config.max_position)[0] for s in sentences]
    zeros = [[0] * len(r) for r in rows]
    x, segment_ids, attention_mask = pad_batch(rows, zeros, tok.pad_id, device)  # [B, T]
    return x, attention_mask, model.discriminator(x, segment_ids, attention_mask).float()


@torch.inference_mode()
def split_credits(model, tok, pairs: list, device: str) -> dict[str, np.ndarray]:
    """On pairs of equal length in tokens: D's credit from the changed positions alone, and from
    the unchanged ones alone (the module docstring's two parts); a pair whose ids are the same is a
    tie in both."""
    changed, unchanged = [], []
    step = max(1, evaluate.BATCH_SIZE // 2)  # pairs per forward pass: two rows each
    for start in range(0, len(pairs), step):
        chunk = pairs[start:start + step]
        sentences = [s for p in chunk for s in (p.good, p.bad)]  # good, bad, good, bad, ...
        x, attention_mask, logits = discriminator_logits(model, tok, sentences, device)  # [2P, T]
        lengths = attention_mask.sum(1)  # [2P]
        if (lengths[0::2] != lengths[1::2]).any():
            raise ValueError("split_credits takes pairs of equal length in tokens only")
        log_d = F.logsigmoid(logits)  # [2P, T]
        own = evaluate.sentence_tokens(attention_mask)[0::2]  # [P, T]: the same in good and bad
        differ = x[0::2] != x[1::2]  # [P, T]
        gap = log_d[0::2] - log_d[1::2]  # [P, T]: log D(good, t) - log D(bad, t)
        parts = (torch.where(differ, gap, 0.0).sum(1),  # [P]
                 torch.where(own & ~differ, gap, 0.0).sum(1))  # [P]
        same_ids = ~differ.any(1)  # [P]
        for i in range(len(chunk)):
            if same_ids[i]:
                changed.append(0.5)
                unchanged.append(0.5)
                continue
            changed.append(evaluate.pair_credit(parts[0][i].item(), 0.0))
            unchanged.append(evaluate.pair_credit(parts[1][i].item(), 0.0))
    return {"changed": np.array(changed), "unchanged": np.array(unchanged)}


@torch.inference_mode()
def frequency_correlation(model, tok, sentences: list[str], log_p: np.ndarray,
                          device: str) -> float:
    """Pearson's r between D's logit of *original* and log p(token), over every token of
    `sentences` (not [CLS] or [SEP]): near 1 when D's call follows the token's frequency, near 0
    when the token's frequency says nothing of it."""
    logits, frequencies = [], []
    for start in range(0, len(sentences), evaluate.BATCH_SIZE):
        chunk = sentences[start:start + evaluate.BATCH_SIZE]
        x, attention_mask, logit = discriminator_logits(model, tok, chunk, device)  # [B, T]
        own = evaluate.sentence_tokens(attention_mask)  # [B, T]
        logits.append(logit[own].cpu().numpy())
        frequencies.append(log_p[x[own].cpu().numpy()])
    return float(np.corrcoef(np.concatenate(logits), np.concatenate(frequencies))[0, 1])


def follows(d: np.ndarray, split: dict, choosers: dict) -> dict:
    """What D's credits `d` (every pair) and `split` (the equal-length pairs) follow: D's BLiMP
    accuracy, its agreement with the unigram chooser on the equal-length pairs and with the
    fewer-tokens chooser on all, its accuracy on the equal-length pairs where the more frequent
    sentence is the grammatical one (unigram credit 1) and where it is not (0), and each part of
    the split's accuracy and agreement with the unigram chooser."""
    u = choosers["unigram"]
    same = choosers["same_length"]
    return {
        "blimp": float(d.mean()),
        "agrees_unigram": agreement(d[same], u[same]),
        "agrees_fewer_tokens": agreement(d, choosers["fewer_tokens"]),
        "acc_frequent_good": float(d[same & (u == 1)].mean()),
        "acc_frequent_bad": float(d[same & (u == 0)].mean()),
        "equal_length": float(d[same].mean()),
        "changed": float(split["changed"].mean()),
        "changed_agrees_unigram": agreement(split["changed"], u[same]),
        "unchanged": float(split["unchanged"].mean()),
        "unchanged_agrees_unigram": agreement(split["unchanged"], u[same]),
    }


def markdown(results: dict) -> str:
    """The choosers' own accuracies, then two tables of one row per model: what D's sum follows,
    and the sum split at the changed word."""
    c = results["choosers"]
    lines = [f"The unigram chooser is right on {c['unigram']:.3f} of the {c['pairs']:,} pairs "
             f"({c['unigram_equal_length']:.3f} of the equal-length ones), the fewer-tokens "
             f"chooser on {c['fewer_tokens']:.3f}; {c['same_length']:,} pairs have as many "
             f"tokens in both sentences, and on {c['frequent_good']:,} of those the more "
             f"frequent sentence is the grammatical one (on {c['frequent_bad']:,} the other).\n"]
    header = ["model", "D's BLiMP accuracy", "agrees with the unigram chooser (equal length)",
              "agrees with the fewer-tokens chooser", "right where the frequent one is good",
              "right where the frequent one is bad", "r(D's logit, log p)"]
    keys = ["blimp", "agrees_unigram", "agrees_fewer_tokens", "acc_frequent_good",
            "acc_frequent_bad", "frequency_r"]
    rows = [[r["model"]] + [f"{r[k]:.3f}" for k in keys] for r in results["models"]]
    lines.append(common.markdown_table(header, rows))
    lines.append(f"D's sum on the {c['same_length']:,} equal-length pairs, split at the changed "
                 f"word (accuracy, and agreement with the unigram chooser):\n")
    header = ["model", "whole sentence", "the changed tokens", "the unchanged tokens",
              "whole: agrees with unigram", "changed: agrees", "unchanged: agrees"]
    keys = ["equal_length", "changed", "unchanged", "agrees_unigram", "changed_agrees_unigram",
            "unchanged_agrees_unigram"]
    rows = [[r["model"]] + [f"{r[k]:.3f}" for k in keys] for r in results["models"]]
    lines.append(common.markdown_table(header, rows))
    return "\n".join(lines)


def plot(results: dict):
    """Two panels, one group of bars per model: D's accuracy on the equal-length pairs from the
    whole sentence, the changed tokens and the unchanged ones; and each one's agreement with the
    unigram chooser."""
    def draw(plt):
        rows = results["models"]
        fig, axes = plt.subplots(1, 2, figsize=(max(10.0, 1.6 * len(rows)), 4.6), sharey=True)
        x = np.arange(len(rows))
        panels = [("D's BLiMP accuracy (equal-length pairs)",
                   [("equal_length", "whole sentence"), ("changed", "the changed tokens"),
                    ("unchanged", "the unchanged tokens")]),
                  ("agreement with the unigram chooser",
                   [("agrees_unigram", "whole sentence"),
                    ("changed_agrees_unigram", "the changed tokens"),
                    ("unchanged_agrees_unigram", "the unchanged tokens")])]
        for ax, (title, bars) in zip(axes, panels):
            width = 0.8 / len(bars)
            for i, (key, label) in enumerate(bars):
                ax.bar(x + (i - 1) * width, [r[key] for r in rows], width, label=label)
            ax.axhline(0.5, color="black", linewidth=0.8, linestyle="--")
            ax.set_xticks(x, [r["model"] for r in rows], rotation=25, ha="right", fontsize=7)
            ax.set_title(title, fontsize=10)
        axes[0].axhline(results["choosers"]["unigram_equal_length"], color="grey",
                        linewidth=0.8, linestyle=":", label="the unigram chooser")
        axes[0].set_ylim(0.2, 0.8)
        axes[0].set_ylabel("fraction of pairs")
        axes[0].legend(fontsize=7, loc="upper left")
        fig.suptitle("What D's BLiMP choice follows: the changed word, and the words around it")
        fig.tight_layout()
        return fig
    return draw


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--init", nargs="+", required=True,
                   help="train.py run folders (or ckpt.pt files) sharing one vocab")
    p.add_argument("--labels", nargs="+",
                   help="a name per --init for the table and the figure (default: the paths)")
    p.add_argument("--data", required=True,
                   help="the corpus the runs were pre-trained on: a path or a known corpus")
    p.add_argument("--blimp-dir", required=True, help="a folder of BLiMP's jsonl files")
    p.add_argument("--random-seeds", type=int, nargs="*", default=[0, 1, 2],
                   help="torch seeds of the random-weights draws of the first --init's config "
                        "(as evaluate.py --random --seed)")
    p.add_argument("--blimp-pairs", type=int, default=evaluate.PER_PARADIGM,
                   help=f"the first N pairs of each paradigm, 0 for all (default "
                        f"{evaluate.PER_PARADIGM})")
    p.add_argument("--cache-dir", default="cache",
                   help="where the tokenised corpus is cached (train.py's --cache-dir)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                   help="cuda or cpu (default: cuda when there is one)")
    p.add_argument("--out", default=str(OUT), help=f"output folder (default {OUT})")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    labels = args.labels or args.init
    if len(labels) != len(args.init):
        raise SystemExit(f"error: {len(args.labels)} --labels for {len(args.init)} --init runs: "
                         f"give one per run, or none")
    try:
        scored = [evaluate.load_run(Path(init)) for init in args.init]
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"error: {e}") from None
    pairs, _ = common.read_blimp(args)
    tok = scored[0].tokenizer
    if any(s.tokenizer.hash() != tok.hash() for s in scored):
        raise SystemExit("error: the --init runs have different vocabs; the unigram counts are "
                         "per vocab, so pass runs that share one")
    try:
        # a known corpus name (data.KNOWN_CORPORA, e.g. books) is fetched as train.py fetches it
        corpus = data.resolve_corpus(args.data, Path(args.cache_dir))
        ids, _ = data.encode_corpus(corpus, tok, args.cache_dir)
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"--data {args.data}: {e}") from None
    log_p = unigram_log_probs(ids, len(tok))
    choosers = chooser_credits(tok, pairs, log_p)
    u = choosers["unigram"]
    same = choosers["same_length"]
    summary = {"pairs": len(pairs), "unigram": float(u.mean()),
               "unigram_equal_length": float(u[same].mean()),
               "fewer_tokens": float(choosers["fewer_tokens"].mean()),
               "same_length": int(same.sum()), "frequent_good": int((same & (u == 1)).sum()),
               "frequent_bad": int((same & (u == 0)).sum())}
    models = [(label, s.model) for label, s in zip(labels, scored)]
    config = scored[0].model.config
    models += [(f"random weights, seed {seed}", evaluate.random_weights(config, seed))
               for seed in args.random_seeds]
    equal_length = [pair for pair, equal in zip(pairs, same) if equal]
    grammatical = [p.good for p in pairs]
    rows = []
    for label, model in models:
        model = model.to(args.device).eval()
        d = d_credits(model, tok, pairs, args.device)
        split = split_credits(model, tok, equal_length, args.device)
        r = frequency_correlation(model, tok, grammatical, log_p, args.device)
        rows.append({"model": label, **follows(d, split, choosers), "frequency_r": r})
    results = {"data": args.data, "blimp_dir": args.blimp_dir, "choosers": summary,
               "models": rows}
    text = markdown(results)
    print(text)
    common.write_outputs(Path(args.out), NAME, results, text, plot(results))
    print(f"wrote {args.out}/{NAME}.md, .png and results.json")
    return results


if __name__ == "__main__":
    main()
