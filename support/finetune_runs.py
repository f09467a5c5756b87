"""Running finetune.py's fine-tuning over many GLUE tasks and seeds, and what it keeps of them.

finetune.py holds the method (Table 7's recipe, the head, the optimizer, the loop of one seed);
this module runs that loop for each (task, seed) asked for and keeps the results:

    one run      Ctrl-C or SIGTERM between two updates (Stopped), a loss that is not finite
    results      the median over seeds, results.json (rewritten after every seed), the table,
                 finetune.png, GLUE's submission files from the median seed
    resuming     what results.json records of the init, the recipe and the data, checked before
                 its finished seeds are kept and the others run (squad.py's checkpoint too)
    the runner   --init loaded, GLUE's splits read and tokenised, one bar over all the runs
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from support import glue
from support.hf import HubError, Pretrained, is_hub_name, load_init
from support.plumbing import DownloadError, StopOnSignal, atomic_write

# -----------------------------------------------------------------------------
# One run: what stops it


LOSS_WINDOW = 50  # the progress bar shows the mean loss of the last 50 batches (display only)
# Ctrl-C or SIGTERM in fine-tuning: results.json (SQuAD: its checkpoint) keeps what finished
STOPPING = "stopping before the next update: the unfinished seed (SQuAD: epoch) is dropped"


class Stopped(Exception):
    """Ctrl-C or SIGTERM stopped a run between two updates; what it had not finished is dropped."""


def check_stop(stop: StopOnSignal | None) -> None:
    """Raise Stopped when Ctrl-C or SIGTERM asked the run to stop (plumbing.StopOnSignal)."""
    if stop is not None and stop.requested:
        raise Stopped


def diverged(what: str, step: int, epoch: int, lr: float) -> SystemExit:
    """The one line that ends a run whose loss is not finite (GLUE's loop and SQuAD's)."""
    return SystemExit(f"error: {what}: the loss is not finite at step {step:,} (epoch {epoch}, "
                      f"lr {lr:g}): fine-tuning diverged; no results were written for this seed. "
                      f"Lower --lr")


# -----------------------------------------------------------------------------
# Results: the median over seeds, results.json, the table, finetune.png, GLUE's submission files


def summarize(task: glue.Task, runs: list[dict]) -> dict:
    """The finished seeds' records (dev metrics, history, seconds) and their median (the paper
    reports the median of 10 seeds, section 3.1)."""
    median = {m: float(np.median([r["dev"][m] for r in runs])) for m in runs[0]["dev"]}
    return {"seeds": runs, "median": median, "paper_metric": task.paper_metric}


SEED_PREDICTIONS = "seed_predictions"  # in --out-dir: each finished seed's test predictions


def seed_predictions_path(out: Path, task: glue.Task, seed: int) -> Path:
    """Where a seed's test predictions (.npz) wait for its task's submission files."""
    return out / SEED_PREDICTIONS / f"{task.name}_seed{seed}.npz"


def save_seed_predictions(path: Path, test: dict[str, np.ndarray]) -> None:
    """A seed's test predictions {split: array}, written atomically (never half a file)."""
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:  # a file, not a name: np.savez would add .npz to the .tmp name
            np.savez(f, **test)
    atomic_write(path, write)


def load_seed_predictions(path: Path) -> dict[str, np.ndarray]:
    """save_seed_predictions' arrays; one line if the file is gone or unreadable."""
    try:
        with np.load(path) as saved:
            return {split: saved[split] for split in saved.files}
    except (OSError, ValueError) as e:
        raise SystemExit(f"error: {path} cannot be read ({type(e).__name__}: {e}); it holds a "
                         f"finished seed's test predictions: start over with --restart") from None


