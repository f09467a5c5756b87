"""squad.py: the official SQuAD evaluation against hand-worked cases; features, span search and
the null odds by hand; a tiny model fine-tuned end to end on a file served from 127.0.0.1."""
import argparse
import dataclasses
import json

import numpy as np
import pytest
import torch
from test_finetune_model import (  # the tiny train.py run folder of finetune's tests
    save_train_checkpoint,
    tiny_config,
)
from test_hf_hub import hub, save_pair  # noqa: F401 (hub: the fixture of a local hub server)

import squad
from support import cli
from tokenizer import Tokenizer


@pytest.mark.parametrize("text, normalised", [
    ("The Eiffel Tower", "eiffel tower"),          # article and case
    ("  an   apple,\tA pear. ", "apple pear"),     # articles anywhere, punctuation, whitespace
                                                  # collapsed
    ("theater", "theater"),                       # "the" only as a whole word
    ("U.S.A.", "usa"),
    ("naïve café", "naïve café"),                 # non-ASCII letters kept (ASCII punctuation
                                                  # only)
])
def test_normalize_answer_by_hand(text, normalised):
    assert squad.normalize_answer(text) == normalised


def test_f1_by_hand():
    # pred "a cat sat on mat" -> [cat, sat, on, mat]; gold "the cat on the mat today" -> [cat, on,
    # mat, today]
    # common 3: P = 3/4, R = 3/4, F1 = 0.75
    assert squad.f1_score("a cat sat on mat", "the cat on the mat today") == pytest.approx(0.75)
    # multiplicity: pred [x, x, y], gold [x, y, y]: common {x:1, y:1} = 2, P = R = 2/3
    assert squad.f1_score("x x y", "x y y") == pytest.approx(2 / 3)
    assert squad.f1_score("Paris", "London") == 0.0
    assert (squad.f1_score("", "") == 1.0 and squad.f1_score("", "Paris") == 0.0
            and squad.f1_score("the", "x") == 0.0)
    assert (squad.exact_match("The  Paris!", "paris") == 1
            and squad.exact_match("Paris France", "Paris") == 0)


def dataset(qas):
    return [{"title": "t", "paragraphs": [{"context": "c", "qas": qas}]}]


def qa(qid, *answers):
    return {"id": qid, "question": "?",
            "answers": [{"text": a, "answer_start": 0} for a in answers],
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
    # one NoAns question answered wrongly: predicting "no answer" for all (score 1/1) is best,
    # thresh 0.0
    assert squad.best_threshold({"1": "x"}, {"1": 0.0}, {"1": -5.0}, {"1": False}) == (100.0, 0.0)


def test_missing_prediction_is_a_clear_error():
    with pytest.raises(ValueError, match="no prediction for question 2"):
        squad.evaluate(dataset([qa("1", "a"), qa("2", "b")]), {"1": "a"})


# --- features: pieces, windows, answer positions -------------------------------------------------

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "where", "is", "paris", "in", "france",
         "the", "cat", "sat", "on", "mat", "a", "dog", "ran", ".", ",", "(", ")", "who", "what",
         "color", "sky", "blue", "19", "##85", "born", "he", "was", "?"]
FILLER = "the cat sat on the mat . a dog ran . "


def tokenizer():
    return Tokenizer(VOCAB)


def squad_file(path, long_repeats=6):
    """A SQuAD 2.0 file: a short context, one longer than a 32-token window, an unanswerable
    question."""
    long_context = FILLER * long_repeats + "paris is in France ."
    short = "He was born (1985), the sky is blue."
    qas_short = [{"id": "born", "question": "who was born ?", "is_impossible": False,
                  "answers": [{"text": "1985", "answer_start": short.index("1985")}]},
                 {"id": "sky", "question": "what color is the sky ?", "is_impossible": False,
                  "answers": [{"text": "blue", "answer_start": short.index("blue")}]}]
    qas_long = [{"id": "paris", "question": "where is paris ?", "is_impossible": False,
                 "answers": [{"text": "France", "answer_start": long_context.index("France")}]},
                {"id": "none", "question": "where is the sky ?", "is_impossible": True,
                 "answers": [],
                 "plausible_answers": [{"text": "mat", "answer_start": long_context.index("mat")}]}]
    data = {"version": "v2.0",
            "data": [{"title": "t",
                      "paragraphs": [{"context": short, "qas": qas_short},
                                     {"context": long_context, "qas": qas_long}]}]}
    path.write_text(json.dumps(data), encoding="utf-8")
    return data["data"]


