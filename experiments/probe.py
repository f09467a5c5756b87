"""Linear probes of a pre-training run's frozen encoder on SST-2, beside its random-weights twin.

Fine-tuning (sst2_check.py) changes every weight: 20,000 rows teach sentiment to any encoder,
random weights included, so its score mixes what pre-training put into the weights with what
fine-tuning learns on top. A linear probe keeps the encoder frozen and trains only a logistic
regression on its states. Its dev accuracy says whether pre-training put anything linearly readable
for sentiment into the frozen states; measured per layer, it says in which layers; and the twin
(the same config and vocab, the weights the run started from) is its zero point.

The encoder is the one fine-tuning starts from (Electra.fine_tuning_encoder: D's, or BERT's masked
LM's for a run of train.py --objective bert), in eval mode. It reads each sentence as finetune.py
does, [CLS] sentence [SEP] with at most finetune.MAX_SEQ_LEN tokens, and for each run and its twin
(sst2_check.random_twin) the script reports:

- per layer l = 0 (the embeddings, projected to the hidden size), 1, ..., L (each block's output),
  the probe's dev accuracy on the layer's states averaged over the sentence's T tokens ([CLS] and
  [SEP] included, padding not):

      x_l = (1 / T) sum_t h_l(x)_t

- the probe's dev accuracy on the last layer's [CLS] state h_L(x)_0, the state that fine-tuning's
  classifier reads;
- the mean cosine similarity of the last layer's token states, over every pair i != j of the n
  tokens of the first --cosine-sentences dev sentences, with u_i = h_i / |h_i|:

      cos_mean = 1 / (n (n - 1)) sum_{i != j} u_i . u_j = (|sum_i u_i|^2 - n) / (n (n - 1))

  It is 1 when every state points the same way, and near 0 when their directions are spread like
  random vectors'. Of the CPU runs, those whose states had collapsed most toward one direction
  fine-tuned worst against their twins.

One twin is one draw of random weights, and draws of one config differ by a few points on these
probes as on fine-tuning: --draws K makes the zero point K draws (seeded as sst2_check.py's, draw
0 the twin), each measured alone, the table giving their mean and [min-max] and the difference
from the mean.

The probe is scikit-learn's LogisticRegression (L2 penalty, C = 1) on features standardised with
the training rows' mean and standard deviation. It is trained on the first --max-train-examples
rows of train.tsv (default 20,000, as in sst2_check.py) and scored on dev.tsv (872 rows); it is
deterministic, no seeds. Without --data-dir, GLUE's SST-2 is downloaded once, as by finetune.py.

    python experiments/probe.py --init runs/tiny --init runs/bert \\
        --data-dir ../shared/data/glue/SST-2 --draws 3 --out runs/probe.json

Prints one markdown table per run, its twin beside it, and writes the numbers as JSON to --out.
scikit-learn comes with requirements-dev.txt.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the core files are flat modules at the repo's top level

import finetune
from electra import Encoder
from experiments import sst2_check
from support import (
    cli,
    evaluate,
    glue,
    plumbing,
)
from support.hf import TRAIN_CHECKPOINT

TASK = "sst2"
# the first 20,000 rows of train.tsv, as the fine-tuning check
TRAIN_ROWS = sst2_check.PROTOCOLS["sst2"].train_rows
COSINE_SENTENCES = 200  # dev sentences whose token states give the mean cosine
BATCH_SIZE = 256  # sentences per forward pass: memory and speed only, padding is masked out
PROBE_C = 1.0  # inverse strength of the probe's L2 penalty: scikit-learn's default
PROBE_MAX_ITER = 2_000  # L-BFGS iterations, room to converge (scikit-learn's default stops at 100)


# -----------------------------------------------------------------------------
# The encoder's states, layer by layer


def layer_states(encoder: Encoder, input_ids, segment_ids, attention_mask) -> list[torch.Tensor]:
    """[h_0, h_1, ..., h_L], each [B, T, H]: h_0 the embeddings (projected to the hidden size),
    h_l block l's output, computed by the encoder's own pieces as Encoder.hidden_states runs them,
    so h_L is its output."""
    h = encoder.embeddings(input_ids, segment_ids)  # [B, T, E]
    if encoder.embeddings_project is not None:
        h = encoder.embeddings_project(h)  # [B, T, H]
    # [B, T] -> [B, 1, 1, T], broadcast over heads and queries
    keep = attention_mask.bool()[:, None, None, :]
    states = [h]
    for block in encoder.layers:
        h = block(h, keep)
        states.append(h)
    return states


def mean_pool(h, attention_mask):
    """h: [B, T, H] -> [B, H], each row's states averaged over its real tokens (padding left out).

    >>> h = torch.tensor([[[1.0, 2.0], [3.0, 6.0], [100.0, 100.0]]])  # the third token is padding
    >>> mean_pool(h, torch.tensor([[1, 1, 0]]))
    tensor([[2., 4.]])
    """
    a = attention_mask[..., None].to(h.dtype)  # [B, T] -> [B, T, 1]
    return (h * a).sum(1) / a.sum(1)


def mean_cosine(h) -> float:
    """h: [n, H] states -> their mean pairwise cosine similarity over the pairs i != j (module
    docstring), (|sum_i u_i|^2 - n) / (n (n - 1)) with u_i = h_i / |h_i|.

    Worked example, three 2-d vectors: cos(a, b) = 0 and cos(a, c) = cos(b, c) = 1/sqrt(2), so the
    mean over the three pairs is sqrt(2) / 3 = 0.4714.

    >>> round(mean_cosine(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])), 4)
    0.4714
    """
    u = F.normalize(h.double(), dim=-1)  # [n, H]
    n = u.shape[0]
    s = u.sum(0)  # [H]
    return ((s @ s - n) / (n * (n - 1))).item()


@torch.no_grad()
def pooled_features(encoder: Encoder, data: glue.Encoded, pad_id: int, batch_size: int,
                    device: str, desc: str) -> tuple[list[np.ndarray], np.ndarray]:
    """Each sentence's features: per layer l = 0..L its mean-pooled states ([N, H] each), and its
    last layer's [CLS] state [N, H]."""
    pooled = [[] for _ in range(len(encoder.layers) + 1)]
    cls = []
    for start in tqdm(range(0, len(data), batch_size), desc=desc, unit="batch"):
        rows = range(start, min(start + batch_size, len(data)))
        input_ids, segment_ids, attention_mask = data.batch(rows, pad_id, device)
        states = layer_states(encoder, input_ids, segment_ids, attention_mask)
        for layer, h in enumerate(states):
            pooled[layer].append(mean_pool(h, attention_mask).cpu().numpy())
        cls.append(states[-1][:, 0].cpu().numpy())
    return [np.concatenate(p) for p in pooled], np.concatenate(cls)


