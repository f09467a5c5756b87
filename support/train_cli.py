"""train.py's command line: its flags (parse_args), the checks of their values (check_args,
check_train_config, --set's fields), how each update runs (step_path: compiled, with CUDA graphs,
or eager), and the configuration a run gets from them, a checkpoint it resumes, or a released
model it starts from (resolve_config, resumed, released_flags).

train.py reads its command line before it imports torch, so that a mistyped flag answers at once:
parse_args needs nothing heavy. The checks that need the model's or the data's modules run after
torch has loaded, and import those modules where they run.
"""
from __future__ import annotations

import argparse
import math
from dataclasses import asdict, fields

from support.cli import KNOWN_CORPORA, add_flag
from tokenizer import CONFIG as WORDPIECE

MIN_VOCAB_SIZE = len(WORDPIECE.specials) + 1  # the special tokens and at least one piece
# ElectraConfig fields that --set may not change: their flags and the vocabulary set them
NOT_SET = ("objective", "sharing", "algorithm", "vocab_size", "pad_id", "cls_id", "sep_id",
           "mask_id")


def parse_args(argv, config: type, sizes) -> argparse.Namespace:
    """One flag per field of `config` (train.TrainConfig; dashes, the underscore spelling a hidden
    alias), and --resume, --export-hf, --presets; `sizes` are the presets of --size. A flag of the
    recipe or of RESUME_FIELDS that is not given parses to None: resolve_config takes it from the
    recipe or the checkpoint. Only argparse's checks run here (a flag's name, type and choices);
    check_args checks the values."""
    p = argparse.ArgumentParser(
        description="Pre-train ELECTRA (Clark et al. 2020). Presets per --size follow the paper's "
                    "Table 6; every value can be overridden.")
    c = config  # the defaults
    add_flag(p, "size", choices=tuple(sizes), help=f"model and recipe preset (default {c.size})")
    add_flag(p, "objective",
             help="electra: replaced token detection; bert: the masked-LM baseline; electra_15, "
                  "replace_mlm, all_tokens_mlm: the ablations of Sec. 3.5; electric: the "
                  "energy-based cloze model of electric.py (default electra)")
    add_flag(p, "sharing",
             help="weights G and D share (Sec. 3.2): none, embeddings (default: token, position "
                  "and segment embeddings), all (G and D of the same shape) or gdes (DeBERTa-v3: "
                  "D reads G's embeddings, stopped, plus its own E_Delta)")
    add_flag(p, "algorithm",
             help="joint (default: G and D together), two-stage (G alone for half the steps, "
                  "then D from G's weights with G frozen; needs --sharing none) or adversarial "
                  "(G trained by policy gradient to fool D, Appendix F)")
    add_flag(p, "data", help=f".txt file, folder of .txt files, or a corpus data.py downloads "
                             f"({', '.join(KNOWN_CORPORA)}) (default {c.data})")
    add_flag(p, "data_url", help="base URL of the known corpora (default: $ELECTRA_DATA_URL, or "
                                 "data.DATA_URL)")
    add_flag(p, "cache_dir", default=c.cache_dir,
             help="downloads and tokenised corpora (default %(default)s)")
    p.add_argument("--out", dest="out_dir", metavar="OUT", default=c.out_dir,
                   help="run folder: ckpt.pt, vocab.txt, metrics.jsonl, curves.png "
                        "(default %(default)s)")
    add_flag(p, "vocab", help="a BERT-format vocab.txt, or a hub model whose vocab.txt to use "
                              "(e.g. google/electra-small-discriminator: BERT's uncased) "
                              "(default: train one on the corpus)")
    add_flag(p, "vocab_size", type=int, help="size of the trained vocab (preset)")
    add_flag(p, "seq_len", type=int, help="tokens per example (preset)")
    add_flag(p, "batch_size", type=int, help="sequences per update, all GPUs together (preset)")
    add_flag(p, "grad_accum", type=int, default=c.grad_accum,
             help="micro-batches per update (default %(default)s)")
    add_flag(p, "lr", type=float, help="peak learning rate (preset)")
    add_flag(p, "steps", type=int, help="updates (preset)")
    add_flag(p, "warmup", type=int, help="warm-up updates (preset)")
    add_flag(p, "weight_decay", type=float, help=f"AdamW weight decay (default {c.weight_decay})")
    add_flag(p, "clip_norm", type=float, help=f"gradient-norm clip (default {c.clip_norm})")
    add_flag(p, "clip_apart", action="store_true", default=None,
             help="clip G's and D's gradients apart, each to --clip-norm, as DeBERTa's code (needs "
                  "--sharing none or gdes; default: one norm over both, as the official code)")
    add_flag(p, "eval_fraction", type=float,
             help=f"share of documents held out (default {c.eval_fraction})")
    add_flag(p, "eval_batches", type=int, default=c.eval_batches,
             help="micro-batches per evaluation (default %(default)s)")
    add_flag(p, "log_interval", type=int, help="updates between metrics.jsonl lines (preset)")
    add_flag(p, "eval_interval", type=int, help="updates between held-out evaluations (preset)")
    add_flag(p, "ckpt_interval", type=int, help="updates between checkpoints (preset)")
    add_flag(p, "stop_at", type=int,
             help="stop with a checkpoint after this update (the schedule still runs to --steps)")
    add_flag(p, "seed", type=int, help=f"random seed (default {c.seed})")
    add_flag(p, "device", default=c.device,
             help="auto (default: cuda if available), cpu, cuda or cuda:N")
    add_flag(p, "compile", action=argparse.BooleanOptionalAction,
             help="torch.compile the model (default: on a CUDA device; --no-compile: eager)")
    add_flag(p, "cuda_graphs", action=argparse.BooleanOptionalAction,
             help="replay each compiled update as one CUDA graph (default: on one CUDA device "
                  "without --grad-accum; --no-cuda-graphs: compiled without)")
    add_flag(p, "precision", choices=("auto", "bf16", "fp32"), default=c.precision,
             help="auto (default): bf16 autocast on GPUs with bf16 tensor cores, fp32 elsewhere")
    add_flag(p, "peak_tflops", type=float,
             help="accelerator peak TFLOP/s for MFU (default: looked up from the GPU name)")
    p.add_argument("--set", dest="overrides", metavar="FIELD=VALUE", action="append",
                   help="override an ElectraConfig field, e.g. --set num_layers=2 (repeatable)")
    add_flag(p, "init_from", metavar="NAME_OR_FOLDER",
             help="continue pre-training a released ELECTRA (e.g. google/electra-small, its hub "
                  "name or a folder): its shape, vocab, generator and discriminator")
    add_flag(p, "generator", help="with --init-from: the generator's hub name or folder")
    add_flag(p, "revision", default=c.revision,
             help="hub revision of --init-from or --vocab (branch, tag or commit)")
    add_flag(p, "hub_cache_dir",
             help="hub checkpoints (default ~/.cache/electra-from-scratch/hub)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --out from its ckpt.pt")
    add_flag(p, "export_hf", metavar="DIR",
             help="write the checkpoint in --out in HuggingFace's ELECTRA layout to DIR, then exit")
    p.add_argument("--presets", action="store_true",
                   help="print every preset's parameters and FLOPs per step, then exit")
    return p.parse_args(argv)


