"""The pre-training data path, in the order the data flows (official build_pretraining_dataset.py).

    corpus     .txt files (or a known corpus, downloaded once; WikiText rewritten into documents)
    ids        every line tokenised once, in shards by all CPUs, cached on disk:
               encode_corpus -> (ids, line_offsets), both memory-mapped
    documents  runs of lines between blank lines
    examples   [CLS] A [SEP] B [SEP] as the official ExampleBuilder packs them: four numbers each,
               built a window of whole documents at a time and kept on disk
    batches    gathered from the one ids array on the fly, a pure function of the step

Nothing the size of the corpus is held in memory (but the shuffle order, 4 bytes per example), so a
corpus of tens of GB trains on a normal machine; support/shards.py holds the files and the workers.

pretraining_data, at the end, runs the whole path for train.py and returns it as PretrainingData.
"""
from __future__ import annotations

import hashlib
import math
import os
import random
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

import numpy as np
from tqdm import tqdm

from support import shards
from support.hf import hub_dataset_file, hub_vocab, is_hub_name
from support.plumbing import (
    DownloadError,
    atomic_write,
    decode_text,
    download,
    extract_zip,
    rank0_first,
    tar_documents,
)
from tokenizer import Tokenizer
from tokenizer import train as train_vocab

# A blank line ends a document (official build_pretraining_dataset.py, blanks_separate_docs).
# wikitext_documents writes one between articles, encode_corpus adds one at the end of every
# file (support.shards.piece_lines), split_long_lines puts one around each piece of a long line,
# plumbing.tar_documents one after each OpenWebText page; `documents` reads them.
DOCUMENT_END = ""

# -----------------------------------------------------------------------------
# Corpus: text files, decoded (plumbing.decode_text: UTF-8 or Latin-1, binaries refused by name).

CORPUS_SUFFIXES = (".txt", ".raw")  # text files in a corpus folder (WikiText ships .raw)


def corpus_files(path: str | os.PathLike) -> list[Path]:
    """The file `path`, or each .txt (or .raw) file under the folder `path`, sorted.

    Raises FileNotFoundError for a missing path and ValueError for a folder with no .txt files.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"corpus {path} does not exist: pass a .txt file or a folder of "
                                f".txt files")
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob("*") if p.suffix in CORPUS_SUFFIXES and p.is_file())
    if not files:
        raise ValueError(f"corpus folder {path} has no .txt files: put the text in files ending "
                         f"in .txt")
    return files


def read_corpus(path: str | os.PathLike, limit: int | None = None) -> Iterator[tuple[str, str]]:
    """(filename, text) for each of corpus_files(path); `limit`: at most that many bytes of each
    file, cut at a line end.

    Raises the errors of corpus_files at the call, and ValueError for a corpus whose files hold no
    text (once they have all been read).
    """
    files = corpus_files(path)

    def generate():
        any_text = False
        for f in files:
            with open(f, "rb") as fh:
                data = fh.read(limit) if limit is not None else fh.read()
            if limit is not None and len(data) == limit and b"\n" in data:
                data = data[:data.rindex(b"\n") + 1]  # no half line, no half character
            text = decode_text(data, f)
            any_text = any_text or bool(text.strip())
            yield str(f), text
        if not any_text:
            raise ValueError(f"corpus {path} has no text: its {len(files)} .txt file(s) are empty")

    return generate()


# -----------------------------------------------------------------------------
# Vocab: the run's tokenizer, given or trained on the corpus once.

# ours: the WordPiece trainer sees at most this much text (WikiText-103 has ~540M characters)
VOCAB_TRAIN_CHARS = 50_000_000


def load_or_train_vocab(cfg, corpus: Path, out_dir: Path) -> Tokenizer:
    """The run's tokenizer: cfg.vocab (a vocab.txt, or a hub model's name whose vocab.txt is fetched
    once: support.hf.hub_vocab), else out_dir/vocab.txt from an earlier run, else one trained
    (cfg.vocab_size tokens, on at most VOCAB_TRAIN_CHARS characters of the corpus). `cfg` is a
    train.TrainConfig. The vocab is saved as out_dir/vocab.txt, so the run folder is self-contained.
    """
    saved = out_dir / "vocab.txt"
    if cfg.vocab and is_hub_name(cfg.vocab):
        tok = Tokenizer.load(hub_vocab(cfg.vocab, cfg.revision, cfg.hub_cache_dir))
    elif cfg.vocab:
        tok = Tokenizer.load(cfg.vocab)
    elif saved.is_file():
        tok = Tokenizer.load(saved)
    else:
        def texts():
            budget = VOCAB_TRAIN_CHARS
            for _, text in read_corpus(corpus, limit=budget):
                yield text[:budget]
                budget -= min(budget, len(text))
                if budget == 0:
                    return
        print(f"training a {cfg.vocab_size:,}-token WordPiece vocabulary on {corpus} "
              f"(once; saved to {saved})")
        tok = train_vocab(texts(), vocab_size=cfg.vocab_size)
    if not saved.is_file() or Tokenizer.load(saved).hash() != tok.hash():
        tok.save(saved)
    return tok


# -----------------------------------------------------------------------------
# Ids: every line of the corpus tokenised once, in worker processes, cached as numpy arrays.

CHUNK_CHARS = 1 << 20  # ~1 MB of text per call of _encode_lines in a worker process
# part of the cache key; bump when the ids would change
CACHE_FORMAT = "electra-wordpiece-corpus-v2"
# the tokenizer of _encode_lines, set once per process by _init_worker
_WORKER_TOKENIZER: Tokenizer | None = None


def _init_worker(tok: Tokenizer) -> None:
    global _WORKER_TOKENIZER
    _WORKER_TOKENIZER = tok


def _encode_lines(lines: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Ids of lines concatenated (uint32) and the number of ids of each line (int64)."""
    encoded = [_WORKER_TOKENIZER.encode(line) for line in lines]
    lengths = np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded))
    ids = np.fromiter(chain.from_iterable(encoded), dtype=np.uint32, count=int(lengths.sum()))
    return ids, lengths