def test_pieces_map_answers_back_to_the_exact_characters():
    context = "He was born (1985), the sky"
    pieces = squad.context_pieces(context)
    assert [context[a:b] for a, b in pieces] == ["He", "was", "born", "(", "1985", ")", ",", "the",
                                                 "sky"]
    # every piece is tokenised on its own: together they give the same ids as the whole text
    tok = tokenizer()
    assert sum((tok.encode(context[a:b]) for a, b in pieces), []) == tok.encode(context)


def test_windows_cover_a_long_context_and_only_they_hold_the_answer(tmp_path):
    data = squad_file(tmp_path / "s.json")
    tok = tokenizer()
    examples = squad.read_examples(data)
    cfg = squad.SquadConfig(max_seq_len=32, doc_stride=8)
    features = squad.make_features(examples, tok, cfg, training=True)
    paris = [f for f in features if examples[f.example].qid == "paris"]
    none = [f for f in features if examples[f.example].qid == "none"]
    doc_len = len(tok.encode(examples[2].context))  # 6 * 11 filler tokens + 5 = 71
    assert doc_len == 71
    # question "where is paris ?" = 4 tokens: room 32 - 4 - 3 = 25 per window, stride 8:
    # starts 0, 8, ..., 48 (48 + 25 >= 71): 7 windows
    assert len(paris) == 7 and all(len(f.ids) <= 32 for f in features)
    france = tok.encode("france")
    for f in paris:
        if f.start:
            assert f.ids[f.start:f.end + 1] == france
    # "france" is token 69 of the context: in windows starting at 48 (and no other with room for it)
    assert [f.start > 0 for f in paris] == [False] * 6 + [True]
    assert all(f.start == f.end == 0 for f in none)  # unanswerable: every window points at [CLS]
    # each context token has its maximum context in exactly one window
    counts = np.zeros(doc_len, dtype=int)
    offset = 4 + 2
    for w, f in enumerate(paris):
        for p, best in f.max_context.items():
            counts[8 * w + p - offset] += best
    assert counts.tolist() == [1] * doc_len


def test_training_drops_answers_whose_offset_is_wrong():
    data = squad_file_data()
    # "blue" is not at character 3
    data[0]["paragraphs"][0]["qas"][1]["answers"][0]["answer_start"] = 3
    assert [e.qid for e in squad.read_examples(data, training=True)] == ["a"]
    dev = squad.read_examples(data)  # evaluation keeps every question
    assert [e.qid for e in dev] == ["a", "b"] and dev[0].answer is not None


def test_an_answer_inside_a_piece_targets_its_own_tokens():
    context = "He was born (1985), the sky"
    data = [{"paragraphs": [{"context": context, "qas": [
        {"id": "a", "question": "who ?",
         "answers": [{"text": "19", "answer_start": context.index("1985")}]}]}]}]
    tok = tokenizer()
    (f,) = squad.make_features(squad.read_examples(data, training=True), tok,
                               squad.SquadConfig(max_seq_len=64), True)
    assert f.ids[f.start:f.end + 1] == tok.encode("19")  # not "19 ##85", the whole piece


def test_improve_answer_span_keeps_a_partial_piece_whole():
    tok = tokenizer()
    ids = tok.encode("born 1985 ,")  # born 19 ##85 ,
    assert squad.improve_answer_span(ids, 0, 3, tok.encode("1985")) == (1, 2)
    # no exact match: unchanged
    assert squad.improve_answer_span(ids, 1, 2, tok.encode("85")) == (1, 2)


