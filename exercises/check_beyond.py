"""Part 5's checks: beyond the paper's main method (exercises 19-20).

Each check_* takes the student's module and raises AssertionError with the first failing case;
answer_key() stores the project's outputs on the checks' inputs in
exercises/reference/beyond.pt (python exercises/answer_key.py)."""
from exercises.harness import Exercise  # noqa: F401

PART = "beyond"


def answer_key() -> dict:
    return {}


EXERCISES: list = []
