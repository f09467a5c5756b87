"""The "tapt" corpus of the CPU search's runs: the books, WikiText-2, and SST-2's training sentences
without their labels (task-adaptive pre-training, Gururangan et al. 2020).

    python experiments/tapt_corpus.py --data ../shared/data --out runs/tapt
    python train.py --size tiny --data runs/tapt ...

Into --out it writes:
- gutenberg/: the 12 Gutenberg books of DATA/corpus/gutenberg but austen-emma.txt (kept apart:
  the notebooks read Emma as text the model has not trained on);
- wikitext-2-raw/: WikiText-2's wiki.valid.raw and wiki.test.raw;
- sst2-train.txt: the `sentence` column of SST-2's train.tsv (67,349 rows), one per line, with a
  blank line after every --sentences-per-document of them (default 16, the CPU search's runs). A
  blank line ends a document (data.py), and train.py holds out whole documents: one document of
  67,349 lines would be held out whole or not at all. With 1, every sentence is an example of its
  own (the example builder packs a document's sentences, never two documents), so a masked word's
  context is its own review phrase, not the next phrases' mixed sentiments. SST-2's dev set is never
  read.

The books and WikiText are copied byte for byte (data.py decodes them); nothing is downloaded.
"""
from __future__ import annotations

import argparse
import csv
import shutil
import sys
from pathlib import Path

HELD_OUT_BOOK = "austen-emma.txt"  # the notebooks' sample text: never trained on
SENTENCES_PER_DOCUMENT = 16  # SST-2 sentences per document (a blank line after each group)


def sst2_documents(train_tsv: Path, per_document: int = SENTENCES_PER_DOCUMENT) -> str:
    """SST-2's training sentences, their labels dropped, as documents of `per_document` lines.

    >>> import tempfile
    >>> tsv = Path(tempfile.mkdtemp()) / "train.tsv"
    >>> _ = tsv.write_text("sentence\\tlabel\\n" + "".join(f"s{i} \\t1\\n" for i in range(18)))
    >>> text = sst2_documents(tsv)
    >>> text.count("\\n\\n"), text.splitlines()[:2], text.splitlines()[16:19]
    (2, ['s0', 's1'], ['', 's16', 's17'])
    >>> sst2_documents(tsv, per_document=1).splitlines()[:4]
    ['s0', '', 's1', '']
    """
    with open(train_tsv, encoding="utf-8", newline="") as f:
        rows = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        sentences = [row["sentence"].strip() for row in rows]
    lines = []
    for i, sentence in enumerate(sentences):
        lines.append(sentence)
        if (i + 1) % per_document == 0 or i == len(sentences) - 1:
            lines.append("")  # the document ends
    return "\n".join(lines) + "\n"


def build(data: Path, out: Path, per_document: int = SENTENCES_PER_DOCUMENT) -> list[Path]:
    """Write the corpus into `out` (which must not exist yet); the files written."""
    books = sorted((data / "corpus" / "gutenberg").glob("*.txt"))
    wiki = [data / "corpus" / "wikitext-2-raw" / n for n in ("wiki.valid.raw", "wiki.test.raw")]
    train_tsv = data / "glue" / "SST-2" / "train.tsv"
    missing = [p for p in [*wiki, train_tsv] if not p.is_file()]
    if not books or missing:
        raise SystemExit(f"--data {data}: expected corpus/gutenberg/*.txt, "
                         f"corpus/wikitext-2-raw/ and glue/SST-2/train.tsv; missing "
                         f"{[str(p) for p in missing] or 'the books'}")
    if out.exists():
        raise SystemExit(f"--out {out} exists: choose a new folder")
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "gutenberg").mkdir(parents=True)
    (tmp / "wikitext-2-raw").mkdir()
    for book in books:
        if book.name != HELD_OUT_BOOK:
            shutil.copyfile(book, tmp / "gutenberg" / book.name)
    for raw in wiki:
        shutil.copyfile(raw, tmp / "wikitext-2-raw" / raw.name)
    (tmp / "sst2-train.txt").write_text(sst2_documents(train_tsv, per_document), encoding="utf-8")
    tmp.rename(out)  # all or nothing: a stopped build leaves no half corpus under --out
    return sorted(p for p in out.rglob("*") if p.is_file())


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="../shared/data",
                   help="the shared data folder: corpus/ and glue/SST-2/ (default %(default)s)")
    p.add_argument("--out", default="runs/tapt", help="the corpus folder (default %(default)s)")
    p.add_argument("--sentences-per-document", type=int, default=SENTENCES_PER_DOCUMENT,
                   help="SST-2 sentences between two blank lines (default %(default)s)")
    args = p.parse_args(argv)
    if args.sentences_per_document < 1:
        raise SystemExit(f"--sentences-per-document {args.sentences_per_document}: must be an "
                         f"integer >= 1")
    files = build(Path(args.data), Path(args.out), args.sentences_per_document)
    size = sum(f.stat().st_size for f in files)
    print(f"{args.out}: {len(files)} files, {size / 1e6:.1f} MB")


if __name__ == "__main__":
    sys.exit(main())
