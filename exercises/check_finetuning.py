"""Part 4's checks: fine-tuning (exercises 16-18).

Each check_* takes the student's module and raises AssertionError with the first failing case;
answer_key() stores the project's outputs on the checks' inputs in
exercises/reference/finetuning.pt (python exercises/answer_key.py)."""
import math

import torch
import torch.nn as nn

from electra import ElectraConfig
from exercises.harness import Exercise, assert_close, member, reference

PART = "finetuning"

# The answer key's optimizer run: three parameters in two groups (each its own lr and weight
# decay, as finetune.param_groups builds them), STEPS updates on random gradients; parameter 1
# has no gradient at update NO_GRAD_STEP, so it must sit that update out.
ADAM = dict(betas=(0.9, 0.999), eps=1e-6)
GROUPS = ((dict(lr=1e-2, weight_decay=0.01), (0, 1)), (dict(lr=3e-3, weight_decay=0.0), (2,)))
SHAPES = ((4, 3), (5,), (2, 2))
STEPS, NO_GRAD_STEP = 6, 2

# The answer key's head: a stub encoder of VOCAB x HIDDEN states, NUM_OUTPUTS classes.
VOCAB, HIDDEN, NUM_OUTPUTS = 20, 16, 3


# -----------------------------------------------------------------------------
# The encoder's stand-in


class StubEncoder(nn.Module):
    """Stands in for the pre-trained encoder, so that the head is graded without part 1: the state
    of token t in segment s is word[t] + segment[s], a known [B, T, H] tensor."""

    def __init__(self, vocab: int, hidden: int):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.segment = nn.Embedding(2, hidden)
        self.seen = None  # the arguments of the last call, to check they were passed through

    def hidden_states(self, input_ids, segment_ids, attention_mask, keep=None):
        self.seen = (input_ids, segment_ids, attention_mask)
        return self.word(input_ids) + self.segment(segment_ids)  # [B, T, H]

    def forward(self, *args, **kwargs):
        raise AssertionError("the encoder has no forward: call self.encoder.hidden_states("
                             "input_ids, segment_ids, attention_mask), the last layer's states "
                             "[B, T, H]")


def _config(hidden: int) -> ElectraConfig:
    # no blocks: the encoder the parent class builds is replaced by the stub at once
    return ElectraConfig(vocab_size=8, embedding_size=hidden, hidden_size=hidden, num_layers=0,
                         num_heads=1, intermediate_size=hidden, max_position=8)


def _head(cls, hidden: int, num_outputs: int, dropout: float) -> nn.Module:
    model = cls(_config(hidden), num_outputs, dropout)
    model.encoder = StubEncoder(VOCAB, hidden)
    return model


def _adam_key_run(opt_class) -> dict:
    """The answer key's optimizer run with `opt_class` (the project's, in answer_key)."""
    gen = torch.Generator().manual_seed(0)
    init = [torch.randn(s, generator=gen) for s in SHAPES]
    grads = [[None if (step == NO_GRAD_STEP and i == 1) else torch.randn(s, generator=gen)
              for i, s in enumerate(SHAPES)] for step in range(STEPS)]
    params = [nn.Parameter(p.clone()) for p in init]
    opt = opt_class([{"params": [params[i] for i in idx], **g} for g, idx in GROUPS],
                    lr=1.0, weight_decay=0.0, **ADAM)  # the defaults: every group sets its own
    after = []
    for step in range(STEPS):
        for p, g in zip(params, grads[step]):
            p.grad = None if g is None else g.clone()
        opt.step()
        after.append([p.detach().clone() for p in params])
    return {"init": init, "grads": grads, "after": after}