def encode_corpus(path: str | os.PathLike, tok: Tokenizer, cache_dir: str | os.PathLike,
                  workers: int | None = None, progress: bool = True,
                  chunk_chars: int = CHUNK_CHARS,
                  shard_bytes: int = shards.SHARD_BYTES) -> tuple[np.ndarray, np.ndarray]:
    """Tokenise every line of a corpus once; cache the ids on disk; a second call maps them at once.

    Returns (ids, line_offsets), memory-mapped read-only: the ids of all lines of all files
    concatenated, no special tokens (uint16 when the vocab has <= 65536 tokens, else uint32), and
    int64 offsets of length num_lines + 1, so line i is ids[line_offsets[i]:line_offsets[i + 1]].
    Blank lines are kept (length 0): they end documents, and each file ends with one.

    The files are cut into shards of about `shard_bytes` at line ends (support.shards), tokenised
    by `workers` processes (default: all CPUs) with a progress bar, then joined into one folder
    cache_dir/corpus-KEY: ids.npy and line_offsets.npy. KEY is a sha256 of the corpus's file names
    and bytes, the vocab and the lowercase flag, so a change to any of them re-tokenises. A run
    stopped while tokenising keeps its finished shards (in corpus-KEY.part) and the next one goes on
    from there.

    Hashing the bytes reads the whole corpus (tens of GB for OpenWebText), so it is done once: a
    note beside the folder, cache_dir/corpus-files-KEY2, names it, KEY2 a sha256 of the vocab and
    of each file's path, size and modification time (shards.files_stat_key). A later start, a
    resume or another DDP rank that finds the note reads none of the text; a changed file (its
    size or modification time) misses the note and the text is hashed again.
    """
    files = corpus_files(path)
    settings = f"{CACHE_FORMAT}\n{tok.hash()}\nlowercase={tok.lowercase}\n"
    seen = hashlib.sha256(f"{settings}{shard_bytes}\n{shards.files_stat_key(files)}".encode())
    note = Path(cache_dir) / f"corpus-files-{seen.hexdigest()[:24]}"
    out = shards.read_note(note)
    if out is None:
        plan = shards.plan_shards(files, shard_bytes)
        key = hashlib.sha256(settings.encode())
        for h in shards.hash_shards(plan, workers, progress):
            key.update(h.encode())
        out = Path(cache_dir) / f"corpus-{key.hexdigest()[:24]}"
        if not out.is_dir():
            part = out.with_name(out.name + ".part")
            dtype = np.uint16 if len(tok) <= np.iinfo(np.uint16).max + 1 else np.uint32
            stems = shards.tokenise(plan, part, _encode_lines, _init_worker, (tok,), dtype,
                                    chunk_chars, workers, progress, desc=f"tokenising {path}")
            shards.join(stems, dtype, part)
            shards.finish(part, out)
        shards.write_note(note, out)
    ids, line_offsets = shards.load(out)
    if len(ids) == 0:
        raise ValueError(f"corpus {path} has no text: its {len(files)} file(s) hold no tokens")
    return ids, line_offsets


# -----------------------------------------------------------------------------
# Documents: the lines of a document are consecutive in the ids array.


