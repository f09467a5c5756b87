"""D's context AUC of a pre-training run, on the held-out split of another corpus.

train.py scores D on the held-out 1% of the run's own corpus, so two runs on different corpora are
scored on different text: candidate 17 of issue 27 (SST-2's sentences as one-sentence documents)
is scored mostly on short review phrases, candidate 1 (sixteen sentences a document) mostly on
book pages. This script scores a checkpoint on the held-out examples train.py would take from
--data, with the run's own vocab, seed, sequence length, batch and evaluation batches: the same
examples, masks and G samples that a run on --data is evaluated on at every --eval-interval.

    python experiments/heldout_auc.py --init runs/tapt1-1800 --data runs/tapt

The context AUC is D's held-out AUC against G's samples at the paper's temperature 1
(report.evaluate_heldout), whatever temperature the run trained at.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the core files are flat modules at the repo's top level

import data  # noqa: E402
import plumbing  # noqa: E402
import report  # noqa: E402
import train  # noqa: E402
from electra import Electra, ElectraConfig  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--init", required=True, help="a train.py run folder (ckpt.pt, vocab.txt)")
    p.add_argument("--data", required=True,
                   help="the corpus whose held-out split scores the run (a folder of .txt files)")
    p.add_argument("--cache-dir", default=train.TrainConfig.cache_dir,
                   help="where the tokenised corpus is cached (train.py's --cache-dir)")
    return p.parse_args(argv)


def heldout_auc(init: str, corpus: str, cache_dir: str) -> dict:
    """D's context AUC and G's accuracy on the held-out split of `corpus`, as a run of the
    checkpoint's train config on that corpus would be evaluated. `init`: a run folder or the
    ckpt.pt inside one (its vocab.txt beside it)."""
    path = Path(init)
    ckpt = path / "ckpt.pt" if path.is_dir() else path
    vocab = ckpt.parent / "vocab.txt"
    if not ckpt.is_file() or not vocab.is_file():
        raise SystemExit(f"--init {init}: expected a train.py run folder with ckpt.pt and "
                         f"vocab.txt")
    saved = plumbing.load_checkpoint(ckpt, "--init")
    cfg = dataclasses.replace(train.TrainConfig(**saved["train_config"]), data=corpus,
                              vocab=str(vocab), cache_dir=cache_dir, out_dir=str(ckpt.parent))
    heldout = data.pretraining_data(cfg, 0, 1, saved["vocab_hash"])
    model = Electra(ElectraConfig(**saved["model_config"]))
    model.load_state_dict(saved["model"])
    # Sampled at temperature 1 itself, so the context AUC is the pass's disc_auc (one pass).
    stats = report.evaluate_heldout(model, heldout.eval_ex, heldout.batches, cfg,
                                    contextlib.nullcontext(),
                                    temperature=report.CONTEXT_TEMPERATURE)
    return {"init": init, "data": corpus, "step": saved["step"],
            "examples": len(heldout.eval_ex), "context_auc": stats["context_auc"],
            "gen_acc": stats["gen_acc"]}


def main(argv=None) -> dict:
    args = parse_args(argv)
    result = heldout_auc(args.init, args.data, args.cache_dir)
    print(f"{result['init']} (update {result['step']:,}) on the held-out split of "
          f"{result['data']} ({result['examples']:,} examples): context AUC "
          f"{result['context_auc']:.3f}, G's accuracy {result['gen_acc']:.3f}")
    return result


if __name__ == "__main__":
    main()
