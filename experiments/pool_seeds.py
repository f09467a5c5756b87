"""Pool an experiment over pre-training seeds: one table and one plot from several results.json.

An experiment script pre-trains one seed per run (its --seed), so its whiskers span fine-tuning
seeds only. Run the same command with --seed 1 (and another --out), then pool the two: every
snapshot's fine-tuning jobs from all the results.json files go into one cell, so the whiskers span
pre-training seeds too. Snapshots are matched by run label and update (the same command and budget
give the same updates on every seed); BLiMP and the context AUC, one number per pre-training run,
become their mean over the seeds. Figure 1 on STS-B, pre-training seeds 0 and 1:

    python experiments/pool_seeds.py experiments/results/figure1-stsb/results.json \\
        experiments/results/figure1-stsb/seed1/results.json \\
        --out experiments/results/figure1-stsb/seeds01

Writes --out/results.json (the pooled rows, every file's runs and jobs), <experiment>.md and
<experiment>.png, drawn by the experiment's own markdown and plot. Runs nothing: every job must
be in the files already.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments import ablations, common, electra_vs_bert, generator_size

EXPERIMENTS = {m.NAME: m for m in (electra_vs_bert, ablations, generator_size)}
# settings that may differ between the files: the seed is what is pooled; the rest say where
# outputs went and what was reused, not what was run
FREE_SETTINGS = ("seed", "out", "reuse", "device", "threads")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+", type=Path,
                   help="results.json of the same experiment command, one per pre-training seed")
    p.add_argument("--out", required=True, type=Path, help="folder for the pooled outputs")
    return p.parse_args(argv)


def load(paths: list[Path]) -> list[dict]:
    """Each file's results dict; one line (SystemExit) if they are not one command's seeds."""
    loaded = []
    for path in paths:
        try:
            loaded.append(json.loads(path.read_text()))
        except (OSError, json.JSONDecodeError) as e:
            raise SystemExit(f"pool_seeds: cannot read {path} ({e}): give an experiment's "
                             f"results.json") from None
    first = loaded[0]
    if first.get("experiment") not in EXPERIMENTS:
        raise SystemExit(f"pool_seeds: {paths[0]} is not a results.json of "
                         f"{', '.join(EXPERIMENTS)}")
    for path, results in zip(paths[1:], loaded[1:]):
        if results.get("experiment") != first["experiment"]:
            raise SystemExit(f"pool_seeds: {path} is {results.get('experiment')}, "
                             f"{paths[0]} is {first['experiment']}: pool one experiment")
        for key, value in first["settings"].items():
            if key not in FREE_SETTINGS and results["settings"].get(key) != value:
                raise SystemExit(f"pool_seeds: {path} has {key} {results['settings'].get(key)!r},"
                                 f" {paths[0]} has {value!r}: pool one command's seeds only")
    seeds = [r["settings"]["seed"] for r in loaded]
    if len(set(seeds)) != len(seeds):
        raise SystemExit(f"pool_seeds: pre-training seeds {seeds} repeat: give each seed once")
    return loaded


def pool_rows(loaded: list[dict]) -> list[dict]:
    """The first file's rows, each with the jobs of the same (label, update) from every file.

    A task's "seeds" are every job's score (file by file), and mean, median, min and max are over
    them; "score" and "score_mean" as summarize computes them; "blimp" and "context_auc" the mean
    over the files; "pretraining_seeds" the seeds pooled."""
    seeds = [r["settings"]["seed"] for r in loaded]
    by_key = [{(row["label"], row["step"]): row for row in r["rows"]} for r in loaded]
    pooled = []
    for first in loaded[0]["rows"]:
        key = (first["label"], first["step"])
        rows = []
        for seed, index in zip(seeds, by_key):
            if key not in index:
                raise SystemExit(f"pool_seeds: seed {seed} has no row for {key[0]} at update "
                                 f"{key[1]:,}: finish its experiment first")
            rows.append(index[key])
        row = dict(first, pretraining_seeds=seeds, tasks={})
        for task, first_task in first["tasks"].items():
            scores = [s for r in rows for s in r["tasks"].get(task, {}).get("seeds", [])]
            row["tasks"][task] = common.seed_stats(first_task["metric"], scores)
        row.pop("score", None)
        row.pop("score_mean", None)
        if all("score" in r for r in rows):
            row["score"], row["score_mean"] = common.glue_scores(row["tasks"])
        if all("blimp" in r for r in rows):
            row["blimp"] = {s: float(np.mean([r["blimp"][s] for r in rows]))
                            for s in first["blimp"]}
        aucs = [r["context_auc"] for r in rows]
        row["context_auc"] = None if None in aucs else float(np.mean(aucs))
        pooled.append(row)
    return pooled


def main(argv=None) -> dict:
    """Pool, then write the experiment's outputs; returns the pooled results dict."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    loaded = load(args.results)
    module = EXPERIMENTS[loaded[0]["experiment"]]
    rows = pool_rows(loaded)
    seeds = ", ".join(str(r["settings"]["seed"]) for r in loaded)
    sources = "".join(f"\n- seed {r['settings']['seed']}: `{r['command']}`" for r in loaded)
    # every file's runs and jobs (run folder names differ by seed, so nothing collides)
    results = dict(loaded[0], rows=rows,
                   command="python " + " ".join(["experiments/pool_seeds.py"] + argv),
                   pooled=[str(p) for p in args.results],
                   runs=[run for r in loaded for run in r["runs"]],
                   finetune={k: v for r in loaded for k, v in r["finetune"].items()},
                   blimp={k: v for r in loaded for k, v in r.get("blimp", {}).items()},
                   seconds=sum(r.get("seconds", 0) for r in loaded))
    tasks = list(dict.fromkeys(t for r in rows for t in r["tasks"]))
    runs = [SimpleNamespace(label=r["label"], steps=r["steps"]) for r in loaded[0]["runs"]]
    jobs = len(loaded) * loaded[0]["settings"]["seeds"]
    note = (f"**Pooled over pre-training seeds {seeds}:** a cell is over {jobs} fine-tuning jobs "
            f"(every fine-tuning seed of every pre-training seed); BLiMP and the context AUC are "
            f"the mean over the pre-training seeds. Each seed's command:{sources}\n\n")
    markdown = module.markdown(results, runs, tasks)
    title, _, rest = markdown.partition("\n\n")
    common.write_outputs(args.out, module.NAME, results, f"{title}\n\n{note}{rest}",
                         lambda plt: module.plot(plt, rows, tasks))
    return results


if __name__ == "__main__":
    main()