def documents(line_offsets: np.ndarray) -> list[tuple[int, int]]:
    """Split the corpus's lines into documents: (first_line, end_line) runs of non-empty lines.

    A line with no tokens is a DOCUMENT_END:

    >>> documents(np.array([0, 3, 5, 5, 5, 9]))  # line lengths 3, 2, 0, 0, 4
    [(0, 2), (4, 5)]
    """
    # [num_lines + 2]: 1 on a line with tokens, 0 on a blank one and on the two ends
    nonblank = np.concatenate([[0], np.diff(line_offsets) > 0, [0]]).astype(np.int8)
    edges = np.diff(nonblank)  # +1 where a document starts, -1 just after one ends
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist()))


# basic_tokenize splits punctuation off: a sentence ends at one of these tokens
SENTENCE_END_TOKENS = (".", "!", "?")


def split_long_lines(ids: np.ndarray, line_offsets: np.ndarray, max_tokens: int,
                     sentence_end_ids) -> tuple[np.ndarray, int]:
    """Cut every line longer than max_tokens into pieces of at most max_tokens, each its own
    document.

    The example builder, as the official one, drops what does not fit in an example: a file with no
    newline would become one example. A piece ends after the last sentence end (a token in
    sentence_end_ids) that keeps it within max_tokens, or at max_tokens when there is none. Each
    piece is a document of its own (a DOCUMENT_END before and after it), so the builder makes it one
    whole example [CLS] piece [SEP]. Returns (new line_offsets, number of lines split).

    >>> ids = np.array([5, 6, 9, 5, 6, 7, 9, 5, 6, 7])  # one line "a b . c d e . f g h", 9 = "."
    >>> split_long_lines(ids, np.array([0, 10]), 4, [9])  # line lengths 0, 3, 0, 4, 0, 3, 0
    (array([ 0,  0,  3,  3,  7,  7, 10, 10]), 1)
    """
    lengths = np.diff(line_offsets)
    long = np.flatnonzero(lengths > max_tokens)
    if len(long) == 0:
        return line_offsets, 0
    parts = []
    prev = 0
    for i in long.tolist():
        start = int(line_offsets[i])
        end = int(line_offsets[i + 1])
        # the places just after a sentence end
        cuts = np.flatnonzero(np.isin(ids[start:end], sentence_end_ids)) + start + 1
        starts = [start]  # the blank line before the first piece
        pos = start
        while end - pos > max_tokens:
            j = np.searchsorted(cuts, pos + max_tokens, side="right") - 1  # the last cut that fits
            cut = int(cuts[j]) if j >= 0 and cuts[j] > pos else pos + max_tokens
            starts += [pos, cut]  # the piece [pos, cut), then a blank line at cut
            pos = cut
        starts += [pos, end]  # the last piece, then a blank line
        parts += [line_offsets[prev:i], np.array(starts, dtype=line_offsets.dtype)]
        prev = i + 1
    parts.append(line_offsets[prev:])
    return np.concatenate(parts), len(long)


# -----------------------------------------------------------------------------
# Examples, as the official build_pretraining_dataset.py builds them (its ExampleBuilder). An
# example is four numbers (a_start, a_len, b_start, b_len): token ranges of the ids array.

# official _create_example: random() < 0.1 -> only one segment ("as in classification tasks")
SINGLE_SEGMENT_PROB = 0.1
# official: random() < 0.05 -> the next example's target length is randint(5, max_len)
SHORT_SEQ_PROB = 0.05
SHORT_SEQ_MIN = 5  # official: random.randint(5, max_length)
SPLIT_COIN = 0.5  # official: the sentence that would overflow segment A goes to A 50% of the time


