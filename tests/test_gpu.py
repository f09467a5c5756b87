"""The CUDA path on a real GPU: bf16 on tensor cores, the fused attention kernel, TF32, pinned
memory, NCCL, torch.compile with CUDA graphs, exact resume. Skipped without a GPU (CI);
bench/gpu_check.sh runs them on one. Each compares the GPU path with the reference it replaces,
within the tolerance that the precision it changes allows (stated at each comparison)."""
import copy
import json
import random
import socket
from pathlib import Path

import numpy as np
import pytest
import torch

import train
from electra import Electra, get_config
from support import plumbing
from tokenizer import train as train_vocab

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")

CUDA = torch.device("cuda")
LR = 1e-3  # AdamW's lr in the step tests: large enough that a wrong gradient shows in the weights


def small_config(**kw):
    """ELECTRA-Small's widths (hidden 256, 4 heads of 64, FFN 1024: tensor-core shapes) at 2 layers
    and a 1,000-piece vocabulary, dropout off so that two paths compute the same function."""
    return get_config("small", vocab_size=1000, num_layers=2, dropout=0.0, attention_dropout=0.0,
                      **kw)


def make_batch(B=8, T=128, seed=0):
    """[CLS] tokens [SEP] then padding, rows of different lengths: input_ids, segment_ids and
    attention_mask, [B, T] each."""
    cfg = small_config()
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(200, cfg.vocab_size, (B, T), generator=g)
    n = torch.tensor([T, T - 8, T - 28, T // 2, T, T - 38, T - 51, T][:B])  # real tokens per row
    pos = torch.arange(T)[None, :]
    x[:, 0] = cfg.cls_id
    x = torch.where(pos == n[:, None] - 1, cfg.sep_id, x)
    x = torch.where(pos < n[:, None], x, cfg.pad_id)
    segment_ids = ((pos >= T // 2) & (pos < n[:, None])).long()
    attention_mask = (pos < n[:, None]).long()
    return x.to(CUDA), segment_ids.to(CUDA), attention_mask.to(CUDA)


@pytest.fixture
def tf32_off():
    """fp32 matmuls in full fp32 for the test (the reference side), the flags restored after."""
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def one_update(model, params, opt, batch) -> float:
    """One update as train.py takes it: the loss of `model` (maybe wrapped: DDP, compiled), its
    backward, the clip on `params` (the unwrapped model), the fused AdamW step; returns the loss."""
    loss = model(*batch).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params.parameters(), train.TrainConfig.clip_norm)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss.item()


def rng(seed):
    return torch.Generator(CUDA).manual_seed(seed)


# ----------------------------------------------------------------------------- precision


def test_bf16_autocast_on_tensor_cores_matches_fp32(tf32_off):
    """train.py's default on this GPU is bf16 autocast: the Linear layers run in bf16 on the tensor
    cores, the masks and samples stay the same, and the losses (computed in fp32) agree with a full
    fp32 step to bf16's precision. Temperature 1e4 makes the samples independent of G's logits (the
    Gumbel noise decides), so that a logit rounded differently cannot flip a sample."""
    precision, autocast = plumbing.mixed_precision(CUDA, "auto")
    native = torch.cuda.is_bf16_supported(including_emulation=False)
    assert precision == ("bf16" if native else "fp32")
    if precision != "bf16":
        pytest.skip("this GPU has no native bf16 (pre-Ampere): train.py runs it in fp32")
    torch.manual_seed(0)
    model = Electra(small_config(temperature=1e4)).to(CUDA).eval()
    x, s, a = make_batch()
    with torch.no_grad():
        ref = model(x, s, a, rng=rng(1))
        ref_logits = model.discriminator(ref.x_corrupt, s, a)
        with autocast:
            out = model(x, s, a, rng=rng(1))
            logits = model.discriminator(ref.x_corrupt, s, a)
            linear = model.discriminator.head(torch.randn(2, 256, device=CUDA))
            assert linear.dtype == torch.bfloat16
    assert torch.equal(out.x_masked, ref.x_masked) and torch.equal(out.x_corrupt, ref.x_corrupt)
    assert out.loss.dtype == torch.float32
    # bf16 keeps 8 bits of mantissa, 0.4% per rounding; the means over 1,000 tokens average it out
    # (a CPU's bf16 autocast: 7e-5 relative)
    for name in ("mlm_loss", "disc_loss", "loss"):
        got, want = getattr(out, name).item(), getattr(ref, name).item()
        assert got == pytest.approx(want, rel=5e-3), name
    real = a.bool()
    err = (logits.float() - ref_logits)[real].abs().max().item()
    scale = ref_logits[real].abs().max().item()
    # changed (bf16 really ran), but only by rounding (a CPU's bf16: 1% of the largest logit)
    assert 0 < err <= 0.05 * scale, (err, scale)


def test_tf32_on_and_off_agree_to_tf32_precision(tf32_off):
    """train.py turns TF32 on for the fp32 matmuls left outside autocast (train.set_up; that it
    does is checked in test_exact_resume_on_cuda): on the tensor cores they then round their
    inputs to 10 bits of mantissa. The discriminator's logits with TF32 on differ from full fp32
    (it is on), by at most TF32's rounding."""
    torch.manual_seed(0)
    model = Electra(small_config()).to(CUDA).eval()
    x, s, a = make_batch()
    with torch.no_grad():
        full = model.discriminator(x, s, a)
        torch.backends.cuda.matmul.allow_tf32 = True  # as train.set_up on a GPU
        torch.backends.cudnn.allow_tf32 = True
        tf32 = model.discriminator(x, s, a)
    real = a.bool()
    err = (tf32 - full)[real].abs().max().item()
    scale = full[real].abs().max().item()
    # TF32 keeps 10 bits of mantissa to bf16's 7: 8x finer than the 1% a CPU's bf16 gives above
    assert 0 < err <= 0.02 * scale, (err, scale)


# ----------------------------------------------------------------------------- attention


def test_fused_attention_matches_the_hand_written_reference_on_cuda(tf32_off):
    """fast_attention=True (F.scaled_dot_product_attention) against attention_reference, with
    padding, on CUDA: in fp32 the same step to rounding (loss and every gradient); in bf16 the
    fused memory-efficient kernel (the one that takes our padding mask; flash attention takes
    none) runs, and lands as close to the fp32 result as the hand-written attention in bf16."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.manual_seed(0)
    fast = Electra(small_config(fast_attention=True)).to(CUDA)
    slow = Electra(small_config(fast_attention=False)).to(CUDA)
    slow.load_state_dict(fast.state_dict())
    x, s, a = make_batch()
    outs = []
    for model in (fast, slow):
        out = model(x, s, a, rng=rng(1))
        out.loss.backward()
        outs.append((out.loss.item(), {n: p.grad for n, p in model.named_parameters()}))
    (loss_fast, grads_fast), (loss_slow, grads_slow) = outs
    assert loss_fast == pytest.approx(loss_slow, rel=1e-5)
    for name, g in grads_fast.items():  # fp32 sums in another order: ~1e-6 relative
        torch.testing.assert_close(g, grads_slow[name], rtol=1e-3, atol=1e-5, msg=name)

    real = a.bool()
    with torch.no_grad():
        ref = slow.discriminator.hidden_states(x, s, a)[real]  # fp32, hand-written
        with torch.autocast("cuda", dtype=torch.bfloat16):
            with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):  # fails if it cannot take the mask
                h_fast = fast.discriminator.hidden_states(x, s, a)[real]
            h_slow = slow.discriminator.hidden_states(x, s, a)[real]
    err_fast = (h_fast.float() - ref).abs().max().item()
    err_slow = (h_slow.float() - ref).abs().max().item()
    assert err_fast <= 2 * err_slow + 1e-2, (err_fast, err_slow)


# ----------------------------------------------------------------------------- data to the GPU


def test_pinned_memory_non_blocking_copies_arrive_whole():
    """train.py copies a batch through pinned memory without waiting for the copy
    (plumbing.to_device). The pinned buffer is its own copy: overwriting the numpy batch right
    after the call (as the next batch would) cannot reach the GPU's, and after a synchronize every
    value is there."""
    rs = np.random.default_rng(0)
    sent, kept = [], []
    for _ in range(20):  # copies queued back to back, behind GPU work
        batch = [rs.integers(0, 30522, (128, 128)), rs.integers(0, 2, (128, 128)),
                 rs.random((128, 128)) < 0.9]  # input_ids, segment_ids, attention_mask
        kept.append([b.copy() for b in batch])
        on_gpu = plumbing.to_device(batch, CUDA)
        _ = on_gpu[0].float().sum()
        for b in batch:
            b[...] = 0  # the caller reuses its arrays
        sent.append(on_gpu)
    torch.cuda.synchronize()
    for on_gpu, original in zip(sent, kept):
        assert [t.device.type for t in on_gpu] == ["cuda"] * 3
        for t, b in zip(on_gpu, original):
            assert np.array_equal(t.cpu().numpy(), b)


# ----------------------------------------------------------------------------- DDP over NCCL


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nccl_ddp_with_one_process_equals_the_plain_step(tf32_off):
    """train.py under torchrun wraps the model in DDP over NCCL. With one process the all-reduce
    averages one gradient: two updates through DDP equal two without it (same masks: the global
    RNG is seeded alike before each)."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    assert dist.is_nccl_available()
    torch.manual_seed(0)
    plain = Electra(small_config()).to(CUDA)
    wrapped = copy.deepcopy(plain)
    initial = copy.deepcopy(plain.state_dict())
    x, s, a = make_batch()
    address = f"tcp://127.0.0.1:{free_port()}"
    dist.init_process_group("nccl", init_method=address, rank=0, world_size=1)
    try:
        ddp = DistributedDataParallel(wrapped, device_ids=[CUDA.index or 0])
        losses = []
        for model, params in ((plain, plain), (ddp, wrapped)):
            opt = torch.optim.AdamW(params.parameters(), lr=LR, fused=True)
            for step in range(2):
                torch.manual_seed(10 + step)
                losses.append(one_update(model, params, opt, (x, s, a)))
    finally:
        dist.destroy_process_group()
    assert losses[:2] == losses[2:]
    for (name, p), q in zip(plain.named_parameters(), wrapped.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-6, msg=name)
    assert not torch.equal(plain.state_dict()["discriminator.head.weight"],
                           initial["discriminator.head.weight"])  # and they did train


# ----------------------------------------------------------------------------- torch.compile


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_compile_with_and_without_cuda_graphs_matches_eager(tf32_off, mode):
    """Compiling changes the speed, not the numbers: three updates (forward, backward, clip, fused
    AdamW) give the eager losses, compiled as train.py does under DDP and --grad-accum (mode
    default) and by default on one GPU, with CUDA graphs (mode reduce-overhead: one launch for a
    whole graph, for a small, launch-bound model), which must not be skipped. fallback_random
    draws the masks and samples from torch's generator as eager code does (inductor's own would
    give other masks, equally random)."""
    import torch._inductor.config
    from torch._dynamo.utils import counters

    torch.manual_seed(0)
    eager = Electra(small_config()).to(CUDA)
    compiled = copy.deepcopy(eager)
    x, s, a = make_batch()
    counters.clear()
    losses = {}
    with torch._inductor.config.patch(fallback_random=True):
        forward = torch.compile(compiled, mode=None if mode == "default" else mode)
        for name, model, params in (("eager", eager, eager), ("compiled", forward, compiled)):
            opt = torch.optim.AdamW(params.parameters(), lr=LR, fused=True)
            losses[name] = []
            for step in range(3):
                torch.compiler.cudagraph_mark_step_begin()  # a new iteration: outputs reusable
                torch.manual_seed(10 + step)
                losses[name].append(one_update(model, params, opt, (x, s, a)))
    # fused kernels sum in another order: fp32 rounding, grown over three updates
    assert losses["compiled"] == pytest.approx(losses["eager"], rel=1e-4)
    for (name, p), q in zip(eager.named_parameters(), compiled.parameters()):
        torch.testing.assert_close(q, p, rtol=1e-3, atol=1e-5, msg=name)
    if mode == "reduce-overhead":
        assert counters["inductor"]["cudagraph_skips"] == 0, "CUDA graphs were skipped"


# ----------------------------------------------------------------------------- exact resume

TINY = ["--size", "tiny", "--seq-len", "32", "--batch-size", "8", "--lr", "3e-3", "--warmup", "5",
        "--set", "hidden_size=64", "--set", "embedding_size=64", "--set", "num_layers=1",
        "--set", "num_heads=1", "--set", "intermediate_size=128", "--eval-fraction", "0.1",
        "--eval-batches", "2", "--device", "cuda", "--log-interval", "1",
        "--eval-interval", "1000"]
WORDS = ["the cat", "a dog", "the old man", "my sister", "sees", "likes", "finds", "the red ball",
         "a small house", "the river"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """(corpus folder, vocab.txt, cache folder): sentences of three phrases, one a line; a blank
    line between paragraphs."""
    root = tmp_path_factory.mktemp("gpu_train")
    r = random.Random(0)

    def sentence():
        return " ".join(r.choice(WORDS) for _ in range(3)) + " ."

    paragraphs = ["\n".join(sentence() for _ in range(r.randint(3, 8))) for _ in range(120)]
    (root / "corpus").mkdir()
    (root / "corpus" / "a.txt").write_text("\n\n".join(paragraphs) + "\n")
    tok = train_vocab(paragraphs, vocab_size=60, progress=False)
    tok.save(root / "vocab.txt")
    return root / "corpus", root / "vocab.txt", root / "cache"


def run(corpus, out, *extra):
    folder, vocab, cache = corpus
    return train.main(["--data", str(folder), "--vocab", str(vocab), "--cache-dir", str(cache),
                       "--out", str(out), *TINY, *extra])


def rows(out):
    lines = (Path(out) / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["split"] == "train"]


def test_exact_resume_on_cuda(corpus, tmp_path):
    """A run stopped at update 4 and resumed continues as an uninterrupted one on the GPU: the CUDA
    generator's state (masks, samples, dropout) comes back from the checkpoint, and the data order
    and the schedule are functions of the step. The comparison allows what two uninterrupted runs
    differ by (a kernel that adds with atomics may round differently run to run; none if none
    does): a resume that lost the RNG state differs by far more. Eager (--no-compile): the
    compiled path is compared with eager below."""
    run(corpus, tmp_path / "a", "--steps", "10", "--no-compile")
    run(corpus, tmp_path / "a2", "--steps", "10", "--no-compile")
    run(corpus, tmp_path / "b", "--steps", "10", "--stop-at", "4", "--no-compile")
    result = train.main(["--out", str(tmp_path / "b"), "--resume", "--cache-dir", str(corpus[2]),
                         "--device", "cuda", "--log-interval", "1", "--eval-interval", "1000",
                         "--no-compile"])
    assert result["step"] == 10 and next(result["model"].parameters()).is_cuda
    # train.set_up turned TF32 on for the fp32 matmuls outside autocast
    assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
    a, a2, b = rows(tmp_path / "a"), rows(tmp_path / "a2"), rows(tmp_path / "b")
    assert [r["step"] for r in a] == [r["step"] for r in b] == list(range(1, 11))
    for key in ("loss", "mlm_loss", "disc_loss", "grad_norm"):
        noise = max(abs(r[key] - r2[key]) for r, r2 in zip(a, a2))
        for ra, rb in zip(a, b):
            assert abs(ra[key] - rb[key]) <= 10 * noise, (ra["step"], key, ra[key], rb[key], noise)
    assert [r["lr"] for r in a] == [r["lr"] for r in b]
    saved = [torch.load(tmp_path / p / "ckpt.pt", weights_only=True) for p in ("a", "b")]
    assert saved[0]["step"] == saved[1]["step"] == 10
    # the same number of draws from the same seed: the generators end in the same state
    rng_a, rng_b = (c["rng"][0] for c in saved)
    assert torch.equal(rng_a["torch"], rng_b["torch"])
    assert len(rng_a["cuda"]) == torch.cuda.device_count() > 0
    assert all(torch.equal(u, v) for u, v in zip(rng_a["cuda"], rng_b["cuda"]))


def test_train_py_with_cuda_graphs_equals_eager(corpus, tmp_path, capsys):
    """train.py's default on one GPU, torch.compile with CUDA graphs (each update one replay of the
    compiled step), logs the eager run's (--no-compile) losses: ten updates in fp32, masks and
    samples drawn from torch's generator on both sides (fallback_random), CUDA graphs not skipped.
    Fused kernels round in another order (TF32 on, as train.py sets it): 1e-3 of the loss; a
    replay that reused stale inputs or outputs, or other masks, moves the loss by far more."""
    import torch._inductor.config
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    common = ("--steps", "10", "--precision", "fp32")
    with torch._inductor.config.patch(fallback_random=True):
        run(corpus, tmp_path / "eager", *common, "--no-compile")
        capsys.readouterr()
        run(corpus, tmp_path / "graphs", *common)  # no flag: the default
    assert "torch.compile with CUDA graphs: the default on one CUDA device" in \
        capsys.readouterr().out
    assert counters["inductor"]["cudagraph_skips"] == 0, "CUDA graphs were skipped"
    eager, graphs = rows(tmp_path / "eager"), rows(tmp_path / "graphs")
    assert [r["step"] for r in graphs] == list(range(1, 11))
    for a, b in zip(eager, graphs):
        for key in ("loss", "mlm_loss", "disc_loss", "grad_norm"):
            assert b[key] == pytest.approx(a[key], rel=1e-3), (a["step"], key)
