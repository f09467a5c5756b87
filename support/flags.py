"""The command line's spelling, shared by train.py, finetune.py and squad.py: a flag per config
field (add_flag) and --set's FIELD=VALUE items typed by a config class (parse_overrides).

Nothing here imports torch: train.py reads its command line before torch loads, so that a
mistyped flag answers at once.
"""
from __future__ import annotations

import argparse
import dataclasses


def add_flag(parser: argparse.ArgumentParser, name: str, **kwargs) -> None:
    """Flag `--name-with-dashes` for config field `name`, as argparse and most CLIs spell flags;
    `--name_with_underscores`, the spelling finetune.py and squad.py once used, stays accepted as a
    hidden alias, so older commands keep working.

    >>> p = argparse.ArgumentParser()
    >>> add_flag(p, "max_seq_len", type=int, help="tokens per example")
    >>> p.parse_args(["--max-seq-len", "64"]), p.parse_args(["--max_seq_len", "32"])
    (Namespace(max_seq_len=64), Namespace(max_seq_len=32))
    """
    parser.add_argument("--" + name.replace("_", "-"), dest=name, **kwargs)
    if "_" in name:
        alias = {k: v for k, v in kwargs.items() if k not in ("help", "metavar")}
        parser.add_argument("--" + name, dest=name, help=argparse.SUPPRESS, **alias)


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
