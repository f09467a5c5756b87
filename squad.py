"""Fine-tune a pre-trained ELECTRA (or BERT) discriminator on SQuAD 1.1 / 2.0, and score it as SQuAD does.

Clark et al. 2020 (arXiv 2003.10555), section 3.3 and Table 4, report SQuAD 1.1 and 2.0 dev EM/F1 next to
GLUE. This file is the pipeline in the order a reader meets it:

    evaluation   SQuAD's official evaluation written by hand: normalisation, EM, F1, HasAns/NoAns and the
                 best no-answer threshold (evaluate-v2.0.py; v1.1 scores are its HasAns subset)
    data         the official JSON files (download once, or --data_dir), read into examples
    features     whitespace words with character offsets, WordPiece, doc-stride windows of 512 tokens
    model        the start/end span head on the discriminator's states
    answers      the n-best span search, the null score for 2.0, predictions.json / null_odds.json
    training     Table 7's recipe (finetune.py's lr, layer-wise decay and optimizer), 2 epochs
    main         the CLI

    python squad.py --task squad1 --init path/to/hf-electra-small-discriminator
    python squad.py --task squad2 --init ckpt.pt --data_dir ../shared/data/squad
"""
import collections
import re
import string

# ---------------------------------------------------------------------------------------------------------
# The official evaluation (SQuAD's evaluate-v2.0.py, which for answerable questions scores as v1.1's).
# Scores are on the 0-100 scale of the paper's Table 4.
# ---------------------------------------------------------------------------------------------------------

ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)  # evaluate-v2.0.py remove_articles
PUNCTUATION = set(string.punctuation)                 # ASCII punctuation only, as the official script


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
    """Token-overlap F1 of the normalised answers: P = common/|pred|, R = common/|gold|, F1 = 2PR/(P+R).

    Tokens are counted with multiplicity (a bag, as the official Counter &). When either side is empty
    (SQuAD 2.0's no-answer), F1 is 1 if both are empty, else 0.

    >>> f1_score("Denver Broncos won", "the Denver Broncos")  # common 2; P = 2/3, R = 2/2: 2*(2/3)/(5/3)
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
    """A question's gold answer texts; [""] when it has none that survive normalisation (2.0's no-answer).

    >>> gold_answers({"answers": [{"text": "the"}]}), gold_answers({"answers": [{"text": "Paris"}]})
    ([''], ['Paris'])
    """
    answers = [a["text"] for a in qa.get("answers", []) if normalize_answer(a["text"])]
    return answers or [""]


def raw_scores(dataset: list[dict], predictions: dict[str, str]) -> tuple[dict, dict]:
    """Per question id: the best EM and the best F1 of its prediction over the gold answers (0/1 scale).

    A question without a prediction is a clear error (the official script prints and skips it).
    """
    exact, f1 = {}, {}
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                if qa["id"] not in predictions:
                    raise ValueError(f"no prediction for question {qa['id']}: predictions must answer every "
                                     f"question of the dataset (\"\" for no answer)")
                golds, pred = gold_answers(qa), predictions[qa["id"]]
                exact[qa["id"]] = max(exact_match(pred, g) for g in golds)
                f1[qa["id"]] = max(f1_score(pred, g) for g in golds)
    return exact, f1


def has_answer(dataset: list[dict]) -> dict[str, bool]:
    """Question id -> whether it has a gold answer (the HasAns/NoAns split of SQuAD 2.0)."""
    return {qa["id"]: gold_answers(qa) != [""] for a in dataset for p in a["paragraphs"] for qa in p["qas"]}


def apply_no_answer_threshold(scores: dict, null_odds: dict, answerable: dict, threshold: float) -> dict:
    """Where null_odds > threshold the prediction becomes "no answer": it scores 1 on NoAns questions, 0
    on HasAns ones (evaluate-v2.0.py apply_no_ans_threshold)."""
    return {q: float(not answerable[q]) if null_odds[q] > threshold else s for q, s in scores.items()}


def best_threshold(predictions: dict, scores: dict, null_odds: dict, answerable: dict) -> tuple[float, float]:
    """The null-odds threshold that maximises the score, and that score x100 (evaluate-v2.0.py find_best_thresh).

    Start with every question predicted "no answer" (score = #NoAns); lower the threshold past each
    question in order of increasing null odds, which turns its answer on: a HasAns question gains its
    score, a NoAns question loses 1 if the model gave a non-empty answer. Keep the best running score.

    Worked example: q1 HasAns odds -2 score 1, q2 NoAns odds 0 answer "x", q3 HasAns odds 3 score 0.5.
    Start 1 (q2); after q1: 2 (thresh -2); after q2: 1; after q3: 1.5. Best 2/3, thresh -2.

    >>> best_threshold({"1": "a", "2": "x", "3": "b"}, {"1": 1, "2": 0, "3": 0.5},
    ...                {"1": -2.0, "2": 0.0, "3": 3.0}, {"1": True, "2": False, "3": True})
    (66.66666666666667, -2.0)
    """
    score = best = sum(not answerable[q] for q in scores)
    threshold = 0.0  # the official starting value: with no question answered, any threshold below all odds
    for q in sorted(null_odds, key=null_odds.get):
        if q not in scores:
            continue
        score += scores[q] if answerable[q] else -1 if predictions[q] else 0
        if score > best:
            best, threshold = score, null_odds[q]
    return 100.0 * best / len(scores), threshold


def evaluate(dataset: list[dict], predictions: dict[str, str], null_odds: dict[str, float] | None = None,
             null_threshold: float = 1.0) -> dict:
    """The official evaluation's numbers (x100): exact, f1, total, HasAns_*/NoAns_* when present, and with
    null_odds the best_exact/best_f1 and their thresholds.

    `dataset` is the "data" list of a SQuAD JSON file; `null_odds` maps question ids to the model's
    null-answer odds (evaluate-v2.0.py's na_prob; None: every odds 0, as the official script). Like the
    official script, the main scores count an answer as "no answer" only where odds > null_threshold (1.0).
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
                f"{prefix}f1": 100.0 * sum(f1_t[q] for q in qids) / len(qids), f"{prefix}total": len(qids)}

    out = totals(list(exact))
    for prefix, wanted in (("HasAns_", True), ("NoAns_", False)):
        qids = [q for q in exact if answerable[q] == wanted]
        if qids:
            out.update(totals(qids, prefix))
    if null_odds is not None:
        out["best_exact"], out["best_exact_thresh"] = best_threshold(predictions, exact, odds, answerable)
        out["best_f1"], out["best_f1_thresh"] = best_threshold(predictions, f1, odds, answerable)
    return out