def test_predict_answers_by_hand():
    context = "He was born (1985), the sky"
    ex = squad.Example("q", "?", context, squad.context_pieces(context), None)
    # [CLS] ? [SEP] he was born ( 19 ##85 ) , the sky [SEP]: positions 3.. are pieces 0, 1, 2, 3, 4,
    # 4, 5, ...
    piece_of = [0, 1, 2, 3, 4, 4, 5, 6, 7, 8]
    f = squad.Feature(0, [0] * 14, [0] * 3 + [1] * 11, {3 + i: p for i, p in enumerate(piece_of)},
                      {3 + i: True for i in range(10)})
    start, end = np.zeros(14), np.zeros(14)
    start[7], end[8] = 3.0, 2.0         # "19 ##85": score 5 -> "1985" without the parentheses
    start[0], end[0] = 1.0, 0.5         # null score 1.5
    start[1], end[1] = 9.0, 9.0         # in the question: not a span
    start[12], end[4] = 4.0, 4.0        # "sky".."was" ends before it starts; "he was" scores only 4
    bert = squad.SquadConfig(answerable_classifier=False)
    preds, odds = squad.predict_answers([ex], [f], squad.FeatureLogits([start], [end], [0.7], None),
                                        bert, v2=True)
    assert preds == {"q": "1985"} and odds == {"q": pytest.approx(1.5 - 5.0)}
    start[0] = 10.0                     # null odds 10.5 - 5: the answer is still written (official)
    preds, odds = squad.predict_answers([ex], [f], squad.FeatureLogits([start], [end], [0.7], None),
                                        bert, v2=True)
    assert preds == {"q": "1985"} and odds["q"] == pytest.approx(5.5)
    # the official default: the odds are the answerability logit, the lowest over the windows
    f2 = dataclasses.replace(f)
    preds, odds = squad.predict_answers([ex], [f, f2],
                                        squad.FeatureLogits([start, start], [end, end], [0.7, -0.2],
                                                            None),
                                        squad.SquadConfig(), v2=True)
    assert preds == {"q": "1985"} and odds["q"] == pytest.approx(-0.2)
    preds, odds = squad.predict_answers([ex], [f], squad.FeatureLogits([start], [end], [0.7], None),
                                        bert, v2=False)
    assert preds == {"q": "1985"} and odds == {}  # SQuAD 1.1: no null odds
    cfg1 = squad.SquadConfig(max_answer_len=1)  # "19 ##85" is 2 tokens: now only 1-token spans
    preds, _ = squad.predict_answers([ex], [f], squad.FeatureLogits([start], [end], [0.0], None),
                                     cfg1, v2=False)
    assert preds["q"] != "1985"


@pytest.mark.parametrize("answerable", [False, True])
def test_span_model_masks_the_question_and_padding(answerable):
    tok = tokenizer()
    model = squad.SpanModel(tiny_config(tok), answerable, answerable_hidden=8)
    f = squad.make_features(squad.read_examples(squad_file_data()), tok,
                            squad.SquadConfig(max_seq_len=64), True)
    ids, seg, mask = squad.collate(f, [0, 1], tok.pad_id, "cpu")
    s, e, a, top = model(ids, seg, mask)
    assert a.shape == (2,) and (a != 0).all() == answerable and top is None
    blocked = ~((seg == 1) & (mask == 1))
    blocked[:, 0] = False
    assert (s[blocked] == squad.MASKED_LOGIT).all() and (e[blocked] == squad.MASKED_LOGIT).all()
    assert (s[~blocked] > squad.MASKED_LOGIT).all()


def squad_file_data():
    short = "He was born (1985), the sky is blue."
    return [{"paragraphs": [{"context": short, "qas": [
        {"id": "a", "question": "who was born ?",
         "answers": [{"text": "1985", "answer_start": 13}]},
        {"id": "b", "question": "what color is the sky ?",
         "answers": [{"text": "blue", "answer_start": 31}]}]}]}]


# --- end to end: download from a local server, fine-tune a tiny model, write the official files ---


