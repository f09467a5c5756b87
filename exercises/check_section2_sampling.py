"""Part 2's checks, exercises 6-9: from x to x_hat (mask_positions, mask_tokens,
Generator.logits, sample).

Each check_* takes the student's module and raises AssertionError with the first failing case.
The random steps (6, 7, 9) are checked by worked examples, invariants, counts over many draws and
same-seed determinism, never by equality with the project's draws, so a solution that draws its
random numbers in another order passes. answer_key() stores the project's Generator.logits on
random weights and states (exercise 8), the one deterministic step here."""
import math
from dataclasses import replace as dc_replace

import torch

from electra import ElectraConfig
from exercises.harness import Exercise, assert_close, member, reference

PART = "section2"

# Small vocab ids: [PAD] 0, [CLS] 2, [SEP] 3, [MASK] 4; words from 10 up.
CLS, SEP, MASK, PAD = 2, 3, 4, 0
MASK_CONFIG = ElectraConfig(vocab_size=50, mask_prob=0.15, max_predictions=5, cls_id=CLS,
                            sep_id=SEP, mask_id=MASK, pad_id=PAD)

# Exercise 8's small generator: V = 30, E = 8, Hg = 12 (E != Hg as in ELECTRA-Small's G)
LOGITS_CONFIG = dict(vocab_size=30, embedding_size=8, hidden_size=12, num_layers=1, num_heads=2,
                     intermediate_size=16, max_position=16, dropout=0.0, attention_dropout=0.0)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def answer_key() -> dict:
    """The project's Generator.logits on random weights (every parameter N(0, 0.5), so the
    LayerNorm's scale and shift and the output bias all matter) and random states h at random
    masked positions m: what check_generator_logits compares with."""
    from electra import Generator  # the answer key: the project's own module

    g = _gen(8)
    model = Generator(ElectraConfig(**LOGITS_CONFIG)).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=g))
    B, T, K = 3, 7, 4
    h = torch.randn(B, T, LOGITS_CONFIG["hidden_size"], generator=g)
    m = torch.stack([torch.randperm(T, generator=g)[:K] for _ in range(B)])  # distinct per row
    with torch.no_grad():
        logits = model.logits(h, m)
    return {"Generator.logits": {"config": dict(LOGITS_CONFIG), "state_dict": model.state_dict(),
                                 "h": h, "m": m, "logits": logits}}


# -----------------------------------------------------------------------------
# Exercise 6: mask_positions


def _row(n_real: int, T: int, first_word: int = 10) -> list[int]:
    """[CLS] w w ... [SEP] PAD ..: n_real real tokens, padded to T."""
    return [CLS] + list(range(first_word, first_word + n_real - 2)) + [SEP] + [PAD] * (T - n_real)


