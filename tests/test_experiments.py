"""Smoke tests of experiments/: each script end to end on a corpus, GLUE-format TSVs and
BLiMP-format jsonl files written here, with a 1-layer 16-wide model, a handful of updates, 1 seed
and a few examples; then resuming.

The three scripts share one --runs-dir (module fixture), as they would in real use, so the tests
also check that identical runs are reused across experiments rather than trained again.
"""
import doctest
import json
import random
import re
from pathlib import Path
from types import SimpleNamespace

import matplotlib
import pytest
import torch

import finetune
import train
from experiments import ablations, common, electra_vs_bert, generator_size, pool_seeds
from support import evaluate

ROOT = Path(__file__).resolve().parents[1]
WORDS = ("the cat sat on a mat while dogs ran over green hills and birds sang songs of old "
         "kings who ruled wide lands near the sea").split()
# A model small enough that a pre-training update takes milliseconds (1 layer, hidden 16).
MODEL = ["--set", "embedding_size=16", "--set", "hidden_size=16", "--set", "num_layers=1",
         "--set", "num_heads=1", "--set", "intermediate_size=32", "--vocab-size", "120",
         "--seq-len", "32", "--batch-size", "4"]
FT = ["--seeds", "1", "--ft-examples", "8", "--ft-epochs", "1", "--checkpoints", "2"]


