"""The docstring examples of every module in the repository root run and give what they show."""
import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NAMES = ("plumbing", "tokenizer", "electra", "data", "glue", "hf", "report", "train", "finetune",
         "squad", "evaluate")
MODULES = [name for name in NAMES if (ROOT / f"{name}.py").is_file()]
MIN_EXAMPLES = 70  # the examples that ran when this test was written; fewer means some were lost


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, \
        f"{result.failed} docstring example(s) of {name}.py failed (see above)"


def test_docstring_examples_are_not_lost():
    total = sum(doctest.testmod(importlib.import_module(name), report=False).attempted
                for name in MODULES)
    assert total >= MIN_EXAMPLES, f"only {total} docstring examples ran"
