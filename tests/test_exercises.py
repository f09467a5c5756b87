"""The exercises' checks (EXERCISES.md), and tests that the checks themselves work.

    ELECTRA_STUDENT=exercises/my_solution.py python -m pytest -q tests/test_exercises.py -k student

grades a student's file. Without ELECTRA_STUDENT the same checks run on the project's own
functions (electra.mask_positions, electra.disc_loss, tokenizer.wordpiece,
finetune.layer_lr_scales), so they must pass there; the test_check_rejects_* tests feed them
deliberately wrong versions, which they must fail (a check that cannot fail is a defect).
test_command_* run the command above in a subprocess on a correct file and on the unwritten
template.
"""
import importlib.util
import math
import os
import re
import shlex
import subprocess
import sys
import types
from dataclasses import replace as dc_replace
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import electra
import finetune
import tokenizer

ROOT = Path(__file__).resolve().parents[1]
STUDENT_ENV = "ELECTRA_STUDENT"
EXERCISES = ("mask_positions", "disc_loss", "wordpiece", "layer_lr_scales")


def load_solution() -> types.SimpleNamespace:
    """The functions under test: from $ELECTRA_STUDENT's file, else the project's own."""
    path = os.environ.get(STUDENT_ENV)
    if not path:
        return types.SimpleNamespace(mask_positions=electra.mask_positions,
                                     disc_loss=electra.disc_loss,
                                     wordpiece=tokenizer.wordpiece,
                                     layer_lr_scales=finetune.layer_lr_scales)
    file = Path(path) if Path(path).is_file() else ROOT / path
    if not file.is_file():
        pytest.fail(f"{STUDENT_ENV}={path}: no such file (give the path of your copy of "
                    "exercises/template.py)")
    spec = importlib.util.spec_from_file_location("student_solution", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    missing = [name for name in EXERCISES if not hasattr(module, name)]
    if missing:
        pytest.fail(f"{file} has no function(s) {', '.join(missing)}: start from a copy of "
                    "exercises/template.py")
    return types.SimpleNamespace(**{name: getattr(module, name) for name in EXERCISES})


# -----------------------------------------------------------------------------
# Exercise 1: mask_positions

CLS, SEP, MASK, PAD = 2, 3, 4, 0
MASK_CONFIG = electra.ElectraConfig(vocab_size=50, mask_prob=0.15, max_predictions=5, cls_id=CLS,
                                    sep_id=SEP, mask_id=MASK, pad_id=PAD)


def _row(n_real: int, T: int, first_word: int = 10) -> list[int]:
    """[CLS] w w ... [SEP] PAD ..: n_real real tokens, padded to T."""
    return [CLS] + list(range(first_word, first_word + n_real - 2)) + [SEP] + [PAD] * (T - n_real)


def check_mask_positions(mask_positions) -> None:
    # Worked examples of k = max(1, min(K, round(0.15 n))), round half to even:
    #   n = 10 -> round(1.5) = 2;  n = 13 -> round(1.95) = 2;  n = 7 -> round(1.05) = 1;
    #   n = 30 -> round(4.5) = 4 (not 5);  n = 40 -> round(6.0) = 6, capped at max_predictions 5;
    #   n = 3 -> round(0.45) = 0, raised to 1.
    T = 40
    cases = {10: 2, 13: 2, 7: 1, 30: 4, 40: 5, 3: 1}
    x = torch.tensor([_row(n, T) for n in cases])  # [6, 40]
    attn = (x != PAD).long()
    m, m_valid = mask_positions(x, attn, MASK_CONFIG, torch.Generator().manual_seed(0))
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
    T, n, draws = 12, 12, 3000
    # a [MASK] and two segments
    x = torch.tensor([[CLS, 10, MASK, 11, 12, 13, SEP, 14, 15, 16, 17, SEP]] * draws)
    attn = torch.ones_like(x)
    m, m_valid = mask_positions(x, attn, MASK_CONFIG, torch.Generator().manual_seed(1))
    chosen = [sorted(m[b][m_valid[b]].tolist()) for b in range(draws)]
    assert all(len(c) == 2 for c in chosen), "n = 12 -> k = round(1.8) = 2 positions per row"
    assert all(len(set(c)) == len(c) for c in chosen), "a row must not mask the same position twice"
    special = {0, 2, 6, 11}  # [CLS], [MASK], [SEP], [SEP]
    bad = sorted({p for c in chosen for p in c if p in special})
    assert not bad, f"positions {bad} hold [CLS]/[SEP]/[MASK] and must never be chosen"
    counts = torch.bincount(torch.tensor([p for c in chosen for p in c]), minlength=T).float()
    candidates = [p for p in range(T) if p not in special]
    expected = draws * 2 / len(candidates)  # 750: each of the 8 candidates equally likely
    freq = counts[candidates]
    assert (freq - expected).abs().max() < 0.15 * expected, \
        f"every candidate must be equally likely: counts {freq.tolist()} over {draws} rows, " \
        f"expected ~{expected:.0f} each"

    # Padding is never chosen, and rows with fewer candidates than k get k = the number of
    # candidates.
    x = torch.tensor([_row(8, 12),
                      [CLS, 10, SEP, PAD, PAD, PAD, PAD, PAD, PAD, PAD, PAD, PAD]] * 200)
    attn = (x != PAD).long()
    # n = 8 -> k = 4; n = 3 -> round(1.5) = 2, but 1 candidate
    cfg = dc_replace(MASK_CONFIG, mask_prob=0.5)
    m, m_valid = mask_positions(x, attn, cfg, torch.Generator().manual_seed(2))
    picked = x.gather(1, m)[m_valid]
    assert (picked != PAD).all() and (picked != CLS).all() and (picked != SEP).all(), \
        "padding, [CLS] and [SEP] must never be chosen"
    assert m_valid[1::2].sum(dim=1).eq(1).all(), \
        "a row with 1 candidate masks 1 position, whatever k says"
    assert m_valid[0::2].sum(dim=1).eq(4).all(), "n = 8, mask_prob 0.5 -> k = 4"

    # The rng: the same seed gives the same masks, another seed other masks.
    x = torch.tensor([_row(20, 20)] * 4)
    attn = torch.ones_like(x)
    a = mask_positions(x, attn, MASK_CONFIG, torch.Generator().manual_seed(3))
    b = mask_positions(x, attn, MASK_CONFIG, torch.Generator().manual_seed(3))
    c = mask_positions(x, attn, MASK_CONFIG, torch.Generator().manual_seed(4))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]), \
        "draw every random number from rng: same seed, same m"
    assert not torch.equal(a[0][a[1]], c[0][c[1]]), "different seeds must give different masks"


