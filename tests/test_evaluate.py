"""evaluate.py blimp: D's sentence score and the MLM's pseudo-log-likelihood worked by hand from
models whose logits the test sets, ties counted half, batching and padding that change nothing,
the download against a local server, and the command line on a tiny run folder built here."""
import doctest
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from conftest import save_run_folder

from electra import Electra, get_config
from support import evaluate, hf
from support.plumbing import DownloadError
from tokenizer import Tokenizer

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "cat", "cats", "sleeps", "sleep", "dog", "barks", "bark", "."]


def tiny_tokenizer():
    return Tokenizer(SPECIALS + WORDS)


def tiny_config(tok, **kw):
    return get_config("tiny", vocab_size=len(tok), embedding_size=16, hidden_size=32, num_layers=2,
                      num_heads=2, intermediate_size=64, max_position=32, pad_id=tok.pad_id,
                      cls_id=tok.cls_id, sep_id=tok.sep_id, mask_id=tok.mask_id, **kw)


def blimp_line(good, bad, field="morphology", uid="p"):
    return json.dumps({"sentence_good": good, "sentence_bad": bad, "field": field, "UID": uid,
                       "pairID": "0"}) + "\n"


def write_blimp(folder, paradigms):
    """{uid: [(good, bad), ...]} as BLiMP's files, the field of every pair "syntax/semantics"
    for uids that end in "_ss" (as principle_A_case_2 spells it), else "morphology"."""
    folder.mkdir(parents=True, exist_ok=True)
    for uid, pairs in paradigms.items():
        field = "syntax/semantics" if uid.endswith("_ss") else "morphology"
        lines = [blimp_line(g, b, field, uid) for g, b in pairs]
        (folder / f"{uid}.jsonl").write_text("".join(lines), encoding="utf-8")
    return folder


def test_docstring_examples():
    result = doctest.testmod(evaluate)
    assert result.failed == 0 and result.attempted >= 8


# --- scores worked by hand ------------------------------------------------------------------


class TableD(torch.nn.Module):
    """A discriminator whose logit of *original* depends on the token alone: logits[id]."""

    def __init__(self, logits):
        super().__init__()
        self.table = torch.tensor(logits)

    def forward(self, input_ids, segment_ids, attention_mask):
        return self.table[input_ids]  # [B, T]


class FixedMLM:
    """A masked LM whose logits at the masked position are `w` whatever the context, and which
    checks that the position asked for holds [MASK], the only one in its row."""

    def __init__(self, w, mask_id):
        self.w = torch.tensor(w)
        self.mask_id = mask_id
        self.rows_seen = 0

    def hidden_states(self, input_ids, segment_ids, attention_mask):
        return input_ids[..., None].float()  # [B, T, 1]: the input itself, for logits() to check

    def logits(self, h, m):
        x = h[..., 0].long()  # [B, T]
        assert (x.gather(1, m) == self.mask_id).all() and ((x == self.mask_id).sum(1) == 1).all()
        self.rows_seen += x.shape[0]
        return self.w.expand(x.shape[0], m.shape[1], -1)  # [B, K, V]


def hand_model(tok):
    """D: [CLS]/[SEP] logit -20 (they would decide every pair if they counted), "the" 0
    (D = 1/2), "sleeps" and "cat" ln 3 (3/4), "sleep" and "." -ln 3 (1/4), "bark" and "barks" 0.
    MLM: logit ln 3 for "sleeps", 0 for every other token, so p(sleeps) = 3 / (V + 2) and
    p(other) = 1 / (V + 2) whatever is masked."""
    v = tok.vocab
    d = [0.0] * len(tok)
    d[tok.cls_id] = d[tok.sep_id] = -20.0
    d[v["cat"]] = d[v["sleeps"]] = math.log(3)
    d[v["sleep"]] = d[v["."]] = -math.log(3)
    w = [0.0] * len(tok)
    w[v["sleeps"]] = math.log(3)
    config = SimpleNamespace(max_position=32)
    return SimpleNamespace(discriminator=TableD(d), generator=FixedMLM(w, tok.mask_id), mlm=None,
                           config=config)


