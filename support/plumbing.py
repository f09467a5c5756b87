"""Plumbing shared by train.py, finetune.py, squad.py, data.py and tokenizer.py: nothing in here is
ELECTRA. Downloads (size-checked, renamed only when complete), archives checked and extracted (zip,
OpenWebText's tars of xz), text files decoded, atomic writes, checkpoint files (with the previous
one kept as a fallback), RNG state, devices and precision, DDP, signals, the run folder (one run at
a time), train.py's guards around its loop (LoopGuards,
FirstCompile), and the command line's spelling
(add_flag) and --set values (parse_overrides). Each lives here once.
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import http.client
import lzma
import os
import re
import shutil
import signal
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
import zlib

try:
    import fcntl
except ImportError:  # Windows has no flock; msvcrt's non-blocking byte lock does the same job
    fcntl = None
    import msvcrt
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.utils.rnn import pad_sequence
from tqdm import tqdm

# -----------------------------------------------------------------------------
# Downloads: streamed to a ".part" file, size-checked, renamed only when complete,
# so an interrupted or truncated download never leaves a file a later run trusts.

DOWNLOAD_CHUNK_BYTES = 1 << 20  # 1 MiB reads: a smooth progress bar without per-byte overhead
DOWNLOAD_TIMEOUT_S = 60.0  # seconds without data before we give up (urllib socket timeout)


class DownloadError(RuntimeError):
    """A download or archive check failed; the message says what failed and what to do instead,
    `reason` (when a download failed) only what failed, for callers that give their own advice."""

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = reason


def _download_failed(what: str, url: str, dest: Path, reason: str) -> DownloadError:
    return DownloadError(
        f"could not download {what} from {url}: {reason}.\n"
        f"If you are offline or the server is unreachable, fetch the file another way and put it "
        f"at {dest}, or pass a local path instead (e.g. `python train.py --data PATH` with a .txt "
        f"file or a folder of them).", reason)


def download(url: str, dest: Path, expected_size: int | None = None, desc: str | None = None,
             timeout: float = DOWNLOAD_TIMEOUT_S, sha256: str | None = None,
             headers: dict | None = None) -> Path:
    """Download `url` to `dest` once, with a progress bar, and return `dest`.

    The bytes go to `dest + ".part"`; only when the byte count equals `expected_size`
    (or the server's Content-Length when no size is given) is it renamed to `dest` with
    os.replace, which is atomic. So `dest` existing means a complete download: a second
    call returns at once. Any failure (unreachable host, HTTP error, timeout, short read,
    wrong size) removes the partial file and raises DownloadError. `sha256` (hex): the bytes must
    also hash to it (the hub's X-Linked-Etag). `headers`: sent with the request (an Authorization).

    >>> download("https://wikitext.smerity.com/wikitext-2-raw-v1.zip",
    ...          Path("cache/wikitext-2-raw-v1.zip"), expected_size=4721645)  # doctest: +SKIP
    PosixPath('cache/wikitext-2-raw-v1.zip')
    """
    dest = Path(dest)
    what = desc or dest.name
    if dest.is_file() and (expected_size is None or dest.stat().st_size == expected_size):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    try:
        request = urllib.request.Request(url, headers=headers or {})
        digest = hashlib.sha256() if sha256 is not None else None
        with urllib.request.urlopen(request, timeout=timeout) as response, open(part, "wb") as f:
            header = response.headers.get("Content-Length")
            total = (expected_size if expected_size is not None
                     else (int(header) if header else None))
            got = 0
            with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=what,
                      dynamic_ncols=True) as bar:
                while chunk := response.read(DOWNLOAD_CHUNK_BYTES):
                    f.write(chunk)
                    if digest is not None:
                        digest.update(chunk)
                    got += len(chunk)
                    bar.update(len(chunk))
        if total is not None and got != total:
            raise _download_failed(what, url, dest, f"got {got:,} bytes, expected {total:,} "
                                                    f"(truncated or wrong file)")
        if digest is not None and digest.hexdigest() != sha256.lower():
            raise _download_failed(what, url, dest,
                                   f"its sha256 is {digest.hexdigest()[:12]}..., expected "
                                   f"{sha256.lower()[:12]}... (corrupted in transit or wrong file)")
        os.replace(part, dest)
    except DownloadError:
        part.unlink(missing_ok=True)
        raise
    except (urllib.error.URLError, http.client.HTTPException, TimeoutError, OSError) as e:
        part.unlink(missing_ok=True)
        if isinstance(e, urllib.error.HTTPError):
            reason = f"HTTP error {e.code} {e.reason}"
        else:
            reason = f"{type(e).__name__}: {getattr(e, 'reason', None) or e}"
        raise _download_failed(what, url, dest, reason) from e
    except BaseException:  # Ctrl-C mid-download: leave nothing half-written behind
        part.unlink(missing_ok=True)
        raise
    return dest


def extract_zip(zip_path: Path, dest_dir: Path) -> Path:
    """Check every member's CRC-32, extract into a temporary folder, then rename it to `dest_dir`.

    The rename is atomic, so `dest_dir` existing means a complete extraction; a second call
    returns at once. A corrupt archive raises DownloadError and leaves no `dest_dir`.
    Returns `dest_dir`.

    >>> extract_zip(Path("cache/wikitext-2-raw-v1.zip"),
    ...             Path("cache/wikitext-2-raw-v1"))  # doctest: +SKIP
    PosixPath('cache/wikitext-2-raw-v1')
    """
    zip_path, dest_dir = Path(zip_path), Path(dest_dir)
    if dest_dir.is_dir():
        return dest_dir
    dest_dir.parent.mkdir(parents=True, exist_ok=True)
    corrupt = (f"; delete {zip_path} and run again to download it afresh, or pass the extracted "
               f"text yourself with --data PATH")
    try:
        with zipfile.ZipFile(zip_path) as z:
            bad = z.testzip()  # reads every member and checks its CRC-32; first bad name or None
            if bad is not None:
                raise DownloadError(f"{zip_path} is corrupt: CRC check failed for {bad!r}{corrupt}")
            tmp = Path(tempfile.mkdtemp(prefix=dest_dir.name + ".", suffix=".tmp",
                                        dir=dest_dir.parent))
            try:
                z.extractall(tmp)  # extractall strips absolute paths and ".." from member names
                os.replace(tmp, dest_dir)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{zip_path} does not exist; download it first or pass "
                                f"--data PATH") from e
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error) as e:
        raise DownloadError(f"{zip_path} is not a valid zip archive or is corrupt "
                            f"({e}){corrupt}") from e
    return dest_dir


def tar_documents(tar_path: Path, out_path: Path, progress: bool = True) -> Path:
    """OpenWebText's layout as text: each .xz member of the tar `tar_path` is an xz-compressed tar
    of .txt files, one web page each. Writes them to `out_path`, one document after the other, in
    the archive's order: its non-blank lines, then a blank line (the official OpenWebText builder
    reads each file as one document, blank lines skipped: blanks_separate_docs=False). Read as a
    stream, one member at a time, and written atomically; a second call returns at once. A corrupt
    or truncated archive raises DownloadError naming it and leaves no `out_path`."""
    tar_path, out_path = Path(tar_path), Path(out_path)
    if out_path.is_file():
        return out_path

    def write(tmp: Path) -> None:
        with tarfile.open(tar_path, "r|") as outer, open(tmp, "w", encoding="utf-8") as out, \
                tqdm(desc=f"extracting {tar_path.name}", unit="doc", unit_scale=True,
                     dynamic_ncols=True, disable=not progress) as bar:
            for member in outer:
                if not (member.isfile() and member.name.endswith(".xz")):
                    continue
                xz = lzma.LZMAFile(outer.extractfile(member))  # read as a stream too
                with tarfile.open(fileobj=xz, mode="r|") as inner:
                    for doc in inner:
                        if not (doc.isfile() and doc.name.endswith(".txt")):
                            continue
                        text = inner.extractfile(doc).read().decode("utf-8", errors="replace")
                        lines = [line.strip() for line in text.splitlines()]
                        out.write("".join(line + "\n" for line in lines if line) + "\n")
                        bar.update()

    try:
        atomic_write(out_path, write)
    except (tarfile.TarError, lzma.LZMAError, EOFError) as e:
        raise DownloadError(f"{tar_path} is corrupt or truncated ({type(e).__name__}: {e}); delete "
                            f"it and run again to download it afresh, or pass the extracted text "
                            f"yourself with --data PATH") from e
    return out_path


# -----------------------------------------------------------------------------
# Text files a user gives: decoded whatever their encoding, binaries refused by name.

# Not text: a NUL byte (as git and grep decide), or more than this share of control characters
# other than whitespace in the first BINARY_SNIFF_CHARS (text, even Latin-1 read as such, has
# almost none; noise ~25%).
BINARY_CONTROL_FRACTION, BINARY_SNIFF_CHARS = 0.1, 1 << 20
_NON_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # control characters but \t \n \r


def decode_text(data: bytes, name: str | os.PathLike) -> str:
    """Bytes to text: UTF-8 (a leading BOM dropped), else Latin-1 with a one-line warning.

    Latin-1 maps every byte to a character, so no text is ever dropped. Line endings CRLF and CR
    become LF. A file that is not text (a NUL byte, or mostly control characters: a program, an
    image) raises ValueError naming it, instead of being read as text.

    UTF-16 (a BOM, or a NUL in every other byte of English text) raises ValueError saying how to
    convert it: the vocabulary and the corpus are read as UTF-8.

    >>> decode_text(b"caf\\xc3\\xa9\\r\\nnext\\rlast", "a.txt")
    'café\\nnext\\nlast'
    >>> decode_text("hi".encode("utf-16"), "b.txt")
    Traceback (most recent call last):
    ValueError: b.txt looks like UTF-16 text: convert it to UTF-8, e.g. iconv -f UTF-16 ...
    """
    # UTF-16: its byte order mark, or (no mark) a NUL in every other byte of the first KiB, as
    # English text has; which bytes are NUL says the byte order iconv needs to be told
    head = data[:1024]
    utf16 = None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        utf16 = "UTF-16"
    elif len(head) >= 4 and head[1::2].count(0) == len(head[1::2]):
        utf16 = "UTF-16LE"
    elif len(head) >= 4 and head[0::2].count(0) == len(head[0::2]):
        utf16 = "UTF-16BE"
    if utf16:
        path = Path(name)
        raise ValueError(f"{name} looks like UTF-16 text: convert it to UTF-8, e.g. iconv -f "
                         f"{utf16} -t UTF-8 {name} > {path.with_name(path.stem + '-utf8')}"
                         f"{path.suffix}")
    if b"\x00" in data:
        raise ValueError(f"{name} is not a text file (it has NUL bytes): pass .txt files of "
                         f"plain text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        print(f"warning: {name} is not UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start}); "
              f"read as Latin-1", file=sys.stderr)
        text = data.decode("latin-1")
    sample = text[:BINARY_SNIFF_CHARS]
    controls = len(_NON_TEXT.findall(sample))
    if controls > BINARY_CONTROL_FRACTION * len(sample):
        raise ValueError(f"{name} is not a text file ({controls / len(sample):.0%} of its "
                         f"characters are control characters): pass .txt files of plain text")
    return text.replace("\r\n", "\n").replace("\r", "\n")


# -----------------------------------------------------------------------------
# Atomic writes: a reader (or a crash) never sees half a file.

# A write that fails with less free space than this is a full disk (a write error under torch.save
# has no errno): any preset's checkpoint is larger (tiny's embedding table alone is
# 8192 x 128 x 4 B = 4 MiB).
DISK_FULL_BYTES = 1 << 20


def atomic_write(path: Path, data, keep_previous: Path | None = None) -> None:
    """Write `data` (str, bytes, or a function writing to the path it is given) to a temporary file
    beside `path`, then rename it to `path`, so `path` is always a whole file. keep_previous: first
    hard-link the file being replaced there (write_checkpoint's fallback). A failed write removes
    its .tmp; a full disk (or any other OSError) ends in one line saying so."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        write = lambda p: p.write_text(data, encoding="utf-8")  # noqa: E731
    elif isinstance(data, bytes):
        write = lambda p: p.write_bytes(data)  # noqa: E731
    else:
        write = data
    tmp = path.with_name(path.name + ".tmp")
    try:
        write(tmp)
        if keep_previous is not None and path.is_file():
            prev_tmp = keep_previous.with_name(keep_previous.name + ".tmp")
            prev_tmp.unlink(missing_ok=True)
            try:
                # a second name for the old file: no copy, and path never goes missing
                os.link(path, prev_tmp)
            except OSError:  # a file system without hard links
                shutil.copyfile(path, prev_tmp)
            os.replace(prev_tmp, keep_previous)
        os.replace(tmp, path)
    except BaseException as e:
        free = shutil.disk_usage(path.parent).free if path.parent.is_dir() else None
        tmp.unlink(missing_ok=True)
        if not isinstance(e, (OSError, RuntimeError)):  # Ctrl-C, a bug: not a write error
            raise
        full = (getattr(e, "errno", None) == errno.ENOSPC
                or (free is not None and free < DISK_FULL_BYTES))
        if not full and not isinstance(e, OSError):
            raise
        raise SystemExit(f"{'disk full: ' if full else ''}could not write {path} "
                         f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else e}); "
                         f"{free or 0:,} bytes free on its disk. {tmp.name} was removed and the "
                         f"files already there are intact: free some space (or use another --out) "
                         f"and run again") from e


