"""Part 2's checks, second half: from x_hat to the loss (exercises 10-13).

Each check_* takes the student's module and raises AssertionError with the first failing case;
answer_key() stores the project's outputs on the checks' inputs in
exercises/reference/section2.pt (python exercises/answer_key.py), under these exercises' names.

Electra.forward's check runs the student's forward on small stub towers defined here (so it
needs neither part 1 nor the student's Generator) and hands it the answer key's random draws: the
student's mask_positions, mask_tokens and sample are replaced, for the call, by replays of the
stored m, x_masked and x_hat, so the order in which a forward draws its random numbers does not
matter. Its own corrupt, mlm_loss and disc_loss run (exercises 10-12).
"""
import math
from dataclasses import replace

import torch
import torch.nn as nn

from exercises.harness import Exercise, assert_close, member, reference

PART = "section2"


# -----------------------------------------------------------------------------
# The answer key


def _corrupt_inputs() -> dict:
    """Random corrupt() inputs over 6 word ids, so that a sample often equals the original."""
    gen = torch.Generator().manual_seed(10)
    B, T, K = 5, 12, 5
    x = torch.randint(4, 10, (B, T), generator=gen)
    m = torch.stack([torch.randperm(T, generator=gen)[:K] for _ in range(B)])  # distinct per row
    k = torch.tensor([5, 1, 3, 4, 2])
    m_valid = torch.arange(K)[None, :] < k[:, None]
    x_hat = torch.randint(4, 10, (B, K), generator=gen)
    return {"x": x, "m": m, "m_valid": m_valid, "x_hat": x_hat}


def _mlm_inputs() -> dict:
    gen = torch.Generator().manual_seed(11)
    B, K, V = 3, 6, 20
    logits = 3 * torch.randn(B, K, V, generator=gen)
    targets = torch.randint(0, V, (B, K), generator=gen)
    m_valid = torch.arange(K)[None, :] < torch.tensor([6, 2, 4])[:, None]
    return {"logits": logits, "targets": targets, "m_valid": m_valid}


def _disc_inputs() -> dict:
    gen = torch.Generator().manual_seed(12)
    B, T = 3, 10
    logits = 4 * torch.randn(B, T, generator=gen)
    is_original = torch.rand(B, T, generator=gen) < 0.7
    attention_mask = (torch.arange(T)[None, :] < torch.tensor([10, 7, 4])[:, None]).long()
    masked_only = (torch.rand(B, T, generator=gen) < 0.3).float() * attention_mask  # ELECTRA 15%
    return {"logits": logits, "is_original": is_original, "attention_mask": attention_mask,
            "masked_only": masked_only}


def answer_key() -> dict:
    """The project's corrupt, mlm_loss, disc_loss and Electra.forward on the checks' inputs."""
    import electra  # the answer key: the project's own functions

    c = _corrupt_inputs()
    x_corrupt, is_original = electra.corrupt(c["x"], c["m"], c["m_valid"], c["x_hat"])
    mlm = _mlm_inputs()
    d = _disc_inputs()
    return {
        "corrupt": {**c, "x_corrupt": x_corrupt, "is_original": is_original},
        "mlm_loss": {**mlm, "loss": electra.mlm_loss(mlm["logits"], mlm["targets"],
                                                     mlm["m_valid"])},
        "disc_loss": {**d,
                      "loss": electra.disc_loss(d["logits"], d["is_original"],
                                                d["attention_mask"]),
                      "loss_masked_only": electra.disc_loss(d["logits"], d["is_original"],
                                                            d["masked_only"])},
        "Electra.forward": _forward_key(electra),
    }


# -----------------------------------------------------------------------------
# Exercise 10: corrupt


