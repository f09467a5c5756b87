"""Part 5's checks: beyond the paper's main method (exercises 19-20).

Each check_* takes the student's module and raises AssertionError with the first failing case;
answer_key() stores the project's outputs on the checks' inputs in
exercises/reference/beyond.pt (python exercises/answer_key.py)."""
import math

import torch

import electra
from exercises.harness import Exercise, assert_close, member, reference

PART = "beyond"

NOISE_RATES = (0.15, 0.25, 0.5, 0.05)  # ELECTRA-Small/Base's 0.15, Large's 0.25, and two more


def answer_key() -> dict:
    """Random energies and noise log-probabilities, and electric.nce_logits on them at each of
    NOISE_RATES; the same inputs in bfloat16 and float16, as mixed precision hands them over."""
    from electric import nce_logits  # the answer key: the project's own function

    g = torch.Generator().manual_seed(19)
    energies = 3 * torch.randn(4, 16, generator=g)  # [B, T]
    # log q at the token each position holds: a log-softmax over V = 50, read at random tokens
    tokens = torch.randint(0, 50, (4, 16), generator=g)
    log_q = torch.randn(4, 16, 50, generator=g).log_softmax(-1).gather(-1, tokens[..., None])
    log_q = log_q.squeeze(-1)  # [B, T]
    low = {"bfloat16": (energies.bfloat16(), log_q),  # energies from D under autocast, log q fp32
           "float16": (energies.half(), log_q.half())}
    return {"nce_logits": {
        "energies": energies, "log_q": log_q, "noise_rates": list(NOISE_RATES),
        "logits": torch.stack([nce_logits(energies, log_q, p) for p in NOISE_RATES]),
        "low_precision": {name: {"energies": e, "log_q": q, "logits": nce_logits(e, q, 0.15)}
                          for name, (e, q) in low.items()}}}


# ------------------------------------------------------------------------------ exercise 19


def check_nce_logits(student) -> None:
    nce_logits = member(student, "nce_logits")

    def logits(energies, qs, p):
        """The student's s on one row: energies and the probabilities q (not their logs)."""
        return nce_logits(torch.tensor([energies]), torch.log(torch.tensor([qs])), p)

    # The docstring's example: E = 1, q = 1/2, p = 1/2: s = -(1 + log 1/2 + log 1) = -0.3069
    s = logits([1.0], [0.5], 0.5)
    assert_close(s, [[-0.3068528]], "E = 1, q = 1/2, p = 1/2: s = -(1 + log(1/2) + 0)")
    # p = 0.15, the official mask_prob: E = 2, q = 1/4:
    # s = -(2 + log(1/4) + log(0.15 / 0.85)) = -(2 - 1.386294 - 1.734601) = 1.120895
    s = logits([2.0], [0.25], 0.15)
    assert_close(s, [[1.120895]], "E = 2, q = 1/4, p = 0.15: s = -(2 + log(1/4) + "
                 "log(0.15 / 0.85)), the prior ratio p / (1 - p) inside the minus sign")
    # sigmoid(s) is the posterior that t is data: E = 0 (p_theta's weight exp(0) = 1), q = 1/3,
    # p = 1/4: P(data) = (3/4 * 1) / (3/4 * 1 + 1/4 * 1/3) = (9/12) / (10/12) = 0.9, so
    # s = log(0.9 / 0.1) = log 9 = 2.197225
    s = logits([0.0], [1 / 3], 0.25)
    assert_close(s, [[math.log(9)]], "E = 0, q = 1/3, p = 1/4: sigmoid(s) must be the posterior "
                 "(1 - p) exp(-E) / ((1 - p) exp(-E) + p q) = 0.9, s = log 9")

    # Invariants, on one row: E one lower -> s one higher (a likely token is more likely data);
    # q twice as high -> s lower by log 2 (a token the noise likes is more likely noise);
    # a higher noise rate p -> s lower (more of the positions are noise).
    base = logits([0.5], [0.2], 0.15)
    lower_e = logits([-0.5], [0.2], 0.15)
    assert_close(lower_e - base, [[1.0]], "lowering the energy by 1 must raise s by 1 "
                 "(low energy = likely under p_theta = more likely data)")
    higher_q = logits([0.5], [0.4], 0.15)
    assert_close(higher_q - base, [[-math.log(2)]], "doubling q must lower s by log 2 "
                 "(a token the noise distribution favours is more likely noise)")
    more_noise = logits([0.5], [0.2], 0.25)
    assert bool((more_noise < base).all()), \
        f"a higher noise rate p must lower s (more positions hold noise): p = 0.15 gives " \
        f"{base.item():.4f}, p = 0.25 gave {more_noise.item():.4f}"

    # Confident energies stay finite: work with E and log q, never exp(-E) (exp(100) overflows
    # float32). E = 100, -100, q = 1/2, p = 1/2: s = -(100 - 0.693147) = -99.306853 and
    # -(-100 - 0.693147) = 100.693147.
    s = logits([100.0, -100.0], [0.5, 0.5], 0.5)
    assert bool(torch.isfinite(s).all()), \
        f"E = 100 and -100 must give finite logits (compute from E and log q, not exp(-E)): " \
        f"got {s.tolist()}"
    assert_close(s, [[-99.306853, 100.693147]], "E = +-100, q = 1/2, p = 1/2", atol=1e-4)

    # D learns through s: ds/dE = -1 at every position.
    e = torch.tensor([[0.3, -1.2, 2.0]], requires_grad=True)
    s = nce_logits(e, torch.log(torch.tensor([[0.1, 0.5, 0.9]])), 0.15)
    assert torch.is_tensor(s) and s.requires_grad, \
        "s must carry the gradient of the energies (the energy network trains through it)"
    s.sum().backward()
    assert_close(e.grad, [[-1.0, -1.0, -1.0]], "d s / d E (the energy network's gradient)")

    # The answer key: 4 x 16 random energies and log q at four noise rates. Tolerance: float32
    # sums in another order differ in the last digits (|s| < 20 here, float32's step ~2e-6).
    key = reference(PART)["nce_logits"]
    for p, want in zip(key["noise_rates"], key["logits"]):
        got = nce_logits(key["energies"].clone(), key["log_q"].clone(), p)
        assert_close(got, want, f"the answer key's random energies and log q at p = {p}",
                     atol=1e-5, rtol=1e-5)
    # Mixed precision hands over bfloat16 or float16 energies: s is float32, computed in float32
    # (the loss reads it; bfloat16 keeps 8 bits, an error of ~0.01 on s ~ 3). Tolerance: the
    # inputs' values are exact in float32, so only float32's rounding remains.
    for name, case in key["low_precision"].items():
        got = nce_logits(case["energies"].clone(), case["log_q"].clone(), 0.15)
        assert torch.is_tensor(got) and got.dtype == torch.float32, \
            f"{name} energies (log q {case['log_q'].dtype}): s must be float32, got " \
            f"{got.dtype if torch.is_tensor(got) else type(got).__name__}"
        assert_close(got, case["logits"], f"{name} energies: s computed in float32",
                     atol=1e-5, rtol=1e-5)