@torch.no_grad()
def token_states(encoder: Encoder, data: glue.Encoded, count: int, pad_id: int, batch_size: int,
                 device: str) -> torch.Tensor:
    """The last layer's states of every real token of the first `count` sentences: [n, H]."""
    states = []
    for start in range(0, min(count, len(data)), batch_size):
        rows = range(start, min(start + batch_size, count, len(data)))
        input_ids, segment_ids, attention_mask = data.batch(rows, pad_id, device)
        h = encoder.hidden_states(input_ids, segment_ids, attention_mask)  # [B, T, H]
        states.append(h[attention_mask.bool()].cpu())  # [B, T, H] -> [tokens, H]
    return torch.cat(states)


def probe_accuracy(x_train, y_train, x_dev, y_dev) -> float:
    """Dev accuracy in percent of a logistic regression trained on (x_train, y_train), with the
    features standardised by the training rows' mean and standard deviation."""
    probe = make_pipeline(StandardScaler(),
                          LogisticRegression(C=PROBE_C, max_iter=PROBE_MAX_ITER))
    probe.fit(x_train, y_train)
    return 100.0 * probe.score(x_dev, y_dev)


# -----------------------------------------------------------------------------
# A run and its twin


def encoders(run: Path, draws: int = 1) -> tuple[dict[str, Encoder], evaluate.Scored]:
    """The run's encoder ("pretrained") and `draws` draws of random weights of its config: its
    twin ("random", draw 0), then "random 1", ... (sst2_check.random_twin's draws), all in eval
    mode; and what evaluate.load_run loaded (the whole Electra, its tokenizer, where it came
    from)."""
    try:
        scored = evaluate.load_run(run)
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"error: {e}") from None
    saved = plumbing.load_checkpoint(run / TRAIN_CHECKPOINT, "--init")
    found = {"pretrained": scored.model.fine_tuning_encoder().eval()}
    for draw in range(draws):
        name = "random" if draw == 0 else f"random {draw}"
        found[name] = sst2_check.random_twin(saved, draw).fine_tuning_encoder().eval()
    return found, scored


