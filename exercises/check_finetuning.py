"""Part 4's checks: fine-tuning (exercises 16-18).

Each check_* takes the student's module and raises AssertionError with the first failing case;
answer_key() stores the project's outputs on the checks' inputs in
exercises/reference/finetuning.pt (python exercises/answer_key.py)."""
from exercises.harness import Exercise  # noqa: F401

PART = "finetuning"


def answer_key() -> dict:
    return {}


EXERCISES: list = []
