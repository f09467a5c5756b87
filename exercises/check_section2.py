"""Part 2's checks: Section 2, masking to the loss (exercises 6-13).

Each check_* takes the student's module and raises AssertionError with the first failing case;
answer_key() stores the project's outputs on the checks' inputs in
exercises/reference/section2.pt (python exercises/answer_key.py). Exercises 10-13 (from x_hat to
the loss) are in check_section2_losses.py."""
from exercises import check_section2_losses as losses
from exercises.harness import Exercise  # noqa: F401

PART = "section2"


def answer_key() -> dict:
    return {**losses.answer_key()}


EXERCISES: list = [*losses.EXERCISES]