def _sentence(rng, lo=3, hi=8):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A 30-document corpus and 12-row train / 6-row dev TSVs of SST-2, MRPC and STS-B in GLUE's
    layouts."""
    root = tmp_path_factory.mktemp("experiments")
    rng = random.Random(0)
    (root / "corpus").mkdir()
    docs = ["\n".join(_sentence(rng, 5, 12) + " ." for _ in range(6)) for _ in range(30)]
    (root / "corpus" / "a.txt").write_text("\n\n".join(docs) + "\n")
    glue = root / "glue"
    for folder in ("SST-2", "MRPC", "STS-B"):
        (glue / folder).mkdir(parents=True)
    for split, n in (("train", 12), ("dev", 6)):
        (glue / "SST-2" / f"{split}.tsv").write_text(
            "sentence\tlabel\n" + "".join(f"{_sentence(rng)}\t{i % 2}\n" for i in range(n)))
        (glue / "MRPC" / f"{split}.tsv").write_text(
            "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
            + "".join(f"{i % 2}\t{i}\t{i + 100}\t{_sentence(rng)}\t{_sentence(rng)}\n"
                      for i in range(n)))
        (glue / "STS-B" / f"{split}.tsv").write_text(
            "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2"
            "\tscore\n"
            + "".join(f"{i}\tmain\tf\t2012\t{i}\ts\ts\t{_sentence(rng)}\t{_sentence(rng)}"
                      f"\t{i * 0.4:.2f}\n"
                      for i in range(n)))
    blimp = root / "blimp"  # BLiMP's layout: a jsonl file per paradigm, a minimal pair a line
    blimp.mkdir()
    pairs = (("the cat sat on a mat .", "the cat on sat a mat ."),
             ("dogs ran over green hills .", "dogs over ran green hills ."),
             ("birds sang songs .", "birds songs sang ."))
    for uid, field in (("word_order", "syntax"), ("agreement", "syntax/semantics")):
        lines = [json.dumps({"sentence_good": good, "sentence_bad": bad, "field": field,
                             "UID": uid, "pairID": str(i)}) + "\n"
                 for i, (good, bad) in enumerate(pairs)]
        (blimp / f"{uid}.jsonl").write_text("".join(lines))
    return root


def test_docstring_examples():
    assert doctest.testmod(common).attempted >= 4
    assert doctest.testmod(common).failed == 0


def _argv(data, name, *extra):
    return (["--data", str(data / "corpus"), "--flops", "5e7", "--glue-dir", str(data / "glue"),
             "--runs-dir", str(data / "runs"), "--out", str(data / "out" / name), "--threads", "1"]
            + MODEL + FT + list(extra))


class Calls:
    """Counts (and records the argv of) train.main and finetune.main calls, passing them through."""

    def __init__(self, monkeypatch, fail=False):
        self.train, self.finetune = [], []
        real_train, real_ft = train.main, finetune.main

        def fake_train(argv):
            self.train.append(argv)
            assert not fail, f"pre-training was redone: {argv}"
            return real_train(argv)

        def fake_ft(argv):
            self.finetune.append(argv)
            assert not fail, f"fine-tuning was redone: {argv}"
            return real_ft(argv)

        monkeypatch.setattr(train, "main", fake_train)
        monkeypatch.setattr(finetune, "main", fake_ft)


def _check_outputs(out, name, labels, rows_expected, score="score"):
    results = json.loads((out / "results.json").read_text())
    md = (out / f"{name}.md").read_text()
    png = (out / f"{name}.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert [r["label"] for r in results["rows"]] == labels
    assert len(results["rows"]) == rows_expected
    table = [line for line in md.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(table) == 1 + rows_expected  # header + one line per row
    for row, line in zip(results["rows"], table[1:]):
        assert line.startswith(f"| {row['label']} |")
        assert score in row  # every task of every row was fine-tuned
        assert f"{row[score]:.1f}" in line
    return results


@pytest.fixture(scope="module")
def exp1(data):
    """electra_vs_bert end to end: 2 objectives x (random weights + 2 snapshots) x 3 tasks x 1
    seed."""
    with pytest.MonkeyPatch.context() as mp:
        calls = Calls(mp)
        results = electra_vs_bert.main(_argv(data, "exp1"))
    return results, calls


def test_electra_vs_bert_end_to_end(data, exp1):
    results, calls = exp1
    # The step-0 snapshot is the model train.py built for the run (same config, same parameters),
    # untrained.
    for run, encoder in zip(results["runs"], ("discriminator", "mlm")):
        init, first = (torch.load(f"{run['dir']}/snapshots/step{s}.pt", weights_only=True)
                       for s in (0, run["stops"][0]))
        assert init["model_config"] == first["model_config"]
        assert init["model"].keys() == first["model"].keys()
        assert not torch.equal(init["model"][f"{encoder}.layers.0.fc1.weight"],
                               first["model"][f"{encoder}.layers.0.fc1.weight"])
    out = data / "out" / "exp1"
    _check_outputs(out, "electra_vs_bert", ["ELECTRA"] * 3 + ["BERT"] * 3, 6, score="score_mean")
    runs = {r["objective"]: r for r in results["runs"]}
    # Equal compute: steps = floor(5e7 / FLOPs per update), BERT's update being cheaper, it gets
    # more.
    for r in runs.values():
        assert r["steps"] == int(5e7 // r["flops_per_step"])
        assert r["stops"] == [round(r["steps"] / 2), r["steps"]]
    assert runs["bert"]["steps"] > runs["electra"]["steps"]
    rows = results["rows"]
    assert [r["step"] for r in rows] == [0] + runs["electra"]["stops"] + [0] + runs["bert"]["stops"]
    assert rows[0]["flops"] == 0 and rows[0]["objective"] == "electra"  # ELECTRA's initial weights
    assert rows[3]["flops"] == 0 and rows[3]["objective"] == "bert"  # BERT's: its own zero point
    assert [r["random"] for r in rows] == [True, False, False] * 2
    assert all(set(r["tasks"]) == {"sst2", "mrpc", "stsb"} for r in rows)
    assert (rows[0]["tasks"]["stsb"]["metric"] == "spearman"
            and rows[0]["tasks"]["mrpc"]["metric"] == "acc")
    # Each run trained in two segments (stop at the snapshot, then --resume); 18 fine-tunings.
    assert len(calls.train) == 4 and sum("--resume" in a for a in calls.train) == 2
    assert len(calls.finetune) == 18 and len(results["finetune"]) == 18


def test_electra_vs_bert_resume_redoes_nothing(data, exp1, monkeypatch):
    before = json.loads((data / "out" / "exp1" / "results.json").read_text())
    Calls(monkeypatch, fail=True)
    again = electra_vs_bert.main(_argv(data, "exp1"))
    assert again["rows"] == before["rows"]
    # The results JSON alone is enough: with the run folders' fine-tuning results gone, nothing is
    # redone.
    saved = {f: f.read_bytes() for f in (data / "runs").glob("*/finetune/*.json")}
    assert len(saved) == 18
    for f in saved:
        f.unlink()
    assert electra_vs_bert.main(_argv(data, "exp1"))["rows"] == before["rows"]
    for f, content in saved.items():  # the other experiments reuse them
        f.write_bytes(content)
    # --ft-checkpoints 2: each run's random initialisation and second (last) snapshot, all done.
    last = electra_vs_bert.main(_argv(data, "exp1", "--ft-checkpoints", "2"))["rows"]
    assert [(r["label"], r["step"]) for r in last] == [(r["label"], r["step"])
                                                       for r in before["rows"]
                                                       if r["step"] in (0, r["steps"])]


def test_ablations_reuses_shared_runs(data, exp1, monkeypatch):
    calls = Calls(monkeypatch)
    results = ablations.main(_argv(data, "exp2", "--tasks", "sst2"))
    labels = ["ELECTRA", "All-Tokens MLM", "Replace MLM", "ELECTRA 15%", "BERT"]
    _check_outputs(data / "out" / "exp2", "ablations", [x for x in labels for _ in (0, 1)], 10,
                   score="score_mean")
    # ELECTRA and BERT come from electra_vs_bert's runs: only the three ablations are pre-trained.
    trained = {a[a.index("--objective") + 1] for a in calls.train}
    assert trained == {"all_tokens_mlm", "replace_mlm", "electra_15"}
    # their random weights and final snapshots on SST-2; ELECTRA's and BERT's are reused
    assert len(calls.finetune) == 6
    rows = results["rows"]
    # each objective's random weights (update 0), its zero point, then its final snapshot only
    assert [r["step"] for r in rows] == [s for r in rows[1::2] for s in (0, r["steps"])]
    md = (data / "out" / "exp2" / "ablations.md").read_text().splitlines()
    for zero, last in zip(rows[0::2], rows[1::2]):
        gain = last["tasks"]["sst2"]["mean"] - zero["tasks"]["sst2"]["mean"]
        line = next(x for x in md if x.startswith(f"| {last['label']} |") and "random" not in x)
        assert line.rstrip(" |").endswith(f"{gain:+.1f}")
    # D's context AUC where the objective has a D, "-" for the MLM-only ones
    header = [c.strip() for c in next(x for x in md if x.startswith("| objective")).split("|")]
    col = header.index("context AUC")
    assert "mean of tasks" not in header  # one task: its mean would only repeat its column
    for r in rows[1::2]:
        line = next(x for x in md if x.startswith(f"| {r['label']} |") and "random" not in x)
        shown = line.split("|")[col].strip()
        if r["objective"] in ("electra", "electra_15"):
            assert shown == f"{r['context_auc']:.3f}"
        else:
            assert shown == "-"
    flops = [r["flops"] for r in rows[1::2]]
    assert max(flops) <= 5e7 and min(flops) > 5e7 * 0.8  # equal compute, within one update


def test_generator_size_resumes_an_interrupted_run(data, exp1, monkeypatch):
    argv = _argv(data, "exp3", "--tasks", "sst2", "--fractions", "1/8", "1/4")
    # Interrupt the 1/8 run: train it to update 2 only, as a killed run would leave it.
    ctx = common.setup(generator_size.parse_args(argv))
    run = common.make_run(ctx, "electra", "tiny", "1/8", generator_fraction=0.125)
    train.main(run.argv + ["--stop-at", "2"])
    calls = Calls(monkeypatch)
    results = generator_size.main(argv)
    _check_outputs(data / "out" / "exp3", "generator_size", ["1/8", "1/8", "1/4", "1/4"], 4,
                   score="score_mean")
    rows = results["rows"]
    assert [r["generator_hidden"] for r in rows] == [2, 2, 4, 4]  # round(16/8), round(16/4)
    # Each size's random weights (update 0), its zero point, before its final snapshot.
    assert [r["random"] for r in rows] == [True, False] * 2
    assert [r["step"] for r in rows] == [0, rows[1]["steps"], 0, rows[3]["steps"]]
    md = (data / "out" / "exp3" / "generator_size.md").read_text().splitlines()
    for zero, last in (rows[0:2], rows[2:4]):
        gain = last["tasks"]["sst2"]["mean"] - zero["tasks"]["sst2"]["mean"]
        line = next(x for x in md if x.startswith(f"| {last['label']} |") and "random" not in x)
        assert line.rstrip(" |").endswith(f"{gain:+.1f}")
    # The 1/8 run continued from its checkpoint (--resume); the 1/4 run is electra_vs_bert's
    # ELECTRA.
    assert len(calls.train) == 2 and all("--resume" in a for a in calls.train)
    assert all(f"generator_fraction={0.125}" in a for a in calls.train)
    steps = [json.loads(line)["step"]
             for line in (run.dir / "train" / "metrics.jsonl").read_text().splitlines()
             if json.loads(line)["split"] == "train"]
    assert steps == sorted(set(steps)) and steps[-1] == run.steps  # one unbroken run to the end
    assert len(calls.finetune) == 2  # 1/8's random weights and final snapshot; 1/4's are exp1's
    torch.set_num_threads(1)  # conftest's setting (the scripts' --threads also sets it)


def _protocol_argv(data, vocab, *extra):
    """The transfer protocol in small: a given vocab, per-task fine-tuning settings, BLiMP."""
    model = [a for a in MODEL if a not in ("--vocab-size", "120")]
    return (["--data", str(data / "corpus"), "--flops", "5e7", "--glue-dir", str(data / "glue"),
             "--runs-dir", str(data / "runs"), "--out", str(data / "out" / "fig1"),
             "--threads", "1", "--vocab", str(vocab), "--checkpoints", "2",
             "--ft-checkpoints", "2", "--seeds", "1", "--tasks", "sst2,mrpc",
             "--ft-examples", "sst2=10", "--ft-epochs", "SST-2=2", "--ft-lr", "1e-3",
             "--ft-layer-decay", "0.9", "--ft-head-first-epochs", "1",
             "--blimp-dir", str(data / "blimp"), "--blimp-pairs", "2"]
            + model + list(extra))


@pytest.fixture(scope="module")
def fig1(data, exp1):
    """electra_vs_bert with the protocol on exp1's runs: 4 snapshots (each objective's random
    weights and last snapshot) x 2 tasks x 1 seed, and BLiMP on each snapshot. The vocab is the
    one exp1 trained."""
    with pytest.MonkeyPatch.context() as mp:
        calls = Calls(mp)
        results = electra_vs_bert.main(_protocol_argv(data, exp1[0]["vocab"]))
    return results, calls


def _flag(argv, flag):
    return argv[argv.index(flag) + 1]


def test_protocol_settings_reach_finetune(data, exp1, fig1):
    results, calls = fig1
    # A given vocab with exp1's tokens is the same run: its snapshots are reused, no pre-training.
    assert not calls.train
    assert [r["name"] for r in results["runs"]] == [r["name"] for r in exp1[0]["runs"]]
    assert len(calls.finetune) == 8
    for argv in calls.finetune:
        task = _flag(argv, "--task")
        out = json.loads((common.Path(_flag(argv, "--out-dir")) / "results.json").read_text())
        recipe = out["recipe"]
        history = out["tasks"][task]["seeds"][0]["history"]
        assert (recipe["lr"], recipe["layer_decay"]) == (1e-3, 0.9)  # for every task
        assert recipe["head_first_epochs"] == 1
        if task == "sst2":  # its own rows and epochs
            assert (_flag(argv, "--max-train-examples"), _flag(argv, "--epochs")) == ("10", "2")
            assert (recipe["max_train_examples"], recipe["epochs"], len(history)) == (10, 2, 2)
        else:  # MRPC, not named: every training row, Table 7's 3 epochs
            assert "--max-train-examples" not in argv and "--epochs" not in argv
            assert (recipe["max_train_examples"], recipe["epochs"], len(history)) == (None, None, 3)
    table = (data / "out" / "fig1" / "electra_vs_bert.md").read_text()
    assert "the head alone first for 1 epoch(s)" in table
    keys = sorted(results["finetune"])
    assert sum(k.endswith("sst2/seed0/n10-e2-lr0.001-ld0.9-hf1") for k in keys) == 4
    assert sum(k.endswith("mrpc/seed0/nall-erecipe-lr0.001-ld0.9-hf1") for k in keys) == 4


def test_protocol_zero_points_blimp_and_context_auc(data, fig1):
    results, _ = fig1
    rows = results["rows"]
    assert [(r["label"], r["random"]) for r in rows] == [("ELECTRA", True), ("ELECTRA", False),
                                                         ("BERT", True), ("BERT", False)]
    assert len(results["blimp"]) == 4
    pairs = evaluate.read_blimp(data / "blimp", 2)
    for row in rows:
        # BLiMP: what evaluate.py's functions give on the same snapshot and pairs.
        run_dir = common.Path(next(r["dir"] for r in results["runs"] if r["name"] == row["run"]))
        snapshot = run_dir / "snapshots" / f"step{row['step']}.pt"
        scored = evaluate.load_run(snapshot, results["vocab"])
        credits, _ = evaluate.blimp_credits(scored.model.eval(), scored.tokenizer, pairs, 8, "cpu")
        expected = evaluate.accuracies(pairs, credits)["overall"]
        scores = ("d_sum", "d_mean", "mlm_pll") if row["objective"] == "electra" else ("mlm_pll",)
        assert row["blimp"] == {s: expected[s] for s in scores}
        assert expected["pairs"] == 4  # 2 of each paradigm
        # D's context AUC at the snapshot's update is the held-out row train.py logged there.
        lines = (run_dir / "train" / "metrics.jsonl").read_text().splitlines()
        logged = [m.get("context_auc") for m in map(json.loads, lines)
                  if m["split"] == "eval" and m["step"] == row["step"]]
        if row["objective"] == "electra" and not row["random"]:
            assert row["context_auc"] == logged[-1] and 0 <= logged[-1] <= 1
        else:
            assert row["context_auc"] is None
    md = (data / "out" / "fig1" / "electra_vs_bert.md").read_text().splitlines()
    header = next(line for line in md if line.startswith("| objective"))
    assert header.endswith("| mean of tasks | BLiMP D sum | BLiMP D mean | BLiMP MLM PLL "
                           "| context AUC | SST-2 acc gain over random |")  # two tasks: a mean
    lines = [line for line in md if line.startswith(("| ELECTRA", "| BERT"))]
    for row, line in zip(rows, lines):
        sst2 = row["tasks"]["sst2"]
        assert f"| {sst2['mean']:.1f} |" in line  # one seed: the mean alone
        zero = next(r for r in rows if r["run"] == row["run"] and r["random"])
        gain = "-" if row["random"] else f"{sst2['mean'] - zero['tasks']['sst2']['mean']:+.1f}"
        assert line.endswith(f" {gain} |")
        assert f"| {row['blimp']['mlm_pll']:.3f} |" in line
    assert "0 (random weights)" in lines[0] and "0 (random weights)" in lines[2]


def test_protocol_resume_redoes_nothing(data, exp1, fig1, monkeypatch):
    before = json.loads((data / "out" / "fig1" / "results.json").read_text())
    Calls(monkeypatch, fail=True)
    scored = []
    monkeypatch.setattr(common, "score_blimp", lambda *a: scored.append(a))
    again = electra_vs_bert.main(_protocol_argv(data, exp1[0]["vocab"]))
    assert again["rows"] == before["rows"] and not scored
    # The BLiMP results in the run folders are enough, as fine-tuning's: another --out reuses them.
    assert len(list((data / "runs").glob("*/blimp/*.json"))) == 4
    argv = _protocol_argv(data, exp1[0]["vocab"], "--out", str(data / "out" / "fig1-copy"))
    assert electra_vs_bert.main(argv)["rows"] == before["rows"] and not scored
    # Other BLiMP pairs are another result: 3 pairs per paradigm are scored anew.
    monkeypatch.setattr(common, "score_blimp",
                        lambda *a: scored.append(a) or {"overall": {"mlm_pll": 0.5}})
    electra_vs_bert.main(argv + ["--blimp-pairs", "3"])
    assert len(scored) == 4


def test_reuse_on_a_machine_without_the_runs(data, exp1, fig1, tmp_path, monkeypatch):
    """--reuse: a committed results.json stands in for run folders another machine had."""
    before = json.loads((data / "out" / "fig1" / "results.json").read_text())
    assert any(r["context_auc"] is not None for r in before["rows"])  # something to carry over
    Calls(monkeypatch, fail=True)
    monkeypatch.setattr(common, "score_blimp", lambda *a: pytest.fail("BLiMP was redone"))
    argv = _protocol_argv(data, exp1[0]["vocab"], "--runs-dir", str(tmp_path / "runs"),
                          "--out", str(tmp_path / "out"))
    again = electra_vs_bert.main(argv + ["--reuse", str(data / "out" / "fig1" / "results.json")])
    assert again["rows"] == before["rows"]  # scores, BLiMP and D's context AUC alike
    assert not list((tmp_path / "runs").glob("*/snapshots"))  # nothing was pre-trained either
    with pytest.raises(SystemExit, match="--reuse .*missing.json: no such file"):
        electra_vs_bert.main(argv + ["--reuse", str(tmp_path / "missing.json")])


def test_protocol_plot(fig1):
    """A panel per task, the mean and BLiMP; each objective's zero point a dashed line in its
    colour."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = fig1[0]["rows"]
    fig = electra_vs_bert.plot(plt, rows, ["sst2", "mrpc"])
    axes = fig.axes
    titles = ["SST-2 acc", "MRPC acc", "mean of the tasks", "BLiMP, zero-shot"]
    assert [ax.get_title() for ax in axes] == titles
    dashed = {line.get_label(): line for line in axes[0].get_lines()
              if line.get_linestyle() == "--"}
    for i, label in enumerate(("ELECTRA", "BERT")):
        zero = next(r for r in rows if r["label"] == label and r["random"])
        line = dashed[f"{label}, random"]
        assert list(line.get_ydata()) == [zero["tasks"]["sst2"]["mean"]] * 2
        assert matplotlib.colors.same_color(line.get_color(), f"C{i}")
    blimp = {line.get_label(): line for line in axes[3].get_lines()}
    assert list(blimp["chance"].get_ydata()) == [0.5, 0.5]
    assert {"ELECTRA D sum", "ELECTRA G PLL", "BERT MLM PLL", "ELECTRA D sum, random",
            "BERT MLM PLL, random"} <= set(blimp)
    plt.close(fig)
    out = common.Path(fig1[0]["settings"]["out"])
    assert (out / "electra_vs_bert.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_ablations_plot_blimp_panel():
    """With one task there is no "mean of tasks" group; with BLiMP a second panel holds each
    row's D sum and MLM PLL at the x of the score, in the row's colour, hollow for random
    weights."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sst2 = {"mean": 78.0, "min": 77.0, "max": 79.0}
    rows = [{"label": "ELECTRA", "random": True, "tasks": {"sst2": sst2},
             "blimp": {"d_sum": 0.46, "d_mean": 0.45, "mlm_pll": 0.50}},
            {"label": "ELECTRA", "random": False, "tasks": {"sst2": sst2},
             "blimp": {"d_sum": 0.47, "d_mean": 0.46, "mlm_pll": 0.52}},
            {"label": "BERT", "random": False, "tasks": {"sst2": sst2},
             "blimp": {"mlm_pll": 0.53}}]
    fig = ablations.plot(plt, rows, ["sst2"])
    ax, ax_blimp = fig.axes[:2]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["SST-2 acc"]
    assert [t.get_text() for t in ax_blimp.get_xticklabels()] == ["D sum", "MLM PLL"]
    points = [line for line in ax_blimp.get_lines() if line.get_marker() == "o"]
    assert len(points) == 3
    for line, row, colour in zip(points, rows, ("C0", "C0", "C1")):
        x, y = line.get_xdata(), line.get_ydata()
        assert [round(v) for v in x] == [0, 1]  # each score at its own tick, offset per row
        assert y[1] == row["blimp"]["mlm_pll"]
        if "d_sum" in row["blimp"]:
            assert y[0] == row["blimp"]["d_sum"]
        else:
            assert ablations.np.isnan(y[0])  # BERT has no D
        assert matplotlib.colors.same_color(line.get_color(), colour)
        hollow = line.get_markerfacecolor() == "none"
        assert hollow == row["random"]
    plt.close(fig)


def test_generator_size_plot_runs_left_to_right():
    """--fractions 1/4 1/2 1 1/8 (1/8 added last, as the STS-B run did): each line still goes
    from the smallest G to the largest, not back from 1 to 1/8."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = []
    for fraction, score in ((0.25, 28.0), (0.5, 22.0), (1.0, 21.0), (0.125, 29.0)):
        for is_random in (True, False):
            stsb = {"mean": score - 12 * is_random, "min": score - 13 * is_random - 1,
                    "max": score - 11 * is_random + 1}
            rows.append({"size": "tiny", "random": is_random, "generator_fraction": fraction,
                         "tasks": {"stsb": stsb}, "blimp": {"d_sum": 0.47, "mlm_pll": 0.52}})
    fig = generator_size.plot(plt, rows, ["stsb"])
    # the data lines (errorbar's caps are lines too, of marker "_")
    lines = [line for ax in fig.axes[:2] for line in ax.get_lines() if line.get_marker() == "o"]
    assert len(lines) == 6  # STS-B and BLiMP's two scores, pre-trained and random
    for line in lines:
        assert list(line.get_xdata()) == [0.125, 0.25, 0.5, 1.0]
    pre_trained = next(line for line in lines if line.get_linestyle() == "-")
    assert list(pre_trained.get_ydata()) == [29.0, 28.0, 22.0, 21.0]
    plt.close(fig)


def test_generator_size_table_lists_the_smallest_g_first():
    """The committed STS-B run gave --fractions 1/4 1/2 1 1/8: its table still reads 1/8, 1/4,
    1/2, 1, each size's random weights before its snapshot, and keeps every row's numbers."""
    results = json.loads((ROOT / "experiments/results/generator_size-stsb/results.json")
                         .read_text())
    assert [r["label"] for r in results["rows"][::2]] == ["1/4", "1/2", "1", "1/8"]
    runs = [SimpleNamespace(label=r["label"], steps=r["steps"]) for r in results["runs"]]
    table = generator_size.markdown(results, runs, ["stsb"]).splitlines()
    body = [line.split(" | ") for line in table if line.startswith("| 1")]
    assert [cells[0] for cells in body] == ["| 1/8", "| 1/8", "| 1/4", "| 1/4", "| 1/2", "| 1/2",
                                            "| 1", "| 1"]
    assert [cells[3] for cells in body[:2]] == ["0 (random weights)", "1,881"]
    assert body[0][5] == "15.9 [14.7-16.7]" and body[1][5] == "28.7 [27.7-29.5]"


def _figure1_seed(seed: int, scores: list[float], d_sum: float, auc: float) -> dict:
    """The committed Figure 1 on STS-B results, as if run with --seed `seed`, with ELECTRA's
    update-450 jobs scoring `scores`, its D sum `d_sum` and its context AUC `auc`."""
    results = json.loads((ROOT / "experiments/results/figure1-stsb/results.json").read_text())
    results["settings"].update(seed=seed, out=f"runs/seed{seed}")
    row = next(r for r in results["rows"] if r["label"] == "ELECTRA" and r["step"] == 450)
    row["tasks"]["stsb"].update(seeds=scores, mean=sum(scores) / 3, min=min(scores),
                                max=max(scores), median=sorted(scores)[1])
    row["blimp"]["d_sum"] = d_sum
    row["context_auc"] = auc
    return results


def test_pool_seeds_puts_every_job_in_one_cell(tmp_path):
    """Two pre-training seeds' three jobs each make one cell of six: 1 2 3 and 30 10 20 give
    mean 66 / 6 = 11.0, median (3 + 10) / 2 = 6.5, spread 1-30; D sum and context AUC are the
    mean of the two runs'."""
    paths = []
    for seed, scores, d_sum, auc in ((0, [1.0, 2.0, 3.0], 0.40, 0.50),
                                     (1, [30.0, 10.0, 20.0], 0.50, 0.60)):
        paths.append(tmp_path / f"seed{seed}.json")
        paths[-1].write_text(json.dumps(_figure1_seed(seed, scores, d_sum, auc)))
    results = pool_seeds.main([str(p) for p in paths] + ["--out", str(tmp_path / "out")])
    row = next(r for r in results["rows"] if r["label"] == "ELECTRA" and r["step"] == 450)
    stsb = row["tasks"]["stsb"]
    assert stsb["seeds"] == [1.0, 2.0, 3.0, 30.0, 10.0, 20.0]
    assert (stsb["mean"], stsb["median"], stsb["min"], stsb["max"]) == (11.0, 6.5, 1.0, 30.0)
    assert row["score_mean"] == 11.0 and row["pretraining_seeds"] == [0, 1]
    assert row["blimp"]["d_sum"] == pytest.approx(0.45)
    assert row["context_auc"] == pytest.approx(0.55)
    assert len(results["runs"]) == 4  # ELECTRA and BERT, from each file
    markdown = (tmp_path / "out" / "electra_vs_bert.md").read_text()
    assert "Pooled over pre-training seeds 0, 1:** a cell is over 6 fine-tuning jobs" in markdown
    assert "| ELECTRA | 450 | 1.42e+13 | 11.0 [1.0-30.0] | 0.450 |" in markdown
    assert "Fine-tuning: 3 seed(s) on each of 2 pre-training seeds," in markdown
    assert "cells are the mean over jobs of the dev metric" in markdown
    assert (tmp_path / "out" / "electra_vs_bert.png").stat().st_size > 0


@pytest.mark.parametrize("change, message", [
    (("settings", "ft_lr", 3e-4), "has ft_lr 0.0003, "),
    (("settings", "seed", 0), "pre-training seeds [0, 0] repeat"),
    (("", "experiment", "ablations"), "pool one experiment"),
])
def test_pool_seeds_refuses_what_is_not_one_commands_seeds(tmp_path, change, message):
    other = _figure1_seed(1, [1.0, 2.0, 3.0], 0.4, 0.5)
    where, key, value = change
    (other[where] if where else other)[key] = value
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    paths[0].write_text(json.dumps(_figure1_seed(0, [1.0, 2.0, 3.0], 0.4, 0.5)))
    paths[1].write_text(json.dumps(other))
    with pytest.raises(SystemExit, match=re.escape(message)):
        pool_seeds.main([str(p) for p in paths] + ["--out", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()


def test_another_vocab_is_another_run(data, exp1, tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text(common.Path(exp1[0]["vocab"]).read_text() + "zebra\n")
    ctx = common.setup(electra_vs_bert.parse_args(_protocol_argv(data, vocab)))
    runs = [common.make_run(ctx, obj, "tiny", label) for obj, label in electra_vs_bert.OBJECTIVES]
    assert not {r.name for r in runs} & {r["name"] for r in exp1[0]["runs"]}
    assert _flag(runs[0].argv, "--vocab") == str(vocab.resolve())


@pytest.mark.parametrize("flag, value, message", [
    ("--ft-examples", "sst3=5", "--ft-examples sst3=5: unknown task 'sst3'"),
    ("--ft-epochs", "sst2=one", "--ft-epochs sst2=one: 'sst2=one' is not N or task=N"),
    ("--ft-examples", "sst2=0", "N must be at least 1"),
    ("--ft-lr", "-1", "--ft-lr -1.0: must be a positive number"),
    ("--ft-layer-decay", "1.5", "--ft-layer-decay 1.5: must be in (0, 1]"),
    ("--ft-head-first-epochs", "-1", "--ft-head-first-epochs -1: must be >= 0"),
    ("--vocab", "vocab.txt", "--vocab and --vocab-size: give one"),
])
def test_protocol_user_errors(data, capsys, flag, value, message):
    with pytest.raises(SystemExit):
        electra_vs_bert.parse_args(_argv(data, "err", flag, value))
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1]  # after argparse's usage line, one line


def test_user_errors(data):
    with pytest.raises(SystemExit, match="--flops"):
        electra_vs_bert.main(_argv(data, "err", "--flops", "-1"))
    with pytest.raises(SystemExit, match="fewer than --checkpoints"):
        electra_vs_bert.main(_argv(data, "err") + ["--flops", "10"])
    with pytest.raises(SystemExit, match="unknown task"):
        ablations.main(_argv(data, "err", "--tasks", "sst3"))
    with pytest.raises(SystemExit, match="--objectives"):
        ablations.main(_argv(data, "err", "--objectives", "electra,xlnet"))
    with pytest.raises(SystemExit, match="no such file or folder"):
        generator_size.main(["--data", str(data / "missing"), "--flops", "1e8",
                             "--runs-dir", str(data / "runs")])
    with pytest.raises(SystemExit, match="holds the results of electra_vs_bert"):
        ablations.main(_argv(data, "exp1"))
    with pytest.raises(SystemExit, match="--blimp-dir .*missing: no .jsonl files there"):
        electra_vs_bert.main(_argv(data, "err", "--blimp-dir", str(data / "missing")))
    with pytest.raises(SystemExit, match="--vocab .*missing.txt: no vocab file"):
        electra_vs_bert.main(_protocol_argv(data, data / "missing.txt"))
