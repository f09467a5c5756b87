"""Peak memory and step time of the ELECTRA objective against the BERT objective, across sequence
lengths.

    python bench/seq_len_memory.py                    # a GPU: size small, batch 32, seq 128 256 512
    python bench/seq_len_memory.py --device cpu --batch 8 --steps 3

Both objectives are electra.py's, with the same discriminator size (ElectraConfig.objective
"electra": the small generator + the discriminator; "bert": one masked LM of the discriminator's
size, Table 1's baseline). A step is forward + backward + fused AdamW with train.py's precision,
as bench/train_step.py times it, on random full-length sequences. Each (objective, length) runs in
its own subprocess so that its peak memory (CUDA: max_memory_allocated; CPU: the growth of the
peak resident set) is its own.

Writes a table to stdout, the numbers to --out .json and a two-panel plot to --out .png.
"""
import argparse
import importlib.util
import json
import os
import resource
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch

import electra
import train
from support import plumbing

# bench/train_step.py's config and batch builders (loaded by path: bench/ is not a package, and
# bench/tokenizer.py would shadow the top-level tokenizer module if bench/ were put on sys.path)
_spec = importlib.util.spec_from_file_location("bench_train_step",
                                               Path(__file__).with_name("train_step.py"))
train_step = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(train_step)

OBJECTIVES = ("electra", "bert")  # the paper's main comparison (Table 1)
# 128: the paper's pre-training length for Small/Base; 512: BERT's positions
SEQ_LENS = (128, 256, 512)


def run_one(size: str, objective: str, seq: int, batch: int, steps: int, warmup: int,
            device) -> dict:
    """Time one (objective, sequence length) in this process: steps/s, tokens/s, peak MiB,
    parameters."""
    device = torch.device(device)
    torch.manual_seed(0)
    cfg = replace(train_step.make_config(size, seq), objective=objective,
                  max_position=max(seq, 512))
    model = electra.Electra(cfg).to(device)
    x, s, a = train_step.make_batch(cfg, batch, seq, device)
    cuda = device.type == "cuda"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
    _, autocast = plumbing.mixed_precision(device, "auto")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=train.ADAM_BETAS, eps=train.ADAM_EPS,
                            fused=True)

    def step():
        with autocast:
            loss = model(x, s, a).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), train.TrainConfig.clip_norm)
        opt.step()
        opt.zero_grad(set_to_none=True)

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    for _ in range(warmup):
        step()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    peak_mib = (torch.cuda.max_memory_allocated() / 2**20 if cuda
                else (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024)
    return {"objective": objective, "seq": seq, "batch": batch, "steps_per_s": steps / seconds,
            "tokens_per_s": steps * batch * seq / seconds, "peak_mib": peak_mib,
            "params": sum(p.numel() for p in model.parameters()),
            "device": (torch.cuda.get_device_name(device) if cuda
                       else f"cpu, {torch.get_num_threads()} threads")}


def plot(results: list[dict], path: Path, title: str):
    """Two panels against sequence length: peak memory and steps/s, one line per objective."""
    from matplotlib.figure import Figure  # its own canvas: no pyplot, no global backend switch

    fig = Figure(figsize=(9, 3.5))
    axes = fig.subplots(1, 2)
    for objective in OBJECTIVES:
        rows = [r for r in results if r["objective"] == objective]
        for ax, key in zip(axes, ("peak_mib", "steps_per_s")):
            ax.plot([r["seq"] for r in rows], [r[key] for r in rows], marker="o", label=objective)
    for ax, label in zip(axes, ("peak memory (MiB)", "steps/s")):
        ax.set(xlabel="sequence length", ylabel=label, xscale="log",
               xticks=[r["seq"] for r in results])
        ax.set_xticklabels([str(r["seq"]) for r in results])
        # a log axis would otherwise label 2x10^2, 3x10^2... between the lengths
        ax.minorticks_off()
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=120)
    os.replace(tmp, path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    cuda = torch.cuda.is_available()
    p.add_argument("--size", default="small", choices=list(electra.SIZES),
                   help="the discriminator's size")
    p.add_argument("--seq", type=int, nargs="+", default=list(SEQ_LENS))
    p.add_argument("--batch", type=int, default=32 if cuda else 8)
    p.add_argument("--steps", type=int, default=20 if cuda else 3, help="timed steps per point")
    p.add_argument("--warmup", type=int, default=3 if cuda else 1, help="untimed steps first")
    p.add_argument("--device", default="cuda" if cuda else "cpu")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (torch.set_num_threads)")
    p.add_argument("--out", default="bench/seq_len_memory", help="writes OUT.json and OUT.png")
    # a child's point
    p.add_argument("--one", nargs=2, metavar=("OBJECTIVE", "SEQ"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.one:
        print(json.dumps(run_one(args.size, args.one[0], int(args.one[1]), args.batch, args.steps,
                                 args.warmup, args.device)))
        return None

    print(f"one pre-training step, discriminator size {args.size}, batch {args.batch}, "
          f"on {args.device}: {args.warmup} warm-up + {args.steps} timed steps per point")
    results = []
    base = list(argv if argv is not None else sys.argv[1:])
    for seq in args.seq:
        for objective in OBJECTIVES:
            results.append(train_step.run_point(
                [sys.executable, __file__, *base, "--one", objective, str(seq)],
                f"{objective} at seq {seq}"))
    print(f"device: {results[0]['device']}")
    print(f"{'objective':9} {'seq':>5} {'params':>11} {'steps/s':>9} {'tokens/s':>11} "
          f"{'peak MiB':>9}")
    for r in results:
        print(f"{r['objective']:9} {r['seq']:5} {r['params']:11,} {r['steps_per_s']:9.2f} "
              f"{r['tokens_per_s']:11,.0f} {r['peak_mib']:9.0f}")
    for seq in args.seq:
        e, b = (next(r for r in results if r["objective"] == o and r["seq"] == seq)
                for o in OBJECTIVES)
        print(f"seq {seq}: ELECTRA / BERT = {e['peak_mib'] / max(b['peak_mib'], 1e-9):.2f}x "
              f"the peak memory, {e['steps_per_s'] / b['steps_per_s']:.2f}x the steps/s")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    plot(results, out.with_suffix(".png"),
         f"ELECTRA vs BERT objective, size {args.size}, batch {args.batch}, "
         f"{results[0]['device']}")
    print(f"wrote {out.with_suffix('.json')}, {out.with_suffix('.png')}")
    return results


if __name__ == "__main__":
    main()