def test_d_score_and_pll_by_hand():
    tok = tiny_tokenizer()
    model = hand_model(tok)
    rows = [tok.encode_pair(s)[0] for s in ("the cat sleeps", "the cat sleep .")]
    zeros = [[0] * len(r) for r in rows]
    x, segment_ids, attention_mask = evaluate.pad_batch(rows, zeros, tok.pad_id, "cpu")
    total, mean = evaluate.d_scores(model.discriminator(x, segment_ids, attention_mask),
                                    attention_mask)
    good = math.log(1 / 2) + math.log(3 / 4) + math.log(3 / 4)
    bad = math.log(1 / 2) + math.log(3 / 4) + math.log(1 / 4) + math.log(1 / 4)
    assert total.tolist() == pytest.approx([good, bad])
    assert mean.tolist() == pytest.approx([good / 3, bad / 4])
    z = len(tok) + 2  # the MLM's softmax denominator: V - 1 tokens at e^0 and "sleeps" at 3
    pll = evaluate.pseudo_log_likelihood(model.generator, rows, tok.mask_id, tok.pad_id, "cpu",
                                         batch_size=2)  # 7 masked copies in 4 batches
    by_hand = [math.log(3 / z) + 2 * math.log(1 / z), 4 * math.log(1 / z)]
    assert pll.tolist() == pytest.approx(by_hand)
    assert model.generator.rows_seen == 3 + 4


def test_accuracy_ties_count_half():
    tok = tiny_tokenizer()
    pairs = [
        # D: 1/2, 3/4, 3/4 against 1/2, 3/4, 1/4: 1 by sum and mean; the MLM: 3/z against 1/z: 1
        evaluate.MinimalPair("the cat sleeps", "the cat sleep", "morphology", "a"),
        # D: one token at 1/4 against 3/4, 3/4, 1/4: the longer sum is lower (D sum 1), its mean
        # higher (D mean 0); the MLM: log 1/z > 2 log 1/z + log 3/z as z = 16 > sqrt(3): 1
        evaluate.MinimalPair("sleep", "cat sleeps sleep", "morphology", "a"),
        # two different words D and the MLM score alike: a tie by the scores, 1/2 each
        evaluate.MinimalPair("the dog barks", "the dog bark", "syntax", "b"),
        # words the vocab lacks read [UNK] in both: the same ids, a tie by definition
        evaluate.MinimalPair("the zebra runs", "the zebra run", "syntax", "b"),
    ]
    credits, identical = evaluate.blimp_credits(hand_model(tok), tok, pairs, batch_size=2,
                                                device="cpu")
    assert identical == 1
    assert credits == {"d_sum": [1.0, 1.0, 0.5, 0.5], "d_mean": [1.0, 0.0, 0.5, 0.5],
                       "mlm_pll": [1.0, 1.0, 0.5, 0.5]}
    acc = evaluate.accuracies(pairs, credits)
    assert acc["overall"] == {"pairs": 4, "d_sum": 0.75, "d_mean": 0.5, "mlm_pll": 0.75}
    assert acc["fields"] == {
        "morphology": {"pairs": 2, "d_sum": 1.0, "d_mean": 0.5, "mlm_pll": 1.0},
        "syntax": {"pairs": 2, "d_sum": 0.5, "d_mean": 0.5, "mlm_pll": 0.5}}
    assert acc["paradigms"]["b"] == {"field": "syntax", **acc["fields"]["syntax"]}
    by_rule = [evaluate.pair_credit(*s) for s in ((1.0, 0.0), (0.0, 1.0), (2.0, 2.0))]
    assert by_rule == [1.0, 0.0, 0.5]


# --- the real model: batching and padding change nothing --------------------------------------


def test_scores_of_a_real_model_match_one_sentence_at_a_time():
    tok = tiny_tokenizer()
    torch.manual_seed(0)
    model = Electra(tiny_config(tok)).eval()
    sentences = ["the cat sleeps .", "dog", "the the cat barks bark sleep ."]
    rows = [tok.encode_pair(s)[0] for s in sentences]
    G = model.generator
    with torch.no_grad():
        pll = evaluate.pseudo_log_likelihood(G, rows, tok.mask_id, tok.pad_id, "cpu", batch_size=3)
        zeros = [[0] * len(r) for r in rows]
        x, segment_ids, attention_mask = evaluate.pad_batch(rows, zeros, tok.pad_id, "cpu")
        total, mean = evaluate.d_scores(model.discriminator(x, segment_ids, attention_mask),
                                        attention_mask)
        for i, row in enumerate(rows):
            x = torch.tensor([row])  # [1, T]: alone, unpadded
            ones = torch.ones_like(x)
            log_d = model.p_original(x, torch.zeros_like(x), ones).log()[0, 1:-1]
            assert total[i].item() == pytest.approx(log_d.sum().item(), abs=1e-5)
            assert mean[i].item() == pytest.approx(log_d.mean().item(), abs=1e-5)
            expected = 0.0
            for t in range(1, len(row) - 1):  # the definition, one masked copy at a time
                x_masked = x.clone()
                x_masked[0, t] = tok.mask_id
                h = G.hidden_states(x_masked, torch.zeros_like(x), ones)
                every = torch.arange(len(row))[None]  # [1, T]
                log_p = G.logits(h, every).log_softmax(-1)[0, t, row[t]]
                expected += log_p.item()
            assert pll[i].item() == pytest.approx(expected, abs=1e-4)


