"""Fine-tune a pre-trained ELECTRA (or BERT) discriminator on SQuAD 1.1 / 2.0, and score it as SQuAD
does.

Clark et al. 2020 (arXiv 2003.10555), section 3.3 and Table 4, report SQuAD 1.1 and 2.0 dev EM/F1
next to GLUE. This file is the pipeline in the order a reader meets it:

    evaluation   SQuAD's official evaluation written by hand: normalisation, EM, F1, HasAns/NoAns
                 and the best no-answer threshold
                 (evaluate-v2.0.py; v1.1 scores are its HasAns subset)
    data         the official JSON files (download once, or --data-dir), read into examples
    features     whitespace words with character offsets, WordPiece, doc-stride windows
                 of 512 tokens
    model        the start/end span head on the discriminator's states
    answers      the n-best span search, the null score for 2.0, predictions.json / null_odds.json
    training     Table 7's recipe in finetune.py's loop (its lr, layer-wise decay and optimizer),
                 2 epochs, a checkpoint after each epoch to resume from
    main         the CLI

    python squad.py --task squad1 --init path/to/hf-electra-small-discriminator
    python squad.py --task squad2 --init ckpt.pt --data-dir squad_data/
    python squad.py --task squad2 --init google/electra-small-discriminator  # the hub

Run the same command again after Ctrl-C (or a crash) and it resumes from the last finished epoch;
--restart starts over.
"""
import argparse
import collections
import json
import math
import re
import string
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

from support import cli

if __name__ == "__main__":  # the flags first: torch takes seconds to load, a typo answers at once
    cli.squad_args(description=__doc__.split("\n\n")[0])

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

from electra import ElectraConfig, Encoder
from finetune import FinetuneConfig, encoder_config, optimizer_and_schedule, recipe_for
from support.finetune_runs import (
    LOSS_WINDOW,
    STOPPING,
    Stopped,
    as_json,
    check_stop,
    differences,
    diverged,
    file_sha256,
    init_identity,
    refuse,
    with_recipe_defaults,
)
from support.hf import HubError, Pretrained, load_init
from support.plumbing import (
    DownloadError,
    StopOnSignal,
    atomic_write,
    download,
    mixed_precision,
    pad_batch,
    rng_state,
    set_rng_state,
)
from tokenizer import Tokenizer, is_punctuation, is_whitespace

# --------------------------------------------------------------------------------------------------
# The official evaluation (SQuAD's evaluate-v2.0.py, which for answerable questions scores as
# v1.1's). Scores are on the 0-100 scale of the paper's Table 4.
# --------------------------------------------------------------------------------------------------

ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)  # evaluate-v2.0.py remove_articles
# ASCII punctuation only, as the official script
PUNCTUATION = set(string.punctuation)


def normalize_answer(s: str) -> str:
    """Lowercase, drop punctuation, drop the articles a/an/the, collapse whitespace (in that order).

    >>> normalize_answer("  The Eiffel-Tower, an icon!")
    'eiffeltower icon'
    """
    s = "".join(ch for ch in s.lower() if ch not in PUNCTUATION)
    return " ".join(ARTICLES.sub(" ", s).split())