# -----------------------------------------------------------------------------
# Exercise 2: disc_loss


def check_disc_loss(disc_loss) -> None:
    # Worked example (the docstring's): D = sigmoid(0) = 1/2, sigmoid(ln 3) = 3/4 twice; the padding
    # logit 9 is ignored. Terms: original -ln(1/2) = ln 2 = 0.6931; original -ln(3/4) = 0.2877;
    # replaced -ln(1 - 3/4) = ln 4 = 1.3863. Mean over 3 real tokens: 2.3671 / 3 = 0.7890.
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

    # The mean is over all real tokens of the batch, not per row then over rows:
    # row 0 has 3 real tokens with term ln 2 each, row 1 one real token with term ln 4.
    # Over tokens: (3 ln 2 + ln 4) / 4 = 5 ln 2 / 4 = 0.8664; per row: (ln 2 + ln 4) / 2 = 1.0397.
    logits = torch.zeros(2, 3)
    logits[1, 0] = ln3
    is_original = torch.tensor([[True, True, True], [False, True, True]])
    attn = torch.tensor([[1, 1, 1], [1, 0, 0]])
    got = disc_loss(logits, is_original, attn).item()
    assert abs(got - 5 * math.log(2) / 4) < 1e-5, \
        "average over every real token of the batch: expected 5 ln 2 / 4 = " \
        f"{5 * math.log(2) / 4:.4f}, got {got:.4f}"

    # Stable for confident logits, and gradients reach real tokens only.
    logits = torch.tensor([[200.0, -200.0, 3.0]], requires_grad=True)
    got = disc_loss(logits, torch.tensor([[False, True, True]]), torch.tensor([[1, 1, 0]]))
    assert torch.isfinite(got) and abs(got.item() - 200.0) < 1e-3, \
        f"logits +-200 wrongly confident must cost 200 each (mean 200), finite; got {got.item()}"
    got.backward()
    assert (logits.grad is not None and logits.grad[0, 2] == 0
            and torch.isfinite(logits.grad).all()), \
        "the gradient must flow to the logits, finite, and be 0 on padding"


# -----------------------------------------------------------------------------
# Exercise 3: WordPiece longest match


