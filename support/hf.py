"""HuggingFace's ELECTRA layout, in one place: state dicts both ways (with the discriminator's sign
flip), the config mapping, checkpoint folders on disk (read and written), what fine-tuning starts
from (load_pretrained: one of those folders or a train.py run), Google's released pairs,
checkpoints by name from the hub, and single hub files (a model's vocab.txt, a dataset's
archives). Nothing here is the paper's algorithm; electra.py holds that. Only torch and the
standard library (safetensors to read and write model.safetensors); transformers is never
imported.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from dataclasses import replace as dc_replace
from pathlib import Path

import torch
import torch.nn as nn
from safetensors.torch import load_file, save_file

from electra import (
    Electra,
    ElectraConfig,
    Encoder,
    GdesEmbeddings,
    generator_config,
    get_config,
    plain_state_dict,
)
from electric import pretraining_model
from support.plumbing import DOWNLOAD_TIMEOUT_S, DownloadError, atomic_write, download
from tokenizer import Tokenizer

# -----------------------------------------------------------------------------
# State dicts: ours <-> HuggingFace's ElectraForPreTraining (D), ElectraForMaskedLM (G), BertModel
#
# Each table pairs our parameter's name with HF's. HF keeps query, key and value apart: their names
# come as a triple, stacked into our fused qkv. D's last layer is negated both ways: the paper's D
# predicts *original*, HF's scores *replaced*, so logit_original = -logit_replaced.


def _encoder_keys(enc: Encoder, prefix: str) -> list[tuple[str, str | tuple[str, ...]]]:
    """(our name, HF's name) for the embeddings, projection and blocks of an encoder."""
    e = prefix + "embeddings."
    pairs = [("embeddings.word.weight", e + "word_embeddings.weight"),
             ("embeddings.position.weight", e + "position_embeddings.weight"),
             ("embeddings.segment.weight", e + "token_type_embeddings.weight"),
             ("embeddings.ln.weight", e + "LayerNorm.weight"),
             ("embeddings.ln.bias", e + "LayerNorm.bias")]
    if enc.embeddings_project is not None:
        pairs += [(f"embeddings_project.{p}", f"{prefix}embeddings_project.{p}")
                  for p in ("weight", "bias")]
    for i in range(len(enc.layers)):
        ours, hf = f"layers.{i}.", f"{prefix}encoder.layer.{i}."
        for p in ("weight", "bias"):
            pairs += [(ours + "attn.qkv." + p,
                       tuple(f"{hf}attention.self.{n}.{p}" for n in ("query", "key", "value"))),
                      (ours + "attn.out." + p, hf + "attention.output.dense." + p),
                      (ours + "ln1." + p, hf + "attention.output.LayerNorm." + p),
                      (ours + "fc1." + p, hf + "intermediate.dense." + p),
                      (ours + "fc2." + p, hf + "output.dense." + p),
                      (ours + "ln2." + p, hf + "output.LayerNorm." + p)]
    return pairs


D_HEAD = [("head.weight", "discriminator_predictions.dense.weight"),
          ("head.bias", "discriminator_predictions.dense.bias"),
          ("head_out.weight", "discriminator_predictions.dense_prediction.weight"),
          ("head_out.bias", "discriminator_predictions.dense_prediction.bias")]
G_HEAD = [("head.weight", "generator_predictions.dense.weight"),
          ("head.bias", "generator_predictions.dense.bias"),
          ("head_ln.weight", "generator_predictions.LayerNorm.weight"),
          ("head_ln.bias", "generator_predictions.LayerNorm.bias"),
          ("output_bias", "generator_lm_head.bias")]
FLIPPED = ("head_out.weight", "head_out.bias")  # D's last layer, negated both ways


def _names(hf) -> tuple[str, ...]:
    return (hf,) if isinstance(hf, str) else hf


def _listed(what: str, items: list[str], sep: str) -> list[str]:
    return ([f"  {what}: " + sep.join(items[:8]) + (" ..." if len(items) > 8 else "")]
            if items else [])


def _load(module: nn.Module, pairs, sd: dict, what: str) -> None:
    """Copy HF's sd[hf] into module's `ours` for each pair; gather every problem into one error."""
    own = module.state_dict()
    missing, mismatched, new = [], [], {}
    for ours, hf in pairs:
        names = _names(hf)
        if any(n not in sd for n in names):
            missing += [n for n in names if n not in sd]
            continue
        # query, key, value: 3 x [H, ...] -> [3H, ...]
        t = torch.cat([sd[n] for n in names])
        t = -t if ours in FLIPPED else t
        if t.shape != own[ours].shape:
            mismatched.append(f"{names[0]}{' (+key, value)' if len(names) > 1 else ''}: checkpoint "
                              f"{tuple(t.shape)} vs config {tuple(own[ours].shape)}")
        else:
            new[ours] = t
    if missing or mismatched:
        raise ValueError("\n".join([f"the {what} state dict does not fit the config:",
                                    *_listed(f"missing keys ({len(missing)})", missing, ", "),
                                    *_listed("shape mismatches", mismatched, "; "),
                                    "  check that the config (size, vocab_size, embedding_size, "
                                    "layers) matches the checkpoint"]))
    with torch.no_grad():
        for ours, t in new.items():
            own[ours].copy_(t)


def _export(own: dict, pairs) -> dict:
    """A state dict's tensors under HF's names (copies, sharing no storage)."""
    out = {}
    for ours, hf in pairs:
        t = -own[ours] if ours in FLIPPED else own[ours]
        names = _names(hf)
        # [3H, ...] -> query, key, value
        for name, part in zip(names, t.detach().chunk(len(names))):
            out[name] = part.contiguous().clone()
    return out


def load_hf_encoder(encoder: Encoder, state_dict: dict, prefix: str | None = None):
    """Load embeddings (+ projection) and blocks from a HuggingFace ELECTRA or BERT state dict.

    `prefix` is "electra." for ElectraForPreTraining / ElectraForMaskedLM, "bert." for
    BertForMaskedLM / BertForPreTraining, "" for a bare ElectraModel / BertModel; None: whichever
    the state dict has. BERT's pooler and position_ids buffer are ignored. Raises ValueError naming
    missing or mismatched keys.
    """
    if prefix is None:
        prefix = next((p for p in ("electra.", "bert.", "")
                       if f"{p}embeddings.word_embeddings.weight" in state_dict), None)
        if prefix is None:
            raise ValueError("no embeddings.word_embeddings.weight (under electra., bert. or no "
                             "prefix) in its weights: not an ELECTRA/BERT encoder")
    _load(encoder, _encoder_keys(encoder, prefix), state_dict, "encoder")


def from_hf_state_dicts(config: ElectraConfig, disc_sd: dict,
                        gen_sd: dict | None = None) -> Electra:
    """Build an Electra from HuggingFace ElectraForPreTraining (D) and ElectraForMaskedLM (G) state
    dicts.

    D's last layer is negated (see FLIPPED). HF's layout stores G and D whole, a shared tensor in
    both: what config.sharing shares is read from D (G's copy is the same table), the rest of G
    from gen_sd. Without gen_sd the generator keeps its random initialisation (enough for
    fine-tuning, which uses D alone). Sharing "gdes" (an exported GDES pair, whose D holds
    E_G + E_Delta as HF has no GDES): G whole from gen_sd, E_Delta = D's table - G's.
    """
    model = Electra(dc_replace(config, objective="electra"))
    D, G = model.discriminator, model.generator
    gdes = config.sharing == "gdes"
    tables = tuple(f"embeddings.{t}." for t in GdesEmbeddings.TABLES) if gdes else ()
    pairs = [p for p in _encoder_keys(D, "electra.") if not p[0].startswith(tables)]
    _load(D, pairs + D_HEAD, disc_sd, "discriminator")
    if gen_sd is not None:
        shared = {"none": (), "embeddings": ("embeddings.",), "all": ("",),
                  "gdes": ()}[config.sharing]
        pairs = [p for p in _encoder_keys(G, "electra.") if not p[0].startswith(shared)]
        _load(G, pairs + G_HEAD, gen_sd, "generator")
    if gdes:
        if gen_sd is None:
            raise ValueError("sharing gdes: D's embeddings are G's plus D's E_Delta, read "
                             "against G's: pass the generator's weights too")
        merged = {ours: hf for ours, hf in _encoder_keys(D, "electra.")}
        with torch.no_grad():
            for t in GdesEmbeddings.TABLES:
                e_g = getattr(G.embeddings, t).weight
                getattr(D.embeddings, f"{t}_delta").copy_(
                    disc_sd[merged[f"embeddings.{t}.weight"]] - e_g)
    return model


def hf_sharing(disc_sd: dict, gen_sd: dict) -> str:
    """The electra.SHARING mode of an HF pair, read from its weights (HF's config.json cannot
    say): "all" if G's encoder equals D's, tensor for tensor; "embeddings" if only the embeddings
    do (Google's released pairs); "gdes" if they differ but G's are as wide as D's and G projects
    them to its hidden size, which no untied G does ("none" makes them as wide as G's hidden
    size): an exported GDES pair, D holding E_G + E_Delta; "none" otherwise. So a GDES pair
    whose G has no projection reads as "none", and one whose E_Delta and LayerNorm never moved
    as "embeddings": each loads to the same functions."""
    def same(keys):
        return all(k in gen_sd and gen_sd[k].shape == disc_sd[k].shape
                   and torch.equal(gen_sd[k], disc_sd[k]) for k in keys)
    encoder = [k for k in disc_sd if k.startswith("electra.")]
    embeddings = [k for k in encoder if k.startswith("electra.embeddings.")]
    if not same(embeddings):
        as_wide = all(k in gen_sd and gen_sd[k].shape == disc_sd[k].shape for k in embeddings)
        return "gdes" if as_wide and "electra.embeddings_project.weight" in gen_sd else "none"
    return "all" if same(encoder) else "embeddings"


def to_hf_state_dicts(model: Electra) -> tuple[dict, dict]:
    """(disc_sd, gen_sd) in HuggingFace's ElectraForPreTraining / ElectraForMaskedLM layout.
    Under sharing "gdes" D's embeddings are exported merged, E_G + E_Delta (plain_state_dict):
    HF has no GDES, and they are what D reads."""
    D, G = model.discriminator, model.generator
    disc = _export(plain_state_dict(D), _encoder_keys(D, "electra.") + D_HEAD)
    gen = _export(G.state_dict(), _encoder_keys(G, "electra.") + G_HEAD)
    # the LM head is tied to the word embeddings: the same weights
    gen["generator_lm_head.weight"] = gen["electra.embeddings.word_embeddings.weight"].clone()
    return disc, gen


# -----------------------------------------------------------------------------
# Configs: ElectraConfig <-> config.json


# (ElectraConfig field, config.json key, the value when config.json lacks it; None: it must be
# there)
CONFIG_KEYS = [("vocab_size", "vocab_size", None),
               ("hidden_size", "hidden_size", None),
               ("num_layers", "num_hidden_layers", None),
               ("num_heads", "num_attention_heads", None),
               ("intermediate_size", "intermediate_size", None),
               ("max_position", "max_position_embeddings", 512),
               ("type_vocab_size", "type_vocab_size", 2),
               ("dropout", "hidden_dropout_prob", 0.1),
               ("attention_dropout", "attention_probs_dropout_prob", 0.1),
               ("layer_norm_eps", "layer_norm_eps", 1e-12),
               ("init_std", "initializer_range", 0.02)]


def hf_config_dict(config: ElectraConfig, generator: bool = False) -> dict:
    """A HuggingFace ElectraConfig (config.json) for the discriminator or the generator."""
    c = generator_config(config) if generator else config
    return {"architectures": ["ElectraForMaskedLM" if generator else "ElectraForPreTraining"],
            "model_type": "electra", "hidden_act": "gelu", "embedding_size": c.embedding_size,
            "pad_token_id": c.pad_id, **{key: getattr(c, name) for name, key, _ in CONFIG_KEYS}}


def config_from_hf(d: dict) -> ElectraConfig:
    """Our config from a HuggingFace ELECTRA or BERT config.json dict (BERT: embedding = hidden)."""
    act = d.get("hidden_act", "gelu")
    if act != "gelu":
        raise ValueError(f"hidden_act {act!r} is not supported: this implementation uses "
                         f"exact GELU")
    fields = {name: d[key] if default is None else d.get(key, default)
              for name, key, default in CONFIG_KEYS}
    return ElectraConfig(**fields, embedding_size=d.get("embedding_size", d["hidden_size"]),
                         pad_id=d.get("pad_token_id", 0) or 0)


# -----------------------------------------------------------------------------
# Folders on disk: config.json + vocab.txt (+ tokenizer_config.json) + model.safetensors /
# pytorch_model.bin

# HF's names, the one a folder has first is read
WEIGHTS = ("model.safetensors", "pytorch_model.bin")


def read_json(path: Path) -> dict:
    """A JSON object of settings (config.json, tokenizer_config.json), or one line saying what is
    wrong."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path} is not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a JSON object of settings")
    return data


def read_config(folder: Path, model_types=("electra", "bert")) -> tuple[str, ElectraConfig]:
    """(model_type, our config) of the folder's config.json, whose model_type must be one of
    `model_types`."""
    path = Path(folder) / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"{folder} is a folder without config.json: not a HuggingFace "
                                f"ELECTRA/BERT checkpoint (config.json + model weights + "
                                f"vocab.txt)")
    d = read_json(path)
    if d.get("model_type") not in model_types:
        raise ValueError(f"{path}: model_type {d.get('model_type')!r} is not supported; use an "
                         f"{' or '.join(t.upper() for t in model_types)} checkpoint")
    try:
        return d["model_type"], config_from_hf(d)
    except KeyError as e:
        raise ValueError(f"{path} lacks {e.args[0]!r}: not a complete ELECTRA/BERT "
                         f"config.json") from None


def read_weights(folder: Path) -> dict:
    """The folder's state dict: model.safetensors, else pytorch_model.bin read with
    weights_only=True (no code from the file runs)."""
    weights = next((Path(folder) / n for n in WEIGHTS if (Path(folder) / n).is_file()), None)
    if weights is None:
        raise FileNotFoundError(f"{folder} has config.json but no {' or '.join(WEIGHTS)}")
    try:
        if weights.suffix == ".safetensors":
            return load_file(str(weights))
        return torch.load(weights, map_location="cpu", weights_only=True)
    except Exception as e:  # truncated or corrupt: SafetensorError, pickle and zip errors
        raise ValueError(f"{weights} is not readable ({type(e).__name__}: {e}): download it "
                         f"again") from None


def vocab_beside(init: Path, vocab=None) -> Path:
    """`vocab` (--vocab) if given, else the vocab.txt in the folder `init` is or is in."""
    init = Path(init)
    path = (Path(vocab) if vocab is not None
            else (init if init.is_dir() else init.parent) / "vocab.txt")
    if not path.is_file():
        raise FileNotFoundError(f"no vocab.txt for {init}: expected {path}. Put the vocab.txt the "
                                f"model was pre-trained with beside it, or pass --vocab PATH")
    return path


def check_vocab(tok: Tokenizer, config: ElectraConfig, vocab_path: Path, init: Path) -> None:
    if len(tok) != config.vocab_size:
        raise ValueError(f"{vocab_path} has {len(tok):,} tokens but the model at {init} has "
                         f"{config.vocab_size:,} token embeddings: use the vocab.txt it was "
                         f"pre-trained with (--vocab)")


def checkpoint_tokenizer(path: Path, config: ElectraConfig, vocab_hash: str | None,
                         vocab=None) -> Tokenizer:
    """The vocab.txt beside the train.py checkpoint `path` (or `vocab`), checked against its model
    config and against the vocab_hash it was pre-trained with (None: not recorded)."""
    vocab_path = vocab_beside(path, vocab)
    tok = Tokenizer.load(vocab_path)
    check_vocab(tok, config, vocab_path, path)
    if vocab_hash not in (None, tok.hash()):
        raise ValueError(f"{vocab_path} is not the vocab {path} was pre-trained with (its sha256 "
                         f"differs from the checkpoint's vocab_hash): pass the right one with "
                         f"--vocab")
    return tok


def folder_tokenizer(folder: Path, config: ElectraConfig,
                     vocab=None) -> tuple[Tokenizer, ElectraConfig]:
    """The folder's vocab.txt (or `vocab`), cased if its tokenizer_config.json says do_lower_case
    false, checked against the config, and the config with the vocab's special ids."""
    vocab_path = vocab_beside(folder, vocab)
    settings = Path(folder) / "tokenizer_config.json"
    lowercase = bool(read_json(settings).get("do_lower_case", True)) if settings.is_file() else True
    tok = Tokenizer.load(vocab_path, lowercase=lowercase)
    check_vocab(tok, config, vocab_path, folder)
    return tok, dc_replace(config, pad_id=tok.pad_id, cls_id=tok.cls_id, sep_id=tok.sep_id,
                           mask_id=tok.mask_id)


@dataclass
class Pretrained:
    """A pre-trained encoder ready to fine-tune: its config, weights and the tokenizer it was
    trained with."""
    config: ElectraConfig
    encoder_state: dict     # state dict of an electra.Encoder (embeddings, projection, layers)
    tokenizer: Tokenizer
    source: str             # what was loaded, for results.json


def load_hf_folder(folder: Path, vocab=None) -> Pretrained:
    """An HF ELECTRA or BERT folder's encoder (config.json, weights, vocab.txt); heads and BERT's
    pooler are dropped."""
    folder = Path(folder)
    model_type, config = read_config(folder)
    sd = read_weights(folder)
    tok, config = folder_tokenizer(folder, config, vocab)
    encoder = Encoder(config)
    try:
        load_hf_encoder(encoder, sd)
    except ValueError as e:
        raise ValueError(f"{folder}: {e}") from None
    return Pretrained(config, encoder.state_dict(), tok,
                      f"HuggingFace {model_type} folder {folder}")


# What fine-tuning starts from (--init): a train.py run, or one of the folders above


def load_train_checkpoint(path: Path, vocab=None) -> Pretrained:
    """A train.py checkpoint (ckpt.pt): its model config, the encoder fine-tuning starts from (the
    discriminator's, Electric's energy network's, or BERT's masked LM's; fine_tuning_encoder,
    without its pre-training head) and the vocab.txt beside it, checked against the saved vocab
    hash."""
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # a truncated file, or not a torch checkpoint at all
        raise ValueError(f"{path} is not a readable train.py checkpoint "
                         f"({type(e).__name__}: {e})") from None
    if not isinstance(ckpt, dict) or "model_config" not in ckpt or "model" not in ckpt:
        raise ValueError(f"{path} is not a train.py checkpoint (no 'model_config' and 'model' "
                         f"entries)")
    try:
        config = ElectraConfig(**ckpt["model_config"])
    except TypeError as e:
        raise ValueError(f"{path}: its model_config does not fit electra.ElectraConfig "
                         f"({e})") from None
    tok = checkpoint_tokenizer(path, config, ckpt.get("vocab_hash"), vocab)
    model = pretraining_model(config)  # Electra, or Electric for an Electric run
    try:
        model.load_state_dict(ckpt["model"])
    except RuntimeError as e:
        raise ValueError(f"{path}: the weights do not fit its model_config: {e}") from None
    return Pretrained(config, model.fine_tuning_encoder().state_dict(), tok,
                      f"train.py checkpoint {path} (step {ckpt.get('step')})")


TRAIN_CHECKPOINT = "ckpt.pt"  # the name train.py gives its checkpoint inside a run folder


def load_pretrained(init, vocab=None) -> Pretrained:
    """--init: a train.py checkpoint or run folder (holding ckpt.pt), or an HF ELECTRA/BERT
    folder."""
    init = Path(init)
    if init.is_dir() and (init / TRAIN_CHECKPOINT).is_file() and \
            not (init / "config.json").is_file():
        init = init / TRAIN_CHECKPOINT
    elif init.is_dir():
        return load_hf_folder(init, vocab)
    elif not init.is_file():
        raise FileNotFoundError(f"--init {init} does not exist: pass a train.py checkpoint (or its "
                                f"run folder) or a HuggingFace ELECTRA/BERT folder")
    return load_train_checkpoint(init, vocab)


def export_hf(model: Electra, vocab_path: Path, out: Path) -> list[Path]:
    """Write out/discriminator/ (ElectraForPreTraining) and out/generator/ (ElectraForMaskedLM),
    each with config.json, vocab.txt and model.safetensors (HF's default format)."""
    if model.discriminator is None:
        raise SystemExit(f"--export-hf: objective {model.config.objective!r} has no ELECTRA "
                         f"discriminator to export; export works for --objective electra (and "
                         f"electra_15)")
    written = []
    for name, sd in zip(("discriminator", "generator"), to_hf_state_dicts(model)):
        d = Path(out) / name
        sd = {k: v.cpu() for k, v in sd.items()}
        atomic_write(d / WEIGHTS[0],
                     lambda p, sd=sd: save_file(sd, str(p), metadata={"format": "pt"}))
        atomic_write(d / "config.json",
                     json.dumps(hf_config_dict(model.config, name == "generator"), indent=2) + "\n")
        atomic_write(d / "vocab.txt", lambda p: shutil.copyfile(vocab_path, p))
        written += [d / "config.json", d / WEIGHTS[0], d / "vocab.txt"]
    return written


# -----------------------------------------------------------------------------
# Google's released generator and discriminator as one Electra (the notebooks, train.py --init-from)

PAIR_SUFFIXES = ("-discriminator", "-generator")  # Google's names: google/electra-{size}-{role}
# A generator's shape, read from its config.json, must be the one electra.generator_config derives
# from the discriminator's; these are the fields compared.
GENERATOR_FIELDS = ("hidden_size", "intermediate_size", "num_heads", "num_layers",
                    "embedding_size", "vocab_size")
# ElectraConfig fields that make a released model's shape; train.py --init-from passes them as
# --set.
SHAPE_FIELDS = tuple(name for name, _, _ in CONFIG_KEYS if name != "vocab_size") + (
    "embedding_size", "generator_fraction", "generator_layers")


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
    stem such as google/electra-small, or its -discriminator), or a local folder: an HF
    discriminator folder, or a train.py --export-hf folder holding discriminator/ and generator/.
    `generator` (a hub name or folder) overrides the one found by that naming."""
    if is_hub_name(disc):
        disc_name, gen_name = pair_names(str(disc))
        disc_folder = hub_files(disc_name, revision, cache_dir, endpoint)
        return disc_folder, pretrained_folder(generator or gen_name, revision, cache_dir, endpoint)
    folder = Path(disc)
    if generator is not None:
        return folder, pretrained_folder(generator, revision, cache_dir, endpoint)
    if all((folder / role / "config.json").is_file() for role in ("discriminator", "generator")):
        return folder / "discriminator", folder / "generator"
    if not folder.exists():
        raise FileNotFoundError(f"{disc} is neither a local folder nor a hub name (org/model)")
    raise FileNotFoundError(f"no generator for {disc}: a full ELECTRA needs one; pass --generator "
                            f"NAME_OR_FOLDER (e.g. google/electra-small-generator, or a folder "
                            f"with config.json and weights)")


def electra_config_from_folders(disc_folder: Path, gen_folder: Path,
                                sharing: str = "embeddings") -> tuple[ElectraConfig, Tokenizer]:
    """(ElectraConfig, tokenizer) of a released pair: D's config.json, with the generator's size
    expressed as electra.py's generator_fraction and generator_layers (Google's ELECTRA-Small
    generator is as wide as its discriminator, fraction 1; Base's is 256 wide, 1/3), checked against
    the generator's own config.json; special ids from D's vocab.txt. `sharing`: hf_sharing's."""
    (_, d), (_, g) = read_config(disc_folder, ("electra",)), read_config(gen_folder, ("electra",))
    config = dc_replace(d, generator_fraction=g.hidden_size / d.hidden_size,
                        generator_layers=g.num_layers / d.num_layers, sharing=sharing)
    derived = generator_config(config)
    diff = [f"{f} {getattr(g, f)} (derived: {getattr(derived, f)})" for f in GENERATOR_FIELDS
            if getattr(g, f) != getattr(derived, f)]
    if diff:
        raise ValueError(f"{gen_folder}: this generator's shape is not one "
                         f"electra.generator_config derives from {disc_folder}'s "
                         f"(heads = hidden // 64, FFN = 4 x hidden, the embeddings shared): "
                         + ", ".join(diff))
    tok, config = folder_tokenizer(disc_folder, config)
    return config, tok