def tiny_run(tmp_path):
    tok = tokenizer()
    cfg = dataclasses.replace(tiny_config(tok), num_layers=1)
    save_train_checkpoint(tmp_path / "run", tok, cfg)
    return tmp_path / "run"


def test_cli_downloads_fine_tunes_and_writes_official_files(tmp_path, http_server, capsys):
    root, url = http_server
    data = squad_file(root / "train-v2.0.json")
    squad_file(root / "dev-v2.0.json")
    run = tiny_run(tmp_path)
    argv = ["--task", "squad2", "--init", str(run), "--squad_url", url,
            "--cache_dir", str(tmp_path / "cache"), "--out_dir", str(tmp_path / "out"),
            "--max_seq_len", "32", "--doc_stride", "8", "--batch_size", "8", "--device", "cpu"]
    report = squad.main(argv)
    out = tmp_path / "out"
    preds = json.loads((out / "predictions.json").read_text())
    odds = json.loads((out / "null_odds.json").read_text())
    qids = {"born", "sky", "paris", "none"}
    assert set(preds) == qids and set(odds) == qids
    assert (all(isinstance(v, str) for v in preds.values())
            and all(isinstance(v, float) for v in odds.values()))
    contexts = [p["context"] for p in data[0]["paragraphs"]]
    # answers are context text
    assert all(v == "" or any(v in c for c in contexts) for v in preds.values())
    assert (report["dev"]["total"] == 4 and report["dev"]["HasAns_total"] == 3
            and "best_f1" in report["dev"])
    assert report["squad"]["max_answer_len"] == 30 and report["recipe"]["epochs"] == 2
    assert report["recipe"]["dropout"] is None  # no --dropout: the checkpoint's
    # the main scores apply the official qa_na_threshold to the odds written in null_odds.json
    assert report["dev"]["exact"] == pytest.approx(
        squad.evaluate(data, preds, odds, -2.75)["exact"])
    assert json.loads((out / "results.json").read_text())["dev"] == report["dev"]
    # the files were cached: a second run needs no server
    for name in ("train-v2.0.json", "dev-v2.0.json"):
        (root / name).unlink()
    squad.main(argv)
    assert "wrote" in capsys.readouterr().out


def test_init_by_hub_name_is_fetched_once(hub, tmp_path, capsys):  # noqa: F811 (the fixture)
    save_pair(hub.root)  # google/electra-tiny-discriminator on the local server
    (tmp_path / "data").mkdir()
    squad_file(tmp_path / "data" / "train-v2.0.json")
    squad_file(tmp_path / "data" / "dev-v2.0.json")
    cache = tmp_path / "hubcache"
    argv = ["--task", "squad2", "--init", "google/electra-tiny-discriminator",
            "--hub-cache-dir", str(cache), "--data-dir", str(tmp_path / "data"),
            "--out-dir", str(tmp_path / "out"), "--max-seq-len", "32", "--doc-stride", "8",
            "--epochs", "1", "--device", "cpu"]
    report = squad.main(argv)
    assert report["init"].startswith("google/electra-tiny-discriminator (revision main; "
                                     "HuggingFace electra")
    assert (cache / "google" / "electra-tiny-discriminator" / "main" / "config.json").is_file()
    assert report["dev"]["total"] == 4 and "wrote" in capsys.readouterr().out
    # cached: the server is not asked
    hub.faults["status"] = {"google/electra-tiny-discriminator": 500}
    assert squad.main(argv)["dev"] == pytest.approx(report["dev"])
    with pytest.raises(SystemExit) as e:
        squad.main(argv[:3] + ["google/no-such-model"] + argv[4:])
    assert str(e.value).startswith("error: could not fetch config.json of google/no-such-model "
                                   "(revision main)")
    assert "\n" not in str(e.value)