def check_corrupt(student) -> None:
    corrupt = member(student, "corrupt")
    # The docstring's example: position 2 gets the sample 9 (replaced), position 1 was sampled as
    # its own token 6, so it counts as original.
    x = torch.tensor([[5, 6, 7]])
    x_corrupt, is_original = corrupt(x, torch.tensor([[2, 1]]), torch.tensor([[True, True]]),
                                     torch.tensor([[9, 6]]))
    assert torch.is_tensor(x_corrupt) and torch.is_tensor(is_original), \
        "return two tensors: (x_corrupt, is_original)"
    assert x.tolist() == [[5, 6, 7]], f"corrupt must not change x in place: x became {x.tolist()}"
    assert is_original.dtype == torch.bool, \
        f"is_original must be a bool tensor, got {is_original.dtype}"
    assert x_corrupt.tolist() == [[5, 6, 9]], \
        f"x [[5, 6, 7]], m [[2, 1]], x_hat [[9, 6]]: x_corrupt [[5, 6, 9]], " \
        f"got {x_corrupt.tolist()}"
    assert is_original.tolist() == [[True, True, False]], \
        "a sample equal to the original counts as original (Sec. 2): x [[5, 6, 7]], m [[2, 1]], " \
        "x_hat [[9, 6]] -> is_original [[True, True, False]] (position 1 was sampled as its own " \
        f"token 6), got {is_original.tolist()}"
    # An unused slot (m_valid False) points at a position that was not masked: it keeps its
    # token 8 and stays original, whatever x_hat holds there (4).
    x = torch.tensor([[5, 6, 7, 8]])
    x_corrupt, is_original = corrupt(x, torch.tensor([[2, 1, 3]]),
                                     torch.tensor([[True, True, False]]),
                                     torch.tensor([[9, 6, 4]]))
    assert x_corrupt.tolist() == [[5, 6, 9, 8]] and is_original.tolist() == \
        [[True, True, False, True]], \
        "replace only the used slots: x [[5, 6, 7, 8]], m [[2, 1, 3]], m_valid " \
        "[[True, True, False]], x_hat [[9, 6, 4]] -> x_corrupt [[5, 6, 9, 8]], is_original " \
        f"[[True, True, False, True]]; got {x_corrupt.tolist()}, {is_original.tolist()}"
    assert x.tolist() == [[5, 6, 7, 8]], \
        f"corrupt must not change x in place: x became {x.tolist()}"
    # The answer key on random inputs over 6 word ids (samples often equal the original).
    key = reference(PART)["corrupt"]
    x = key["x"].clone()
    x_corrupt, is_original = corrupt(x, key["m"], key["m_valid"], key["x_hat"])
    assert torch.equal(x, key["x"]), "corrupt must not change x in place"
    for what, got, want in (("x_corrupt", x_corrupt, key["x_corrupt"]),
                            ("is_original", is_original, key["is_original"])):
        assert tuple(got.shape) == tuple(want.shape), \
            f"{what}: expected shape {tuple(want.shape)}, got {tuple(got.shape)}"
        bad = (got != want).nonzero()
        if len(bad):
            b, t = bad[0].tolist()
            raise AssertionError(
                f"{what} on the answer key's random input: row {b} position {t}: expected "
                f"{want[b, t].item()}, got {got[b, t].item()} (x {key['x'][b].tolist()}, "
                f"m {key['m'][b].tolist()}, m_valid {key['m_valid'][b].tolist()}, "
                f"x_hat {key['x_hat'][b].tolist()})")


# -----------------------------------------------------------------------------
# Exercise 11: mlm_loss


