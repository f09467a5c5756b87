"""glue.py: metrics and GLUE readers: hand-worked examples, scipy/sklearn references, each task's
layout."""
import numpy as np
import pytest
import scipy.stats
import sklearn.metrics

from support import glue

# --- metrics --------------------------------------------------------------------------------------


def test_mcc_by_hand():
    # pred 1 1 0 0 1 / gold 1 0 0 1 1: TP=2 (pos 0,4), FP=1 (pos 1), TN=1 (pos 2), FN=1 (pos 3)
    # MCC = (TP*TN - FP*FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) = (2-1)/sqrt(3*3*2*2) = 1/6
    assert glue.matthews_corrcoef([1, 1, 0, 0, 1], [1, 0, 0, 1, 1]) == pytest.approx(1 / 6)
    # an empty margin: defined as 0, as sklearn
    assert glue.matthews_corrcoef([0, 0, 0], [0, 1, 0]) == 0.0


def test_spearman_by_hand_with_ties():
    # x = 1 2 2 3 -> ranks 1 2.5 2.5 4 (the tied 2s share ranks 2 and 3);
    # y = 1 3 2 4 -> ranks 1 3 2 4
    # centred: dx = -1.5 0 0 1.5, dy = -1.5 .5 -.5 1.5;
    # sum dx*dy = 4.5, sum dx^2 = 4.5, sum dy^2 = 5
    # rho = 4.5 / sqrt(4.5 * 5) = sqrt(0.9)
    assert glue.average_ranks([1, 2, 2, 3]).tolist() == [1.0, 2.5, 2.5, 4.0]
    assert glue.spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(0.9 ** 0.5)


def test_f1_and_accuracy_by_hand():
    # pred 1 1 0 0 / gold 1 0 1 0: TP=1 FP=1 FN=1 -> F1 = 2/(2+1+1) = 0.5; 2 of 4 right -> acc 0.5
    assert glue.f1([1, 1, 0, 0], [1, 0, 1, 0]) == 0.5
    assert glue.accuracy([1, 1, 0, 0], [1, 0, 1, 0]) == 0.5


@pytest.mark.parametrize("seed", range(5))
def test_classification_metrics_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 2, 200)
    pred = np.where(rng.random(200) < 0.7, gold, 1 - gold)  # correlated, as a real classifier
    assert glue.accuracy(pred, gold) == pytest.approx(sklearn.metrics.accuracy_score(gold, pred))
    assert glue.f1(pred, gold) == pytest.approx(sklearn.metrics.f1_score(gold, pred))
    assert glue.matthews_corrcoef(pred, gold) == pytest.approx(
        sklearn.metrics.matthews_corrcoef(gold, pred))


@pytest.mark.parametrize("seed", range(5))
def test_correlations_match_scipy_on_random_and_tied_data(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=300)
    y = x + rng.normal(size=300)
    tied_x = np.round(rng.uniform(0, 5, 300) * 5) / 5  # STS-B-like gold scores: many ties
    tied_y = np.round(tied_x + rng.normal(size=300), 1)
    for a, b in [(x, y), (tied_x, tied_y), (tied_x, y)]:
        assert glue.pearson(a, b) == pytest.approx(scipy.stats.pearsonr(a, b)[0])
        assert glue.spearman(a, b) == pytest.approx(scipy.stats.spearmanr(a, b)[0])
        assert np.allclose(glue.average_ranks(a), scipy.stats.rankdata(a))


def test_task_metrics_and_glue_score():
    mrpc = glue.task_metrics(glue.get_task("mrpc"), [1, 1, 0, 0], [1, 0, 1, 0])
    assert mrpc == {"acc": 50.0, "f1": 50.0}
    mnli = glue.task_metrics(glue.get_task("mnli"), [0, 1, 2, 2], [0, 1, 2, 0], suffix="_mm")
    assert mnli == {"acc_mm": 75.0}
    results = {"cola": {"mcc": 60.0, "acc": 83.0}, "mrpc": {"acc": 88.0, "f1": 92.0},
               "stsb": {"pearson": 90.0, "spearman": 89.0}, "mnli": {"acc_m": 85.0, "acc_mm": 86.0},
               "wnli": {"acc": 56.0}}
    # paper: one metric per task (MCC, acc, Spearman, matched acc), WNLI left out: (60+88+89+85)/4
    assert glue.glue_score(results) == pytest.approx((60 + 88 + 89 + 85) / 4)
    # leaderboard: two-metric tasks averaged first, WNLI in: (60 + 90 + 89.5 + 85.5 + 56)/5
    assert glue.glue_score(results, leaderboard=True) == pytest.approx(
        (60 + 90 + 89.5 + 85.5 + 56) / 5)
    with pytest.raises(ValueError, match="no task to average"):
        glue.glue_score({"wnli": {"acc": 56.0}})