class ExampleBuilder:
    """Packs the sentences of one stream of documents into pre-training examples.

    As the official ExampleBuilder: sentences (lines) are appended until their length reaches the
    target length (max_len; 5% of the time a random length in [5, max_len]); the end of a
    document ends the current example early. Each example is then cut into two segments
    [CLS] A [SEP] B [SEP] at a sentence boundary near the middle, except 10% of them, which keep
    one segment [CLS] A [SEP]. Tokens past max_len are dropped, as in the official code.

    Deviation: the official loop may put a short sentence back into A after a longer one went to
    B (A's length test is re-checked for every sentence), which reorders the text. Here, once B
    has started, the remaining sentences go to B, so A and B are each contiguous and in order.

    `add_sentence(start, length)` and `end_document()` return an example (a_start, a_len,
    b_start, b_len) when one is complete, else None.

    >>> b = ExampleBuilder(max_len=16, rng=random.Random(0))
    >>> b.add_sentence(0, 6), b.add_sentence(6, 5), b.add_sentence(11, 7)
    (None, None, (0, 6, 6, 7))
    """

    def __init__(self, max_len: int, rng: random.Random):
        self.max_len = max_len
        self.rng = rng
        self.target_len = max_len
        self.start = 0  # the sentences gathered so far, consecutive from `start`
        self.lengths = []

    def add_sentence(self, start: int, length: int):  # length > 0: blank lines end documents
        if not self.lengths:
            self.start = start
        self.lengths.append(length)
        return self._create_example() if sum(self.lengths) >= self.target_len else None

    def end_document(self):
        return self._create_example() if self.lengths else None

    def _create_example(self):
        if self.rng.random() < SINGLE_SEGMENT_PROB:
            first_target = math.inf  # official: 100000, i.e. every sentence goes to A
        else:
            first_target = (self.target_len - 3) // 2  # -3: room for [CLS], [SEP], [SEP]
        a_len = b_len = 0
        for n in self.lengths:
            # A takes the sentence if A is empty, if it fits, or (50%) if it is the one that
            # overflows A; after that everything goes to B (see the deviation above).
            if b_len == 0 and (a_len == 0 or a_len + n < first_target or
                               (a_len < first_target and self.rng.random() < SPLIT_COIN)):
                a_len += n
            else:
                b_len += n
        # what does not fit is dropped, as in the official code
        a_kept = min(a_len, self.max_len - 2)
        b_kept = min(b_len, max(0, self.max_len - a_kept - 3))
        self.lengths = []
        short = self.rng.random() < SHORT_SEQ_PROB
        self.target_len = self.rng.randint(SHORT_SEQ_MIN, self.max_len) if short else self.max_len
        return self.start, a_kept, self.start + a_len, b_kept


def build_examples(line_offsets: np.ndarray, max_len: int, seed: int, eval_fraction: float):
    """All pre-training examples of the corpus, split by document into training and held-out sets.

    Every round(1 / eval_fraction)-th document (0, k, 2k, ...) is held out for evaluation, so the
    held-out text is spread over the corpus and never shares a document with training text.
    Returns (train, held_out): int64 arrays [N, 4] of (a_start, a_len, b_start, b_len).
    """
    parts = list(example_windows(line_offsets, max_len, seed, eval_fraction))
    return tuple(np.concatenate([p[k] for p in parts] or [np.zeros((0, 4), np.int64)])
                 for k in range(2))


WINDOW_LINES = 1 << 20  # ours: lines of the corpus turned into examples at a time (memory)


def document_windows(line_offsets: np.ndarray, window_lines: int = WINDOW_LINES):
    """Runs [lo, hi) of about window_lines lines that hold whole documents: each ends just after a
    blank line (or at the corpus's end), so a document never straddles two.

    >>> list(document_windows(np.array([0, 3, 5, 5, 9, 9, 12]), 2))  # lengths 3, 2, 0, 4, 0, 3
    [(0, 3), (3, 5), (5, 6)]
    """
    n = len(line_offsets) - 1
    lo = 0
    while lo < n:
        hi = n
        start = lo + window_lines - 1  # look for a blank line from here on
        while start < n:
            end = min(start + window_lines, n)
            blank = np.flatnonzero(np.diff(line_offsets[start:end + 1]) == 0)
            if len(blank):
                hi = start + int(blank[0]) + 1
                break
            start = end
        yield lo, hi
        lo = hi


def example_windows(line_offsets: np.ndarray, max_len: int, seed: int, eval_fraction: float,
                    split=None, window_lines: int = WINDOW_LINES, progress: bool = False):
    """build_examples one window of whole documents at a time (document_windows), so a corpus of
    any size needs the memory of one window: yields (train, held_out) per window. The two builders,
    their random generator and the count of documents go on from one window to the next, so the
    examples are those of the whole corpus in one go. split: a function of a window's line offsets
    that gives new ones (split_long_lines), applied to each window before its documents are read.
    """
    every = max(2, round(1 / eval_fraction)) if eval_fraction > 0 else 0
    rng = random.Random(seed)
    builders = [ExampleBuilder(max_len, rng), ExampleBuilder(max_len, rng)]  # training, held out
    d = 0  # documents so far
    bar = tqdm(total=len(line_offsets) - 1, desc="examples", unit="line", unit_scale=True,
               dynamic_ncols=True, mininterval=1.0, disable=not progress)
    for lo, hi in document_windows(line_offsets, window_lines):
        offsets = np.array(line_offsets[lo:hi + 1])  # a copy in memory: the window's only
        if split is not None:
            offsets = split(offsets)
        starts = offsets.tolist()  # Python ints: the loop below runs once per line
        examples = [[], []]  # the same; None where a sentence completed no example
        for first, end in documents(offsets):
            k = int(every > 0 and d % every == 0)
            for line in range(first, end):
                start = starts[line]
                examples[k].append(builders[k].add_sentence(start, starts[line + 1] - start))
            examples[k].append(builders[k].end_document())
            d += 1
        yield tuple(np.array([e for e in ex if e is not None], dtype=np.int64).reshape(-1, 4)
                    for ex in examples)
        bar.update(hi - lo)
    bar.close()


