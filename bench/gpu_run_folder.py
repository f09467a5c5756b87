"""A train.py run folder from the discriminator `bench/gpu_check.sh --run` brings back, so that
the CPU machine can fine-tune it (experiments/sst2_check.py, with its random-weights twin) and
evaluate it (evaluate.py) as any run of its own.

    cat gpu_out/discriminator.tar.part-* | tar x -C runs/gpu_small
    python bench/gpu_run_folder.py runs/gpu_small --size small

The step is the checkpoint's, from discriminator/step.txt (gpu_check.sh writes it beside the
export; --step for an export without it).

The GPU machine cannot send back the run's checkpoint (G, D and Adam's moments: ~170 MB), only
D in HuggingFace's layout (~54 MB in 15 MiB parts). This writes RUN/ckpt.pt and RUN/vocab.txt
from RUN/discriminator/: D's weights as trained (hf.from_hf_state_dicts undoes the sign flip),
the ElectraConfig train.py builds for --size and the vocabulary, the TrainConfig train.py
resolves from the same flags (so its seed, and sst2_check's twin, are the run's), an optimizer
with no state and the step given. G keeps random weights: fine-tuning uses D alone, and nothing
here may read G's numbers as trained ones (evaluate.py's generator metrics would be G at its
initialisation).
"""
import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import train
from support import (
    hf,
    plumbing,
)
from tokenizer import Tokenizer


def main(argv=None) -> Path:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", help="the folder holding discriminator/ (config.json, "
                               "model.safetensors, vocab.txt)")
    p.add_argument("--step", type=int,
                   help="the update D was exported at (default: discriminator/step.txt)")
    p.add_argument("--size", required=True, help="the run's train.py --size")
    p.add_argument("--seed", type=int, default=train.TrainConfig.seed,
                   help="the run's train.py --seed (default %(default)s)")
    args = p.parse_args(argv)
    run = Path(args.run)
    folder = run / "discriminator"
    if not (folder / "model.safetensors").is_file():
        raise SystemExit(f"{folder}: no model.safetensors; unpack the parts first: "
                         f"cat gpu_out/discriminator.tar.part-* | tar x -C {run}")
    step = args.step
    if step is None:
        step_file = folder / "step.txt"
        if not step_file.is_file():
            raise SystemExit(f"{step_file}: not there (an export older than gpu_check.sh's "
                             f"step.txt): give the update D was exported at with --step")
        step = int(step_file.read_text())
    vocab = folder / "vocab.txt"
    flags = ["--size", args.size, "--seed", str(args.seed), "--vocab", str(vocab),
             "--out", str(run)]
    cfg = train.parse_config(flags)
    tok = Tokenizer.load(vocab)
    mc = train.model_config(cfg, tok)
    model = hf.from_hf_state_dicts(mc, hf.read_weights(folder))
    optimizer = train.build_optimizer(model, cfg, fused=False)
    state = train.checkpoint(model, optimizer, step, cfg, tok.hash(), rng=[])
    (run / "vocab.txt").write_bytes(vocab.read_bytes())
    plumbing.write_checkpoint(run / hf.TRAIN_CHECKPOINT, state)
    print(f"{run / hf.TRAIN_CHECKPOINT}: D at step {step:,} of --size {args.size}, "
          f"seed {args.seed}; G at its random initialisation")
    return run / hf.TRAIN_CHECKPOINT


if __name__ == "__main__":
    main()