def check_mask_positions(student) -> None:
    mask_positions = member(student, "mask_positions")
    # Worked examples of k = max(1, min(K, round(0.15 n))), round half to even:
    #   n = 10 -> round(1.5) = 2;  n = 13 -> round(1.95) = 2;  n = 7 -> round(1.05) = 1;
    #   n = 30 -> round(4.5) = 4 (not 5);  n = 40 -> round(6.0) = 6, capped at max_predictions 5;
    #   n = 3 -> round(0.45) = 0, raised to 1.
    T = 40
    cases = {10: 2, 13: 2, 7: 1, 30: 4, 40: 5, 3: 1}
    x = torch.tensor([_row(n, T) for n in cases])  # [6, 40]
    attn = (x != PAD).long()
    m, m_valid = mask_positions(x, attn, MASK_CONFIG, _gen(0))
    assert tuple(m.shape) == (len(cases), 5) and tuple(m_valid.shape) == (len(cases), 5), \
        f"m and m_valid must be [B, K] = [{len(cases)}, 5] (K = min(max_predictions, T)); " \
        f"got {tuple(m.shape)}, {tuple(m_valid.shape)}"
    assert m.dtype == torch.long and m_valid.dtype == torch.bool, "m must be long and m_valid bool"
    k = m_valid.sum(dim=1).tolist()
    assert k == list(cases.values()), \
        f"k per row for n = {list(cases)} real tokens must be {list(cases.values())} " \
        f"(round(0.15 n), half to even, at least 1, at most max_predictions); got {k}"
    for b, n in enumerate(cases):
        assert m_valid[b].tolist() == [True] * cases[n] + [False] * (5 - cases[n]), \
            f"row {b}: m_valid must be True on the first k slots only; got {m_valid[b].tolist()}"

    # Many draws of one row: chosen positions are real, never special, distinct, and uniform.
    T, draws = 12, 3000
    # a [MASK] and two segments
    x = torch.tensor([[CLS, 10, MASK, 11, 12, 13, SEP, 14, 15, 16, 17, SEP]] * draws)
    attn = torch.ones_like(x)
    m, m_valid = mask_positions(x, attn, MASK_CONFIG, _gen(1))
    chosen = [sorted(m[b][m_valid[b]].tolist()) for b in range(draws)]
    assert all(len(c) == 2 for c in chosen), "n = 12 -> k = round(1.8) = 2 positions per row"
    assert all(len(set(c)) == len(c) for c in chosen), "a row must not mask the same position twice"
    special = {0, 2, 6, 11}  # [CLS], [MASK], [SEP], [SEP]
    bad = sorted({p for c in chosen for p in c if p in special})
    assert not bad, f"positions {bad} hold [CLS]/[SEP]/[MASK] and must never be chosen"
    counts = torch.bincount(torch.tensor([p for c in chosen for p in c]), minlength=T).float()
    candidates = [p for p in range(T) if p not in special]
    expected = draws * 2 / len(candidates)  # 750: each of the 8 candidates equally likely
    # a count of 750 has a standard deviation of about sqrt(750 * 7/8) = 26: 15% (112) is 4 of
    # them, so a uniform draw in any order passes and "always the first candidates" does not
    freq = counts[candidates]
    assert (freq - expected).abs().max() < 0.15 * expected, \
        f"every candidate must be equally likely: counts {freq.tolist()} over {draws} rows, " \
        f"expected ~{expected:.0f} each"

    # Padding is never chosen, and rows with fewer candidates than k get k = the number of
    # candidates: n = 8 -> k = 4; n = 3 -> round(1.5) = 2, but 1 candidate.
    x = torch.tensor([_row(8, 12),
                      [CLS, 10, SEP, PAD, PAD, PAD, PAD, PAD, PAD, PAD, PAD, PAD]] * 200)
    attn = (x != PAD).long()
    cfg = dc_replace(MASK_CONFIG, mask_prob=0.5)
    m, m_valid = mask_positions(x, attn, cfg, _gen(2))
    picked = x.gather(1, m)[m_valid]
    assert (picked != PAD).all() and (picked != CLS).all() and (picked != SEP).all(), \
        "padding, [CLS] and [SEP] must never be chosen"
    assert m_valid[1::2].sum(dim=1).eq(1).all(), \
        "a row with 1 candidate masks 1 position, whatever k says"
    assert m_valid[0::2].sum(dim=1).eq(4).all(), "n = 8, mask_prob 0.5 -> k = 4"

    # The rng: the same seed gives the same masks, another seed other masks.
    x = torch.tensor([_row(20, 20)] * 4)
    attn = torch.ones_like(x)
    a = mask_positions(x, attn, MASK_CONFIG, _gen(3))
    b = mask_positions(x, attn, MASK_CONFIG, _gen(3))
    c = mask_positions(x, attn, MASK_CONFIG, _gen(4))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]), \
        "draw every random number from rng: same seed, same m"
    assert not torch.equal(a[0][a[1]], c[0][c[1]]), "different seeds must give different masks"


# -----------------------------------------------------------------------------
# Exercise 7: mask_tokens


def _five_sigma(p: float, n: int) -> float:
    """Five standard deviations of a share p measured over n independent draws: a correct
    solution fails by chance about once in 3 million."""
    return 5 * math.sqrt(p * (1 - p) / n)


def check_mask_tokens(student) -> None:
    mask_tokens = member(student, "mask_tokens")
    # Worked examples: with mask_token_prob 1 every used slot becomes [MASK] and the unused slot
    # (m_valid False) keeps its token; with 0 nothing changes.
    #   x = [CLS] 7 8 9 [SEP], m = [3, 1, 2], m_valid = [T, T, F] -> [CLS] [MASK] 8 [MASK] [SEP]
    x = torch.tensor([[CLS, 7, 8, 9, SEP]])
    m, m_valid = torch.tensor([[3, 1, 2]]), torch.tensor([[True, True, False]])
    got = mask_tokens(x, m, m_valid, dc_replace(MASK_CONFIG, mask_token_prob=1.0), _gen(0))
    want = [[CLS, MASK, 8, MASK, SEP]]
    assert torch.is_tensor(got), f"return a tensor, got {type(got).__name__}"
    assert got.tolist() == want, \
        f"mask_token_prob 1: x {x.tolist()}, m {m.tolist()}, m_valid {m_valid.tolist()} -> " \
        f"{want} (the unused slot 2 keeps its 8), got {got.tolist()}"
    assert x.tolist() == [[CLS, 7, 8, 9, SEP]], "return a new tensor: x must not change in place"
    got = mask_tokens(x, m, m_valid, dc_replace(MASK_CONFIG, mask_token_prob=0.0), _gen(0))
    assert got.tolist() == x.tolist(), \
        f"mask_token_prob 0: every chosen token is kept, expected {x.tolist()}, got {got.tolist()}"
    _mask_tokens_over_many_rows(mask_tokens)