def pretraining_batch(ids: np.ndarray, examples: np.ndarray, max_len: int, cls_id: int,
                      sep_id: int, pad_id: int):
    """A batch of examples laid out as [CLS] A [SEP] B [SEP] + padding, as the official
    _make_tf_example.

    ids: the corpus token ids; examples: [B, 4] (a_start, a_len, b_start, b_len).
    Returns numpy arrays input_ids [B, T] int64, segment_ids [B, T] int64 (1 on B and its
    [SEP]), attention_mask [B, T] bool (False on padding), with T = max_len.

    >>> x, segments, mask = pretraining_batch(np.array([7, 8, 9]), np.array([[0, 2, 2, 1]]), 8,
    ...                                       cls_id=2, sep_id=3, pad_id=0)  # A = 7 8, B = 9
    >>> x.tolist(), segments.tolist(), mask.astype(int).tolist()
    ([[2, 7, 8, 3, 9, 3, 0, 0]], [[0, 0, 0, 0, 1, 1, 0, 0]], [[1, 1, 1, 1, 1, 1, 0, 0]])
    """
    t = np.arange(max_len)[None, :]  # [1, T] positions
    a, la, b, lb = (examples[:, i:i + 1] for i in range(4))  # each [B, 1]
    b0 = la + 2  # first position of segment B
    in_a = (t >= 1) & (t <= la)  # [B, T]
    in_b = (t >= b0) & (t < b0 + lb)
    src = np.where(in_a, a + t - 1, np.where(in_b, b + t - b0, 0))  # [B, T] index into ids
    x = np.where(in_a | in_b, ids[src].astype(np.int64), pad_id)
    x = np.where(t == 0, cls_id, x)
    x = np.where((t == la + 1) | ((lb > 0) & (t == b0 + lb)), sep_id, x)
    length = np.where(lb > 0, la + lb + 3, la + 2)  # [B, 1]
    segment = ((lb > 0) & (t >= b0) & (t <= b0 + lb)).astype(np.int64)
    return x, segment, t < length


@dataclass
class Batches:
    """The stream of training batches, a pure function of the step (so --resume and DDP are exact).

    The examples are shuffled once per epoch with a generator seeded by (seed, epoch) and read
    in order; update `step` consumes global positions [step * batch, (step + 1) * batch). Under
    DDP with gradient accumulation the global batch splits into world * accum micro-batches;
    rank r's micro-batch j is slice (j * world + r) of it.
    """

    ids: np.ndarray  # the corpus' token ids (memory-mapped)
    examples: np.ndarray  # [N, 4] training examples (a_start, a_len, b_start, b_len), mapped too
    batch_size: int  # sequences per update, all ranks and micro-batches together
    micro_batch: int  # sequences per forward: batch_size // (grad_accum * world)
    rank: int  # this process
    world: int  # processes (DDP ranks)
    max_len: int  # tokens per sequence (T)
    special: tuple[int, int, int]  # (cls_id, sep_id, pad_id)
    seed: int  # the shuffle of each epoch is seeded by (seed, epoch)
    _perms: dict = field(default_factory=dict, init=False, repr=False)  # {epoch: order}, the latest

    def _perm(self, epoch: int) -> np.ndarray:
        if epoch not in self._perms:
            # int32 (the same order as permutation(N)): the one array here the size of the corpus
            n = len(self.examples)
            order = np.random.default_rng((self.seed, epoch)).permutation(
                np.arange(n, dtype=np.int32 if n < 2 ** 31 else np.int64))
            self._perms = {epoch: order}
        return self._perms[epoch]

    def epoch(self, step: int) -> float:
        return step * self.batch_size / len(self.examples)

    def get(self, step: int, micro: int):
        first = step * self.batch_size + (micro * self.world + self.rank) * self.micro_batch
        pos = np.arange(first, first + self.micro_batch)  # [b] positions in the endless stream
        N = len(self.examples)
        epochs = pos // N  # [b]: a micro-batch may straddle two epochs
        rows = np.concatenate([self._perm(e)[pos[epochs == e] % N] for e in np.unique(epochs)])
        return pretraining_batch(self.ids, self.examples[rows], self.max_len, *self.special)


# -----------------------------------------------------------------------------
# Known corpora: `--data` is a .txt file, a folder of them, or one of these names. WikiText
# (Merity et al. 2016, CC BY-SA 3.0, hosted by its author), downloaded once and rewritten into
# documents.