def test_unknown_task():
    assert glue.get_task("SST-2").name == "sst2" and glue.get_task("STS_B").name == "stsb"
    with pytest.raises(ValueError, match="unknown task 'sst3': choose from cola, sst2"):
        glue.get_task("sst3")


# --- readers: a few rows per task in GLUE's real layout -------------------------------------------


def write(folder, name, lines, bom=False):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes((b"\xef\xbb\xbf" if bom else b"")
                                + "".join(l + "\n" for l in lines).encode())


def test_cola(tmp_path):
    d = tmp_path / "CoLA"
    write(d, "train.tsv", ["gj04\t1\t\tOur friends won't buy this analysis.",
                           "gj04\t0\t*\tThey drank the pub."])  # no header in train/dev
    write(d, "test.tsv", ["index\tsentence", "0\tBill whistled past the house."])
    t = glue.get_task("cola")
    ex = glue.read_split(t, d, "train")
    assert [(e.text_a, e.text_b, e.label) for e in ex] == [
        ("Our friends won't buy this analysis.", None, 1), ("They drank the pub.", None, 0)]
    assert [(e.index, e.text_a, e.label) for e in glue.read_split(t, d, "test")] == [
        ("0", "Bill whistled past the house.", None)]


def test_sst2(tmp_path):
    d = tmp_path / "SST-2"
    write(d, "dev.tsv", ["sentence\tlabel", "it 's a charming and often affecting journey . \t1"])
    write(d, "test.tsv", ["index\tsentence", "0\tuneasy mishmash of styles and genres ."])
    t = glue.get_task("sst2")
    assert [(e.text_a, e.label) for e in glue.read_split(t, d, "dev")] == [
        ("it 's a charming and often affecting journey . ", 1)]
    assert glue.read_split(t, d, "test")[0].text_a == "uneasy mishmash of styles and genres ."


def test_mrpc_bom_and_unbalanced_quotes(tmp_path):
    d = tmp_path / "MRPC"
    write(d, "train.tsv", ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String",
                           '1\t702876\t702977\tAmrozi called him "the witness".'
                           '\t"The witness, Amrozi said.'],
          bom=True)
    write(d, "test.tsv", ["index\t#1 ID\t#2 ID\t#1 String\t#2 String",
                          "0\t1089874\t1089925\tPCCW 's chief\tCurrent"],
          bom=True)
    t = glue.get_task("mrpc")
    (e,) = glue.read_split(t, d, "train")
    assert (e.text_a, e.text_b, e.label) == ('Amrozi called him "the witness".',
                                             '"The witness, Amrozi said.', 1)
    (e,) = glue.read_split(t, d, "test")
    assert (e.index, e.text_a, e.text_b, e.label) == ("0", "PCCW 's chief", "Current", None)
    swapped = glue.add_swapped(t, glue.read_split(t, d, "train"))
    assert [(s.text_a, s.label) for s in swapped] == [('Amrozi called him "the witness".', 1),
                                                      ('"The witness, Amrozi said.', 1)]


def test_stsb_ten_columns(tmp_path):
    d = tmp_path / "STS-B"
    head = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2"
    write(d, "dev.tsv", [head + "\tscore",
                         "0\tmain-captions\tMSRvid\t2012test\t0000\tnone\tnone"
                         "\tA man is dancing.\tA man dances.\t4.750"])
    write(d, "test.tsv", [head, "0\tmain-captions\tMSRvid\t2012test\t0024\tnone\tnone"
                                "\tA girl sings.\tA girl is singing."])
    t = glue.get_task("stsb")
    (e,) = glue.read_split(t, d, "dev")
    assert (e.text_a, e.text_b, e.label) == ("A man is dancing.", "A man dances.", 4.75)
    (e,) = glue.read_split(t, d, "test")
    assert (e.index, e.text_a, e.text_b, e.label) == ("0", "A girl sings.", "A girl is singing.",
                                                      None)


def test_qqp(tmp_path):
    d = tmp_path / "QQP"
    write(d, "train.tsv", ["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate",
                           '133273\t213221\t213222\tHow is the life of a "math student"?'
                           '\tWhat is it like?\t0'])
    write(d, "test.tsv", ["id\tquestion1\tquestion2", "0\tWhy?\tWhy not?"])
    t = glue.get_task("qqp")
    (e,) = glue.read_split(t, d, "train")
    assert (e.text_a, e.text_b, e.label) == ('How is the life of a "math student"?',
                                             "What is it like?", 0)
    (e,) = glue.read_split(t, d, "test")
    assert (e.index, e.text_a, e.text_b) == ("0", "Why?", "Why not?")


