"""Peak memory and time of the pre-training data path, the in-memory one beside the memory-mapped
one, on corpora of growing size (a benchmark, not a test).

    python bench/data_memory.py --books /path/to/gutenberg --sizes 0.25 1 3

The corpora: the .txt books in --books, copied until the size is reached, each copy with its words
renamed by a permutation of the books' word types seeded by the copy's number. No two copies are
the same text, so a content cache cannot skip one, and every copy keeps the books' lines, documents
and word frequencies, so it costs the tokenizer the same work. Written once into --work.

For each size and each path, a child process runs `train.py --steps N` on the corpus with a fresh
--cache-dir (nothing of the project cached; the system's page cache is not dropped):
  old  data.py as it is at git revision --old-rev (the corpus read, tokenised and cut into
       examples in memory), put in place of pretraining_data;
  new  this checkout's data.py (shards, memory-mapped arrays, examples on disk).
The parent samples the child's process tree (the child and its tokenising workers) every 50 ms
and keeps the peak of the sum of Pss_Anon (/proc/PID/smaps_rollup): anonymous memory only, since
pages of memory-mapped files are the page cache's, not the program's, and proportional, so the
pages a forked worker still shares with its parent count once. The child reports the time of the
data preparation (pretraining_data: vocab given, so tokenising and examples) and of the N updates,
and, for the new path, the rate at which Batches.get makes ELECTRA-Small's batches (128 x 128
tokens) from the mapped arrays. Run it on an otherwise idle machine: timings beside other jobs are
not measurements.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORD = re.compile(r"[A-Za-z]+")
SAMPLE_S = 0.05  # how often the parent reads the child's memory


def make_corpus(books: Path, size_gb: float, folder: Path) -> Path:
    """folder/corpus-{size}GB: copies of the books, each with its own word permutation, until
    size_gb GB; written once."""
    out = folder / f"corpus-{size_gb:g}GB"
    if out.is_dir():
        return out
    texts = [p.read_text(encoding="latin-1") for p in sorted(books.glob("*.txt"))]
    words = sorted({w for t in texts for w in WORD.findall(t)})
    tmp = folder / f"{out.name}.tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    written, copy = 0, 0
    while written < size_gb * 1e9:
        shuffled = words[:]
        random.Random(copy).shuffle(shuffled)
        rename = dict(zip(words, shuffled))
        path = tmp / f"copy-{copy:05d}.txt"
        with open(path, "w", encoding="utf-8") as f:
            for t in texts:
                f.write(WORD.sub(lambda m, r=rename: r[m.group(0)], t) + "\n\n")
        written += path.stat().st_size
        copy += 1
    tmp.rename(out)
    return out


def tree_anon_kib(pid: int) -> int:
    """The sum of Pss_Anon over `pid` and its descendants, in KiB."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(d))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss_Anon:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def run_child(path: str, corpus: Path, vocab: Path, steps: int, old_rev: str, work: Path) -> dict:
    """One child run, its process tree sampled; returns its report with peak_anon_mib."""
    result = work / f"result-{path}.json"
    result.unlink(missing_ok=True)
    cache = Path(tempfile.mkdtemp(prefix=f"cache-{path}-", dir=work))
    cmd = [sys.executable, __file__, "--child", path, "--corpus", str(corpus), "--vocab",
           str(vocab), "--steps", str(steps), "--old-rev", old_rev, "--cache", str(cache),
           "--result", str(result)]
    child = subprocess.Popen(cmd, cwd=ROOT)
    peak = 0
    while child.poll() is None:
        peak = max(peak, tree_anon_kib(child.pid))
        time.sleep(SAMPLE_S)
    if child.returncode != 0:
        raise SystemExit(f"the {path} run on {corpus} failed (exit {child.returncode})")
    report = json.loads(result.read_text())
    report["peak_anon_mib"] = round(peak / 1024, 1)
    subprocess.run(["rm", "-rf", str(cache)], check=True)
    return report