def load_electra(disc, generator=None, revision: str = "main", cache_dir=None, endpoint=None):
    """(Electra, vocab.txt path): a full ELECTRA, generator and discriminator, from HF checkpoints.

    `disc` and `generator` as released_folders takes them.

    >>> model, vocab = load_electra("google/electra-small")  # doctest: +SKIP
    """
    disc_folder, gen_folder = released_folders(disc, generator, revision, cache_dir, endpoint)
    disc_sd, gen_sd = read_weights(disc_folder), read_weights(gen_folder)
    config, _ = electra_config_from_folders(disc_folder, gen_folder, hf_sharing(disc_sd, gen_sd))
    model = from_hf_state_dicts(config, disc_sd, gen_sd)
    return model, vocab_beside(disc_folder)


# the sizes the paper trains (Table 6) and fine-tunes (Table 7)
PAPER_SIZES = ("small", "base", "large")


def paper_size(config: ElectraConfig) -> str:
    """The paper's size a model is taken for: the widest of PAPER_SIZES no wider than the model
    (electra.SIZES); narrower models (our tiny) are taken for Small. finetune.py picks Table 7's
    recipe by it, train.py --init-from the pre-training recipe.

    >>> [paper_size(get_config(s)) for s in ("tiny", "small", "base", "large")]
    ['small', 'small', 'base', 'large']
    """
    hidden = {s: get_config(s).hidden_size for s in PAPER_SIZES}
    narrower = [s for s in PAPER_SIZES if hidden[s] <= config.hidden_size]
    return max(narrower, key=hidden.get, default="small")