# The base URL can be overridden (--data-url or $ELECTRA_DATA_URL), e.g. for a mirror or a test
# server.
DATA_URL = os.environ.get("ELECTRA_DATA_URL", "https://wikitext.smerity.com")
KNOWN_CORPORA = {
    # name: (archive, its size in bytes, the folder inside it, the training split)
    "wikitext-103": ("wikitext-103-raw-v1.zip", 191_984_949, "wikitext-103-raw", "wiki.train.raw"),
    "wikitext-2": ("wikitext-2-raw-v1.zip", 4_721_645, "wikitext-2-raw", "wiki.train.raw"),
    # the laptop experiments' corpus (experiments/README.md), "the books": BOOKS from NLTK's
    # Gutenberg selection (its archive's size is not published: the server's Content-Length and
    # the zip's CRCs check it) and WikiText-2's valid and test splits as they are (books_corpus)
    "books": ("gutenberg.zip", None, "gutenberg", "wiki.valid.raw wiki.test.raw"),
}
# NLTK's data server (nltk_data, public-domain books); $ELECTRA_GUTENBERG_URL for a mirror
GUTENBERG_URL = os.environ.get(
    "ELECTRA_GUTENBERG_URL",
    "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora")
# 12 of the selection's 18 books: Emma is left out (notebook 01 reads it as text the model never
# saw), and so are the 5 books the experiments' runs did not train on
BOOKS = ("austen-persuasion.txt", "austen-sense.txt", "blake-poems.txt", "chesterton-ball.txt",
         "chesterton-brown.txt", "chesterton-thursday.txt", "melville-moby_dick.txt",
         "milton-paradise.txt", "shakespeare-caesar.txt", "shakespeare-hamlet.txt",
         "shakespeare-macbeth.txt", "whitman-leaves.txt")
# " = Title = ": a new article (sections are " = = S = = ")
WIKI_TITLE = re.compile(r"^ = [^=].* = $")
WIKI_HEADING = re.compile(r"^ =.* = $")  # any heading line, article or section
# WikiText is tokenised: " . " ends a sentence
WIKI_SENTENCE_END = re.compile(r"(?<= [.!?]) (?=\S)")


def wikitext_documents(raw_path: Path, out_path: Path) -> Path:
    """Rewrite a WikiText .raw split as one sentence per line, a blank line between articles.

    The raw files put a blank line between *every* paragraph and heading, so read as they are,
    each paragraph would be a document. An article starts at a top-level heading " = Title = ".
    The official pipeline (BERT's Wikipedia dump) has one sentence per line and no headings, so we
    drop heading lines and split paragraphs at WikiText's tokenised sentence ends (" . ", " ? ",
    " ! "). Written atomically to `out_path`; a second call returns at once.

    Example: " = A = \\n\\n x . y .\\n\\n = = S = = \\n z .\\n = B = \\n w .\\n" becomes
    "x .\\ny .\\nz .\\n\\nw .\\n".
    """
    if out_path.is_file():
        return out_path

    def write(tmp: Path) -> None:
        with open(raw_path, encoding="utf-8") as f, open(tmp, "w", encoding="utf-8") as out:
            started = False
            for line in f:
                line = line.rstrip("\n")
                if WIKI_TITLE.match(line):
                    if started:
                        out.write(DOCUMENT_END + "\n")  # the previous article ends here
                    continue
                if line.strip() and not WIKI_HEADING.match(line):
                    for sentence in WIKI_SENTENCE_END.split(line.strip()):
                        out.write(sentence + "\n")
                        started = True

    atomic_write(out_path, write)
    return out_path


# OpenWebText (Gokaslan and Cohen 2019, CC0), the corpus of the official ELECTRA-Small-OWT, from
# the hub's dataset repository, pinned to a revision that holds its original archives
# (subsets/urlsf_subsetNN.tar, 21 of about 630 MB: .xz members, each a tar of one .txt per web
# page); the repository is moving to parquet files, which the standard library cannot read. The
# hub gives each archive's size and sha256, which download checks. $HF_ENDPOINT: a mirror or a
# test's server.
OPENWEBTEXT = ("Skylion007/openwebtext", "8cfd553694d06979cfec29248b200468786f0294")
OPENWEBTEXT_SUBSETS = 21
CORPUS_NAMES = (*KNOWN_CORPORA, "openwebtext")  # every name --data knows


def openwebtext_corpus(cache_dir: Path, progress: bool = True) -> Path:
    """cache_dir/openwebtext: one .txt file per archive of OpenWebText, each web page a document
    (plumbing.tar_documents), in the archives' order (the official builder shuffles its files; our
    batches shuffle the examples). Archive by archive: downloaded, extracted, then deleted, so a
    stop loses at most the archive at hand and the disk holds one archive at a time beside the
    text (about 40 GB in all). The folder appears, by one rename, only when every archive is in."""
    out = cache_dir / "openwebtext"
    if out.is_dir():
        return out
    part = cache_dir / "openwebtext.part"
    part.mkdir(parents=True, exist_ok=True)
    repo, revision = OPENWEBTEXT
    for i in range(OPENWEBTEXT_SUBSETS):
        name = f"urlsf_subset{i:02d}"
        if (part / f"{name}.txt").is_file():
            continue
        archive = hub_dataset_file(repo, f"subsets/{name}.tar", revision,
                                   cache_dir / "openwebtext-archives")
        try:
            tar_documents(archive, part / f"{name}.txt", progress)
        except DownloadError:
            archive.unlink(missing_ok=True)  # ours, in the cache: the next run downloads it afresh
            raise
        archive.unlink()
    os.replace(part, out)
    return out