def check_mlm_loss(student) -> None:
    mlm_loss = member(student, "mlm_loss")
    # Worked example, 2 rows x 2 slots, V = 3; row 1's slot 1 is unused (m_valid False):
    #   row 0 slot 0: logits [0, 0, 0], target 1:    p = 1/3, -log p = ln 3     = 1.0986
    #   row 0 slot 1: logits [ln 3, 0, 0], target 0: p = 3/5, -log p = ln 5/3   = 0.5108
    #   row 1 slot 0: logits [0, ln 2, 0], target 1: p = 2/4, -log p = ln 2     = 0.6931
    #   row 1 slot 1: logits [100, 0, 0], target 2: unused, ignored (it would cost 100)
    # Mean over the 3 used slots: (ln 3 + ln 5/3 + ln 2) / 3 = ln 10 / 3 = 0.7675.
    # (A mean of row means: (ln 5 / 2 + ln 2) / 2 = 0.7489; a sum: ln 10 = 2.3026.)
    ln2, ln3 = math.log(2), math.log(3)
    logits = torch.tensor([[[0.0, 0.0, 0.0], [ln3, 0.0, 0.0]],
                           [[0.0, ln2, 0.0], [100.0, 0.0, 0.0]]], requires_grad=True)
    targets = torch.tensor([[1, 0], [1, 2]])
    m_valid = torch.tensor([[True, True], [True, False]])
    got = mlm_loss(logits, targets, m_valid)
    assert torch.is_tensor(got) and got.dim() == 0, "return a scalar tensor"
    want = math.log(10) / 3
    assert abs(got.item() - want) < 1e-5, \
        "worked example: the mean of -log p_G(x_i) over the batch's 3 used slots, " \
        f"(ln 3 + ln 5/3 + ln 2) / 3 = {want:.4f}, got {got.item():.4f}"
    got.backward()
    assert logits.grad is not None and torch.isfinite(logits.grad).all() and \
        bool((logits.grad[1, 1] == 0).all()), \
        "the gradient must flow to the logits, finite, and be 0 at the unused slot"
    # The unused slots are ignored whatever they hold.
    changed = logits.detach().clone()
    changed[1, 1] = torch.tensor([-50.0, 30.0, -7.0])
    again = mlm_loss(changed, torch.tensor([[1, 0], [1, 0]]), m_valid)
    assert abs(again.item() - want) < 1e-5, \
        f"the unused slots must not count: changing them moved the loss to {again.item():.4f}"
    # Stable for confident logits: target 0 at logits [0, 200, 0] costs 200, not inf.
    got = mlm_loss(torch.tensor([[[0.0, 200.0, 0.0]]]), torch.tensor([[0]]),
                   torch.tensor([[True]]))
    assert torch.isfinite(got) and abs(got.item() - 200.0) < 1e-2, \
        "logits [0, 200, 0] with target 0 must cost 200 (compute log p_G with log_softmax or " \
        f"cross_entropy, not as the log of a softmax that has rounded to 0), got {got.item()}"
    # The answer key on random logits (3 rows x 6 slots, V = 20); 1e-5 + 1e-4 relative: float32
    # in another order of operations.
    key = reference(PART)["mlm_loss"]
    got = mlm_loss(key["logits"], key["targets"], key["m_valid"])
    assert_close(got, key["loss"], "mlm_loss on the answer key's random logits (3 rows with 6, "
                 "2 and 4 used slots)")


# -----------------------------------------------------------------------------
# Exercise 12: disc_loss


