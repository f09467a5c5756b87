"""What is not the method: the root's files (electra.py, electric.py, tokenizer.py, data.py,
train.py, finetune.py, squad.py) hold ELECTRA and Electric; these hold what running them needs.

    plumbing.py        downloads, text files, atomic writes, checkpoint files, devices, DDP, the
                       loop's guards (Ctrl-C, out of memory, a loss that is not finite, a
                       compile that fails)
    train_cli.py       train.py's flags and their checks, read before torch loads
    cli.py             the flags of finetune.py, squad.py and support.evaluate
    report.py          what a pre-training run prints, logs (metrics.jsonl) and draws (curves.png;
                       over reference runs: python -m support.report RUN --compare-to REFERENCE)
    hf.py              HuggingFace's ELECTRA layout both ways, and released checkpoints by hub name
    shards.py          a corpus of any size tokenised in shards by all CPUs into memory-mapped files
    glue.py            GLUE's tasks, their files and downloads, and their metrics
    finetune_runs.py   many GLUE tasks and seeds in one command, and resuming them
    evaluate.py        zero-shot BLiMP: python -m support.evaluate blimp --init RUN
"""
