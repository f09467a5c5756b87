"""data.py: corpus files and decoding, WikiText, encode_corpus and its cache, documents, the
official example builder, batches."""
import os
import random
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import data
from data import (
    Batches,
    ExampleBuilder,
    build_examples,
    documents,
    encode_corpus,
    pretraining_batch,
    read_corpus,
    wikitext_documents,
)
from support import shards
from tokenizer import Tokenizer

CLS, SEP, PAD = 2, 3, 0
TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "##s", "sat", ".", "cafe",
          "caesar", ","]


def make_corpus(folder):
    folder.mkdir()
    (folder / "a.txt").write_text("The cat sat.\n\nCats sat.\n", encoding="utf-8")
    # Latin-1, CRLF and CR, no final newline
    (folder / "b.txt").write_bytes("Caesar, café\r\nthe cat\rsat".encode("latin-1"))
    (folder / "notes.md").write_text("not a corpus file", encoding="utf-8")
    return folder


def test_read_corpus_encodings_and_line_endings(tmp_path, capsys):
    corpus = make_corpus(tmp_path / "corpus")
    files = list(read_corpus(corpus))
    # sorted, .txt only
    assert [name for name, _ in files] == [str(corpus / "a.txt"), str(corpus / "b.txt")]
    assert files[0][1] == "The cat sat.\n\nCats sat.\n"
    # every Latin-1 byte kept; CRLF and CR -> LF
    assert files[1][1] == "Caesar, café\nthe cat\nsat"
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
    tok = Tokenizer(TOKENS)
    one = encode_corpus(corpus, tok, tmp_path / "cache1", workers=1, progress=False, chunk_chars=10)
    # several chunks
    two = encode_corpus(corpus, tok, tmp_path / "cache2", workers=2, progress=False, chunk_chars=10)
    assert all(np.array_equal(x, y) for x, y in zip(one, two))

    def must_not_run(*args, **kwargs):
        raise AssertionError("the second call should load the cache, not tokenise")

    monkeypatch.setattr(data, "_encode_lines", must_not_run)
    again = encode_corpus(corpus, tok, tmp_path / "cache1", workers=1, progress=False)
    assert all(np.array_equal(x, y) for x, y in zip(one, again))
    names = sorted(f.name for f in (tmp_path / "cache1").iterdir())  # no temp files left behind
    assert len(names) == 2 and names[1].startswith("corpus-files-")
    # a different vocab, a cased tokenizer or a changed corpus must not reuse the cache
    for other_tok in (Tokenizer(TOKENS + ["mat"]), Tokenizer(TOKENS, lowercase=False)):
        with pytest.raises(AssertionError, match="load the cache"):
            encode_corpus(corpus, other_tok, tmp_path / "cache1", workers=1, progress=False)
    (corpus / "a.txt").write_text("The cat sat!\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="load the cache"):
        encode_corpus(corpus, tok, tmp_path / "cache1", workers=1, progress=False)


def test_a_second_start_reads_none_of_the_text(tmp_path, monkeypatch):
    """A start that finds the files as tokenised (paths, sizes, modification times) opens none of
    them; a changed size or modification time is seen, and the text read again."""
    corpus = make_corpus(tmp_path / "corpus")
    tok = Tokenizer(TOKENS)
    cache = tmp_path / "cache"
    first = encode_corpus(corpus, tok, cache, workers=1, progress=False)
    opened = []
    real_open = open

    def recording_open(file, *args, **kwargs):
        opened.append(Path(file))
        return real_open(file, *args, **kwargs)

    def no_hash(*args, **kwargs):
        raise AssertionError("the text was hashed again")

    monkeypatch.setattr("builtins.open", recording_open)
    with monkeypatch.context() as m:
        m.setattr(shards, "hash_shards", no_hash)
        again = encode_corpus(corpus, tok, cache, workers=1, progress=False)
    assert all(np.array_equal(x, y) for x, y in zip(first, again))
    assert not [f for f in opened if corpus in f.parents], "the corpus's files were opened"

    # the same size, another modification time: read again, and the new text tokenised
    a = corpus / "a.txt"
    a.write_text("The cat sat!\n\nCats sat.\n", encoding="utf-8")  # as long as before
    os.utime(a, ns=(a.stat().st_atime_ns, a.stat().st_mtime_ns + 10**9))
    ids, offsets = encode_corpus(corpus, tok, cache, workers=1, progress=False)
    assert ids[offsets[0]:offsets[1]].tolist() == tok.encode("The cat sat!")
    assert a in opened
    # another size: read again
    a.write_text("Cats.\n", encoding="utf-8")
    ids, offsets = encode_corpus(corpus, tok, cache, workers=1, progress=False)
    assert ids[offsets[0]:offsets[1]].tolist() == tok.encode("Cats.")
    # a new file in the folder: read again
    (corpus / "c.txt").write_text("The cats.\n", encoding="utf-8")
    ids, offsets = encode_corpus(corpus, tok, cache, workers=1, progress=False)
    assert ids[offsets[-3]:offsets[-2]].tolist() == tok.encode("The cats.")


def test_a_cache_without_its_note_is_read_once_not_tokenised_again(tmp_path, monkeypatch):
    """A cache written before the notes existed (or whose note is lost or garbled) is found by
    hashing the text once; a note naming a folder that is gone is ignored."""
    corpus = make_corpus(tmp_path / "corpus")
    tok = Tokenizer(TOKENS)
    cache = tmp_path / "cache"
    first = encode_corpus(corpus, tok, cache, workers=1, progress=False)
    [note] = cache.glob("corpus-files-*")
    note.unlink()

    def must_not_run(*args, **kwargs):
        raise AssertionError("tokenised again")

    with monkeypatch.context() as m:
        m.setattr(data, "_encode_lines", must_not_run)
        again = encode_corpus(corpus, tok, cache, workers=1, progress=False)
    assert all(np.array_equal(x, y) for x, y in zip(first, again))
    assert note.is_file()
    for garbled in ("corpus-gone", "../corpus", "\udcff"):
        note.write_text(garbled, encoding="utf-8", errors="surrogateescape")
        again = encode_corpus(corpus, tok, cache, workers=1, progress=False)
        assert all(np.array_equal(x, y) for x, y in zip(first, again))
    assert shards.read_note(note) == next(cache.glob("corpus-[!f]*"))


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
    with pytest.raises(ValueError,
                       match=r"noise.txt is not a text file \(75% of its characters are control"):
        list(read_corpus(noise))
    ok = tmp_path / "ok.txt"  # a stray form feed or escape in real text is fine
    ok.write_bytes(b"a page\x0cthe next page \x1b[1mbold\n" + b"plain words here . " * 20)
    assert list(read_corpus(ok))[0][1].startswith("a page\x0c")


@pytest.mark.parametrize("encoding, iconv", [("utf-16", "UTF-16"), ("utf-16-le", "UTF-16LE"),
                                              ("utf-16-be", "UTF-16BE")])
def test_utf16_files_are_named_with_how_to_convert_them(tmp_path, encoding, iconv):
    text = tmp_path / "notes.txt"  # with a byte order mark (utf-16), or NUL in every other byte
    text.write_bytes("The cat sat on the mat.\nA second line.\n".encode(encoding))
    with pytest.raises(ValueError) as e:
        list(read_corpus(text))
    assert str(e.value) == (f"{text} looks like UTF-16 text: convert it to UTF-8, e.g. iconv -f "
                            f"{iconv} -t UTF-8 {text} > {tmp_path / 'notes-utf8.txt'}")
    # the command it names gives a file that reads
    converted = tmp_path / "notes-utf8.txt"
    converted.write_text(text.read_bytes().decode(encoding), encoding="utf-8")
    assert list(read_corpus(converted))[0][1] == "The cat sat on the mat.\nA second line.\n"


def test_wikitext_articles_become_documents(tmp_path):
    raw = tmp_path / "wiki.train.raw"
    raw.write_text(" \n = A = \n\n x . y ?\n\n = = S = = \n z .\n = B = \n w !\n")
    out = wikitext_documents(raw, tmp_path / "train.txt")
    # headings dropped, one sentence a line, a blank line where article B starts
    assert out.read_text() == "x .\ny ?\nz .\n\nw !\n"


def _offsets(lengths):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def test_builder_worked_example():
    # max_len 16: sentences of 6, 5, 7 tokens; 6 + 5 = 11 < 16, so the third ends the example
    # (18 >= 16).
    # Random(0).random() = 0.844 >= 0.1: two segments; A's target = (16 - 3) // 2 = 6.
    # 6 -> A (A empty); 5: 6 + 5 = 11 >= 6 and A is already at its target (6 < 6 fails) -> B;
    # 7 -> B.
    # A = 6 tokens (<= 16 - 2), B = 5 + 7 = 12 trimmed to 16 - 6 - 3 = 7.
    b = ExampleBuilder(max_len=16, rng=random.Random(0))
    assert b.add_sentence(0, 6) is None and b.add_sentence(6, 5) is None
    assert b.add_sentence(11, 7) == (0, 6, 6, 7)
    # A document end flushes what is gathered, even below the target length.
    b = ExampleBuilder(max_len=16, rng=random.Random(0))
    b.target_len = 16
    assert b.add_sentence(100, 4) is None
    assert b.end_document() == (100, 4, 104, 0)  # one sentence: everything in A, no B
    assert b.end_document() is None  # nothing left


def test_single_long_sentence_is_trimmed_to_max_len():
    b = ExampleBuilder(max_len=10, rng=random.Random(1))
    a_start, a_len, b_start, b_len = b.add_sentence(0, 50)
    assert (a_start, a_len, b_len) == (0, 8, 0)  # 8 tokens + [CLS] + [SEP] = 10


def test_documents_split_at_blank_lines():
    # line lengths [3, 2, 0, 0, 4]: lines 0-1 are a document, the two blank lines end it, line 4
    # is another.
    assert documents(_offsets([3, 2, 0, 0, 4])) == [(0, 2), (4, 5)]
    assert documents(_offsets([0, 1, 0])) == [(1, 2)]


def test_pretraining_batch_worked_example():
    ids = np.array([7, 8, 9], dtype=np.uint16)
    x, s, m = pretraining_batch(ids, np.array([[0, 2, 2, 1]]), 8, CLS, SEP, PAD)
    assert x.tolist() == [[CLS, 7, 8, SEP, 9, SEP, PAD, PAD]]
    assert s.tolist() == [[0, 0, 0, 0, 1, 1, 0, 0]]
    assert m.tolist() == [[1, 1, 1, 1, 1, 1, 0, 0]]
    x, s, m = pretraining_batch(ids, np.array([[1, 2, 3, 0]]), 6, CLS, SEP, PAD)  # single segment
    assert x.tolist() == [[CLS, 8, 9, SEP, PAD, PAD]] and s.tolist() == [[0] * 6]


def _corpus(num_docs, rng, sentence_len=(5, 16), doc_sentences=(1, 30)):
    """Line lengths of num_docs documents (blank line after each) and ids = each token's document
    id."""
    lengths, doc_of_token = [], []
    for d in range(num_docs):
        for _ in range(rng.randint(*doc_sentences)):
            n = rng.randint(*sentence_len)
            lengths.append(n)
            doc_of_token += [d] * n
        lengths.append(0)
    return _offsets(lengths), np.array(doc_of_token, dtype=np.int64)


def test_example_invariants():
    offsets, doc_of_token = _corpus(400, random.Random(0))
    max_len = 64
    train, held = build_examples(offsets, max_len, seed=0, eval_fraction=0.1)
    assert len(train) > 500 and len(held) > 50
    for examples in (train, held):
        a, la, b, lb = examples.T
        # fits with [CLS] [SEP] ([SEP])
        assert (la >= 1).all() and (la + lb + 2 + (lb > 0) <= max_len).all()
        assert (b >= a + la).all()  # B follows A in the text
        # No example crosses a document boundary: its first and last token belong to the same
        # document.
        last = np.where(lb > 0, b + lb - 1, a + la - 1)
        assert (doc_of_token[a] == doc_of_token[last]).all()
        # ids clear of the specials
        x, s, m = pretraining_batch(doc_of_token + 10, examples, max_len, CLS, SEP, PAD)
        n = m.sum(1)
        assert (x[:, 0] == CLS).all() and (x[np.arange(len(x)), n - 1] == SEP).all()
        assert ((x == SEP) & m).sum(1).tolist() == (1 + (lb > 0)).tolist()
        assert (x[~m] == PAD).all() and (s[~m] == 0).all()
        # segment ids: 0 on [CLS] A [SEP], 1 on B [SEP]; they never go back from 1 to 0 inside the
        # text
        assert (s[:, : 2] == 0).all() and (s.sum(1) == np.where(lb > 0, lb + 1, 0)).all()
        assert ((np.diff(s * m, axis=1) >= -1).all()
                and ((np.diff(s, axis=1) == -1).sum(1) <= 1).all())
    # Held-out examples come from documents 0, 10, 20, ... only; training examples from the others.
    assert ((doc_of_token[held[:, 0]] % 10 == 0).all()
            and (doc_of_token[train[:, 0]] % 10 != 0).all())


def test_official_proportions():
    # Long documents of short sentences: an example ends early only by the official 5% random
    # target length, and two segments are always possible, so single-segment examples are the
    # official 10% (plus the rare random target too short for two sentences).
    offsets, _ = _corpus(20, random.Random(1), sentence_len=(5, 12), doc_sentences=(3000, 3000))
    max_len = 128
    train, _ = build_examples(offsets, max_len, seed=0, eval_fraction=0)
    a, la, b, lb = train.T
    single = (lb == 0).mean()
    assert 0.09 < single < 0.13, single
    # A random target t ~ U[5, 128] gives an example of about t to t + 11 tokens, so about
    # 5% x (100 - 5 - 6) / 124 = 3.6% of examples have fewer than 100 tokens; full-length ones
    # never do.
    short = ((la + lb) < 100).mean()
    assert 0.025 < short < 0.048, short
    # The split is near the middle: A's target is (128 - 3) // 2 = 62 tokens.
    two = lb > 0
    assert 45 < np.median(la[two]) < 70


def test_batches_are_a_function_of_the_step_and_partition_the_global_batch():
    offsets, doc_of_token = _corpus(60, random.Random(2))
    train, _ = build_examples(offsets, 32, seed=0, eval_fraction=0)
    ids = np.arange(len(doc_of_token))  # token i has id i: the batch shows which tokens it holds
    one = Batches(ids, train, batch_size=8, micro_batch=8, rank=0, world=1, max_len=32,
                  special=(CLS, SEP, PAD), seed=3)
    x1 = one.get(5, 0)[0]
    assert (one.get(5, 0)[0] == x1).all()  # same step, same batch
    # 2 ranks x 2 accumulation steps of 2 sequences cover exactly the 8 sequences of the global
    # batch.
    parts = [Batches(ids, train, 8, 2, r, 2, 32, (CLS, SEP, PAD), 3).get(5, j)[0]
             for j in range(2) for r in range(2)]
    assert (np.concatenate(parts) == x1).all()
    # One epoch visits every example exactly once.
    steps = len(train) // 8
    firsts = np.concatenate([one.get(k, 0)[0][:, 1] for k in range(steps)])
    assert len(set(firsts.tolist())) == steps * 8


# --- the sharded, memory-mapped path against the whole-corpus-in-memory one -------------------


def whole_corpus_ids(path, tok):
    """The ids and line offsets as the corpus read whole into memory gives them: every file's
    lines, a blank line added after a file whose end is not one, each line encoded."""
    lines = []
    for _, text in read_corpus(path):
        file_lines = text.split("\n")
        lines += file_lines + ([""] if file_lines[-1] != "" else [])
    encoded = [tok.encode(line) for line in lines]
    offsets = np.concatenate([[0], np.cumsum([len(e) for e in encoded])]).astype(np.int64)
    return np.array([i for e in encoded for i in e], dtype=np.int64), offsets


def write_sharded_corpus(folder):
    """Files big and small, CRLF, Latin-1, no final newline, an empty file: cut into many shards
    when shards are 40 bytes."""
    folder.mkdir()
    words = ["the", "cat", "sat", "cafe", "caesar", "."]
    rng = random.Random(0)
    big = "\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(0, 9)))
                    for _ in range(300))
    (folder / "a.txt").write_text(big + "\n", encoding="utf-8")
    (folder / "b.txt").write_bytes(("Caesar, café\r\n\r\nthe cat\r\n" * 20).encode("latin-1"))
    (folder / "c.txt").write_text("", encoding="utf-8")
    (folder / "d.txt").write_text("the cat sat .\n\n\nthe cat", encoding="utf-8")
    return folder


