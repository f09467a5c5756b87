"""HuggingFace's ELECTRA layout, in one place: state dicts both ways (with the discriminator's sign
flip), the config mapping, checkpoint folders on disk, and Google's released checkpoints by name from
the hub. Nothing here is the paper's algorithm; electra.py holds that.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from plumbing import DownloadError, download

# -----------------------------------------------------------------------------
# State dicts and configs: ours <-> HuggingFace's ElectraForPreTraining / ElectraForMaskedLM


# -----------------------------------------------------------------------------
# Folders on disk: config.json + vocab.txt + model.safetensors / pytorch_model.bin


# -----------------------------------------------------------------------------
# The hub: `org/model` names fetched once into a cache (standard library only)
#
# A name like `google/electra-small-discriminator` is a repository on the HuggingFace hub. Its files
# are at {endpoint}/{name}/resolve/{revision}/{file}; large ones (the weights) are stored with git LFS,
# and the hub answers them with a redirect to a CDN whose headers carry X-Linked-Size and
# X-Linked-Etag (the sha256 of the file). We fetch config.json, vocab.txt, tokenizer_config.json
# (when there is one) and the weights into a temporary folder beside the cache entry, check every
# size (and the sha256 where the hub sends it), and rename the folder into place only when all are
# complete: a cache entry that exists is whole, a second call reads it without the network, and a
# failure leaves nothing behind. Only urllib: no huggingface_hub, no requests.

HUB_ENDPOINT = "https://huggingface.co"  # HF_ENDPOINT overrides it (a mirror, or a local test server)
HUB_WEIGHTS = ("model.safetensors", "pytorch_model.bin")  # the first the repository has is fetched
HUB_REQUIRED = ("config.json", "vocab.txt")  # fetched before the weights: a wrong name fails fast
HUB_OPTIONAL = ("tokenizer_config.json",)  # do_lower_case for cased models; absent in many repos
HUB_TIMEOUT_S = 30.0  # seconds without an answer before a request gives up (urllib socket timeout)
HUB_MAX_REDIRECTS = 10  # relative redirects followed (a renamed repository); more means a loop
# A hub name: org/model, letters, digits, "-", "_" and "." (HF's own rule for repository ids).
HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")  # an LFS file's etag; a plain file's is a git sha1 (40)


class HubError(DownloadError):
    """A hub download failed; the message is one line saying what failed and what to do."""


def is_hub_name(name) -> bool:
    """True for `org/model` that is not a path on this machine (a local folder of that name wins).

    >>> is_hub_name("google/electra-small-discriminator"), is_hub_name("runs/tiny/ckpt.pt")
    (True, False)
    """
    s = str(name)
    return bool(HUB_NAME.match(s)) and not s.endswith((".pt", ".bin", ".safetensors")) and not Path(s).exists()


def hub_cache_dir(cache_dir=None) -> Path:
    """--hub-cache-dir, else $XDG_CACHE_HOME/electra-from-scratch/hub (~/.cache/... by default)."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "electra-from-scratch" / "hub"


def hub_endpoint(endpoint=None) -> str:
    return (endpoint or os.environ.get("HF_ENDPOINT") or HUB_ENDPOINT).rstrip("/")


def _auth_headers() -> dict:
    """HF_TOKEN, when set, for gated or private repositories (sent to the hub only, never to the CDN)."""
    token = os.environ.get("HF_TOKEN")
    return {"Authorization": f"Bearer {token}"} if token else {}


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Stop at a redirect so that its headers (X-Linked-Etag, X-Linked-Size, Location) can be read."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # urllib then raises HTTPError with the 30x response's headers


_head_opener = urllib.request.build_opener(_NoRedirect)


def _hub_failed(name: str, revision: str, file: str, reason: str) -> HubError:
    return HubError(f"could not fetch {file} of {name} (revision {revision}) from the hub: {reason}")


