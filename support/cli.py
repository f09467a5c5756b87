"""The command lines of finetune.py, squad.py and `python -m support.evaluate`: their flags and
the checks of each value's range.

This module imports neither torch nor anything that does, so that a command parses its flags
before it loads torch (seconds): a mistyped flag or a value out of range answers at once. A flag
left out is None where the value is the recipe's (finetune.FinetuneConfig, squad.SquadConfig):
the command fills it in from there.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import fields

# support.glue.TASKS's names and electra.SIZES's keys, written out because both modules import
# torch (tests/test_finetune_cli.py checks they agree)
GLUE_TASKS = ("cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli")
MODEL_SIZES = ("tiny", "small", "base", "large")
KNOWN_CORPORA = ("wikitext-103", "wikitext-2", "books", "openwebtext")  # data.CORPUS_NAMES
SQUAD_TASKS = ("squad1", "squad2")
NULL_SCORES = ("classifier", "span")  # squad.py --null-score
RECIPE_NAMES = ("table7", "official")  # finetune.RECIPES's names
LOSS_REDUCTIONS = ("mean", "sum")  # finetune.FinetuneConfig.loss_reduction


def add_flag(parser: argparse.ArgumentParser, name: str, **kwargs) -> None:
    """Flag `--name-with-dashes` for config field `name`, as argparse and most CLIs spell flags,
    with `--name_with_underscores` accepted as a hidden alias, so older commands keep working.

    >>> p = argparse.ArgumentParser()
    >>> add_flag(p, "max_seq_len", type=int, help="tokens per example")
    >>> p.parse_args(["--max-seq-len", "64"]), p.parse_args(["--max_seq_len", "32"])
    (Namespace(max_seq_len=64), Namespace(max_seq_len=32))
    """
    parser.add_argument("--" + name.replace("_", "-"), dest=name, **kwargs)
    if "_" in name:
        alias = {k: v for k, v in kwargs.items() if k not in ("help", "metavar")}
        parser.add_argument("--" + name, dest=name, help=argparse.SUPPRESS, **alias)


def from_flags(config_cls, args: argparse.Namespace, **extra):
    """A config dataclass with every field that is a flag given on the command line (a flag left
    out, None, keeps the field's default), and `extra`'s fields.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class C:
    ...     lr: float = 0.1
    ...     epochs: int = 3
    >>> from_flags(C, argparse.Namespace(lr=None, epochs=2, seed=0))
    C(lr=0.1, epochs=2)
    """
    given = {f.name: getattr(args, f.name) for f in fields(config_cls)
             if getattr(args, f.name, None) is not None}
    return config_cls(**{**given, **extra})


def default_device() -> str:
    """--device left out: cuda when torch sees a GPU, else cpu (torch imported only here)."""
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


# -----------------------------------------------------------------------------
# finetune.py and squad.py: what fine-tuning starts from, and Table 7's recipe


def add_init_flags(p: argparse.ArgumentParser) -> None:
    """--init and its companions, the same for GLUE and SQuAD: what fine-tuning starts from, and
    --dropout, the one setting of its config that fine-tuning may change."""
    p.add_argument("--init", required=True,
                   help="train.py checkpoint or run folder, HuggingFace ELECTRA/BERT folder, or a "
                        "hub name such as google/electra-small-discriminator (fetched once)")
    p.add_argument("--revision", default="main",
                   help="hub revision of --init: a branch, tag or commit (default %(default)s)")
    add_flag(p, "hub_cache_dir",
             help="where hub checkpoints are kept (default ~/.cache/electra-from-scratch/hub)")
    p.add_argument("--vocab", help="vocab.txt (default: the one beside --init)")
    p.add_argument("--dropout", type=float,
                   help="the encoder's dropout and attention dropout in fine-tuning (default: "
                        "--init's, 0 for the tiny preset; the head's stays Table 7's 0.1)")
    p.add_argument("--device", help="cuda or cpu (default: cuda if there is one)")


def add_recipe_flags(p: argparse.ArgumentParser) -> None:
    """The flags of the recipe that GLUE and SQuAD share; left out, the --recipe's value."""
    p.add_argument("--recipe", dest="recipe_name", choices=RECIPE_NAMES,
                   help="table7: the paper's Table 7 (default); official: the official code's "
                        "defaults, which produced its published results (lr 1e-4 for small, "
                        "weight decay 0.01); --lr, --layer-decay, --weight-decay override either")
    p.add_argument("--lr", type=float, help="peak learning rate (default: the recipe's for the "
                                            "model size; Table 7: 3e-4 small, 1e-4 base, 5e-5 "
                                            "large)")
    add_flag(p, "layer_decay", type=float,
             help="layer-wise lr decay (default: the recipe's, 0.8, or 0.9 for large)")
    add_flag(p, "loss_reduction", choices=LOSS_REDUCTIONS,
             help="the batch's loss: the sum of the examples' losses as the official code "
                  "(default), or their mean (a batch-size times smaller gradient before clipping "
                  "at 1.0)")
    add_flag(p, "batch_size", type=int, help="examples per update (default: Table 7's 32)")


def check_recipe_flags(args: argparse.Namespace, own: tuple[str, ...] = ()) -> None:
    """One line naming the flag of a recipe value out of its range; a flag left out passes, and so
    do the flags in `own`, which the command's own config checks (squad.SquadConfig's)."""
    def given(name):
        return name not in own and getattr(args, name, None) is not None

    if given("lr") and not (math.isfinite(args.lr) and args.lr > 0):
        raise SystemExit(f"--lr {args.lr}: must be a positive number (the peak learning rate)")
    if given("dropout") and not 0 <= args.dropout < 1:
        raise SystemExit(f"--dropout {args.dropout}: must be a probability in [0, 1) (the "
                         f"encoder's dropout; leave it out for the checkpoint's)")
    if given("layer_decay") and not 0 < args.layer_decay <= 1:
        raise SystemExit(f"--layer-decay {args.layer_decay}: must be in (0, 1] "
                         f"(1: no layer-wise decay)")
    if given("weight_decay") and not (math.isfinite(args.weight_decay) and args.weight_decay >= 0):
        raise SystemExit(f"--weight-decay {args.weight_decay}: must be a number >= 0 "
                         f"(decoupled weight decay)")
    if given("batch_size") and args.batch_size < 1:
        raise SystemExit(f"--batch-size {args.batch_size}: must be an integer >= 1 "
                         f"(examples per update)")
    if given("epochs") and args.epochs < 1:
        raise SystemExit(f"--epochs {args.epochs}: must be an integer >= 1 (passes over train.tsv; "
                         f"leave it out for the paper's 3, or 10 for RTE and STS-B)")
    if given("max_seq_len") and args.max_seq_len < 3:
        raise SystemExit(f"--max-seq-len {args.max_seq_len}: must be an integer >= 3 "
                         f"(room for [CLS], [SEP] and a token)")
    if given("max_train_examples") and args.max_train_examples < 1:
        raise SystemExit(f"--max-train-examples {args.max_train_examples}: must be an integer "
                         f">= 1 (training rows)")
    if given("reinit_layers") and args.reinit_layers < 0:
        raise SystemExit(f"--reinit-layers {args.reinit_layers}: must be an integer >= 0 "
                         f"(top encoder layers drawn afresh; 0 keeps them all)")
    if given("head_first_epochs") and args.head_first_epochs < 0:
        raise SystemExit(f"--head-first-epochs {args.head_first_epochs}: must be an integer >= 0 "
                         f"(epochs of the head alone on the frozen encoder; 0: none)")
    if given("seeds") and args.seeds < 1:
        raise SystemExit(f"--seeds {args.seeds}: must be an integer >= 1 (runs per task)")
    if given("seed") and args.seed < 0:
        raise SystemExit(f"--seed {args.seed}: must be an integer >= 0 (the first seed)")


def task_names(text: str) -> list[str]:
    """--task of finetune.py: GLUE task names, comma-separated, or "all"; one line for a name
    that is not one (case, "-" and "_" do not matter, as glue.get_task).

    >>> task_names("SST-2,rte"), len(task_names("all"))
    (['sst2', 'rte'], 9)
    """
    if text == "all":
        return list(GLUE_TASKS)
    names = [n.lower().replace("-", "").replace("_", "") for n in text.split(",") if n]
    for name, given in zip(names, [n for n in text.split(",") if n]):
        if name not in GLUE_TASKS:
            raise SystemExit(f"--task: unknown task '{given}': choose from "
                             f"{', '.join(GLUE_TASKS)}, a comma-separated list, or all")
    if not names:
        raise SystemExit("--task: name a GLUE task, a comma-separated list, or all")
    return names


# Flags finetune.py does not take, and what it does instead: one line for a command passing one
NOT_FLAGS = {
    "--pool": "the head reads the [CLS] state, as the official code's does",
    "--layer-decay-fixed": "layer-wise lr decay is the official code's (finetune.layer_lr_scales)",
    "--adam-bias-correction": "the optimizer is the official one, Adam without bias correction "
                              "(finetune.AdamWeightDecay)",
}


def refuse_not_flags(argv: list[str]) -> None:
    """One line for a flag of NOT_FLAGS (in either spelling), instead of argparse's usage.

    >>> refuse_not_flags(["--task", "sst2", "--pool=mean"])
    Traceback (most recent call last):
    SystemExit: --pool is not a flag of finetune.py: the head reads the [CLS] state, as the ...
    """
    for arg in argv:
        name = arg.split("=")[0].replace("_", "-")
        if name in NOT_FLAGS:
            raise SystemExit(f"{name} is not a flag of finetune.py: {NOT_FLAGS[name]}")


def finetune_args(argv=None, description: str = "") -> argparse.Namespace:
    """finetune.py's command line, each value checked against its range before anything loads."""
    refuse_not_flags(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--task", required=True,
                   help=f"one of {', '.join(GLUE_TASKS)}, a comma-separated list, or 'all'")
    add_init_flags(p)
    add_flag(p, "data_dir", help="the task's GLUE folder, or a folder of GLUE task folders "
                                 "(default: download into --cache-dir)")
    add_flag(p, "cache_dir", help="where downloaded GLUE files are kept (default cache/glue)")
    add_flag(p, "glue_url", help="base URL of GLUE's zips")
    add_flag(p, "mrpc_url", help="base URL of the MRPC source files")
    add_flag(p, "out_dir", help="results.json, finetune.png, glue_submission/ "
                                "(default out/finetune)")
    p.add_argument("--seeds", type=int, default=1,
                   help="runs per task; the median is reported (paper: 10) (default %(default)s)")
    p.add_argument("--seed", type=int, default=0,
                   help="first seed; runs use seed, seed+1, ... (default %(default)s)")
    p.add_argument("--restart", action="store_true",
                   help="start over: without it, the (task, seed) runs that --out-dir's "
                        "results.json holds are kept and only the others run")
    add_recipe_flags(p)
    add_flag(p, "weight_decay", type=float,
             help="decoupled weight decay (default: the recipe's, Table 7's 0 or the official "
                  "0.01)")
    p.add_argument("--epochs", type=int, help="default: 3, or 10 for RTE and STS-B (Table 7)")
    add_flag(p, "max_seq_len", type=int,
             help="tokens per example (official max_seq_length; default 128, or the model's "
                  "positions if it has fewer)")
    add_flag(p, "single_order", action="store_true", default=None,
             help="do not also train MRPC/STS-B on swapped sentence pairs (the official code does)")
    add_flag(p, "max_train_examples", type=int,
             help="use only the first N rows of train.tsv (before MRPC/STS-B's swapped copies); "
                  "for quick runs, not the paper")
    add_flag(p, "reinit_layers", type=int,
             help="draw the top N encoder layers afresh before fine-tuning (Zhang et al. 2021; "
                  "not the paper's) (default 0)")
    add_flag(p, "head_first_epochs", type=int,
             help="first train the head alone for N epochs on the frozen encoder, then every "
                  "weight (linear probing then fine-tuning, Kumar et al. 2022; not the paper's) "
                  "(default 0)")
    args = p.parse_args(argv)
    args.tasks = task_names(args.task)  # the names, checked
    check_recipe_flags(args)
    return args


# -----------------------------------------------------------------------------
# squad.py


def squad_parser(description: str = "") -> argparse.ArgumentParser:
    """squad.py's flags. SquadConfig's flags left out are None: squad.squad_config fills them
    in."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--task", required=True, choices=SQUAD_TASKS, help="SQuAD 1.1 or 2.0")
    add_init_flags(p)
    add_flag(p, "data_dir", help="folder holding the official train/dev JSON files (default: "
                                 "download into --cache-dir)")
    add_flag(p, "cache_dir", help="where downloaded SQuAD files are kept (default cache/squad)")
    add_flag(p, "squad_url", help="base URL of the SQuAD JSON files")
    add_flag(p, "out_dir", help="predictions.json, null_odds.json, results.json, and the "
                                "checkpoint of the last finished epoch while it runs "
                                "(default out/squad)")
    p.add_argument("--restart", action="store_true",
                   help="start over: without it, a run stopped half-way in --out-dir resumes "
                        "from its last finished epoch")
    p.add_argument("--seed", type=int, default=0, help="random seed (default %(default)s)")
    add_flag(p, "max_train_examples", type=int, help="use only the first N training questions")
    add_flag(p, "max_dev_examples", type=int, help="predict and score the first N dev questions")
    add_recipe_flags(p)
    # SquadConfig's: left out, the official code's (squad.SquadConfig)
    add_flag(p, "max_seq_len", type=int,
             help="tokens per window (official max_seq_length; GLUE uses 128; default 512, or the "
                  "model's positions if it has fewer)")
    add_flag(p, "doc_stride", type=int,
             help="official doc_stride: a new window every N context tokens (default 128)")
    add_flag(p, "max_query_len", type=int,
             help="official max_query_length: longer questions are cut (default 64)")
    add_flag(p, "max_answer_len", type=int,
             help="official max_answer_length, in tokens (default 30)")
    add_flag(p, "n_best", type=int,
             help="official n_best_size: top start and end positions searched (default 20)")
    p.add_argument("--epochs", type=int, help="Table 7: 2 for SQuAD (default 2)")
    add_flag(p, "independent_ends", action="store_true",
             help="BERT's span head (start and end from one dense layer) instead of the official "
                  "joint prediction (the end conditioned on the start, searched with a beam)")
    add_flag(p, "null_threshold", type=float,
             help="2.0: answers with null odds above it count as no answer (default: the "
                  "official qa_na_threshold with the classifier; BERT's 0 with --null-score span)")
    add_flag(p, "null_score", choices=NULL_SCORES, default="classifier",
             help="2.0's null odds: the official answerability classifier (default), or BERT's "
                  "[CLS] span score (which implies --independent-ends: it is defined on BERT's "
                  "head)")
    return p


def squad_args(argv=None, description: str = "") -> argparse.Namespace:
    """squad.py's command line, each value checked against its range before anything loads (but
    SquadConfig's, which squad.parse_args checks)."""
    args = squad_parser(description).parse_args(argv)
    if args.max_dev_examples is not None and args.max_dev_examples < 1:
        raise SystemExit(f"--max-dev-examples {args.max_dev_examples}: must be an integer >= 1 "
                         f"(dev questions)")
    check_recipe_flags(args, own=("epochs", "max_seq_len"))
    return args


# -----------------------------------------------------------------------------
# python -m support.evaluate


def evaluate_args(argv=None, description: str = "") -> argparse.Namespace:
    """support.evaluate's command line, checked before anything loads. Flags left out are None
    where support.evaluate holds the default (its BLiMP cache and URL, PER_PARADIGM, BATCH_SIZE)."""
    p = argparse.ArgumentParser(description=description)
    commands = p.add_subparsers(dest="command", required=True)
    b = commands.add_parser("blimp", help="zero-shot BLiMP: D's sentence score and the MLM's PLL")
    b.add_argument("--init", help="a train.py run folder (or its ckpt.pt), a HuggingFace ELECTRA "
                                  "folder, or a hub name such as google/electra-small")
    b.add_argument("--random", action="store_true",
                   help="fresh weights of the same config and vocab: the zero point")
    b.add_argument("--seed", type=int, default=0, help="torch seed of --random's weights")
    b.add_argument("--size", default="tiny", choices=MODEL_SIZES,
                   help="--random without --init: the config preset (with --vocab)")
    b.add_argument("--objective", default="electra",
                   help="--random without --init: the pre-training objective whose model is drawn "
                        "(electra.OBJECTIVES or electric; default electra)")
    b.add_argument("--vocab", help="vocab.txt (default: the one beside --init)")
    b.add_argument("--generator", help="the generator of an HF discriminator (hub name or folder)")
    b.add_argument("--revision", default="main", help="hub revision of --init")
    add_flag(b, "hub_cache_dir", help="where hub checkpoints are kept "
                                      "(default ~/.cache/electra-from-scratch/hub)")
    add_flag(b, "data_dir", help="a folder of BLiMP's jsonl files (default: download them once)")
    add_flag(b, "cache_dir", help="where the download is kept (default cache/blimp)")
    add_flag(b, "blimp_url", help="base URL of BLiMP's jsonl files")
    add_flag(b, "per_paradigm", type=int,
             help="the first N pairs of each paradigm, 0 for all (default 200)")
    add_flag(b, "batch_size", type=int, help="sequences per forward pass (default 256)")
    b.add_argument("--device", help="cuda or cpu (default: cuda when there is one)")
    b.add_argument("--threads", type=int, help="torch CPU threads (default: torch's; on a busy "
                                               "machine 1 can be several times faster)")
    b.add_argument("--out", help="folder for the results JSON (default: the run folder of --init, "
                                 "else out/evaluate)")
    args = p.parse_args(argv)
    if args.per_paradigm is not None and args.per_paradigm < 0:
        raise SystemExit(f"--per-paradigm {args.per_paradigm}: must be >= 0 (0: every pair)")
    if args.threads is not None and args.threads < 1:
        raise SystemExit(f"--threads {args.threads}: must be >= 1")
    if args.batch_size is not None and args.batch_size < 1:
        raise SystemExit(f"--batch-size {args.batch_size}: must be >= 1")
    if args.init is not None and args.objective != "electra":
        raise SystemExit(f"blimp: --objective {args.objective} draws fresh weights without "
                         f"--init; an --init's objective is its own")
    if args.init is None and not (args.random and args.vocab):
        raise SystemExit("blimp: pass --init RUN_FOLDER_OR_HUB_NAME, or --random --vocab "
                         "VOCAB.txt (and --size) for fresh weights")
    return args
