"""data.py's known corpus "books", the laptop experiments' text: 12 books of NLTK's Gutenberg
selection and WikiText-2's valid and test splits, downloaded from a local server (never the
internet) as zips laid out like the real ones."""
import zipfile

import pytest

import data

# the selection's 18 books: the 12 kept, Emma and 5 more the experiments never trained on
OTHERS = ("austen-emma.txt", "bible-kjv.txt", "bryant-stories.txt", "burgess-busterbrown.txt",
          "carroll-alice.txt", "edgeworth-parents.txt")


def serve(root, latin1=b"caf\xe9 society .\n"):
    """gutenberg.zip (gutenberg/README and 18 books; one Latin-1, one CRLF) and
    wikitext-2-raw-v1.zip (its three splits) in `root`; returns the WikiText zip's size."""
    with zipfile.ZipFile(root / "gutenberg.zip", "w") as z:
        z.writestr("gutenberg/README", "Project Gutenberg Selections\n")
        special = {"shakespeare-caesar.txt": latin1,
                   "melville-moby_dick.txt": b"call me ishmael .\r\n\r\nthe end .\r\n"}
        for name in data.BOOKS + OTHERS:
            z.writestr(f"gutenberg/{name}", special.get(name, f"the text of {name} .\n"))
    with zipfile.ZipFile(root / "wikitext-2-raw-v1.zip", "w") as z:
        for split in ("train", "valid", "test"):
            z.writestr(f"wikitext-2-raw/wiki.{split}.raw", f" = {split} = \n the {split} .\n")
    return (root / "wikitext-2-raw-v1.zip").stat().st_size


def test_books_downloads_the_12_books_and_wikitext2_valid_and_test(http_server, tmp_path,
                                                                   monkeypatch):
    root, url = http_server
    size = serve(root)
    monkeypatch.setattr(data, "GUTENBERG_URL", url)
    monkeypatch.setitem(data.KNOWN_CORPORA, "wikitext-2",
                        ("wikitext-2-raw-v1.zip", size, "wikitext-2-raw", "wiki.train.raw"))
    folder = data.resolve_corpus("books", tmp_path / "cache", url)
    assert folder == tmp_path / "cache" / "books"
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert files == sorted([*(f"gutenberg/{b}" for b in data.BOOKS),
                            "wikitext-2-raw/wiki.test.raw", "wikitext-2-raw/wiki.valid.raw"])
    assert len(data.BOOKS) == 12 and "austen-emma.txt" not in data.BOOKS
    # byte for byte: the loader, not the download, decodes Latin-1 and CRLF
    assert (folder / "gutenberg/shakespeare-caesar.txt").read_bytes() == b"caf\xe9 society .\n"
    texts = dict(data.read_corpus(folder))
    assert texts[str(folder / "gutenberg/shakespeare-caesar.txt")] == "caf\u00e9 society .\n"
    assert "\r" not in texts[str(folder / "gutenberg/melville-moby_dick.txt")]
    assert (folder / "wikitext-2-raw/wiki.valid.raw").read_text() == " = valid = \n the valid .\n"
    # cached: a second call needs no server
    monkeypatch.setattr(data, "GUTENBERG_URL", "http://127.0.0.1:9")
    assert data.resolve_corpus("books", tmp_path / "cache", "http://127.0.0.1:9") == folder


def test_books_names_a_missing_book_and_leaves_no_folder(http_server, tmp_path, monkeypatch):
    root, url = http_server
    size = serve(root)
    with zipfile.ZipFile(root / "gutenberg.zip", "w") as z:  # a selection without Hamlet
        for name in data.BOOKS:
            if name != "shakespeare-hamlet.txt":
                z.writestr(f"gutenberg/{name}", "text .\n")
    monkeypatch.setattr(data, "GUTENBERG_URL", url)
    monkeypatch.setitem(data.KNOWN_CORPORA, "wikitext-2",
                        ("wikitext-2-raw-v1.zip", size, "wikitext-2-raw", "wiki.train.raw"))
    with pytest.raises(data.DownloadError, match="shakespeare-hamlet.txt"):
        data.resolve_corpus("books", tmp_path / "cache", url)
    assert not (tmp_path / "cache" / "books").exists()
    assert not list((tmp_path / "cache").glob("books.*.tmp"))


def test_books_offline_is_one_message_naming_a_local_path(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "GUTENBERG_URL", "http://127.0.0.1:9")  # nothing listens there
    with pytest.raises(data.DownloadError, match=r"(?s)could not download gutenberg\.zip.*--data"):
        data.resolve_corpus("books", tmp_path / "cache", "http://127.0.0.1:9")
    assert not (tmp_path / "cache" / "books").exists()