def write_test_predictions(task: glue.Task, runs: list[dict], test: dict, out: Path) -> int | None:
    """GLUE submission files from the seed whose dev score is the (lower) median, the run the
    paper would report; returns that seed (None when the task has no test file)."""
    if not test:
        return None
    chosen = sorted(runs, key=lambda r: r["dev"][task.paper_metric])[(len(runs) - 1) // 2]
    predictions = load_seed_predictions(seed_predictions_path(out, task, chosen["seed"]))
    for split, stem in task.test_splits:
        if split in test:
            path = out / "glue_submission" / f"{stem or task.folder}.tsv"
            glue.write_submission(task, path, test[split].index, predictions[split])
    return chosen["seed"]


def write_results(results: dict, out: Path) -> None:
    """results.json, with the GLUE score of the tasks so far, written atomically: after every
    seed, so that an interruption or a later failure loses no finished run."""
    medians = {n: r["median"] for n, r in results["tasks"].items()}
    if any(n in glue.PAPER_AVERAGE_TASKS for n in medians):
        results["glue_score"] = glue.glue_score(medians)
    results["glue_score_leaderboard"] = glue.glue_score(medians, leaderboard=True)
    # allow_nan=False: NaN is not JSON, and no metric may be one
    atomic_write(out / "results.json", json.dumps(results, indent=2, allow_nan=False))


def finish_task(results: dict, task: glue.Task, test: dict, out: Path) -> None:
    """Once all of a task's seeds are in `results`: its submission files, results.json (saying
    which seed they are from) and finetune.png."""
    record = results["tasks"][task.name]
    record["test_predictions_seed"] = write_test_predictions(task, record["seeds"], test, out)
    write_results(results, out)
    plot_finetuning_curves(results["tasks"], out / "finetune.png")


def format_table(results: dict[str, dict]) -> str:
    """One line per task: each seed's paper metric, the median of every metric."""
    lines = [f"{'task':6} {'metric':9} {'median':>7}  seeds"]
    for name, r in results.items():
        metric = glue.get_task(name).paper_metric
        per_seed = " ".join(f"{s['dev'][metric]:.2f}" for s in r["seeds"])
        lines.append(f"{name:6} {metric:9} {r['median'][metric]:7.2f}  {per_seed}")
        others = ", ".join(f"{m} {v:.2f}" for m, v in r["median"].items() if m != metric)
        if others:
            lines.append(f"{'':6} {'':9} {'':7}  (median {others})")
    medians = {name: r["median"] for name, r in results.items()}
    if any(n in glue.PAPER_AVERAGE_TASKS for n in medians):
        lines.append(f"GLUE score (paper: one metric per task, no WNLI) over {len(medians)} "
                     f"task(s): {glue.glue_score(medians):.2f}")
    return "\n".join(lines)


def plot_finetuning_curves(results: dict[str, dict], path: Path) -> None:
    """finetune.png: the dev metric the paper reports, after each epoch, one line per seed, one
    panel per task."""
    from matplotlib.figure import Figure  # its own canvas: no pyplot, the global backend untouched

    fig = Figure(figsize=(4.5 * len(results), 3.5))
    axes = fig.subplots(1, len(results), squeeze=False)
    for ax, (name, r) in zip(axes[0], results.items()):
        metric = r["paper_metric"]
        for s in r["seeds"]:
            epochs = [h["epoch"] for h in s["history"]]
            scores = [h[metric] for h in s["history"]]
            ax.plot(epochs, scores, marker="o", label=f"seed {s['seed']}")
        ax.set(title=f"{name}: median {r['median'][metric]:.2f}", xlabel="epoch",
               ylabel=f"dev {metric}")
        ax.xaxis.get_major_locator().set_params(integer=True)  # epochs are whole numbers
        ax.grid(alpha=0.3)
        if len(r["seeds"]) <= 10:
            ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=120)
    os.replace(tmp, path)


# -----------------------------------------------------------------------------
# Resuming: results.json records what its runs were made from, checked before they are kept


def sha256_of_encoder(pre: Pretrained) -> str:
    """sha256 of what fine-tuning starts from: the encoder's config and weights, and the vocab.
    It tells apart two checkpoints at one path, and a hub revision fetched again after it moved."""
    h = hashlib.sha256()
    h.update(json.dumps(asdict(pre.config), sort_keys=True).encode())
    h.update(f"vocab {pre.tokenizer.hash()} lowercase {pre.tokenizer.lowercase}".encode())
    for name in sorted(pre.encoder_state):
        h.update(name.encode())
        weights = pre.encoder_state[name].detach().cpu().contiguous().reshape(-1)
        h.update(weights.view(torch.uint8).numpy())  # the raw bytes, whatever the dtype
    return h.hexdigest()


