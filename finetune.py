"""Fine-tune a pre-trained ELECTRA (or BERT) discriminator on GLUE, with the paper's recipe.

Clark et al. 2020 (arXiv 2003.10555) measure a pre-trained discriminator by what it scores on GLUE after
fine-tuning: section 3.1 and Appendix A, Table 7 (the recipe), Tables 1, 2 and 8 (the scores). This file
is the whole pipeline in the order a reader meets it:

    metrics      accuracy, F1, Matthews correlation, Pearson, Spearman, GLUE score   (numpy, by hand)
    tasks        the nine GLUE tasks, their TSV layouts and readers                  (stdlib)
    download     GLUE's public zips into a cache, atomically                          (train.py's helpers)
    model        --init from a train.py checkpoint, an HF ELECTRA or an HF BERT folder
    recipe       Table 7, layer-wise learning-rate decay, warmup + linear decay
    training     one seed: train, evaluate per epoch, predict the test split
    main         the CLI: --seeds N, results.json, a table, finetune.png, GLUE submission files

    python finetune.py --task sst2 --init ckpt.pt --data_dir ../shared/data/glue/SST-2
    python finetune.py --task mrpc,stsb --init path/to/hf-electra-small-discriminator --seeds 10
"""
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# ---------------------------------------------------------------------------------------------------------
# Metrics. Each returns a plain float on the raw scale (accuracy in [0, 1], correlations in [-1, 1]);
# `task_metrics` multiplies by 100, the scale of the paper's tables.
# ---------------------------------------------------------------------------------------------------------


def accuracy(pred, gold) -> float:
    """Fraction of exact matches: acc = (1/n) * sum_i [pred_i == gold_i].

    >>> accuracy([1, 0, 1, 1], [1, 1, 1, 0])
    0.5
    """
    pred, gold = np.asarray(pred), np.asarray(gold)
    return float(np.mean(pred == gold))


def _confusion(pred, gold, positive=1):
    """Binary confusion counts (TP, FP, FN, TN) with `positive` as the positive class."""
    p, g = np.asarray(pred) == positive, np.asarray(gold) == positive
    return int(np.sum(p & g)), int(np.sum(p & ~g)), int(np.sum(~p & g)), int(np.sum(~p & ~g))


def f1(pred, gold, positive=1) -> float:
    """F1 of the positive class (GLUE's F1 for MRPC and QQP): F1 = 2TP / (2TP + FP + FN).

    0 when there is no positive prediction nor gold label (scikit-learn's zero_division=0).

    >>> f1([1, 1, 0, 0], [1, 0, 1, 0])  # TP=1, FP=1, FN=1: 2/(2+1+1)
    0.5
    """
    tp, fp, fn, _ = _confusion(pred, gold, positive)
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


def matthews_corrcoef(pred, gold) -> float:
    """Matthews correlation of binary labels (GLUE's metric for CoLA), 0 when a margin is empty:

        MCC = (TP*TN - FP*FN) / sqrt((TP+FP) (TP+FN) (TN+FP) (TN+FN))

    >>> matthews_corrcoef([1, 1, 0, 0, 1], [1, 0, 0, 1, 1])  # TP=2 FP=1 FN=1 TN=1: (2-1)/sqrt(3*3*2*2)
    0.16666666666666666
    """
    tp, fp, fn, tn = _confusion(pred, gold)
    denominator = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    return 0.0 if denominator == 0 else (tp * tn - fp * fn) / math.sqrt(denominator)


def pearson(x, y) -> float:
    """Pearson correlation r = sum (x-mean x)(y-mean y) / sqrt(sum (x-mean x)^2 * sum (y-mean y)^2).

    0 when either input is constant (the correlation is undefined; scipy returns nan).

    >>> round(pearson([1, 2, 3], [2, 4, 9]), 4)  # dx=(-1,0,1), dy=(-3,-1,4): 7/sqrt(2*26)
    0.9707
    """
    dx = np.asarray(x, dtype=np.float64) - np.mean(x)
    dy = np.asarray(y, dtype=np.float64) - np.mean(y)
    denominator = math.sqrt(float(np.sum(dx * dx)) * float(np.sum(dy * dy)))
    return 0.0 if denominator == 0 else float(np.sum(dx * dy)) / denominator


