"""The course as a teacher and a student use it: the grade sheet (text, JSON, CSV, a time limit
per check), the capstone (the student's pieces in train.py's loop learn; a failing part is named
instead), and the student kit (no solution in it, and its checks run with the kit alone).

project_solution_file() writes the template with every exercise's def replaced by the project's
own: a student file made of the answer key, graded through the same route as a student's."""
import ast
import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from test_exercises import solution

from exercises import capstone, grade, harness, kit

ROOT = Path(__file__).resolve().parents[1]
MODULES = {"electra.py": "electra", "tokenizer.py": "tokenizer", "finetune.py": "finetune",
           "electric.py": "electric"}


def _span(node) -> tuple[int, int]:
    """A def's lines, decorators included (1-based, inclusive)."""
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return first, node.end_lineno


def project_solution_source() -> str:
    """The template with each exercise's def replaced by the project's def (decorators and
    docstring included), and imports of the project's helpers those defs use."""
    template = harness.TEMPLATE.read_text(encoding="utf-8")
    tree = ast.parse(template)
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    lines = template.splitlines(keepends=True)
    replaced, imports = [], set()
    for ex in grade.EXERCISES:
        file, qualname = kit.SOLUTIONS[ex.name]
        source = (ROOT / file).read_text(encoding="utf-8")
        module = ast.parse(source)
        theirs = kit.find(module, qualname)
        mine = kit.find(tree, ex.name)
        first, last = _span(theirs)
        body = source.splitlines(keepends=True)[first - 1:last]
        replaced.append((*_span(mine), body))
        module_names = {n.name for n in module.body
                        if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        module_names |= {t.id for n in module.body if isinstance(n, ast.Assign)
                         for t in n.targets if isinstance(t, ast.Name)}
        module_names |= {a.asname or a.name for n in module.body
                         if isinstance(n, ast.ImportFrom) for a in n.names}
        used = {n.id for n in ast.walk(theirs) if isinstance(n, ast.Name)}
        imports |= {(MODULES[file], name) for name in used & module_names - defined}
    for first, last, body in sorted(replaced, reverse=True):
        lines[first - 1:last] = body
    after_imports = max(n.end_lineno for n in tree.body
                        if isinstance(n, (ast.Import, ast.ImportFrom)))
    lines[after_imports:after_imports] = [f"from {module} import {name}\n"
                                          for module, name in sorted(imports)]
    return "".join(lines)


@pytest.fixture(scope="module")
def project_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("solution") / "project_solution.py"
    path.write_text(project_solution_source(), encoding="utf-8")
    return path


def test_the_sheet_passes_the_project_and_fails_the_template(project_file, tmp_path, capsys):
    grades = grade.main([str(project_file), "--no-capstone", "--json", str(tmp_path / "g.json")])
    assert all(g.passed for g in grades) and len(grades) == len(grade.EXERCISES), \
        [(g.number, g.message) for g in grades if not g.passed]
    rows = json.loads((tmp_path / "g.json").read_text())
    assert sum(r["points"] for r in rows) == sum(ex.points for ex in grade.EXERCISES)
    # a class: two files, one table with their names, in a folder that does not exist yet
    out = tmp_path / "grades" / "class.csv"
    grade.main([str(harness.TEMPLATE), str(project_file), "--no-capstone", "--csv", str(out)])
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    template_rows = [r for r in rows if r["file"] == str(harness.TEMPLATE)]
    assert [int(r["number"]) for r in template_rows] == [ex.number for ex in grade.EXERCISES]
    for r, ex in zip(template_rows, grade.EXERCISES):
        assert r["passed"] == "False" and r["points"] == "0"
        assert f"exercise {ex.number}: write {ex.name}" in r["message"]
    assert all(r["passed"] == "True" for r in rows if r["file"] == str(project_file))
    sheet = capsys.readouterr().out
    assert f"total 0/{sum(ex.points for ex in grade.EXERCISES)}" in sheet


def test_an_endless_loop_fails_its_check_and_the_sheet_goes_on(tmp_path):
    path = tmp_path / "loops.py"
    path.write_text(harness.TEMPLATE.read_text() + "\n\ndef corrupt(x, m, m_valid, x_hat):\n"
                    "    while True:\n        pass\n")
    chosen = [ex for ex in grade.EXERCISES if ex.name in ("corrupt", "mlm_loss")]
    looped, after = grade.grade(path, chosen, time_limit=3)
    assert not looped.passed and "no answer within 3 s" in looped.message
    assert not after.passed and "exercise 11: write mlm_loss" in after.message


def test_a_failing_part_is_named_instead_of_training(project_file, tmp_path):
    """The capstone runs parts 1-3's checks first: a wrong corrupt() (exercise 10) names Section
    2's part, and nothing trains."""
    wrong = tmp_path / "wrong_corrupt.py"
    wrong.write_text(project_file.read_text() + "\n\ndef corrupt(x, m, m_valid, x_hat):\n"
                     "    x_corrupt = replace(x, m, x_hat)\n"
                     "    return x_corrupt, x_corrupt == -1\n")
    passed, line = capstone.grade_line(wrong)
    assert not passed and line.startswith("not run") and "section2" in line, line
    assert "encoder" not in line and "tokenizer" not in line, line


def test_the_capstone_passes_with_the_project_s_functions(monkeypatch, tmp_path):
    """The same-noise run reproduces the stored reference run, and D learns; the learning run is
    cut short here (the student's command runs capstone.LEARN_STEPS)."""
    monkeypatch.setattr(capstone, "LEARN_STEPS", 60)
    passed, line = capstone.run(solution(), say=lambda line: None)
    assert passed, line


def test_the_same_noise_run_names_a_wrong_loss(monkeypatch, tmp_path):
    """lambda left out of the joint loss: its first update's losses differ from the reference
    run's, and the line says which update and what both runs got."""
    import electra

    project_forward = electra.Electra.forward

    def no_lambda(self, *args, **kwargs):
        out = project_forward(self, *args, **kwargs)
        out.loss = out.mlm_loss + out.disc_loss
        return out

    wrong = solution(Electra=type("Electra", (electra.Electra,), {"forward": no_lambda}))
    trace = torch.load(capstone.TRACE, weights_only=False)
    line = capstone.same_noise(wrong, trace, tmp_path)
    assert line and line.startswith("same noise, update 1:"), line


def test_the_kit_holds_no_solution_and_grades_alone(project_file, tmp_path):
    out = kit.build(tmp_path / "kit")
    assert not (out / "tests").exists() and not (out / "exercises" / "kit.py").exists()
    bodies = {}
    for name, (file, qualname) in kit.SOLUTIONS.items():
        node = kit.find(ast.parse((ROOT / file).read_text()), qualname)
        bodies[name] = [ast.dump(s) for s in node.body[1:]] or [ast.dump(node.body[0])]
        stripped = kit.find(ast.parse((out / file).read_text()), qualname)
        assert ast.get_docstring(stripped) == ast.get_docstring(node), name
    for path in out.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                dumped = [ast.dump(s) for s in node.body if not (
                    isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
                for name, body in bodies.items():
                    assert dumped != body, f"{path.relative_to(out)} holds {name}'s solution"
    for name, args, code in [("the project's functions", [str(project_file)], 0),
                             ("the template", [str(out / "exercises" / "template.py")], 1)]:
        done = subprocess.run([sys.executable, "exercises/grade.py", *args, "--no-capstone"],
                              cwd=out, capture_output=True, text=True, timeout=600)
        assert done.returncode == code, f"{name}:\n{done.stdout}\n{done.stderr}"
    assert "exercise 6: yours to write" in (out / "electra.py").read_text()


def test_every_check_is_proven_to_reject_two_named_wrong_versions():
    """Each part's test file feeds its checks named wrong versions (WRONG); every exercise must
    have at least two, each rejected there."""
    import test_exercises_beyond
    import test_exercises_encoder
    import test_exercises_finetuning
    import test_exercises_section2_losses
    import test_exercises_section2_sampling
    import test_exercises_tokenizer

    counts = {}
    for module in (test_exercises_encoder, test_exercises_section2_sampling,
                   test_exercises_section2_losses, test_exercises_tokenizer,
                   test_exercises_finetuning, test_exercises_beyond):
        for check, _ in module.WRONG.values():
            counts[check] = counts.get(check, 0) + 1
    few = {ex.name: counts.get(ex.check, 0) for ex in grade.EXERCISES
           if counts.get(ex.check, 0) < 2}
    assert not few, f"exercises with fewer than two named wrong versions: {few}"


def test_the_handout_s_commands_are_the_sheet_s():
    """Every grade.py command EXERCISES.md prints parses, with the parts and numbers it names."""
    text = (ROOT / "EXERCISES.md").read_text(encoding="utf-8")
    commands = [line.split("#")[0].split() for line in text.splitlines()
                if line.strip().startswith("python exercises/grade.py")]
    assert len(commands) >= 3
    for cmd in commands:
        args = grade.parse_args([a.strip('"') for a in cmd[2:]])
        assert args.exercise is None or set(args.exercise) <= {e.number for e in grade.EXERCISES}