def test_shards_give_the_ids_of_the_whole_corpus(tmp_path):
    corpus = write_sharded_corpus(tmp_path / "corpus")
    tok = Tokenizer(TOKENS)
    plan = data.shards.plan_shards(data.corpus_files(corpus), 40)
    assert len(plan) > 20 and any(len(s) > 1 for s in plan)  # files cut, and files grouped
    want_ids, want_offsets = whole_corpus_ids(corpus, tok)
    for workers in (1, 2):
        ids, offsets = encode_corpus(corpus, tok, tmp_path / f"cache{workers}", workers=workers,
                                     progress=False, chunk_chars=30, shard_bytes=40)
        assert isinstance(ids, np.memmap) and ids.dtype == np.uint16
        assert np.array_equal(ids, want_ids) and np.array_equal(offsets, want_offsets)
        left = {p.name for p in (tmp_path / f"cache{workers}").iterdir()}  # no .part left
        assert len(left) == 2 and Path(ids.filename).parent.name in left  # and the note
        assert sorted(p.name for p in Path(ids.filename).parent.iterdir()) == \
            ["ids.npy", "line_offsets.npy"]  # nor a shard


def test_a_stop_while_tokenising_keeps_the_finished_shards(tmp_path, monkeypatch):
    corpus = write_sharded_corpus(tmp_path / "corpus")
    tok = Tokenizer(TOKENS)
    tokenise_shard = data.shards._tokenise_shard
    done = []

    def stop_after_five(task):
        if len(done) == 5:
            raise KeyboardInterrupt
        done.append(task[0])
        return tokenise_shard(task)

    monkeypatch.setattr(data.shards, "_tokenise_shard", stop_after_five)
    with pytest.raises(KeyboardInterrupt):
        encode_corpus(corpus, tok, tmp_path / "cache", workers=1, progress=False, shard_bytes=40)
    (part,) = (tmp_path / "cache").iterdir()
    assert part.name.endswith(".part") and len(list(part.glob("*.lines"))) == 5
    assert not list(part.glob("*.tmp"))  # the shard stopped half-way left nothing
    first = list(done)
    done.clear()
    monkeypatch.setattr(data.shards, "_tokenise_shard",
                        lambda task: done.append(task[0]) or tokenise_shard(task))
    ids, offsets = encode_corpus(corpus, tok, tmp_path / "cache", workers=1, progress=False,
                                 shard_bytes=40)
    n = len(data.shards.plan_shards(data.corpus_files(corpus), 40))
    assert first == [0, 1, 2, 3, 4] and done == list(range(5, n))  # none done twice
    want_ids, want_offsets = whole_corpus_ids(corpus, tok)
    assert np.array_equal(ids, want_ids) and np.array_equal(offsets, want_offsets)


