"""experiments/blimp_choosers.py: the unigram and fewer-tokens choosers worked by hand on a corpus
built here, what D's choices follow computed by hand from given credits, and the command line on a
tiny run folder, its D scored as evaluate.py scores it."""
import doctest
import json
import types

import numpy as np
import pytest
from test_evaluate import hand_model, run_folder, tiny_config, tiny_tokenizer, write_blimp

from experiments import blimp_choosers as bc
from support import evaluate


def test_docstring_examples():
    result = doctest.testmod(bc)
    assert result.failed == 0 and result.attempted >= 2


# The corpus: "sleep" 3 times, "sleeps" once, "barks" 2 times, "bark" never.
CORPUS = "the cat sleep .\nthe cat sleep .\nthe dog sleep .\nthe cat sleeps\nthe dog barks\n" \
         "the dog barks\n"
PARADIGMS = {"agreement": [("the cat sleeps .", "the cat sleep ."),  # frequent one is bad
                           ("the dog barks .", "the dog bark ."),  # frequent one is good
                           ("the cat", "cat the ."),  # fewer tokens good; more frequent good
                           ("the dog", "the dog")]}  # the same ids: a tie for every chooser


def test_choosers_by_hand():
    tok = tiny_tokenizer()
    corpus = np.array(tok.encode(CORPUS.replace("\n", " ")))
    log_p = bc.unigram_log_probs(corpus, len(tok))
    n, v = len(corpus), len(tok)
    assert n == 21
    assert np.exp(log_p[tok.vocab["sleep"]]) == pytest.approx(4 / (n + v))
    assert np.exp(log_p[tok.vocab["bark"]]) == pytest.approx(1 / (n + v))
    pairs = [evaluate.MinimalPair(good, bad, "morphology", "agreement")
             for good, bad in PARADIGMS["agreement"]]
    c = bc.chooser_credits(tok, pairs, log_p)
    # pair 1: sleeps (2/(n+v)) against sleep (4/(n+v)), the rest the same: the bad one
    # pair 2: barks (3/(n+v)) against bark (1/(n+v)): the good one
    # pair 3: "the cat" against "cat the .": one fewer token, and every log p < 0, so the good one
    assert c["unigram"].tolist() == [0.0, 1.0, 1.0, 0.5]
    assert c["fewer_tokens"].tolist() == [0.5, 0.5, 1.0, 0.5]
    assert c["same_length"].tolist() == [True, True, False, True]


def test_what_d_follows_by_hand():
    choosers = {"unigram": np.array([0.0, 1.0, 1.0, 0.5, 1.0]),
                "fewer_tokens": np.array([0.5, 0.5, 1.0, 0.5, 0.0]),
                "same_length": np.array([True, True, False, True, True])}
    d = np.array([1.0, 1.0, 0.0, 0.5, 0.0])
    split = {"changed": np.array([0.0, 1.0, 0.5, 1.0]), "unchanged": np.array([1.0, 1.0, 0.5, 0.0])}
    got = bc.follows(d, split, choosers)
    assert got["blimp"] == pytest.approx(2.5 / 5)
    # equal-length pairs 1, 2, 4, 5: disagree, agree, a tie (1/2), disagree
    assert got["agrees_unigram"] == pytest.approx(1.5 / 4)
    # every pair: 1/2, 1/2, disagree, 1/2, agree
    assert got["agrees_fewer_tokens"] == pytest.approx(2.5 / 5)
    # equal length and the frequent one good: pairs 2 and 5 (D right on 2 only); bad: pair 1
    assert got["acc_frequent_good"] == pytest.approx(0.5)
    assert got["acc_frequent_bad"] == pytest.approx(1.0)
    assert got["equal_length"] == pytest.approx(2.5 / 4)
    # the split against the unigram chooser's 0, 1, 1/2, 1 on those pairs
    assert got["changed"] == pytest.approx(2.5 / 4)
    assert got["changed_agrees_unigram"] == pytest.approx((1 + 1 + 0.5 + 1) / 4)
    assert got["unchanged"] == pytest.approx(2.5 / 4)
    assert got["unchanged_agrees_unigram"] == pytest.approx((0 + 1 + 0.5 + 0) / 4)


def test_split_by_hand_with_a_d_that_reads_no_context():
    """test_evaluate's hand D: its logit depends on the token alone, so the unchanged tokens'
    calls are the same in both sentences (a tie) and the changed token decides."""
    tok = tiny_tokenizer()
    pairs = [evaluate.MinimalPair(good, bad, "morphology", "agreement")
             for good, bad in [("the cat sleeps .", "the cat sleep ."),  # ln 3 against -ln 3
                               ("the dog barks .", "the dog bark ."),  # 0 against 0
                               ("the cat sleep .", "the cat sleeps ."),  # the other way round
                               ("the dog", "the dog")]]
    split = bc.split_credits(hand_model(tok), tok, pairs, "cpu")
    assert split["changed"].tolist() == [1.0, 0.5, 0.0, 0.5]
    assert split["unchanged"].tolist() == [0.5, 0.5, 0.5, 0.5]
    with pytest.raises(ValueError, match="equal length"):
        bc.split_credits(hand_model(tok), tok, [evaluate.MinimalPair("the cat", "cat the .", "",
                                                                     "")], "cpu")