def measure(encoder: Encoder, train: glue.Encoded, dev: glue.Encoded, pad_id: int,
            args: argparse.Namespace, name: str) -> dict:
    """The probes' dev accuracies (per layer, mean-pooled; the last layer's [CLS]) and the mean
    cosine of the last layer's token states, for one encoder."""
    encoder = encoder.to(args.device)
    x_train, cls_train = pooled_features(encoder, train, pad_id, args.batch_size, args.device,
                                         f"{name}: train")
    x_dev, cls_dev = pooled_features(encoder, dev, pad_id, args.batch_size, args.device,
                                     f"{name}: dev")
    mean_pooled = [probe_accuracy(a, train.labels, b, dev.labels) for a, b in zip(x_train, x_dev)]
    h = token_states(encoder, dev, args.cosine_sentences, pad_id, args.batch_size, args.device)
    return {"mean_pooled": mean_pooled,
            "cls_last": probe_accuracy(cls_train, train.labels, cls_dev, dev.labels),
            "mean_cos": mean_cosine(h)}


def mean_of_draws(draws: list[dict]) -> dict:
    """The zero point of several draws of random weights: each measure averaged over the draws.

    >>> mean_of_draws([{"mean_pooled": [60.0, 62.0], "cls_last": 58.0, "mean_cos": 0.3},
    ...                {"mean_pooled": [64.0, 61.0], "cls_last": 60.0, "mean_cos": 0.4}])
    {'mean_pooled': [62.0, 61.5], 'cls_last': 59.0, 'mean_cos': 0.35}
    """
    return {"mean_pooled": np.mean([d["mean_pooled"] for d in draws], axis=0).tolist(),
            "cls_last": float(np.mean([d["cls_last"] for d in draws])),
            "mean_cos": float(np.mean([d["mean_cos"] for d in draws]))}


def probe_run(run: Path, train_rows: list[glue.Example], dev_rows: list[glue.Example],
              args: argparse.Namespace) -> dict:
    """Every measure for the run folder `run` and for each draw of random weights ("draws"), and
    the draws' mean ("random": the twin's measures when there is one draw)."""
    found, scored = encoders(run, args.draws)
    tok = scored.tokenizer
    train = glue.encode_examples(train_rows, tok, finetune.MAX_SEQ_LEN)
    dev = glue.encode_examples(dev_rows, tok, finetune.MAX_SEQ_LEN)
    has_d = scored.model.discriminator is not None
    row = {"init": str(run), "source": scored.source, "objective": scored.model.config.objective,
           "encoder": "discriminator" if has_d else "masked LM"}
    row["pretrained"] = measure(found.pop("pretrained"), train, dev, tok.pad_id, args,
                                f"{run} pretrained")
    row["draws"] = [measure(encoder, train, dev, tok.pad_id, args, f"{run} {name}")
                    for name, encoder in found.items()]
    row["random"] = mean_of_draws(row["draws"])
    return row


# -----------------------------------------------------------------------------
# The table and the command line