def _resolve(name: str, file: str, revision: str, endpoint: str) -> tuple[str, dict, int | None, str | None] | None:
    """HEAD {endpoint}/{name}/resolve/{revision}/{file}: (URL to GET, headers to send, size, sha256),
    or None when the repository exists but has no such file. Relative redirects (a renamed
    repository) are followed; a redirect to another host is the LFS file's CDN and ends the walk
    there, its X-Linked-* headers giving the size and sha256. Raises HubError for a repository that
    is gated, private or missing, and for a server that cannot be reached."""
    url = f"{endpoint}/{name}/resolve/{urllib.parse.quote(revision, safe='')}/{file}"
    auth = _auth_headers()
    host = urllib.parse.urlsplit(endpoint).netloc
    for _ in range(HUB_MAX_REDIRECTS):
        request = urllib.request.Request(url, method="HEAD", headers=auth)
        try:
            with _head_opener.open(request, timeout=HUB_TIMEOUT_S) as response:
                headers, location = response.headers, None
        except urllib.error.HTTPError as e:
            headers, location = e.headers, e.headers.get("Location") if 300 <= e.code < 400 else None
            if location is None:
                kind = e.headers.get("X-Error-Code", "")  # the hub's own word: RepoNotFound, GatedRepo, ...
                if e.code == 404 and kind not in ("RepoNotFound", "RevisionNotFound") and \
                        (kind == "EntryNotFound" or file not in HUB_REQUIRED):
                    return None  # the repository is there; this file is not
                if e.code in (401, 403, 404):
                    raise _hub_failed(name, revision, file, f"HTTP {e.code}: no repository {name} with revision "
                                      f"{revision} at {endpoint} (nor a local path of that name), or it is gated "
                                      f"or private. Check the name and "
                                      f"--revision; for a gated model accept its terms on the hub and set HF_TOKEN; "
                                      f"or download its files yourself and pass the folder") from None
                raise _hub_failed(name, revision, file, f"HTTP {e.code} {e.reason}") from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", None) or e
            raise _hub_failed(name, revision, file, f"{endpoint} cannot be reached ({reason}); check the "
                              f"network (or HF_ENDPOINT), or download the files yourself and pass the folder") from None
        linked_sha = (headers.get("X-Linked-Etag") or headers.get("ETag") or "").removeprefix("W/").strip('"').lower()
        size = headers.get("X-Linked-Size") or (headers.get("Content-Length") if location is None else None)
        sha = linked_sha if SHA256_HEX.match(linked_sha) else None
        if location is None:
            return url, auth, int(size) if size else None, sha
        next_url = urllib.parse.urljoin(url, location)
        if urllib.parse.urlsplit(next_url).netloc != host or headers.get("X-Linked-Etag"):
            return next_url, {}, int(size) if size else None, sha  # the CDN: no hub token there
        url = next_url
    raise _hub_failed(name, revision, file, f"more than {HUB_MAX_REDIRECTS} redirects")


def _fetch(name: str, file: str, revision: str, endpoint: str, folder: Path) -> Path | None:
    """One file of the repository into folder (size- and sha-checked), or None if it has no such file."""
    found = _resolve(name, file, revision, endpoint)
    if found is None:
        return None
    url, headers, size, sha = found
    try:
        return download(url, folder / file, expected_size=size, desc=f"{name} {file}", timeout=HUB_TIMEOUT_S,
                        sha256=sha, headers=headers)
    except DownloadError as e:
        raise _hub_failed(name, revision, file, str(e).splitlines()[0].split(": ", 1)[-1].rstrip(".")) from None


def _complete(folder: Path) -> bool:
    return folder.is_dir() and all((folder / f).is_file() for f in HUB_REQUIRED) and \
        any((folder / f).is_file() for f in HUB_WEIGHTS)


def hub_files(name: str, revision: str = "main", cache_dir=None, endpoint=None) -> Path:
    """The local folder holding `name`'s config.json, vocab.txt and weights, fetched once.

    The cache entry is {cache}/{org}/{model}/{revision}; it exists only when complete, so a second
    call returns it at once without the network. A revision is cached as first fetched: delete the
    folder (or pass another --revision, e.g. a commit hash) to fetch it afresh. Raises HubError
    (one line) for a missing or gated repository, no network, a truncated or corrupted transfer;
    nothing partial is left in the cache.

    >>> hub_files("google/electra-small-discriminator")  # doctest: +SKIP
    PosixPath('/home/me/.cache/electra-from-scratch/hub/google/electra-small-discriminator/main')
    """
    if not HUB_NAME.match(name):
        raise HubError(f"{name!r} is not a hub name (org/model, e.g. google/electra-small-discriminator)")
    folder = hub_cache_dir(cache_dir) / name / urllib.parse.quote(revision, safe="")
    if _complete(folder):
        return folder
    endpoint = hub_endpoint(endpoint)
    try:
        if folder.exists() and not _complete(folder):  # emptied by hand (complete: another process's, keep it)
            shutil.rmtree(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".", suffix=".part", dir=folder.parent))
    except OSError as e:
        raise HubError(f"cannot write the hub cache {folder.parent} ({e.strerror or e}); choose a folder you can "
                       f"write to with --hub-cache-dir") from None
    try:
        for file in HUB_REQUIRED:
            if _fetch(name, file, revision, endpoint, tmp) is None:
                raise _hub_failed(name, revision, file, "the repository has no such file: not an ELECTRA/BERT "
                                                        "checkpoint in HuggingFace's layout")
        if not any(_fetch(name, w, revision, endpoint, tmp) for w in HUB_WEIGHTS):
            raise _hub_failed(name, revision, " or ".join(HUB_WEIGHTS), "the repository has neither")
        for file in HUB_OPTIONAL:
            _fetch(name, file, revision, endpoint, tmp)
        try:
            os.replace(tmp, folder)
        except OSError as e:  # another process completed the same entry first: keep theirs
            if not _complete(folder):
                raise HubError(f"could not move {name} into the hub cache at {folder} ({e.strerror or e})") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def pretrained_folder(name_or_path, revision: str = "main", cache_dir=None, endpoint=None) -> Path:
    """A local path as it is; a hub name (org/model, not a local path) fetched into the cache."""
    if is_hub_name(name_or_path):
        return hub_files(str(name_or_path), revision, cache_dir, endpoint)
    return Path(name_or_path)


