"""What every part's checks share: an exercise's entry in the course, loading a student's file,
the answer key stored as data, and comparisons that say what broke.

A check is a function check(student) -> None that takes the student's module (their copy of
exercises/template.py) and raises AssertionError, with the first failing case and what was
expected, when something is wrong. It reads the function it grades from `student` only: the
project's own version is the answer key, stored in exercises/reference/<part>.pt by the part's
answer_key() (python exercises/answer_key.py writes them), so the checks run without it, in the
student kit as in the project.
"""
from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent  # the project, or the student kit: electra.py, tokenizer.py, ... are here
REFERENCE = HERE / "reference"
TEMPLATE = HERE / "template.py"

if str(ROOT) not in sys.path:  # the template imports electra, tokenizer, finetune, electric
    sys.path.insert(0, str(ROOT))

# The five parts, in the paper's order and the code's: (key, title, what to read)
PARTS = {
    "encoder": "The encoder (BERT's Transformer, which G and D both are)",
    "section2": "Section 2: masking, sampling, the two losses",
    "tokenizer": "The tokenizer (BERT's WordPiece, Sec. 3.1)",
    "finetuning": "Fine-tuning (Appendix A)",
    "beyond": "Beyond the paper's main method (Sec. 3.2, Electric)",
}


@dataclass(frozen=True)
class Exercise:
    number: int  # as the template numbers it: "exercise 7: write ..."
    name: str  # what the student writes: a function, or Class.method
    part: str  # a key of PARTS
    points: int
    check: Callable[[types.ModuleType], None]
    # earlier exercises of the same part that this check runs through the student's own file
    # (SelfAttention.forward calls the student's attention_reference): when one of them fails,
    # the grade sheet says so beside this one
    needs: tuple[int, ...] = ()


def load_student(path: str | Path, name: str = "student_solution") -> types.ModuleType:
    """The student's file as a module. Raises FileNotFoundError for a missing path."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (give the path of your copy of "
                                f"exercises/template.py)")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def member(student: types.ModuleType, name: str):
    """student's `name` ("wordpiece", or "Block.forward" for a method), or AssertionError saying
    it is missing: a file that does not start from the template fails the check, not the sheet."""
    obj = student
    for part in name.split("."):
        if not hasattr(obj, part):
            raise AssertionError(f"your file has no {name}: start from a copy of "
                                 f"exercises/template.py")
        obj = getattr(obj, part)
    return obj


_cache: dict[str, dict] = {}


def reference(part: str) -> dict:
    """The answer key of `part`: the inputs and the project's outputs, as answer_key() stored
    them."""
    if part not in _cache:
        _cache[part] = torch.load(REFERENCE / f"{part}.pt", weights_only=False)
    return _cache[part]


def assert_close(got, want, what: str, atol: float = 1e-5, rtol: float = 1e-4) -> None:
    """AssertionError naming `what` unless `got` has `want`'s shape and values within
    atol + rtol * |want| (float32 arithmetic in another order differs in the last digits)."""
    assert torch.is_tensor(got), f"{what}: expected a tensor, got {type(got).__name__}"
    want = torch.as_tensor(want)
    assert tuple(got.shape) == tuple(want.shape), \
        f"{what}: expected shape {tuple(want.shape)}, got {tuple(got.shape)}"
    diff = (got.detach().double() - want.double()).abs()
    bound = atol + rtol * want.double().abs()
    if not bool((diff <= bound).all()):
        worst = int((diff - bound).flatten().argmax())
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), want.shape))
        raise AssertionError(f"{what}: at index {index} expected {want.flatten()[worst]:.6g}, "
                             f"got {got.detach().flatten()[worst]:.6g} (tolerance {atol:g} + "
                             f"{rtol:g} x |expected|)")