def average_ranks(x) -> np.ndarray:
    """Ranks 1..n of x, ties sharing the mean of the ranks they span (what Spearman needs).

    >>> average_ranks([10, 20, 20, 5]).tolist()  # 5 -> 1, 10 -> 2, the two 20s share (3+4)/2
    [2.0, 3.5, 3.5, 1.0]
    """
    x = np.asarray(x)
    order = np.argsort(x, kind="stable")
    xs = x[order]
    starts = np.r_[0, np.flatnonzero(xs[1:] != xs[:-1]) + 1]  # first index of each run of equal values
    ends = np.r_[starts[1:], len(x)]                            # one past its last index
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = np.repeat((starts + ends - 1) / 2 + 1, ends - starts)  # mean of 1-based ranks start+1..end
    return ranks


def spearman(x, y) -> float:
    """Spearman's rho: the Pearson correlation of the average ranks (GLUE's main metric for STS-B).

    >>> round(spearman([1, 2, 2, 3], [1, 3, 2, 4]), 6)  # ranks (1,2.5,2.5,4),(1,3,2,4): 4.5/sqrt(4.5*5)
    0.948683
    """
    return pearson(average_ranks(x), average_ranks(y))


# ---------------------------------------------------------------------------------------------------------
# The nine GLUE tasks (Wang et al. 2019) and their TSV layouts, as GLUE's zips ship them.
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Columns:
    """Where one kind of GLUE TSV keeps its fields (0-based; negative indexes count from the end)."""
    a: int                    # first sentence
    b: int | None             # second sentence; None for single-sentence tasks (CoLA, SST-2)
    label: int | None         # None on test splits: GLUE keeps their labels hidden
    header: bool = True       # every GLUE file has a header row except CoLA's train/dev
    width: int | None = None  # fields per row when there is no header to count them from


@dataclass(frozen=True)
class Task:
    """One GLUE task: where its files are, how to read them, how it is scored."""
    name: str                          # CLI name, e.g. "sst2"
    folder: str                        # folder inside GLUE's zip and in --data_dir, e.g. "SST-2"
    labels: tuple[str, ...] | None     # label strings as written in the TSV, index = class id; None = regression
    columns: Columns                   # layout of train.tsv and dev*.tsv
    test_columns: Columns              # layout of test*.tsv (no label column)
    metrics: tuple[str, ...]           # what the dev split reports (x100, as the paper's tables)
    paper_metric: str                  # the one number the paper reports (section 3.1)
    leaderboard_metrics: tuple[str, ...]  # averaged into one task score by GLUE's leaderboard
    dev_splits: tuple[tuple[str, str], ...] = (("dev", ""),)  # (file stem, suffix added to metric names)
    test_splits: tuple[tuple[str, str], ...] = (("test", ""),)  # (file stem, GLUE submission file stem)
    epochs: int = 3                    # Table 7: "3 for other tasks"
    symmetric: bool = False            # sentence order carries no meaning (official code's double_unordered)
    zip_name: str = ""                 # file under the GLUE download URL; "" = f"{folder}.zip"

    @property
    def regression(self) -> bool:
        return self.labels is None

    @property
    def num_outputs(self) -> int:
        return 1 if self.labels is None else len(self.labels)


