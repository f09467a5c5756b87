"""experiments/tapt_corpus.py: the CPU search's corpus built from a shared-data folder made here."""
import doctest
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load():
    spec = importlib.util.spec_from_file_location("tapt_corpus",
                                                  ROOT / "experiments" / "tapt_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shared_data(root: Path, sentences: int) -> Path:
    """The layout of ../shared/data, with two books (Emma one of them), WikiText-2 and SST-2."""
    (root / "corpus" / "gutenberg").mkdir(parents=True)
    (root / "corpus" / "gutenberg" / "austen-emma.txt").write_text("Emma Woodhouse.\n")
    (root / "corpus" / "gutenberg" / "blake-poems.txt").write_bytes(b"Tyger \xa1\r\nburning\r\n")
    (root / "corpus" / "wikitext-2-raw").mkdir()
    for name in ("wiki.valid.raw", "wiki.test.raw"):
        (root / "corpus" / "wikitext-2-raw" / name).write_text(f" = {name} = \n")
    (root / "glue" / "SST-2").mkdir(parents=True)
    rows = "".join(f"phrase {i} \t{i % 2}\n" for i in range(sentences))
    (root / "glue" / "SST-2" / "train.tsv").write_text("sentence\tlabel\n" + rows)
    (root / "glue" / "SST-2" / "dev.tsv").write_text("sentence\tlabel\nnever read \t1\n")
    return root


def test_docstring_examples():
    assert doctest.testmod(load()).failed == 0


@pytest.mark.parametrize("per_document, blank_lines", [(16, 3), (1, 40)])
def test_builds_books_but_emma_wikitext_and_unlabelled_sst2(tmp_path, per_document, blank_lines):
    tapt = load()
    data = shared_data(tmp_path / "data", sentences=40)
    out = tmp_path / "tapt"
    tapt.main(["--data", str(data), "--out", str(out),
               "--sentences-per-document", str(per_document)])
    names = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert names == ["gutenberg/blake-poems.txt", "sst2-train.txt", "wikitext-2-raw/wiki.test.raw",
                     "wikitext-2-raw/wiki.valid.raw"]
    # byte for byte: the Latin-1 byte and the CRLF line ends are data.py's to read
    assert (out / "gutenberg" / "blake-poems.txt").read_bytes() == b"Tyger \xa1\r\nburning\r\n"
    text = (out / "sst2-train.txt").read_text()
    assert "label" not in text and "\t" not in text and "never read" not in text
    lines = text.splitlines()
    assert [line for line in lines if line] == [f"phrase {i}" for i in range(40)]
    # 40 sentences: documents of 16, 16 and 8 (three blank lines), or 40 of one
    assert lines.count("") == blank_lines and lines[-1] == ""
    assert not (tmp_path / "tapt.tmp").exists()


def test_refuses_an_existing_folder_and_missing_parts(tmp_path):
    tapt = load()
    data = shared_data(tmp_path / "data", sentences=3)
    (tmp_path / "taken").mkdir()
    with pytest.raises(SystemExit, match="--out .*taken exists: choose a new folder"):
        tapt.main(["--data", str(data), "--out", str(tmp_path / "taken")])
    (data / "glue" / "SST-2" / "train.tsv").unlink()
    with pytest.raises(SystemExit, match=r"missing \[.*train.tsv'\]"):
        tapt.main(["--data", str(data), "--out", str(tmp_path / "new")])
    assert not (tmp_path / "new").exists()
    with pytest.raises(SystemExit, match="--sentences-per-document 0: must be an integer >= 1"):
        tapt.main(["--data", str(data), "--out", str(tmp_path / "new"),
                   "--sentences-per-document", "0"])
