"""torch.profiler over the joint ELECTRA step that bench/train_step.py times (ours: G + D, forward,
backward, clip and fused AdamW, train.py's precision), to see where a step's time goes.

    python bench/gpu_profile.py --out profile.txt            # a GPU: small, batch 128, seq 128
    python bench/gpu_profile.py --compile --out profile.txt  # the same, under torch.compile
    python bench/gpu_profile.py --device cpu --size tiny --batch 2 --seq 32 --steps 2 --warmup 1

Writes two top-N tables (by device time on a GPU, by CPU time on a CPU): per operator, then per
operator and input shape. The second shows where G's V-way softmax runs: on [B*K, V], the masked
positions only (K = max_predictions), not on [B*T, V].
"""
import argparse
import importlib.util
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

# bench/train_step.py's step (loaded by path: bench/ is not a package, and bench/tokenizer.py would
# shadow the top-level tokenizer module if bench/ were put on sys.path)
_spec = importlib.util.spec_from_file_location("bench_train_step",
                                               Path(__file__).with_name("train_step.py"))
train_step = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(train_step)


def main(argv=None) -> str:
    cuda = torch.cuda.is_available()
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", default="small" if cuda else "tiny")
    p.add_argument("--batch", type=int, default=128 if cuda else 8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=20, help="profiled steps")
    p.add_argument("--warmup", type=int, default=10, help="unprofiled steps first (compilation)")
    p.add_argument("--device", default="cuda" if cuda else "cpu")
    p.add_argument("--compile", action="store_true", help="profile the torch.compile'd step")
    p.add_argument("--rows", type=int, default=20, help="rows of each table")
    p.add_argument("--out", default=None, help="write the tables there (text)")
    args = p.parse_args(argv)
    args.variant = "ours"
    args.mode = "default"  # torch.compile's, with --compile
    args.hf_attn = "sdpa"
    device = torch.device(args.device)
    step, _ = train_step.set_up_step(args)
    for _ in range(args.warmup):
        step()
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    with profile(activities=activities, record_shapes=True) as prof:
        for _ in range(args.steps):
            step()
        sync()
    seconds = time.perf_counter() - start
    sort_by = "cuda_time_total" if device.type == "cuda" else "cpu_time_total"
    events = prof.key_averages()
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    ms = seconds / args.steps * 1e3
    how = "compiled" if args.compile else "eager"
    head = (f"{args.steps} joint steps of ELECTRA-{args.size}, batch {args.batch}, "
            f"seq {args.seq}, {how}, on {name}: {ms:.1f} ms per step under the profiler (it adds "
            f"overhead; bench/train_step.py times without it)")
    # Each table is written as soon as it is made, so that a run cut short by gpu_check.sh's time
    # limit still leaves the tables made so far.
    text = "\n\n".join([head, f"top {args.rows} operators by {sort_by}:",
                         events.table(sort_by=sort_by, row_limit=args.rows)])
    print(text, flush=True)
    if args.out:
        Path(args.out).write_text(text + "\n")
    by_shape = prof.key_averages(group_by_input_shape=True)
    second = "\n\n".join([f"top {args.rows} (operator, input shapes) by {sort_by}:",
                           by_shape.table(sort_by=sort_by, row_limit=args.rows)])
    print("\n" + second)
    text += "\n\n" + second
    if args.out:
        Path(args.out).write_text(text + "\n")
    return text


if __name__ == "__main__":
    main()