def resolve_corpus(data: str, cache_dir: Path, data_url: str = DATA_URL) -> Path:
    """The local .txt file or folder to train on: `data` itself, or a known corpus fetched once.

    Known names download `{data_url}/{archive}` into `cache_dir`, check its size and CRCs,
    extract it atomically and rewrite the training split with `wikitext_documents`.
    Raises SystemExit with one clear message for a path that does not exist.
    """
    if data == "books":
        return books_corpus(cache_dir, data_url)
    if data == "openwebtext":
        return openwebtext_corpus(cache_dir)
    if data in KNOWN_CORPORA:
        archive, size, folder, split = KNOWN_CORPORA[data]
        url = f"{data_url.rstrip('/')}/{archive}"
        zip_path = download(url, cache_dir / archive, size, desc=data)
        try:
            raw = extract_zip(zip_path, cache_dir / Path(archive).stem)
        except DownloadError:
            zip_path.unlink(missing_ok=True)  # ours, in the cache: the next run downloads it afresh
            raise
        out = cache_dir / f"{data}-documents"
        out.mkdir(exist_ok=True)
        wikitext_documents(raw / folder / split, out / "train.txt")
        return out
    path = Path(data).expanduser()
    if not path.exists():
        raise SystemExit(f"--data {data}: no such file or folder. Pass a .txt file, a folder of "
                         f".txt files, or one of the known corpora: "
                         f"{', '.join(CORPUS_NAMES)}.")
    return path


def books_corpus(cache_dir: Path, data_url: str = DATA_URL) -> Path:
    """cache_dir/books: gutenberg/ with the 12 BOOKS and wikitext-2-raw/ with WikiText-2's valid
    and test splits, each file as its archive holds it (read_corpus decodes the two Latin-1
    books and the CRLF one), downloaded once and assembled atomically. The folders and names are
    those the experiments' runs read, so their sorted order, hence the vocab, is the same."""
    out = cache_dir / "books"
    if out.is_dir():
        return out
    archive, size, folder, splits = KNOWN_CORPORA["books"]
    wiki_archive, wiki_size, wiki_folder, _ = KNOWN_CORPORA["wikitext-2"]
    parts = []  # (archive's URL, its cache path, its size, the folder inside it, the files kept)
    parts.append((f"{GUTENBERG_URL.rstrip('/')}/{archive}", cache_dir / archive, size, folder,
                  BOOKS))
    parts.append((f"{data_url.rstrip('/')}/{wiki_archive}", cache_dir / wiki_archive, wiki_size,
                  wiki_folder, tuple(splits.split())))

    def assemble(tmp: Path) -> None:
        for url, zip_path, expected, inside, names in parts:
            download(url, zip_path, expected, desc=zip_path.name)
            try:
                raw = extract_zip(zip_path, cache_dir / zip_path.stem) / inside
            except DownloadError:
                zip_path.unlink(missing_ok=True)  # ours: the next run downloads it afresh
                raise
            missing = [n for n in names if not (raw / n).is_file()]
            if missing:
                raise DownloadError(f"{zip_path} has no {', '.join(missing)} in {inside}/: delete "
                                    f"it and run again, or pass your own text with --data PATH")
            (tmp / inside).mkdir()
            for name in names:
                shutil.copyfile(raw / name, tmp / inside / name)

    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="books.", suffix=".tmp", dir=cache_dir))
    try:
        assemble(tmp)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


# -----------------------------------------------------------------------------
# The whole path, as train.py runs it: corpus -> ids -> documents -> examples -> batches


def tokenised_corpus(cfg, progress: bool):
    """(the corpus path, the tokenizer, the corpus' token ids, its line offsets) of a
    train.TrainConfig, from the caches when there; a failure is one line (SystemExit)."""
    cache_dir = Path(cfg.cache_dir)
    try:
        corpus = resolve_corpus(cfg.data, cache_dir, cfg.data_url)
        tok = load_or_train_vocab(cfg, corpus, Path(cfg.out_dir))
        ids, line_offsets = encode_corpus(corpus, tok, cache_dir, progress=progress)
    except (DownloadError, FileNotFoundError, ValueError) as e:
        raise SystemExit(str(e)) from e
    except KeyboardInterrupt:
        raise SystemExit("interrupted while preparing the data (download, vocabulary or "
                         "tokenising), before any training: nothing partial was written (but the "
                         "shards already tokenised); run the same command again to go on") from None
    return corpus, tok, ids, line_offsets


