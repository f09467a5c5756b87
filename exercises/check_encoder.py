"""Part 1's checks: the encoder (exercises 1-5).

Each check_* takes the student's module and raises AssertionError with the first failing case;
answer_key() stores the project's outputs on the checks' inputs in
exercises/reference/encoder.pt (python exercises/answer_key.py).

The checks of Block.forward and Encoder.hidden_states replace the submodules they call
(attention, embeddings, blocks) by the stubs below, whose outputs are known, so those two
exercises can be graded before exercises 2-4 are written."""
import math

import torch
import torch.nn as nn

from electra import ElectraConfig  # the configuration only: every graded piece is the student's
from exercises.harness import Exercise, assert_close, member, reference

PART = "encoder"

# A model small enough to check by hand: two heads of width d = 8, an embedding of width 8 that
# the encoder projects to 16 (G's case, Sec. 3.2), and no dropout (outputs are compared).
TINY = dict(vocab_size=50, embedding_size=8, hidden_size=16, num_layers=2, num_heads=2,
            intermediate_size=32, max_position=16, dropout=0.0, attention_dropout=0.0,
            fast_attention=False)


def tiny_config(**changed) -> ElectraConfig:
    return ElectraConfig(**{**TINY, **changed})


# The random inputs of the answer key: batch 2, length 5; the second row's last two tokens are
# padding, so its keep mask is [T, T, T, F, F].
B, T = 2, 5
ATTENTION_MASK = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])


def _keep(attention_mask):
    return attention_mask.bool()[:, None, None, :]  # [B, 1, 1, T]


class StubAttention(nn.Module):
    """Stands in for Block.attn: a fixed function of h that also reads keep, so a block that
    forgets to pass keep on gives another answer. h: [B, T, H]; keep: [B, 1, 1, T]."""

    def forward(self, h, keep):
        return 0.5 * h.roll(1, dims=-1) + keep[:, 0, 0, :, None].to(h.dtype)


class StubEmbeddings(nn.Module):
    """Stands in for Encoder.embeddings: e[b, t, j] = id + 0.5 segment + 0.01 j, width `width`."""

    def __init__(self, width: int):
        super().__init__()
        self.width = width

    def forward(self, input_ids, segment_ids):
        j = torch.arange(self.width, dtype=torch.float32)
        return (input_ids[..., None].float() + 0.5 * segment_ids[..., None].float()
                + 0.01 * j)  # [B, T, width]


class StubBlock(nn.Module):
    """Stands in for block i of Encoder.layers: h -> 2 h + (i + 1), and remembers the keep mask it
    was given. Two blocks in order give 2 (2 h + 1) + 2 = 4 h + 4; in reverse, 4 h + 5."""

    def __init__(self, i: int):
        super().__init__()
        self.i = i
        self.keep = None

    def forward(self, h, keep):
        self.keep = keep
        return 2 * h + (self.i + 1)


def _stub_encoder(encoder: nn.Module, config: ElectraConfig) -> nn.Module:
    encoder.embeddings = StubEmbeddings(config.embedding_size)
    encoder.layers = nn.ModuleList(StubBlock(i) for i in range(config.num_layers))
    return encoder


