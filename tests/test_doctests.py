"""The docstring examples of every module of the repository root and of support/ run and give what
they show."""
import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted([p.stem for p in ROOT.glob("*.py")]
                 + [f"support.{p.stem}" for p in (ROOT / "support").glob("*.py")
                    if p.stem != "__init__"])
MIN_EXAMPLES = 70  # the examples that ran when this test was written; fewer means some were lost


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, \
        f"{result.failed} docstring example(s) of {name} failed (see above)"


def test_docstring_examples_are_not_lost():
    total = sum(doctest.testmod(importlib.import_module(name), report=False).attempted
                for name in MODULES)
    assert total >= MIN_EXAMPLES, f"only {total} docstring examples ran"
