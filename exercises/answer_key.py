"""Write the answer key: each part's answer_key() (the project's own functions on the checks'
inputs) into exercises/reference/<part>.pt, which the checks read. Run it after changing an
exercise's project function or its check's inputs; tests/test_exercises.py fails while a stored
key differs from what the project computes.

    python exercises/answer_key.py
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tempfile  # noqa: E402

import torch  # noqa: E402

from exercises import capstone, grade  # noqa: E402
from exercises.harness import REFERENCE  # noqa: E402

if __name__ == "__main__":
    REFERENCE.mkdir(exist_ok=True)
    for part, module in grade.CHECK_MODULES.items():
        torch.manual_seed(0)
        torch.save(module.answer_key(), REFERENCE / f"{part}.pt")
        print(f"wrote {REFERENCE / f'{part}.pt'}")
    with tempfile.TemporaryDirectory() as tmp:  # the reference run's draws and losses
        torch.save(capstone.record(Path(tmp)), capstone.TRACE)
    print(f"wrote {capstone.TRACE}")