def test_mnli_matched_and_mismatched(tmp_path):
    d = tmp_path / "MNLI"
    parses = "\t( ( A ) )\t( ( B ) )\t(ROOT A)\t(ROOT B)"
    write(d, "train.tsv", ["index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\t"
                           "sentence2_binary_parse\tsentence1_parse\tsentence2_parse\t"
                           "sentence1\tsentence2\tlabel1\tgold_label",
                           "0\t31193\t31193n\tgovernment" + parses +
                           "\tConceptually cream skimming.\tProduct and geography."
                           "\tneutral\tneutral"])
    dev_head = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
                "sentence1_parse\tsentence2_parse\tsentence1\tsentence2\tlabel1\tlabel2\tlabel3\t"
                "label4\tlabel5\tgold_label")
    labels5 = "\tentailment\tentailment\tneutral\tentailment\tentailment\tentailment"
    write(d, "dev_matched.tsv", [dev_head, "0\t63735\t63735n\tslate" + parses +
                                 "\tThe new rights.\tEveryone likes them." + labels5])
    write(d, "dev_mismatched.tsv", [dev_head, "0\t75290\t75290c\tletters" + parses +
                                    "\tYour gift.\tNo gift." +
                                    labels5.replace("entailment", "contradiction")])
    test_head = "\t".join(dev_head.split("\t")[:10])
    write(d, "test_matched.tsv", [test_head,
                                  "0\t31493\t31493\ttravel" + parses + "\tHierbas.\tHerbs."])
    t = glue.get_task("mnli")
    assert [(e.text_a, e.label) for e in glue.read_split(t, d, "train")] == [
        ("Conceptually cream skimming.", 2)]
    # gold_label is the last column
    assert [e.label for e in glue.read_split(t, d, "dev_matched")] == [1]
    assert [e.label for e in glue.read_split(t, d, "dev_mismatched")] == [0]
    (e,) = glue.read_split(t, d, "test_matched")
    assert (e.index, e.text_a, e.text_b, e.label) == ("0", "Hierbas.", "Herbs.", None)


@pytest.mark.parametrize("name,label,expected", [("qnli", "not_entailment", 1),
                                                 ("rte", "entailment", 0), ("wnli", "1", 1)])
def test_qnli_rte_wnli(tmp_path, name, label, expected):
    t = glue.get_task(name)
    d = tmp_path / t.folder
    write(d, "train.tsv", ["index\tsentence1\tsentence2\tlabel",
                           f"0\tNo Weapons of Mass Destruction.\tWeapons found.\t{label}"])
    write(d, "test.tsv", ["index\tsentence1\tsentence2",
                          "7\tMaude and Dora had seen the trains.\tThey had."])
    (e,) = glue.read_split(t, d, "train")
    assert (e.text_a, e.text_b, e.label) == ("No Weapons of Mass Destruction.", "Weapons found.",
                                             expected)
    (e,) = glue.read_split(t, d, "test")
    assert (e.index, e.text_b, e.label) == ("7", "They had.", None)


def test_reader_errors_name_file_and_line(tmp_path):
    t = glue.get_task("rte")
    d = tmp_path / "RTE"
    with pytest.raises(FileNotFoundError, match=r"RTE/train.tsv not found.*leave out --data-dir"):
        glue.read_split(t, d, "train")
    write(d, "train.tsv", ["index\tsentence1\tsentence2\tlabel", "0\ta\tb\tentailment", "1\ta\tb"])
    with pytest.raises(ValueError,
                       match=r"train.tsv, line 3: expected 4 tab-separated fields, found 3"):
        glue.read_split(t, d, "train")
    write(d, "train.tsv", ["index\tsentence1\tsentence2\tlabel", "0\ta\tb\tmaybe"])
    with pytest.raises(ValueError,
                       match=r"line 2: label 'maybe' is not one of entailment, not_entailment"):
        glue.read_split(t, d, "train")
    s = tmp_path / "STS-B"
    write(s, "train.tsv", ["i\tg\tf\ty\to\ts1\ts2\tsentence1\tsentence2\tscore",
                           "0\tg\tf\ty\to\tn\tn\ta\tb\thigh"])
    with pytest.raises(ValueError, match=r"line 2: score 'high' is not a number"):
        glue.read_split(glue.get_task("stsb"), s, "train")


def test_max_examples(tmp_path):
    d = tmp_path / "SST-2"
    write(d, "train.tsv", ["sentence\tlabel"] + [f"s{i}\t{i % 2}" for i in range(10)])
    assert ([e.text_a for e in glue.read_split(glue.get_task("sst2"), d, "train", max_examples=3)]
            == ["s0", "s1", "s2"])
