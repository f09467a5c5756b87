"""Speed of tokenizer.py against HuggingFace's Python and Rust BERT tokenizers, and of its trainer.

    python bench/tokenizer.py --data ../shared/data/corpus

1. Trains a vocab of --vocab-size tokens on the corpus twice: with our `tokenizer.train`
   (WordPiece likelihood merges, Python) and with HuggingFace `tokenizers`' BertWordPieceTokenizer
   (BPE merges, Rust), and prints both times.
2. Loads HF's vocab.txt (or --vocab) into three tokenizers and encodes the same lines of text
   (the first --mb megabytes of the corpus) with each, on one core, best of --repeat runs:
   ours (tokenizer.py), transformers' pure-Python BERT tokenizer (BertTokenizerLegacy: in
   transformers 5, `BertTokenizer` is Rust-backed, the Python one was renamed), and tokenizers'
   BertWordPieceTokenizer (Rust). Prints MB/s and checks that the ids agree line by line.
"""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

# one core for the Rust tokenizer too: a fair per-core number
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tokenizers import BertWordPieceTokenizer
from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

import data
import tokenizer


def best_time(fn, repeat):
    """Fastest of `repeat` runs of fn() (seconds) and its last result: the least disturbed by
    other jobs."""
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True,
                   help="a .txt file or a folder of .txt/.raw files (e.g. ../shared/data/corpus)")
    p.add_argument("--vocab",
                   help="a vocab.txt to encode with (default: the one HF's trainer learns here)")
    p.add_argument("--vocab-size", type=int, default=tokenizer.CONFIG.vocab_size,
                   help="trainer vocab size (BERT: 30522)")
    p.add_argument("--mb", type=float, default=2.0,
                   help="megabytes of text to encode (the Python reference is slow)")
    p.add_argument("--repeat", type=int, default=3,
                   help="timed runs per tokenizer; the fastest is reported")
    p.add_argument("--cased", action="store_true",
                   help="cased vocab (no lowercasing or accent stripping)")
    p.add_argument("--skip-train", action="store_true", help="skip the trainer timings")
    args = p.parse_args(argv)
    lowercase = not args.cased
    try:
        texts = [text for _, text in data.read_corpus(args.data)]
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"--data: {e}") from None
    total_mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    print(f"corpus {args.data}: {len(texts)} files, {total_mb:.1f} MB")

    # HF's trained vocab.txt
    with tempfile.TemporaryDirectory(prefix="bench-tokenizer-") as workdir:
        compare(args, texts, total_mb, lowercase, Path(workdir))


def compare(args, texts: list[str], total_mb: float, lowercase: bool, workdir: Path) -> None:
    """Trainer times (unless --skip-train), then encoding speed and agreement of the three
    tokenizers."""
    if not args.skip_train:
        print(f"\ntrainer, vocab_size={args.vocab_size}, {total_mb:.1f} MB, one process each")
        start = time.perf_counter()
        hf = BertWordPieceTokenizer(lowercase=lowercase)
        hf.train_from_iterator(texts, vocab_size=args.vocab_size, show_progress=False)
        hf_s = time.perf_counter() - start
        start = time.perf_counter()
        ours_trained = tokenizer.train(texts, vocab_size=args.vocab_size, lowercase=lowercase,
                                       progress=False)
        ours_s = time.perf_counter() - start
        print(f"  {'ours: tokenizer.train (likelihood merges, Python)':<52} {ours_s:7.1f} s  "
              f"{len(ours_trained):6d} tokens")
        print(f"  {'HF tokenizers BertWordPieceTokenizer.train (BPE, Rust)':<52} {hf_s:7.1f} s  "
              f"{hf.get_vocab_size():6d} tokens")
    if args.vocab:
        vocab = Path(args.vocab)
    else:
        if args.skip_train:
            hf = BertWordPieceTokenizer(lowercase=lowercase)
            hf.train_from_iterator(texts, vocab_size=args.vocab_size, show_progress=False)
        hf.save_model(str(workdir))
        vocab = workdir / "vocab.txt"

    lines, size = [], 0
    for text in texts:
        for line in text.split("\n"):
            if size >= args.mb * 1e6:
                break
            lines.append(line)
            size += len(line.encode("utf-8")) + 1
    mb = size / 1e6
    python_ref = BertTokenizerLegacy(str(vocab), do_lower_case=lowercase)
    rust_ref = BertWordPieceTokenizer(str(vocab), lowercase=lowercase)

    def ours():
        tok = tokenizer.Tokenizer.load(vocab, lowercase=lowercase)  # a cold word cache every run
        return [tok.encode(line) for line in lines]

    def python():
        return [python_ref.convert_tokens_to_ids(python_ref.tokenize(line)) for line in lines]

    def rust():
        return [e.ids for e in rust_ref.encode_batch(lines, add_special_tokens=False)]

    print(f"\nencoding {len(lines)} lines, {mb:.2f} MB, one core, best of {args.repeat}; "
          f"vocab {vocab}")
    ours_s, ours_ids = best_time(ours, args.repeat)
    python_s, python_ids = best_time(python, max(1, args.repeat - 2))  # ~20x slower: fewer runs
    rust_s, rust_ids = best_time(rust, args.repeat)
    # Rust lowercases character by character, so a word-final "Σ" becomes "σ", not Python's "ς"
    sigma = {i for i, line in enumerate(lines) if "Σ" in line}
    python_bad = sum(a != b for a, b in zip(ours_ids, python_ids))
    rust_bad = sum(a != b for i, (a, b) in enumerate(zip(ours_ids, rust_ids)) if i not in sigma)
    print(f"  {'tokenizer':<48} {'MB/s':>7} {'vs Python':>10}  ids differ from ours")
    rows = [
        ("ours (tokenizer.py, Python)", ours_s, "-"),
        ("transformers BertTokenizerLegacy (Python)", python_s,
         f"{python_bad} of {len(lines)} lines"),
        ("tokenizers BertWordPieceTokenizer (Rust)", rust_s,
         f"{rust_bad} of {len(lines) - len(sigma)} lines (without capital sigma)"),
    ]
    for name, seconds, agree in rows:
        print(f"  {name:<48} {mb / seconds:7.2f} {python_s / seconds:9.1f}x  {agree}")
    if python_bad or rust_bad:
        raise SystemExit("ids differ from a reference: see the counts above")


if __name__ == "__main__":
    main()