def answer_key() -> dict:
    """The project's AdamWeightDecay on random gradients, and the project's Classifier on a stub
    encoder with random states: what check_adam_weight_decay and check_classifier compare with."""
    import finetune  # the answer key: the project's own classes

    torch.manual_seed(0)
    model = _head(finetune.Classifier, HIDDEN, NUM_OUTPUTS, 0.1).eval()
    gen = torch.Generator().manual_seed(1)
    B, T = 6, 9
    input_ids = torch.randint(1, VOCAB, (B, T), generator=gen)
    segment_ids = (torch.arange(T) >= torch.randint(2, T, (B, 1), generator=gen)).long()
    lengths = torch.randint(2, T + 1, (B,), generator=gen)
    attention_mask = (torch.arange(T) < lengths[:, None]).long()
    input_ids = input_ids * attention_mask  # padding is token 0
    with torch.no_grad():
        logits = model(input_ids, segment_ids, attention_mask)
    head = {"state": {k: v.clone() for k, v in model.state_dict().items()},
            "input_ids": input_ids, "segment_ids": segment_ids,
            "attention_mask": attention_mask, "logits": logits}
    return {"adam": _adam_key_run(finetune.AdamWeightDecay), "classifier": head}


# -----------------------------------------------------------------------------
# Exercise 16: layer-wise learning-rate decay


def check_layer_lr_scales(student) -> None:
    layer_lr_scales = member(student, "layer_lr_scales")
    # Worked examples. 2 layers, decay 0.5: official top = 2 + 2 = 4 -> 0.5^4, 0.5^3, 0.5^2,
    # head 1; as described top = 3 -> 0.5^3, 0.5^2, 0.5^1, head 1. 1 layer, 0.9, official:
    # top = 3 -> 0.729, 0.81, 1. Decay 1: no decay at all.
    cases = [((2, 0.5, True), [0.0625, 0.125, 0.25, 1.0]),
             ((2, 0.5, False), [0.125, 0.25, 0.5, 1.0]),
             ((1, 0.9, True), [0.729, 0.81, 1.0]), ((3, 1.0, True), [1.0] * 5)]
    for (n, decay, official), want in cases:
        got = [float(s) for s in layer_lr_scales(n, decay, official=official)]
        assert len(got) == n + 2, \
            f"layer_lr_scales({n}, ...) must give {n + 2} scales (embeddings, layers, head)"
        assert all(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(got, want)), \
            f"layer_lr_scales({n}, {decay}, official={official}) must be {want}, got {got}"
    # official is the default: the official code's schedule made the paper's numbers
    got = [float(s) for s in layer_lr_scales(2, 0.5)]
    assert all(math.isclose(a, b) for a, b in zip(got, [0.0625, 0.125, 0.25, 1.0])), \
        f"layer_lr_scales(2, 0.5) (official=True by default) must be " \
        f"[0.0625, 0.125, 0.25, 1.0], got {got}"
    # ELECTRA-Base fine-tuning (12 layers, decay 0.8, Table 7): embeddings 0.8^14 = 0.0440
    # (official).
    got = [float(s) for s in layer_lr_scales(12, 0.8)]
    assert len(got) == 14, f"layer_lr_scales(12, 0.8) must give 14 scales, got {len(got)}"
    assert math.isclose(got[0], 0.8 ** 14) and math.isclose(got[12], 0.8 ** 2) and got[13] == 1.0, \
        f"12 layers, 0.8, official: embeddings 0.8^14 = {0.8 ** 14:.4f}, top layer 0.8^2 = 0.64, " \
        f"head 1; got {got[0]:.4f}, {got[12]:.4f}, {got[13]}"
    ratios = [b / a for a, b in zip(got, got[1:-1])]
    assert all(math.isclose(r, 1 / 0.8) for r in ratios), \
        "one depth up multiplies the lr by 1 / decay"


# -----------------------------------------------------------------------------
# Exercise 17: the official optimizer's update


def _one_param_step(opt_class, p0: float, grads, lr: float, eps: float = 1e-6,
                    weight_decay: float = 0.0):
    """Run opt_class on one scalar parameter p0 with the given gradients, betas (0.9, 0.999):
    (the parameter after each update, the optimizer)."""
    p = nn.Parameter(torch.tensor([p0]))
    opt = opt_class([p], lr=lr, betas=(0.9, 0.999), eps=eps, weight_decay=weight_decay)
    after = []
    for g in grads:
        p.grad = torch.tensor([g])
        opt.step()
        after.append(float(p.detach()[0]))
    return after, opt, p