def init_identity(init: str, revision: str, pre: Pretrained) -> dict:
    """What --init was: a hub name and its revision, or a path; and the sha256 of what it holds."""
    if is_hub_name(init):
        return {"hub": init, "revision": revision, "sha256": sha256_of_encoder(pre)}
    return {"path": str(Path(init).resolve()), "sha256": sha256_of_encoder(pre)}


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes, read in chunks (MNLI's train.tsv is 300 MB)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def data_identity(task: glue.Task, folder: Path) -> dict[str, str]:
    """{file name: sha256} of the task's TSVs in `folder` that exist (train, dev and test)."""
    stems = ["train"] + [s for s, _ in task.dev_splits] + [s for s, _ in task.test_splits]
    paths = [folder / f"{stem}.tsv" for stem in stems]
    return {path.name: file_sha256(path) for path in paths if path.is_file()}


def as_json(value):
    """`value` as it reads back from JSON (tuples become lists), to compare with what was read."""
    return json.loads(json.dumps(value))


def short(value) -> str:
    """A value for a one-line message; a hash cut to its first 12 characters."""
    text = str(value)
    return text if len(text) <= 24 else text[:12] + "..."


def differences(saved: dict, now: dict, where: str = "") -> list[str]:
    """Each value that differs between a record read back (`saved`) and this run's, by its path.

    >>> differences({"recipe": {"lr": 3e-4, "epochs": 2}}, {"recipe": {"lr": 1e-3, "epochs": 2}})
    ['recipe.lr 0.001 here, 0.0003 before']
    """
    found = []
    for key in dict.fromkeys([*saved, *now]):  # both records' keys, in order, once each
        old = saved.get(key)
        new = now.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            found += differences(old, new, f"{where}{key}.")
        elif old != new:
            found.append(f"{where}{key} {short(new)} here, {short(old)} before")
    return found


def refuse(path: Path, found: list[str]) -> SystemExit:
    """The one line that refuses to continue what `path` (results.json, squad.py's checkpoint)
    holds, made with other settings."""
    return SystemExit(f"--out-dir {path.parent}: its {path.name} holds runs made with other "
                      f"settings: {'; '.join(found[:3])}. Run with its settings to resume, pass "
                      f"--restart to start over, or use another --out-dir")


RECORDED = ("init_id", "recipe", "data", "tasks")  # what results.json must hold to be resumed


def read_results(out: Path) -> dict | None:
    """results.json in `out`, or None when there is none; one line if it cannot be resumed."""
    path = out / "results.json"
    if not path.is_file():
        return None
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SystemExit(f"--out-dir {out}: results.json cannot be read ({e}): pass --restart to "
                         f"start over, or use another --out-dir") from None
    if not isinstance(saved, dict) or any(key not in saved for key in RECORDED):
        raise SystemExit(f"--out-dir {out}: results.json does not record its init, recipe and "
                         f"data (an older finetune.py wrote it): pass --restart to start over, or "
                         f"use another --out-dir")
    return saved


def with_recipe_defaults(recipe: dict, defaults: dict) -> dict:
    """A recipe read back from results.json (or squad.py's checkpoint), comparable with this run's:
    a field it lacks gets its default (`defaults`: the recipe's dataclass's), or BEFORE's value
    where the default has changed since; a field the recipe no longer has is dropped when it holds
    the value that behaves as today's recipe (it stays, and refuses the resume, when it held
    another).

    >>> with_recipe_defaults({"lr": 1e-3, "pool": "cls"}, {"lr": None, "head_first_epochs": 0})
    {'lr': 0.001, 'head_first_epochs': 0}
    >>> with_recipe_defaults({"lr": 1e-3, "pool": "mean"}, {"lr": None})
    {'lr': 0.001, 'pool': 'mean'}
    >>> with_recipe_defaults({"lr": 1e-3}, {"lr": None, "loss_reduction": "sum"})
    {'lr': 0.001, 'loss_reduction': 'mean'}
    """
    saved = {k: v for k, v in recipe.items() if not (k in RETIRED and RETIRED[k] == v)}
    before = {k: v for k, v in BEFORE.items() if k in defaults}
    return {**as_json(defaults), **before, **saved}


# Fields an older results.json may record that the recipe no longer has, at the value with which
# the run was today's recipe: the [CLS] head, the official layer-wise decay and optimizer
RETIRED = {"pool": "cls", "layer_decay_fixed": False, "adam_bias_correction": False}

# Fields that a results.json written before they existed lacks, and whose default has changed
# since: such a record ran with this value, not with today's default (before finetune.py had
# --loss-reduction, the batch's loss was always its mean)
BEFORE = {"loss_reduction": "mean"}


def resumed_results(fresh: dict, out: Path, restart: bool, defaults: dict) -> dict:
    """results.json's record, its finished seeds kept, when it was made from the same init with
    the same recipe; `fresh` (no seeds) when there is none or with --restart."""
    saved = None if restart else read_results(out)
    if saved is None:
        return fresh
    saved = {**saved, "recipe": with_recipe_defaults(saved["recipe"], defaults)}
    compared = ("init_id", "recipe")
    found = differences({k: saved[k] for k in compared}, as_json({k: fresh[k] for k in compared}))
    if found:
        raise refuse(out / "results.json", found)
    return {**saved, "init": fresh["init"], "device": fresh["device"]}


def check_data(results: dict, task: glue.Task, data: dict[str, str], out: Path) -> None:
    """Record the task's data identity; one line if the seeds kept were run on other data."""
    saved = results["data"].get(task.name)
    if saved is not None and task.name in results["tasks"]:
        found = differences(saved, data, f"data.{task.name}.")
        if found:
            raise refuse(out / "results.json", found)
    results["data"][task.name] = data


def finished_seeds(results: dict, task: glue.Task) -> list[int]:
    """The seeds of `task` that results.json holds."""
    record = results["tasks"].get(task.name)
    return [r["seed"] for r in record["seeds"]] if record else []


def seed_list(seeds: list[int]) -> str:
    """Seeds for a message, a run of three or more consecutive ones as first-last.

    >>> seed_list([0, 1, 2, 3]), seed_list([0, 1]), seed_list([0, 2, 3])
    ('0-3', '0, 1', '0, 2, 3')
    """
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


def say_kept(results: dict, tasks: list[glue.Task], seeds: list[int], out: Path) -> int:
    """Print one line naming the finished (task, seed) runs that are kept; return their number."""
    kept = []
    count = 0
    for task in tasks:
        finished = finished_seeds(results, task)
        done = [s for s in seeds if s in finished]
        count += len(done)
        if done:
            kept.append(f"{task.name} seed{'s' if len(done) > 1 else ''} {seed_list(done)}")
    if count:
        print(f"resuming {out / 'results.json'}: skipping {count} finished run(s) "
              f"({'; '.join(kept)}), running the other {len(tasks) * len(seeds) - count}")
    return count


# -----------------------------------------------------------------------------
# The runner: every (task, seed) asked for that results.json does not hold


def load_pretrained(args: argparse.Namespace) -> Pretrained:
    """--init (hf.load_init: a train.py run, an HF folder or a hub name), or one line saying why
    it cannot be loaded."""
    try:
        return load_init(args.init, args.revision, args.hub_cache_dir, args.vocab)
    except (FileNotFoundError, ValueError, HubError) as e:
        raise SystemExit(f"error: {e}") from None


def check_against_model(ft, pre: Pretrained) -> None:
    """One line for a recipe value the model cannot take: more tokens than it has positions for,
    more layers drawn afresh than it has."""
    if ft.max_seq_len is not None and ft.max_seq_len > pre.config.max_position:
        raise SystemExit(f"--max-seq-len {ft.max_seq_len}: must be at most "
                         f"{pre.config.max_position}, the positions {pre.source} has "
                         f"embeddings for")
    if ft.reinit_layers > pre.config.num_layers:
        raise SystemExit(f"--reinit-layers {ft.reinit_layers}: must be at most "
                         f"{pre.config.num_layers}, the layers {pre.source} has")


def glue_folder(task: glue.Task, args: argparse.Namespace) -> Path:
    """The folder of the task's TSVs (--data-dir, or GLUE downloaded once into --cache-dir)."""
    try:
        return glue.task_folder(task, args.data_dir, args.cache_dir or glue.DEFAULT_CACHE,
                                args.glue_url or glue.GLUE_BASE_URL,
                                args.mrpc_url or glue.MRPC_BASE_URL)
    except DownloadError as e:
        raise SystemExit(f"error: {e}\nFor GLUE, you can also fetch {task.folder}'s files "
                         f"yourself and pass --data-dir FOLDER (the folder holding train.tsv "
                         f"and dev.tsv).") from None
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"error: {e}") from None