# --- the data: read, and downloaded once from a local server -------------------------------------


def test_read_blimp_takes_the_first_n_and_one_field_spelling(tmp_path):
    folder = write_blimp(tmp_path / "b", {"x_ss": [("a b", "b a"), ("c d", "d c"), ("e", "f")],
                                          "y": [("g", "h")]})
    pairs = evaluate.read_blimp(folder, 2)
    assert [(p.good, p.paradigm, p.field) for p in pairs] == [
        ("a b", "x_ss", "syntax_semantics"), ("c d", "x_ss", "syntax_semantics"),
        ("g", "y", "morphology")]
    assert len(evaluate.read_blimp(folder, None)) == 4
    (folder / "z.jsonl").write_text('{"sentence_good": "x"}\n')
    with pytest.raises(ValueError, match=r"z.jsonl line 1 is not a BLiMP pair"):
        evaluate.read_blimp(folder, None)
    with pytest.raises(FileNotFoundError, match="no .jsonl files"):
        evaluate.read_blimp(tmp_path, None)


def test_the_67_paradigms_download_once(http_server, tmp_path):
    root, url = http_server
    assert len(evaluate.BLIMP_PARADIGMS) == 67 and len(set(evaluate.BLIMP_PARADIGMS)) == 67
    served = {uid: [(f"good {uid} {i}", f"bad {uid} {i}") for i in range(3)]
              for uid in evaluate.BLIMP_PARADIGMS}
    write_blimp(root, served)
    cache = tmp_path / "cache"
    assert evaluate.download_blimp(cache, url) == cache
    for uid in evaluate.BLIMP_PARADIGMS:
        assert (cache / f"{uid}.jsonl").read_bytes() == (root / f"{uid}.jsonl").read_bytes()
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".jsonl")] == []
    for f in root.iterdir():  # a second call reads no network: the server has nothing now
        f.unlink()
    assert evaluate.download_blimp(cache, url) == cache
    pairs = evaluate.read_blimp(cache, 2)
    assert len(pairs) == 2 * 67 and pairs[1].good == f"good {evaluate.BLIMP_PARADIGMS[0]} 1"


def test_a_failed_download_says_what_to_do_and_leaves_no_file(http_server, tmp_path):
    root, url = http_server
    write_blimp(root, {uid: [("a", "b")] for uid in evaluate.BLIMP_PARADIGMS[:3]})
    missing = evaluate.BLIMP_PARADIGMS[3]  # the first one the server lacks
    with pytest.raises(DownloadError, match=rf"(?s){missing}.jsonl.*HTTP error 404.*--data-dir"):
        evaluate.download_blimp(tmp_path / "cache", url)
    left = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert left == [f"{uid}.jsonl" for uid in evaluate.BLIMP_PARADIGMS[:3]]


def test_the_base_url_comes_from_the_environment():
    env = {**os.environ, "ELECTRA_BLIMP_URL": "http://127.0.0.1:1/blimp"}
    got = subprocess.run([sys.executable, "-c",
                          "from support import evaluate; print(evaluate.BLIMP_URL)"],
                         cwd=Path(evaluate.__file__).parent.parent, env=env, capture_output=True,
                         text=True, check=True)
    assert got.stdout.strip() == "http://127.0.0.1:1/blimp"


# --- the command line ----------------------------------------------------------------------


def run_folder(folder, tok, **kw):
    """A run folder as train.py writes it (conftest.save_run_folder), model seed 1."""
    return save_run_folder(folder, tok, tiny_config(tok, **kw), seed=1)


PARADIGMS = {"agreement": [("the cat sleeps .", "the cat sleep ."),
                           ("the dogs bark", "the dogs barks"), ("the cat", "cat the")],
             "anaphor_ss": [("the dog barks .", "the dog bark ."), ("the zebra", "the zebra")]}


