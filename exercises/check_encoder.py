"""Part 1's checks: the encoder (exercises 1-5).

Each check_* takes the student's module and raises AssertionError with the first failing case;
answer_key() stores the project's outputs on the checks' inputs in
exercises/reference/encoder.pt (python exercises/answer_key.py)."""
from exercises.harness import Exercise  # noqa: F401

PART = "encoder"


def answer_key() -> dict:
    return {}


EXERCISES: list = []
