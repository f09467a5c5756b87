"""The student kit: the problem set without its solutions, for a teacher to hand out.

    python exercises/kit.py electra-course/          # writes the kit there (a new folder)

The project is its own answer key, so the kit holds the project with the body of every
exercise's function replaced by a line that sends the reader to the template (docstrings, with
their equations and examples, stay), and without the tests, which compare with those bodies.
What it keeps: the template, the handout, the checks with the answer key stored as data
(exercises/reference/), the grade sheet, and the model, data pipeline and training loop that
the capstone plugs the student's functions into. In the kit:

    cp exercises/template.py exercises/my_solution.py
    python exercises/grade.py exercises/my_solution.py
"""
from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Where each exercise's solution lives in the project: (file, qualified name)
SOLUTIONS = {
    "attention_reference": ("electra.py", "attention_reference"),
    "SelfAttention.forward": ("electra.py", "SelfAttention.forward"),
    "Block.forward": ("electra.py", "Block.forward"),
    "Embeddings.forward": ("electra.py", "Embeddings.forward"),
    "Encoder.hidden_states": ("electra.py", "Encoder.hidden_states"),
    "mask_positions": ("electra.py", "mask_positions"),
    "mask_tokens": ("electra.py", "mask_tokens"),
    "Generator.logits": ("electra.py", "Generator.logits"),
    "sample": ("electra.py", "sample"),
    "corrupt": ("electra.py", "corrupt"),
    "mlm_loss": ("electra.py", "mlm_loss"),
    "disc_loss": ("electra.py", "disc_loss"),
    "Electra.forward": ("electra.py", "Electra.forward"),
    "basic_tokenize": ("tokenizer.py", "basic_tokenize"),
    "wordpiece": ("tokenizer.py", "wordpiece"),
    "layer_lr_scales": ("finetune.py", "layer_lr_scales"),
    "AdamWeightDecay.step": ("finetune.py", "AdamWeightDecay.step"),
    "Classifier.forward": ("finetune.py", "Classifier.forward"),
    "nce_logits": ("electric.py", "nce_logits"),
    "init_discriminator_from_generator": ("electra.py", "init_discriminator_from_generator"),
}

# What the kit copies: the method's files, what the capstone runs (train.py's loop, its support
# code, the notebooks' short runs and their text), and the course itself. Not the tests, the
# benchmarks or the experiments (beyond the hooks the notebooks' helper imports).
# The notebooks themselves stay out: they work the losses and x_corrupt through by hand.
COPIED = ["electra.py", "electric.py", "tokenizer.py", "data.py", "train.py", "finetune.py",
          "squad.py", "support", "notebooks/_helpers.py", "notebooks/data", "experiments/hooks.py",
          "exercises", "EXERCISES.md", "requirements.txt", "ruff.toml"]
README = """# ELECTRA from blanks: the student kit

A course on ELECTRA (Clark, Luong, Le, Manning 2020, arXiv 2003.10555): twenty exercises that
rebuild the model from blanks, graded by checks, and a capstone in which your pieces pre-train an
ELECTRA that learns. The handout is EXERCISES.md.

    pip install -r requirements.txt
    cp exercises/template.py exercises/my_solution.py
    python exercises/grade.py exercises/my_solution.py --part encoder   # one part's checks
    python exercises/grade.py exercises/my_solution.py                  # the grade sheet

The project's files are here so that you can read them and so that the capstone can run your
pieces in its model and training loop, but each exercise's body is yours to write: it raises
"exercise N: yours to write". The notebooks and the tests the handout mentions are not in the kit.
"""
LEFT_OUT = {"exercises/kit.py", "exercises/answer_key.py"}  # they read the solutions


def find(tree: ast.Module, qualname: str) -> ast.FunctionDef:
    """The def of `qualname` ("Block.forward") in a parsed module."""
    nodes = tree.body
    for name in qualname.split("."):
        node = next((n for n in nodes if isinstance(n, (ast.FunctionDef, ast.ClassDef))
                     and n.name == name), None)
        if node is None:
            raise KeyError(f"{qualname} not found")
        nodes = node.body
    return node


def body_lines(node: ast.FunctionDef) -> tuple[int, int]:
    """The 1-based first and last lines of a def's body after its docstring."""
    body = node.body
    if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        body = body[1:]
    return body[0].lineno, body[-1].end_lineno


def strip(source: str, qualnames: dict[str, int]) -> str:
    """`source` with the body of each qualname (docstring kept) replaced by a raise naming its
    exercise number."""
    lines = source.splitlines(keepends=True)
    spans = []
    for qualname, number in qualnames.items():
        node = find(ast.parse(source), qualname)
        first, last = body_lines(node)
        indent = " " * (node.col_offset + 4)
        spans.append((first, last, f'{indent}raise NotImplementedError("exercise {number}: '
                                   f'yours to write in exercises/template.py")\n'))
    for first, last, line in sorted(spans, reverse=True):  # bottom up: line numbers stay true
        lines[first - 1:last] = [line]
    return "".join(lines)


def build(out: Path) -> Path:
    """Write the kit into `out` (a new folder); returns it."""
    from exercises import grade

    if out.exists():
        raise SystemExit(f"{out} exists: give a new folder for the kit")
    numbers = {ex.name: ex.number for ex in grade.EXERCISES}
    for item in COPIED:
        src = ROOT / item
        if src.is_dir():
            shutil.copytree(src, out / item, ignore=shutil.ignore_patterns(
                "__pycache__", "*.pyc", ".ipynb_checkpoints", "runs"))
        else:
            (out / item).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, out / item)
    for item in LEFT_OUT:
        (out / item).unlink()
    (out / "README.md").write_text(README, encoding="utf-8")
    by_file: dict[str, dict[str, int]] = {}
    for name, (file, qualname) in SOLUTIONS.items():
        by_file.setdefault(file, {})[qualname] = numbers[name]
    for file, qualnames in by_file.items():
        path = out / file
        path.write_text(strip(path.read_text(encoding="utf-8"), qualnames), encoding="utf-8")
    return out


def main(argv=None) -> None:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 1:
        raise SystemExit("usage: python exercises/kit.py OUT_FOLDER")
    sys.path.insert(0, str(ROOT))
    out = build(Path(args[0]))
    print(f"wrote the student kit to {out}: hand it out; students start from "
          f"exercises/template.py and EXERCISES.md")


if __name__ == "__main__":
    main()
