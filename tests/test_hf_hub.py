"""hf.py's hub download against a local HTTP server on 127.0.0.1 that serves a hub-like layout
({org}/{model}/resolve/{revision}/{file}, the weights through a redirect carrying X-Linked-Etag
and X-Linked-Size, as huggingface.co does). The checkpoints are small random transformers models
saved with save_pretrained; nothing here touches the internet."""
import hashlib
import http.server
import re
import socket
import threading
import urllib.parse

import pytest
import torch
from conftest import hf_pair

import electra
from support import hf
from support.plumbing import DownloadError
from tokenizer import CONFIG

# A discriminator 64 wide with 2 layers; its generator half as wide (fraction 1/2: hidden 32, 1
# head, FFN 128), the shape electra.generator_config derives, as Google's released pairs have.
TINY = electra.ElectraConfig(vocab_size=120, embedding_size=32, hidden_size=64, num_layers=2,
                             num_heads=2, intermediate_size=128, max_position=64,
                             generator_fraction=0.5)
WEIGHTS = ("model.safetensors", "pytorch_model.bin")


def write_vocab(path, size):
    tokens = list(CONFIG.specials) + [f"w{i}" for i in range(size - len(CONFIG.specials))]
    path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")


def save_pair(root, org="google", stem="electra-tiny", revision="main", safetensors=True, seed=0):
    """A random HF ElectraForPreTraining and its ElectraForMaskedLM generator (embeddings tied, as
    ELECTRA's are), saved with save_pretrained under root/{org}/{stem}-{role}/{revision}/."""
    d, g = hf_pair(TINY, seed)
    folders = {}
    for role, model in (("discriminator", d), ("generator", g)):
        folder = root / org / f"{stem}-{role}" / revision
        model.save_pretrained(folder, safe_serialization=True)
        # older hub repositories (Google's among them) ship a pickled state dict
        if not safetensors:
            from safetensors.torch import load_file
            torch.save(load_file(folder / "model.safetensors"), folder / "pytorch_model.bin")
            (folder / "model.safetensors").unlink()
        write_vocab(folder / "vocab.txt", TINY.vocab_size)
        folders[role] = folder
    return d, g, folders