def test_offline_download_and_bad_data_are_one_clear_line(tmp_path, http_server):
    root, url = http_server
    run = tiny_run(tmp_path)
    base = ["--task", "squad1", "--init", str(run), "--cache_dir", str(tmp_path / "cache"),
            "--device", "cpu"]
    with pytest.raises(SystemExit,
                       match="could not download SQuAD train-v1.1.json.*--data-dir") as e:
        squad.main(base + ["--squad_url", url])  # the server has no such file: HTTP 404
    assert "\n" not in str(e.value)  # one line
    (tmp_path / "local").mkdir()
    with pytest.raises(SystemExit, match="has no train-v1.1.json"):
        squad.main(base + ["--data_dir", str(tmp_path / "local")])
    (tmp_path / "local" / "train-v1.1.json").write_text("{\"data\": [{\"title\": 1}]}")
    (tmp_path / "local" / "dev-v1.1.json").write_text("[]")
    with pytest.raises(SystemExit, match="train-v1.1.json is not a SQuAD JSON file"):
        squad.main(base + ["--data_dir", str(tmp_path / "local")])
    with pytest.raises(SystemExit, match="--doc-stride"):
        squad.main(base + ["--doc_stride", "0"])


def test_a_few_steps_lower_the_loss(tmp_path):
    from finetune import FinetuneConfig
    from support.hf import load_pretrained

    pre = load_pretrained(tiny_run(tmp_path))
    features = squad.make_features(squad.read_examples(squad_file_data()), pre.tokenizer,
                                   squad.SquadConfig(max_seq_len=64), training=True)
    ft = FinetuneConfig(lr=1e-3, layer_decay=0.8, weight_decay=0.0, batch_size=2)
    cfg = squad.SquadConfig(max_seq_len=64, epochs=15, answerable_hidden=8, joint_hidden=8)
    # answerable_classifier: 2.0
    _, losses = squad.finetune(pre, features, ft, cfg, seed=0, runtime=squad.Runtime("cpu"))
    assert losses[-1] < 0.5 * losses[0]


def test_dropout_sets_the_fine_tuned_encoders_dropout(tmp_path):
    from finetune import FinetuneConfig
    from support.hf import load_pretrained

    pre = load_pretrained(tiny_run(tmp_path))
    assert pre.config.dropout == 0.0  # the tiny preset pre-trains without dropout
    features = squad.make_features(squad.read_examples(squad_file_data()), pre.tokenizer,
                                   squad.SquadConfig(max_seq_len=64), training=True)
    cfg = squad.SquadConfig(max_seq_len=64, epochs=1, answerable_hidden=8, joint_hidden=8)
    for dropout, expected in ((0.3, 0.3), (None, 0.0)):  # None: the checkpoint's
        ft = FinetuneConfig(lr=1e-3, layer_decay=0.8, weight_decay=0.0, batch_size=2,
                            dropout=dropout)
        model, _ = squad.finetune(pre, features, ft, cfg, seed=0, runtime=squad.Runtime("cpu"))
        # the embeddings' 1, the layer's 2 (attention probabilities, the sublayer outputs)
        assert [m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)] == [expected] * 3


def test_docstring_examples():
    """The worked examples in squad.py's docstrings are run, so they cannot go stale."""
    import doctest

    result = doctest.testmod(squad)
    assert result.attempted > 10 and result.failed == 0


BAD_FLAGS = {"--seed": "-1", "--lr": "0", "--layer-decay": "1.5", "--epochs": "0",
             "--batch-size": "0", "--max-seq-len": "4", "--doc-stride": "0",
             "--max-query-len": "0", "--max-answer-len": "0", "--n-best": "0",
             "--null-threshold": "nan", "--max-train-examples": "0", "--max-dev-examples": "0",
             "--dropout": "1"}


def test_every_numeric_flag_is_range_checked_in_one_line(tmp_path):
    checked = {a.option_strings[0] for a in cli.squad_parser()._actions
               if a.type in (int, float) and a.help != argparse.SUPPRESS}
    assert set(BAD_FLAGS) == checked  # the flags with a range: every numeric flag
    for flag, value in BAD_FLAGS.items():
        with pytest.raises(SystemExit, match=f"^{flag} [^ ]+: must be") as e:
            squad.main(["--task", "squad1", "--init", "x", flag, value])
        assert "\n" not in str(e.value)