def check_disc_loss(student) -> None:
    disc_loss = member(student, "disc_loss")
    # Worked example: D = sigmoid(0) = 1/2, sigmoid(ln 3) = 3/4 twice; the padding logit 9 is
    # ignored. Terms: original -ln(1/2) = ln 2 = 0.6931; original -ln(3/4) = 0.2877; replaced
    # -ln(1 - 3/4) = ln 4 = 1.3863. Mean over 3 real tokens: 2.3671 / 3 = 0.7890.
    ln3 = math.log(3)
    logits = torch.tensor([[0.0, ln3, ln3, 9.0]])
    is_original = torch.tensor([[True, True, False, True]])
    attn = torch.tensor([[1, 1, 1, 0]])
    got = disc_loss(logits, is_original, attn)
    want = (math.log(2) + math.log(4 / 3) + math.log(4)) / 3
    assert torch.is_tensor(got) and got.dim() == 0, "return a scalar tensor"
    assert abs(got.item() - want) < 1e-5, \
        f"worked example: expected {want:.4f}, got {got.item():.4f}"
    # D is the probability of *original*: confident and right costs ~0, confident and wrong
    # ~|logit|.
    right = disc_loss(torch.tensor([[8.0, -8.0]]), torch.tensor([[True, False]]), torch.ones(1, 2))
    wrong = disc_loss(torch.tensor([[-8.0, 8.0]]), torch.tensor([[True, False]]), torch.ones(1, 2))
    assert right.item() < 1e-3 and abs(wrong.item() - 8.0) < 1e-2, \
        "sigmoid(logit) is P(original): logit +8 on an original token must cost ~0 " \
        f"(got {right.item():.4f}), logit -8 on it ~8 (got {wrong.item():.4f})"
    # The mean is over all weighted tokens of the batch, not per row then over rows:
    # row 0 has 3 real tokens with term ln 2 each, row 1 one real token with term ln 4.
    # Over tokens: (3 ln 2 + ln 4) / 4 = 5 ln 2 / 4 = 0.8664; per row: (ln 2 + ln 4) / 2 = 1.0397.
    logits = torch.zeros(2, 3)
    logits[1, 0] = ln3
    is_original = torch.tensor([[True, True, True], [False, True, True]])
    attn = torch.tensor([[1, 1, 1], [1, 0, 0]])
    got = disc_loss(logits, is_original, attn).item()
    assert abs(got - 5 * math.log(2) / 4) < 1e-5, \
        "average over every weighted token of the batch: expected 5 ln 2 / 4 = " \
        f"{5 * math.log(2) / 4:.4f}, got {got:.4f}"
    # Stable for confident logits, and gradients reach weighted tokens only.
    logits = torch.tensor([[200.0, -200.0, 3.0]], requires_grad=True)
    got = disc_loss(logits, torch.tensor([[False, True, True]]), torch.tensor([[1, 1, 0]]))
    assert torch.isfinite(got) and abs(got.item() - 200.0) < 1e-3, \
        f"logits +-200 wrongly confident must cost 200 each (mean 200), finite; got {got.item()}"
    got.backward()
    assert (logits.grad is not None and logits.grad[0, 2] == 0
            and torch.isfinite(logits.grad).all()), \
        "the gradient must flow to the logits, finite, and be 0 where the weight is 0"
    # The answer key on random logits, weighted by an attention mask and by float 0/1 weights on a
    # few positions (the ELECTRA 15% ablation's); float32 in another order: 1e-5 + 1e-4 relative.
    key = reference(PART)["disc_loss"]
    got = disc_loss(key["logits"], key["is_original"], key["attention_mask"])
    assert_close(got, key["loss"], "disc_loss on the answer key's random logits (3 rows with 10, "
                 "7 and 4 real tokens)")
    got = disc_loss(key["logits"], key["is_original"], key["masked_only"])
    assert_close(got, key["loss_masked_only"], "disc_loss on the answer key's random logits with "
                 "float 0/1 weights on a few positions only")


# -----------------------------------------------------------------------------
# Exercise 13: Electra.forward, on stub towers with the answer key's draws

# A tiny vocabulary: the special ids, then 8 words, so that G's sample often equals the original.
PAD, CLS, SEP, MASK = 0, 1, 2, 3
V, E, H = 12, 6, 5  # vocabulary, shared embedding width, each stub's hidden width
LAM_A, LAM_B = 50.0, 10.0  # the config's lambda in the check's two runs
TEMPERATURE = 2.0  # the config's; the second run passes temperature=1.0 instead


def _config():
    import electra  # the inherited Electra.__init__ takes the project's config class

    # The real towers are built as small as the config allows; the check replaces them by stubs.
    return electra.ElectraConfig(
        vocab_size=V, embedding_size=E, hidden_size=4, num_layers=1, num_heads=1,
        intermediate_size=4, max_position=16, generator_fraction=0.5, dropout=0.0,
        attention_dropout=0.0, mask_prob=0.3, max_predictions=4, temperature=TEMPERATURE,
        lam=LAM_A, pad_id=PAD, cls_id=CLS, sep_id=SEP, mask_id=MASK)


def _states(word, inp, ctx, seg, input_ids, segment_ids, attention_mask):
    """A stub tower's states [B, T, H]: each token's embedding, the mean embedding of its row's
    real tokens (the context) and its segment, through one tanh layer."""
    e = word(input_ids)  # [B, T, E]
    w = attention_mask.float()[..., None]  # [B, T, 1]
    context = (e * w).sum(1, keepdim=True) / w.sum(1, keepdim=True)  # [B, 1, E]
    return torch.tanh(inp(e) + ctx(context) + seg(segment_ids))


