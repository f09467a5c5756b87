"""Part 2's checks: Section 2, masking to the loss (exercises 6-13), in two files: from x to
x_hat (check_section2_sampling.py, exercises 6-9) and from x_hat to the loss
(check_section2_losses.py, exercises 10-13). answer_key() stores the project's outputs on the
checks' inputs in exercises/reference/section2.pt (python exercises/answer_key.py)."""
from exercises import check_section2_losses as losses
from exercises import check_section2_sampling as sampling

PART = "section2"
EXERCISES = [*sampling.EXERCISES, *losses.EXERCISES]


def answer_key() -> dict:
    return {**sampling.answer_key(), **losses.answer_key()}
