"""Smoke tests of experiments/: each script end to end on a corpus and GLUE-format TSVs written here,
with a 1-layer 16-wide model, a handful of updates, 1 seed and a few examples; then resuming.

The three scripts share one --runs-dir (module fixture), as they would in real use, so the tests also
check that identical runs are reused across experiments rather than trained again.
"""
import json
import random

import pytest
import torch

import finetune
import train
from experiments import ablations, common, electra_vs_bert, generator_size

WORDS = ("the cat sat on a mat while dogs ran over green hills and birds sang songs of old kings who "
         "ruled wide lands near the sea").split()
# A model small enough that a pre-training update takes milliseconds (1 layer, hidden 16).
MODEL = ["--set", "embedding_size=16", "--set", "hidden_size=16", "--set", "num_layers=1", "--set", "num_heads=1",
         "--set", "intermediate_size=32", "--vocab-size", "120", "--seq-len", "32", "--batch-size", "4"]
FT = ["--seeds", "1", "--ft-examples", "8", "--ft-epochs", "1", "--checkpoints", "2"]


def _sentence(rng, lo=3, hi=8):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A 30-document corpus and 12-row train / 6-row dev TSVs of SST-2, MRPC and STS-B in GLUE's layouts."""
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
            + "".join(f"{i % 2}\t{i}\t{i + 100}\t{_sentence(rng)}\t{_sentence(rng)}\n" for i in range(n)))
        (glue / "STS-B" / f"{split}.tsv").write_text(
            "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
            + "".join(f"{i}\tmain\tf\t2012\t{i}\ts\ts\t{_sentence(rng)}\t{_sentence(rng)}\t{i * 0.4:.2f}\n"
                      for i in range(n)))
    return root


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


def _check_outputs(out, name, labels, rows_expected):
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
        assert "score" in row  # every task of every row was fine-tuned
        assert f"{row['score']:.1f}" in line
    return results


@pytest.fixture(scope="module")
def exp1(data):
    """electra_vs_bert end to end: 2 objectives x 2 snapshots x 3 tasks x 1 seed."""
    with pytest.MonkeyPatch.context() as mp:
        calls = Calls(mp)
        results = electra_vs_bert.main(_argv(data, "exp1"))
    return results, calls


