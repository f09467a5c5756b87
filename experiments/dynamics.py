"""How the discriminator learns in its first minutes: held-out AUC every few updates, next to the
AUC of a detector that sees only the token (no context), measured on the same corrupted held-out
tokens.

    python experiments/dynamics.py --data ../shared/data/corpus/gutenberg \\
        --vocab runs/tiny/vocab.txt --out notebooks/data/dynamics_tiny.jsonl  # the tiny preset
    python experiments/dynamics.py ... --set temperature=1.0 --set mask_prob=0.15 \\
        --set dropout=0.1 --set attention_dropout=0.1 --out notebooks/data/dynamics_paper.jsonl

The training is train.py's own (its data stream, model, optimizer and schedule: the tiny recipe's
1,800-update schedule), stopped after --stop updates; any other train.py flag (--set, --seq-len,
--batch-size, ...) is passed through. The context-free detector ranks a token by how often its
type was a replacement in the last --window training batches (cpu_preset.type_replaced_rate): it
follows G as G changes. notebooks/03_training_dynamics.ipynb draws the two JSONL files.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import deque
from pathlib import Path

import torch
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import data
import train
from experiments.cpu_preset import type_replaced_rate
from support import report
from support.report import disc_auc


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="the corpus: a .txt file or folder")
    p.add_argument("--vocab", required=True, help="a vocab.txt (e.g. the one a train.py run saved)")
    p.add_argument("--cache-dir", default="cache", help="train.py's cache of the tokenised corpus")
    p.add_argument("--out", required=True, help="the JSONL file to write, one row per evaluation")
    p.add_argument("--stop", type=int, default=400, help="updates to run")
    p.add_argument("--every", type=int, default=20, help="updates between evaluations")
    p.add_argument("--window", type=int, default=20,
                   help="training batches the context-free detector counts")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    # the rest (--set, --seq-len, ...) are train.py's flags
    args, train_flags = p.parse_known_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    argv_train = ["--size", "tiny", "--data", args.data, "--vocab", args.vocab,
                  "--cache-dir", args.cache_dir, "--out", str(Path(args.out).parent), *train_flags]
    cfg = train.parse_config(argv_train)
    tok = train.Tokenizer.load(args.vocab)
    corpus = data.resolve_corpus(cfg.data, Path(cfg.cache_dir))
    ids, line_offsets = data.encode_corpus(corpus, tok, Path(cfg.cache_dir), progress=False)
    train_ex, eval_ex = data.build_examples(line_offsets, cfg.seq_len, cfg.seed, cfg.eval_fraction)
    special = (tok.cls_id, tok.sep_id, tok.pad_id)
    batches = data.Batches(ids, train_ex, cfg.batch_size, cfg.batch_size, 0, 1, cfg.seq_len,
                           special, cfg.seed)
    mc = train.model_config(cfg, tok)
    torch.manual_seed(cfg.seed)
    model = train.build_model(mc, torch.device("cpu"))
    optimizer = train.build_optimizer(model, cfg)
    # (x_corrupt, is_original, real) of the last training batches
    recent = deque(maxlen=args.window)

    def evaluate(step: int) -> dict:
        rate = type_replaced_rate(*(torch.cat([b[i] for b in recent]) for i in range(3)),
                                  mc.vocab_size)  # [V]
        model.eval()
        p_d, p_free, orig, real, gen_acc = [], [], [], [], []
        with torch.no_grad(), torch.random.fork_rng():
            # the same held-out corruptions every time, as report.evaluate_heldout
            torch.manual_seed(cfg.seed)
            for i in range(cfg.eval_batches):
                x, s, m = (torch.from_numpy(a) for a in data.pretraining_batch(
                    ids, eval_ex[i * cfg.batch_size:(i + 1) * cfg.batch_size], cfg.seq_len,
                    *special))
                out = model(x, s, m)
                p_d.append(out.p_original.flatten())
                p_free.append(1 - rate[out.x_corrupt.flatten()])  # context-free P(original)
                orig.append(out.is_original(x).flatten())  # the loss's own labels
                real.append(m.flatten())
                gen_acc.append(report.stats_dict(report.step_stats(out, x, m))["gen_acc"])
        model.train()
        p_d, p_free, orig, real = map(torch.cat, (p_d, p_free, orig, real))
        return {"step": step, "disc_auc": disc_auc(p_d, orig, real).item(),
                "context_free_auc": disc_auc(p_free, orig, real).item(),
                "gen_acc": sum(gen_acc) / len(gen_acc),
                "replaced_frac": 1 - (orig & real.bool()).sum().item() / real.sum().item()}

    rows = []
    for step in tqdm(range(args.stop), unit="step", desc="dynamics"):
        for group in optimizer.param_groups:
            group["lr"] = train.learning_rate(step, cfg)
        x, s, m = (torch.from_numpy(a) for a in batches.get(step, 0))
        out = model(x, s, m)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        real = m.bool()
        recent.append((out.x_corrupt[real], out.is_original(x)[real],
                       torch.ones(int(real.sum()), dtype=torch.bool)))
        if (step + 1) % args.every == 0:
            rows.append(evaluate(step + 1))
            tqdm.write(json.dumps(rows[-1]))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(args.out).with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tmp.replace(args.out)
    print(f"wrote {len(rows)} rows to {args.out}")


if __name__ == "__main__":
    main()