def prepare(task: glue.Task, folder: Path, pre: Pretrained, ft) -> glue.Splits:
    """The task's splits read and tokenised, with one line saying how many rows each has."""
    try:
        splits = glue.prepare_task(task, folder, pre.tokenizer, ft.max_seq_len,
                                   ft.max_train_examples, double_unordered=not ft.single_order)
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"error: {e}") from None
    dev = ", ".join(f"{s} {len(d):,}" for s, d in splits.dev.items())
    test = ", ".join(f"{s} {len(d):,}" for s, d in splits.test.items())
    tqdm.write(f"{task.name}: {len(splits.train):,} training rows, {dev}, "
               + (f"test {test}" if test else "no test file"))
    return splits


@dataclass
class Job:
    """What all the (task, seed) runs of one command share."""
    pre: Pretrained  # the encoder every run starts from
    ft: object  # finetune.FinetuneConfig, filled in for the model's size
    seeds: list[int]  # the seeds asked for, of every task
    out: Path  # --out-dir
    device: str  # cuda or cpu
    stop: StopOnSignal  # Ctrl-C / SIGTERM
    bar: tqdm  # one step per finished (task, seed) run, with the ETA of them all
    finetune_seed: Callable  # finetune.finetune_seed


def stopped(task: glue.Task, seed: int, results: dict, out: Path) -> SystemExit:
    """The one line after Ctrl-C or SIGTERM: what was dropped, what is kept, how to resume."""
    count = sum(len(r["seeds"]) for r in results["tasks"].values())
    kept = f"{out / 'results.json'} holds the {count} finished run(s)" if count else \
        "no run had finished"
    return SystemExit(f"stopped by Ctrl-C or SIGTERM in {task.name} seed {seed}, which was "
                      f"dropped: {kept}. Run the same command again to resume")