def test_windows_that_do_not_fit_the_model_are_one_clear_line(tmp_path):
    local = tmp_path / "local"
    local.mkdir()
    for name in ("train-v2.0.json", "dev-v2.0.json"):
        squad_file(local / name)
    base = ["--task", "squad2", "--init", str(tiny_run(tmp_path)), "--data_dir", str(local),
            "--device", "cpu", "--out_dir", str(tmp_path / "out")]
    with pytest.raises(SystemExit, match="--max-seq-len 100: must be at most 64"):
        squad.main(base + ["--max_seq_len", "100"])
    with pytest.raises(SystemExit, match="leaves no room for the context"):
        squad.main(base + ["--max_seq_len", "6"])  # "who was born ?" is 4 tokens: 6 - 4 - 3 < 1


@pytest.mark.parametrize("null_score, threshold", [("classifier", -2.75), ("span", 0.0)])
def test_a_tiny_model_learns_spans_and_answerability_end_to_end(tmp_path, null_score, threshold):
    """Where is CITY? -- the land after "CITY is in", or no answer when the context has no such
    sentence. A 2-layer random model learns both in seconds: a bug in the targets, the windows'
    positions, the span search, the mapping back to characters or the answerability head would
    keep the scores near chance."""
    cities, lands = [f"c{i}" for i in range(20)], [f"l{i}" for i in range(20)]
    tok = Tokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "where", "is", "in", ".", "?",
                     "the", "cat", "sat"] + cities + lands)
    rng = np.random.default_rng(0)

    def split(n, prefix):
        paragraphs = []
        for i in range(n):
            city, land = rng.choice(cities), rng.choice(lands)
            filler = " ".join(rng.choice(["the", "cat", "sat", "."], size=rng.integers(0, 8)))
            context = f"{filler} {city} is in {land} . {filler}".strip()
            start = context.index(f"{city} is in ") + len(f"{city} is in ")
            paragraphs.append({"context": context,
                               "qas": [{"id": f"{prefix}{i}", "question": f"where is {city} ?",
                                        "answers": [{"text": land, "answer_start": start}]}]})
            paragraphs.append({"context": f"the cat sat . {filler}", "qas": [
                {"id": f"{prefix}{i}none", "question": f"where is {city} ?", "is_impossible": True,
                 "answers": []}]})
        return {"version": "v2.0", "data": [{"title": "t", "paragraphs": paragraphs}]}

    local = tmp_path / "local"
    local.mkdir()
    (local / "train-v2.0.json").write_text(json.dumps(split(300, "t")))
    (local / "dev-v2.0.json").write_text(json.dumps(split(50, "d")))
    save_train_checkpoint(tmp_path / "run", tok,
                          dataclasses.replace(tiny_config(tok), num_layers=2))
    report = squad.main(["--task", "squad2", "--init", str(tmp_path / "run"),
                         "--data_dir", str(local), "--device", "cpu",
                         "--out_dir", str(tmp_path / "out"), "--lr", "1e-3", "--epochs", "10",
                         "--batch_size", "16", "--max_seq_len", "64", "--null_score", null_score])
    # the official one, or BERT's for its null score
    assert report["squad"]["null_threshold"] == threshold
    assert report["dev"]["HasAns_exact"] >= 90 and report["dev"]["NoAns_exact"] >= 90


def test_joint_head_scores_each_beam_start_as_training_would():
    """At evaluation the joint head gives, for each of the K best starts, the end logits that
    training computes with that start as the gold one; spans are scored log p(start) + log p(end |
    start)."""
    tok = tokenizer()
    torch.manual_seed(0)
    model = squad.SpanModel(tiny_config(tok), answerable=False, joint=True, beam=3,
                            joint_hidden=8).eval()
    f = squad.make_features(squad.read_examples(squad_file_data()), tok,
                            squad.SquadConfig(max_seq_len=64), True)
    ids, seg, mask = squad.collate(f, [0, 1], tok.pad_id, "cpu")
    with torch.no_grad():
        out = model(ids, seg, mask)
        assert out.start_top.shape == (2, 3) and out.end.shape == (2, 3, ids.shape[1])
        assert torch.equal(out.start_top, out.start.topk(3).indices)
        for k in range(3):
            trained = model(ids, seg, mask, start_positions=out.start_top[:, k]).end  # [B, T]
            torch.testing.assert_close(trained, out.end[:, k])