def test_electra_vs_bert_end_to_end(data, exp1):
    results, calls = exp1
    # The step-0 snapshot is the model train.py built for the run (same config, same parameters), untrained.
    run = results["runs"][0]
    init, first = (torch.load(f"{run['dir']}/snapshots/step{s}.pt", weights_only=True) for s in (0, run["stops"][0]))
    assert init["model_config"] == first["model_config"] and init["model"].keys() == first["model"].keys()
    assert not torch.equal(init["model"]["discriminator.layers.0.fc1.weight"],
                           first["model"]["discriminator.layers.0.fc1.weight"])
    out = data / "out" / "exp1"
    _check_outputs(out, "electra_vs_bert", ["no pre-training", "ELECTRA", "ELECTRA", "BERT", "BERT"], 5)
    runs = {r["objective"]: r for r in results["runs"]}
    # Equal compute: steps = floor(5e7 / FLOPs per update), BERT's update being cheaper, it gets more.
    for r in runs.values():
        assert r["steps"] == int(5e7 // r["flops_per_step"])
        assert r["stops"] == [round(r["steps"] / 2), r["steps"]]
    assert runs["bert"]["steps"] > runs["electra"]["steps"]
    rows = results["rows"]
    assert [r["step"] for r in rows] == [0] + runs["electra"]["stops"] + runs["bert"]["stops"]
    assert rows[0]["flops"] == 0 and rows[0]["objective"] == "electra"  # ELECTRA's initial weights
    assert all(set(r["tasks"]) == {"sst2", "mrpc", "stsb"} for r in rows)
    assert rows[0]["tasks"]["stsb"]["metric"] == "spearman" and rows[0]["tasks"]["mrpc"]["metric"] == "acc"
    # Each run trained in two segments (stop at the snapshot, then --resume), 15 fine-tunings in all.
    assert len(calls.train) == 4 and sum("--resume" in a for a in calls.train) == 2
    assert len(calls.finetune) == 15 and len(results["finetune"]) == 15


def test_electra_vs_bert_resume_redoes_nothing(data, exp1, monkeypatch):
    before = json.loads((data / "out" / "exp1" / "results.json").read_text())
    Calls(monkeypatch, fail=True)
    again = electra_vs_bert.main(_argv(data, "exp1"))
    assert again["rows"] == before["rows"]
    # The results JSON alone is enough: with the run folders' fine-tuning results gone, nothing is redone.
    saved = {f: f.read_bytes() for f in (data / "runs").glob("*/finetune/*.json")}
    assert len(saved) == 15
    for f in saved:
        f.unlink()
    assert electra_vs_bert.main(_argv(data, "exp1"))["rows"] == before["rows"]
    for f, content in saved.items():  # the other experiments reuse them
        f.write_bytes(content)
    # --ft-checkpoints 2: the random initialisation and each run's second (last) snapshot, all already done.
    last = electra_vs_bert.main(_argv(data, "exp1", "--ft-checkpoints", "2"))["rows"]
    assert [(r["label"], r["step"]) for r in last] == [(r["label"], r["step"]) for r in before["rows"]
                                                       if r["step"] in (0, r["steps"])]


def test_ablations_reuses_shared_runs(data, exp1, monkeypatch):
    calls = Calls(monkeypatch)
    results = ablations.main(_argv(data, "exp2", "--tasks", "sst2"))
    _check_outputs(data / "out" / "exp2", "ablations",
                   ["ELECTRA", "All-Tokens MLM", "Replace MLM", "ELECTRA 15%", "BERT"], 5)
    # ELECTRA and BERT come from electra_vs_bert's runs: only the three ablations are pre-trained.
    trained = {a[a.index("--objective") + 1] for a in calls.train}
    assert trained == {"all_tokens_mlm", "replace_mlm", "electra_15"}
    assert len(calls.finetune) == 3  # their final snapshots on SST-2; ELECTRA's and BERT's are reused
    assert all(r["step"] == r["steps"] for r in results["rows"])  # the final snapshot only
    flops = [r["flops"] for r in results["rows"]]
    assert max(flops) <= 5e7 and min(flops) > 5e7 * 0.8  # equal compute, within one update


def test_generator_size_resumes_an_interrupted_run(data, exp1, monkeypatch):
    argv = _argv(data, "exp3", "--tasks", "sst2", "--fractions", "1/8", "1/4")
    # Interrupt the 1/8 run: train it to update 2 only, as a killed run would leave it.
    ctx = common.setup(generator_size.parse_args(argv))
    run = common.make_run(ctx, "electra", "tiny", "1/8", generator_fraction=0.125)
    train.main(run.argv + ["--stop-at", "2"])
    calls = Calls(monkeypatch)
    results = generator_size.main(argv)
    _check_outputs(data / "out" / "exp3", "generator_size", ["1/8", "1/4"], 2)
    assert [r["generator_hidden"] for r in results["rows"]] == [2, 4]  # round(16/8), round(16/4)
    # The 1/8 run continued from its checkpoint (--resume); the 1/4 run is electra_vs_bert's ELECTRA.
    assert len(calls.train) == 2 and all("--resume" in a for a in calls.train)
    assert all(f"generator_fraction={0.125}" in a for a in calls.train)
    steps = [json.loads(line)["step"] for line in (run.dir / "train" / "metrics.jsonl").read_text().splitlines()
             if json.loads(line)["split"] == "train"]
    assert steps == sorted(set(steps)) and steps[-1] == run.steps  # one unbroken run to the end
    assert len(calls.finetune) == 1
    torch.set_num_threads(1)  # conftest's setting (the scripts' --threads also sets it)


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
        generator_size.main(["--data", str(data / "missing"), "--flops", "1e8", "--runs-dir", str(data / "runs")])
    with pytest.raises(SystemExit, match="holds the results of electra_vs_bert"):
        ablations.main(_argv(data, "exp1"))