class HubHandler(http.server.BaseHTTPRequestHandler):
    """GET/HEAD {repo}/resolve/{revision}/{file} from server.root/{repo}/{revision}/{file}. The
    weights answer with a 302 to /lfs/{sha256} and the X-Linked-* headers; plain files with 200.
    server.faults: "status": {repo: code}, "truncate": send half the bytes, "bad_sha": announce a
    wrong sha256."""

    def do_HEAD(self):
        self._serve(body=False)

    def do_GET(self):
        self._serve(body=True)

    def _serve(self, body):
        server, path = self.server, urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        server.requests.append((self.command, path))
        if path.startswith("/lfs/"):
            return self._send_file(server.lfs[path[len("/lfs/"):]], body)
        m = re.match(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", path)
        if not m:
            return self._error(404, "RepoNotFound")
        repo, revision, file = m.groups()
        if repo in server.faults.get("status", {}):
            code = server.faults["status"][repo]
            return self._error(code, "GatedRepo" if code in (401, 403) else "RepoNotFound")
        f = server.root / repo / revision / file
        if not f.is_file():
            return self._error(404, "EntryNotFound" if (server.root / repo / revision).is_dir()
                               else "RepoNotFound")
        if file in WEIGHTS:
            data = f.read_bytes()
            sha = hashlib.sha256(data).hexdigest()
            server.lfs[sha] = f
            self.send_response(302)
            self.send_header("Location", f"/lfs/{sha}")
            self.send_header("X-Linked-Etag",
                             f'"{"0" * 64 if server.faults.get("bad_sha") else sha}"')
            self.send_header("X-Linked-Size", str(len(data)))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self._send_file(f, body)

    def _send_file(self, f, body):
        data = f.read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data[:len(data) // 2] if self.server.faults.get("truncate") else data)
            self.wfile.flush()
            self.close_connection = True

    def _error(self, code, kind):
        self.send_response(code)
        self.send_header("X-Error-Code", kind)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A running hub-like server: yields the server (.root to fill, .faults, .requests, .url).
    HF_ENDPOINT points at it and HF_TOKEN is unset; the server is stopped after the test."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HubHandler)
    server.root, server.faults, server.requests, server.lfs = tmp_path / "served", {}, [], {}
    server.root.mkdir()
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def inputs(B=2, T=12):
    g = torch.Generator().manual_seed(1)
    x = torch.randint(len(CONFIG.specials), TINY.vocab_size, (B, T), generator=g)
    am = torch.ones_like(x)
    am[1, 8:] = 0
    return x, torch.zeros_like(x), am


def cache_leftovers(cache):
    """Everything in the cache that is not a complete entry's file: .part folders and files,
    .tmp."""
    return [p for p in cache.rglob("*") if ".part" in p.name or p.name.endswith(".tmp")]


@pytest.mark.parametrize("safetensors", [True, False], ids=["safetensors", "pytorch_model.bin"])
def test_download_then_logits_equal_transformers(hub, tmp_path, safetensors):
    hf_d, hf_g, _ = save_pair(hub.root, safetensors=safetensors)
    cache = tmp_path / "cache"
    folder = hf.hub_files("google/electra-tiny-discriminator", cache_dir=cache)
    assert folder == cache / "google" / "electra-tiny-discriminator" / "main"
    weights = "model.safetensors" if safetensors else "pytorch_model.bin"
    assert sorted(p.name for p in folder.iterdir()) == sorted(["config.json", "vocab.txt", weights])
    assert cache_leftovers(cache) == []
    model, vocab = hf.load_electra("google/electra-tiny", cache_dir=cache)
    model.eval()
    assert vocab == folder / "vocab.txt"
    assert model.config.generator_fraction == 0.5 and model.generator.config.hidden_size == 32
    x, seg, am = inputs()
    with torch.no_grad():
        # scores *replaced*
        ref_d = hf_d(input_ids=x, token_type_ids=seg, attention_mask=am).logits
        ours_d = model.discriminator(x, seg, am)  # scores *original*
        ref_g = hf_g(input_ids=x, token_type_ids=seg, attention_mask=am).logits
        h = model.generator.hidden_states(x, seg, am)
        ours_g = model.generator.logits(h, torch.arange(x.shape[1]).expand_as(x))
    keep = am.bool()
    torch.testing.assert_close(ours_d[keep], -ref_d[keep], atol=1e-5, rtol=0)
    torch.testing.assert_close(ours_g[keep], ref_g[keep], atol=1e-5, rtol=0)


def test_second_call_is_offline(hub, tmp_path):
    save_pair(hub.root)
    cache = tmp_path / "cache"
    first = hf.hub_files("google/electra-tiny-discriminator", cache_dir=cache)
    hub.shutdown()
    hub.server_close()  # nothing answers now: a second call must not need the network
    hub.requests.clear()
    assert hf.hub_files("google/electra-tiny-discriminator", cache_dir=cache) == first
    assert hub.requests == []


def test_weights_come_through_the_redirect_with_a_checked_sha(hub, tmp_path):
    save_pair(hub.root)
    hf.hub_files("google/electra-tiny-discriminator", cache_dir=tmp_path / "cache")
    gets = [p for c, p in hub.requests if c == "GET"]
    assert any(p.startswith("/lfs/") for p in gets), gets  # the bytes came from the "CDN" address


@pytest.mark.parametrize("code", [404, 401])
def test_missing_or_gated_repo_is_one_line(hub, tmp_path, code):
    save_pair(hub.root)
    hub.faults["status"] = {"google/electra-tiny-discriminator": code}
    cache = tmp_path / "cache"
    with pytest.raises(hf.HubError) as e:
        hf.hub_files("google/electra-tiny-discriminator", cache_dir=cache)
    msg = str(e.value)
    assert "\n" not in msg and f"HTTP {code}" in msg and "google/electra-tiny-discriminator" in msg
    assert "HF_TOKEN" in msg
    assert not (cache / "google" / "electra-tiny-discriminator" / "main").exists()
    assert cache_leftovers(cache) == []


def test_repo_not_on_the_server_is_404(hub, tmp_path):
    with pytest.raises(hf.HubError,
                       match=r"HTTP 404: no repository google/nothing-here with revision main"):
        hf.hub_files("google/nothing-here", cache_dir=tmp_path / "cache")


def test_missing_revision_is_404(hub, tmp_path):
    save_pair(hub.root)
    with pytest.raises(hf.HubError, match="revision v9"):
        hf.hub_files("google/electra-tiny-discriminator", revision="v9",
                     cache_dir=tmp_path / "cache")


def test_revision_is_its_own_cache_entry(hub, tmp_path):
    save_pair(hub.root, revision="v1", seed=1)
    folder = hf.hub_files("google/electra-tiny-discriminator", revision="v1",
                          cache_dir=tmp_path / "cache")
    assert folder.name == "v1" and (folder / "model.safetensors").is_file()


@pytest.mark.parametrize("fault", ["truncate", "bad_sha"])
def test_truncated_or_corrupted_weights_leave_nothing(hub, tmp_path, fault):
    save_pair(hub.root)
    hub.faults[fault] = True
    cache = tmp_path / "cache"
    with pytest.raises(hf.HubError) as e:
        hf.hub_files("google/electra-tiny-discriminator", cache_dir=cache)
    msg = str(e.value)
    assert "\n" not in msg
    assert ("expected" in msg) and (("sha256" in msg) if fault == "bad_sha"
                                    else ("truncated" in msg))
    assert not (cache / "google" / "electra-tiny-discriminator" / "main").exists()
    assert cache_leftovers(cache) == []
    # A later call does not trust anything left behind: with the fault gone it fetches everything.
    hub.faults.clear()
    folder = hf.hub_files("google/electra-tiny-discriminator", cache_dir=cache)
    assert (folder / "model.safetensors").is_file()


def test_no_network_is_one_line(tmp_path, monkeypatch):
    with socket.socket() as s:  # a port nobody listens on: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    cache = tmp_path / "cache"
    with pytest.raises(hf.HubError, match=r"cannot be reached") as e:
        hf.hub_files("google/electra-small-discriminator", cache_dir=cache)
    assert "\n" not in str(e.value)
    assert cache_leftovers(cache) == []


def test_hub_error_is_a_download_error():
    assert issubclass(hf.HubError, DownloadError)


def test_names_and_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert hf.is_hub_name("google/electra-small-discriminator")
    assert (not hf.is_hub_name("runs/ckpt.pt") and not hf.is_hub_name("ckpt.pt")
            and not hf.is_hub_name("/abs/path"))
    # a local folder wins
    (tmp_path / "google" / "electra-small-discriminator").mkdir(parents=True)
    assert not hf.is_hub_name("google/electra-small-discriminator")
    assert hf.pretrained_folder("google/electra-small-discriminator") == tmp_path.joinpath(
        "google", "electra-small-discriminator").relative_to(tmp_path)
    assert hf.pair_names("google/electra-base") == ("google/electra-base-discriminator",
                                                    "google/electra-base-generator")


def test_default_cache_is_under_dot_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert hf.hub_cache_dir() == tmp_path / ".cache" / "electra-from-scratch" / "hub"
    assert hf.hub_cache_dir(tmp_path / "x") == tmp_path / "x"


def test_export_hf_folder_loads_as_a_pair(tmp_path):
    """train.py --export-hf writes discriminator/ and generator/: load_electra takes that folder
    too."""
    _, _, folders = save_pair(tmp_path / "exported", org="o", stem="m")
    pair = tmp_path / "pair"
    pair.mkdir()
    folders["discriminator"].rename(pair / "discriminator")
    folders["generator"].rename(pair / "generator")
    model, vocab = hf.load_electra(pair)
    assert vocab == pair / "discriminator" / "vocab.txt" and model.generator is not None


def test_a_generator_of_another_shape_is_refused(tmp_path):
    _, _, folders = save_pair(tmp_path / "a", org="o", stem="m")
    import json
    cfg = json.loads((folders["generator"] / "config.json").read_text())
    cfg["intermediate_size"] = 100  # not 4 x hidden
    (folders["generator"] / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="intermediate_size 100"):
        hf.load_electra(folders["discriminator"], folders["generator"])


def test_download_checks_a_given_sha256(http_server, tmp_path):
    """plumbing.download's sha256 argument: a match keeps the file, a mismatch keeps nothing."""
    from support.plumbing import download

    root, url = http_server
    (root / "w.bin").write_bytes(b"electra" * 100)
    good = hashlib.sha256(b"electra" * 100).hexdigest()
    assert (download(f"{url}/w.bin", tmp_path / "a.bin", sha256=good).read_bytes()
            == b"electra" * 100)
    with pytest.raises(DownloadError, match="sha256"):
        download(f"{url}/w.bin", tmp_path / "b.bin", sha256="1" * 64)
    assert not (tmp_path / "b.bin").exists() and not (tmp_path / "b.bin.part").exists()


def test_safetensors_is_a_runtime_requirement():
    """A fresh `pip install -r requirements.txt` must read a model.safetensors folder."""
    from conftest import ROOT

    names = [line.split("#")[0].strip().split("=")[0].split(">")[0].split("<")[0]
             for line in (ROOT / "requirements.txt").read_text().splitlines()]
    assert "safetensors" in names


# --- finetune.py --init NAME ----------------------------------------------------------------------

# The shapes in Google's released discriminators' config.json (google/electra-{size}-discriminator).
GOOGLE_SHAPES = {
    "small": dict(embedding_size=128, hidden_size=256, intermediate_size=1024,
                  num_attention_heads=4, num_hidden_layers=12),
    "base": dict(embedding_size=768, hidden_size=768, intermediate_size=3072,
                 num_attention_heads=12, num_hidden_layers=12),
    "large": dict(embedding_size=1024, hidden_size=1024, intermediate_size=4096,
                  num_attention_heads=16, num_hidden_layers=24),
}
README_COMMANDS = [
    ["--task", "all", "--init", "google/electra-small-discriminator", "--seeds", "10"],
    ["--task", "all", "--init", "google/electra-base-discriminator", "--seeds", "10"],
]


@pytest.mark.parametrize("argv", README_COMMANDS, ids=["small", "base"])
def test_readme_commands_parse(argv):
    from support import cli

    args = cli.finetune_args(argv)
    assert (args.task, args.seeds, args.revision, args.hub_cache_dir) == ("all", 10, "main", None)
    assert hf.is_hub_name(args.init)


@pytest.mark.parametrize("size", list(GOOGLE_SHAPES))
def test_recipe_for_a_hub_checkpoint_is_its_sizes(hub, tmp_path, size):
    """The config.json fetched for google/electra-{size}-discriminator picks Table 7's recipe for
    size."""
    import json

    import finetune as ft

    folder = hub.root / "google" / f"electra-{size}-discriminator" / "main"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "electra", "vocab_size": 30522,
                                                    **GOOGLE_SHAPES[size]}))
    write_vocab(folder / "vocab.txt", 30522)
    (folder / "model.safetensors").write_bytes(b"not read here")
    got = hf.hub_files(f"google/electra-{size}-discriminator", cache_dir=tmp_path / "cache")
    config = hf.config_from_hf(json.loads((got / "config.json").read_text()))
    recipe = ft.recipe_for(config, ft.FinetuneConfig())
    assert (recipe.lr, recipe.layer_decay) == (ft.RECIPES["table7"][size]["lr"],
                                               ft.RECIPES["table7"][size]["layer_decay"])