# part of the examples' cache key; bump when the examples would change
EXAMPLES_FORMAT = "electra-examples-v1"


def pretraining_examples(cfg, tok: Tokenizer, ids: np.ndarray, line_offsets: np.ndarray,
                         progress: bool) -> tuple[np.ndarray, np.ndarray]:
    """(train, held_out) examples of a train.TrainConfig: long lines split (split_long_lines), then
    build_examples window by window (example_windows), written beside the corpus's cached ids
    (examples-KEY/train.bin and held_out.bin, KEY: the settings they depend on) and memory-mapped,
    so a second run, or another rank, maps them at once."""
    sentence_ends = [tok.vocab[t] for t in SENTENCE_END_TOKENS if t in tok.vocab]
    settings = f"{EXAMPLES_FORMAT} {cfg.seq_len} {cfg.seed} {cfg.eval_fraction} {sentence_ends}"
    folder = (Path(ids.filename).parent
              / f"examples-{hashlib.sha256(settings.encode()).hexdigest()[:16]}")
    paths = [folder / "train.bin", folder / "held_out.bin"]
    if all(p.is_file() for p in paths):
        return tuple(shards.read_rows(p, 4) for p in paths)
    n_split = 0

    def split(offsets):
        nonlocal n_split
        offsets, n = split_long_lines(ids, offsets, cfg.seq_len - 2, sentence_ends)
        n_split += n
        return offsets

    folder.mkdir(exist_ok=True)
    windows = example_windows(line_offsets, cfg.seq_len, cfg.seed, cfg.eval_fraction, split,
                              WINDOW_LINES, progress and len(line_offsets) > WINDOW_LINES)
    train_ex, eval_ex = shards.write_rows(paths, windows, 4)
    if n_split and progress:
        print(f"split {n_split:,} line(s) longer than {cfg.seq_len - 2} tokens (--seq-len "
              f"{cfg.seq_len} less [CLS] and [SEP]) into pieces, at sentence ends where possible, "
              f"so none of their text is dropped")
    return train_ex, eval_ex


@dataclass
class PretrainingData:
    """What pretraining_data gives train.py: the corpus, its tokens and the batches made of them."""

    corpus: Path  # the .txt file or folder trained on
    tok: Tokenizer  # the run's vocabulary
    ids: np.ndarray  # the corpus' token ids, every line in order (memory-mapped)
    batches: Batches  # the training batches, a pure function of the step
    eval_ex: np.ndarray  # [N, 4] held-out examples (a_start, a_len, b_start, b_len), mapped


def pretraining_data(cfg, rank: int, world: int, vocab_hash: str | None = None) -> PretrainingData:
    """The data of a train.TrainConfig for process `rank` of `world`; rank 0 fills the caches
    first. vocab_hash: a resumed run's, which the vocabulary must match."""
    corpus, tok, ids, line_offsets = rank0_first(
        rank, world, lambda: tokenised_corpus(cfg, progress=rank == 0))
    if vocab_hash is not None and vocab_hash != tok.hash():
        out_vocab = Path(cfg.out_dir) / "vocab.txt"
        raise SystemExit(f"the vocabulary ({cfg.vocab or out_vocab}, sha256 {tok.hash()[:12]}) "
                         f"does not match the checkpoint's (sha256 {vocab_hash[:12]}): resume with "
                         f"the run's own {out_vocab} (drop --vocab), or start a new run with "
                         f"another --out")
    train_ex, eval_ex = rank0_first(
        rank, world, lambda: pretraining_examples(cfg, tok, ids, line_offsets, rank == 0))
    if len(train_ex) == 0:
        raise SystemExit(f"--data {cfg.data}: no training examples could be built ({len(ids):,} "
                         f"tokens in {len(eval_ex)} held-out example(s)); give it more text")
    if cfg.batch_size % (cfg.grad_accum * world):
        raise SystemExit(f"--batch-size {cfg.batch_size} must be a multiple of --grad-accum "
                         f"{cfg.grad_accum} x {world} process(es)")
    micro_batch = cfg.batch_size // (cfg.grad_accum * world)
    special = (tok.cls_id, tok.sep_id, tok.pad_id)
    batches = Batches(ids=ids, examples=train_ex, batch_size=cfg.batch_size,
                      micro_batch=micro_batch, rank=rank, world=world, max_len=cfg.seq_len,
                      special=special, seed=cfg.seed)
    return PretrainingData(corpus, tok, ids, batches, eval_ex)