def child(args) -> None:
    """The child: train.py --steps N on the corpus with the old or new pretraining_data, timed."""
    import data
    import train

    if args.child == "old":
        source = subprocess.run(["git", "show", f"{args.old_rev}:data.py"], cwd=ROOT, check=True,
                                capture_output=True, text=True).stdout
        folder = Path(tempfile.mkdtemp())
        (folder / "data_before.py").write_text(source)
        sys.path.insert(0, str(folder))
        import data_before
        prepare = data_before.pretraining_data
    else:
        prepare = data.pretraining_data
    times = {}

    def timed(cfg, rank, world, vocab_hash=None):
        start = time.perf_counter()
        d = prepare(cfg, rank, world, vocab_hash)
        times["prep_s"] = time.perf_counter() - start
        times["tokens"] = int(len(d.ids))
        times["examples"] = int(len(d.batches.examples))
        times["batches"] = d.batches
        return d

    def first_update(step, cfg, run):
        times.setdefault("updates_start", time.perf_counter())

    train.pretraining_data = timed
    train.main(["--data", str(args.corpus), "--vocab", str(args.vocab), "--size", "tiny",
                "--steps", str(args.steps), "--cache-dir", str(args.cache),
                "--out", str(Path(args.cache) / "run"), "--device", "cpu",
                "--eval-interval", str(10 * args.steps), "--ckpt-interval", str(10 * args.steps)],
               before_update=first_update)
    report = {"path": args.child, "corpus_bytes": sum(p.stat().st_size
                                                      for p in Path(args.corpus).rglob("*.txt")),
              "prep_s": round(times["prep_s"], 2), "tokens": times["tokens"],
              "examples": times["examples"], "steps": args.steps,
              "updates_s": round(time.perf_counter() - times["updates_start"], 2)}
    report["prep_mb_s"] = round(report["corpus_bytes"] / 1e6 / report["prep_s"], 2)
    if args.child == "new":  # ELECTRA-Small's batch, 128 x 128, from the mapped arrays
        b = times["batches"]
        small = data.Batches(b.ids, b.examples, 128, 128, 0, 1, 128, b.special, 0)
        first = random.Random(0).randrange(10 ** 6)
        steps = range(first, first + 500)  # in order, as training reads them
        start = time.perf_counter()
        for s in steps:
            small.get(s, 0)
        seconds = time.perf_counter() - start
        report["batches_per_s"] = round(len(steps) / seconds, 1)
        report["batch_tokens_per_s"] = round(len(steps) * 128 * 128 / seconds)
    Path(args.result).write_text(json.dumps(report))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--books", type=Path, help="a folder of .txt books the corpora are made of")
    p.add_argument("--sizes", type=float, nargs="+", default=[0.25, 1, 3], help="corpora, GB")
    p.add_argument("--paths", nargs="+", default=["old", "new"], choices=["old", "new"])
    p.add_argument("--steps", type=int, default=100, help="updates timed after the data")
    p.add_argument("--old-rev", default="8ca5fd6",
                   help="git revision whose data.py is the in-memory path")
    p.add_argument("--vocab", type=Path, help="vocab.txt (default: one of 8,192 tokens trained on "
                                              "the books, once)")
    p.add_argument("--work", type=Path, default=Path("bench_data_memory"),
                   help="where the corpora and caches go (several GB)")
    p.add_argument("--out", type=Path, default=Path("bench/data_memory.json"))
    p.add_argument("--child", choices=["old", "new"], help=argparse.SUPPRESS)
    p.add_argument("--corpus", help=argparse.SUPPRESS)
    p.add_argument("--cache", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args)
    if args.books is None:
        raise SystemExit("--books: pass a folder of .txt books to make the corpora of")
    args.work.mkdir(parents=True, exist_ok=True)
    vocab = args.vocab
    if vocab is None:
        vocab = args.work / "vocab.txt"
        if not vocab.is_file():
            from tokenizer import train as train_vocab
            texts = [f.read_text(encoding="latin-1") for f in sorted(args.books.glob("*.txt"))]
            train_vocab(texts, vocab_size=8192).save(vocab)
    rows = []
    for size in args.sizes:
        corpus = make_corpus(args.books, size, args.work)
        for path in args.paths:
            row = {"size_gb": size, **run_child(path, corpus, vocab, args.steps, args.old_rev,
                                                args.work)}
            print(json.dumps(row), flush=True)
            rows.append(row)
    args.out.write_text(json.dumps({"cpus": os.cpu_count(), "rows": rows}, indent=1) + "\n")
    print(f"{'GB':>5} {'path':>4} {'prep s':>8} {'MB/s':>6} {'updates s':>9} {'peak MiB':>9} "
          f"{'batch tok/s':>11}")
    for r in rows:
        print(f"{r['size_gb']:>5g} {r['path']:>4} {r['prep_s']:>8.1f} {r['prep_mb_s']:>6.2f} "
              f"{r['updates_s']:>9.1f} {r['peak_anon_mib']:>9.0f} "
              f"{r.get('batch_tokens_per_s', ''):>11}")


if __name__ == "__main__":
    main()