# --- Google's released generator and discriminator as one Electra (the notebooks, train.py --init-from)

PAIR_SUFFIXES = ("-discriminator", "-generator")  # Google's names: google/electra-{size}-{role}
# A generator's shape, read from its config.json, must be the one electra.generator_config derives
# from the discriminator's; these are the fields compared.
GENERATOR_FIELDS = ("hidden_size", "intermediate_size", "num_heads", "num_layers", "embedding_size", "vocab_size")


def pair_names(name: str) -> tuple[str, str]:
    """(discriminator, generator) hub names for a released pair, by Google's naming.

    >>> pair_names("google/electra-small")
    ('google/electra-small-discriminator', 'google/electra-small-generator')
    >>> pair_names("google/electra-base-discriminator")
    ('google/electra-base-discriminator', 'google/electra-base-generator')
    """
    stem = next((name[:-len(s)] for s in PAIR_SUFFIXES if name.endswith(s)), name)
    return stem + PAIR_SUFFIXES[0], stem + PAIR_SUFFIXES[1]


def released_folders(disc, generator=None, revision: str = "main", cache_dir=None,
                     endpoint=None) -> tuple[Path, Path]:
    """Local folders (discriminator, generator) for a full Electra. `disc` is a hub name (a pair's
    stem such as google/electra-small, or its -discriminator), or a local folder: an HF discriminator
    folder, or a train.py --export-hf folder holding discriminator/ and generator/. `generator`
    (a hub name or folder) overrides the one found by that naming."""
    if not is_hub_name(disc) and generator is None:
        folder = Path(disc)
        if (folder / "discriminator" / "config.json").is_file() and (folder / "generator" / "config.json").is_file():
            return folder / "discriminator", folder / "generator"
        if not folder.exists():
            raise FileNotFoundError(f"{disc} is neither a local folder nor a hub name (org/model)")
        raise FileNotFoundError(f"no generator for {disc}: a full ELECTRA needs one; pass --generator NAME_OR_FOLDER "
                                f"(e.g. google/electra-small-generator, or a folder with config.json and weights)")
    if is_hub_name(disc):
        disc_name, gen_name = pair_names(str(disc))
        disc_folder = hub_files(disc_name, revision, cache_dir, endpoint)
    else:
        disc_folder = Path(disc)
    gen = generator if generator is not None else gen_name
    return disc_folder, pretrained_folder(gen, revision, cache_dir, endpoint)


def read_hf_config(folder: Path) -> dict:
    import json

    path = Path(folder) / "config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{folder} has no config.json: not a HuggingFace checkpoint folder") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path} is not valid JSON ({e})") from None
    if not isinstance(data, dict) or data.get("model_type") != "electra":
        raise ValueError(f"{path}: model_type {data.get('model_type') if isinstance(data, dict) else None!r}; "
                         f"a full ELECTRA (generator and discriminator) needs two ELECTRA checkpoints")
    return data


def read_hf_weights(folder: Path) -> dict:
    """The state dict of an HF folder: model.safetensors (the safetensors library), else
    pytorch_model.bin read with weights_only=True (no code from the file runs)."""
    import torch

    folder = Path(folder)
    weights = next((folder / n for n in HUB_WEIGHTS if (folder / n).is_file()), None)
    if weights is None:
        raise FileNotFoundError(f"{folder} has no {' or '.join(HUB_WEIGHTS)}")
    try:
        if weights.suffix == ".safetensors":
            from safetensors.torch import load_file

            return load_file(str(weights))
        return torch.load(weights, map_location="cpu", weights_only=True)
    except Exception as e:  # truncated or corrupt: SafetensorError, pickle and zip errors
        raise ValueError(f"{weights} is not readable ({type(e).__name__}: {e}): delete it and fetch it again") from None