class StubGenerator(nn.Module):
    """G for the check: the shared embedding table `word` plus its own layers; the same calls as
    electra.Generator (hidden_states, logits, forward)."""

    def __init__(self, word: nn.Embedding):
        super().__init__()
        self.word = word
        self.inp, self.ctx, self.seg = nn.Linear(E, H), nn.Linear(E, H), nn.Embedding(2, H)
        self.out = nn.Linear(H, E)
        self.output_bias = nn.Parameter(torch.zeros(V))

    def hidden_states(self, input_ids, segment_ids, attention_mask, keep=None):
        return _states(self.word, self.inp, self.ctx, self.seg, input_ids, segment_ids,
                       attention_mask)

    def logits(self, h, m):
        rows = torch.arange(h.shape[0])[:, None]  # [B, 1]
        return self.out(h[rows, m]) @ self.word.weight.T + self.output_bias  # [B, K, V]

    def forward(self, input_ids, segment_ids, attention_mask, m):
        return self.logits(self.hidden_states(input_ids, segment_ids, attention_mask), m)


class StubDiscriminator(nn.Module):
    """D for the check: the shared embedding table `word` plus its own layers; the same call as
    electra.Discriminator: forward(input_ids, segment_ids, attention_mask) -> logits [B, T]."""

    def __init__(self, word: nn.Embedding):
        super().__init__()
        self.word = word
        self.inp, self.ctx, self.seg = nn.Linear(E, H), nn.Linear(E, H), nn.Embedding(2, H)
        self.head = nn.Linear(H, 1)

    def forward(self, input_ids, segment_ids, attention_mask):
        h = _states(self.word, self.inp, self.ctx, self.seg, input_ids, segment_ids,
                    attention_mask)
        return self.head(h).squeeze(-1)


class Stubs(nn.Module):
    """The two stub towers and the embedding table they share."""

    def __init__(self):
        super().__init__()
        self.word = nn.Embedding(V, E)
        self.generator = StubGenerator(self.word)
        self.discriminator = StubDiscriminator(self.word)

    def own(self, tower: nn.Module) -> dict:
        """A tower's own parameters by name, without the shared table."""
        return {n: p for n, p in tower.named_parameters() if p is not self.word.weight}


def _model(electra_class, stubs_state: dict) -> tuple[nn.Module, Stubs]:
    stubs = Stubs()
    stubs.load_state_dict(stubs_state)
    model = electra_class(_config())
    model.generator, model.discriminator = stubs.generator, stubs.discriminator
    return model.eval(), stubs


def _batch() -> dict:
    """3 rows of 10 tokens, the last one padded after 7; segments A and B."""
    gen = torch.Generator().manual_seed(13)
    x = torch.randint(4, V, (3, 10), generator=gen)
    x[:, 0] = CLS
    x[0, 9] = x[1, 9] = x[2, 6] = SEP
    x[2, 7:] = PAD
    attention_mask = (x != PAD).long()
    segment_ids = torch.zeros_like(x)
    segment_ids[0, 5:] = segment_ids[1, 4:] = 1
    return {"input_ids": x, "segment_ids": segment_ids, "attention_mask": attention_mask}


class _Replays:
    """Stand-ins for the student's mask_positions, mask_tokens and sample that return the answer
    key's draws, after checking that the forward handed them the right inputs."""

    def __init__(self, key: dict, temperature: float):
        self.key, self.temperature = key, temperature

    def mask_positions(self, x, attention_mask, config, rng=None):
        assert torch.equal(x, self.key["input_ids"]), \
            "mask_positions must get the batch's input_ids"
        return self.key["m"].clone(), self.key["m_valid"].clone()

    def mask_tokens(self, x, m, m_valid, config, rng=None):
        assert torch.equal(x, self.key["input_ids"]) and torch.equal(m, self.key["m"]), \
            "mask_tokens must get the batch's input_ids and mask_positions' m"
        return self.key["x_masked"].clone()

    def sample(self, logits, temperature=1.0, rng=None):
        want = self.key["logits_G"]
        assert logits.numel() == want.numel(), \
            f"sample must get G's logits at m, shape {tuple(want.shape)}, got {tuple(logits.shape)}"
        scaled = logits.detach().float().reshape(want.shape) / temperature
        assert torch.allclose(scaled, want / self.temperature, atol=1e-4, rtol=1e-4), \
            "sample must get G's logits at m on x_masked and the temperature (the argument, " \
            f"or config.temperature when it is None: here {self.temperature:g})"
        return self.key["x_hat"].reshape(logits.shape[:-1]).clone()