def _mask_tokens_over_many_rows(mask_tokens) -> None:
    """check_mask_tokens' invariants and counts over many draws."""
    # Many rows: B = 6000 rows of T = 10 distinct words, K = 5 slots with k = 1..5 used (cycling),
    # 18000 used slots in all; m a random order of the positions.
    B, T, K = 6000, 10, 5
    g = _gen(7)
    x = torch.arange(10, 10 + T).repeat(B, 1) + 20 * torch.randint(0, 2, (B, 1), generator=g)
    m = torch.rand(B, T, generator=g).argsort(dim=1)[:, :K]
    m_valid = torch.arange(K)[None, :] < (torch.arange(B) % K + 1)[:, None]  # k = 1, 2, ..., 5
    x_before = x.clone()
    got = mask_tokens(x, m, m_valid, MASK_CONFIG, _gen(1))
    assert torch.equal(x, x_before), "return a new tensor: x must not change in place"
    assert tuple(got.shape) == (B, T) and got.dtype == x.dtype, \
        f"x_masked must have x's shape {(B, T)} and dtype {x.dtype}; got {tuple(got.shape)}, " \
        f"{got.dtype}"
    other = (got != x) & (got != MASK)
    if other.any():
        b, t = (int(i) for i in other.nonzero()[0])
        raise AssertionError(f"row {b}, position {t}: got token {int(got[b, t])}, which is neither "
                             f"[MASK] ({MASK}) nor the original {int(x[b, t])}: ELECTRA never "
                             f"inserts random tokens (that is BERT's 80/10/10)")
    chosen = torch.zeros(B, T, dtype=torch.bool).scatter(1, m, m_valid)  # the used positions
    outside = (got != x) & ~chosen
    if outside.any():
        b, t = (int(i) for i in outside.nonzero()[0])
        used = m[b][m_valid[b]].tolist()
        raise AssertionError(f"row {b}: position {t} changed although only {used} are masked "
                             f"(m's slots where m_valid is False are unused and stay as they are)")
    masked = (got == MASK) & chosen  # [B, T]
    share = masked.sum().item() / chosen.sum().item()
    tol = _five_sigma(0.85, int(chosen.sum()))  # 0.0133 over 18000 slots
    assert abs(share - 0.85) < tol, \
        f"each used slot becomes [MASK] with probability mask_token_prob = 0.85 and keeps its " \
        f"token otherwise: got a share of {share:.4f} over {int(chosen.sum())} slots (expected " \
        f"0.85 +- {tol:.4f})"
    # Each slot on its own: about 85% in every column of m, not a fixed number per row.
    per_slot = masked.gather(1, m)  # [B, K] was slot i made [MASK]
    for i in range(K):
        n = int(m_valid[:, i].sum())
        s = per_slot[:, i][m_valid[:, i]].float().mean().item()
        assert abs(s - 0.85) < _five_sigma(0.85, n), \
            f"slot {i} of m became [MASK] in {s:.4f} of its {n} used cases; each used slot must " \
            f"be masked independently with probability 0.85 (+- {_five_sigma(0.85, n):.4f})"
    # mask_token_prob is read from config (Large keeps the same 0.85; 0.5 here as a probe).
    half = mask_tokens(x, m, m_valid, dc_replace(MASK_CONFIG, mask_token_prob=0.5), _gen(1))
    s = ((half == MASK) & chosen).sum().item() / chosen.sum().item()
    assert abs(s - 0.5) < _five_sigma(0.5, int(chosen.sum())), \
        f"mask_token_prob 0.5 must make half the used slots [MASK]: got {s:.4f} (read " \
        f"config.mask_token_prob)"

    # The rng: same seed, same x_masked; another seed, another.
    a = mask_tokens(x[:50], m[:50], m_valid[:50], MASK_CONFIG, _gen(3))
    b = mask_tokens(x[:50], m[:50], m_valid[:50], MASK_CONFIG, _gen(3))
    c = mask_tokens(x[:50], m[:50], m_valid[:50], MASK_CONFIG, _gen(4))
    assert torch.equal(a, b), "draw every random number from rng: same seed, same x_masked"
    assert not torch.equal(a, c), "different seeds must give different x_masked"