# ------------------------------------------------------------------------------ exercise 20


def two_stage_config() -> electra.ElectraConfig:
    """A tiny config where two-stage training is legal (electra.check_config): nothing shared,
    G the shape of D (generator_fraction 1, generator_layers 1, one head of 64, FFN 4 x 64, the
    embeddings as wide as the hidden states)."""
    return electra.ElectraConfig(
        vocab_size=50, embedding_size=64, hidden_size=64, num_layers=2, num_heads=1,
        intermediate_size=256, max_position=16, dropout=0.0, attention_dropout=0.0,
        generator_fraction=1.0, generator_layers=1.0, sharing="none", algorithm="two-stage",
        pad_id=0, cls_id=1, sep_id=2, mask_id=3)


def _snapshot(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def check_init_discriminator_from_generator(student) -> None:
    init_d = member(student, "init_discriminator_from_generator")
    torch.manual_seed(20)
    model = electra.Electra(two_stage_config())  # the project's model: the exercise is the switch
    G, D = model.generator, model.discriminator
    with torch.no_grad():  # every tensor away from its init (LayerNorm's ones, zero biases)
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    g_before, d_before = _snapshot(G), _snapshot(D)
    d_params = dict(D.named_parameters())
    g_params = {id(p) for p in G.parameters()}

    try:  # as train.py calls it: between two updates, gradients on
        init_d(model)
    except RuntimeError as e:
        if "leaf Variable that requires grad" in str(e):
            raise AssertionError(f"copying into D's Parameters was recorded by autograd ({e}): "
                                 f"copy under torch.no_grad()") from e
        raise
    assert torch.is_grad_enabled(), \
        "gradients are off after the call: use `with torch.no_grad():` (or the decorator), " \
        "which turns them back on, not torch.set_grad_enabled(False)"

    # D keeps its own Parameters, filled in place: the optimizer, built before the switch, holds
    # them, and updates nothing else.
    assert set(dict(D.named_parameters())) == set(d_params), \
        f"D's parameters are no longer {sorted(d_params)}"
    for name, p in D.named_parameters():
        if id(p) in g_params:
            raise AssertionError(f"D's {name} is G's Parameter: D must get a copy of G's "
                                 f"weights, not G's tensors (stage 2 trains D, G stays frozen)")
        if p is not d_params[name]:
            raise AssertionError(f"D's {name} is a new Parameter: copy into D's own tensors "
                                 f"(p.copy_), since the optimizer, built before the switch, "
                                 f"holds the old ones and would update those")

    # The encoder copied, the head kept.
    d_after, g_after = _snapshot(D), _snapshot(G)
    head = [k for k in d_after if k.startswith("head")]
    encoder = [k for k in d_after if not k.startswith("head")]
    assert head == ["head.weight", "head.bias", "head_out.weight", "head_out.bias"] \
        and len(encoder) > 10, f"unexpected discriminator: {list(d_after)}"
    for k in encoder:
        assert torch.equal(d_after[k], g_before[k]), \
            f"D's {k} must equal G's {k} (D's encoder := G's: embeddings, projection, blocks)"
    for k in head:
        assert torch.equal(d_after[k], d_before[k]), \
            f"D's {k} must keep its initialisation: D's head is a binary classifier, G's an MLM " \
            f"head (even where their shapes match, as head.weight's here)"
    for k, v in g_after.items():
        assert torch.equal(v, g_before[k]), f"G's {k} changed: G is the source, copy into D"

    # D stays trainable and has no autograd history.
    for name, p in D.named_parameters():
        assert p.is_leaf and p.grad_fn is None, \
            f"D's {name} has an autograd history ({p.grad_fn}): copy under torch.no_grad()"
        assert p.requires_grad, \
            f"D's {name} no longer requires grad: stage 2 trains D (it is G that stays frozen)"

    # Copies, not shared storage: changing G now leaves D as it was.
    with torch.no_grad():
        for p in G.parameters():
            p.add_(1.0)
    for k, v in D.state_dict().items():
        assert torch.equal(v, d_after[k]), \
            f"D's {k} changed when G's weights did: it shares G's storage; copy the values " \
            f"(stage 2 trains D with G frozen)"


EXERCISES = [
    Exercise(19, "nce_logits", PART, 3, check_nce_logits),
    Exercise(20, "init_discriminator_from_generator", PART, 4,
             check_init_discriminator_from_generator),
]
