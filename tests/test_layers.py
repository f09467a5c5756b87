"""The modules import in layers, downwards only: a reader can start at the bottom (the plumbing and
the command lines' spelling, then the tokenizer and the model) and never meet a name from a
file not yet read.

    support.plumbing, support.cli -> tokenizer, electra, support.shards -> electric -> support.hf
    -> data, support.glue -> support.report, support.train_cli, support.finetune_runs -> train,
    finetune, squad, support.evaluate

Every import counts, also one inside a function (a hidden upward import is still a cycle).
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = (
    ("support.plumbing", "support.cli"),
    ("tokenizer", "electra", "support.shards"),
    ("electric",),  # Electric, built from electra.py's parts
    ("support.hf",),  # data.py fetches a vocab.txt and OpenWebText's archives through it
    ("data", "support.glue"),
    ("support.report", "support.train_cli", "support.finetune_runs"),
    ("train", "finetune", "squad", "support.evaluate"),
)
LAYER = {name: depth for depth, names in enumerate(LAYERS) for name in names}
# Imports inside one layer that are allowed: SQuAD is one more task on fine-tuning's recipe and
# loop.
SIDEWAYS = {("squad", "finetune")}
# tokenizer.py is taught on its own: the standard library and tqdm, nothing of ours.
ALONE = ("tokenizer",)
# the entry scripts: nothing imports them
ENTRY = ("train", "finetune", "squad")


def modules() -> list[str]:
    """The project's modules, as they are imported: "train", "support.report"."""
    return sorted([p.stem for p in ROOT.glob("*.py")]
                  + [f"support.{p.stem}" for p in (ROOT / "support").glob("*.py")
                     if p.stem != "__init__"])


def project_imports(path: Path) -> set[str]:
    """The project's modules that `path` imports anywhere in its body, functions included."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            # from support import plumbing, report
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names & set(LAYER)


def test_every_module_has_a_layer():
    missing = sorted(set(modules()) - set(LAYER))
    assert not missing, f"give these a layer: {missing}"


@pytest.mark.parametrize("name", modules())
def test_imports_go_downwards(name):
    path = ROOT / (name.replace(".", "/") + ".py")
    for imported in sorted(project_imports(path) - {name}):
        if name in ALONE:
            pytest.fail(f"{name} imports {imported}: it must stand on the standard library")
        if imported in ENTRY and (name, imported) not in SIDEWAYS:
            pytest.fail(f"{name} imports {imported}.py, an entry script: move what it needs down")
        downwards = LAYER[imported] < LAYER[name]
        assert downwards or (name, imported) in SIDEWAYS, (
            f"{name} (layer {LAYER[name]}) imports {imported} (layer {LAYER[imported]})")


def test_the_checker_sees_an_import_inside_a_function(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import os\n\ndef f():\n    from train import RECIPES\n"
                      "    from support import report\n")
    assert project_imports(module) == {"train", "support.report"}