def check_adam_weight_decay(student) -> None:
    opt_class = member(student, "AdamWeightDecay")
    # Float32 parameters; the hand values are exact to about 1e-7, so 1e-6 is float32 rounding.
    tol = 1e-6
    # Update 1, p = 1, g = 2, lr 0.1, betas (0.9, 0.999), eps 1e-6, no weight decay:
    #   m = 0.1 * 2 = 0.2;  v = 0.001 * 4 = 0.004;  sqrt(v) = 0.0632456
    #   update = 0.2 / (0.0632456 + 1e-6) = 3.1622277  ->  p = 1 - 0.1 * 3.1622277 = 0.6837772
    # AdamW's bias correction would divide m by 0.1 and v by 0.001: update 2 / (2 + 1e-6) = 1,
    # p = 0.9; the official update is 3.16 times larger.
    # Update 2, g = 2 again: m = 0.9 * 0.2 + 0.2 = 0.38; v = 0.999 * 0.004 + 0.004 = 0.007996;
    #   update = 0.38 / (0.0894204 + 1e-6) = 4.2495442  ->  p = 0.6837772 - 0.4249544 = 0.2588228
    after, opt, p = _one_param_step(opt_class, 1.0, [2.0], lr=0.1)
    assert abs(after[0] - 0.6837772) < tol, \
        f"p = 1, g = 2, lr 0.1, betas (0.9, 0.999), eps 1e-6: m = 0.2, v = 0.004, update = " \
        f"0.2 / (sqrt(0.004) + 1e-6) = 3.16223 (no bias correction), p -> 0.6837772, got " \
        f"{after[0]:.7f}"
    state = opt.state[p]
    assert "m" in state and "v" in state, \
        f"keep the moments in self.state[p]['m'] and self.state[p]['v'], found keys {list(state)}"
    assert_close(state["m"], torch.tensor([0.2]), "state['m'] after g = 2 (m = 0.1 * 2)", atol=tol)
    assert_close(state["v"], torch.tensor([0.004]), "state['v'] after g = 2 (v = 0.001 * 2^2)",
                 atol=tol, rtol=1e-5)
    after, _, _ = _one_param_step(opt_class, 1.0, [2.0, 2.0], lr=0.1)
    assert abs(after[1] - 0.2588228) < tol, \
        f"a second update with g = 2: m = 0.38, v = 0.007996, update = 0.38 / (0.0894204 + " \
        f"1e-6) = 4.24954, p 0.6837772 -> 0.2588228, got {after[1]:.7f}"
    # eps is added to sqrt(v), not to v: eps 0.1, update = 0.2 / (0.0632456 + 0.1) = 1.2251482,
    # p = 0.8774852 (sqrt(0.004 + 0.1) would give 0.9379826)
    after, _, _ = _one_param_step(opt_class, 1.0, [2.0], lr=0.1, eps=0.1)
    assert abs(after[0] - 0.8774852) < tol, \
        f"p = 1, g = 2, lr 0.1, eps 0.1: update = 0.2 / (sqrt(0.004) + 0.1) = 1.22515 (eps " \
        f"outside the square root), p -> 0.8774852, got {after[0]:.7f}"
    # Decoupled weight decay: lr * weight_decay * p joins the update, the gradient is untouched.
    # p = 1, g = 2, lr 0.1, wd 0.5: update = 3.1622277 + 0.5 * 1 -> p = 1 - 0.3662228 = 0.6337772
    # (wd added to the gradient, g = 2.5, would give m / sqrt(v) = 3.16 again: p = 0.6837762)
    after, _, _ = _one_param_step(opt_class, 1.0, [2.0], lr=0.1, weight_decay=0.5)
    assert abs(after[0] - 0.6337772) < tol, \
        f"p = 1, g = 2, lr 0.1, weight_decay 0.5: update = 3.16223 + 0.5 * p = 3.66223, " \
        f"p -> 0.6337772 (decoupled: the decay is not added to the gradient), got {after[0]:.7f}"
    # A zero gradient with decay: m = v = 0, update = 0 / (0 + eps) + 0.1 * 3 = 0.3,
    # p = 3 - 0.5 * 0.3 = 2.85 (coupled: g = 0.3 -> p = 1.419)
    after, _, _ = _one_param_step(opt_class, 3.0, [0.0], lr=0.5, weight_decay=0.1)
    assert abs(after[0] - 2.85) < tol, \
        f"p = 3, g = 0, lr 0.5, weight_decay 0.1: the decay alone, p -> 3 - 0.5 * 0.1 * 3 = " \
        f"2.85, got {after[0]:.7f}"
    # Each group's own lr and weight decay (finetune.param_groups gives each depth its lr), and a
    # parameter without a gradient: skipped, untouched, no state.
    a, b, c = (nn.Parameter(torch.tensor([1.0])) for _ in range(3))
    opt = opt_class([{"params": [a, c]}, {"params": [b], "lr": 0.01, "weight_decay": 0.5}],
                    lr=0.1, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0)
    a.grad, b.grad = torch.tensor([2.0]), torch.tensor([2.0])
    opt.step()
    # a: 0.6837772 as above; b: 1 - 0.01 * (3.1622277 + 0.5 * 1) = 0.9633777
    got = (float(a.detach()[0]), float(b.detach()[0]))
    assert abs(got[0] - 0.6837772) < tol and abs(got[1] - 0.9633777) < tol, \
        f"two groups, g = 2 on both: group 1 (lr 0.1, weight_decay 0) -> 0.6837772, group 2 " \
        f"(lr 0.01, weight_decay 0.5) -> 0.9633777; got {got[0]:.7f}, {got[1]:.7f} (use each " \
        f"group's group['lr'] and group['weight_decay'])"
    assert float(c.detach()[0]) == 1.0, \
        f"a parameter without a gradient (p.grad is None) must not move, got {float(c[0])}"
    assert c not in opt.state or not opt.state[c], \
        "a parameter without a gradient must get no state (skip it: p.grad is None)"
    # The answer key: 6 updates of three parameters in two groups on random gradients, one
    # update with a gradient missing. Tolerance: float32 in another order of operations differs
    # by a few 1e-8 per update on parameters of size 1.
    key = reference(PART)["adam"]
    got = _adam_key_run(opt_class)
    for step in range(STEPS):
        for i in range(len(SHAPES)):
            assert_close(got["after"][step][i], key["after"][step][i],
                         f"random gradients, two groups (lr 1e-2 with weight_decay 0.01, lr 3e-3 "
                         f"without), betas (0.9, 0.999), eps 1e-6: parameter {i} after update "
                         f"{step + 1}" + (" (its gradient is None at this update)"
                                          if (step, i) == (NO_GRAD_STEP, 1) else ""),
                         atol=2e-6, rtol=1e-5)