def _randomize(module: nn.Module, std: float, seed: int) -> None:
    """Every parameter N(0, std), LayerNorm's weight near 1: weights the checks did not choose, so
    a piece used in the wrong place shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if isinstance(module.get_submodule(name.rsplit(".", 1)[0]), nn.LayerNorm) \
                    and name.endswith("weight"):
                p.copy_(1 + 0.3 * noise)
            else:
                p.copy_(std * noise)


def answer_key() -> dict:
    """The project's encoder pieces on the checks' random inputs, with the weights they ran with."""
    from electra import (  # the answer key: the project's own code
        Block,
        Embeddings,
        Encoder,
        SelfAttention,
        attention_reference,
    )

    config = tiny_config()
    g = torch.Generator().manual_seed(0)
    keep = _keep(ATTENTION_MASK)
    key = {}

    # 1: q, k, v [B, heads, T, d]
    q, k, v = (torch.randn(B, 2, T, 8, generator=g) for _ in range(3))
    key["attention_reference"] = {"q": q, "k": k, "v": v, "keep": keep,
                                  "y": attention_reference(q, k, v, keep, nn.Dropout(0.0))}

    # 2: weights large enough that each query attends to a few keys, not to all alike
    attn = SelfAttention(config).eval()
    _randomize(attn, 0.5, seed=1)
    h = torch.randn(B, T, 16, generator=g)
    with torch.no_grad():
        key["SelfAttention"] = {"state": attn.state_dict(), "h": h, "y": attn(h, keep)}

    # 3: the block with StubAttention in place of its attention
    block = Block(config).eval()
    block.attn = StubAttention()
    _randomize(block, 0.3, seed=2)
    h = torch.randn(B, T, 16, generator=g)
    with torch.no_grad():
        key["Block"] = {"state": block.state_dict(), "h": h, "y": block(h, keep)}

    # 4: embeddings, with both segments and random LayerNorm weights
    emb = Embeddings(config).eval()
    _randomize(emb, 1.0, seed=3)
    ids = torch.randint(0, 50, (B, 7), generator=g)
    seg = torch.randint(0, 2, (B, 7), generator=g)
    with torch.no_grad():
        key["Embeddings"] = {"state": emb.state_dict(), "input_ids": ids, "segment_ids": seg,
                             "y": emb(ids, seg)}

    # 5: embedding 8 != hidden 16, so the projection runs between the stubs
    enc = _stub_encoder(Encoder(config), config).eval()
    _randomize(enc, 0.3, seed=4)
    ids = torch.randint(1, 50, (B, T), generator=g)
    seg = torch.randint(0, 2, (B, T), generator=g)
    with torch.no_grad():
        key["Encoder"] = {"state": enc.state_dict(), "input_ids": ids, "segment_ids": seg,
                          "attention_mask": ATTENTION_MASK,
                          "y": enc.hidden_states(ids, seg, ATTENTION_MASK)}
    return key


# -----------------------------------------------------------------------------
# 1. attention_reference


def check_attention_reference(student) -> None:
    attention = member(student, "attention_reference")
    identity = nn.Dropout(0.0)
    # One row of two queries over two keys, d = 4 so sqrt(d) = 2. k0 = [1, 0, 0, 0], k1 = 0;
    # v0 = [4, 0, 0, 0], v1 = [0, 4, 0, 0].
    # Query 0 = [2 ln 3, 0, 0, 0]: scores [2 ln 3 / 2, 0] = [ln 3, 0], softmax [3/4, 1/4],
    # output 3/4 v0 + 1/4 v1 = [3, 1, 0, 0]. Query 1 = 0: scores [0, 0], output [2, 2, 0, 0].
    q = torch.tensor([[2 * math.log(3), 0, 0, 0], [0, 0, 0, 0]]).view(1, 1, 2, 4)
    k = torch.tensor([[1., 0, 0, 0], [0, 0, 0, 0]]).view(1, 1, 2, 4)
    v = torch.tensor([[4., 0, 0, 0], [0, 4, 0, 0]]).view(1, 1, 2, 4)
    both = torch.tensor([True, True]).view(1, 1, 1, 2)
    want = torch.tensor([[3., 1, 0, 0], [2, 2, 0, 0]]).view(1, 1, 2, 4)
    assert_close(attention(q, k, v, both, identity), want,
                 "two real keys, scores q.k / sqrt(d) = [[ln 3, 0], [0, 0]] (softmax over the "
                 "keys, per query)")
    # Key 1 is padding: it gets zero weight, so both queries read v0 alone.
    first = torch.tensor([True, False]).view(1, 1, 1, 2)
    want = torch.tensor([[4., 0, 0, 0], [4, 0, 0, 0]]).view(1, 1, 2, 4)
    assert_close(attention(q, k, v, first, identity), want,
                 "key 1 is padding (keep [True, False] masks keys, not queries): every query "
                 "reads v0")

    # With v = the identity matrix the output is the attention weights themselves: each row sums
    # to 1 and puts 0 on padding keys.
    g = torch.Generator().manual_seed(5)
    q, k = torch.randn(2, 3, 6, 8, generator=g), torch.randn(2, 3, 6, 8, generator=g)
    keep = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]]).bool()[:, None, None, :]
    p = attention(q, k, torch.eye(6).expand(2, 3, 6, 6), keep, identity)
    assert_close(p.sum(-1), torch.ones(2, 3, 6), "attention weights (v = identity): row sums")
    assert bool((p >= 0).all()), "attention weights (v = identity) must be >= 0"
    assert_close(p[1, :, :, 4:], torch.zeros(3, 6, 2),
                 "attention weights on padding keys (row 1, keys 4-5)", atol=1e-7, rtol=0)

    # Dropout acts on the attention weights [B, heads, T, T], before they multiply v (as BERT).
    class Recorder(nn.Module):
        def forward(self, x):
            self.seen = x
            return x * (torch.arange(x.shape[-1]) % 2 == 0)  # drops every odd key

    drop = Recorder()
    v = torch.randn(2, 3, 6, 8, generator=g)
    y = attention(q, k, v, keep, drop)
    seen = getattr(drop, "seen", None)
    assert seen is not None and tuple(seen.shape) == (2, 3, 6, 6), \
        "apply dropout to the attention weights [B, heads, T, T] (for T = 6, d = 8 it got " \
        f"{None if seen is None else tuple(seen.shape)})"
    assert_close(seen.sum(-1), torch.ones(2, 3, 6),
                 "the tensor given to dropout must be the softmax's weights: its row sums")
    assert_close(y, (p * (torch.arange(6) % 2 == 0)) @ v,
                 "output with a dropout that zeroes odd keys: dropout(weights) @ v")

    # A query whose keys are all padding: the masked scores must stay finite (the dtype's minimum,
    # not -inf, whose softmax is 0/0 = nan).
    none = torch.zeros(1, 1, 1, 6, dtype=torch.bool)
    y = attention(q[:1], k[:1], torch.eye(6).expand(1, 3, 6, 6), none, identity)
    assert bool(torch.isfinite(y).all()), \
        "every key is padding: the output must be finite (fill with torch.finfo(dtype).min, " \
        "not -inf)"

    # The answer key: random q, k, v [2, 2, 5, 8] with the second row's last two keys padding.
    # float32 in another order of operations differs in the last digits: atol 1e-5.
    key = reference(PART)["attention_reference"]
    assert_close(attention(key["q"], key["k"], key["v"], key["keep"], identity), key["y"],
                 "random q, k, v [2, 2, 5, 8], keys 3-4 of row 1 padding, against the answer key")


# -----------------------------------------------------------------------------
# 2. SelfAttention.forward


def check_self_attention(student) -> None:
    cls = member(student, "SelfAttention")
    member(student, "SelfAttention.forward")
    config = tiny_config()
    attn = cls(config).eval()
    key = reference(PART)["SelfAttention"]
    attn.load_state_dict(key["state"])
    H = config.hidden_size
    # One token: it attends to itself alone (weight 1), so the output is out(v), with
    # v = h W_v^T + b_v from the last third of qkv (Q, K, V in that order).
    g = torch.Generator().manual_seed(6)
    h1 = torch.randn(3, 1, H, generator=g)
    with torch.no_grad():
        got = attn(h1, torch.ones(3, 1, 1, 1, dtype=torch.bool))
        v = h1 @ attn.qkv.weight[2 * H:].T + attn.qkv.bias[2 * H:]
        want = v @ attn.out.weight.T + attn.out.bias
    assert_close(got, want, "one token (it attends to itself alone): out(V), V the last third "
                            "of qkv(h)")
    # Padding keys are invisible: changing h at row 1's padding positions (3-4) must not change
    # the outputs at its real positions.
    keep = _keep(ATTENTION_MASK)
    h = key["h"]
    h2 = h.clone()
    h2[1, 3:] = torch.randn(2, H, generator=g)
    with torch.no_grad():
        y, y2 = attn(h, keep), attn(h2, keep)
    assert_close(y2[1, :3], y[1, :3], "row 1's real positions when its padding tokens change "
                                      "(padding keys get no weight)")
    # The answer key: h [2, 5, 16], 2 heads of d = 8. float32 in another order: atol 1e-5.
    assert_close(y, key["y"], "h [2, 5, 16] with 2 heads, keys 3-4 of row 1 padding, against "
                              "the answer key")


# -----------------------------------------------------------------------------
# 3. Block.forward


def _hand_block(cls):
    """A block of width 4 with StubAttention: LayerNorms the identity, FFN weights all zero."""
    config = tiny_config(hidden_size=4, num_heads=2, intermediate_size=4)
    block = cls(config).eval()
    block.attn = StubAttention()
    with torch.no_grad():
        for lin in (block.fc1, block.fc2):
            lin.weight.zero_()
            lin.bias.zero_()
    return block


def check_block(student) -> None:
    cls = member(student, "Block")
    member(student, "Block.forward")
    keep1 = torch.ones(1, 1, 1, 1, dtype=torch.bool)
    # FFN = 0 (zero weights, GELU(0) = 0). h = [0, 0, 0, 2]: Attn(h) = 0.5 roll(h) + 1 =
    # [2, 1, 1, 1]; h + Attn(h) = [2, 1, 1, 3]: mean 1.75, deviations [.25, -.75, -.75, 1.25],
    # variance 2.75 / 4 = 0.6875, std 0.829156 -> LN = [0.301511, -0.904534, -0.904534, 1.507557];
    # the second LN(x + 0) leaves it as it is.
    block = _hand_block(cls)
    with torch.no_grad():
        got = block(torch.tensor([[[0., 0, 0, 2]]]), keep1)
    assert_close(got, torch.tensor([[[0.301511, -0.904534, -0.904534, 1.507557]]]),
                 "h = [0, 0, 0, 2], Attn(h) = [2, 1, 1, 1], FFN = 0: LN(h + Attn(h)) (post-LN, "
                 "with the residual)", atol=1e-5, rtol=0)
    # The FFN alone: h = 0, Attn(h) = [1, 1, 1, 1], LN([1, 1, 1, 1]) = 0, so FFN's input is 0;
    # fc1 = 0 with bias [-3, 0, 1, 2], fc2 = the identity. GELU(x) = x Phi(x) (erf form):
    # GELU(-3) = -3 x 0.0013499 = -0.0040497, GELU(0) = 0, GELU(1) = 0.8413447,
    # GELU(2) = 2 x 0.9772499 = 1.9544997; mean 0.6979487, variance 0.6448543, std 0.8030282 ->
    # LN = [-0.874189, -0.869146, 0.178569, 1.564766]. tanh's approximation of GELU is off by
    # 3e-4 here, 30 times the tolerance.
    with torch.no_grad():
        block.fc1.bias.copy_(torch.tensor([-3., 0, 1, 2]))
        block.fc2.weight.copy_(torch.eye(4))
        got = block(torch.zeros(1, 1, 4), keep1)
    assert_close(got, torch.tensor([[[-0.874189, -0.869146, 0.178569, 1.564766]]]),
                 "h = 0, FFN(0) = fc2(GELU([-3, 0, 1, 2])) with the exact (erf) GELU: "
                 "LN(0 + FFN)", atol=1e-5, rtol=0)
    # The answer key: random weights (LayerNorms too), h [2, 5, 16], the same StubAttention.
    # float32 LayerNorm outputs in another order differ by ~1e-6: atol and rtol 1e-5.
    key = reference(PART)["Block"]
    block = cls(tiny_config()).eval()
    block.attn = StubAttention()
    block.load_state_dict(key["state"])
    with torch.no_grad():
        got = block(key["h"], _keep(ATTENTION_MASK))
    assert_close(got, key["y"], "random block weights, h [2, 5, 16], Attn = StubAttention, "
                                "against the answer key", atol=1e-5, rtol=1e-5)


# -----------------------------------------------------------------------------
# 4. Embeddings.forward


def check_embeddings(student) -> None:
    cls = member(student, "Embeddings")
    member(student, "Embeddings.forward")
    # Width 4, LayerNorm the identity. word[3] = [0, 0, 0, 1]; position 0 = [0, 0, 0, 3],
    # position 1 = [1, 0, 0, 1]; segment 0 = 0, segment 1 = [0, 0, 2, 0].
    emb = cls(tiny_config(embedding_size=4, vocab_size=5, max_position=4)).eval()
    with torch.no_grad():
        for table in (emb.word, emb.position, emb.segment):
            table.weight.zero_()
        emb.word.weight[3] = torch.tensor([0., 0, 0, 1])
        emb.position.weight[0] = torch.tensor([0., 0, 0, 3])
        emb.position.weight[1] = torch.tensor([1., 0, 0, 1])
        emb.segment.weight[1] = torch.tensor([0., 0, 2, 0])
        got = emb(torch.tensor([[3, 3], [3, 3]]), torch.tensor([[0, 0], [1, 1]]))
    # Row 0: [0, 0, 0, 4] -> mean 1, deviations [-1, -1, -1, 3] / sqrt(3); [1, 0, 0, 2] -> mean
    # 0.75, deviations [.25, -.75, -.75, 1.25] / sqrt(0.6875). Row 1 (segment 1): [0, 0, 2, 4]
    # and [1, 0, 2, 2], whose deviations are the same numbers in another order.
    a, b, c, d = 0.577350, 1.732051, 0.301511, 0.904534
    want = torch.tensor([[[-a, -a, -a, b], [c, -d, -d, 1.507557]],
                         [[-d, -d, c, 1.507557], [-c, -1.507557, d, d]]])
    assert_close(got, want, "ids [[3, 3], [3, 3]], segments [[0, 0], [1, 1]]: LN(word + "
                            "position (from 0) + segment)", atol=1e-5, rtol=0)
    # The answer key: random tables and LayerNorm weights, ids [2, 7] over both segments.
    # float32 in another order: atol and rtol 1e-5.
    key = reference(PART)["Embeddings"]
    emb = cls(tiny_config()).eval()
    emb.load_state_dict(key["state"])
    with torch.no_grad():
        got = emb(key["input_ids"], key["segment_ids"])
    assert_close(got, key["y"], "random weights, ids [2, 7], against the answer key",
                 atol=1e-5, rtol=1e-5)
    # Dropout comes last: with p = 0.5 in training mode each entry is 0 or twice the eval output,
    # and about half are 0 (4 x 16 x 8 = 512 entries: 0.35-0.65 is more than 6 standard
    # deviations of the fraction, 0.022, from 0.5).
    emb = cls(tiny_config(dropout=0.5))
    emb.load_state_dict(key["state"])
    g = torch.Generator().manual_seed(7)
    ids, seg = torch.randint(0, 50, (4, 16), generator=g), torch.randint(0, 2, (4, 16), generator=g)
    torch.manual_seed(0)
    with torch.no_grad():
        train = emb.train()(ids, seg)
        clean = emb.eval()(ids, seg)
    zero = train == 0
    assert 0.35 <= zero.float().mean() <= 0.65, \
        f"dropout 0.5 in training mode: expected about half the entries 0, got " \
        f"{zero.float().mean():.2f} (apply self.drop last)"
    assert_close(train[~zero], 2 * clean[~zero], "dropout 0.5 in training mode: the entries "
                 "kept are twice the eval output (dropout after the LayerNorm)")


# -----------------------------------------------------------------------------
# 5. Encoder.hidden_states


def check_encoder(student) -> None:
    cls = member(student, "Encoder")
    member(student, "Encoder.hidden_states")
    # embedding_size == hidden_size: no projection. Stub embeddings e = id + 0.5 seg + 0.01 j,
    # two stub blocks h -> 2 h + 1, then h -> 2 h + 2: the output is 4 e + 4.
    config = tiny_config(embedding_size=16)
    enc = _stub_encoder(cls(config), config).eval()
    ids, seg = torch.tensor([[5, 7, 9]]), torch.tensor([[0, 1, 0]])
    mask = torch.tensor([[1, 1, 0]])
    with torch.no_grad():
        got = enc.hidden_states(ids, seg, mask)
    e = torch.tensor([5., 7.5, 9])[:, None] + 0.01 * torch.arange(16)  # [T, 16]
    assert_close(got, (4 * e + 4)[None], "ids [[5, 7, 9]], embeddings e, blocks h -> 2h + 1 "
                 "then h -> 2h + 2 (in order: 4e + 4; in reverse it would be 4e + 5)")
    for block in enc.layers:
        keep = block.keep
        assert torch.is_tensor(keep) and tuple(keep.shape) == (1, 1, 1, 3), \
            f"block {block.i} must get keep [B, 1, 1, T] = (1, 1, 1, 3), got " \
            f"{None if keep is None else tuple(keep.shape)}"
        assert keep.dtype == torch.bool, \
            f"keep must be bool (a float mask is added to the scores), got {keep.dtype}"
        assert keep.flatten().tolist() == [True, True, False], \
            f"attention_mask [[1, 1, 0]]: keep is True on real tokens, got " \
            f"{keep.flatten().tolist()}"
    # A keep given by the caller (electric.py's one-sided towers) reaches every block as it is.
    given = torch.tensor([[[[True, False, False], [True, True, False], [True, True, True]]]])
    with torch.no_grad():
        enc.hidden_states(ids, seg, mask, keep=given)
    for block in enc.layers:
        assert block.keep is not None and torch.equal(block.keep, given), \
            f"hidden_states(..., keep=K) must hand K [1, 1, 3, 3] to block {block.i} unchanged"
    # The answer key: embedding 8 != hidden 16 (G's case), so the 8-wide embeddings are projected
    # to 16 before the blocks. float32 in another order: atol 1e-5, rtol 1e-4.
    config = tiny_config()
    key = reference(PART)["Encoder"]
    enc = _stub_encoder(cls(config), config).eval()
    enc.load_state_dict(key["state"])
    with torch.no_grad():
        got = enc.hidden_states(key["input_ids"], key["segment_ids"], key["attention_mask"])
    assert_close(got, key["y"], "embedding_size 8, hidden_size 16 (project the embeddings "
                 "before the blocks), against the answer key")


EXERCISES = [
    Exercise(1, "attention_reference", PART, 4, check_attention_reference),
    Exercise(2, "SelfAttention.forward", PART, 5, check_self_attention, needs=(1,)),
    Exercise(3, "Block.forward", PART, 4, check_block),
    Exercise(4, "Embeddings.forward", PART, 3, check_embeddings),
    Exercise(5, "Encoder.hidden_states", PART, 4, check_encoder),
]