# -----------------------------------------------------------------------------
# Exercise 8: Generator.logits


def check_generator_logits(student) -> None:
    Generator = member(student, "Generator")
    member(student, "Generator.logits")
    # Worked example: V = 3, E = Hg = 2, head = identity, LayerNorm the identity map's
    # (scale 1, shift 0), e(0) = [1, 0], e(1) = [0, 1], e(2) = [2, -1], output bias [0, 0.5, -1].
    # h = [[-3, -0.5], [5, 0], [1, 2]] at positions 0, 1, 2; m = [2, 0].
    #   position 2: GELU([1, 2]) = [0.841, 1.955]; LayerNorm of two numbers is [-1, 1] (the
    #     smaller first): z = [-1, 1]; e^T z = [-1, 1, -3]; + bias = [-1, 1.5, -4]
    #   position 0: GELU([-3, -0.5]) = [-0.004, -0.154] (GELU is not monotone below 0):
    #     z = [1, -1]; e^T z = [1, -1, 3]; + bias = [1, -0.5, 2]
    # Position 1 is not in m and must not appear.
    cfg = ElectraConfig(vocab_size=3, embedding_size=2, hidden_size=2, num_layers=0, num_heads=1,
                        intermediate_size=2, max_position=4, dropout=0.0, attention_dropout=0.0)
    gen = Generator(cfg).eval()
    with torch.no_grad():
        gen.head.weight.copy_(torch.eye(2))
        gen.head.bias.zero_()
        gen.head_ln.weight.fill_(1.0)
        gen.head_ln.bias.zero_()
        gen.embeddings.word.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, -1.0]]))
        gen.output_bias.copy_(torch.tensor([0.0, 0.5, -1.0]))
    h = torch.tensor([[[-3.0, -0.5], [5.0, 0.0], [1.0, 2.0]]])
    m = torch.tensor([[2, 0]])
    got = gen.logits(h, m)
    # LayerNorm of two numbers is +-1 only up to its eps (1e-12) and float32: 1e-4 is ample
    assert_close(got, [[[-1.0, 1.5, -4.0], [1.0, -0.5, 2.0]]],
                 "worked example (h at m = [2, 0] -> dense -> GELU -> LayerNorm -> e^T z + bias; "
                 "logits [B, K, V] at the masked positions only)", atol=1e-4, rtol=0)

    # The answer key: random weights (LayerNorm's scale and shift and the bias too), h and m.
    key = reference(PART)["Generator.logits"]
    gen = Generator(ElectraConfig(**key["config"])).eval()
    unknown = gen.load_state_dict(key["state_dict"], strict=False).unexpected_keys
    assert not unknown, f"your Generator lacks the project's parameters {unknown}: keep the " \
                        f"inherited __init__"
    h = key["h"].clone().requires_grad_(True)
    got = gen.logits(h, key["m"])
    # float32 in another order (a matmul with the transpose, F.linear, gather after the head)
    # differs by ~1e-6 on logits of size ~3
    assert_close(got, key["logits"], "random weights, h [3, 7, 12], m [3, 4]", atol=1e-4,
                 rtol=1e-4)
    # Tied output embedding: the gradient reaches e (the word embedding) and the output bias,
    # whose gradient of sum(logits) is the number of slots B * K = 12 for every token.
    gen.zero_grad()
    got.sum().backward()
    word = gen.embeddings.word.weight.grad
    assert word is not None and word.abs().sum() > 0, \
        "the output layer is the word embedding e (tied): no gradient reached " \
        "embeddings.word.weight"
    bias = gen.output_bias.grad
    assert bias is not None and torch.allclose(bias, torch.full_like(bias, 12.0)), \
        "add output_bias to every logit: the gradient of sum(logits) on each of its entries " \
        f"must be B * K = 12, got {None if bias is None else bias[:4].tolist()}..."
    assert h.grad is not None and h.grad[0].abs().sum(-1).ne(0).sum() == 4, \
        "the logits depend on h at the K = 4 masked positions of each row only"


# -----------------------------------------------------------------------------
# Exercise 9: sample