def test_frequency_correlation_of_a_d_that_reads_frequency_alone():
    """A D whose logit is 2 log p(token) + 1 correlates with frequency exactly (r = 1); one whose
    logit is -log p, exactly the other way (r = -1); test_evaluate's hand D, by its table."""
    from test_evaluate import TableD

    tok = tiny_tokenizer()
    log_p = bc.unigram_log_probs(np.array(tok.encode(CORPUS.replace("\n", " "))), len(tok))
    sentences = ["the cat sleeps .", "the dog barks", "cat the bark sleep"]
    for table, r in [(2 * log_p + 1, 1.0), (-log_p, -1.0)]:
        model = types.SimpleNamespace(discriminator=TableD(table.tolist()),
                                      config=types.SimpleNamespace(max_position=32))
        assert bc.frequency_correlation(model, tok, sentences, log_p, "cpu") == pytest.approx(r)
    # the hand D's logits on these 11 tokens, against their log p, by numpy
    hand = hand_model(tok)
    ids = [i for s in sentences for i in tok.encode(s)]
    expected = np.corrcoef(hand.discriminator.table[ids].numpy(), log_p[ids])[0, 1]
    got = bc.frequency_correlation(hand, tok, sentences, log_p, "cpu")
    assert got == pytest.approx(expected) and abs(got) < 0.99


def test_split_parts_add_up_to_the_sum():
    """Where both parts favour one sentence, so does D's whole sum (evaluate.py's d_sum) on a real
    model: the two parts are the sum cut in two, no position lost or counted twice."""
    import torch

    from electra import Electra

    tok = tiny_tokenizer()
    torch.manual_seed(0)
    model = Electra(tiny_config(tok)).eval()
    words = ["the", "cat", "cats", "sleeps", "sleep", "dog", "barks", "bark"]
    rng = np.random.default_rng(0)
    pairs = []
    for _ in range(200):
        good = list(rng.choice(words, size=5))
        bad = list(good)
        bad[rng.integers(5)] = rng.choice(words)
        pairs.append(evaluate.MinimalPair(" ".join(good), " ".join(bad), "morphology", "p"))
    split = bc.split_credits(model, tok, pairs, "cpu")
    whole = bc.d_credits(model, tok, pairs, "cpu")
    agree = (split["changed"] == split["unchanged"]) & (split["changed"] != 0.5)
    assert agree.sum() > 20
    assert (whole[agree] == split["changed"][agree]).all()
    # a pair whose parts pull apart can go either way: both ways happen on 200 random pairs
    apart = (split["changed"] + split["unchanged"] == 1.0) & (split["changed"] != 0.5)
    assert set(whole[apart].tolist()) == {0.0, 1.0}


def test_cli_on_a_run_folder_scores_d_as_evaluate_does(tmp_path, capsys):
    tok = tiny_tokenizer()
    run_folder(tmp_path / "run", tok)
    blimp = write_blimp(tmp_path / "blimp", PARADIGMS)
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "text.txt").write_text(CORPUS, encoding="utf-8")
    out = tmp_path / "out"
    results = bc.main(["--init", str(tmp_path / "run"), "--data", str(tmp_path / "corpus"),
                       "--blimp-dir", str(blimp), "--random-seeds", "3",
                       "--cache-dir", str(tmp_path / "cache"), "--out", str(out), "--device",
                       "cpu"])
    assert results["choosers"] == {"pairs": 4, "unigram": pytest.approx(2.5 / 4),
                                   "unigram_equal_length": pytest.approx(1.5 / 3),
                                   "fewer_tokens": pytest.approx(2.5 / 4), "same_length": 3,
                                   "frequent_good": 1, "frequent_bad": 1}
    assert [r["model"] for r in results["models"]] == [str(tmp_path / "run"),
                                                       "random weights, seed 3"]
    # D's accuracy is evaluate.py's d_sum, for the run and for --random --seed 3
    argv = ["blimp", "--init", str(tmp_path / "run"), "--data-dir", str(blimp), "--out",
            str(tmp_path / "evaluate")]
    trained = evaluate.main(argv)["overall"]["d_sum"]
    random3 = evaluate.main(argv + ["--random", "--seed", "3"])["overall"]["d_sum"]
    assert [r["blimp"] for r in results["models"]] == pytest.approx([trained, random3])
    assert json.loads((out / "results.json").read_text()) == results
    table = (out / "blimp-choosers.md").read_text()
    assert "random weights, seed 3" in table and "0.625 of the 4 pairs" in table
    assert "split at the changed word" in table and "r(D's logit, log p)" in table
    assert all(-1 <= r["frequency_r"] <= 1 for r in results["models"])
    assert (out / "blimp-choosers.png").stat().st_size > 0


def test_user_errors_are_one_line(tmp_path):
    tok = tiny_tokenizer()
    run_folder(tmp_path / "a", tok)
    other = type(tok)(list(tok.vocab) + ["zebra"])
    run_folder(tmp_path / "b", other)
    blimp = write_blimp(tmp_path / "blimp", PARADIGMS)
    with pytest.raises(SystemExit, match="2 --labels for 1 --init"):
        bc.main(["--init", str(tmp_path / "a"), "--labels", "x", "y", "--data", str(tmp_path),
                 "--blimp-dir", str(blimp)])
    with pytest.raises(SystemExit, match="--blimp-dir .*no .jsonl files"):
        bc.main(["--init", str(tmp_path / "a"), "--data", str(tmp_path), "--blimp-dir",
                 str(tmp_path / "nowhere")])
    with pytest.raises(SystemExit, match="--data .*nowhere"):
        bc.main(["--init", str(tmp_path / "a"), "--data", str(tmp_path / "nowhere"),
                 "--blimp-dir", str(blimp), "--cache-dir", str(tmp_path / "cache")])
    with pytest.raises(SystemExit, match="different vocabs"):
        bc.main(["--init", str(tmp_path / "a"), str(tmp_path / "b"), "--data", str(tmp_path),
                 "--blimp-dir", str(blimp)])