# -----------------------------------------------------------------------------
# Checkpoint files: written whole, the file replaced kept beside as the fallback of a later read


def previous_checkpoint(path: Path) -> Path:
    """Where write_checkpoint keeps the checkpoint it replaced: ckpt.pt -> ckpt.prev.pt."""
    return path.with_name(path.stem + ".prev" + path.suffix)


def write_checkpoint(path: Path, state: dict) -> None:
    """torch.save `state` to a temporary file renamed to `path` (never half a file), first keeping
    the checkpoint it replaces as previous_checkpoint(path)."""
    atomic_write(path, lambda p: torch.save(state, p), keep_previous=previous_checkpoint(path))


def _read_checkpoint(path: Path) -> tuple[dict | None, str]:
    """(the checkpoint, "") or (None, why it cannot be read)."""
    if not path.is_file():
        return None, "missing"
    try:
        return torch.load(path, map_location="cpu", weights_only=True), ""
    except Exception as e:  # truncated (an interrupted copy), corrupt, or not a checkpoint at all
        return None, f"unreadable: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def _no_checkpoint(path: Path, flag: str) -> SystemExit:
    return SystemExit(f"{flag}: no checkpoint at {path}; point --out at the run folder that has "
                      f"{path.name} (or start a new run without {flag})")