def released_start(disc, generator=None, revision: str = "main",
                   cache_dir=None) -> tuple[str, dict, Path, str]:
    """What train.py --init-from needs before it builds a model: (size, shape, vocab.txt,
    sharing). size is the recipe preset for the model's hidden size (paper_size: small, base or
    large), shape the SHAPE_FIELDS of the released pair, sharing what its G and D share
    (hf_sharing). Fetches the files (once); load_electra reads the weights again, from the
    cache."""
    disc_folder, gen_folder = released_folders(disc, generator, revision, cache_dir)
    sharing = hf_sharing(read_weights(disc_folder), read_weights(gen_folder))
    config, tok = electra_config_from_folders(disc_folder, gen_folder, sharing)
    if not tok.lowercase:
        raise ValueError(f"{disc_folder} is a cased model (do_lower_case false); train.py's "
                         f"tokenizer lowercases, so it cannot continue pre-training it")
    return (paper_size(config), {f: getattr(config, f) for f in SHAPE_FIELDS},
            vocab_beside(disc_folder), sharing)


# -----------------------------------------------------------------------------
# The hub: `org/model` names fetched once into a cache (urllib only: no huggingface_hub, no
# requests)
#
# A repository's files are at {endpoint}/{name}/resolve/{revision}/{file}. The hub answers a large
# file (the weights, kept with git LFS) with a redirect to a CDN whose headers carry X-Linked-Size
# and X-Linked-Etag (the file's sha256): each file is asked for with HEAD first, then fetched by
# plumbing.download, which checks its size and sha256.

