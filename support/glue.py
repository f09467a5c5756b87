"""GLUE (Wang et al. 2019), the benchmark the paper scores its discriminators on (section 3.1).
Nothing here is a model; finetune.py fine-tunes on what this reads.

    metrics      accuracy, F1, Matthews correlation, Pearson, Spearman   (numpy, by hand)
    tasks        the nine tasks, how each is scored, the GLUE score
    reading      GLUE's TSVs into Examples, every row checked
    download     GLUE's zips (and MRPC's source files) into a cache, once
    inputs       a task's splits tokenised once ([CLS] A [SEP] B [SEP]), padded per batch
    submission   test predictions in GLUE's format
"""
import math
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from support.plumbing import atomic_write, download, extract_zip, pad_batch

# -----------------------------------------------------------------------------
# Metrics. Each returns a plain float on the raw scale (accuracy in [0, 1], correlations in
# [-1, 1]); `task_metrics` multiplies by 100, the scale of the paper's tables. A metric whose
# denominator is 0 (F1 with no positive prediction nor label, MCC with an empty margin, a
# correlation with a constant input) is 0, as scikit-learn's zero_division=0 (scipy's correlations
# return nan).


def accuracy(pred, gold) -> float:
    """Fraction of exact matches: acc = (1/n) * sum_i [pred_i == gold_i].

    >>> accuracy([1, 0, 1, 1], [1, 1, 1, 0])
    0.5
    """
    return float(np.mean(np.asarray(pred) == np.asarray(gold)))


def _confusion(pred, gold, positive=1):
    """Binary confusion counts (TP, FP, FN, TN) with `positive` as the positive class."""
    p, g = np.asarray(pred) == positive, np.asarray(gold) == positive
    return int(np.sum(p & g)), int(np.sum(p & ~g)), int(np.sum(~p & g)), int(np.sum(~p & ~g))


def f1(pred, gold, positive=1) -> float:
    """F1 of the positive class (GLUE's F1 for MRPC and QQP): F1 = 2TP / (2TP + FP + FN).

    >>> f1([1, 1, 0, 0], [1, 0, 1, 0])  # TP=1, FP=1, FN=1: 2/(2+1+1)
    0.5
    """
    tp, fp, fn, _ = _confusion(pred, gold, positive)
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


def matthews_corrcoef(pred, gold) -> float:
    """Matthews correlation of binary labels (GLUE's metric for CoLA):

        MCC = (TP*TN - FP*FN) / sqrt((TP+FP) (TP+FN) (TN+FP) (TN+FN))

    >>> matthews_corrcoef([1, 1, 0, 0, 1], [1, 0, 0, 1, 1])  # TP=2 FP=1 FN=1 TN=1: 1/sqrt(36)
    0.16666666666666666
    """
    tp, fp, fn, tn = _confusion(pred, gold)
    denominator = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    return 0.0 if denominator == 0 else (tp * tn - fp * fn) / math.sqrt(denominator)