def check_args(args: argparse.Namespace, recipe_config) -> None:
    """The values of the flags given, checked before anything is written: --set's items typed by
    ElectraConfig (args.overrides becomes a dict), --init-from's companions, and every value over
    the recipe (`recipe_config`: train.recipe_config) in its range (check_train_config)."""
    if args.overrides is not None:
        args.overrides = parse_set(args.overrides)
    objective_kept = args.objective in (None, "electra", "electra_15")
    if args.init_from and (args.resume or args.vocab or not objective_kept):
        raise SystemExit("--init-from starts a new ELECTRA run from a released generator and "
                         "discriminator, with their vocab: drop --resume, --vocab and --objective")
    check_train_config(recipe_config(**config_flags(args, recipe_config)))


def parse_set(items: list[str]) -> dict:
    """--set's ["num_layers=2", "dropout=0"] -> {"num_layers": 2, "dropout": 0.0}, typed by
    ElectraConfig; the fields the objective and the vocabulary set are refused in one line.

    >>> parse_set(["num_layers=2", "dropout=0"])
    {'num_layers': 2, 'dropout': 0.0}
    """
    from electra import ElectraConfig  # after torch has loaded (this module's docstring)
    from support.plumbing import parse_overrides

    return parse_overrides(items, ElectraConfig, "--set", NOT_SET,
                           "--objective, --sharing, --algorithm / the vocabulary")