def exact_match(prediction: str, gold: str) -> int:
    """1 when the normalised strings are equal.

    >>> exact_match("the Denver Broncos", "Denver Broncos!")
    1
    """
    return int(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str) -> float:
    """Token-overlap F1 of the normalised answers: P = common/|pred|, R = common/|gold|, F1 =
    2PR/(P+R).

    Tokens are counted with multiplicity (a bag, as the official Counter &). When either side is
    empty (SQuAD 2.0's no-answer), F1 is 1 if both are empty, else 0.

    >>> f1_score("Denver Broncos won",
    ...          "the Denver Broncos")  # common 2; P = 2/3, R = 2/2: 2*(2/3)/(5/3)
    0.8
    """
    pred, gold_tokens = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not gold_tokens:
        return float(pred == gold_tokens)
    common = sum((collections.Counter(pred) & collections.Counter(gold_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def gold_answers(qa: dict) -> list[str]:
    """A question's gold answer texts; [""] when it has none that survive normalisation (2.0's
    no-answer).

    >>> gold_answers({"answers": [{"text": "the"}]}), gold_answers({"answers": [{"text": "Paris"}]})
    ([''], ['Paris'])
    """
    answers = [a["text"] for a in qa.get("answers", []) if normalize_answer(a["text"])]
    return answers or [""]


def raw_scores(dataset: list[dict], predictions: dict[str, str]) -> tuple[dict, dict]:
    """Per question id: the best EM and the best F1 of its prediction over the gold answers (0/1
    scale).

    A question without a prediction is a clear error (the official script prints and skips it).
    """
    exact, f1 = {}, {}
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                if qa["id"] not in predictions:
                    raise ValueError(f"no prediction for question {qa['id']}: predictions must "
                                     f"answer every question of the dataset (\"\" for no answer)")
                golds, pred = gold_answers(qa), predictions[qa["id"]]
                exact[qa["id"]] = max(exact_match(pred, g) for g in golds)
                f1[qa["id"]] = max(f1_score(pred, g) for g in golds)
    return exact, f1


def has_answer(dataset: list[dict]) -> dict[str, bool]:
    """Question id -> whether it has a gold answer (the HasAns/NoAns split of SQuAD 2.0)."""
    return {qa["id"]: gold_answers(qa) != [""]
            for a in dataset for p in a["paragraphs"] for qa in p["qas"]}


def apply_no_answer_threshold(scores: dict, null_odds: dict, answerable: dict,
                              threshold: float) -> dict:
    """Where null_odds > threshold the prediction becomes "no answer": it scores 1 on NoAns
    questions, 0 on HasAns ones (evaluate-v2.0.py apply_no_ans_threshold)."""
    return {q: float(not answerable[q]) if null_odds[q] > threshold else s
            for q, s in scores.items()}


def best_threshold(predictions: dict, scores: dict, null_odds: dict,
                   answerable: dict) -> tuple[float, float]:
    """The null-odds threshold that maximises the score, and that score x100 (evaluate-v2.0.py
    find_best_thresh).

    Start with every question predicted "no answer" (score = #NoAns); lower the threshold past each
    question in order of increasing null odds, which turns its answer on: a HasAns question gains
    its score, a NoAns question loses 1 if the model gave a non-empty answer. Keep the best running
    score.

    Worked example: q1 HasAns odds -2 score 1, q2 NoAns odds 0 answer "x", q3 HasAns odds 3 score
    0.5. Start 1 (q2); after q1: 2 (thresh -2); after q2: 1; after q3: 1.5. Best 2/3, thresh -2.

    >>> best_threshold({"1": "a", "2": "x", "3": "b"}, {"1": 1, "2": 0, "3": 0.5},
    ...                {"1": -2.0, "2": 0.0, "3": 3.0}, {"1": True, "2": False, "3": True})
    (66.66666666666667, -2.0)
    """
    score = best = sum(not answerable[q] for q in scores)
    # the official starting value: with no question answered, any threshold below all odds
    threshold = 0.0
    for q in sorted(null_odds, key=null_odds.get):
        if q not in scores:
            continue
        score += scores[q] if answerable[q] else -1 if predictions[q] else 0
        if score > best:
            best, threshold = score, null_odds[q]
    return 100.0 * best / len(scores), threshold


def evaluate(dataset: list[dict], predictions: dict[str, str],
             null_odds: dict[str, float] | None = None, null_threshold: float = 1.0) -> dict:
    """The official evaluation's numbers (x100): exact, f1, total, HasAns_*/NoAns_* when present,
    and with null_odds the best_exact/best_f1 and their thresholds.

    `dataset` is the "data" list of a SQuAD JSON file; `null_odds` maps question ids to the model's
    null-answer odds (evaluate-v2.0.py's na_prob; None: every odds 0, as the official script). Like
    the official script, the main scores count an answer as "no answer" only where odds >
    null_threshold (1.0).
    """
    exact, f1 = raw_scores(dataset, predictions)
    answerable = has_answer(dataset)
    odds = null_odds if null_odds is not None else {q: 0.0 for q in exact}
    missing = [q for q in exact if q not in odds]
    if missing:
        raise ValueError(f"no null odds for question {missing[0]} ({len(missing)} missing)")
    exact_t = apply_no_answer_threshold(exact, odds, answerable, null_threshold)
    f1_t = apply_no_answer_threshold(f1, odds, answerable, null_threshold)

    def totals(qids, prefix=""):
        return {f"{prefix}exact": 100.0 * sum(exact_t[q] for q in qids) / len(qids),
                f"{prefix}f1": 100.0 * sum(f1_t[q] for q in qids) / len(qids),
                f"{prefix}total": len(qids)}

    out = totals(list(exact))
    for prefix, wanted in (("HasAns_", True), ("NoAns_", False)):
        qids = [q for q in exact if answerable[q] == wanted]
        if qids:
            out.update(totals(qids, prefix))
    if null_odds is not None:
        out["best_exact"], out["best_exact_thresh"] = best_threshold(
            predictions, exact, odds, answerable)
        out["best_f1"], out["best_f1_thresh"] = best_threshold(predictions, f1, odds, answerable)
    return out


# --------------------------------------------------------------------------------------------------
# Data: the official JSON files, downloaded once into the cache, or read from --data-dir.
# --------------------------------------------------------------------------------------------------

SQUAD_BASE_URL = "https://rajpurkar.github.io/SQuAD-explorer/dataset"  # the official site's files
# (train file, dev file) per task, and their sizes in bytes, checked after a download from
# SQUAD_BASE_URL (the sizes the site serves; the same figures as torchtext's SQuAD downloader and
# wget logs of the files).
SQUAD_FILES = {"squad1": ("train-v1.1.json", "dev-v1.1.json"),
               "squad2": ("train-v2.0.json", "dev-v2.0.json")}
SQUAD_SIZES = {"train-v1.1.json": 30_288_272, "dev-v1.1.json": 4_854_279,
               "train-v2.0.json": 42_123_633, "dev-v2.0.json": 4_370_528}
DEFAULT_CACHE = Path("cache") / "squad"


def squad_files(task: str, data_dir=None, cache_dir=DEFAULT_CACHE,
                base_url: str = SQUAD_BASE_URL) -> tuple[Path, Path]:
    """(train, dev) JSON paths: from --data-dir, or downloaded into `cache_dir` once
    (plumbing.download: a ".part" file renamed when complete; the official files' sizes checked, a
    mirror's by Content-Length)."""
    names = SQUAD_FILES[task]
    if data_dir is not None:
        paths = tuple(Path(data_dir) / n for n in names)
        for path in paths:
            if not path.is_file():
                raise FileNotFoundError(f"--data-dir {data_dir} has no {path.name}: put the "
                                        f"official {' and '.join(names)} there, or leave "
                                        f"--data-dir out to download them")
        return paths
    return tuple(download(f"{base_url}/{n}", Path(cache_dir) / n,
                          SQUAD_SIZES[n] if base_url == SQUAD_BASE_URL else None,
                          desc=f"SQuAD {n}") for n in names)


def read_dataset(path: Path) -> list[dict]:
    """The "data" list of a SQuAD JSON file (articles -> paragraphs -> qas), with a clear error if
    it is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))["data"]
        # every field the pipeline reads, so a wrong file fails here, not mid-run
        for article in data:
            for paragraph in article["paragraphs"]:
                if not isinstance(paragraph["context"], str):
                    raise TypeError("a context is not a string")
                for qa in paragraph["qas"]:
                    qa["id"], qa["question"]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as e:
        raise ValueError(f"{path} is not a SQuAD JSON file ({type(e).__name__}: {e}); expected "
                         f"{{\"data\": [{{\"paragraphs\": [{{\"context\", \"qas\": [{{\"id\", "
                         f"\"question\", \"answers\"}}]}}]}}]}}") from None
    return data


@dataclass
class Example:
    """One question on one context, the context cut into pieces with their character offsets."""
    qid: str
    question: str
    context: str
    pieces: list[tuple[int, int]]   # [start, end) character offsets of each piece of the context
    # first and last piece of the (first) gold answer; None: no answer
    answer: tuple[int, int] | None
    answer_text: str = ""           # that answer's text, to find its exact tokens inside the pieces


def context_pieces(context: str) -> list[tuple[int, int]]:
    """Cut the context at whitespace and around every punctuation character, keeping character
    offsets.

    WordPiece never joins across these cuts (basic_tokenize splits there too), so every token
    belongs to exactly one piece, and a span of tokens maps back to context[start of first piece :
    end of last]. The official code cuts at whitespace only and then guesses the answer's characters
    inside the word (get_final_text); cutting at punctuation as well makes the guess unnecessary:
    "(1985)." -> "1985".

    >>> c = "Born (1985), he"; [c[a:b] for a, b in context_pieces(c)]
    ['Born', '(', '1985', ')', ',', 'he']
    """
    pieces, start = [], None
    for i, ch in enumerate(context):
        if is_whitespace(ch) or is_punctuation(ch):
            if start is not None:
                pieces.append((start, i))
                start = None
            if not is_whitespace(ch):
                pieces.append((i, i + 1))
        elif start is None:
            start = i
    if start is not None:
        pieces.append((start, len(context)))
    return pieces


def read_examples(dataset: list[dict], max_examples: int | None = None,
                  training: bool = False) -> list[Example]:
    """Examples of every question; the answer is the first gold answer's pieces (training uses it).

    training=True drops a question whose answer_start does not point at its answer text in the
    context, as the official code drops (and counts) them, rather than teaching the model "no
    answer" there.
    """
    examples = []
    for article in dataset:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            pieces = context_pieces(context)
            for qa in paragraph["qas"]:
                answer = None
                if qa.get("answers") and not qa.get("is_impossible", False):
                    first = qa["answers"][0]
                    a, b = first["answer_start"], first["answer_start"] + len(first["text"])
                    # pieces it overlaps
                    inside = [i for i, (s, e) in enumerate(pieces) if s < b and e > a]
                    if training and (not inside or context[a:b] != first["text"]):
                        continue
                    answer = (inside[0], inside[-1]) if inside else None
                examples.append(Example(qa["id"], qa["question"], context, pieces, answer,
                                        qa["answers"][0]["text"] if answer is not None else ""))
                if max_examples is not None and len(examples) >= max_examples:
                    return examples
    return examples


def subset(dataset: list[dict], qids: set[str]) -> list[dict]:
    """The dataset with only the questions in `qids` (to score a --max-dev-examples prefix)."""
    return [{"paragraphs": [{**p, "qas": [qa for qa in p["qas"] if qa["id"] in qids]}
                            for p in a["paragraphs"]]}
            for a in dataset]


# --------------------------------------------------------------------------------------------------
# Features: [CLS] question [SEP] window of the context [SEP], windows doc_stride tokens apart.
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SquadConfig:
    """SQuAD's settings, as the official configure_finetuning.py and the paper's Table 7."""
    max_seq_len: int = 512  # tokens per window (official max_seq_length; GLUE uses 128)
    doc_stride: int = 128  # official doc_stride: a new window every N context tokens
    max_query_len: int = 64  # official max_query_length: longer questions are cut
    max_answer_len: int = 30  # official max_answer_length, in tokens
    n_best: int = 20  # official n_best_size: top start and end positions searched
    epochs: int = 2  # Table 7 "Train Epochs": 2 for SQuAD
    # SQuAD 2.0 (official configure_finetuning.py): answerable_classifier=True,
    # answerable_uses_start_logits=True, answerable_weight=0.5; qa_na_threshold=-2.75 is its "no
    # answer" cut on the null odds.
    answerable_classifier: bool = True  # False: BERT's null score ([CLS] span minus the best span)
    independent_ends: bool = False  # BERT's span head, not the official joint_prediction=True
    beam: int = 20  # official beam_size: starts (and ends per start) the joint head keeps
    joint_hidden: int = 512  # width of the joint end head's GELU layer (official "qa_hidden", 512)
    answerable_weight: float = 0.5  # weight of the answerability loss beside the span loss
    # width of the classifier's GELU layer (official dense(.., 512, gelu))
    answerable_hidden: int = 512
    # 2.0: null odds above it are "no answer" (official qa_na_threshold)
    null_threshold: float = -2.75


def check_squad_config(cfg: SquadConfig) -> None:
    """One line naming the flag of a value out of its range."""
    if cfg.max_seq_len < 5:
        raise SystemExit(f"--max-seq-len {cfg.max_seq_len}: must be an integer >= 5 (room for "
                         f"[CLS], a question token, [SEP], a context token, [SEP])")
    if cfg.doc_stride < 1:
        raise SystemExit(f"--doc-stride {cfg.doc_stride}: must be an integer >= 1 (context tokens "
                         f"between window starts)")
    if cfg.max_query_len < 1:
        raise SystemExit(f"--max-query-len {cfg.max_query_len}: must be an integer >= 1 (question "
                         f"tokens kept)")
    if cfg.max_answer_len < 1:
        raise SystemExit(f"--max-answer-len {cfg.max_answer_len}: must be an integer >= 1 (tokens "
                         f"in the longest answer)")
    if cfg.n_best < 1:
        raise SystemExit(f"--n-best {cfg.n_best}: must be an integer >= 1 (start and end positions "
                         f"searched)")
    if cfg.epochs < 1:
        raise SystemExit(f"--epochs {cfg.epochs}: must be an integer >= 1 (passes over the "
                         f"training questions (Table 7: 2))")
    if not math.isfinite(cfg.null_threshold):
        raise SystemExit(f"--null-threshold {cfg.null_threshold}: must be a finite number")


BERT_NULL_THRESHOLD = 0.0  # BERT run_squad.py's null_score_diff_threshold, for --null-score span


@dataclass
class Feature:
    """One window of one example, ready for the model."""
    example: int                # index into the examples
    ids: list[int]
    segments: list[int]
    token_piece: dict[int, int]  # position of each context token -> index of its piece
    max_context: dict[int, bool]  # position -> whether this window gives the token its most context
    # training target positions; 0 ([CLS]) when the answer is not in the window
    start: int = 0
    end: int = 0
    # the question has no answer (official: the example's is_impossible, not the window's)
    impossible: bool = False


def doc_windows(num_tokens: int, window: int, stride: int) -> list[tuple[int, int]]:
    """(start, length) of the windows over a context of num_tokens tokens, as the official code:
    each starts `stride` tokens after the last, the last one ends at the context's end.

    >>> doc_windows(10, 4, 3)
    [(0, 4), (3, 4), (6, 4)]
    >>> doc_windows(3, 4, 3)
    [(0, 3)]
    """
    windows, start = [], 0
    while True:
        length = min(window, num_tokens - start)
        windows.append((start, length))
        if start + length >= num_tokens:
            return windows
        start += min(length, stride)


def is_max_context(windows: list[tuple[int, int]], w: int, position: int) -> bool:
    """Whether window w is the one where the token at `position` has the most context around it
    (official _check_is_max_context: score min(left, right) + 0.01 * window length, the first best
    wins).

    >>> windows = doc_windows(10, 6, 2)  # tokens 0..5, 2..7, 4..9
    >>> [is_max_context(windows, w, 4)
    ...  for w in range(3)]  # token 4: min(4, 1), min(2, 3), min(0, 5)
    [False, True, False]
    """
    best, best_score = None, None
    for i, (start, length) in enumerate(windows):
        end = start + length - 1
        if start <= position <= end:
            score = min(position - start, end - position) + 0.01 * length
            if best_score is None or score > best_score:
                best, best_score = i, score
    return best == w


def improve_answer_span(doc_ids: list[int], start: int, end: int,
                        answer_ids: list[int]) -> tuple[int, int]:
    """The first sub-span of tokens start..end whose ids are the answer text's own (official
    _improve_answer_span); start..end unchanged when there is none. The pieces an answer touches can
    hold more than the answer: "19" inside the piece "1985" (tokens 19 ##85) becomes the token 19
    alone.

    >>> improve_answer_span([7, 8, 9], 0, 2, [8])
    (1, 1)
    """
    for s in range(start, end + 1):
        for e in range(end, s - 1, -1):
            if doc_ids[s:e + 1] == answer_ids:
                return s, e
    return start, end


def make_features(examples: list[Example], tok: Tokenizer, cfg: SquadConfig,
                  training: bool) -> list[Feature]:
    """Tokenise every example and cut its context into windows (the official
    convert_examples_to_features).

    A SQuAD context carries about five questions: its tokens and its windows' max-context flags are
    computed once per context (and question length), not once per question.
    """
    features = []
    contexts, flags = {}, {}
    for ex_index, ex in enumerate(examples):
        query = tok.encode(ex.question)[:cfg.max_query_len]
        if ex.context not in contexts:
            doc_ids, doc_piece, first_token = [], [], []
            for p, (a, b) in enumerate(ex.pieces):
                first_token.append(len(doc_ids))
                ids = tok.encode(ex.context[a:b])
                doc_ids += ids
                doc_piece += [p] * len(ids)
            first_token.append(len(doc_ids))
            # examples come grouped by context
            contexts = {ex.context: (doc_ids, doc_piece, first_token)}
            flags = {}
        doc_ids, doc_piece, first_token = contexts[ex.context]
        answer = None
        if training and ex.answer is not None:
            s, e = first_token[ex.answer[0]], first_token[ex.answer[1] + 1] - 1
            if e >= s:
                answer = improve_answer_span(doc_ids, s, e, tok.encode(ex.answer_text))
        room = cfg.max_seq_len - len(query) - 3  # [CLS], [SEP], [SEP]
        if room < 1:
            raise ValueError(f"--max-seq-len {cfg.max_seq_len} leaves no room for the context "
                             f"after a {len(query)}-token question: raise it or lower "
                             f"--max-query-len")
        windows = doc_windows(len(doc_ids), room, cfg.doc_stride)
        if room not in flags:
            flags[room] = [[is_max_context(windows, w, start + i) for i in range(length)]
                           for w, (start, length) in enumerate(windows)]
        for w, (start, length) in enumerate(windows):
            offset = len(query) + 2  # the first context token's position
            ids = [tok.cls_id, *query, tok.sep_id, *doc_ids[start:start + length], tok.sep_id]
            segments = [0] * offset + [1] * (length + 1)
            token_piece = {offset + i: doc_piece[start + i] for i in range(length)}
            max_context = {offset + i: best for i, best in enumerate(flags[room][w])}
            f = Feature(ex_index, ids, segments, token_piece, max_context,
                        impossible=ex.answer is None)
            if answer is not None and start <= answer[0] and answer[1] < start + length:
                f.start, f.end = answer[0] - start + offset, answer[1] - start + offset
            features.append(f)
    return features


# --------------------------------------------------------------------------------------------------
# The model: start and end logits on the discriminator's last states, and the answerability
# classifier.
# --------------------------------------------------------------------------------------------------

# positions outside the context: exp(-1e4) is 0 in fp32 and bf16, and no overflow
MASKED_LOGIT = -1e4


class SpanLogits(NamedTuple):
    """The span model's outputs (fp32). With the joint head at evaluation, `end` is [B, K, T]: the
    end logits for each of the K best starts, whose positions are `start_top` [B, K]; otherwise end
    is [B, T] and start_top is None."""
    start: torch.Tensor
    end: torch.Tensor
    answerable: torch.Tensor  # [B]; zeros without the classifier
    start_top: torch.Tensor | None = None


class SpanModel(nn.Module):
    """The pre-trained encoder plus a span head, and for SQuAD 2.0 the official answerability
    classifier.

    Start logits: start_t = w . h_t + b at every position t. End logits, two heads:
      - joint (official joint_prediction=True): end_t = w' . GELU(W [h_s ; h_t] + c) + b',
        conditioned on the start s: the gold start in training; at evaluation each of the `beam`
        best starts, whose log-probabilities are added to the ends'
        (official qa_tasks.py, dense 512 "qa_hidden").
      - BERT's: end_t = w'' . h_t + b'', the same dense layer as the start (joint=False).
    Logits outside the context and [CLS] are masked as the official
    answer_mask = input_mask * segment_ids + one_hot(0), so a span never starts in the question.

    Answerability (official answerable_classifier, answerable_uses_start_logits): the [CLS] state
    and the states averaged under softmax(start logits), concatenated, dense(512, GELU), dense(1):
    one logit per window, trained with sigmoid cross-entropy on "has no answer".

    Every head is under `classifier` so that finetune.layer_depth gives it the head's lr (official:
    the task head's depth).
    """

    def __init__(self, config: ElectraConfig, answerable: bool = False,
                 answerable_hidden: int = 512, joint: bool = False, beam: int = 20,
                 joint_hidden: int = 512):
        super().__init__()
        self.encoder = Encoder(config)
        self.beam = beam
        # start (and BERT's end) logits
        heads = {"span": nn.Linear(config.hidden_size, 1 if joint else 2)}
        if joint:
            heads["end_hidden"] = nn.Linear(2 * config.hidden_size, joint_hidden)
            heads["end"] = nn.Linear(joint_hidden, 1)
        if answerable:
            heads["answerable_hidden"] = nn.Linear(2 * config.hidden_size, answerable_hidden)
            heads["answerable"] = nn.Linear(answerable_hidden, 1)
        self.classifier = nn.ModuleDict(heads)
        for layer in heads.values():  # tf.layers.dense's default init, as the official heads
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)

    def _joint_end(self, h, start_states, allowed):
        """End logits given start states [B, K, H] (K starts per window): [B, K, T], masked."""
        B, T, H = h.shape
        pairs = torch.cat([start_states[:, :, None].expand(-1, -1, T, -1),
                           h[:, None].expand(-1, start_states.shape[1], -1, -1)], -1)
        end = self.classifier["end"](
            F.gelu(self.classifier["end_hidden"](pairs))).squeeze(-1).float()
        return end.masked_fill(~allowed[:, None], MASKED_LOGIT)

    def forward(self, input_ids, segment_ids, attention_mask, start_positions=None) -> SpanLogits:
        """[B, T] inputs -> SpanLogits. The joint head needs the gold `start_positions` [B] in
        training; without them it searches the beam of best starts."""
        h = self.encoder.hidden_states(input_ids, segment_ids, attention_mask)  # [B, T, H]
        logits = self.classifier["span"](h).float()                               # [B, T, 1 or 2]
        allowed = attention_mask.bool() & segment_ids.bool()
        # [CLS]: the "no answer" span of SQuAD 2.0 (and of a window without the answer)
        allowed[:, 0] = True
        logits = logits.masked_fill(~allowed[..., None], MASKED_LOGIT)
        start, start_top = logits[..., 0], None
        if "end" not in self.classifier:
            end = logits[..., 1]
        elif start_positions is not None:
            end = self._joint_end(h, h[torch.arange(len(h)), start_positions][:, None],
                                  allowed)[:, 0]
        else:
            start_top = start.topk(min(self.beam, start.shape[1]), dim=-1).indices  # [B, K]
            end = self._joint_end(h, h.gather(1, start_top[..., None].expand(-1, -1, h.shape[-1])),
                                  allowed)
        if "answerable" not in self.classifier:
            return SpanLogits(start, end, torch.zeros_like(start[:, 0]), start_top)
        start_feature = torch.einsum("bt,bth->bh", start.softmax(-1), h.float())  # [B, H]
        hidden = F.gelu(self.classifier["answerable_hidden"](
            torch.cat([h[:, 0].float(), start_feature], -1)))
        return SpanLogits(start, end, self.classifier["answerable"](hidden).squeeze(-1).float(),
                          start_top)


def span_loss(start_logits, end_logits, starts, ends, reduction: str = "sum"):
    """Mean of the start and end cross-entropies (official and BERT: (start_loss + end_loss) /
    2), summed over the batch as the official code does, or averaged with reduction "mean"
    (FinetuneConfig.loss_reduction)."""
    return (F.cross_entropy(start_logits, starts, reduction=reduction)
            + F.cross_entropy(end_logits, ends, reduction=reduction)) / 2


def answerable_loss(answerable_logit, impossible, weight: float, reduction: str = "sum"):
    """weight x sigmoid cross-entropy of the answerability logit against "has no answer"
    (official), summed or averaged over the batch as span_loss."""
    return weight * F.binary_cross_entropy_with_logits(answerable_logit, impossible,
                                                       reduction=reduction)


def collate(features: list[Feature], rows, pad_id: int, device):
    """The chosen features as the model's inputs: input_ids, segment_ids, attention_mask [B, T]
    (pad_batch)."""
    return pad_batch([features[r].ids for r in rows], [features[r].segments for r in rows],
                     pad_id, device)


# --------------------------------------------------------------------------------------------------
# Answers: the n-best span search, the null score, the official prediction files.
# --------------------------------------------------------------------------------------------------


def top_positions(logits: np.ndarray, n: int) -> list[int]:
    """The n positions with the largest logits, best first (official _get_best_indexes).

    >>> top_positions(np.array([0.1, 3.0, -1.0, 2.0]), 2)
    [1, 3]
    """
    return [int(i) for i in np.argsort(-logits, kind="stable")[:n]]


def log_softmax(x: np.ndarray) -> np.ndarray:
    """log p_i = x_i - log sum_j exp x_j, over the last axis, computed stably.

    >>> log_softmax(np.array([0.0, 0.0])).round(4).tolist()
    [-0.6931, -0.6931]
    """
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def candidate_spans(start_logits: np.ndarray, end_logits: np.ndarray, feature: Feature,
                    cfg: SquadConfig, start_top: np.ndarray | None = None):
    """(score, start position, end position) of every valid span among the n_best starts x n_best
    ends: both in the context, start where this window has the token's most context, end >= start,
    at most max_answer_len tokens (official write_predictions' filters).

    BERT's head: score = start logit + end logit. Joint head (start_top given, end_logits [K, n]):
    the starts are start_top, and score = log p(start) + log p(end | start), as the official beam
    search."""
    pairs = []
    if start_top is None:
        ends = top_positions(end_logits, cfg.n_best)
        pairs = [(s, e, float(start_logits[s] + end_logits[e]))
                 for s in top_positions(start_logits, cfg.n_best) for e in ends]
    else:
        start_lp, end_lp = log_softmax(start_logits), log_softmax(end_logits)
        for k, s in enumerate(start_top[:cfg.n_best]):
            # the beam was searched over the padded batch: a start in the padding
            if s >= len(start_logits):
                continue
            pairs += [(int(s), e, float(start_lp[s] + end_lp[k, e]))
                      for e in top_positions(end_logits[k], cfg.n_best)]
    spans = []
    for s, e, score in pairs:
        if s not in feature.token_piece or e not in feature.token_piece or \
                not feature.max_context[s]:
            continue
        if e < s or e - s + 1 > cfg.max_answer_len:
            continue
        spans.append((score, s, e))
    return spans


def null_odds_of(null_score: float, best_span_score: float, answerable_classifier: bool) -> float:
    """SQuAD 2.0's null odds, the official qa_metrics.py's score_diff: larger means "no answer".

    With the answerability classifier (official default) it is the classifier's logit itself, the
    lowest over the example's windows. Without it, BERT's: the [CLS]-[CLS] span's score (start + end
    logit at position 0, the lowest over the windows) minus the best span's score.

    >>> (null_odds_of(1.5, 4.0, answerable_classifier=False),
    ...  null_odds_of(1.5, 4.0, answerable_classifier=True))
    (-2.5, 1.5)
    """
    return null_score if answerable_classifier else null_score - best_span_score


class FeatureLogits(NamedTuple):
    """model_logits' outputs, one entry per feature (numpy, unpadded)."""
    start: list[np.ndarray]  # [n] start logits
    end: list[np.ndarray]  # [n], or the joint head's [K, n]: the ends of each of the K best starts
    answerable: list[float]  # the answerability logit (0 without the classifier)
    start_top: list[np.ndarray] | None  # the joint head's K best starts; None for BERT's head


def predict_answers(examples: list[Example], features: list[Feature], logits: FeatureLogits,
                    cfg: SquadConfig, v2: bool) -> tuple[dict, dict]:
    """predictions.json {qid: answer text} and null_odds.json {qid: odds} (empty for SQuAD 1.1).

    Each example takes the best-scoring span over all its windows; its text is the context's own
    characters from the span's first piece to its last. As the official code, the answer is written
    even for 2.0, and the "no answer" decision is the evaluation's: null odds > threshold (see
    `evaluate`).
    """
    by_example = collections.defaultdict(list)
    tops = logits.start_top if logits.start_top is not None else [None] * len(features)
    for f, s, e, a, top in zip(features, logits.start, logits.end, logits.answerable, tops):
        by_example[f.example].append((f, s, e, a, top))
    predictions = {}
    null_odds = {}
    for i, ex in enumerate(examples):
        spans = []
        null_score = math.inf
        for f, s, e, answerable, top in by_example[i]:
            window_null = float(answerable) if cfg.answerable_classifier else float(s[0] + e[0])
            null_score = min(null_score, window_null)
            spans += [(score, f, a, b) for score, a, b in candidate_spans(s, e, f, cfg, top)]
        best = max(spans, key=lambda x: x[0], default=None)
        text = ""  # no valid span at all: the official nonce entry, score 0
        best_score = 0.0
        if best is not None:
            best_score, f, a, b = best
            # whole pieces: a span that starts or ends inside a word widens to the word, where
            # the official get_final_text trims it to the sub-word's characters
            text = ex.context[ex.pieces[f.token_piece[a]][0]:ex.pieces[f.token_piece[b]][1]]
        if v2:
            null_odds[ex.qid] = null_odds_of(null_score, best_score, cfg.answerable_classifier)
        predictions[ex.qid] = text
    return predictions, null_odds


@torch.no_grad()
def model_logits(model: SpanModel, features: list[Feature], batch_size: int, pad_id: int,
                 device) -> FeatureLogits:
    """The logits of every feature, in order."""
    model.eval()
    _, autocast = mixed_precision(device, "auto")
    starts, ends, answerable, tops = [], [], [], []
    for begin in range(0, len(features), batch_size):
        rows = list(range(begin, min(begin + batch_size, len(features))))
        with autocast:
            s, e, a, top = model(*collate(features, rows, pad_id, device))
        answerable += a.cpu().tolist()
        for i, r in enumerate(rows):
            n = len(features[r].ids)
            starts.append(s[i, :n].cpu().numpy())
            ends.append(e[i, ..., :n].cpu().numpy())
            tops.append(None if top is None else top[i].cpu().numpy())
    return FeatureLogits(starts, ends, answerable, None if not tops or tops[0] is None else tops)


# --------------------------------------------------------------------------------------------------
# Training: Table 7's recipe (finetune.py's lr, layer-wise decay, optimizer and schedule), 2 epochs
# --------------------------------------------------------------------------------------------------


@dataclass
class Runtime:
    """How a run is carried out, not what it computes: where, what stops it, what it resumes."""
    device: str  # cuda or cpu
    stop: StopOnSignal | None = None  # .requested (Ctrl-C, SIGTERM): stop before the next update
    checkpoint: Path | None = None  # written after every epoch, resumed from
    identity: dict = field(default_factory=dict)  # what the run is, kept in the checkpoint


def save_epochs(path: Path, state: dict) -> None:
    """The run after its last finished epoch, written atomically: never half a checkpoint."""
    atomic_write(path, lambda tmp: torch.save(state, tmp))


def resume_epochs(runtime: Runtime, model: SpanModel, opt, schedule,
                  order_rng) -> tuple[int, list]:
    """The epochs that runtime.checkpoint holds and their mean losses, with the model, optimizer,
    schedule and both RNGs (the order of the rows, dropout) set back to where they were after them;
    (0, []) when there is none. One line if it was made with other settings."""
    path = runtime.checkpoint
    if path is None or not path.is_file():
        return 0, []
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # truncated by a full disk, or not a checkpoint at all
        raise SystemExit(f"--out-dir {path.parent}: {path.name} cannot be read "
                         f"({type(e).__name__}): pass --restart to start over") from None
    recipe = with_recipe_defaults(saved["identity"]["recipe"], asdict(FinetuneConfig()))
    identity = {**saved["identity"], "recipe": recipe}
    found = differences(identity, as_json(runtime.identity))
    if found:
        raise refuse(path, found)
    model.load_state_dict(saved["model"])
    opt.load_state_dict(saved["optimizer"])
    schedule.load_state_dict(saved["schedule"])
    order_rng.set_state(saved["order_rng"])
    set_rng_state(saved["rng"])
    done = saved["epoch"]
    tqdm.write(f"resuming {path}: after epoch {done}")
    return done, saved["losses"]


def finetune(pre: Pretrained, train: list[Feature], ft: FinetuneConfig, cfg: SquadConfig,
             seed: int, runtime: Runtime) -> tuple[SpanModel, list]:
    """Fine-tune a span model (with the answerability classifier when cfg says so: SQuAD 2.0) on
    the training features; returns it and the mean loss of each epoch.

    GLUE's loop (finetune.finetune_seed) with SQuAD's loss: cfg.epochs passes over the features in
    a new random order each (drawn from `seed`), one update per ft.batch_size features, gradients
    clipped to a global norm of ft.grad_clip. With runtime.checkpoint, the run is saved there after
    every epoch (written atomically) and resumed from it; Ctrl-C or SIGTERM (runtime.stop) raises
    support.finetune_runs.Stopped before the next update, the unfinished epoch dropped.
    """
    device = torch.device(runtime.device)
    pad_id = pre.tokenizer.pad_id
    _, autocast = mixed_precision(device, "auto")
    torch.manual_seed(seed)
    model = SpanModel(encoder_config(pre.config, ft), cfg.answerable_classifier,
                      cfg.answerable_hidden, not cfg.independent_ends, cfg.beam, cfg.joint_hidden)
    model.encoder.load_state_dict(pre.encoder_state)
    model.to(device)
    steps = cfg.epochs * math.ceil(len(train) / ft.batch_size)
    opt, schedule = optimizer_and_schedule(model, pre.config.num_layers, ft, steps)
    order_rng = torch.Generator().manual_seed(seed)
    done, epoch_losses = resume_epochs(runtime, model, opt, schedule, order_rng)
    what = f"squad seed {seed}"
    for epoch in range(done + 1, cfg.epochs + 1):
        model.train()
        order = torch.randperm(len(train), generator=order_rng).tolist()
        losses = []
        with tqdm(total=len(train), unit="ex", desc=f"{what} epoch {epoch}/{cfg.epochs}",
                  dynamic_ncols=True, leave=False) as bar:
            for start in range(0, len(train), ft.batch_size):
                check_stop(runtime.stop)
                rows = order[start:start + ft.batch_size]
                starts = torch.tensor([train[r].start for r in rows], device=device)  # [B]
                ends = torch.tensor([train[r].end for r in rows], device=device)  # [B]
                with autocast:
                    inputs = collate(train, rows, pad_id, device)
                    s, e, a, _ = model(*inputs, start_positions=starts)
                loss = span_loss(s, e, starts, ends, ft.loss_reduction)
                if cfg.answerable_classifier:
                    impossible = torch.tensor([float(train[r].impossible) for r in rows],
                                              device=device)
                    loss = loss + answerable_loss(a, impossible, cfg.answerable_weight,
                                                  ft.loss_reduction)
                if not torch.isfinite(loss):
                    raise diverged(what, schedule.last_epoch + 1, epoch, ft.lr)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), ft.grad_clip)
                opt.step()
                schedule.step()
                losses.append(loss.item())
                bar.update(len(rows))
                bar.set_postfix(loss=f"{np.mean(losses[-LOSS_WINDOW:]):.4f}")
        epoch_losses.append(float(np.mean(losses)))
        tqdm.write(f"squad epoch {epoch}: loss {epoch_losses[-1]:.4f}")
        if runtime.checkpoint is not None:
            state = {"identity": as_json(runtime.identity), "epoch": epoch, "losses": epoch_losses,
                     "model": model.state_dict(), "optimizer": opt.state_dict(),
                     "schedule": schedule.state_dict(), "order_rng": order_rng.get_state(),
                     "rng": rng_state()}
            save_epochs(runtime.checkpoint, state)
    return model, epoch_losses


# --------------------------------------------------------------------------------------------------
# The command line.
# --------------------------------------------------------------------------------------------------


@dataclass
class Run:
    """Where the model and the data come from and where results go: not the recipe."""
    task: str  # squad1 or squad2
    init: str  # train.py checkpoint or run folder, HF ELECTRA/BERT folder, or hub name
    device: str  # cuda or cpu
    revision: str = "main"  # hub revision of --init: a branch, tag or commit
    hub_cache_dir: str | None = None  # None: ~/.cache/electra-from-scratch/hub (hf.hub_cache_dir)
    vocab: str | None = None  # None: the vocab.txt beside --init
    data_dir: str | None = None  # None: download the official files into cache_dir
    cache_dir: str = str(DEFAULT_CACHE)  # where downloaded SQuAD files are kept
    squad_url: str = SQUAD_BASE_URL
    out_dir: str = "out/squad"  # predictions.json, null_odds.json, results.json
    seed: int = 0
    max_train_examples: int | None = None  # the first N training questions only: quick runs
    max_dev_examples: int | None = None  # predict and score the first N dev questions only
    restart: bool = False  # False: resume from the checkpoint in out_dir, if there is one


def squad_config(args: argparse.Namespace, max_position: int) -> SquadConfig:
    """SquadConfig from the flags. Left out, max_seq_len is the official 512, or `max_position`
    (the model's positions) if it is fewer; null_threshold the official one, or BERT's with
    --null-score span; the others, left out, SquadConfig's."""
    span = args.null_score == "span"  # BERT's null score, defined on BERT's head
    max_seq_len = args.max_seq_len
    if max_seq_len is None:
        max_seq_len = min(SquadConfig.max_seq_len, max_position)
    null_threshold = args.null_threshold
    if null_threshold is None:
        null_threshold = BERT_NULL_THRESHOLD if span else SquadConfig.null_threshold
    # 1.1 trains no answerability classifier: the official code trains one there too, on labels
    # that are all "answerable", which teach it nothing
    return cli.from_flags(SquadConfig, args, max_seq_len=max_seq_len,
                          answerable_classifier=args.task == "squad2" and not span,
                          independent_ends=args.independent_ends or span,
                          null_threshold=null_threshold)


def parse_args(argv=None) -> argparse.Namespace:
    """The command line (support.cli.squad_args), SquadConfig's values checked too, before
    anything is loaded."""
    args = cli.squad_args(argv, description=__doc__.split("\n\n")[0])
    check_squad_config(squad_config(args, max_position=SquadConfig.max_seq_len))
    return args


EVAL_BATCH_SIZE = 16  # evaluation only, no effect on results; the joint head's beam makes a
# [16, 20, 512, 2H] tensor of start-end pairs (Base: about 1 GiB in fp32), and larger batches
# would crowd a CPU's memory
CHECKPOINT = "checkpoint.pt"  # in --out-dir: the run after its last finished epoch, until it ends


def run_identity(run: Run, pre: Pretrained, ft: FinetuneConfig, cfg: SquadConfig,
                 train_path: Path) -> dict:
    """What a run is, kept in its checkpoint: a checkpoint of another run is not resumed."""
    return {"task": run.task, "seed": run.seed, "max_train_examples": run.max_train_examples,
            "init_id": init_identity(run.init, run.revision, pre), "recipe": asdict(ft),
            "squad": asdict(cfg), "data": {train_path.name: file_sha256(train_path)}}


def stopped(checkpoint: Path) -> SystemExit:
    """The one line after Ctrl-C or SIGTERM: what is kept, how to resume."""
    kept = f"{checkpoint} holds the finished epochs" if checkpoint.is_file() else \
        "no epoch had finished"
    return SystemExit(f"stopped by Ctrl-C or SIGTERM, the unfinished epoch dropped: {kept}. Run "
                      f"the same command again to resume")


def main(argv=None) -> dict:
    args = parse_args(argv)
    run = cli.from_flags(Run, args, device=args.device or cli.default_device())
    out = Path(run.out_dir)
    v2 = run.task == "squad2"
    try:
        pre = load_init(run.init, run.revision, run.hub_cache_dir, run.vocab)
    except (FileNotFoundError, ValueError, HubError) as e:
        raise SystemExit(f"error: {e}") from None
    try:
        train_path, dev_path = squad_files(run.task, run.data_dir, run.cache_dir, run.squad_url)
        train_data = read_dataset(train_path)
        dev_data = read_dataset(dev_path)
    except DownloadError as e:
        # plumbing.download's message ends with a hint about train.py's own corpus: keep its first
        # line
        raise SystemExit(f"error: {str(e).splitlines()[0]} If you are offline, fetch "
                         f"{' and '.join(SQUAD_FILES[run.task])} another way and pass "
                         f"--data-dir FOLDER.") from None
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"error: {e}") from None
    cfg = squad_config(args, pre.config.max_position)
    if cfg.max_seq_len > pre.config.max_position:
        raise SystemExit(f"--max-seq-len {cfg.max_seq_len}: must be at most "
                         f"{pre.config.max_position}, the positions {pre.source} has "
                         f"embeddings for")
    # the recipe (--recipe) for the model's size, but for SQuAD's windows and epochs (SquadConfig)
    recipe = cli.from_flags(FinetuneConfig, args, max_seq_len=cfg.max_seq_len, epochs=cfg.epochs,
                            max_train_examples=None)
    ft = recipe_for(pre.config, recipe)
    train_examples = read_examples(train_data, run.max_train_examples, training=True)
    dev_examples = read_examples(dev_data, run.max_dev_examples)
    try:
        train_features = make_features(train_examples, pre.tokenizer, cfg, training=True)
        dev_features = make_features(dev_examples, pre.tokenizer, cfg, training=False)
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    print(f"{run.task}: {len(train_examples):,} training questions in {len(train_features):,} "
          f"windows, {len(dev_examples):,} dev questions in {len(dev_features):,} windows; "
          f"{pre.source} on {run.device}: lr {ft.lr:g}, layer decay {ft.layer_decay}, "
          f"batch {ft.batch_size}, {cfg.epochs} epochs")
    checkpoint = out / CHECKPOINT
    if run.restart:
        checkpoint.unlink(missing_ok=True)
    identity = run_identity(run, pre, ft, cfg, train_path)
    t0 = time.time()
    with StopOnSignal(STOPPING) as stop:  # not over the prediction: Ctrl-C there quits at once
        runtime = Runtime(run.device, stop, checkpoint, identity)
        try:
            model, losses = finetune(pre, train_features, ft, cfg, run.seed, runtime)
        except Stopped:
            raise stopped(checkpoint) from None
    device = torch.device(run.device)
    logits = model_logits(model, dev_features, EVAL_BATCH_SIZE, pre.tokenizer.pad_id, device)
    predictions, null_odds = predict_answers(dev_examples, dev_features, logits, cfg, v2)
    scored = dev_data
    if run.max_dev_examples is not None:
        scored = subset(dev_data, set(predictions))
    if v2:
        metrics = evaluate(scored, predictions, null_odds, cfg.null_threshold)
    else:
        metrics = evaluate(scored, predictions)
    atomic_write(out / "predictions.json", json.dumps(predictions, indent=2, ensure_ascii=False))
    if v2:
        atomic_write(out / "null_odds.json", json.dumps(null_odds, indent=2))
    report = {"task": run.task, "init": pre.source, "device": run.device,
              "seconds": time.time() - t0, "train_loss": losses, "dev": metrics,
              "squad": asdict(cfg), "recipe": asdict(ft)}
    atomic_write(out / "results.json", json.dumps(report, indent=2, allow_nan=False))
    checkpoint.unlink()  # the run is complete: a next one starts afresh
    print(" ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                   for k, v in metrics.items()))
    written = [out / "predictions.json"] + ([out / "null_odds.json"] if v2 else [])
    print("wrote " + ", ".join(str(p) for p in written + [out / "results.json"]))
    return report


if __name__ == "__main__":
    main()