def test_examples_window_by_window_are_those_of_the_whole_corpus():
    offsets, _ = _corpus(300, random.Random(4))
    whole = list(data.example_windows(offsets, 48, seed=5, eval_fraction=0.1,
                                      window_lines=len(offsets)))
    assert len(whole) == 1
    windows = list(data.example_windows(offsets, 48, seed=5, eval_fraction=0.1, window_lines=7))
    assert len(windows) > 50
    for k in range(2):
        assert np.array_equal(np.concatenate([w[k] for w in windows]), whole[0][k])
    assert all(np.array_equal(x, y) for x, y in
               zip(build_examples(offsets, 48, seed=5, eval_fraction=0.1), whole[0]))


def test_document_windows_end_after_a_blank_line():
    offsets, _ = _corpus(50, random.Random(6))
    lengths = np.diff(offsets)
    windows = list(data.document_windows(offsets, 5))
    assert windows[0][0] == 0 and windows[-1][1] == len(lengths)
    assert all(a[1] == b[0] for a, b in zip(windows, windows[1:]))
    assert all(lengths[hi - 1] == 0 for _, hi in windows[:-1])


def test_memory_mapped_examples_and_batches_are_those_of_the_whole_corpus(tmp_path, monkeypatch):
    """pretraining_examples (long lines split and examples built window by window, written to disk
    and mapped back) gives the examples of split_long_lines and build_examples over the whole
    corpus at once, hence the same batches for the same seed, on one process or split over two."""
    corpus = write_sharded_corpus(tmp_path / "corpus")
    (corpus / "e.txt").write_text(" ".join(["the cat sat ."] * 40) + "\n", encoding="utf-8")
    tok = Tokenizer(TOKENS)
    ids, offsets = encode_corpus(corpus, tok, tmp_path / "cache", workers=1, progress=False,
                                 shard_bytes=40)
    cfg = SimpleNamespace(seq_len=16, seed=1, eval_fraction=0.2)
    split, n_split = data.split_long_lines(np.asarray(ids), np.asarray(offsets), 14, [9])
    assert n_split > 0
    want = build_examples(split, 16, seed=1, eval_fraction=0.2)
    monkeypatch.setattr(data, "WINDOW_LINES", 8)
    got = data.pretraining_examples(cfg, tok, ids, offsets, progress=False)
    assert all(isinstance(g, np.memmap) for g in got)
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
    monkeypatch.setattr(data, "example_windows", None)  # a second call maps the files
    again = data.pretraining_examples(cfg, tok, ids, offsets, progress=False)
    assert all(np.array_equal(g, w) for g, w in zip(again, want))
    old = Batches(np.asarray(ids), want[0], 8, 8, 0, 1, 16, (CLS, SEP, PAD), 7)
    new = Batches(ids, got[0], 8, 8, 0, 1, 16, (CLS, SEP, PAD), 7)
    # the order of permutation(N), as a checkpoint of an earlier version resumes it
    assert np.array_equal(new._perm(1), np.random.default_rng((7, 1)).permutation(len(want[0])))
    steps = 3 * len(want[0]) // 8  # three epochs
    for step in range(steps):
        assert all(np.array_equal(a, b) for a, b in zip(old.get(step, 0), new.get(step, 0)))
        halves = [Batches(ids, got[0], 8, 2, r, 2, 16, (CLS, SEP, PAD), 7).get(step, j)[0]
                  for j in range(2) for r in range(2)]
        assert np.array_equal(np.concatenate(halves), old.get(step, 0)[0])


def test_each_piece_of_a_big_file_is_decoded_on_its_own(tmp_path, capsys):
    """A file of two shards, UTF-8 in the first and a Latin-1 byte in the second: the first is read
    as UTF-8 (cafe), the second as Latin-1, with one warning naming the file."""
    (tmp_path / "c.txt").write_bytes("café\n".encode() * 10 + b"caf\xe9\n" * 10)
    tok = Tokenizer(TOKENS)
    ids, offsets = encode_corpus(tmp_path / "c.txt", tok, tmp_path / "cache", workers=1,
                                 progress=False, shard_bytes=60)
    assert len(data.shards.plan_shards([tmp_path / "c.txt"], 60)) == 2
    cafe = tok.vocab["cafe"]
    assert ids.tolist() == [cafe] * 20  # café either way: UTF-8's é, then Latin-1's
    whole, _ = whole_corpus_ids(tmp_path / "c.txt", tok)  # all Latin-1: "cafÃ©" is not cafe
    assert cafe not in whole[:10].tolist()
    assert capsys.readouterr().err.count("read as Latin-1") == 2  # piece, then whole