def config_flags(args: argparse.Namespace, recipe_config) -> dict:
    """The TrainConfig fields of the parsed flags, those that parsed to None (not given) left
    out."""
    names = [f.name for f in fields(recipe_config())]
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


def check_train_config(cfg) -> None:
    """One line (SystemExit) for a value of train.TrainConfig `cfg` out of its range, naming its
    flag.

    >>> from train import TrainConfig
    >>> check_train_config(TrainConfig(lr=-1.0))
    Traceback (most recent call last):
    SystemExit: --lr -1.0: must be a positive number (the peak learning rate)
    >>> check_train_config(TrainConfig(eval_fraction=1.0))
    Traceback (most recent call last):
    SystemExit: --eval-fraction 1.0: must be a share in [0, 1) (0: no held-out set)
    >>> check_train_config(TrainConfig(seq_len=4))
    Traceback (most recent call last):
    SystemExit: --seq-len 4: must be an integer >= 5 (the example builder's shortest target length)
    """
    from data import SHORT_SEQ_MIN  # after torch has loaded (this module's docstring)
    from electra import ALGORITHMS, OBJECTIVES, SHARING, SIBLING_OBJECTIVES

    def refuse(flag: str, value, must: str) -> SystemExit:
        return SystemExit(f"{flag} {value}: must be {must}")

    def positive(v) -> bool:
        return math.isfinite(v) and v > 0

    if cfg.objective not in OBJECTIVES + SIBLING_OBJECTIVES:
        raise refuse("--objective", cfg.objective,
                     f"one of {', '.join(OBJECTIVES + SIBLING_OBJECTIVES)}")
    if cfg.sharing not in SHARING:
        raise refuse("--sharing", cfg.sharing, f"one of {', '.join(SHARING)}")
    if cfg.algorithm not in ALGORITHMS:
        raise refuse("--algorithm", cfg.algorithm, f"one of {', '.join(ALGORITHMS)}")
    if cfg.vocab_size < MIN_VOCAB_SIZE:
        raise refuse("--vocab-size", cfg.vocab_size,
                     f"an integer >= {MIN_VOCAB_SIZE} (the special tokens and at least one piece)")
    if cfg.seq_len < SHORT_SEQ_MIN:
        raise refuse("--seq-len", cfg.seq_len, f"an integer >= {SHORT_SEQ_MIN} "
                     f"(the example builder's shortest target length)")
    if cfg.batch_size < 1:
        raise refuse("--batch-size", cfg.batch_size, "an integer >= 1 (sequences per update)")
    if cfg.grad_accum < 1:
        raise refuse("--grad-accum", cfg.grad_accum, "an integer >= 1 (micro-batches per update)")
    if not positive(cfg.lr):
        raise refuse("--lr", cfg.lr, "a positive number (the peak learning rate)")
    if cfg.steps < 1:
        raise refuse("--steps", cfg.steps, "an integer >= 1 (updates)")
    if cfg.algorithm == "two-stage" and cfg.steps < 2:
        raise refuse("--steps", cfg.steps, "an integer >= 2 with --algorithm two-stage (a stage "
                     "of updates each)")
    if cfg.warmup < 0:
        raise refuse("--warmup", cfg.warmup, "an integer >= 0 (warm-up updates)")
    if not (math.isfinite(cfg.weight_decay) and cfg.weight_decay >= 0):
        raise refuse("--weight-decay", cfg.weight_decay, "a number >= 0 (AdamW weight decay)")
    if not positive(cfg.clip_norm):
        raise refuse("--clip-norm", cfg.clip_norm, "a positive number (the gradient-norm clip)")
    if cfg.clip_apart and (cfg.sharing not in ("none", "gdes") or cfg.objective == "bert"):
        raise SystemExit(f"--clip-apart needs a G and a D that share no weight (--sharing none or "
                         f"gdes, an objective with a generator): not --sharing {cfg.sharing} "
                         f"--objective {cfg.objective}")
    if not 0 <= cfg.eval_fraction < 1:
        raise refuse("--eval-fraction", cfg.eval_fraction, "a share in [0, 1) (0: no held-out set)")
    if cfg.eval_batches < 1:
        raise refuse("--eval-batches", cfg.eval_batches,
                     "an integer >= 1 (micro-batches per evaluation)")
    if cfg.log_interval < 1:
        raise refuse("--log-interval", cfg.log_interval,
                     "an integer >= 1 (updates between metrics lines)")
    if cfg.eval_interval < 1:
        raise refuse("--eval-interval", cfg.eval_interval,
                     "an integer >= 1 (updates between evaluations)")
    if cfg.ckpt_interval < 1:
        raise refuse("--ckpt-interval", cfg.ckpt_interval,
                     "an integer >= 1 (updates between checkpoints)")
    if cfg.stop_at is not None and cfg.stop_at < 1:
        raise refuse("--stop-at", cfg.stop_at, "an integer >= 1 (the update to stop after)")
    if cfg.seed < 0:
        raise refuse("--seed", cfg.seed, "an integer >= 0 (the random seed)")
    if cfg.peak_tflops is not None and not positive(cfg.peak_tflops):
        raise refuse("--peak-tflops", cfg.peak_tflops,
                     "a positive number (the accelerator's peak TFLOP/s)")