def test_joint_candidate_spans_by_hand():
    # 5 positions, context 1..4 (all max-context); starts beam [2, 1]; ends per start
    f = squad.Feature(0, [0] * 5, [0, 1, 1, 1, 1], {p: p for p in range(1, 5)},
                      {p: True for p in range(1, 5)})
    start = np.log(np.array([0.1, 0.2, 0.7, 1e-9, 1e-9]))          # log p(start) = these,
                                                                   # softmax is identity
    end = np.log(np.array([[0.1, 0.1, 0.1, 0.6, 0.1],                # given start 2: end 3 best
                           [0.1, 0.5, 0.2, 0.1, 0.1]]))              # given start 1: end 1 best
    spans = squad.candidate_spans(start, end, f, squad.SquadConfig(n_best=2), np.array([2, 1]))
    scored = {(s, e): round(score, 4) for score, s, e in spans}
    # start 2: top-2 ends 3 (0.6) and one of the 0.1s at 0..2 or 4 ...; only valid spans kept
    assert scored[(2, 3)] == round(np.log(0.7) + np.log(0.6), 4)
    assert scored[(1, 1)] == round(np.log(0.2) + np.log(0.5), 4) and (1, 2) in scored
    assert max(spans)[1:] == (2, 3)
    # a start the beam found in the batch's padding (position 7 of a 5-token window) is no span
    padded = squad.candidate_spans(start, np.concatenate([end, end[:1]]), f,
                                   squad.SquadConfig(n_best=2), np.array([2, 1, 7]))
    assert sorted(padded) == sorted(spans)


def test_the_official_files_are_size_checked(tmp_path, http_server, monkeypatch):
    """From the official URL a file must have SQuAD's published size: a short one is refused and
    not kept."""
    root, url = http_server
    squad_file(root / "train-v2.0.json")
    # stand the local server in for the official site
    monkeypatch.setattr(squad, "SQUAD_BASE_URL", url)
    with pytest.raises(squad.DownloadError, match="expected 42,123,633"):
        squad.squad_files("squad2", None, tmp_path / "cache", url)
    assert not list((tmp_path / "cache").iterdir())


def test_the_summed_squad_loss_is_batch_size_times_the_mean():
    """--loss-reduction sum sums each example's (start + end) / 2 + 0.5 x answerability loss, as the
    official run_finetuning.py sums its tasks' per-example losses: the loss, and so the gradient
    before clipping, is B times the mean's."""
    torch.manual_seed(0)
    batch, length = 5, 7
    start, end = torch.randn(batch, length), torch.randn(batch, length)
    answerable = torch.randn(batch)
    starts, ends = torch.randint(0, length, (batch,)), torch.randint(0, length, (batch,))
    impossible = torch.tensor([0.0, 1.0, 0.0, 0.0, 1.0])

    def loss(reduction):
        return (squad.span_loss(start, end, starts, ends, reduction)
                + squad.answerable_loss(answerable, impossible, 0.5, reduction))
    assert loss("sum").item() == pytest.approx(batch * loss("mean").item(), rel=1e-6)
    # the sum is over examples: one example's own loss, summed alone, is its mean
    assert loss("sum").item() == pytest.approx(sum(
        (squad.span_loss(start[i:i + 1], end[i:i + 1], starts[i:i + 1], ends[i:i + 1])
         + squad.answerable_loss(answerable[i:i + 1], impossible[i:i + 1], 0.5)).item()
        for i in range(batch)), rel=1e-6)
