"""Pre-training ELECTRA (Clark et al. 2020, arXiv 2003.10555) end to end.

    python train.py --size small                 # WikiText-103, downloaded once into ./cache
    python train.py --size tiny --data my_texts/ # any .txt file or folder of them

This file is read top to bottom like nanoGPT's train.py: downloads, corpus, examples,
the training recipe, then the loop. Every piece is importable (finetune.py and the
notebooks reuse `download`, `extract_zip`, ...).
"""
from __future__ import annotations

import http.client
import os
import shutil
import tempfile
import urllib.error
import urllib.request
import zipfile
import zlib
from pathlib import Path

from tqdm import tqdm

# -----------------------------------------------------------------------------
# Downloads: streamed to a ".part" file, size-checked, renamed only when complete,
# so an interrupted or truncated download never leaves a file a later run trusts.

DOWNLOAD_CHUNK_BYTES = 1 << 20  # 1 MiB reads: a smooth progress bar without per-byte overhead
DOWNLOAD_TIMEOUT_S = 60.0  # seconds without data before we give up (urllib socket timeout)


class DownloadError(RuntimeError):
    """A download or archive check failed; the message says what failed and what to do instead."""


def _download_failed(what: str, url: str, dest: Path, reason: str) -> DownloadError:
    return DownloadError(
        f"could not download {what} from {url}: {reason}.\n"
        f"If you are offline or the server is unreachable, fetch the file another way and put it at "
        f"{dest}, or pass a local path instead (e.g. `python train.py --data PATH` with a .txt file "
        f"or a folder of them)."
    )


def download(url: str, dest: Path, expected_size: int | None = None, desc: str | None = None,
             timeout: float = DOWNLOAD_TIMEOUT_S) -> Path:
    """Download `url` to `dest` once, with a progress bar, and return `dest`.

    The bytes go to `dest + ".part"`; only when the byte count equals `expected_size`
    (or the server's Content-Length when no size is given) is it renamed to `dest` with
    os.replace, which is atomic. So `dest` existing means a complete download: a second
    call returns at once. Any failure (unreachable host, HTTP error, timeout, short read,
    wrong size) removes the partial file and raises DownloadError.

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
        with urllib.request.urlopen(url, timeout=timeout) as response, open(part, "wb") as f:
            header = response.headers.get("Content-Length")
            total = expected_size if expected_size is not None else (int(header) if header else None)
            got = 0
            with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=what,
                      dynamic_ncols=True) as bar:
                while chunk := response.read(DOWNLOAD_CHUNK_BYTES):
                    f.write(chunk)
                    got += len(chunk)
                    bar.update(len(chunk))
        if total is not None and got != total:
            raise _download_failed(what, url, dest, f"got {got:,} bytes, expected {total:,} (truncated or wrong file)")
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

    >>> extract_zip(Path("cache/wikitext-2-raw-v1.zip"), Path("cache/wikitext-2-raw-v1"))  # doctest: +SKIP
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
            tmp = Path(tempfile.mkdtemp(prefix=dest_dir.name + ".", suffix=".tmp", dir=dest_dir.parent))
            try:
                z.extractall(tmp)  # extractall strips absolute paths and ".." from member names
                os.replace(tmp, dest_dir)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{zip_path} does not exist; download it first or pass --data PATH") from e
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error) as e:
        raise DownloadError(f"{zip_path} is not a valid zip archive or is corrupt ({e}){corrupt}") from e
    return dest_dir