def _run(electra_class, forward, globals_dicts: list, key: dict, lam: float,
         temperature: float | None):
    """electra_class's forward on the stubs with the key's draws replayed (the names
    mask_positions, mask_tokens and sample rebound in `globals_dicts`, restored after)."""
    model, stubs = _model(electra_class, key["stubs"])
    model.config = replace(model.config, lam=lam)
    replays = _Replays(key, TEMPERATURE if temperature is None else temperature)
    names = ("mask_positions", "mask_tokens", "sample")
    missing = object()
    saved = [{n: d.get(n, missing) for n in names} for d in globals_dicts]
    try:
        for d in globals_dicts:
            for n in names:
                d[n] = getattr(replays, n)
        rng = torch.Generator().manual_seed(0)
        out = forward(model, key["input_ids"], key["segment_ids"], key["attention_mask"],
                      rng=rng, temperature=temperature)
    finally:
        for d, old in zip(globals_dicts, saved):
            for n, v in old.items():
                if v is missing:
                    d.pop(n, None)
                else:
                    d[n] = v
    return out, stubs


def _forward_key(electra) -> dict:
    """The draws (the project's mask_positions, mask_tokens and sample on the stub G) and the
    project's Electra.forward on them."""
    gen = torch.Generator().manual_seed(17)  # the stubs' initial weights
    stubs = Stubs()
    for p in stubs.parameters():
        nn.init.normal_(p, std=0.7, generator=gen)
    batch = _batch()
    cfg = _config()
    rng = torch.Generator().manual_seed(15)
    x, attn = batch["input_ids"], batch["attention_mask"]
    m, m_valid = electra.mask_positions(x, attn, cfg, rng)
    x_masked = electra.mask_tokens(x, m, m_valid, cfg, rng)
    with torch.no_grad():
        logits_G = stubs.generator(x_masked, batch["segment_ids"], attn, m)
    x_hat = electra.sample(logits_G, TEMPERATURE, rng)
    key = {**batch, "stubs": stubs.state_dict(), "m": m, "m_valid": m_valid,
           "x_masked": x_masked, "logits_G": logits_G, "x_hat": x_hat}
    same = (x_hat == x.gather(1, m)) & m_valid
    assert same.any() and (~same & m_valid).any() and (~m_valid).any(), \
        "the draws must hold a sample equal to the original, a replaced one and an unused slot"
    forward = electra.Electra.forward
    for name, lam, temperature in (("a", LAM_A, None), ("b", LAM_B, 1.0)):
        out, _ = _run(electra.Electra, forward, [forward.__globals__], key, lam, temperature)
        key[name] = {f: getattr(out, f).detach() for f in
                     ("loss", "mlm_loss", "disc_loss", "x_corrupt", "logits_D", "logits_G")}
    return key


def _grads(params: dict) -> list[str]:
    """The names of the parameters that received a nonzero gradient."""
    return [n for n, p in params.items() if p.grad is not None and bool((p.grad != 0).any())]


