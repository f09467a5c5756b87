"""What the three notebooks share: the repository on sys.path, the sample text, short CPU runs of
train.py.

The notebooks run from this folder (Jupyter's working directory is the notebook's), so
`import _helpers` works there and puts the repository root on sys.path for electra, tokenizer and
train.
"""
import contextlib
import io
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import train  # the project's modules: after the sys.path line
from electra import ElectraConfig
from electric import pretraining_model
from experiments import hooks
from tokenizer import CONFIG, Tokenizer, count_words

# Chapters I-V of Jane Austen's Emma (1816, public domain; Project Gutenberg via the NLTK
# selection), 69 kB: enough text for a 1000-token vocabulary and a few hundred tiny steps, small
# enough for git.
SAMPLE_TEXT = Path(__file__).resolve().parent / "data" / "emma_ch1-5.txt"

# A model small enough to train a few hundred steps in about a minute on 2 CPU cores: the "tiny"
# preset cut to 2 layers of width 64 (ours, not the paper's; the paper's smallest is ELECTRA-Small,
# Table 6). Its generator is a quarter of that width, as ELECTRA-Small's (Sec. 3.2).
TINY_MODEL = {
    "num_layers": 2,
    "hidden_size": 64,
    "embedding_size": 64,
    "intermediate_size": 256,
    "num_heads": 2,
}


def word_vocab(path, text_path=SAMPLE_TEXT, size: int = 1000) -> Path:
    """Write a vocab.txt of whole words: the special tokens, every character (as a word start and
    as a "##" continuation) and the most frequent words of the text, `size` lines in all.

    Any such list is a valid WordPiece vocab: greedy longest match takes a whole word when it is in
    the list and spells it out in characters otherwise. On a 69 kB text a trained 1000-piece
    WordPiece vocab (tokenizer.train, likelihood merges) still splits "very" into v ##e ##r ##y, and
    the pictures of what G proposes would show letters; whole words make them readable.
    """
    counts = count_words([Path(text_path).read_text(encoding="utf-8")])
    chars = sorted({c for word in counts for c in word})
    tokens = list(CONFIG.specials) + chars + [CONFIG.prefix + c for c in chars]
    known = set(tokens)
    frequent = [w for w, _ in counts.most_common() if w not in known]
    tokens += frequent[:max(0, size - len(tokens))]
    Path(path).write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    return Path(path)


def short_run(out_dir, steps: int, objective: str = "electra", data=SAMPLE_TEXT,
              batch_size: int = 16, seq_len: int = 64, vocab=None, lr: float = 2e-3,
              log_interval: int = 10, seed: int = 0, eval_interval: int | None = None,
              model: dict | None = None) -> dict:
    """A short CPU pre-training run with train.py's own code (train.main), its output kept quiet.

    Writes out_dir/metrics.jsonl, ckpt.pt, vocab.txt and curves.png as any run does, and returns
    train.main's result (model, tokenizer, ...) plus "log", the lines train.py printed. `vocab` is a
    vocab.txt (default: the whole-word vocab of word_vocab, written into out_dir's parent). The lr
    is twice the tiny recipe's and the warm-up 10% of the steps, because the run is short. The
    held-out set is evaluated every `eval_interval` steps (default: once, at the end). `model`:
    config fields to change beyond TINY_MODEL's.
    """
    if vocab is None:
        Path(out_dir).parent.mkdir(parents=True, exist_ok=True)
        vocab = word_vocab(Path(out_dir).parent / "words_vocab.txt", data)
    args = [
        "--size", "tiny",
        "--objective", objective,
        "--data", str(data),
        "--vocab", str(vocab),
        "--out", str(out_dir),
        "--cache-dir", str(Path(out_dir) / "cache"),
        "--steps", str(steps),
        "--warmup", str(max(1, steps // 10)),
        "--batch-size", str(batch_size),
        "--seq-len", str(seq_len),
        "--lr", str(lr),
        "--log-interval", str(log_interval),
        "--eval-interval", str(eval_interval or steps),
        "--eval-batches", "4",
        "--eval-fraction", "0.1",
        "--ckpt-interval", str(steps),
        "--seed", str(seed),
        "--device", "cpu",
    ]
    for key, value in {**TINY_MODEL, **(model or {})}.items():
        args += ["--set", f"{key}={value}"]
    log = io.StringIO()
    # stderr dropped: no progress bars in the notebook
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(io.StringIO()):
        result = train.main(args)
    result["log"] = log.getvalue().splitlines()
    return result


def load_run(run_dir) -> dict:
    """A finished train.py run folder: its model (eval mode), tokenizer, metrics rows, and G's
    sampling temperature at its last update: the model's, which a schedule of experiments/hooks.py
    keeps at the last update's (the CPU hour's ends at the paper's 1); for a folder written by the
    --temperature-end flags train.py once had, their schedule's."""
    run_dir = Path(run_dir)
    if not (run_dir / "ckpt.pt").is_file():
        raise FileNotFoundError(f"no ckpt.pt in {run_dir}: point at a train.py --out folder, or "
                                f"leave it empty to train a tiny model here")
    ckpt = torch.load(run_dir / "ckpt.pt", map_location="cpu", weights_only=True)
    tok = Tokenizer.load(run_dir / "vocab.txt")
    model = pretraining_model(ElectraConfig(**ckpt["model_config"]))  # Electra, or Electric
    model.load_state_dict(ckpt["model"])
    temperature = model.config.temperature
    flags = ckpt["train_config"]
    if flags.get("temperature_end") is not None:
        steps = flags.get("temperature_steps") or flags["steps"]
        temperature = hooks.temperature_at(ckpt["step"] - 1, temperature, flags["temperature_end"],
                                           steps)
    return {
        "model": model.eval(),
        "tokenizer": tok,
        "step": ckpt["step"],
        "metrics": read_metrics(run_dir),
        "temperature": temperature,
    }


def load_released(name, revision: str = "main") -> dict:
    """Google's released generator and discriminator (e.g. "google/electra-small": its -generator
    and -discriminator), fetched once from the hub into ~/.cache (hf.load_electra), in load_run's
    shape. Needs internet the first time; HF_ENDPOINT points at a mirror."""
    from support import hf

    model, vocab = hf.load_electra(name, revision=revision)
    return {
        "model": model.eval(),
        "tokenizer": Tokenizer.load(vocab),
        "step": None,
        "metrics": [],
        "temperature": model.config.temperature,
    }


def read_metrics(run_dir) -> list[dict]:
    """The rows of a run's metrics.jsonl (train.py writes one JSON object a line)."""
    path = Path(run_dir) / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def set_threads(n: int = 2) -> None:
    """CI has 2 cores; more threads only contend."""
    torch.set_num_threads(n)