def write_rte(folder, n=8):
    folder.mkdir(parents=True)
    rows = ["index\tsentence1\tsentence2\tlabel"] + [
        f"{i}\tw5 w6 w{7 + i % 2}\tw5 w6\t{lab}"
        for i, lab in enumerate(["entailment", "not_entailment"] * (n // 2))]
    (folder / "train.tsv").write_text("\n".join(rows) + "\n")
    (folder / "dev.tsv").write_text("\n".join(rows[:5]) + "\n")


def test_finetune_init_by_hub_name(hub, tmp_path, capsys):
    import finetune as ft

    save_pair(hub.root)
    write_rte(tmp_path / "glue" / "RTE")
    cache = tmp_path / "hubcache"
    argv = ["--task", "rte", "--init", "google/electra-tiny-discriminator",
            "--hub_cache_dir", str(cache),
            "--data_dir", str(tmp_path / "glue"), "--epochs", "1", "--device", "cpu",
            "--out_dir", str(tmp_path / "out")]
    report = ft.main(argv)
    assert report["init"].startswith("google/electra-tiny-discriminator (revision main;")
    # hidden 64: the small recipe
    assert report["recipe"]["lr"] == ft.RECIPES["table7"]["small"]["lr"]
    assert (cache / "google" / "electra-tiny-discriminator" / "main"
            / "model.safetensors").is_file()
    assert "rte    acc" in capsys.readouterr().out
    # cached: the server is not asked
    hub.faults["status"] = {"google/electra-tiny-discriminator": 500}
    ft.main(argv)


def test_finetune_hub_errors_are_one_line(hub, tmp_path):
    import finetune as ft

    with pytest.raises(SystemExit) as e:
        ft.main(["--task", "rte", "--init", "google/no-such-model",
                 "--hub_cache_dir", str(tmp_path / "c"), "--data_dir", str(tmp_path)])
    assert str(e.value).startswith("error: could not fetch config.json of google/no-such-model")
    assert "\n" not in str(e.value)


# --- train.py --init-from NAME --------------------------------------------------------------------


def write_corpus(path, lines=200, seed=0):
    """Text in the test vocab's words (w0 ... w114), a blank line between documents of 10 lines."""
    g = torch.Generator().manual_seed(seed)
    n = TINY.vocab_size - len(CONFIG.specials)
    out = []
    for i in range(lines):
        out.append(" ".join(f"w{int(j)}" for j in torch.randint(0, n, (12,), generator=g)) + " .")
        if i % 10 == 9:
            out.append("")
    path.write_text("\n".join(out) + "\n")
    return path


def train_argv(tmp_path, *extra):
    return ["--data", str(write_corpus(tmp_path / "corpus.txt")), "--out", str(tmp_path / "out"),
            "--cache-dir", str(tmp_path / "cache"), "--hub-cache-dir", str(tmp_path / "hubcache"),
            "--steps", "2", "--warmup", "1", "--batch-size", "4", "--seq-len", "32", "--lr", "1e-9",
            "--eval-interval", "2", "--eval-batches", "1", "--eval-fraction", "0.1",
            "--ckpt-interval", "2", "--log-interval", "1", "--device", "cpu", *extra]


def test_train_init_from_a_hub_pair(hub, tmp_path):
    import train

    hf_d, hf_g, folders = save_pair(hub.root)
    result = train.main(train_argv(tmp_path, "--init-from", "google/electra-tiny"))
    mc = result["model_config"]
    assert ((mc.hidden_size, mc.num_layers, mc.generator_fraction, mc.vocab_size)
            == (64, 2, 0.5, TINY.vocab_size))
    assert result["config"].size == "small" and result["config"].init_from == "google/electra-tiny"
    assert ((tmp_path / "out" / "vocab.txt").read_text()
            == (folders["discriminator"] / "vocab.txt").read_text())
    model = result["model"]  # two updates at lr 1e-9: still the released weights
    torch.testing.assert_close(model.discriminator.head_out.weight.detach(),
                               -hf_d.discriminator_predictions.dense_prediction.weight.detach(),
                               atol=1e-6, rtol=0)
    torch.testing.assert_close(model.generator.head.weight.detach(),
                               hf_g.generator_predictions.dense.weight.detach(), atol=1e-6, rtol=0)
    torch.testing.assert_close(model.embeddings.word.weight.detach(),
                               hf_d.electra.embeddings.word_embeddings.weight.detach(), atol=1e-6,
                               rtol=0)


def test_train_init_from_errors_are_one_line(hub, tmp_path):
    import train

    save_pair(hub.root)
    with pytest.raises(SystemExit, match="drop --resume, --vocab and --objective"):
        train.main(train_argv(tmp_path, "--init-from", "google/electra-tiny",
                              "--objective", "bert"))
    with pytest.raises(SystemExit) as e:
        train.main(train_argv(tmp_path, "--init-from", "google/electra-missing"))
    assert "HTTP 404" in str(e.value) and "\n" not in str(e.value)
    d = tmp_path / "only-d"
    d.mkdir()
    with pytest.raises(SystemExit, match="no generator for .*pass --generator"):
        train.main(train_argv(tmp_path, "--init-from", str(d)))


# --- notebook 01's ELECTRA_HF switch --------------------------------------------------------------


def test_notebook_helper_loads_a_released_pair(hub, tmp_path, monkeypatch):
    """_helpers.load_released (ELECTRA_HF=org/stem in notebook 01) gives load_run's shape: G and
    D."""
    import sys

    from conftest import ROOT

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.syspath_prepend(str(ROOT / "notebooks"))
    sys.modules.pop("_helpers", None)
    import _helpers

    save_pair(hub.root)
    run = _helpers.load_released("google/electra-tiny")
    assert (set(run) == {"model", "tokenizer", "step", "metrics", "temperature"}
            and not run["model"].training)
    assert run["temperature"] == run["model"].config.temperature  # a released pair: its own
    assert (len(run["tokenizer"]) == TINY.vocab_size
            and run["model"].generator.config.hidden_size == 32)
    assert (tmp_path / "xdg" / "electra-from-scratch" / "hub" / "google" / "electra-tiny-generator"
            / "main").is_dir()
    x, seg, am = inputs()
    with torch.no_grad():
        # the notebook's histogram call
        out = run["model"](x, seg, am, rng=torch.Generator().manual_seed(0))
    assert out.p_original.shape == x.shape


def test_an_emptied_cache_entry_is_fetched_again(hub, tmp_path):
    save_pair(hub.root)
    cache = tmp_path / "cache"
    folder = hf.hub_files("google/electra-tiny-discriminator", cache_dir=cache)
    (folder / "model.safetensors").unlink()  # a user deleted the weights by hand
    assert hf.hub_files("google/electra-tiny-discriminator", cache_dir=cache) == folder
    assert (folder / "model.safetensors").is_file() and cache_leftovers(cache) == []


def test_unwritable_cache_is_one_line(hub, tmp_path):
    save_pair(hub.root)
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(hf.HubError, match="cannot write the hub cache .*--hub-cache-dir"):
        hf.hub_files("google/electra-tiny-discriminator", cache_dir=blocker)


# --- train.py --vocab NAME: a hub model's vocab.txt alone ---------------------------------------


def test_train_vocab_by_hub_name(hub, tmp_path):
    """--vocab org/model fetches only its vocab.txt (no weights), once, and trains from scratch
    with it; a second run is offline."""
    import train

    _, _, folders = save_pair(hub.root)
    result = train.main(train_argv(tmp_path, "--vocab", "google/electra-tiny-discriminator"))
    served = (folders["discriminator"] / "vocab.txt").read_text()
    assert (tmp_path / "out" / "vocab.txt").read_text() == served
    assert result["model_config"].vocab_size == TINY.vocab_size
    fetched = [path for _, path in hub.requests]
    assert fetched and all(path.endswith("/vocab.txt") for path in fetched)
    hub.requests.clear()
    vocab = hf.hub_vocab("google/electra-tiny-discriminator", cache_dir=tmp_path / "hubcache")
    assert vocab.read_text() == served and hub.requests == []


def test_hub_vocab_uses_a_whole_cache_entry(hub, tmp_path):
    save_pair(hub.root)
    folder = hf.hub_files("google/electra-tiny-discriminator", cache_dir=tmp_path / "c")
    hub.requests.clear()
    assert hf.hub_vocab("google/electra-tiny-discriminator", cache_dir=tmp_path / "c") == \
        folder / "vocab.txt"
    assert hub.requests == []


def test_train_vocab_hub_errors_are_one_line(hub, tmp_path):
    import train

    save_pair(hub.root)
    with pytest.raises(SystemExit) as e:
        train.main(train_argv(tmp_path, "--vocab", "google/electra-missing"))
    assert "HTTP 404" in str(e.value) and "\n" not in str(e.value)
    hub.faults["truncate"] = True
    with pytest.raises(SystemExit) as e:
        train.main(train_argv(tmp_path, "--vocab", "google/electra-tiny-discriminator"))
    assert "truncated" in str(e.value) and "\n" not in str(e.value)
    assert cache_leftovers(tmp_path / "hubcache") == []
    entry = tmp_path / "hubcache" / "google" / "electra-tiny-discriminator" / "main.vocab"
    assert not (entry / "vocab.txt").exists()