BINARY = ("0", "1")
NLI2 = ("entailment", "not_entailment")
PAIR = Columns(a=1, b=2, label=3)        # index, sentence1, sentence2, label   (QNLI, RTE, WNLI)
PAIR_TEST = Columns(a=1, b=2, label=None)
# Column positions follow the official code's readers (finetune/classification/classification_tasks.py).
TASKS: dict[str, Task] = {t.name: t for t in [
    # CoLA train/dev: no header; source, label, original label mark, sentence. Test: index, sentence.
    Task("cola", "CoLA", BINARY, Columns(a=3, b=None, label=1, header=False, width=4), Columns(a=1, b=None, label=None),
         metrics=("mcc", "acc"), paper_metric="mcc", leaderboard_metrics=("mcc",)),
    # SST-2: sentence, label. Test: index, sentence.
    Task("sst2", "SST-2", BINARY, Columns(a=0, b=None, label=1), Columns(a=1, b=None, label=None),
         metrics=("acc",), paper_metric="acc", leaderboard_metrics=("acc",)),
    # MRPC: header starts with a UTF-8 byte-order mark; Quality, #1 ID, #2 ID, #1 String, #2 String.
    # Test: index, #1 ID, #2 ID, #1 String, #2 String. Not hosted as a zip (licence): see download_task.
    Task("mrpc", "MRPC", BINARY, Columns(a=3, b=4, label=0), Columns(a=3, b=4, label=None),
         metrics=("acc", "f1"), paper_metric="acc", leaderboard_metrics=("acc", "f1"), symmetric=True),
    # STS-B: 10 columns index, genre, filename, year, old_index, source1, source2, sentence1, sentence2,
    # score (0-5). Test has the first 9.
    Task("stsb", "STS-B", None, Columns(a=7, b=8, label=9), Columns(a=7, b=8, label=None),
         metrics=("pearson", "spearman"), paper_metric="spearman", leaderboard_metrics=("pearson", "spearman"),
         epochs=10, symmetric=True),
    # QQP: id, qid1, qid2, question1, question2, is_duplicate. Test: id, question1, question2.
    Task("qqp", "QQP", BINARY, Columns(a=3, b=4, label=5), Columns(a=1, b=2, label=None),
         metrics=("acc", "f1"), paper_metric="acc", leaderboard_metrics=("acc", "f1"), zip_name="QQP-clean.zip"),
    # MNLI: index, promptID, pairID, genre, 4 parse columns, sentence1, sentence2, then 1 (train) or 5
    # (dev) annotator labels, gold_label last. Test: the first 10 columns.
    Task("mnli", "MNLI", ("contradiction", "entailment", "neutral"), Columns(a=8, b=9, label=-1),
         Columns(a=8, b=9, label=None), metrics=("acc_m", "acc_mm"), paper_metric="acc_m",
         leaderboard_metrics=("acc_m", "acc_mm"),
         dev_splits=(("dev_matched", "_m"), ("dev_mismatched", "_mm")),
         test_splits=(("test_matched", "MNLI-m"), ("test_mismatched", "MNLI-mm"))),
    Task("qnli", "QNLI", NLI2, PAIR, PAIR_TEST, metrics=("acc",), paper_metric="acc",
         leaderboard_metrics=("acc",), zip_name="QNLIv2.zip"),
    # Table 7: "10 for RTE and STS".
    Task("rte", "RTE", NLI2, PAIR, PAIR_TEST, metrics=("acc",), paper_metric="acc", leaderboard_metrics=("acc",),
         epochs=10),
    Task("wnli", "WNLI", BINARY, PAIR, PAIR_TEST, metrics=("acc",), paper_metric="acc", leaderboard_metrics=("acc",)),
]}
# The paper's dev-set average leaves WNLI out (Table 8 and Tables 1-2 list CoLA SST MRPC STS QQP MNLI QNLI
# RTE), following BERT, whose authors found every system does no better than the majority class on it.
PAPER_AVERAGE_TASKS = ("cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte")


def get_task(name: str) -> Task:
    """The Task for a CLI name, case- and dash-insensitive ("SST-2" == "sst2"); a clear error otherwise."""
    key = name.lower().replace("-", "").replace("_", "")
    if key not in TASKS:
        raise ValueError(f"unknown task '{name}': choose from {', '.join(TASKS)}")
    return TASKS[key]


def task_metrics(task: Task, pred, gold, suffix: str = "") -> dict[str, float]:
    """The task's dev metrics on one split, x100 as in the paper's tables.

    Classification takes class ids, STS-B takes scores. `suffix` names MNLI's matched/mismatched splits.
    """
    pred, gold = np.asarray(pred), np.asarray(gold)
    if task.regression:
        out = {"pearson": pearson(pred, gold), "spearman": spearman(pred, gold)}
    else:
        out = {"acc": accuracy(pred, gold)}
        if "f1" in task.metrics:
            out["f1"] = f1(pred, gold)
        if "mcc" in task.metrics:
            out["mcc"] = matthews_corrcoef(pred, gold)
    return {name + suffix: 100 * value for name, value in out.items()}


