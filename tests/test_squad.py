"""squad.py: the official SQuAD evaluation against hand-worked cases."""
import pytest

import squad


@pytest.mark.parametrize("text, normalised", [
    ("The Eiffel Tower", "eiffel tower"),          # article and case
    ("  an   apple,\tA pear. ", "apple pear"),     # articles anywhere, punctuation, whitespace collapsed
    ("theater", "theater"),                       # "the" only as a whole word
    ("U.S.A.", "usa"),
    ("naïve café", "naïve café"),                 # non-ASCII letters kept (ASCII punctuation only)
])
def test_normalize_answer_by_hand(text, normalised):
    assert squad.normalize_answer(text) == normalised


def test_f1_by_hand():
    # pred "a cat sat on mat" -> [cat, sat, on, mat]; gold "the cat on the mat today" -> [cat, on, mat, today]
    # common 3: P = 3/4, R = 3/4, F1 = 0.75
    assert squad.f1_score("a cat sat on mat", "the cat on the mat today") == pytest.approx(0.75)
    # multiplicity: pred [x, x, y], gold [x, y, y]: common {x:1, y:1} = 2, P = R = 2/3
    assert squad.f1_score("x x y", "x y y") == pytest.approx(2 / 3)
    assert squad.f1_score("Paris", "London") == 0.0
    assert squad.f1_score("", "") == 1.0 and squad.f1_score("", "Paris") == 0.0 and squad.f1_score("the", "x") == 0.0
    assert squad.exact_match("The  Paris!", "paris") == 1 and squad.exact_match("Paris France", "Paris") == 0


def dataset(qas):
    return [{"title": "t", "paragraphs": [{"context": "c", "qas": qas}]}]


def qa(qid, *answers):
    return {"id": qid, "question": "?", "answers": [{"text": a, "answer_start": 0} for a in answers],
            "is_impossible": not answers}


def test_squad1_scores_take_the_best_gold_answer():
    data = dataset([qa("1", "Denver Broncos", "the Broncos"), qa("2", "1985"), qa("3", "red car")])
    preds = {"1": "Broncos", "2": "in 1985", "3": "blue"}
    out = squad.evaluate(data, preds)
    # q1: EM 1 against "the Broncos"; q2: EM 0, F1 2*(1/2)*1/(3/2) = 2/3; q3: 0 and 0
    assert out["exact"] == pytest.approx(100 / 3)
    assert out["f1"] == pytest.approx(100 * (1 + 2 / 3) / 3)
    assert out["total"] == 3 and "NoAns_total" not in out and "best_f1" not in out


def test_squad2_hasans_noans_and_best_threshold_by_hand():
    data = dataset([qa("1", "Paris"), qa("2"), qa("3", "blue sky"), qa("4")])
    preds = {"1": "Paris", "2": "x", "3": "sky", "4": ""}
    odds = {"1": -2.0, "2": 0.5, "3": 3.0, "4": 2.0}
    out = squad.evaluate(data, preds, odds)
    # raw EM: 1, 0, 0, 1; raw F1: 1, 0, 2*(1)*(1/2)/(3/2) = 2/3, 1.
    # threshold 1.0: q3 (odds 3 > 1) becomes no-answer on a HasAns question -> 0; q4 -> 1 (NoAns).
    assert out["exact"] == pytest.approx(100 * 2 / 4) and out["f1"] == pytest.approx(100 * 2 / 4)
    assert (out["HasAns_total"], out["NoAns_total"]) == (2, 2)
    assert out["HasAns_exact"] == pytest.approx(50.0) and out["NoAns_exact"] == pytest.approx(50.0)
    # best threshold, F1: start at #NoAns = 2; sorted odds q1 -2 (+1 -> 3), q2 0.5 ("x": -1 -> 2),
    # q4 2.0 (empty: 0 -> 2), q3 3.0 (+2/3 -> 2.667). Best 3 at -2.
    assert out["best_f1"] == pytest.approx(75.0) and out["best_f1_thresh"] == -2.0
    # EM: 2, q1 +1 -> 3, q2 -1 -> 2, q4 0 -> 2, q3 +0 -> 2: best 3 at -2.
    assert out["best_exact"] == pytest.approx(75.0) and out["best_exact_thresh"] == -2.0


def test_best_threshold_keeps_zero_when_answering_never_helps():
    # one NoAns question answered wrongly: predicting "no answer" for all (score 1/1) is best, thresh 0.0
    assert squad.best_threshold({"1": "x"}, {"1": 0.0}, {"1": -5.0}, {"1": False}) == (100.0, 0.0)


def test_missing_prediction_is_a_clear_error():
    with pytest.raises(ValueError, match="no prediction for question 2"):
        squad.evaluate(dataset([qa("1", "a"), qa("2", "b")]), {"1": "a"})
