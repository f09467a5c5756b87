"""The documents a user reads: short enough to read, the commands where a newcomer looks first,
every path they name present, and nothing about how the project was built (issue numbers,
dated logs) that a user cannot see or use."""
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def words(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").split())


def tracked_text_files() -> list[Path]:
    """The files git tracks (the tree a clone has), text ones only."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    files = [ROOT / name for name in listed.stdout.decode().split("\0") if name]
    suffixes = {".py", ".md", ".sh", ".ipynb", ".txt", ".toml", ".cfg", ""}
    return [f for f in files if f.is_file() and f.suffix in suffixes]


def test_the_guides_are_short_enough_to_read():
    assert words(README) < 3_500
    assert words(ROOT / "experiments" / "README.md") < 10_000
    # the prose people read; experiments/results/ holds the tables the scripts write
    results = ROOT / "experiments" / "results"
    guides = [f for f in tracked_text_files() if f.suffix == ".md" and results not in f.parents]
    assert len(guides) >= 4  # README, EXERCISES.md, experiments/ and bench/ READMEs, at least
    # EXERCISES.md is a course handout, long by nature: the cap makes room for it
    assert sum(words(f) for f in guides) < 22_000


def test_the_first_screen_has_both_set_up_commands_and_both_first_runs():
    """A newcomer reads the top: installing for a run and for the tests, then the paper's command
    for a GPU and the CPU preset's for a laptop."""
    top = README.read_text(encoding="utf-8").splitlines()[:60]
    text = "\n".join(top)
    assert "pip install -r requirements.txt && python train.py --size small" in text
    assert "pip install -r requirements-dev.txt && python -m pytest -q tests" in text
    assert re.search(r"python train\.py --size tiny --data \S+", text)


def test_every_path_the_readme_names_exists():
    """Paths of the repository in backticks or links: one under a folder of the repository must
    exist there, a bare file name somewhere in the tree. Run outputs (runs/, out/, cache/, ...)
    are not the repository's."""
    text = README.read_text(encoding="utf-8")
    named = set(re.findall(r"`([\w./-]+\.(?:py|md|png|ipynb|sh|json))`", text))
    named |= set(re.findall(r"\]\(([\w./-]+)\)", text))
    folders = {"support", "experiments", "bench", "notebooks", "tests", "exercises"}
    # what the commands write, named by the README as what a user will see
    outputs = {"curves.png", "finetune.png", "figure1.md", "figure1.png", "results.json"}
    tree_names = {f.name for f in tracked_text_files()} | outputs
    missing = sorted(p for p in named
                     if (p.split("/")[0] in folders and not (ROOT / p).exists())
                     or ("/" not in p and p not in tree_names))
    assert len(named) > 10, "the test found few paths: its pattern is wrong"
    assert not missing, f"README.md names paths that do not exist: {missing}"


ISSUE_REFERENCE = re.compile(r"\bissues? #?\d+|\(issue\b", re.IGNORECASE)
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")


@pytest.mark.parametrize("pattern", [ISSUE_REFERENCE, DATE], ids=["issue numbers", "dates"])
def test_no_tracked_text_tells_how_the_project_was_developed(pattern):
    """Issue numbers point to a tracker a user cannot see; dates belong to measurement logs."""
    found = []
    for f in tracked_text_files():
        if f == Path(__file__):
            continue
        for n, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if pattern.search(line):
                found.append(f"{f.relative_to(ROOT)}:{n}: {line.strip()[:80]}")
    assert not found, "\n".join(found[:20])


def test_the_readme_does_not_call_measured_paths_untested():
    text = README.read_text(encoding="utf-8").lower()
    assert "untested" not in text
