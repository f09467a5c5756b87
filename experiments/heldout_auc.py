"""D's context AUC of a pre-training run, on the held-out split of another corpus.

train.py scores D on the held-out 1% of the run's own corpus, so two runs on different corpora are
scored on different text: a run on SST-2's sentences as one-sentence documents is scored mostly on
short review phrases, one with sixteen sentences a document mostly on book pages. This script scores
a checkpoint on the held-out examples train.py would take from --data, with the run's own vocab,
seed, sequence length, batch and evaluation batches: the same examples, masks and G samples that a
run on --data is evaluated on at every --eval-interval.

    python experiments/heldout_auc.py --init runs/tapt1-1800 --data runs/tapt

The context AUC is D's held-out AUC against G's samples at the paper's temperature 1
(report.evaluate_heldout), whatever temperature the run trained at. G's accuracy, entropy and
most likely token's probability at the masked positions come with it (a low entropy is the
adversarial G's failure in the paper's Section 3.2).

The context AUC scores D against the run's own G, so it does not compare runs whose generators
differ: a smaller G samples worse replacements, which are easier to catch. --generator scores D
against another run's G instead (the same vocab): the held-out examples, masks and samples are
then that run's, so every D scored against one G sees the same corrupted text. For text no run
was trained on, score on *Emma* (left out of the books; runs/emma is a folder holding
../shared/data/corpus/gutenberg/austen-emma.txt alone), half of it held out and 1,536 of those
1,538 examples scored (48 micro-batches of 32):

    python experiments/heldout_auc.py --init runs/tiny-books-hour-g18 \
        --generator runs/tiny-books-hour-s2 --data runs/emma --eval-fraction 0.5 --eval-batches 48
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the core files are flat modules at the repo's top level

import data
import train
from electra import Electra, ElectraConfig
from support import (
    plumbing,
    report,
    train_cli,
)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--init", required=True, help="a train.py run folder (ckpt.pt, vocab.txt)")
    p.add_argument("--data", required=True,
                   help="the corpus whose held-out split scores the run (a folder of .txt files)")
    p.add_argument("--cache-dir", default=train.TrainConfig.cache_dir,
                   help="where the tokenised corpus is cached (train.py's --cache-dir)")
    p.add_argument("--generator",
                   help="a run folder whose G samples the replacements (default: --init's own)")
    p.add_argument("--eval-fraction", type=float,
                   help="share of --data's documents held out (default: the run's, train.py's "
                        "--eval-fraction)")
    p.add_argument("--eval-batches", type=int,
                   help="held-out micro-batches scored (default: the run's --eval-batches)")
    return p.parse_args(argv)


def load_run(init: str, flag: str) -> tuple[dict, Path]:
    """The checkpoint of a train.py run folder (or of the ckpt.pt inside one) and its vocab.txt;
    one line naming `flag` if either is missing."""
    path = Path(init)
    ckpt = path / "ckpt.pt" if path.is_dir() else path
    vocab = ckpt.parent / "vocab.txt"
    if not ckpt.is_file() or not vocab.is_file():
        raise SystemExit(f"{flag} {init}: expected a train.py run folder with ckpt.pt and "
                         f"vocab.txt")
    return plumbing.load_checkpoint(ckpt, flag), vocab


def load_model(saved: dict) -> Electra:
    """The run's model (G and D), in eval mode: dropout off, as train.py evaluates."""
    model = Electra(ElectraConfig(**saved["model_config"]))
    model.load_state_dict(saved["model"])
    return model.eval()


def heldout_auc(init: str, corpus: str, cache_dir: str, generator: str | None = None,
                eval_fraction: float | None = None, eval_batches: int | None = None) -> dict:
    """D's context AUC and G's accuracy, entropy and most likely token's probability
    (report.generator_spread) on the held-out split of `corpus`, as a run of the
    checkpoint's train config on that corpus would be evaluated. `init`: a run folder or the
    ckpt.pt inside one (its vocab.txt beside it). `generator`: another run whose G samples the
    replacements, and whose train config (seed, sequence length, batch) lays out the held-out
    examples and masks; its vocab must be `init`'s. eval_fraction, eval_batches: None keeps the
    (generator's) run's."""
    saved, vocab = load_run(init, "--init")
    g_saved, g_vocab = (saved, vocab) if generator is None else load_run(generator, "--generator")
    if g_saved["vocab_hash"] != saved["vocab_hash"]:
        raise SystemExit(f"--generator {generator}: its vocab.txt is not --init's; D can only be "
                         f"scored against a G of the same vocabulary")
    overrides = {"eval_fraction": eval_fraction, "eval_batches": eval_batches}
    overrides = {k: v for k, v in overrides.items() if v is not None}
    cfg = dataclasses.replace(train.TrainConfig(**g_saved["train_config"]), data=corpus,
                              vocab=str(g_vocab), cache_dir=cache_dir,
                              out_dir=str(g_vocab.parent), **overrides)
    train_cli.check_train_config(cfg)
    heldout = data.pretraining_data(cfg, 0, 1, g_saved["vocab_hash"])
    batches = heldout.batches
    inputs = [tuple(torch.from_numpy(a) for a in arrays)
              for arrays in report.heldout_batches(heldout.eval_ex, batches, cfg.eval_batches)]
    d_model = load_model(saved)
    g_model = d_model if generator is None else load_model(g_saved)
    # As report.evaluate_heldout's context pass: G samples at temperature 1, the RNG seeded
    with torch.no_grad():
        stats = report.heldout_pass(g_model, inputs, contextlib.nullcontext(), cfg.seed,
                                    report.CONTEXT_TEMPERATURE, discriminator=d_model)
    return {"init": init, "generator": generator or init, "data": corpus,
            "step": saved["step"], "examples": len(heldout.eval_ex),
            "tokens": sum(int(mask.sum()) for _, _, mask in inputs),
            "context_auc": stats["disc_auc"], "gen_acc": stats["gen_acc"],
            "gen_entropy": stats["gen_entropy"], "gen_p_max": stats["gen_p_max"]}


def main(argv=None) -> dict:
    args = parse_args(argv)
    result = heldout_auc(args.init, args.data, args.cache_dir, args.generator,
                         args.eval_fraction, args.eval_batches)
    against = "" if args.generator is None else f", against {result['generator']}'s G"
    print(f"{result['init']} (update {result['step']:,}) on the held-out split of "
          f"{result['data']} ({result['examples']:,} examples, {result['tokens']:,} tokens "
          f"scored{against}): context AUC {result['context_auc']:.3f}, G's accuracy "
          f"{result['gen_acc']:.3f}, G's entropy {result['gen_entropy']:.2f} nats (its most "
          f"likely token {result['gen_p_max']:.3f})")
    return result


if __name__ == "__main__":
    main()