def check_sample(student) -> None:
    sample = member(student, "sample")
    # No gradient: x_hat is a token id, and D's loss must not flow back into G through it.
    logits = torch.tensor([[0.0, 2.0, 1.0], [1.0, 0.0, 3.0]], requires_grad=True)
    got = sample(logits, 1.0, _gen(0))
    assert torch.is_tensor(got), f"return a tensor of token ids, got {type(got).__name__}"
    assert not got.requires_grad and got.grad_fn is None, \
        "sampling has no gradient (the paper does not back-propagate D's loss through G): " \
        "decorate with @torch.no_grad() or detach"
    assert tuple(got.shape) == (2,) and got.dtype == torch.long, \
        f"logits [2, 3] -> token ids [2] long, got {tuple(got.shape)} {got.dtype}"

    # Worked examples. A logit of -inf has probability exp(-inf) = 0; a logit 100 above the others
    # wins every draw (the Gumbel noise of 3 tokens differs by more than 100 with probability
    # ~e^-100); a tiny temperature is the argmax: logits / 0.001 are 500 apart.
    inf = float("inf")
    n = 2000
    got = sample(torch.tensor([0.0, -inf, 0.0, -inf]).expand(n, 4), 1.0, _gen(1))
    assert tuple(got.shape) == (n,), f"logits [{n}, 4] -> ids [{n}], got {tuple(got.shape)}"
    never = sorted(set(got.tolist()) & {1, 3})
    assert not never, f"logits [0, -inf, 0, -inf]: tokens {never} have probability 0, sampled"
    share = got.eq(0).float().mean().item()
    assert abs(share - 0.5) < _five_sigma(0.5, n), \
        f"logits [0, -inf, 0, -inf]: tokens 0 and 2 are equally likely, token 0 got {share:.3f}"
    got = sample(torch.tensor([0.0, 100.0, 0.0]).expand(n, 3), 1.0, _gen(2))
    assert got.eq(1).all(), "logits [0, 100, 0]: token 1 has probability 1 - 2e^-100"
    got = sample(torch.tensor([1.0, 2.0, 1.5]).expand(n, 3), 0.001, _gen(3))
    assert got.eq(1).all(), "temperature 0.001: logits [1, 2, 1.5] -> always the argmax, 1"

    _sample_frequencies(sample)

    # The rng: same seed, same samples; another seed, others.
    logits = torch.zeros(50, 6)
    a, b = sample(logits, 1.0, _gen(5)), sample(logits, 1.0, _gen(5))
    c = sample(logits, 1.0, _gen(6))
    assert torch.equal(a, b), "draw every random number from rng: same seed, same samples"
    assert not torch.equal(a, c), "different seeds must give different samples"


def _sample_frequencies(sample) -> None:
    """check_sample's frequencies over many draws at temperatures 1 and 2."""
    # Frequencies over many draws: softmax(logits / T).
    #   logits ln[1, 2, 3, 4], T = 1: p = [1, 2, 3, 4] / 10 = [0.1, 0.2, 0.3, 0.4]
    #   T = 2: p ~ sqrt[1, 2, 3, 4] = [1, 1.414, 1.732, 2] / 6.146 = [0.163, 0.230, 0.282, 0.325]
    # in a [N, 2, 4] batch whose second slot has the logits reversed; N = 100000 draws per slot,
    # tolerance 0.008 (5 standard deviations of a share 0.4)
    N = 100_000
    base = torch.log(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    logits = torch.stack([base, base.flip(0)]).expand(N, 2, 4)
    for T, args, p in ((1.0, {}, [0.1, 0.2, 0.3, 0.4]),
                       (2.0, {"temperature": 2.0}, [x / 6.1463 for x in (1, 1.4142, 1.7321, 2)])):
        got = sample(logits, rng=_gen(4), **args)  # T = 1 by default
        assert tuple(got.shape) == (N, 2) and got.dtype == torch.long, \
            f"logits [{N}, 2, 4] -> ids [{N}, 2] long, got {tuple(got.shape)} {got.dtype}"
        for slot, want in ((0, p), (1, p[::-1])):
            freq = torch.bincount(got[:, slot], minlength=4)[:4].float() / N
            assert (freq - torch.tensor(want)).abs().max() < 0.008, \
                f"temperature {T:g}, logits {[round(v, 3) for v in logits[0, slot].tolist()]}: " \
                f"the frequencies must be softmax(logits / T) = {[round(v, 3) for v in want]}, " \
                f"got {[round(v, 3) for v in freq.tolist()]} over {N} draws"


EXERCISES = [
    Exercise(6, "mask_positions", PART, 5, check_mask_positions),
    Exercise(7, "mask_tokens", PART, 3, check_mask_tokens),
    Exercise(8, "Generator.logits", PART, 4, check_generator_logits),
    Exercise(9, "sample", PART, 4, check_sample),
]
