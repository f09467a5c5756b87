"""The root modules import in layers, downwards only (issue 24): a reader can start at the bottom
(plumbing, then the tokenizer and the model) and never meet a name from a file not yet read.

    plumbing -> tokenizer, electra -> data, glue, hf -> report -> train, finetune, squad, evaluate

Every import counts, also one inside a function (a hidden upward import is still a cycle).
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = (
    ("plumbing",),
    ("tokenizer", "electra"),
    ("data", "glue", "hf"),
    ("report",),
    ("train", "finetune", "squad", "evaluate"),
)
LAYER = {name: depth for depth, names in enumerate(LAYERS) for name in names}
# Imports inside one layer that are allowed: SQuAD is one more task on fine-tuning's recipe and
# loop.
SIDEWAYS = {("squad", "finetune")}
# tokenizer.py is taught on its own: the standard library and tqdm, nothing of ours.
ALONE = ("tokenizer",)


def project_imports(path: Path) -> set[str]:
    """The root modules that `path` imports anywhere in its body, functions included."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names & set(LAYER)


def test_every_root_module_has_a_layer():
    root_modules = {p.stem for p in ROOT.glob("*.py")}
    assert root_modules <= set(LAYER), f"give these a layer: {sorted(root_modules - set(LAYER))}"


@pytest.mark.parametrize("name", sorted(p.stem for p in ROOT.glob("*.py")))
def test_imports_go_downwards(name):
    path = ROOT / f"{name}.py"
    for imported in sorted(project_imports(path) - {name}):
        if name in ALONE:
            pytest.fail(f"{name}.py imports {imported}.py: it must stand on the standard library")
        if imported == "train":
            pytest.fail(f"{name}.py imports train.py, an entry script: move what it needs down")
        downwards = LAYER[imported] < LAYER[name]
        assert downwards or (name, imported) in SIDEWAYS, (
            f"{name}.py (layer {LAYER[name]}) imports {imported}.py (layer {LAYER[imported]})")


def test_the_checker_sees_an_import_inside_a_function(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import os\n\ndef f():\n    from train import RECIPES\n    import report\n")
    assert project_imports(module) == {"train", "report"}