# HF_ENDPOINT overrides it (a mirror, or a local test server)
HUB_ENDPOINT = "https://huggingface.co"
HUB_REQUIRED = ("config.json", "vocab.txt")  # fetched before the weights: a wrong name fails fast
HUB_OPTIONAL = ("tokenizer_config.json",)  # do_lower_case for cased models; absent in many repos
HUB_MAX_REDIRECTS = 10  # relative redirects followed (a renamed repository); more means a loop
# A hub name: org/model, letters, digits, "-", "_" and "." (HF's own rule for repository ids).
HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")  # an LFS file's etag; a plain file's is a git sha1 (40)


class HubError(DownloadError):
    """A hub download failed; the message is one line saying what failed and what to do."""


def is_hub_name(name) -> bool:
    """True for `org/model` that is not a path on this machine: a local file or folder of that
    name wins, and so does a name whose `org` is a folder here (runs/tinyy, a typo of the run
    folder runs/tiny, is a local path that does not exist, not a model to fetch).

    >>> is_hub_name("google/electra-small-discriminator"), is_hub_name("runs/tiny/ckpt.pt")
    (True, False)
    """
    s = str(name)
    return (bool(HUB_NAME.match(s)) and not s.endswith((".pt", ".bin", ".safetensors"))
            and not Path(s).exists() and not Path(s).parent.is_dir())