def electra_config_from_folders(disc_folder: Path, gen_folder: Path):
    """(ElectraConfig, vocab.txt, lowercase) of a released pair: D's config.json, with the generator's
    size expressed as electra.py's generator_fraction and generator_layers (Google's ELECTRA-Small
    generator is as wide as its discriminator, fraction 1; Base's is 256 wide, 1/3), checked against
    the generator's own config.json; special ids from the vocab."""
    from dataclasses import replace as dc_replace

    from electra import config_from_hf, generator_config
    from tokenizer import Tokenizer

    d, g = read_hf_config(disc_folder), read_hf_config(gen_folder)
    try:
        config = config_from_hf(d, generator_fraction=g["hidden_size"] / d["hidden_size"],
                                generator_layers=g["num_hidden_layers"] / d["num_hidden_layers"])
        want = config_from_hf(g)
    except KeyError as e:
        raise ValueError(f"{disc_folder} or {gen_folder}: config.json lacks {e.args[0]!r}") from None
    got = generator_config(config)
    diff = [f"{f} {getattr(want, f)} (derived: {getattr(got, f)})" for f in GENERATOR_FIELDS
            if getattr(want, f) != getattr(got, f)]
    if diff:
        raise ValueError(f"{gen_folder}: this generator's shape is not one electra.generator_config derives from "
                         f"{disc_folder}'s (heads = hidden // 64, FFN = 4 x hidden, the embeddings shared): "
                         + ", ".join(diff))
    vocab = Path(disc_folder) / "vocab.txt"
    if not vocab.is_file():
        raise FileNotFoundError(f"{disc_folder} has no vocab.txt: put the model's vocab.txt beside its config.json")
    lowercase = True
    tokenizer_config = Path(disc_folder) / "tokenizer_config.json"
    if tokenizer_config.is_file():
        import json

        lowercase = bool(json.loads(tokenizer_config.read_text(encoding="utf-8")).get("do_lower_case", True))
    tok = Tokenizer.load(vocab, lowercase=lowercase)
    if len(tok) != config.vocab_size:
        raise ValueError(f"{vocab} has {len(tok):,} tokens but {disc_folder}'s config has vocab_size "
                         f"{config.vocab_size:,}")
    config = dc_replace(config, pad_id=tok.pad_id, cls_id=tok.cls_id, sep_id=tok.sep_id, mask_id=tok.mask_id)
    return config, vocab, lowercase


def load_electra(disc, generator=None, revision: str = "main", cache_dir=None, endpoint=None):
    """(Electra, vocab.txt path): a full ELECTRA, generator and discriminator, from HF checkpoints.

    `disc`: a hub name (google/electra-small, google/electra-small-discriminator), an HF
    discriminator folder, or a train.py --export-hf folder; `generator` overrides the generator
    found by Google's naming (see released_folders). The weights go through electra.py's converter
    (from_hf_state_dicts: D's sign flipped to score *original*, the embeddings D's, shared with G).

    >>> model, vocab = load_electra("google/electra-small")  # doctest: +SKIP
    """
    from electra import from_hf_state_dicts

    disc_folder, gen_folder = released_folders(disc, generator, revision, cache_dir, endpoint)
    config, vocab, _ = electra_config_from_folders(disc_folder, gen_folder)
    model = from_hf_state_dicts(config, read_hf_weights(disc_folder), read_hf_weights(gen_folder))
    return model, vocab


# ElectraConfig fields that make a released model's shape; train.py --init-from passes them as --set.
SHAPE_FIELDS = ("embedding_size", "hidden_size", "num_layers", "num_heads", "intermediate_size", "max_position",
                "type_vocab_size", "dropout", "attention_dropout", "layer_norm_eps", "init_std",
                "generator_fraction", "generator_layers")


def released_start(disc, generator=None, revision: str = "main", cache_dir=None) -> tuple[str, dict, Path]:
    """What train.py --init-from needs before it builds a model: (size, shape, vocab.txt). size is the
    recipe preset for the model's hidden size (small, base or large, as finetune.py chooses Table 7's),
    shape the ElectraConfig fields of the released pair (generator_fraction included). Fetches the
    files (once); the weights are read later by load_electra, from the cache."""
    from finetune import SIZE_BY_HIDDEN

    disc_folder, gen_folder = released_folders(disc, generator, revision, cache_dir)
    config, vocab, lowercase = electra_config_from_folders(disc_folder, gen_folder)
    if not lowercase:
        raise ValueError(f"{disc_folder} is a cased model (do_lower_case false); train.py's tokenizer lowercases, "
                         f"so it cannot continue pre-training it")
    size = next(name for threshold, name in SIZE_BY_HIDDEN if config.hidden_size >= threshold)
    return size, {f: getattr(config, f) for f in SHAPE_FIELDS}, vocab
