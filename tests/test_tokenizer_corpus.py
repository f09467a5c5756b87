"""tokenizer.py corpora: encodings and line endings, encode_corpus layout, workers, cache."""
import dataclasses

import numpy as np
import pytest

import tokenizer
from tokenizer import CONFIG, Tokenizer, encode_corpus, read_corpus

TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "##s", "sat", ".", "cafe", "caesar", ","]


def make_corpus(folder):
    folder.mkdir()
    (folder / "a.txt").write_text("The cat sat.\n\nCats sat.\n", encoding="utf-8")
    (folder / "b.txt").write_bytes("Caesar, café\r\nthe cat\rsat".encode("latin-1"))  # Latin-1, CRLF and CR, no final newline
    (folder / "notes.md").write_text("not a corpus file", encoding="utf-8")
    return folder


def test_read_corpus_encodings_and_line_endings(tmp_path, capsys):
    corpus = make_corpus(tmp_path / "corpus")
    files = list(read_corpus(corpus))
    assert [name for name, _ in files] == [str(corpus / "a.txt"), str(corpus / "b.txt")]  # sorted, .txt only
    assert files[0][1] == "The cat sat.\n\nCats sat.\n"
    assert files[1][1] == "Caesar, café\nthe cat\nsat"  # every Latin-1 byte kept; CRLF and CR -> LF
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "b.txt" in err[0] and "Latin-1" in err[0]
    # a single file, UTF-8 with a byte-order mark: the mark is dropped, no warning
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbfhello\r\n")
    assert list(read_corpus(tmp_path / "bom.txt")) == [(str(tmp_path / "bom.txt"), "hello\n")]
    assert capsys.readouterr().err == ""


def test_read_corpus_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_corpus(tmp_path / "missing")
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(ValueError, match="no .txt files"):
        read_corpus(tmp_path / "empty_dir")
    (tmp_path / "blank").mkdir()
    (tmp_path / "blank" / "x.txt").write_text(" \n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no text"):
        list(read_corpus(tmp_path / "blank"))


def test_encode_corpus_layout(tmp_path):
    corpus = make_corpus(tmp_path / "corpus")
    tok = Tokenizer(TOKENS)
    ids, offsets = encode_corpus(corpus, tok, tmp_path / "cache", workers=1, progress=False)
    # a.txt: "The cat sat." | "" | "Cats sat." | "" (after the final newline)
    # b.txt: "Caesar, café" | "the cat" | "sat" | "" (added: each file ends a document)
    lines = ["The cat sat.", "", "Cats sat.", "", "Caesar, café", "the cat", "sat", ""]
    assert offsets.dtype == np.int64 and len(offsets) == len(lines) + 1 and offsets[0] == 0
    assert ids.dtype == np.uint16  # 13 tokens fit in 16 bits
    for i, line in enumerate(lines):
        assert ids[offsets[i]:offsets[i + 1]].tolist() == tok.encode(line)
    assert ids[offsets[4]:offsets[5]].tolist() == [11, 12, 10]  # caesar , cafe (accent stripped)


def test_encode_corpus_workers_and_cache(tmp_path, monkeypatch):
    corpus = make_corpus(tmp_path / "corpus")
    small_chunks = dataclasses.replace(CONFIG, corpus_chunk_chars=10)  # several chunks for the workers
    tok = Tokenizer(TOKENS, config=small_chunks)
    one = encode_corpus(corpus, tok, tmp_path / "cache1", workers=1, progress=False)
    two = encode_corpus(corpus, tok, tmp_path / "cache2", workers=2, progress=False)
    assert all(np.array_equal(x, y) for x, y in zip(one, two))

    def must_not_run(*args, **kwargs):
        raise AssertionError("the second call should load the cache, not tokenise")

    monkeypatch.setattr(tokenizer, "_encode_lines", must_not_run)
    again = encode_corpus(corpus, tok, tmp_path / "cache1", workers=1, progress=False)
    assert all(np.array_equal(x, y) for x, y in zip(one, again))
    assert len(list((tmp_path / "cache1").iterdir())) == 1  # no temp files left behind
    # a different vocab, a cased tokenizer or a changed corpus must not reuse the cache
    for other_tok in (Tokenizer(TOKENS + ["mat"]), Tokenizer(TOKENS, lowercase=False)):
        with pytest.raises(AssertionError, match="load the cache"):
            encode_corpus(corpus, other_tok, tmp_path / "cache1", workers=1, progress=False)
    (corpus / "a.txt").write_text("The cat sat!\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="load the cache"):
        encode_corpus(corpus, tok, tmp_path / "cache1", workers=1, progress=False)


def test_encode_corpus_uint32_for_big_vocabs(tmp_path):
    (tmp_path / "c.txt").write_text("w69999 the\n", encoding="utf-8")
    tok = Tokenizer(TOKENS + [f"w{i}" for i in range(70000)])
    ids, _ = encode_corpus(tmp_path / "c.txt", tok, tmp_path / "cache", workers=1, progress=False)
    assert ids.dtype == np.uint32 and ids.tolist() == [tok.vocab["w69999"], 5]


def test_read_corpus_takes_wikitext_raw_files(tmp_path):
    (tmp_path / "wiki.valid.raw").write_text(" = Title = \n", encoding="utf-8")
    (tmp_path / "README").write_text("not text of the corpus", encoding="utf-8")
    assert list(read_corpus(tmp_path)) == [(str(tmp_path / "wiki.valid.raw"), " = Title = \n")]


def test_binary_files_are_refused_with_their_name(tmp_path):
    png = tmp_path / "image.txt"  # a PNG header: NUL bytes
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(ValueError, match=r"image.txt is not a text file \(it has NUL bytes\)"):
        list(read_corpus(png))
    noise = tmp_path / "noise.txt"  # no NUL but mostly control characters (here 30 of 40)
    noise.write_bytes(b"\x01\x02\x03\x04\x05\x06" * 5 + b"plain text")
    with pytest.raises(ValueError, match=r"noise.txt is not a text file \(75% of its characters are control"):
        list(read_corpus(noise))
    ok = tmp_path / "ok.txt"  # a stray form feed or escape in real text is fine
    ok.write_bytes(b"a page\x0cthe next page \x1b[1mbold\n" + b"plain words here . " * 20)
    assert list(read_corpus(ok))[0][1].startswith("a page\x0c")