def hub_cache_dir(cache_dir=None) -> Path:
    """--hub-cache-dir, else $XDG_CACHE_HOME/electra-from-scratch/hub (~/.cache/... by default)."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    return (Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
            / "electra-from-scratch" / "hub")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Stop at a redirect so that its headers (X-Linked-Etag, X-Linked-Size, Location) can be
    read."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # urllib then raises HTTPError with the 30x response's headers


_head_opener = urllib.request.build_opener(_NoRedirect)


def _hub_failed(name: str, revision: str, file: str, reason: str) -> HubError:
    return HubError(f"could not fetch {file} of {name} (revision {revision}) from the hub: "
                    f"{reason}")


def _fetch(name: str, file: str, revision: str, endpoint: str, folder: Path) -> Path | None:
    """One file of the repository into `folder`, or None when the repository exists but has no such
    file. HEAD {endpoint}/{name}/resolve/{revision}/{file} first: relative redirects are followed; a
    redirect to another host is the CDN and ends the walk. The size and sha256 found on the way are
    checked by plumbing.download. Raises HubError for a repository that is gated, private or
    missing, a server that cannot be reached, and a truncated or corrupted transfer."""
    url = f"{endpoint}/{name}/resolve/{urllib.parse.quote(revision, safe='')}/{file}"
    # gated or private repositories; sent to the hub only, never the CDN
    token = os.environ.get("HF_TOKEN")
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    for _ in range(HUB_MAX_REDIRECTS):
        try:
            with _head_opener.open(urllib.request.Request(url, method="HEAD", headers=auth),
                                   timeout=DOWNLOAD_TIMEOUT_S) as response:
                headers, location = response.headers, None
        except urllib.error.HTTPError as e:
            headers, location = (e.headers,
                                 e.headers.get("Location") if 300 <= e.code < 400 else None)
            if location is None:
                # the hub's own word: RepoNotFound, GatedRepo, ...
                kind = e.headers.get("X-Error-Code", "")
                if e.code == 404 and kind not in ("RepoNotFound", "RevisionNotFound") and \
                        (kind == "EntryNotFound" or file not in HUB_REQUIRED):
                    return None  # the repository is there; this file is not
                if e.code in (401, 403, 404):
                    raise _hub_failed(name, revision, file,
                                      f"HTTP {e.code}: no repository {name} with revision "
                                      f"{revision} at {endpoint} (nor a local path of that name), "
                                      f"or it is gated or private. Check the name and --revision; "
                                      f"for a gated model accept its terms on the hub and set "
                                      f"HF_TOKEN; or download its files yourself and pass the "
                                      f"folder") from None
                raise _hub_failed(name, revision, file, f"HTTP {e.code} {e.reason}") from None
        except (urllib.error.URLError, OSError) as e:
            raise _hub_failed(name, revision, file,
                              f"{endpoint} cannot be reached ({getattr(e, 'reason', None) or e}); "
                              f"check the network (or HF_ENDPOINT), or download the files "
                              f"yourself and pass the folder") from None
        etag = ((headers.get("X-Linked-Etag") or headers.get("ETag") or "")
                .removeprefix("W/").strip('"').lower())
        size = (headers.get("X-Linked-Size")
                or (headers.get("Content-Length") if location is None else None))
        if location is None:
            break
        next_url = urllib.parse.urljoin(url, location)
        if urllib.parse.urlsplit(next_url).netloc != urllib.parse.urlsplit(url).netloc or \
                headers.get("X-Linked-Etag"):
            url, auth = next_url, {}  # the CDN: no hub token there
            break
        url = next_url
    else:
        raise _hub_failed(name, revision, file, f"more than {HUB_MAX_REDIRECTS} redirects")
    try:
        return download(url, folder / file, expected_size=int(size) if size else None,
                        desc=f"{name} {file}", sha256=etag if SHA256_HEX.match(etag) else None,
                        headers=auth)
    except DownloadError as e:  # its reason only: download's advice is for --data
        raise _hub_failed(name, revision, file, e.reason or str(e)) from None


def _complete(folder: Path) -> bool:
    return (all((folder / f).is_file() for f in HUB_REQUIRED)
            and any((folder / f).is_file() for f in WEIGHTS))


def hub_files(name: str, revision: str = "main", cache_dir=None, endpoint=None) -> Path:
    """The local folder {cache}/{org}/{model}/{revision} holding `name`'s config.json, vocab.txt and
    weights, fetched once into a temporary folder beside it and renamed into place only when whole:
    a second call returns it without the network, and a failure (a missing or gated repository, no
    network, a truncated or corrupted transfer: HubError, one line) leaves nothing behind. A
    revision is cached as first fetched: delete the folder (or pass another --revision) to fetch it
    afresh.

    >>> hub_files("google/electra-small-discriminator")  # doctest: +SKIP
    PosixPath('/home/me/.cache/electra-from-scratch/hub/google/electra-small-discriminator/main')
    """
    if not HUB_NAME.match(name):
        raise HubError(f"{name!r} is not a hub name (org/model, e.g. "
                       f"google/electra-small-discriminator)")
    folder = hub_cache_dir(cache_dir) / name / urllib.parse.quote(revision, safe="")
    if _complete(folder):
        return folder
    endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or HUB_ENDPOINT).rstrip("/")
    try:
        # emptied by hand (complete: another process's, keep it)
        if folder.exists() and not _complete(folder):
            shutil.rmtree(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".", suffix=".part", dir=folder.parent))
    except OSError as e:
        raise HubError(f"cannot write the hub cache {folder.parent} ({e.strerror or e}); choose a "
                       f"folder you can write to with --hub-cache-dir") from None
    try:
        for file in HUB_REQUIRED:
            if _fetch(name, file, revision, endpoint, tmp) is None:
                raise _hub_failed(name, revision, file,
                                  "the repository has no such file: not an ELECTRA/BERT "
                                  "checkpoint in HuggingFace's layout")
        if not any(_fetch(name, w, revision, endpoint, tmp) for w in WEIGHTS):
            raise _hub_failed(name, revision, " or ".join(WEIGHTS), "the repository has neither")
        for file in HUB_OPTIONAL:
            _fetch(name, file, revision, endpoint, tmp)
        try:
            os.replace(tmp, folder)
        except OSError as e:  # another process completed the same entry first: keep theirs
            if not _complete(folder):
                raise HubError(f"could not move {name} into the hub cache at {folder} "
                               f"({e.strerror or e})") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def hub_vocab(name: str, revision: str = "main", cache_dir=None, endpoint=None) -> Path:
    """The vocab.txt of the hub model `name` alone (no weights), for a from-scratch run with its
    vocabulary: `--vocab google/electra-small-discriminator` is BERT's uncased WordPiece, the one
    every released ELECTRA and the paper used. Taken from the model's cache entry when hub_files
    fetched it whole, else fetched once to {cache}/{org}/{model}/{revision}.vocab/vocab.txt, size
    (and sha256, when the hub gives one) checked and renamed into place only when whole; a failure
    is a HubError (one line)."""
    if not HUB_NAME.match(name):
        raise HubError(f"{name!r} is not a hub name (org/model, e.g. "
                       f"google/electra-small-discriminator)")
    revision_dir = urllib.parse.quote(revision, safe="")
    whole = hub_cache_dir(cache_dir) / name / revision_dir
    if _complete(whole):
        return whole / "vocab.txt"
    folder = whole.with_name(revision_dir + ".vocab")
    if (folder / "vocab.txt").is_file():
        return folder / "vocab.txt"
    endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or HUB_ENDPOINT).rstrip("/")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise HubError(f"cannot write the hub cache {folder} ({e.strerror or e}); choose a folder "
                       f"you can write to with --hub-cache-dir") from None
    return _fetch(name, "vocab.txt", revision, endpoint, folder)


def hub_dataset_file(repo: str, file: str, revision: str, folder: Path, endpoint=None) -> Path:
    """One file of the hub's dataset repository `repo` (org/name) at `revision`, downloaded once
    to folder/file through the hub's redirect, its size and sha256 checked (plumbing.download); a
    failure is a HubError (one line) and leaves no partial file."""
    endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or HUB_ENDPOINT).rstrip("/")
    if (Path(folder) / file).is_file():
        return Path(folder) / file
    got = _fetch(f"datasets/{repo}", file, revision, endpoint, Path(folder))
    if got is None:
        raise _hub_failed(f"datasets/{repo}", revision, file, "the repository has no such file")
    return got


def pretrained_folder(name_or_path, revision: str = "main", cache_dir=None, endpoint=None) -> Path:
    """A local path as it is; a hub name (org/model, not a local path) fetched into the cache."""
    if is_hub_name(name_or_path):
        return hub_files(str(name_or_path), revision, cache_dir, endpoint)
    return Path(name_or_path)


def load_init(init, revision: str = "main", cache_dir=None, vocab=None) -> Pretrained:
    """--init of finetune.py and squad.py: a train.py checkpoint or run folder, an HF folder, or a
    hub name fetched once into the cache (hub_files); its source says which revision."""
    try:
        folder = pretrained_folder(init, revision, cache_dir)
    except HubError as e:  # a name of the hub's form that may also be a mistyped local path
        raise HubError(f"{e} (--init {init} is not a file or folder here either)") from None
    pre = load_pretrained(folder, vocab)
    if is_hub_name(init):
        pre = dc_replace(pre, source=f"{init} (revision {revision}; {pre.source})")
    return pre
