"""One joint ELECTRA pre-training step: ours (electra.py) against the same step built from
HuggingFace's ElectraForMaskedLM (generator) + ElectraForPreTraining (discriminator).

    python bench/train_step.py                         # CPU: size tiny, batch 32, seq 128
    python bench/train_step.py --size small --batch 128 --seq 128 --compile   # a GPU
    python bench/train_step.py --size small --compile --cuda-graphs   # also ours with CUDA graphs

Both sides get the same config, the same weights (copied with hf.to_hf_state_dicts), shared
embeddings (HF: the generator uses the discriminator's embedding module, as ELECTRA ties them),
the same batch and the same masks and samples: the HF step reuses electra.py's mask_positions /
mask_tokens / sample / mlm_loss / disc_loss with the same seed, so only the networks differ. A
step is forward + backward + fused AdamW, with train.py's precision (bf16 autocast on GPUs with
native bf16, fp32 elsewhere). Before timing, one step with dropout off checks that both sides
compute the same loss.

Each variant runs in its own subprocess so that peak memory (CUDA: max_memory_allocated; CPU:
the growth of the peak resident set) belongs to it alone. Prints steps/s, tokens/s (batch x seq
per step), peak memory and, on CUDA, MFU from report.flops_per_step and the GPU's peak
(report.GPU_PEAK_TFLOPS, or --peak-tflops), and the hours 1M steps (ELECTRA-Small's run) would
take at that speed; --json PATH writes the same figures for bench/gpu_check.sh.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch

import electra
import train
from support import (
    hf,
    plumbing,
    report,
)


def make_config(size: str, seq: int) -> electra.ElectraConfig:
    cfg = electra.get_config(size)  # its vocab size; BERT's special ids: pad 0, [CLS] 101, ...
    return replace(cfg, max_predictions=int((cfg.mask_prob + train.MASK_SLACK) * seq))


def make_batch(cfg, batch: int, seq: int, device):
    """Random full-length [CLS] A [SEP] B [SEP] sequences: ids [B, T], segments, mask."""
    g = torch.Generator().manual_seed(0)
    x = torch.randint(1000, cfg.vocab_size, (batch, seq), generator=g)
    x[:, 0], x[:, seq // 2], x[:, -1] = cfg.cls_id, cfg.sep_id, cfg.sep_id
    s = torch.zeros_like(x)
    s[:, seq // 2 + 1:] = 1
    return x.to(device), s.to(device), torch.ones_like(x).to(device)


class HFElectra(torch.nn.Module):
    """HF generator + discriminator with shared embeddings, run through electra.py's step
    functions."""

    def __init__(self, ours: electra.Electra, attn: str):
        super().__init__()
        from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining
        self.config = ours.config
        disc_sd, gen_sd = hf.to_hf_state_dicts(ours)
        self.disc = ElectraForPreTraining(ElectraConfig(**hf.hf_config_dict(ours.config),
                                                        attn_implementation=attn))
        self.gen = ElectraForMaskedLM(
            ElectraConfig(**hf.hf_config_dict(ours.config, generator=True),
                          attn_implementation=attn))
        self.disc.load_state_dict(disc_sd, strict=False)
        self.gen.load_state_dict(gen_sd, strict=False)
        self.gen.electra.embeddings = self.disc.electra.embeddings  # ELECTRA shares the embeddings
        # tied output
        self.gen.generator_lm_head.weight = self.disc.electra.embeddings.word_embeddings.weight

    def forward(self, x, segment_ids, attention_mask, rng=None):
        cfg = self.config
        m, m_valid = electra.mask_positions(x, attention_mask, cfg, rng)
        x_masked = electra.mask_tokens(x, m, m_valid, cfg, rng)
        logits_all = self.gen(input_ids=x_masked, token_type_ids=segment_ids,
                              attention_mask=attention_mask).logits
        # [B, K, V]
        logits_G = logits_all.gather(1, m[..., None].expand(-1, -1, logits_all.shape[-1]))
        x_m = x.gather(1, m)
        l_mlm = electra.mlm_loss(logits_G, x_m, m_valid)
        x_hat = electra.sample(logits_G, cfg.temperature, rng)
        x_corrupt = electra.replace(x, m, torch.where(m_valid, x_hat, x_m))
        # [B, T], HF scores "replaced"
        logits_replaced = self.disc(input_ids=x_corrupt, token_type_ids=segment_ids,
                                    attention_mask=attention_mask).logits
        l_disc = electra.disc_loss(-logits_replaced, x_corrupt == x, attention_mask)
        return electra.electra_loss(l_mlm, l_disc, cfg.lam)


def set_up_step(args):
    """(one joint step as a function, the loss with dropout off) for args.variant on
    args.device, with train.py's precision, TF32 and fused AdamW; compiled with args.compile.
    bench/gpu_profile.py profiles the same step."""
    device = torch.device(args.device)
    torch.manual_seed(0)
    cfg = make_config(args.size, args.seq)
    ours = electra.Electra(cfg)
    model = ours if args.variant == "ours" else HFElectra(ours, args.hf_attn)
    model.to(device)
    x, s, a = make_batch(cfg, args.batch, args.seq, device)
    loss_of = (lambda out: out.loss) if args.variant == "ours" else (lambda out: out)

    # Same weights, same masks: with dropout off the two sides must compute the same loss. Checked
    # in full fp32 (no TF32, no autocast), where the two agree to rounding; timed below as train.py
    # runs.
    model.eval()
    with torch.no_grad():
        check_loss = loss_of(model(x, s, a, rng=torch.Generator(device).manual_seed(1))).item()
    model.train()
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    _, autocast = plumbing.mixed_precision(device, "auto")
    if args.compile:
        model.compile(mode=args.mode)
    graphs = args.compile and args.mode == "reduce-overhead"
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=train.ADAM_BETAS, eps=train.ADAM_EPS,
                            fused=True)
    # timed steps draw from the global RNG, as train.py does (no graph breaks under compile)
    torch.manual_seed(2)

    def step():
        if graphs:  # a new iteration: the last replay's outputs may be overwritten
            torch.compiler.cudagraph_mark_step_begin()
        with autocast:
            loss = loss_of(model(x, s, a))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), train.TrainConfig.clip_norm)
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step, check_loss


def run_variant(args) -> dict:
    """Time one variant in this process and return its numbers."""
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    cfg = make_config(args.size, args.seq)
    step, check_loss = set_up_step(args)

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    if cuda:
        # the peak over warm-up and timed steps: CUDA graphs take their memory pool while warming
        # up, and a reset after warm-up would leave it out
        torch.cuda.reset_peak_memory_stats()
    for _ in range(args.warmup):
        step()
    if cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    steps_per_s = args.steps / seconds
    if cuda:
        peak_mib = torch.cuda.max_memory_allocated() / 2**20
    else:
        peak_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    peak = report.peak_flops(device, args.peak_tflops)
    flops = report.flops_per_step(cfg, args.batch, args.seq)
    how = ({"default": " compiled", "reduce-overhead": " CUDA graphs"}[args.mode]
           if args.compile else "")
    return {"variant": args.variant + how, "check_loss": check_loss,
            "steps_per_s": steps_per_s, "tokens_per_s": steps_per_s * args.batch * args.seq,
            "peak_mib": peak_mib,
            "mfu": flops * steps_per_s / peak if peak else None,
            "device": (torch.cuda.get_device_name(device) if cuda
                       else f"cpu, {torch.get_num_threads()} threads")}


def run_point(cmd: list[str], what: str) -> dict:
    """Run one benchmark point in its own process, so that its peak memory is its own; the JSON
    line it prints last is its result."""
    done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ)
    if done.returncode != 0:
        raise SystemExit(f"{what} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    cuda = torch.cuda.is_available()
    p.add_argument("--size", default="small" if cuda else "tiny", choices=list(electra.SIZES))
    p.add_argument("--batch", type=int, default=128 if cuda else 32)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=50 if cuda else 10, help="timed steps per variant")
    p.add_argument("--warmup", type=int, default=10 if cuda else 2,
                   help="untimed steps first (and compilation)")
    p.add_argument("--device", default="cuda" if cuda else "cpu")
    p.add_argument("--compile", action="store_true",
                   help="also time both sides under torch.compile")
    p.add_argument("--cuda-graphs", action="store_true",
                   help="with --compile, also time ours compiled with CUDA graphs "
                        "(mode='reduce-overhead'): a small model's step is launch-bound")
    p.add_argument("--hf-attn", default="sdpa", help="HF attention implementation: sdpa or eager")
    p.add_argument("--peak-tflops", type=float, default=None, help="accelerator peak, for MFU")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (torch.set_num_threads)")
    p.add_argument("--json", default=None, metavar="PATH",
                   help="also write the results there (JSON)")
    # set for the subprocesses
    p.add_argument("--variant", choices=["ours", "hf"], help=argparse.SUPPRESS)
    # torch.compile's, for the subprocesses
    p.add_argument("--mode", default="default", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.variant:  # a child: time one variant, print its JSON
        print(json.dumps(run_variant(args)))
        return None

    print(f"one joint G+D step, size {args.size}, batch {args.batch}, seq {args.seq}, "
          f"on {args.device}: {args.warmup} warm-up + {args.steps} timed steps per variant")
    setting = {"size": args.size, "batch": args.batch, "seq": args.seq, "steps": args.steps,
               "warmup": args.warmup}
    # (variant, torch.compile's mode or None for eager): HF's compiled step last, as its compiling
    # is the slowest
    points = [("ours", None), ("hf", None)]
    if args.compile:
        points.append(("ours", "default"))
        if args.cuda_graphs:
            points.append(("ours", "reduce-overhead"))
        points.append(("hf", "default"))
    results = []
    own = [c for c in (argv if argv is not None else sys.argv[1:])
           if c not in ("--compile", "--cuda-graphs")]
    for variant, mode in points:
        cmd = [sys.executable, __file__, *own, "--variant", variant]
        if mode is not None:
            cmd += ["--compile", "--mode", mode]
        r = run_point(cmd, variant)
        r["hours_1m_steps"] = 1e6 / r["steps_per_s"] / 3600  # ELECTRA-Small's 1M steps
        results.append(r)
        if args.json:  # after each point: a call cut short keeps the points it finished
            Path(args.json).write_text(json.dumps({**setting, "results": results}) + "\n")
    print(f"device: {results[0]['device']}")
    print(f"{'variant':18} {'steps/s':>9} {'tokens/s':>11} {'peak MiB':>9} {'MFU':>7} "
          f"{'1M steps':>9} {'loss (no dropout)':>18}")
    for r in results:
        mfu = f"{r['mfu']:.1%}" if r["mfu"] is not None else "-"
        print(f"{r['variant']:18} {r['steps_per_s']:9.2f} {r['tokens_per_s']:11,.0f} "
              f"{r['peak_mib']:9.0f} {mfu:>7} {r['hours_1m_steps']:8.1f}h {r['check_loss']:18.5f}")
    for ours in results:
        if not ours["variant"].startswith("ours"):
            continue
        # against HF's step eager or compiled, as ours is (CUDA graphs: against HF compiled)
        compiled = ours["variant"] != "ours"
        hf = next((r for r in results if r["variant"] == ("hf compiled" if compiled else "hf")),
                  None)
        if hf is None:
            continue
        ours["speedup_vs_hf"] = ours["steps_per_s"] / hf["steps_per_s"]
        print(f"{ours['variant']} / {hf['variant']}: "
              f"{ours['steps_per_s'] / hf['steps_per_s']:.2f}x the steps/s, "
              f"{ours['peak_mib'] / max(hf['peak_mib'], 1e-9):.2f}x the peak memory")
        if abs(ours["check_loss"] - hf["check_loss"]) > 1e-3 * max(1.0, abs(hf["check_loss"])):
            print(f"WARNING: the losses differ ({ours['check_loss']} vs {hf['check_loss']}): "
                  "not the same step")
    if args.size == "small" and args.batch == 128 and args.seq == 128:
        best = max(r["steps_per_s"] for r in results if r["variant"].startswith("ours"))
        print(f"ELECTRA-Small, 1M steps at {best:.1f} steps/s: {1e6 / best / 3600:.1f} hours "
              f"(the paper: 4 days on a V100)")
    if args.json:
        Path(args.json).write_text(json.dumps({**setting, "results": results}) + "\n")
    return results


if __name__ == "__main__":
    main()