def step_path(device_type: str, world: int, grad_accum: int, compile: bool | None = None,
              cuda_graphs: bool | None = None) -> tuple[str, str]:
    """How each update runs, and why (the start-up lines print both): "cuda-graphs" (torch.compile
    in its reduce-overhead mode, each update one replay of a CUDA graph), "compile" (torch.compile
    without graphs) or "eager". `compile` and `cuda_graphs` are the flags --compile and
    --cuda-graphs (None: not given; False: --no-compile, --no-cuda-graphs). Left to itself a CUDA
    device gets the fastest step measured (bench/README.md): CUDA graphs for one process without
    accumulation, else compiled without graphs (which tests/test_train.py runs under DDP and
    tests/test_compile_path.py under accumulation, on a CPU); any other device runs eager:
    compiling takes minutes there, and no speed-up on a CPU has been measured. A flag asking for
    what cannot run is refused in one line.

    >>> step_path("cuda", world=1, grad_accum=1)[0], step_path("cuda", world=4, grad_accum=1)[0]
    ('cuda-graphs', 'compile')
    >>> step_path("cpu", world=1, grad_accum=1)[0], step_path("cpu", 1, 1, compile=True)
    ('eager', ('compile', '--compile'))
    >>> step_path("cuda", 1, 2, cuda_graphs=True)
    Traceback (most recent call last):
    SystemExit: --cuda-graphs with --grad-accum 2 is not supported: drop one of them
    """
    if compile is False:
        if cuda_graphs:
            raise SystemExit("--cuda-graphs replays torch.compile's graphs: drop --no-compile")
        return "eager", "--no-compile"
    if device_type != "cuda":
        if cuda_graphs:
            raise SystemExit(f"--cuda-graphs needs a CUDA device, not {device_type}")
        if compile:
            return "compile", "--compile"
        return "eager", f"the default on {device_type} (--compile compiles here too)"
    if cuda_graphs is False:
        return "compile", "--no-cuda-graphs"
    # where CUDA graphs cannot run the default compiles without them; asked for, they are refused
    if world > 1:
        if cuda_graphs:
            raise SystemExit("--cuda-graphs is not supported with DDP: drop it or run one process")
        return "compile", ("the default under DDP: CUDA graphs need one process "
                           "(--no-compile: eager)")
    if grad_accum > 1:
        if cuda_graphs:
            # the first micro-batch's gradients may be the graph's own output buffers, which the
            # next replay overwrites: refused rather than risked
            raise SystemExit(f"--cuda-graphs with --grad-accum {grad_accum} is not supported: "
                             f"drop one of them")
        return "compile", (f"the default with --grad-accum {grad_accum}: CUDA graphs need one "
                           f"micro-batch per update (--no-compile: eager)")
    return "cuda-graphs", ("the default on one CUDA device, the fastest step measured "
                           "(--no-cuda-graphs: compiled without; --no-compile: eager)")


