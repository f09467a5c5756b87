"""A corpus of any size on disk: cut into shards, tokenised by a pool of worker processes, written
as flat token files that numpy memory-maps. Nothing here is ELECTRA: data.py says what a line's ids
are (its encode_lines) and what examples are; this holds the files, the workers and the bookkeeping.

    plan_shards     the corpus's files cut into shards of about SHARD_BYTES, at line ends
    tokenise        every shard's lines encoded by the workers (a progress bar in MB/s); a finished
                    shard is kept on disk, so a run stopped half-way goes on where it stopped
    join            the shards' ids and line lengths as one ids.npy and one line_offsets.npy
    files_stat_key  what a later start compares instead of the text: paths, sizes, mtimes
    write_rows      examples, streamed to a raw file and read back as a memory map

Memory: a worker holds one shard's text and ids at a time, the main process one shard's line
lengths; everything the size of the corpus lives on disk, where the page cache holds what is read.
"""
from __future__ import annotations

import hashlib
import multiprocessing
import os
import shutil
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from support.plumbing import decode_text

# ~8 MB of text per shard: the unit of work of a worker and of resuming. A worker's memory is a
# small multiple of it (the text as bytes and as str, its ids), whatever the corpus's size.
SHARD_BYTES = 8 << 20
READ_BYTES = 1 << 16  # read this much past a cut point to find the next line end


@dataclass(frozen=True)
class Piece:
    """Bytes [start, end) of one file, starting and ending at a line start (or the file's end)."""

    path: str
    start: int
    end: int
    last: bool  # the file's last piece: the file's end ends a document after it


def _next_line_start(f, pos: int, size: int) -> int:
    """The offset just after the first b"\\n" at or after `pos` in the open file f (else size)."""
    f.seek(pos)
    while pos < size:
        block = f.read(READ_BYTES)
        i = block.find(b"\n")
        if i >= 0:
            return pos + i + 1
        pos += len(block)
    return size


def plan_shards(files: list[Path], shard_bytes: int = SHARD_BYTES) -> list[list[Piece]]:
    """The files, in order, as shards of about shard_bytes each: small files grouped, a big one cut
    just after a newline. A line is never cut, so a line longer than a shard makes its shard
    longer. Reads only a few bytes of each file (to find line ends)."""
    shards, current, filled = [], [], 0
    for path in files:
        size = path.stat().st_size
        start = 0
        while True:
            room = shard_bytes - filled
            if size - start <= room:
                cut = size
            else:  # opened only to be cut: a corpus of many small files is not opened here
                with open(path, "rb") as f:
                    cut = _next_line_start(f, start + room - 1, size)
            current.append(Piece(str(path), start, cut, cut == size))
            filled += cut - start
            start = cut
            if filled >= shard_bytes:
                shards.append(current)
                current, filled = [], 0
            if start >= size:
                break
    if current:
        shards.append(current)
    return shards


def piece_lines(piece: Piece) -> list[str]:
    """The lines of a piece of a file, decoded (plumbing.decode_text): a piece that is not its
    file's last ends with its last line's newline; the last one as the file ends, a final blank
    line added when the file's end is not already one (each file ends a document).

    Each piece is decoded on its own: in a file bigger than a shard that is UTF-8 but for a
    Latin-1 byte, only the pieces holding such a byte are read as Latin-1 (read whole, all of the
    file would be, its accented UTF-8 letters turned into two letters each)."""
    with open(piece.path, "rb") as f:
        f.seek(piece.start)
        text = decode_text(f.read(piece.end - piece.start), piece.path)
    lines = text.split("\n")
    if not piece.last:
        lines.pop()  # "" after the newline the piece was cut at
    elif lines[-1] != "":
        lines.append("")
    return lines