def check_electra_forward(student) -> None:
    cls = member(student, "Electra")
    forward = member(student, "Electra.forward")
    key = reference(PART)["Electra.forward"]
    where = [forward.__globals__]  # the forward's module-level names: the student's own
    if id(vars(student)) != id(forward.__globals__):
        where.append(vars(student))
    what = ("Electra.forward on stub towers with the answer key's draws (your mask_positions, "
            "mask_tokens and sample replaced by replays; your corrupt, mlm_loss, disc_loss run)")
    # Run a: lam 50, temperature None (config.temperature 2); run b: lam 10, temperature 1.0.
    for name, lam, temperature in (("a", LAM_A, None), ("b", LAM_B, 1.0)):
        out, stubs = _run(cls, forward, where, key, lam, temperature)
        want = key[name]
        run = f"{what}, lambda {lam:g}, temperature argument {temperature}"
        for field in ("loss", "mlm_loss", "disc_loss", "m", "m_valid", "x_masked", "logits_G",
                      "x_corrupt", "logits_D"):
            assert hasattr(out, field), \
                f"return an electra.ElectraOutput with its field {field!r}: got {type(out)}"
        assert torch.equal(out.m, key["m"]) and torch.equal(out.m_valid, key["m_valid"]), \
            f"{run}: out.m, out.m_valid must be mask_positions' m, m_valid (call this file's " \
            "mask_positions, mask_tokens and sample, not electra's: the check replays its draws " \
            "through yours)"
        assert torch.equal(out.x_masked, key["x_masked"]), \
            f"{run}: out.x_masked must be mask_tokens' x_masked"
        # float32 in another order of operations: 1e-5 + 1e-4 relative
        assert_close(out.logits_G, want["logits_G"],
                     f"{run}: out.logits_G (G's logits at m, on x_masked)")
        assert torch.equal(out.x_corrupt, want["x_corrupt"]), \
            f"{run}: out.x_corrupt must be corrupt(x, m, m_valid, x_hat), expected " \
            f"{want['x_corrupt'].tolist()}, got {out.x_corrupt.tolist()}"
        assert_close(out.logits_D, want["logits_D"],
                     f"{run}: out.logits_D (D's logits on x_corrupt)")
        assert_close(out.mlm_loss, want["mlm_loss"],
                     f"{run}: out.mlm_loss (G's loss against the original tokens x at m)")
        assert_close(out.disc_loss, want["disc_loss"],
                     f"{run}: out.disc_loss (D's loss over every real token, labels "
                     f"1(x_corrupt = x))")
        assert_close(out.loss, out.mlm_loss + lam * out.disc_loss,
                     f"{run}: out.loss must be L_MLM + lambda L_Disc with lambda = config.lam")
        assert_close(out.loss, want["loss"], f"{run}: out.loss")
        assert out.loss.requires_grad, f"{run}: out.loss must carry the graph to train on"
    # No gradient of L_Disc reaches G's own parameters (x_hat is a sample, no gradient flows
    # through it, Sec. 2); D's own parameters get one. L_MLM trains G and not D.
    out, stubs = _run(cls, forward, where, key, LAM_A, None)
    g_own, d_own = stubs.own(stubs.generator), stubs.own(stubs.discriminator)
    assert out.disc_loss.requires_grad, "out.disc_loss carries no graph: L_Disc must train D"
    out.disc_loss.backward()
    leaked = _grads(g_own)
    assert not leaked, \
        f"L_Disc's gradient reached G's own parameters {leaked}: the sample x_hat must cut the " \
        "graph (\"we do not back-propagate the discriminator loss through the generator\", Sec. 2)"
    missing = sorted(set(d_own) - set(_grads(d_own)))
    assert not missing, f"L_Disc must train D: no gradient reached D's parameters {missing}"
    out, stubs = _run(cls, forward, where, key, LAM_A, None)
    g_own, d_own = stubs.own(stubs.generator), stubs.own(stubs.discriminator)
    assert out.mlm_loss.requires_grad, \
        "out.mlm_loss carries no graph: L_MLM must train G (only the sampling step is without " \
        "gradient, not G's forward)"
    out.mlm_loss.backward()
    leaked = _grads(d_own)
    assert not leaked, f"L_MLM's gradient reached D's own parameters {leaked}"
    missing = sorted(set(g_own) - set(_grads(g_own)))
    assert not missing, f"L_MLM must train G: no gradient reached G's parameters {missing}"


EXERCISES = [
    Exercise(10, "corrupt", PART, 3, check_corrupt),
    Exercise(11, "mlm_loss", PART, 4, check_mlm_loss),
    Exercise(12, "disc_loss", PART, 4, check_disc_loss),
    Exercise(13, "Electra.forward", PART, 6, check_electra_forward, needs=(10, 11, 12)),
]