def finetune_task(job: Job, task: glue.Task, folder: Path, results: dict) -> None:
    """Fine-tune the seeds of `task` that results.json does not hold, rewriting it after each;
    then, with all of its seeds done, its submission files and finetune.png."""
    done = finished_seeds(results, task)
    todo = [s for s in job.seeds if s not in done]
    if not todo and "test_predictions_seed" in results["tasks"][task.name]:
        return  # finished by an earlier run
    splits = prepare(task, folder, job.pre, job.ft)
    runs = results["tasks"][task.name]["seeds"] if done else []
    for seed in todo:
        try:
            run = job.finetune_seed(task, job.pre, splits, job.ft, seed, job.device, job.stop)
        except Stopped:
            raise stopped(task, seed, results, job.out) from None
        if run["test"]:  # first the predictions, so that a seed in results.json always has them
            save_seed_predictions(seed_predictions_path(job.out, task, seed), run["test"])
        record = {k: v for k, v in run.items() if k != "test"}
        runs = sorted(runs + [record], key=lambda r: r["seed"])
        results["tasks"][task.name] = summarize(task, runs)
        write_results(results, job.out)
        job.bar.update(1)
    finish_task(results, task, splits.test, job.out)


def run_glue(args: argparse.Namespace, pre: Pretrained, ft, device: str,
             finetune_seed: Callable) -> dict:
    """finetune_seed(task, pre, splits, ft, seed, device, stop) for every task and seed of the
    command line that --out-dir's results.json does not hold, rewriting it after each; then the
    table. Returns results.json's record."""
    out = Path(args.out_dir or "out/finetune")
    tasks = [glue.get_task(n) for n in args.tasks]
    fresh = {"init": pre.source, "init_id": init_identity(args.init, args.revision, pre),
             "device": device, "recipe": asdict(ft), "data": {}, "tasks": {}}
    results = resumed_results(fresh, out, args.restart, asdict(type(ft)()))
    folders = {task.name: glue_folder(task, args) for task in tasks}
    for task in tasks:
        check_data(results, task, data_identity(task, folders[task.name]), out)
    seeds = [args.seed + i for i in range(args.seeds)]
    kept = say_kept(results, tasks, seeds, out)
    with tqdm(total=len(tasks) * len(seeds), initial=kept, unit="run", desc="GLUE runs",
              smoothing=0, dynamic_ncols=True) as bar, StopOnSignal(STOPPING) as stop:
        job = Job(pre, ft, seeds, out, device, stop, bar, finetune_seed)
        for task in tasks:
            finetune_task(job, task, folders[task.name], results)
    print(format_table(results["tasks"]))
    submission = out / "glue_submission"
    print(f"wrote {out / 'results.json'}, {out / 'finetune.png'}"
          + (f", {submission}/" if submission.is_dir() else ""))
    return results
