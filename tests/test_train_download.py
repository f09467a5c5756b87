"""plumbing.download / plumbing.extract_zip against a local HTTP server on 127.0.0.1 (never the
internet)."""
import http.server
import threading
import zipfile

import pytest

from support.plumbing import DownloadError, download, extract_zip


def _make_zip(path, files):
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def test_download_then_extract(http_server, tmp_path):
    root, url = http_server
    served = _make_zip(root / "corpus.zip",
                       {"corpus/wiki.train.raw": " = A = \n\n hello world .\n" * 50})
    size = served.stat().st_size
    dest = tmp_path / "cache" / "corpus.zip"
    got = download(f"{url}/corpus.zip", dest, expected_size=size, desc="corpus")
    assert got == dest and dest.read_bytes() == served.read_bytes()
    assert not (tmp_path / "cache" / "corpus.zip.part").exists()
    out = extract_zip(dest, tmp_path / "cache" / "corpus")
    assert (out / "corpus" / "wiki.train.raw").read_text() == " = A = \n\n hello world .\n" * 50
    assert [p.name for p in (tmp_path / "cache").iterdir() if p.name.endswith(".tmp")] == []
    # A second call trusts the complete file and does not fetch again: the server no longer has it.
    served.unlink()
    assert download(f"{url}/corpus.zip", dest, expected_size=size) == dest
    assert extract_zip(dest, tmp_path / "cache" / "corpus") == out


def test_download_without_expected_size_uses_content_length(http_server, tmp_path):
    root, url = http_server
    (root / "a.bin").write_bytes(bytes(range(256)) * 1000)
    dest = download(f"{url}/a.bin", tmp_path / "a.bin")
    assert dest.read_bytes() == bytes(range(256)) * 1000


def test_wrong_size_leaves_no_trusted_file(http_server, tmp_path):
    root, url = http_server
    (root / "big.zip").write_bytes(b"x" * 1000)  # the server has fewer bytes than we expect
    dest = tmp_path / "big.zip"
    with pytest.raises(DownloadError, match=r"(?s)got 1,000 bytes, expected 5,000.*--data PATH"):
        download(f"{url}/big.zip", dest, expected_size=5000)
    assert not dest.exists() and not (tmp_path / "big.zip.part").exists()


class _LyingHandler(http.server.BaseHTTPRequestHandler):
    """Announces 10,000 bytes, sends 100, then closes the connection: a truncated transfer."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "10000")
        self.end_headers()
        self.wfile.write(b"y" * 100)
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args):
        pass


def test_truncated_transfer_raises_and_leaves_nothing(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _LyingHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        dest = tmp_path / "cut.zip"
        with pytest.raises(DownloadError, match="cut.zip"):
            download(f"http://127.0.0.1:{server.server_address[1]}/cut.zip", dest)
        assert not dest.exists() and not (tmp_path / "cut.zip.part").exists()
        # A later run must not trust anything: a retry hits the same truncated server and fails
        # again.
        with pytest.raises(DownloadError):
            download(f"http://127.0.0.1:{server.server_address[1]}/cut.zip", dest)
    finally:
        server.shutdown()
        server.server_close()


def test_missing_file_and_unreachable_host(http_server, tmp_path):
    _, url = http_server
    with pytest.raises(DownloadError, match=r"(?s)HTTP error 404.*pass a local path"):
        download(f"{url}/nope.zip", tmp_path / "nope.zip")
    # Port 9 on 127.0.0.1 ("discard") has no listener here: connection refused, quickly.
    with pytest.raises(DownloadError, match="URLError"):
        download("http://127.0.0.1:9/x.zip", tmp_path / "x.zip", timeout=5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["served"]


def _flip_byte_in_member(z, name):
    """Flip one byte in the middle of a member's data; the zip's directory stays intact."""
    data = bytearray(z.read_bytes())
    with zipfile.ZipFile(z) as zf:
        info = zf.getinfo(name)
    # The member's data starts after its 30-byte local header, its name and its extra field.
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start + info.compress_size // 2] ^= 0xFF
    z.write_bytes(bytes(data))


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_corrupt_zip_is_rejected_and_not_extracted(tmp_path, compression):
    z = tmp_path / "c.zip"
    with zipfile.ZipFile(z, "w", compression=compression) as zf:
        zf.writestr("ok.txt", "fine")
        zf.writestr("a.txt", "some text that compresses " * 200)
    _flip_byte_in_member(z, "a.txt")
    # Stored: the bytes read fine but CRC-32 differs (testzip names the member); deflated: the
    # stream itself breaks. Either way, one clear error and nothing extracted.
    expected = ("CRC check failed for 'a.txt'" if compression == zipfile.ZIP_STORED
                else "not a valid zip")
    with pytest.raises(DownloadError, match=expected):
        extract_zip(z, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    (tmp_path / "plain.zip").write_text("not a zip")
    with pytest.raises(DownloadError, match="not a valid zip"):
        extract_zip(tmp_path / "plain.zip", tmp_path / "out2")
