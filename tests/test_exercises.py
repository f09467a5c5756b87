"""The problem set's checks (EXERCISES.md, exercises/): the project's own functions pass every
check, the untouched template fails every one with its "exercise N: write ..." line, the stored
answer key is what the project computes today, and each template exercise accepts the same calls
as the project's function and carries its equation. tests/test_exercises_<part>.py prove that
each check rejects named wrong versions (a check that cannot fail is a defect)."""
import inspect
import re
import types

import pytest
import torch

import electra
import electric
import finetune
import tokenizer
from exercises import grade, harness

# The project's version of every exercise: the answer key, and a solution that must pass.
PROJECT = {
    "attention_reference": electra.attention_reference,
    "SelfAttention": electra.SelfAttention,
    "Block": electra.Block,
    "Embeddings": electra.Embeddings,
    "Encoder": electra.Encoder,
    "mask_positions": electra.mask_positions,
    "mask_tokens": electra.mask_tokens,
    "Generator": electra.Generator,
    "sample": electra.sample,
    "corrupt": electra.corrupt,
    "mlm_loss": electra.mlm_loss,
    "disc_loss": electra.disc_loss,
    "Electra": electra.Electra,
    "basic_tokenize": tokenizer.basic_tokenize,
    "wordpiece": tokenizer.wordpiece,
    "layer_lr_scales": finetune.layer_lr_scales,
    "AdamWeightDecay": finetune.AdamWeightDecay,
    "Classifier": finetune.Classifier,
    "nce_logits": electric.nce_logits,
    "init_discriminator_from_generator": electra.init_discriminator_from_generator,
}


def solution(**changed) -> types.SimpleNamespace:
    """The project's solution with some members changed: a deliberately wrong version."""
    return types.SimpleNamespace(**{**PROJECT, **changed})


def rejects(check, student) -> str:
    """The check's failure message on `student`, or a test failure when the check passes it."""
    with pytest.raises(AssertionError) as failed:
        check(student)
    return str(failed.value)


@pytest.fixture(scope="module")
def template():
    return harness.load_student(harness.TEMPLATE, "template_under_test")


def test_the_course_has_twenty_exercises_in_five_parts_in_order():
    numbers = [ex.number for ex in grade.EXERCISES]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 15
    parts = [ex.part for ex in grade.EXERCISES]
    assert sorted(set(parts), key=parts.index) == list(harness.PARTS), "parts in the paper's order"
    for ex in grade.EXERCISES:
        assert ex.name.split(".")[0] in PROJECT, f"exercise {ex.number} has no answer key"
        assert all(n < ex.number and grade.EXERCISES[n - 1].part == ex.part for n in ex.needs)


@pytest.mark.parametrize("ex", grade.EXERCISES, ids=lambda ex: f"{ex.number}-{ex.name}")
def test_the_project_passes_every_check(ex):
    ex.check(solution())


@pytest.mark.parametrize("ex", grade.EXERCISES, ids=lambda ex: f"{ex.number}-{ex.name}")
def test_the_untouched_template_fails_every_check_with_its_line(ex, template):
    """The classic autograder bug is a template that passes: each check must reach the student's
    unwritten body, whose line names the exercise."""
    with pytest.raises(NotImplementedError, match=rf"^exercise {ex.number}: write {ex.name}$"):
        ex.check(template)


@pytest.mark.parametrize("part", list(harness.PARTS))
def test_the_stored_answer_key_is_what_the_project_computes(part):
    torch.manual_seed(0)
    fresh = grade.CHECK_MODULES[part].answer_key()
    stored = harness.reference(part)
    assert_same(fresh, stored, part)


def assert_same(a, b, where: str) -> None:
    assert type(a) is type(b), f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        assert a.keys() == b.keys(), f"{where}: keys {sorted(a)} vs {sorted(b)}"
        for k in a:
            assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif torch.is_tensor(a):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.allclose(
            a.double(), b.double(), rtol=1e-5, atol=1e-6), \
            f"{where}: the stored answer key differs (python exercises/answer_key.py)"
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


def _equation(doc: str | None) -> str:
    """A docstring's first line without its source tag: the equation both files must carry."""
    first = (doc or "").strip().splitlines()[0] if doc else ""
    return " ".join(re.sub(r"\(paper, [^)]*\)|\(Appendix [^)]*\)", "", first).split())


@pytest.mark.parametrize("ex", grade.EXERCISES, ids=lambda ex: f"{ex.number}-{ex.name}")
def test_each_template_exercise_matches_the_project(ex, template):
    """The template's exercise takes the project's parameters (names, order, defaults) and carries
    the equation of the project's docstring (a method: of its class's), so a change to the code
    that the template no longer matches fails here."""
    mine, theirs = harness.member(template, ex.name), PROJECT[ex.name.split(".")[0]]
    if "." in ex.name:
        theirs = getattr(theirs, ex.name.split(".")[1])
    assert inspect.signature(mine) == inspect.signature(theirs), \
        f"{ex.name}: template {inspect.signature(mine)} vs project {inspect.signature(theirs)}"
    source = theirs if "." not in ex.name else PROJECT[ex.name.split(".")[0]]
    equation = _equation(theirs.__doc__) or _equation(source.__doc__)
    assert equation, f"{ex.name}: the project's docstring opens with no equation"
    assert equation in " ".join((mine.__doc__ or "").split()), \
        f"{ex.name}: the template's docstring lacks the project's {equation!r}"
    if "." in ex.name:  # the class derives from the project's, so the parameters are its
        assert issubclass(harness.member(template, ex.name.split(".")[0]),
                          PROJECT[ex.name.split(".")[0]])


def test_the_sync_check_fails_on_a_drifted_signature(template, monkeypatch):
    ex = next(e for e in grade.EXERCISES if e.name == "wordpiece")

    def wordpiece(word, vocabulary):  # a parameter renamed
        """Exercise 15. BERT's greedy longest-match-first WordPiece on one word."""

    monkeypatch.setattr(template, "wordpiece", wordpiece)
    with pytest.raises(AssertionError, match="template"):
        test_each_template_exercise_matches_the_project(ex, template)
