"""summary.json for bench/gpu_check.sh: what each step did and the figures that matter, read from
the files the steps wrote, and printed, so that the end of a device call's output shows them.

    python bench/gpu_summary.py WORK RUN OUT_JSON SECONDS

WORK holds steps.tsv (name, exit status, seconds, limit: one line a step) and what the steps wrote
(versions.json, bench.json, profile.txt, sst2/sst2_check.json, blimp/blimp.json); RUN is the train
step's run folder (metrics.jsonl). A file a step did not write reads as null.
"""
import json
import statistics
import sys
from pathlib import Path


def load(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def metrics(run: Path) -> list[dict]:
    """The run's metrics.jsonl rows (a line cut short by a kill is skipped)."""
    path = run / "metrics.jsonl"
    rows = []
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            rows.append(json.loads(line))
        except ValueError:
            pass
    return rows


def summarize(work: Path, run: Path, seconds: int) -> dict:
    steps = {}
    for line in (work / "steps.tsv").read_text().splitlines():
        name, status, wall, limit = line.split("\t")
        steps[name] = {"exit": status, "seconds": float(wall), "limit_s": int(limit)}
    rows = metrics(run)
    train = [r for r in rows if r.get("split") == "train"]
    held = [r for r in rows if r.get("split") == "eval"]
    sst2_rows = (load(work / "sst2" / "sst2_check.json") or {"rows": []})["rows"]
    profile = work / "profile.txt"
    return {
        "seconds": seconds,
        "steps": steps,
        "versions": load(work / "versions.json"),
        "bench": load(work / "bench.json"),
        "train": {
            "step": train[-1]["step"] if train else None,
            # the first row's updates include compiling
            "median_steps_per_s": statistics.median([r["steps_per_s"] for r in train[1:]] or [0]),
            "last": train[-1] if train else None,
            "last_eval": held[-1] if held else None,
        },
        # SST-2's dev accuracy (mean over seeds) pre-trained and with random weights, and the gain
        "finetune": ({"sst2": {name: sst2_rows[0][name]
                               for name in ("pretrained", "random", "gain")}}
                     if sst2_rows else {}),
        "profile": profile.read_text().splitlines()[0] if profile.is_file() else None,
        # BLiMP's accuracies over every pair: D's sum and mean, G's pseudo-log-likelihood
        "blimp": (load(work / "blimp" / "blimp.json") or {}).get("overall"),
    }


def main(argv=None) -> dict:
    work, run, out, seconds = (argv or sys.argv[1:])
    summary = summarize(Path(work), Path(run), int(seconds))
    Path(out).write_text(json.dumps(summary, indent=1) + "\n")
    for name, s in summary["steps"].items():
        print(f"step {name:9} exit {s['exit']:>7} {s['seconds']:7.1f} s (limit {s['limit_s']} s)")
    for r in (summary["bench"] or {}).get("results", []):
        mfu = f"{r['mfu']:.1%}" if r.get("mfu") is not None else "-"
        print(f"bench {r['variant']:14} {r['steps_per_s']:8.2f} steps/s "
              f"{r['tokens_per_s']:11,.0f} tok/s {r['peak_mib']:7.0f} MiB  MFU {mfu:>6}  "
              f"1M steps {r['hours_1m_steps']:.1f} h")
    train = summary["train"]
    print(f"train step {train['step']}, median {train['median_steps_per_s']:.2f} steps/s")
    print(f"train last {json.dumps(train['last'])}")
    print(f"eval  last {json.dumps(train['last_eval'])}")
    if summary["finetune"]:
        print(f"finetune {json.dumps(summary['finetune'])}")
    if summary["blimp"]:
        print(f"blimp {json.dumps(summary['blimp'])}")
    return summary


if __name__ == "__main__":
    main()