def glue_score(results: dict[str, dict[str, float]], leaderboard: bool = False) -> float:
    """The GLUE average of per-task dev metrics {task name: task_metrics(...)}.

    Paper (default; section 3.1): "Spearman correlation for STS, Matthews correlation for CoLA, and
    accuracy for the other GLUE tasks", averaged over the tasks given, WNLI left out (see
    PAPER_AVERAGE_TASKS). The official code scores MRPC and QQP with its AccuracyScorer and MNLI on
    dev_matched, which is what `paper_metric` says.

    leaderboard=True: GLUE's own rule (Wang et al. 2019, section 4 / gluebenchmark.com): tasks with two
    metrics are first averaged into one task score -- MRPC (acc+F1)/2, QQP (acc+F1)/2, STS-B
    (Pearson+Spearman)/2, MNLI (matched+mismatched)/2 -- then the task scores are averaged, WNLI included.

    >>> glue_score({"mrpc": {"acc": 80.0, "f1": 86.0}, "stsb": {"pearson": 84.0, "spearman": 83.0}})
    81.5
    >>> glue_score({"mrpc": {"acc": 80.0, "f1": 86.0}, "stsb": {"pearson": 84.0, "spearman": 83.0}}, True)
    83.25
    """
    scores = []
    for name, metrics in results.items():
        task = get_task(name)
        if leaderboard:
            scores.append(sum(metrics[m] for m in task.leaderboard_metrics) / len(task.leaderboard_metrics))
        elif task.name in PAPER_AVERAGE_TASKS:
            scores.append(metrics[task.paper_metric])
    if not scores:
        raise ValueError(f"no task to average: the paper's GLUE score uses {', '.join(PAPER_AVERAGE_TASKS)}")
    return sum(scores) / len(scores)


@dataclass
class Example:
    """One GLUE row: text(s), a label (class id, STS-B score, or None on test), and where it came from."""
    index: str             # test rows: the id GLUE's submission files refer to; else the line number
    text_a: str
    text_b: str | None
    label: int | float | None


def read_tsv(path: Path) -> list[tuple[int, list[str]]]:
    """(1-based line number, fields) for each line of a GLUE TSV.

    GLUE's TSVs are not CSV: quotes are ordinary characters (MRPC and STS-B sentences contain unbalanced
    `"`), so fields are split on tabs with no quoting at all (the official code's csv.reader(quotechar=None)).
    utf-8-sig drops MRPC's byte-order mark; lines end at "\\n" only and a trailing "\\r" is dropped, so a
    stray carriage return inside a sentence does not split a row.
    """
    with open(path, encoding="utf-8-sig", newline="\n") as f:
        return [(i, line.rstrip("\n").rstrip("\r").split("\t")) for i, line in enumerate(f, start=1)]


def read_split(task: Task, folder, split: str, max_examples: int | None = None) -> list[Example]:
    """Read `{folder}/{split}.tsv` of `task` into Examples, checking every row.

    A malformed row (wrong number of fields, unknown label, a score that is not a number) raises
    ValueError naming the file and line. Symmetric pair tasks are NOT doubled here (see `add_swapped`).
    """
    path = Path(folder) / f"{split}.tsv"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found: --data_dir for {task.folder} must be the folder from GLUE's {task.folder} "
            f"download (train.tsv, {', '.join(s for s, _ in task.dev_splits)}.tsv); "
            f"leave out --data_dir to download it")
    cols = task.test_columns if split.startswith("test") else task.columns
    rows = read_tsv(path)
    if cols.header:
        if not rows:
            raise ValueError(f"{path} is empty: expected a header row then one example per line")
        width, rows = len(rows[0][1]), rows[1:]
    else:
        width = cols.width
    examples = []
    for line, fields in rows:
        if len(fields) != width:
            raise ValueError(f"{path}, line {line}: expected {width} tab-separated fields, found {len(fields)}")
        label = None
        if cols.label is not None:
            raw = fields[cols.label]
            if task.regression:
                try:
                    label = float(raw)
                except ValueError:
                    raise ValueError(f"{path}, line {line}: score '{raw}' is not a number") from None
            elif raw in task.labels:
                label = task.labels.index(raw)
            else:
                raise ValueError(f"{path}, line {line}: label '{raw}' is not one of {', '.join(task.labels)}")
        index = fields[0] if split.startswith("test") else str(line)
        examples.append(Example(index, fields[cols.a], None if cols.b is None else fields[cols.b], label))
        if max_examples is not None and len(examples) >= max_examples:
            break
    return examples


def add_swapped(task: Task, examples: list[Example]) -> list[Example]:
    """For MRPC and STS-B, append every pair again with its sentences swapped.

    The official code does this for training (configure_finetuning.py, double_unordered=True: "for tasks
    like paraphrase where sentence order doesn't matter, train the model on both sentence orderings");
    the paper does not mention it. It doubles the steps of an epoch.
    """
    if not task.symmetric:
        return examples
    return examples + [Example(e.index, e.text_b, e.text_a, e.label) for e in examples]