def check_wordpiece(wordpiece) -> None:
    v = {"un", "##aff", "##able", "a", "##b"}
    for word, want in (("unaffable", ["un", "##aff", "##able"]), ("ab", ["a", "##b"]),
                       ("abc", ["[UNK]"])):
        got = wordpiece(word, v)
        assert got == want, f"vocab {sorted(v)}: {word!r} -> {want}, got {got}"
    # Longest first: "abc" is one piece although "a" + "##bc" would also cover it.
    v = {"a", "ab", "abc", "##c", "##bc"}
    got = wordpiece("abc", v)
    assert got == ["abc"], \
        f"take the longest matching piece: vocab {sorted(v)}: 'abc' -> ['abc'], got {got}"
    got = wordpiece("abcc", v)
    assert got == ["abc", "##c"], f"vocab {sorted(v)}: 'abcc' -> ['abc', '##c'], got {got}"
    # Greedy, no backtracking: "ab" is taken, "##cd" and "##d" do not exist -> [UNK], although
    # "a" + "##bcd" would work (BERT does the same).
    v = {"a", "ab", "##bcd", "##c"}
    got = wordpiece("abcd", v)
    assert got == ["[UNK]"], \
        f"greedy, no backtracking: vocab {sorted(v)}: 'abcd' -> ['[UNK]'], got {got}"
    # "##" marks continuations only.
    got = wordpiece("bb", {"b", "##b"})
    assert got == ["b", "##b"], f"vocab ['##b', 'b']: 'bb' -> ['b', '##b'], got {got}"
    got = wordpiece("b", {"##b"})
    assert got == ["[UNK]"], \
        f"a word cannot start with a '##' piece: vocab ['##b']: 'b' -> ['[UNK]'], got {got}"
    got = wordpiece("bb", {"b"})
    assert got == ["[UNK]"], \
        f"a continuation needs its '##' piece: vocab ['b']: 'bb' -> ['[UNK]'], got {got}"
    # At most 200 characters (the official tokenization.py's limit).
    v = {"x", "##x"}
    got = wordpiece("x" * 200, v)
    assert got == ["x"] + ["##x"] * 199, "a word of exactly 200 characters is split normally"
    got = wordpiece("x" * 201, v)
    assert got == ["[UNK]"], f"a word of 201 characters is ['[UNK]'], got {got[:3]}..."
    # Agreement with the project's tokenizer on random words and a random vocab of pieces.
    rng = torch.Generator().manual_seed(0)
    letters = "abcde"

    def rand_word(lo, hi):
        n = int(torch.randint(lo, hi + 1, (1,), generator=rng))
        return "".join(letters[int(i)] for i in torch.randint(0, len(letters), (n,), generator=rng))

    vocab = {rand_word(1, 3) for _ in range(30)} | {"##" + rand_word(1, 3) for _ in range(40)}
    for _ in range(300):
        word = rand_word(1, 8)
        want, got = tokenizer.wordpiece(word, vocab), wordpiece(word, vocab)
        assert got == want, f"vocab {sorted(vocab)}: {word!r} -> {want}, got {got}"


# -----------------------------------------------------------------------------
# Exercise 4: layer-wise learning-rate decay


def check_layer_lr_scales(layer_lr_scales) -> None:
    # Worked examples. 2 layers, decay 0.5: official top = 2 + 2 = 4 -> 0.5^4, 0.5^3, 0.5^2, head 1;
    # as described top = 3 -> 0.5^3, 0.5^2, 0.5^1, head 1. 1 layer, 0.9, official: top = 3 ->
    # 0.729, 0.81, 1. Decay 1: no decay at all.
    cases = [((2, 0.5, True), [0.0625, 0.125, 0.25, 1.0]),
             ((2, 0.5, False), [0.125, 0.25, 0.5, 1.0]),
             ((1, 0.9, True), [0.729, 0.81, 1.0]), ((3, 1.0, True), [1.0] * 5)]
    for (n, decay, official), want in cases:
        got = [float(s) for s in layer_lr_scales(n, decay, official=official)]
        assert len(got) == n + 2, \
            f"layer_lr_scales({n}, ...) must give {n + 2} scales (embeddings, layers, head)"
        assert all(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(got, want)), \
            f"layer_lr_scales({n}, {decay}, official={official}) must be {want}, got {got}"
    # ELECTRA-Base fine-tuning (12 layers, decay 0.8, Table 7): embeddings 0.8^14 = 0.0440
    # (official).
    got = [float(s) for s in layer_lr_scales(12, 0.8)]
    assert math.isclose(got[0], 0.8 ** 14) and math.isclose(got[12], 0.8 ** 2) and got[13] == 1.0, \
        f"12 layers, 0.8, official: embeddings 0.8^14 = {0.8 ** 14:.4f}, top layer 0.8^2 = 0.64, " \
        f"head 1; got {got[0]:.4f}, {got[12]:.4f}, {got[13]}"
    ratios = [b / a for a, b in zip(got, got[1:-1])]
    assert all(math.isclose(r, 1 / 0.8) for r in ratios), \
        "one depth up multiplies the lr by 1 / decay"


