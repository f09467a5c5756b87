"""--data openwebtext against a local HTTP server on 127.0.0.1 that serves a hub-like dataset
repository (datasets/{repo}/resolve/{revision}/{file}, each archive through a redirect carrying its
size and sha256, as huggingface.co does). The archives are tiny ones built here in OpenWebText's
layout: a tar of .xz members, each an xz-compressed tar of one .txt per web page."""
import hashlib
import http.server
import io
import lzma
import re
import tarfile
import threading
import urllib.parse

import pytest

import data
import train
from support.plumbing import DownloadError, tar_documents

REPO, REVISION = data.OPENWEBTEXT


def tar_bytes(files: dict, compress_xz=False) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, body in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            t.addfile(info, io.BytesIO(body))
    return lzma.compress(buf.getvalue()) if compress_xz else buf.getvalue()


def subset(i: int, pages: int = 6) -> tuple[bytes, list[str]]:
    """An archive urlsf_subset{i:02d}.tar of two .xz members of `pages` // 2 web pages each, and
    the text each page should become (its non-blank lines, then a blank line)."""
    members, docs = {}, []
    for m in range(2):
        texts = {}
        for p in range(pages // 2):
            words = " ".join(f"the cat {i} {m} {p} sat ." for _ in range(3))
            texts[f"{i:04d}{m}{p}-page.txt"] = f"{words}\n\n\n  {words} !\r\n".encode()
            docs.append(f"{words}\n{words} !\n\n")
        members[f"openwebtext/urlsf_subset{i:02d}-{m}_data.xz"] = tar_bytes(texts, True)
    return tar_bytes(members), docs


class DatasetHandler(http.server.BaseHTTPRequestHandler):
    """GET/HEAD /datasets/{repo}/resolve/{revision}/subsets/{name}: a 302 to /lfs/{sha256} with
    X-Linked-Etag and X-Linked-Size. server.files: {name: bytes}; server.faults: "truncate"
    (half the bytes), "bad_sha" (a wrong sha256 announced)."""

    def do_HEAD(self):
        self._serve(False)

    def do_GET(self):
        self._serve(True)

    def _serve(self, body):
        server = self.server
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        server.requests.append((self.command, path))
        if path.startswith("/lfs/"):
            blob = server.lfs[path[len("/lfs/"):]]
            self.send_response(200)
            self.send_header("Content-Length", str(len(blob)))
            self.end_headers()
            if body:
                self.wfile.write(blob[:len(blob) // 2] if server.faults.get("truncate") else blob)
            self.close_connection = True
            return
        m = re.match(rf"^/datasets/{REPO}/resolve/{REVISION}/subsets/(.+)$", path)
        if not m or m.group(1) not in server.files:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound" if m else "RepoNotFound")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        blob = server.files[m.group(1)]
        sha = hashlib.sha256(blob).hexdigest()
        server.lfs[sha] = blob
        self.send_response(302)
        self.send_header("Location", f"/lfs/{sha}")
        self.send_header("X-Linked-Etag", f'"{"0" * 64 if server.faults.get("bad_sha") else sha}"')
        self.send_header("X-Linked-Size", str(len(blob)))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def owt(monkeypatch):
    """The server with 3 archives, HF_ENDPOINT pointing at it, OPENWEBTEXT_SUBSETS = 3."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), DatasetHandler)
    server.files, server.faults, server.requests, server.lfs, server.docs = {}, {}, [], {}, []
    for i in range(3):
        blob, docs = subset(i)
        server.files[f"urlsf_subset{i:02d}.tar"] = blob
        server.docs.append(docs)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(data, "OPENWEBTEXT_SUBSETS", 3)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_openwebtext_is_fetched_archive_by_archive(owt, tmp_path):
    cache = tmp_path / "cache"
    folder = data.resolve_corpus("openwebtext", cache)
    assert folder == cache / "openwebtext"
    for i in range(3):  # every web page a document, in the archive's order
        assert (folder / f"urlsf_subset{i:02d}.txt").read_text() == "".join(owt.docs[i])
    assert not (cache / "openwebtext.part").exists()
    assert list((cache / "openwebtext-archives").rglob("*.tar*")) == []  # deleted once extracted
    owt.requests.clear()
    assert data.resolve_corpus("openwebtext", cache) == folder and owt.requests == []


def test_a_stop_keeps_the_archives_already_extracted(owt, tmp_path):
    cache = tmp_path / "cache"
    del owt.files["urlsf_subset02.tar"]  # the third archive is missing: the run stops there
    with pytest.raises(DownloadError, match=r"urlsf_subset02\.tar.*no such file"):
        data.resolve_corpus("openwebtext", cache)
    assert sorted(p.name for p in (cache / "openwebtext.part").iterdir()) == \
        ["urlsf_subset00.txt", "urlsf_subset01.txt"]
    owt.files["urlsf_subset02.tar"] = subset(2)[0]
    owt.requests.clear()
    data.resolve_corpus("openwebtext", cache)
    assert {path.rsplit("/", 1)[-1] for _, path in owt.requests if "subsets" in path} == \
        {"urlsf_subset02.tar"}


@pytest.mark.parametrize("fault, message", [("truncate", "truncated"), ("bad_sha", "sha256")])
def test_a_truncated_or_corrupted_transfer_is_one_line(owt, tmp_path, fault, message):
    owt.faults[fault] = True
    with pytest.raises(DownloadError, match=message) as e:
        data.resolve_corpus("openwebtext", tmp_path / "cache")
    assert "\n" not in str(e.value)
    assert not list((tmp_path / "cache").rglob("*.part")) or \
        not list((tmp_path / "cache" / "openwebtext.part").iterdir())
    assert list((tmp_path / "cache" / "openwebtext-archives").rglob("*.tar*")) == []


def test_a_corrupt_archive_is_named_and_deleted(owt, tmp_path):
    blob = bytearray(owt.files["urlsf_subset01.tar"])
    xz_start = blob.index(b"\xfd7zXZ")  # the first .xz member: flip bytes inside its stream
    blob[xz_start + 100:xz_start + 140] = bytes(40)
    owt.files["urlsf_subset01.tar"] = bytes(blob)  # served with its own (matching) sha256
    with pytest.raises(DownloadError, match=r"urlsf_subset01\.tar is corrupt or truncated"):
        data.resolve_corpus("openwebtext", tmp_path / "cache")
    assert list((tmp_path / "cache" / "openwebtext-archives").rglob("*.tar*")) == []
    assert sorted(p.name for p in (tmp_path / "cache" / "openwebtext.part").iterdir()) == \
        ["urlsf_subset00.txt"]


def test_a_truncated_local_archive_is_one_line(tmp_path):
    blob, _ = subset(0)
    (tmp_path / "cut.tar").write_bytes(blob[:blob.rindex(b"\xfd7zXZ") + 50])  # in its last .xz
    with pytest.raises(DownloadError, match="corrupt or truncated") as e:
        tar_documents(tmp_path / "cut.tar", tmp_path / "out.txt", progress=False)
    assert "\n" not in str(e.value) and not list(tmp_path.glob("out.txt*"))


def test_train_on_openwebtext(owt, tmp_path):
    """train.py --data openwebtext end to end: two updates on the served archives."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(t + "\n" for t in
                             ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat",
                              ".", "!", "0", "1", "2", "3", "4", "5"]))
    result = train.main(["--data", "openwebtext", "--vocab", str(vocab), "--size", "tiny",
                         "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out"),
                         "--steps", "2", "--warmup", "1", "--batch-size", "4", "--seq-len", "16",
                         "--set", "num_layers=1", "--eval-fraction", "0.1", "--eval-batches", "1",
                         "--device", "cpu"])
    assert result["step"] == 2 and result["config"].data == "openwebtext"