def released_flags(args: argparse.Namespace) -> None:
    """--init-from: the released model's size, vocab, shape (as --set gives them) and weight
    sharing into `args`, under the flags given."""
    from support.hf import HubError, released_start  # after torch has loaded

    try:
        size, shape, vocab, sharing = released_start(args.init_from, args.generator,
                                                      args.revision, args.hub_cache_dir)
    except (FileNotFoundError, ValueError, HubError) as e:
        raise SystemExit(f"--init-from {args.init_from}: {e}") from None
    args.size = args.size or size
    args.sharing = args.sharing or sharing
    args.vocab = str(vocab)
    shape = parse_set([f"{k}={v}" for k, v in shape.items()])  # as --set gives them
    args.overrides = {**shape, **(args.overrides or {})}


def resumed(flags: dict, saved: dict, out_dir: str, recipe_config, resume_fields) -> dict:
    """The fields of a resumed run: the flags given, and `resume_fields` (train.RESUME_FIELDS) as
    the checkpoint's config `saved` has them, which a flag may not contradict: one line naming
    each flag that does.

    >>> from train import RESUME_FIELDS, recipe_config
    >>> saved = asdict(recipe_config(size="tiny"))
    >>> cfg = recipe_config(**resumed({"log_interval": 1}, saved, "out", recipe_config,
    ...                               RESUME_FIELDS))
    >>> cfg.size, cfg.lr, cfg.log_interval
    ('tiny', 0.001, 1)
    >>> resumed({"size": "small"}, saved, "out", recipe_config, RESUME_FIELDS)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    SystemExit: --resume: ... different settings: --size small (checkpoint: tiny). Resume with ...
    """
    if saved.get("temperature_end") is not None:
        raise SystemExit(f"--resume: the checkpoint in {out_dir} was trained with a schedule of "
                         f"G's temperature, an experiment's: continue it with python "
                         f"experiments/hooks.py tiny-hour --out {out_dir} --resume")
    # a field the checkpoint does not hold takes the recipe's value
    saved = {**asdict(recipe_config(size=saved.get("size", "small"))), **saved}
    changed = []
    for name in resume_fields:
        if name in flags and flags[name] != saved[name]:
            flag = "--set" if name == "overrides" else "--" + name.replace("_", "-")
            changed.append(f"{flag} {flags[name]} (checkpoint: {saved[name]})")
    if changed:
        raise SystemExit(f"--resume: the checkpoint in {out_dir} was trained with different "
                         f"settings: {'; '.join(changed)}. Resume with the checkpoint's settings "
                         f"(drop those flags), or start a new run with another --out.")
    return {**flags, **{name: saved[name] for name in resume_fields}}


def resolve_config(args: argparse.Namespace, saved: dict | None, recipe_config, resume_fields):
    """The run's train.TrainConfig: the flags given, the rest from the recipe; on --resume the
    checkpoint's config `saved` for `resume_fields`, which flags may not contradict (resumed)."""
    from electra import get_config  # after torch has loaded (this module's docstring)

    flags = config_flags(args, recipe_config)
    if saved is not None:
        return recipe_config(**resumed(flags, saved, args.out_dir, recipe_config, resume_fields))
    cfg = recipe_config(**flags)
    try:
        get_config(cfg.size, **cfg.overrides)  # checked: a bad --set stops here, before the data
    except ValueError as e:
        given = " ".join(f"{k}={v}" for k, v in cfg.overrides.items())
        raise SystemExit(f"--set {given}: {e} (size {cfg.size})") from e
    try:  # --sharing and --algorithm with the objective and the shape
        get_config(cfg.size, **{**cfg.overrides, "objective": cfg.objective,
                                "sharing": cfg.sharing, "algorithm": cfg.algorithm})
    except ValueError as e:
        raise SystemExit(f"--sharing {cfg.sharing} --algorithm {cfg.algorithm}: {e}") from e
    return cfg