# -----------------------------------------------------------------------------
# The student's (or the project's) functions

def test_student_mask_positions():
    check_mask_positions(load_solution().mask_positions)


def test_student_disc_loss():
    check_disc_loss(load_solution().disc_loss)


def test_student_wordpiece():
    check_wordpiece(load_solution().wordpiece)


def test_student_layer_lr_scales():
    check_layer_lr_scales(load_solution().layer_lr_scales)


# -----------------------------------------------------------------------------
# The checks fail on wrong implementations


def _mask_with(candidate_fn=None, count_n=None, round_fn=torch.round, ordered=False):
    """A mask_positions variant built from electra.py's, with one step changed."""

    def mask_positions(x, attention_mask, config, rng=None):
        B, T = x.shape
        K = min(config.max_predictions, T)
        candidate = attention_mask.bool()
        for special in (config.cls_id, config.sep_id, config.mask_id, config.pad_id):
            candidate = candidate & (x != special)
        if candidate_fn is not None:
            candidate = candidate_fn(x, attention_mask, config)
        n = (attention_mask.sum(dim=1).float() if count_n is None
             else count_n(x, attention_mask, candidate))
        k = round_fn(n * config.mask_prob).long().clamp(1, K)
        k = torch.minimum(k, candidate.sum(dim=1))
        keys = torch.rand(B, T, generator=rng) + (~candidate).float()
        if ordered:
            keys = torch.arange(T).float()[None, :].expand(B, T) + 2 * T * (~candidate).float()
        m = keys.argsort(dim=1)[:, :K]
        return m, torch.arange(K)[None, :] < k[:, None]

    return mask_positions


WRONG_MASKS = {
    "masks [CLS] and [SEP]": _mask_with(
        candidate_fn=lambda x, a, c: a.bool() & (x != c.pad_id) & (x != c.mask_id)),
    "masks over padding": _mask_with(
        candidate_fn=lambda x, a, c: (x != c.cls_id) & (x != c.sep_id) & (x != c.mask_id)),
    "n without [CLS]/[SEP]": _mask_with(count_n=lambda x, a, cand: cand.sum(dim=1).float()),
    "the paper's ceiling instead of round": _mask_with(round_fn=torch.ceil),
    "floor instead of round": _mask_with(round_fn=torch.floor),
    "round half up": _mask_with(round_fn=lambda t: torch.floor(t + 0.5)),
    "always the first candidates": _mask_with(ordered=True),
}


@pytest.mark.parametrize("name", WRONG_MASKS)
def test_check_rejects_wrong_mask_positions(name):
    with pytest.raises(AssertionError):
        check_mask_positions(WRONG_MASKS[name])


def _bce(logits, is_original):
    return F.binary_cross_entropy_with_logits(logits.float(), is_original.float(), reduction="none")


WRONG_DISC = {
    "averages over padding too": lambda l, o, a: _bce(l, o).mean(),
    "D scores replaced": lambda l, o, a: (_bce(l, ~o) * a).sum() / a.sum(),
    "mean per row, then over rows": lambda l, o, a: ((_bce(l, o) * a).sum(1) / a.sum(1)).mean(),
    "log of a rounded sigmoid": lambda l, o, a: ((-(o * torch.log(torch.sigmoid(l))
                                                    + (~o) * torch.log(1 - torch.sigmoid(l))))
                                                 * a).sum() / a.sum(),
    "sum, not mean": lambda l, o, a: (_bce(l, o) * a).sum(),
}


@pytest.mark.parametrize("name", WRONG_DISC)
def test_check_rejects_wrong_disc_loss(name):
    with pytest.raises(AssertionError):
        check_disc_loss(WRONG_DISC[name])