def pearson(x, y) -> float:
    """Pearson correlation r = sum (x-mean x)(y-mean y) / sqrt(sum (x-mean x)^2 * sum (y-mean y)^2).

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
    starts = np.r_[0, np.flatnonzero(xs[1:] != xs[:-1]) + 1]  # each run of equal values' start
    ends = np.r_[starts[1:], len(x)]                            # one past its last index
    ranks = np.empty(len(x), dtype=np.float64)
    # the mean of the 1-based ranks start+1 .. end, for each value of the run
    ranks[order] = np.repeat((starts + ends - 1) / 2 + 1, ends - starts)
    return ranks


def spearman(x, y) -> float:
    """Spearman's rho: the Pearson correlation of the average ranks (GLUE's main metric for STS-B).

    >>> round(spearman([1, 2, 2, 3], [1, 3, 2, 4]), 6)  # ranks (1,2.5,2.5,4), (1,3,2,4)
    0.948683
    >>> round(4.5 / (4.5 * 5) ** 0.5, 6)  # by hand: sum dx dy / sqrt(sum dx^2 sum dy^2)
    0.948683
    """
    return pearson(average_ranks(x), average_ranks(y))


# -----------------------------------------------------------------------------
# The nine GLUE tasks and their TSV layouts, as GLUE's zips ship them.


@dataclass(frozen=True)
class Columns:
    """Where one kind of GLUE TSV keeps its fields (0-based; negative indexes count from the
    end)."""
    a: int                    # first sentence
    b: int | None             # second sentence; None for single-sentence tasks (CoLA, SST-2)
    label: int | None = None  # None in test files: GLUE keeps their labels hidden
    header: bool = True       # every GLUE file has a header row except CoLA's train/dev
    width: int | None = None  # fields per row when there is no header to count them from


@dataclass(frozen=True)
class Task:
    """One GLUE task: where its files are, how to read them, how it is scored."""
    name: str                          # CLI name, e.g. "sst2"
    folder: str                        # folder inside GLUE's zip and in --data-dir, e.g. "SST-2"
    labels: tuple[str, ...] | None     # as written in the TSV, index = class id; None: regression
    columns: Columns                   # layout of train.tsv and dev*.tsv
    metrics: tuple[str, ...]           # GLUE's (its leaderboard averages them); the paper's first
    test_columns: Columns | None = None  # layout of test*.tsv; None: the sentences as `columns`
    dev_splits: tuple[tuple[str, str], ...] = (("dev", ""),)  # (file stem, metric names' suffix)
    test_splits: tuple[tuple[str, str], ...] = (("test", ""),)  # (file stem, submission file stem)
    epochs: int = 3                    # Table 7: "3 for other tasks" ("10 for RTE and STS")
    symmetric: bool = False            # sentence order means nothing (official double_unordered)
    zip_name: str = ""                 # file under the GLUE download URL; "" = f"{folder}.zip"

    @property
    def paper_metric(self) -> str:
        """The one number the paper reports for the task (section 3.1)."""
        return self.metrics[0]

    @property
    def regression(self) -> bool:
        return self.labels is None

    @property
    def num_outputs(self) -> int:
        return 1 if self.labels is None else len(self.labels)


BINARY = ("0", "1")
NLI2 = ("entailment", "not_entailment")
PAIR = Columns(a=1, b=2, label=3)        # index, sentence1, sentence2, label   (QNLI, RTE, WNLI)
# Column positions follow the official code's readers
# (finetune/classification/classification_tasks.py).
TASKS: dict[str, Task] = {t.name: t for t in [
    # CoLA train/dev: no header; source, label, original label mark, sentence. Test: index,
    # sentence.
    Task("cola", "CoLA", BINARY, Columns(a=3, b=None, label=1, header=False, width=4), ("mcc",),
         test_columns=Columns(a=1, b=None)),
    # SST-2: sentence, label. Test: index, sentence.
    Task("sst2", "SST-2", BINARY, Columns(a=0, b=None, label=1), ("acc",),
         test_columns=Columns(a=1, b=None)),
    # MRPC: header starts with a UTF-8 byte-order mark; Quality, #1 ID, #2 ID, #1 String, #2 String.
    # Test: index, #1 ID, #2 ID, #1 String, #2 String. Not hosted as a zip (licence): see
    # _download_mrpc.
    Task("mrpc", "MRPC", BINARY, Columns(a=3, b=4, label=0), ("acc", "f1"), symmetric=True),
    # STS-B: 10 columns index, genre, filename, year, old_index, source1, source2, sentence1,
    # sentence2, score (0-5). Test has the first 9.
    Task("stsb", "STS-B", None, Columns(a=7, b=8, label=9), ("spearman", "pearson"), epochs=10,
         symmetric=True),
    # QQP: id, qid1, qid2, question1, question2, is_duplicate. Test: id, question1, question2.
    Task("qqp", "QQP", BINARY, Columns(a=3, b=4, label=5), ("acc", "f1"),
         test_columns=Columns(a=1, b=2), zip_name="QQP-clean.zip"),
    # MNLI: index, promptID, pairID, genre, 4 parse columns, sentence1, sentence2, then 1 (train) or
    # 5 (dev) annotator labels, gold_label last. Test: the first 10 columns.
    Task("mnli", "MNLI", ("contradiction", "entailment", "neutral"), Columns(a=8, b=9, label=-1),
         ("acc_m", "acc_mm"), dev_splits=(("dev_matched", "_m"), ("dev_mismatched", "_mm")),
         test_splits=(("test_matched", "MNLI-m"), ("test_mismatched", "MNLI-mm"))),
    Task("qnli", "QNLI", NLI2, PAIR, ("acc",), zip_name="QNLIv2.zip"),
    Task("rte", "RTE", NLI2, PAIR, ("acc",), epochs=10),
    Task("wnli", "WNLI", BINARY, PAIR, ("acc",)),
]}
# The paper's dev-set average leaves WNLI out (Table 8 and Tables 1-2 list CoLA SST MRPC STS QQP
# MNLI QNLI RTE), following BERT, whose authors found every system does no better than the majority
# class on it.
PAPER_AVERAGE_TASKS = ("cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte")
STSB_MAX = 5.0  # STS-B scores lie in [0, 5]; the official RegressionTask trains on label / 5


def get_task(name: str) -> Task:
    """The Task for a CLI name, case- and dash-insensitive ("SST-2" == "sst2"); a clear error
    otherwise."""
    key = name.lower().replace("-", "").replace("_", "")
    if key not in TASKS:
        raise ValueError(f"unknown task '{name}': choose from {', '.join(TASKS)}")
    return TASKS[key]


def task_metrics(task: Task, pred, gold, suffix: str = "") -> dict[str, float]:
    """The task's dev metrics on one split (its GLUE metrics, and accuracy for every classification
    task), x100 as in the paper's tables. Classification takes class ids, STS-B takes scores.
    `suffix` names MNLI's matched/mismatched splits.
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

    leaderboard=True: GLUE's own rule (Wang et al. 2019, section 4 / gluebenchmark.com): each task's
    `metrics` are averaged into its score (MRPC and QQP: acc and F1, STS-B: Pearson and Spearman,
    MNLI: matched and mismatched), then the task scores, WNLI included.

    >>> medians = {"mrpc": {"acc": 80.0, "f1": 86.0}, "stsb": {"pearson": 84.0, "spearman": 83.0}}
    >>> glue_score(medians)
    81.5
    >>> glue_score(medians, leaderboard=True)
    83.25
    """
    scores = []
    for name, metrics in results.items():
        task = get_task(name)
        if leaderboard:
            scores.append(sum(metrics[m] for m in task.metrics) / len(task.metrics))
        elif task.name in PAPER_AVERAGE_TASKS:
            scores.append(metrics[task.paper_metric])
    if not scores:
        raise ValueError(f"no task to average: the paper's GLUE score uses "
                         f"{', '.join(PAPER_AVERAGE_TASKS)}")
    return sum(scores) / len(scores)


# -----------------------------------------------------------------------------
# Reading: GLUE's TSVs into Examples.


@dataclass
class Example:
    """One GLUE row: text(s), a label (class id, STS-B score, or None on test), and where it came
    from."""
    index: str             # test rows: the id GLUE's submission files use; else the line number
    text_a: str
    text_b: str | None
    label: int | float | None


def read_tsv(path: Path, encoding: str = "utf-8-sig") -> list[tuple[int, list[str]]]:
    """(1-based line number, fields) for each line of a GLUE TSV.

    GLUE's TSVs are not CSV: quotes are ordinary characters (MRPC and STS-B sentences contain
    unbalanced `"`), so fields are split on tabs with no quoting at all (the official code's
    csv.reader(quotechar=None)). utf-8-sig drops MRPC's byte-order mark; lines end at "\\n" only and
    a trailing "\\r" is dropped, so a stray carriage return inside a sentence does not split a row.
    """
    with open(path, encoding=encoding, newline="\n") as f:
        return [(i, line.rstrip("\n").rstrip("\r").split("\t"))
                for i, line in enumerate(f, start=1)]


def parse_label(task: Task, raw: str, where: str) -> int | float:
    """A class id (the label's index in task.labels) or an STS-B score; ValueError naming `where`
    otherwise."""
    if task.regression:
        try:
            score = float(raw)
        except ValueError:
            raise ValueError(f"{where}: score '{raw}' is not a number") from None
        if not math.isfinite(score):
            raise ValueError(f"{where}: score '{raw}' is not a finite number; fix or remove that "
                             f"row")
        return score
    if raw not in task.labels:
        raise ValueError(f"{where}: label '{raw}' is not one of {', '.join(task.labels)}")
    return task.labels.index(raw)


def read_split(task: Task, folder, split: str, max_examples: int | None = None) -> list[Example]:
    """Read `{folder}/{split}.tsv` of `task` into Examples, checking every row.

    A malformed row (wrong number of fields, unknown label, a score that is not a number) raises
    ValueError naming the file and line. Symmetric pair tasks are NOT doubled here (see
    `add_swapped`).
    """
    path = Path(folder) / f"{split}.tsv"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found: --data-dir for {task.folder} must be the folder from GLUE's "
            f"{task.folder} download (train.tsv, {', '.join(s for s, _ in task.dev_splits)}.tsv); "
            f"leave out --data-dir to download it")
    test = split.startswith("test")
    cols = (task.test_columns or Columns(task.columns.a, task.columns.b)) if test else task.columns
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
            raise ValueError(f"{path}, line {line}: expected {width} tab-separated fields, found "
                             f"{len(fields)}")
        label = None if test else parse_label(task, fields[cols.label], f"{path}, line {line}")
        index = fields[0] if test else str(line)
        text_b = None if cols.b is None else fields[cols.b]
        examples.append(Example(index, fields[cols.a], text_b, label))
        if max_examples is not None and len(examples) >= max_examples:
            break
    return examples


def add_swapped(task: Task, examples: list[Example]) -> list[Example]:
    """For MRPC and STS-B, append every pair again with its sentences swapped.

    The official code does this for training (configure_finetuning.py, double_unordered=True: "for
    tasks like paraphrase where sentence order doesn't matter, train the model on both sentence
    orderings"); the paper does not mention it. It doubles the steps of an epoch.
    """
    if not task.symmetric:
        return examples
    return examples + [Example(e.index, e.text_b, e.text_a, e.label) for e in examples]


# -----------------------------------------------------------------------------
# Download: GLUE's public files into a cache, once (plumbing.download and extract_zip: a file or
# folder that exists is complete).

# The URLs of GLUE's own download script (download_glue_data.py, W4ngatang's gist). MRPC is not
# redistributed as a zip (licence): like that script we take SentEval's copy of the Microsoft files
# and split off GLUE's dev set by its list of sentence-id pairs.
GLUE_BASE_URL = "https://dl.fbaipublicfiles.com/glue/data"          # {zip_name}, mrpc_dev_ids.tsv
# msr_paraphrase_{train,test}.txt
MRPC_BASE_URL = "https://dl.fbaipublicfiles.com/senteval/senteval_data"
DEFAULT_CACHE = Path("cache") / "glue"


def task_folder(task: Task, data_dir, cache_dir, base_url: str, mrpc_base_url: str) -> Path:
    """Where `task`'s TSVs are: --data-dir itself, its GLUE-style subfolder, or a cached
    download."""
    if data_dir is None:
        return download_task(task, cache_dir, base_url, mrpc_base_url)
    data_dir = Path(data_dir)
    if (data_dir / task.folder / "train.tsv").is_file():
        return data_dir / task.folder
    if not (data_dir / "train.tsv").is_file():
        raise FileNotFoundError(
            f"{data_dir / task.folder / 'train.tsv'} not found, nor {data_dir / 'train.tsv'}: "
            f"--data-dir for {task.folder} must be the folder from GLUE's {task.folder} download, "
            f"or a folder holding it as {task.folder}/; leave out --data-dir to download it")
    return data_dir


def download_task(task: Task, cache_dir=DEFAULT_CACHE, base_url: str = GLUE_BASE_URL,
                  mrpc_base_url: str = MRPC_BASE_URL) -> Path:
    """Download and unpack `task` under `cache_dir` once; return the folder holding its TSVs."""
    cache_dir = Path(cache_dir)
    if task.name == "mrpc":
        return _download_mrpc(cache_dir, base_url, mrpc_base_url)
    zip_name = task.zip_name or f"{task.folder}.zip"
    zipped = download(f"{base_url}/{zip_name}", cache_dir / zip_name, desc=f"GLUE {task.folder}")
    unpacked = extract_zip(zipped, cache_dir / Path(zip_name).stem)
    folder = unpacked / task.folder  # GLUE's zips hold one top folder named after the task
    if not (folder / "train.tsv").is_file():
        raise FileNotFoundError(f"{cache_dir / zip_name} has no {task.folder}/train.tsv: it is not "
                                f"GLUE's {task.folder} archive; delete {unpacked} and the zip and "
                                f"try again")
    return folder


def _download_mrpc(cache_dir: Path, base_url: str, mrpc_base_url: str) -> Path:
    """GLUE's MRPC folder built as download_glue_data.py's format_mrpc builds it:

    dev.tsv / train.tsv = the rows of msr_paraphrase_train.txt whose (#1 ID, #2 ID) pair is / is not
    in mrpc_dev_ids.tsv, under the original header (with its byte-order mark); test.tsv = the rows
    of msr_paraphrase_test.txt without their label, numbered from 0 in a new first column "index".
    """
    folder = cache_dir / "MRPC"
    if (folder / "train.tsv").is_file():
        return folder
    raw = cache_dir / "MRPC-raw"
    files = {name: download(f"{url}/{name}", raw / name, desc=f"GLUE MRPC {name}")
             for url, name in [(mrpc_base_url, "msr_paraphrase_train.txt"),
                               (mrpc_base_url, "msr_paraphrase_test.txt"),
                               (base_url, "mrpc_dev_ids.tsv")]}
    # The rows that are not blank; "utf-8" keeps the byte-order mark of the header, as GLUE's files
    # have it.
    rows = {name: [fields for _, fields in read_tsv(path, "utf-8") if fields != [""]]
            for name, path in files.items()}
    dev_ids = {tuple(fields) for fields in rows["mrpc_dev_ids.tsv"]}
    header, *train_rows = rows["msr_paraphrase_train.txt"]
    train, dev = [header], [header]
    for fields in train_rows:
        (dev if tuple(fields[1:3]) in dev_ids else train).append(fields)
    test = [["index", "#1 ID", "#2 ID", "#1 String", "#2 String"]]
    test += [[str(i), *fields[1:]] for i, fields in enumerate(rows["msr_paraphrase_test.txt"][1:])]
    # train.tsv last: a folder with train.tsv is complete
    for name, out in [("dev.tsv", dev), ("test.tsv", test), ("train.tsv", train)]:
        atomic_write(folder / name, "".join("\t".join(fields) + "\n" for fields in out))
    return folder


# -----------------------------------------------------------------------------
# GLUE's splits as the model's inputs: tokenised once, padded per batch


@dataclass
class Encoded:
    """A split tokenised once: [CLS] A [SEP] B [SEP] ids, segment ids, labels and row ids."""
    ids: list[list[int]]
    segments: list[list[int]]
    labels: np.ndarray | None   # class ids or STS-B scores; None on test splits
    index: list[str]

    def __len__(self):
        return len(self.ids)

    def batch(self, rows, pad_id: int, device):
        """The chosen rows as the model's inputs (pad_batch)."""
        ids = [self.ids[r] for r in rows]
        segments = [self.segments[r] for r in rows]
        return pad_batch(ids, segments, pad_id, device)


def encode_examples(examples: list[Example], tok, max_len: int) -> Encoded:
    pairs = [tok.encode_pair(e.text_a, e.text_b, max_len=max_len) for e in examples]
    labels = None
    if not examples or examples[0].label is not None:
        labels = np.array([e.label for e in examples])
    ids = [p[0] for p in pairs]
    segments = [p[1] for p in pairs]
    return Encoded(ids, segments, labels, [e.index for e in examples])


class Splits(NamedTuple):
    """A task's splits as model inputs."""
    train: Encoded
    dev: dict[str, Encoded]   # every dev split (MNLI: dev_matched, dev_mismatched)
    test: dict[str, Encoded]  # the test splits that exist; their labels are GLUE's secret


def prepare_task(task: Task, folder: Path, tok, max_len: int, max_train_examples: int | None = None,
                 double_unordered: bool = False) -> Splits:
    """Read and tokenise train (doubled for MRPC/STS-B with double_unordered), the dev splits, and
    the test splits that exist."""
    splits = {"train": read_split(task, folder, "train", max_train_examples)}
    splits.update({s: read_split(task, folder, s) for s, _ in task.dev_splits})
    for split, examples in splits.items():
        if not examples:
            raise ValueError(f"{folder / (split + '.tsv')} has no examples (a header and nothing "
                             f"else?)")
    if double_unordered:
        splits["train"] = add_swapped(task, splits["train"])
    encoded = {s: encode_examples(ex, tok, max_len) for s, ex in splits.items()}
    test = {s: encode_examples(read_split(task, folder, s), tok, max_len)
            for s, _ in task.test_splits if (folder / f"{s}.tsv").is_file()}
    return Splits(encoded.pop("train"), encoded, test)


# -----------------------------------------------------------------------------
# Submission files


def write_submission(task: Task, path: Path, index: list[str], pred: np.ndarray):
    """GLUE's submission format: a header "index<TAB>prediction", then one row per test example, the
    label as written in the task's files ("entailment", "1", ...) or, for STS-B, a score clipped to
    [0, 5]."""
    if task.regression:
        values = [f"{min(STSB_MAX, max(0.0, float(p))):.3f}" for p in pred]
    else:
        values = [task.labels[int(p)] for p in pred]
    rows = "".join(f"{i}\t{v}\n" for i, v in zip(index, values))
    atomic_write(path, "index\tprediction\n" + rows)
