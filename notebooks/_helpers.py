"""What the three notebooks share: the repository on sys.path, the sample text, short CPU runs of train.py.

The notebooks run from this folder (Jupyter's working directory is the notebook's), so
`import _helpers` works there and puts the repository root on sys.path for electra, tokenizer, train.
"""
import contextlib
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402  (after the sys.path line, like the notebooks' imports)

import train  # noqa: E402
from electra import Electra, ElectraConfig  # noqa: E402
from tokenizer import Tokenizer  # noqa: E402

# Chapters I-V of Jane Austen's Emma (1816, public domain; Project Gutenberg via the NLTK selection),
# 69 kB: enough text for a 1000-piece vocabulary and a few hundred tiny steps, small enough for git.
SAMPLE_TEXT = Path(__file__).resolve().parent / "data" / "emma_ch1-5.txt"

# A model small enough to train a few hundred steps in about a minute on 2 CPU cores: the "tiny" preset
# cut to 2 layers of width 64 (ours, not the paper's; the paper's smallest is ELECTRA-Small, Table 6).
# Its generator is a quarter of that width, as ELECTRA-Small's (Sec. 3.2).
TINY_MODEL = {"num_layers": 2, "hidden_size": 64, "embedding_size": 64, "intermediate_size": 256, "num_heads": 2}


def short_run(out_dir, steps: int, objective: str = "electra", data=SAMPLE_TEXT, batch_size: int = 16,
              seq_len: int = 64, vocab_size: int = 1000, lr: float = 2e-3, log_interval: int = 10,
              seed: int = 0) -> dict:
    """A short CPU pre-training run with train.py's own code (train.main), its output kept quiet.

    Writes out_dir/metrics.jsonl, ckpt.pt, vocab.txt and curves.png as any run does, and returns
    train.main's result (model, tokenizer, ...) plus "log", the lines train.py printed. The lr is
    twice the tiny recipe's and the warm-up 10% of the steps, because the run is short.
    """
    args = ["--size", "tiny", "--objective", objective, "--data", str(data), "--out", str(out_dir),
            "--cache-dir", str(Path(out_dir) / "cache"), "--steps", str(steps), "--warmup", str(max(1, steps // 10)),
            "--batch-size", str(batch_size), "--seq-len", str(seq_len), "--vocab-size", str(vocab_size),
            "--lr", str(lr), "--log-interval", str(log_interval), "--eval-interval", str(steps),
            "--eval-batches", "4", "--eval-fraction", "0.1", "--ckpt-interval", str(steps),
            "--seed", str(seed), "--device", "cpu"]
    for key, value in TINY_MODEL.items():
        args += ["--set", f"{key}={value}"]
    log = io.StringIO()
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(io.StringIO()):  # no progress bars
        result = train.main(args)
    result["log"] = log.getvalue().splitlines()
    return result


def load_run(run_dir) -> dict:
    """A finished train.py run folder: its model (eval mode), tokenizer and metrics rows."""
    run_dir = Path(run_dir)
    if not (run_dir / "ckpt.pt").is_file():
        raise FileNotFoundError(f"no ckpt.pt in {run_dir}: point at a train.py --out folder, or leave it "
                                f"empty to train a tiny model here")
    ckpt = torch.load(run_dir / "ckpt.pt", map_location="cpu", weights_only=True)
    tok = Tokenizer.load(run_dir / "vocab.txt")
    model = Electra(ElectraConfig(**ckpt["model_config"]))
    model.load_state_dict(ckpt["model"])
    return {"model": model.eval(), "tokenizer": tok, "step": ckpt["step"], "metrics": read_metrics(run_dir)}


def read_metrics(run_dir) -> list[dict]:
    """The rows of a run's metrics.jsonl (train.py writes one JSON object a line)."""
    path = Path(run_dir) / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def set_threads(n: int = 2) -> None:
    """CI has 2 cores; more threads only contend."""
    torch.set_num_threads(n)