def files_stat_key(files: list[Path]) -> str:
    """sha256 of each file's full path, size and modification time, and no byte of its text: what
    a start reads to know the corpus has not changed since it was tokenised, as make and rsync
    judge a file. A file edited in place almost always changes its modification time (in
    nanoseconds where the file system keeps them)."""
    h = hashlib.sha256()
    for path in files:
        st = os.stat(path)
        h.update(f"{Path(path).resolve()}\n{st.st_size}\n{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def read_note(note: Path) -> Path | None:
    """The cache folder that `note` names (written by write_note), or None: no note, or a note
    whose folder is gone or unreadable, and the caller reads the text afresh."""
    try:
        name = note.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    folder = note.parent / name
    if not name or "/" in name or not folder.is_dir():
        return None
    return folder


def write_note(note: Path, folder: Path) -> None:
    """Name `folder` in the small file `note`, atomically. The note is only a short cut: a failed
    write (a read-only cache, another process writing the same note) costs the next start a read
    of the text, not this run."""
    tmp = note.with_name(f"{note.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(folder.name + "\n", encoding="utf-8")
        os.replace(tmp, note)
    except OSError:
        tmp.unlink(missing_ok=True)


def shard_hash(pieces: list[Piece]) -> str:
    """sha256 of a shard's file names (without their folder) and bytes."""
    h = hashlib.sha256()
    for p in pieces:
        h.update(f"{Path(p.path).name}\n{p.start}\n{p.end}\n".encode())
        with open(p.path, "rb") as f:
            f.seek(p.start)
            left = p.end - p.start
            while left > 0:
                block = f.read(min(left, 1 << 20))
                if not block:
                    break
                h.update(block)
                left -= len(block)
    return h.hexdigest()


def _nothing() -> None:
    pass


def _pool(workers: int, n_tasks: int, init, init_args):
    """A pool of min(workers, n_tasks) processes, or none for one (then this process works)."""
    workers = min(workers or os.cpu_count() or 1, n_tasks)
    init(*init_args)  # with one worker, this process is it
    if workers > 1:
        return multiprocessing.get_context().Pool(workers, init, init_args), workers
    return nullcontext(), 1


def hash_shards(shards: list[list[Piece]], workers: int | None = None,
                progress: bool = True) -> list[str]:
    """Every shard's shard_hash, read in parallel."""
    pool, workers = _pool(workers, len(shards), _nothing, ())
    total = sum(p.end - p.start for s in shards for p in s)
    with pool, tqdm(total=total, unit="B", unit_scale=True, desc="reading the corpus",
                    dynamic_ncols=True, disable=not progress or total < (64 << 20)) as bar:
        results = pool.imap(shard_hash, shards) if workers > 1 else map(shard_hash, shards)
        hashes = []
        for pieces, h in zip(shards, results):
            hashes.append(h)
            bar.update(sum(p.end - p.start for p in pieces))
    return hashes


# set in each worker by _init_tokenise: (encode_lines, the ids' dtype, lines per encode call)
_WORKER = None


def _init_tokenise(init, init_args, encode_lines, dtype, chunk_chars) -> None:
    global _WORKER
    init(*init_args)
    _WORKER = (encode_lines, dtype, chunk_chars)


def _tokenise_shard(task: tuple[int, list[Piece], str]) -> tuple[int, int]:
    """Encode one shard's lines into {stem}.ids (raw ids) and {stem}.lines (int64 line lengths),
    in chunks of about chunk_chars characters; the .lines file, renamed into place last, says the
    shard is whole. Returns (the shard's index, its bytes)."""
    index, pieces, stem = task
    encode_lines, dtype, chunk_chars = _WORKER
    ids_tmp, lines_tmp = Path(stem + ".ids.tmp"), Path(stem + ".lines.tmp")
    lengths = []
    try:
        with open(ids_tmp, "wb") as out:
            chunk, size = [], 0
            for piece in pieces:
                for line in piece_lines(piece):
                    chunk.append(line)
                    size += len(line) + 1
                    if size >= chunk_chars:
                        ids, n = encode_lines(chunk)
                        out.write(ids.astype(dtype).tobytes())
                        lengths.append(n)
                        chunk, size = [], 0
            if chunk:
                ids, n = encode_lines(chunk)
                out.write(ids.astype(dtype).tobytes())
                lengths.append(n)
        np.concatenate(lengths or [np.zeros(0, np.int64)]).astype(np.int64).tofile(lines_tmp)
        os.replace(ids_tmp, stem + ".ids")
        os.replace(lines_tmp, stem + ".lines")
    finally:
        ids_tmp.unlink(missing_ok=True)
        lines_tmp.unlink(missing_ok=True)
    return index, sum(p.end - p.start for p in pieces)


def shard_done(stem: str) -> bool:
    return Path(stem + ".lines").is_file() and Path(stem + ".ids").is_file()


def tokenise(shards: list[list[Piece]], folder: Path, encode_lines, init, init_args, dtype,
             chunk_chars: int, workers: int | None = None, progress: bool = True,
             desc: str = "tokenising") -> list[str]:
    """Tokenise the shards not already finished in `folder` (shard-00000.ids and .lines, ...),
    spread over `workers` processes (default: all CPUs), with a progress bar in bytes (MB/s, ETA).
    init(*init_args) runs once in each worker (data.py's: the tokenizer) before encode_lines(lines)
    -> (ids, lengths). A stop (Ctrl-C, a failure) keeps the finished shards: the next call does
    only the others. Returns every shard's file stem, in order."""
    folder.mkdir(parents=True, exist_ok=True)
    stems = [str(folder / f"shard-{i:05d}") for i in range(len(shards))]
    todo = [(i, shards[i], stems[i]) for i in range(len(shards)) if not shard_done(stems[i])]
    if not todo:
        return stems
    done_bytes = sum(p.end - p.start for i, s in enumerate(shards) if shard_done(stems[i])
                     for p in s)
    total = sum(p.end - p.start for s in shards for p in s)
    args = (init, init_args, encode_lines, dtype, chunk_chars)
    pool, workers = _pool(workers, len(todo), _init_tokenise, args)
    with pool, tqdm(total=total, initial=done_bytes, unit="B", unit_scale=True, desc=desc,
                    dynamic_ncols=True, smoothing=0.1, disable=not progress) as bar:
        results = (pool.imap_unordered(_tokenise_shard, todo) if workers > 1
                   else map(_tokenise_shard, todo))
        for _, n_bytes in results:
            bar.update(n_bytes)
    return stems


def join(stems: list[str], dtype, folder: Path) -> None:
    """The shards' ids, in order, as folder/ids.npy, and folder/line_offsets.npy (int64, one more
    than the lines: line i is ids[offsets[i]:offsets[i + 1]]), copied one shard at a time, each
    shard's files deleted once copied, so the disk never holds the ids twice (a stop here costs
    the next run the shards already copied)."""
    itemsize = np.dtype(dtype).itemsize
    sizes = [os.path.getsize(s + ".ids") // itemsize for s in stems]
    n_lines = [os.path.getsize(s + ".lines") // 8 for s in stems]
    ids = np.lib.format.open_memmap(folder / "ids.npy", mode="w+", dtype=dtype,
                                    shape=(sum(sizes),))
    offsets = np.lib.format.open_memmap(folder / "line_offsets.npy", mode="w+", dtype=np.int64,
                                        shape=(sum(n_lines) + 1,))
    offsets[0] = 0
    tok, line = 0, 0
    for stem, size, n in zip(stems, sizes, n_lines):
        ids[tok:tok + size] = np.fromfile(stem + ".ids", dtype=dtype)
        offsets[line + 1:line + 1 + n] = tok + np.cumsum(np.fromfile(stem + ".lines", np.int64))
        tok += size
        line += n
        Path(stem + ".lines").unlink()  # first: a shard without its .lines is not finished
        Path(stem + ".ids").unlink()
    ids.flush()
    offsets.flush()
    del ids, offsets


def load(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    """(ids, line_offsets) of a joined folder, memory-mapped read-only."""
    return (np.load(folder / "ids.npy", mmap_mode="r"),
            np.load(folder / "line_offsets.npy", mmap_mode="r"))


def finish(part: Path, out: Path) -> None:
    """Rename the whole `part` folder to `out` (atomic: `out` existing means complete)."""
    try:
        os.replace(part, out)
    except OSError:  # another process finished the same corpus first: keep theirs
        if not out.is_dir():
            raise
        shutil.rmtree(part, ignore_errors=True)


def write_rows(paths: list[Path], parts, columns: int) -> list[np.ndarray]:
    """Stream int64 rows to the raw files `paths`, atomically: `parts` yields, for each path, an
    array [n, columns] to append to it. Returns the files memory-mapped read-only, [N, columns]."""
    tmps = [p.with_name(p.name + ".tmp") for p in paths]
    try:
        files = [open(t, "wb") for t in tmps]
        try:
            for rows in parts:
                for f, r in zip(files, rows):
                    f.write(np.ascontiguousarray(r, dtype=np.int64).tobytes())
        finally:
            for f in files:
                f.close()
        for t, p in zip(tmps, paths):
            os.replace(t, p)
    finally:
        for t in tmps:
            t.unlink(missing_ok=True)
    return [read_rows(p, columns) for p in paths]


def read_rows(path: Path, columns: int) -> np.ndarray:
    if os.path.getsize(path) == 0:  # numpy cannot map an empty file
        return np.zeros((0, columns), dtype=np.int64)
    return np.memmap(path, dtype=np.int64, mode="r").reshape(-1, columns)