def format_table(results: dict) -> str:
    """One markdown table per run: each measure, pre-trained beside random weights (with several
    draws, their mean [min-max])."""
    lines = [f"SST-2 linear probes on frozen states: {results['train_rows']:,} training rows, dev "
             f"accuracy on {results['dev_rows']:,} rows; mean cosine of the last layer's token "
             f"states over {results['cosine_sentences']} dev sentences"]
    for r in results["runs"]:
        pre = r["pretrained"]
        rnd = r["random"]
        last = len(pre["mean_pooled"]) - 1
        names = ["layer 0 (embeddings), mean-pooled"]
        names += [f"layer {layer}, mean-pooled" for layer in range(1, last + 1)]
        draws = r["draws"]
        # each row's values per draw: the layers' mean-pooled probes, then [CLS], then the cosine
        per_draw = [d["mean_pooled"] + [d["cls_last"], d["mean_cos"]] for d in draws]
        values = zip(pre["mean_pooled"] + [pre["cls_last"], pre["mean_cos"]],
                     rnd["mean_pooled"] + [rnd["cls_last"], rnd["mean_cos"]], zip(*per_draw))
        names.append(f"layer {last}, [CLS]")
        names.append(f"mean cosine, layer {last} tokens")
        random_header = "random weights"
        if len(draws) > 1:
            random_header += f", {len(draws)} draws: mean [min-max]"
        lines += ["",
                  f"| {r['init']} ({r['encoder']}) | pre-trained | {random_header} | difference |",
                  "|---|---:|---:|---:|"]
        for name, (a, b, each) in zip(names, values):
            digits = 3 if name.startswith("mean cosine") else 2
            random = f"{b:.{digits}f}"
            if len(draws) > 1:
                random += f" [{min(each):.{digits}f}-{max(each):.{digits}f}]"
            lines.append(f"| {name} | {a:.{digits}f} | {random} | {a - b:+.{digits}f} |")
    return "\n".join(lines)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--init", action="append", required=True, metavar="RUN",
                   help="a train.py run folder (ckpt.pt, vocab.txt); repeat for several")
    cli.add_flag(p, "data_dir", help=f"SST-2's folder: train.tsv, dev.tsv (default: GLUE's "
                                          f"SST-2, downloaded once into {glue.DEFAULT_CACHE})")
    cli.add_flag(p, "max_train_examples", type=int, default=TRAIN_ROWS,
                      help="the probe trains on the first N rows of train.tsv (default "
                           "%(default)s)")
    cli.add_flag(p, "cosine_sentences", type=int, default=COSINE_SENTENCES,
                      help="dev sentences whose last-layer token states give the mean cosine "
                           "(default %(default)s)")
    cli.add_flag(p, "batch_size", type=int, default=BATCH_SIZE,
                      help="sentences per forward pass (default %(default)s)")
    p.add_argument("--draws", type=int, default=1,
                   help="draws of random weights as the zero point, seeded with the run's seed + "
                        "0, 1, ... as sst2_check.py's (draw 0 is the twin) (default %(default)s)")
    p.add_argument("--device", default="cpu", help="default %(default)s")
    p.add_argument("--out", default="runs/probe.json", help="the results (default %(default)s)")
    args = p.parse_args(argv)
    for flag in ("max_train_examples", "cosine_sentences", "batch_size", "draws"):
        if getattr(args, flag) < 1:
            raise SystemExit(f"--{flag.replace('_', '-')} must be at least 1")
    for init in args.init:
        if not (Path(init) / TRAIN_CHECKPOINT).is_file():
            raise SystemExit(f"--init {init}: no {TRAIN_CHECKPOINT} there; pass a train.py run "
                             f"folder (its --out)")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    task = glue.get_task(TASK)
    try:
        folder = glue.task_folder(task, args.data_dir, glue.DEFAULT_CACHE, glue.GLUE_BASE_URL,
                                  glue.MRPC_BASE_URL)
        train_rows = glue.read_split(task, folder, "train", args.max_train_examples)
        dev_rows = glue.read_split(task, folder, "dev")
    except (FileNotFoundError, ValueError, plumbing.DownloadError) as e:
        raise SystemExit(f"error: {e}") from None
    if len({e.label for e in train_rows}) < 2:
        raise SystemExit(f"the first {len(train_rows)} rows of {folder / 'train.tsv'} hold one "
                         f"label only: raise --max-train-examples")
    runs = [probe_run(Path(init), train_rows, dev_rows, args) for init in args.init]
    results = {"task": TASK,
               "data_dir": str(folder),
               "train_rows": len(train_rows),
               "dev_rows": len(dev_rows),
               "cosine_sentences": min(args.cosine_sentences, len(dev_rows)),
               "max_seq_len": finetune.MAX_SEQ_LEN,
               "runs": runs}
    plumbing.atomic_write(Path(args.out), json.dumps(results, indent=2) + "\n")
    print(format_table(results))
    return results


if __name__ == "__main__":
    main()