# -----------------------------------------------------------------------------
# Exercise 18: the classification head on [CLS]


def check_classifier(student) -> None:
    cls = member(student, "Classifier")
    # Hand example: H = 4, 2 classes. The stub's states: token t in segment s is word[t] +
    # segment[s]; word[1] = [1, 2, 3, 4], word[2] = [5, 0, -5, 0], word[3] = [0, 6, 0, -6],
    # segment[0] = 0, segment[1] = [1, 1, 1, 1].
    model = _head(cls, hidden=4, num_outputs=2, dropout=0.5)
    with torch.no_grad():
        model.encoder.word.weight.zero_()
        model.encoder.word.weight[1:4] = torch.tensor([[1.0, 2, 3, 4], [5, 0, -5, 0],
                                                       [0, 6, 0, -6]])
        model.encoder.segment.weight.copy_(torch.tensor([[0.0] * 4, [1.0] * 4]))
        # W takes h_1 to class 0 and h_4 to class 1: logits = [h_1 + 0.5, h_4 - 1]
        model.classifier.weight.copy_(torch.tensor([[1.0, 0, 0, 0], [0, 0, 0, 1]]))
        model.classifier.bias.copy_(torch.tensor([0.5, -1.0]))
    # Row 0: tokens 1 2 3, all segment 0: the first state [1, 2, 3, 4] -> [1.5, 3].
    # Row 1: tokens 2 1 pad, segments 0 1 0: the first state [5, 0, -5, 0] -> [5.5, -1].
    # (The mean over row 0's tokens [2, 8/3, -2/3, -2/3] would give [2.5, -5/3]; the last
    # token [0, 6, 0, -6] gives [0.5, -7].)
    input_ids = torch.tensor([[1, 2, 3], [2, 1, 0]])
    segment_ids = torch.tensor([[0, 0, 0], [0, 1, 0]])
    attention_mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    model.eval()
    with torch.no_grad():
        got = model(input_ids, segment_ids, attention_mask)
    assert_close(got, torch.tensor([[1.5, 3.0], [5.5, -1.0]]),
                 "eval mode, the hand example: logits = W h_[CLS] + b with h_[CLS] the state at "
                 "position 0 ([1, 2, 3, 4] and [5, 0, -5, 0]), W picking h_1 and h_4, "
                 "b = [0.5, -1]")
    seen = model.encoder.seen
    assert seen is not None and all(torch.equal(torch.as_tensor(x).long(), y) for x, y in
                                    zip(seen, (input_ids, segment_ids, attention_mask))), \
        "pass input_ids, segment_ids and attention_mask on to self.encoder.hidden_states"
    # The answer key: random states (H = 16), 3 classes, padding, eval mode. Tolerance: float32
    # sums of 16 products in another order differ by about 1e-6.
    key = reference(PART)["classifier"]
    model = _head(cls, HIDDEN, NUM_OUTPUTS, 0.1)
    try:
        model.load_state_dict(key["state"])
    except RuntimeError as e:
        raise AssertionError(f"your Classifier's parameters must be the project's (the stub "
                             f"encoder, classifier.weight, classifier.bias): {e}") from None
    model.eval()
    with torch.no_grad():
        got = model(key["input_ids"], key["segment_ids"], key["attention_mask"])
    assert_close(got, key["logits"], "eval mode, random states [6, 9, 16] with padding, "
                 "3 classes: the logits", atol=1e-5, rtol=1e-4)
    # Train mode: dropout on h_[CLS], before the dense layer. With W = I and b = 0.25, each logit
    # is 0.25 (the unit dropped) or h / (1 - p) + 0.25 (kept, scaled up), with p = 0.5 here: the
    # module's self.dropout. Over 64 x 32 = 2048 units the dropped fraction is 0.5 within 0.1
    # (its standard deviation is 0.011).
    torch.manual_seed(0)
    B, H, p = 64, 32, 0.5
    model = _head(cls, H, H, p)
    with torch.no_grad():
        model.encoder.word.weight.uniform_(1.0, 2.0)  # every state between 1 and 2: none is 0
        model.encoder.segment.weight.zero_()
        model.classifier.weight.copy_(torch.eye(H))
        model.classifier.bias.fill_(0.25)
    input_ids = torch.randint(0, VOCAB, (B, 5))
    zeros, ones = torch.zeros_like(input_ids), torch.ones_like(input_ids)
    model.train()
    with torch.no_grad():
        got = model(input_ids, zeros, ones)
        h = model.encoder.word.weight[input_ids[:, 0]]  # [B, H], the [CLS] states
    assert tuple(got.shape) == (B, H), f"logits of shape {(B, H)} expected, got {tuple(got.shape)}"
    dropped = (got - 0.25).abs() < 1e-5
    kept = (got - (h / (1 - p) + 0.25)).abs() < 1e-4
    assert bool((dropped | kept).all()), \
        "train mode, dropout 0.5, W = I, b = 0.25: each logit must be 0.25 (the unit of " \
        "h_[CLS] dropped) or 2 h + 0.25 (kept and scaled by 1 / (1 - p)); dropout goes on " \
        "h_[CLS] with the module's self.dropout, before self.classifier"
    frac = float(dropped.double().mean())
    assert abs(frac - p) < 0.1, \
        f"train mode, dropout 0.5: half the units of h_[CLS] dropped expected, got {frac:.3f}"
    model.eval()
    with torch.no_grad():
        got = model(input_ids, zeros, ones)
    assert_close(got, h + 0.25, "eval mode, W = I, b = 0.25: no dropout, logits = h_[CLS] + 0.25")


EXERCISES = [
    Exercise(16, "layer_lr_scales", PART, 3, check_layer_lr_scales),
    Exercise(17, "AdamWeightDecay.step", PART, 5, check_adam_weight_decay),
    Exercise(18, "Classifier.forward", PART, 4, check_classifier),
]