def _wordpiece_with(shortest=False, partial=False, prefix="##", max_chars=100):
    def wordpiece(word, vocab):
        if len(word) > max_chars:
            return ["[UNK]"]
        pieces, start = [], 0
        while start < len(word):
            ends = range(start + 1, len(word) + 1) if shortest else range(len(word), start, -1)
            piece = None
            for end in ends:
                cand = word[start:end] if start == 0 else prefix + word[start:end]
                if cand in vocab:
                    piece = cand
                    break
            if piece is None:
                if partial:
                    return pieces + ["[UNK]"]
                return ["[UNK]"]
            pieces.append(piece)
            start = end
        return pieces

    return wordpiece


WRONG_WORDPIECE = {
    "shortest piece first": _wordpiece_with(shortest=True),
    "keeps the pieces before [UNK]": _wordpiece_with(partial=True),
    "no ## on continuations": _wordpiece_with(prefix=""),
    "99-character limit": _wordpiece_with(max_chars=99),
    "no length limit": _wordpiece_with(max_chars=10 ** 9),
}


@pytest.mark.parametrize("name", WRONG_WORDPIECE)
def test_check_rejects_wrong_wordpiece(name):
    with pytest.raises(AssertionError):
        check_wordpiece(WRONG_WORDPIECE[name])


WRONG_LR = {
    "official top off by one":
        lambda n, d, official=True: [d ** (n + 1 - i) for i in range(n + 1)] + [1.0],
    "ignores official":
        lambda n, d, official=True: [d ** (n + 2 - i) for i in range(n + 1)] + [1.0],
    "decays the top layers most":
        lambda n, d, official=True: [1.0] + [d ** (i + 1) for i in range(n + 1)],
    "head decayed too": lambda n, d, official=True: [d ** (n + 2 - i) for i in range(n + 2)],
    "one scale short": lambda n, d, official=True: [d ** (n + 1 - i) for i in range(n)] + [1.0],
}


@pytest.mark.parametrize("name", WRONG_LR)
def test_check_rejects_wrong_layer_lr_scales(name):
    with pytest.raises(AssertionError):
        check_layer_lr_scales(WRONG_LR[name])


# -----------------------------------------------------------------------------
# The command students run, end to end


def _run_student(path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, STUDENT_ENV: str(path)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-k", "student", str(ROOT / "tests" / "test_exercises.py")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_command_passes_on_a_correct_solution(tmp_path):
    solution = tmp_path / "my_solution.py"
    solution.write_text("from electra import mask_positions, disc_loss\n"
                        "from tokenizer import wordpiece\n"
                        "from finetune import layer_lr_scales\n")
    done = _run_student(solution)
    assert done.returncode == 0 and "4 passed" in done.stdout, done.stdout + done.stderr


def test_command_fails_on_the_unwritten_template():
    done = _run_student(ROOT / "exercises" / "template.py")
    assert done.returncode == 1 and "4 failed" in done.stdout, done.stdout + done.stderr
    for n, name in enumerate(EXERCISES, 1):
        assert f"exercise {n}: write {name}" in done.stdout, done.stdout


def _collected(k_args: list[str]) -> list[str]:
    """The test ids pytest selects from this file with the given -k arguments (collection only)."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", *k_args, "tests/test_exercises.py"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return [line.split("::")[-1] for line in done.stdout.splitlines() if "::" in line]


def test_exercises_md_commands_select_what_its_text_says():
    """Every pytest command EXERCISES.md and the README print for the exercises selects the tests
    their text names: the whole command the four student tests, the one-exercise command
    test_student_wordpiece alone. pytest keeps only the last -k, so a command with two -k would run
    more than its text says: none may have two."""
    text = (ROOT / "EXERCISES.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = [shlex.split(line) for line in (text + "\n" + readme).splitlines()
                if "python -m pytest" in line and "tests/test_exercises.py" in line]
    assert len(commands) >= 3, "EXERCISES.md: the command for all four and for one; README: all"
    selected = {}
    for cmd in commands:
        assert cmd.count("-k") == 1, f"one -k per command (pytest keeps only the last): {cmd}"
        expr = cmd[cmd.index("-k") + 1]
        selected[expr] = _collected(["-k", expr])
    assert selected.pop("student") == [f"test_student_{name}" for name in EXERCISES]
    assert selected == {"student and wordpiece": ["test_student_wordpiece"]}
    # and the mistake the text warns against: a second -k replaces the first
    assert _collected(["-k", "student", "-k", "wordpiece"]) != ["test_student_wordpiece"]
    named = re.search(r"`-k wordpiece` by itself would also run the project's own\s+"
                      r"`(\w+)`", text)
    assert named and named.group(1) in {t.split("[")[0] for t in _collected(["-k", "wordpiece"])}