def load_checkpoint(path: Path, flag: str = "--resume", set_aside: bool = False) -> dict:
    """The checkpoint at `path`, or, when it is missing or unreadable, the previous one that
    write_checkpoint kept (saying so). Neither: one line naming both. set_aside (--resume): rename
    an unreadable `path` to path.unreadable, so the next save does not keep it as the previous
    one."""
    saved, why = _read_checkpoint(path)
    if saved is not None:
        return saved
    prev = previous_checkpoint(path)
    fallback, why_prev = _read_checkpoint(prev)
    if fallback is None:
        if why == why_prev == "missing":
            raise _no_checkpoint(path, flag)
        raise SystemExit(f"{flag}: no readable checkpoint: {path} is {why}; the previous one "
                         f"{prev} is {why_prev}")
    note = ""
    if set_aside and path.is_file():
        aside = path.with_name(path.name + ".unreadable")
        os.replace(path, aside)
        note = f" ({path.name} moved to {aside.name})"
    print(f"{flag}: {path} is {why}; falling back to the previous checkpoint {prev} "
          f"(step {fallback['step']:,}){note}")
    return fallback


# -----------------------------------------------------------------------------
# RNG state (masks, samples and dropout all draw from torch's generators)


def rng_state() -> dict:
    """This process's torch RNG states (masks, samples and dropout all draw from them)."""
    return {"torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []}


def set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    if torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(state["cuda"])


# -----------------------------------------------------------------------------
# Devices, precision, processes, signals


def setup_distributed(device_arg: str) -> tuple[int, int, int, torch.device]:
    """(rank, local_rank, world_size, device). Under torchrun (WORLD_SIZE > 1) this joins the
    process group: NCCL on GPUs, gloo on CPUs. Otherwise a single process."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank, local_rank = int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0"))
    if device_arg == "auto":
        device_arg = "cuda" if torch.cuda.is_available() else "cpu"
    if device_arg.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"--device {device_arg}: no CUDA GPU is visible to PyTorch; use "
                         f"--device cpu")
    device = torch.device(device_arg)
    if device.type == "cuda":
        device = torch.device("cuda", local_rank if world > 1 else (device.index or 0))
        torch.cuda.set_device(device)
    if world > 1:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return rank, local_rank, world, device


def mixed_precision(device: torch.device, precision: str):
    """("bf16" or "fp32", the context the forward pass runs in) for --precision on `device`.

    bf16 autocast runs the matmuls in bfloat16; weights, optimizer state and the losses stay fp32
    (electra.mlm_loss / disc_loss upcast their logits; autocast runs LayerNorm and softmax in fp32).
    "auto" chooses it on GPUs with native bf16 (Ampere and later) and fp32 elsewhere: on pre-Ampere
    GPUs (V100, T4) bf16 is emulated and slow, and on most CPUs it is slower than fp32 and changes
    the numbers. Deviation: the official code keeps everything in fp32; bf16 roughly doubles the
    matmul throughput of a modern GPU. Asking for bf16 on a CPU works (the tests use it to run the
    GPU's code path without a GPU).
    """
    if precision not in ("auto", "bf16", "fp32"):
        raise SystemExit(f"--precision {precision}: choose auto, bf16 or fp32")
    if precision == "auto":
        native = device.type == "cuda" and torch.cuda.is_bf16_supported(including_emulation=False)
        precision = "bf16" if native else "fp32"
    if precision == "fp32":
        return precision, contextlib.nullcontext()
    return precision, torch.autocast(device.type, dtype=torch.bfloat16)


def pad_batch(ids: list[list[int]], segments: list[list[int]], pad_id: int, device):
    """A batch's token rows padded to the longest of them: input_ids, segment_ids, attention_mask
    [B, T]. Shared by GLUE and SQuAD.

    Padding to the batch's longest row, not to max_seq_len as the official code does, gives the
    same outputs (padding is masked out of attention) and is several times faster on short GLUE
    sentences.
    """
    input_ids = pad_sequence([torch.tensor(r) for r in ids], batch_first=True,
                             padding_value=pad_id)  # [B, T]
    segment_ids = pad_sequence([torch.tensor(s) for s in segments], batch_first=True)
    attention_mask = (torch.arange(input_ids.shape[1])
                      < torch.tensor([len(r) for r in ids])[:, None]).long()
    return input_ids.to(device), segment_ids.to(device), attention_mask.to(device)


def to_device(arrays, device: torch.device) -> list[torch.Tensor]:
    """numpy arrays (a batch) as tensors on `device`; on a GPU copied from pinned memory, without
    waiting for the copy."""
    tensors = [torch.from_numpy(a) for a in arrays]
    if device.type == "cuda":
        return [t.pin_memory().to(device, non_blocking=True) for t in tensors]
    return tensors


def barrier(world: int) -> None:
    if world > 1:
        dist.barrier()


def rank0_first(rank: int, world: int, work):
    """work() on rank 0, then on the other ranks: rank 0 downloads, trains the vocab and fills the
    caches; the others then find them."""
    if rank == 0:
        result = work()
    barrier(world)
    if rank != 0:
        result = work()
    barrier(world)
    return result


def all_rng_states(world: int) -> list[dict]:
    """Every rank's rng_state, in rank order (gathered on every rank)."""
    if world == 1:
        return [rng_state()]
    states = [None] * world
    dist.all_gather_object(states, rng_state())
    return states


def agree_to_stop(requested: bool, log_step: bool, world: int, device: torch.device) -> bool:
    """Whether to stop after this update (Ctrl-C or SIGTERM on any rank). The ranks must agree on
    the step they stop at; they compare at log steps, a sync point anyway (asking at every step
    would make each step wait for the GPU)."""
    if world == 1:
        return requested
    if not log_step:
        return False
    flag = torch.tensor([float(requested)], device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item())


class StopOnSignal:
    """Ctrl-C (SIGINT) or SIGTERM sets `.requested`; the loop then does what `then` says (train.py:
    finish the step and save a checkpoint) and exits. A second Ctrl-C quits at once (what is on
    disk stays intact)."""

    def __init__(self, then: str = "finishing this step and saving a checkpoint"):
        self.requested = False
        self.then = then

    def _handle(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        tqdm.write(f"\n{signal.Signals(signum).name}: {self.then} "
                   f"(press Ctrl-C again to quit at once)")

    def __enter__(self):
        self._previous = {s: signal.signal(s, self._handle)
                          for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, *exc):
        for s, h in self._previous.items():
            signal.signal(s, h)


# -----------------------------------------------------------------------------
# The run folder (--out): one run at a time, a new run never overwrites one, --resume finds its own

# in --out; flock-ed by the run using it (the kernel releases it if it dies)
LOCK_FILE = "train.lock"


@contextlib.contextmanager
def open_run_folder(ckpt_path: Path, resume: bool, rank: int):
    """The folder of `ckpt_path`, held for as long as the run lasts; yields the checkpoint to resume
    (load_checkpoint), or None for a new run. One line and exit, before anything is written, when:

    - --resume finds no checkpoint there (nor the previous one), or a new run would overwrite one;
    - the folder cannot be created or written;
    - another run holds it: an exclusive flock on its train.lock. Under DDP only rank 0 takes the
      lock (the ranks share --out), and only rank 0 sets an unreadable checkpoint aside.
    """
    out_dir = ckpt_path.parent
    prev = previous_checkpoint(ckpt_path)
    found = [p for p in (ckpt_path, prev) if p.exists()]
    if resume and not found:
        raise _no_checkpoint(ckpt_path, "--resume")
    if not resume and found:
        raise SystemExit(f"{out_dir} holds a run ({', '.join(map(str, found))}): continue it with "
                         f"--resume (which falls back to {prev.name} if {ckpt_path.name} is "
                         f"unreadable), or start a new run with another --out (nothing was "
                         f"overwritten)")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out_dir, prefix=".write-test-"):
            pass
    except OSError as e:
        raise SystemExit(f"--out {out_dir}: cannot write there ({e.strerror or e}); choose a "
                         f"folder you can write to with --out DIR") from e
    if rank != 0:
        yield load_checkpoint(ckpt_path) if resume else None
        return
    with open(out_dir / LOCK_FILE, "a+") as f:
        try:
            _lock(f)
        # PermissionError: msvcrt's answer when it is held
        except (BlockingIOError, PermissionError):
            f.seek(0)
            holder = f.read().strip() or "another process"
            raise SystemExit(f"--out {out_dir} is in use by another train.py run ({holder}): "
                             f"wait for it to finish, or choose another --out") from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}\n")
        f.flush()
        try:
            yield load_checkpoint(ckpt_path, set_aside=True) if resume else None
        finally:
            _lock(f, release=True)


def _lock(f, release: bool = False) -> None:
    """Take (non-blocking) or release an exclusive lock on open file f; the OS drops it if we
    die."""
    if fcntl is not None:
        fcntl.flock(f, fcntl.LOCK_UN if release else fcntl.LOCK_EX | fcntl.LOCK_NB)
    else:
        pos = f.tell()
        f.seek(0)
        msvcrt.locking(f.fileno(), msvcrt.LK_UNLCK if release else msvcrt.LK_NBLCK, 1)
        f.seek(pos)


# -----------------------------------------------------------------------------
# Command-line spelling


def parse_overrides(items: list[str], config_cls, flag: str, fixed: tuple = (),
                    fixed_by: str = "") -> dict:
    """FIELD=VALUE strings as {field: value}, each value typed by the field of `config_cls`; the
    `fixed` fields are set by `fixed_by`, not by `flag`. A bad item ends in one line.

    >>> @dataclasses.dataclass
    ... class C:
    ...     num_layers: int = 12
    ...     dropout: float = 0.1
    ...     vocab_size: int = 30522
    >>> parse_overrides(["num_layers=2", "dropout=0"], C, "--set")
    {'num_layers': 2, 'dropout': 0.0}
    >>> parse_overrides(["vocab_size=8"], C, "--set", fixed=("vocab_size",),
    ...                 fixed_by="the vocabulary")
    Traceback (most recent call last):
    SystemExit: --set vocab_size=8: vocab_size comes from the vocabulary, not from --set
    """
    kinds = {f.name: f.type if isinstance(f.type, str) else f.type.__name__
             for f in dataclasses.fields(config_cls)}
    casts = {"int": int, "float": float, "bool": lambda v: v.lower() in ("1", "true", "yes")}
    out = {}
    for item in items:
        key, is_set, value = item.partition("=")
        if not is_set or key not in kinds:
            raise SystemExit(f"{flag} {item}: expected FIELD=VALUE with FIELD one of "
                             f"{sorted(kinds)}")
        if key in fixed:
            raise SystemExit(f"{flag} {item}: {key} comes from {fixed_by}, not from {flag}")
        try:
            out[key] = casts.get(kinds[key], str)(value)
        except ValueError as e:
            raise SystemExit(f"{flag} {item}: {key} must be a {kinds[key]}") from e
    return out


# -----------------------------------------------------------------------------
# train.py's guards around its loop: Ctrl-C, a stop the processes agree on, out of GPU memory, a
# loss that is not finite. Each ends the run with a checkpoint or one line, never a traceback.


class LoopGuards:
    """The guards of train.py's loop, in a `with` block around it (`cfg` is the run's
    train.TrainConfig, `micro_batch` the sequences per forward pass, `last_ckpt` the update of the
    checkpoint on disk, None for a new run):

    - Ctrl-C or SIGTERM (StopOnSignal) asks the loop to stop; the processes agree on the update
      they stop after (agree_to_stop), save a checkpoint there and end;
    - out of GPU memory in an update (`with guards.update():`) ends in one line that says how to
      fit the batch;
    - a loss or gradient norm that is not finite ends the run in one line (diverged), before the
      next checkpoint could keep it. It is recorded on the device at each update and read only
      where the loop waits for the device anyway (logs, evaluations, checkpoints).
    """

    def __init__(self, cfg, world: int, device: torch.device, micro_batch: int,
                 last_ckpt: int | None):
        self.cfg = cfg
        self.world = world
        self.device = device
        self.micro_batch = micro_batch
        self.last_ckpt = last_ckpt
        self.ckpt_path = Path(cfg.out_dir) / "ckpt.pt"
        self.signal = StopOnSignal()
        # the first update whose loss or gradient norm was not finite (0: none)
        self.diverged_at = torch.zeros((), dtype=torch.long, device=device)

    def __enter__(self):
        self.signal.__enter__()
        return self

    def __exit__(self, *exc):
        self.signal.__exit__(*exc)

    @contextlib.contextmanager
    def update(self):
        """The forward and backward passes of one update; out of GPU memory ends in one line."""
        cfg = self.cfg
        try:
            yield
        except torch.OutOfMemoryError as e:
            raise SystemExit(
                f"out of GPU memory at micro-batch {self.micro_batch} x seq {cfg.seq_len}: add "
                f"--grad-accum {cfg.grad_accum * 2} (same batch {cfg.batch_size} per update, half "
                f"the memory per step) or lower --batch-size. The last checkpoint "
                f"({self.ckpt_path}) is intact; continue with --resume.") from e

    def after_update(self, step: int, loss: torch.Tensor, grad_norm: torch.Tensor,
                     log_step: bool, sync: bool) -> bool:
        """Whether to stop after update `step` (a stop asked for on any process, agreed at log
        steps). `sync`: the loop waits for the device after this update (a log, an evaluation or
        a checkpoint follows), so a non-finite loss recorded so far is read, and ends the run."""
        finite = torch.isfinite(loss) & torch.isfinite(grad_norm)
        self.diverged_at = torch.where((self.diverged_at == 0) & ~finite, step, self.diverged_at)
        if (sync or self.signal.requested) and self.diverged_at.item():
            raise self.diverged(self.diverged_at.item())
        return agree_to_stop(self.signal.requested, log_step, self.world, self.device)

    def saved(self, step: int) -> None:
        """A checkpoint of update `step` is on disk."""
        self.last_ckpt = step

    def diverged(self, step: int) -> SystemExit:
        """The one line that stops a run whose loss or gradient norm was not finite at `step`."""
        lr = self.cfg.lr
        path = self.ckpt_path
        # the previous checkpoint, after a fallback
        good = path if path.is_file() else previous_checkpoint(path)
        if self.last_ckpt is not None:
            kept = f"the last good checkpoint, {good} at step {self.last_ckpt:,}, is untouched"
        else:
            kept = "no checkpoint was written"
        return SystemExit(f"the loss is not finite at step {step:,} (lr {lr:g}): the run diverged "
                          f"and was stopped; {kept}. Start a new run with a lower --lr "
                          f"(e.g. {lr / 10:g}) or a longer --warmup")


class FirstCompile:
    """The first update of a compiled run, in which torch.compile builds the step (a minute or two
    on a GPU). `with first.update():` around each update shows a status line on the progress bar
    `bar` while the first one waits, then `say`s how long it took. If that update fails, as when
    the compiler lacks a C compiler or Triton or cannot lower an operator, `say` prints one line
    and `first.failed` tells the loop to run the update again eagerly (train.run_eagerly); a
    failure that is not the compiler's then fails again there, with its own traceback. Out of
    memory is left to LoopGuards."""

    def __init__(self, compiled: bool, bar, say):
        self.pending = compiled  # the next update is the first compiled one
        self.failed = False
        self.bar = bar
        self.say = say

    @contextlib.contextmanager
    def update(self):
        self.failed = False
        if not self.pending:
            yield
            return
        self.pending = False
        self.bar.set_postfix_str("compiling the step: the first update waits a minute or two on "
                                 "a GPU", refresh=True)
        start = time.perf_counter()
        try:
            yield
        except torch.OutOfMemoryError:
            raise
        except Exception as e:  # whatever the compiler raised: eager needs none of it
            cause = e  # the compiler's own error, which torch wraps
            while (inner := cause.__cause__ or getattr(cause, "inner_exception", None)):
                cause = inner
            message = (str(cause).strip().splitlines() or [""])[0]
            self.say(f"torch.compile failed ({type(cause).__name__}: {message}): the run goes "
                     f"on eagerly")
            self.failed = True
            return
        self.bar.set_postfix_str("", refresh=True)
        self.say(f"torch.compile built the step in {time.perf_counter() - start:.0f} s (the first "
                 f"update)")