def test_cli_on_a_run_folder_its_random_twin_and_its_hf_export(tmp_path, capsys):
    tok = tiny_tokenizer()
    model = run_folder(tmp_path / "run", tok)
    data = write_blimp(tmp_path / "blimp", PARADIGMS)
    argv = ["blimp", "--init", str(tmp_path / "run"), "--data-dir", str(data),
            "--per-paradigm", "2", "--batch-size", "3"]
    trained = evaluate.main(argv)
    saved = json.loads((tmp_path / "run" / "blimp.json").read_text())
    assert saved == trained and saved["overall"]["pairs"] == 4 and saved["identical_pairs"] == 1
    assert set(saved["fields"]) == {"morphology", "syntax_semantics"}
    assert set(saved["paradigms"]) == {"agreement", "anaphor_ss"}
    assert "step 7" in saved["init"] and saved["random"] is False
    table = capsys.readouterr().out
    assert "overall" in table and "MLM PLL" in table and "syntax_semantics" in table
    # The scores are the checkpoint's model's: the same credits computed here from it directly.
    pairs = evaluate.read_blimp(data, 2)
    credits, _ = evaluate.blimp_credits(model.eval(), tok, pairs, batch_size=8, device="cpu")
    assert evaluate.accuracies(pairs, credits)["overall"] == saved["overall"]
    # --random: its twin's file beside it, the same config and vocab, fresh weights
    evaluate.main(argv + ["--random", "--seed", "3"])
    twin = json.loads((tmp_path / "run" / "blimp-random-seed3.json").read_text())
    assert twin["random"] is True and twin["init"].startswith("random weights (seed 3)")
    assert twin["overall"]["pairs"] == 4
    # The same model exported in HuggingFace's layout (D's sign flipped there and back) scores the
    # same; its discriminator folder alone scores D only.
    hf.export_hf(model, tmp_path / "run" / "vocab.txt", tmp_path / "hf")
    out = tmp_path / "hf_results"
    exported = evaluate.main(argv[:1] + ["--init", str(tmp_path / "hf")] + argv[3:]
                             + ["--out", str(out)])
    assert exported["overall"] == pytest.approx(saved["overall"])
    d_only = evaluate.main(argv[:1] + ["--init", str(tmp_path / "hf" / "discriminator")] + argv[3:]
                           + ["--out", str(out)])
    without_mlm = {k: v for k, v in saved["overall"].items() if k != "mlm_pll"}
    assert d_only["overall"] == pytest.approx(without_mlm)
    assert "      -" in capsys.readouterr().out  # the table's MLM column reads "-"


def test_cli_bert_objective_scores_its_masked_lm(tmp_path):
    tok = tiny_tokenizer()
    run_folder(tmp_path / "bert", tok, objective="bert")
    data = write_blimp(tmp_path / "blimp", PARADIGMS)
    got = evaluate.main(["blimp", "--init", str(tmp_path / "bert"), "--data-dir", str(data),
                         "--threads", "1"])
    assert set(got["overall"]) == {"pairs", "mlm_pll"} and got["overall"]["pairs"] == 5
    assert got["threads"] == 1


def test_cli_random_from_a_vocab_downloads_the_data(http_server, tmp_path):
    root, url = http_server
    pairs = [("the cat sleeps", "the cat sleep")] * 2
    write_blimp(root, {uid: pairs for uid in evaluate.BLIMP_PARADIGMS})
    tok = tiny_tokenizer()
    tok.save(tmp_path / "vocab.txt")
    got = evaluate.main(["blimp", "--random", "--vocab", str(tmp_path / "vocab.txt"),
                         "--blimp-url", url, "--cache-dir", str(tmp_path / "cache"),
                         "--per-paradigm", "1", "--out", str(tmp_path / "out")])
    assert got["overall"]["pairs"] == 67 and len(list((tmp_path / "cache").glob("*.jsonl"))) == 67
    assert (tmp_path / "out" / "blimp-random-seed0.json").is_file()


@pytest.mark.parametrize("objective, scores", [
    ("bert", {"mlm_pll"}), ("electric", {"electric"}), ("electra", {"d_sum", "d_mean", "mlm_pll"})])
def test_cli_random_draws_the_objectives_model(objective, scores, tmp_path):
    tok = tiny_tokenizer()
    tok.save(tmp_path / "vocab.txt")
    data = write_blimp(tmp_path / "blimp", PARADIGMS)
    got = evaluate.main(["blimp", "--random", "--vocab", str(tmp_path / "vocab.txt"),
                         "--objective", objective, "--data-dir", str(data),
                         "--out", str(tmp_path / "out")])
    assert set(got["overall"]) == {"pairs"} | scores
    assert set(got["seconds_per_pair"]) == scores and objective in got["init"]


def test_cli_unknown_objective_is_one_line(tmp_path):
    tiny_tokenizer().save(tmp_path / "vocab.txt")
    with pytest.raises(SystemExit, match="--objective gan: .*objective") as e:
        evaluate.main(["blimp", "--random", "--vocab", str(tmp_path / "vocab.txt"),
                       "--objective", "gan"])
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("argv, message", [
    (["blimp"], "pass --init"),
    (["blimp", "--init", "x", "--objective", "bert"], "an --init's objective is its own"),
    (["blimp", "--init", "no/such/folder/x"], "does not exist"),
    (["blimp", "--init", "."], "no ckpt.pt there"),
    (["blimp", "--random", "--vocab", "v.txt", "--per-paradigm", "-1"], "--per-paradigm -1"),
    (["blimp", "--random", "--vocab", "v.txt", "--threads", "0"], "--threads 0"),
])
def test_cli_errors_are_one_line(argv, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit, match=message) as e:
        evaluate.main(argv)
    assert "\n" not in str(e.value)
