"""experiments/sst2_check.py end to end on a fake SST-2 of a few rows: a tiny run and its
random-weights twin fine-tuned by finetune.py (a subprocess), the table, and the jobs reused."""
import dataclasses
import doctest
import json
import shutil
import subprocess

import pytest
import torch
from test_finetune_model import save_train_checkpoint, tiny_config, tiny_tokenizer

from electra import Electra
from experiments import sst2_check

GOOD = ["the film is good .", "a great movie .", "very good .", "the movie was great ."]
BAD = ["the film is bad .", "an awful movie .", "very bad .", "the movie was not good ."]
RECIPE = {"task": "sst2", "max_train_examples": 6, "epochs": 1, "data_dir": None,
          "finetune_flags": []}


def fake_sst2(folder):
    """train.tsv and dev.tsv as GLUE's SST-2 has them: a header, then sentence<TAB>label."""
    folder.mkdir(parents=True)
    rows = [f"{s}\t1" for s in GOOD] + [f"{s}\t0" for s in BAD]
    for name in ("train.tsv", "dev.tsv"):
        (folder / name).write_text("sentence\tlabel\n" + "\n".join(rows) + "\n")
    return folder


def test_sst2_check_fine_tunes_a_run_and_its_random_twin(tmp_path, monkeypatch, capsys):
    tok = tiny_tokenizer()
    config = tiny_config(tok)
    run = tmp_path / "run"
    # weights of seed 1, while its train_config's seed is 0: the twin must differ from the run
    trained = save_train_checkpoint(run, tok, config, seed=1)
    data = fake_sst2(tmp_path / "SST-2")
    out = tmp_path / "check"
    argv = ["--init", str(run), "--data-dir", str(data), "--max-train-examples", "6",
            "--seeds", "0", "--out", str(out), "--device", "cpu", "--lr", "1e-3",
            "--dropout", "0.1", "--plot", str(out / "minutes.png")]
    rows = sst2_check.main(argv)
    printed = capsys.readouterr().out
    (row,) = rows
    folder = out / row["folder"].split("/")[-1]
    # the twin: a fresh Electra of the run's config, seeded with the run's seed (0), at step 0
    twin_dir = out / row["twin"].split("/")[-1]
    twin = torch.load(twin_dir / "ckpt.pt", weights_only=True)
    torch.manual_seed(0)
    fresh = Electra(config).state_dict()
    assert twin["step"] == 0 and twin["model_config"] == torch.load(run / "ckpt.pt")["model_config"]
    assert all(torch.equal(twin["model"][k], v) for k, v in fresh.items())
    assert not torch.equal(twin["model"]["embeddings.word.weight"],
                           trained.state_dict()["embeddings.word.weight"])
    for name, job in (("pretrained", folder / "pretrained-seed0"), ("random", twin_dir / "seed0")):
        results = json.loads((job / "results.json").read_text())
        assert results["recipe"]["lr"] == 1e-3 and results["recipe"]["epochs"] == 1  # passed on
        assert results["recipe"]["dropout"] == 0.1
        acc = results["tasks"]["sst2"]["seeds"][0]["dev"]["acc"]
        assert row[name] == {"scores": [acc], "mean": acc, "min": acc, "max": acc, "std": 0.0,
                             "median": acc}
    assert row["gain"] == pytest.approx(row["pretrained"]["mean"] - row["random"]["mean"])
    assert row["median_gain"] == pytest.approx(row["gain"])  # one seed: the median is the mean
    table = (out / "sst2_check.md").read_text()
    assert "6 training rows, 1 epoch(s), seeds 0" in table and f"| {run} | " in table
    assert table.strip() in printed
    assert json.loads((out / "sst2_check.json").read_text())["rows"] == rows
    assert row["minutes"] is None  # no metrics.jsonl: plotted at its index
    assert (out / "minutes.png").stat().st_size > 0

    # a second invocation runs nothing: every job's results.json is there
    def no_subprocess(*args, **kwargs):
        raise AssertionError("a finished job ran again")

    monkeypatch.setattr(subprocess, "run", no_subprocess)
    assert sst2_check.main(argv) == rows


def fake_stsb(folder):
    """train.tsv and dev.tsv as GLUE's STS-B has them: ten columns, the pair in 8 and 9 and the
    0-5 score in 10, a header first."""
    folder.mkdir(parents=True)
    pairs = [(GOOD[i], GOOD[i + 1], 4.5) for i in range(3)] + [(GOOD[i], BAD[i], 0.5)
                                                               for i in range(4)]
    rows = [f"{i}\tmain-captions\tMSRvid\t2012test\t{i:04d}\tnone\tnone\t{a}\t{b}\t{score:.3f}"
            for i, (a, b, score) in enumerate(pairs)]
    header = ("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t"
              "sentence2\tscore")
    for name in ("train.tsv", "dev.tsv"):
        (folder / name).write_text(header + "\n" + "\n".join(rows) + "\n")
    return folder


def test_task_stsb_runs_its_protocol_reads_spearman_and_the_users_flags_win(tmp_path, capsys):
    tok = tiny_tokenizer()
    run = tmp_path / "run"
    save_train_checkpoint(run, tok, tiny_config(tok), seed=1)
    data = fake_stsb(tmp_path / "STS-B")
    out = tmp_path / "check"
    # --epochs 1 and --lr 3e-4 over the protocol's 3 and 1e-3 (kept short for the test)
    (row,) = sst2_check.main(["--task", "stsb", "--init", str(run), "--data-dir", str(data),
                              "--seeds", "0", "--out", str(out), "--device", "cpu",
                              "--epochs", "1", "--lr", "3e-4"])
    job = out / row["folder"].split("/")[-1] / "pretrained-seed0"
    results = json.loads((job / "results.json").read_text())
    recipe = results["recipe"]
    assert recipe["lr"] == 3e-4 and recipe["epochs"] == 1  # the user's flags win
    assert recipe["head_first_epochs"] == 1  # the protocol's, not finetune.py's default 0
    assert recipe["loss_reduction"] == "mean"  # the protocol's, not finetune.py's default sum
    assert recipe["max_train_examples"] is None  # every pair: the protocol's train_rows
    spearman = results["tasks"]["stsb"]["seeds"][0]["dev"]["spearman"]
    assert row["pretrained"]["scores"] == [spearman]
    table = (out / "stsb_check.md").read_text()
    assert table.startswith("STS-B dev Spearman, all training rows, 1 epoch(s), seeds 0, "
                            "finetune.py flags `--head-first-epochs 1 --loss-reduction mean "
                            "--device cpu --lr 3e-4`:")  # the protocol's less --lr, the user's
    assert json.loads((out / "stsb_check.json").read_text())["task"] == "stsb"
    assert not (out / "sst2_check.md").exists()
    # without the overrides, the protocol's epochs and rows, and runs/stsb_check by default
    args, flags = sst2_check.parse_args(["--task", "stsb", "--init", str(run)])
    assert (args.epochs, args.max_train_examples, args.out) == (3, None, "runs/stsb_check")
    args, flags = sst2_check.parse_args(["--init", str(run)])
    assert (args.epochs, args.max_train_examples, args.out) == (1, 20_000, "runs/sst2_check")


def test_finetune_flags_such_as_dropout_are_passed_on_and_name_the_job_folder(tmp_path):
    tok = tiny_tokenizer()
    run = tmp_path / "run"
    save_train_checkpoint(run, tok, tiny_config(tok))
    for dropout in (["--dropout", "0.1"], ["--dropout=0.1"]):
        args, flags = sst2_check.parse_args(["--init", str(run), *dropout, "--seeds", "0"])
        assert flags == dropout and args.seeds == [0]
    recipe = {"max_train_examples": 6, "epochs": 1, "data_dir": None, "finetune_flags": []}
    folders = {sst2_check.job_folder(tmp_path, run, {**recipe, "finetune_flags": flags})
               for flags in ([], ["--dropout", "0.1"], ["--dropout", "0.2"])}
    assert len(folders) == 3  # each dropout its own jobs, none reused from another


def test_sst2_check_needs_a_run_folder(tmp_path):
    with pytest.raises(SystemExit, match="no ckpt.pt there; pass a train.py run folder"):
        sst2_check.main(["--init", str(tmp_path), "--seeds", "0"])


def test_sst2_check_docstring_examples():
    assert doctest.testmod(sst2_check).failed == 0


def test_snapshots_of_one_run_share_one_twin(tmp_path):
    tok = tiny_tokenizer()
    config = tiny_config(tok)
    recipe = {"max_train_examples": 6, "epochs": 1, "data_dir": None, "finetune_flags": []}
    # two snapshots: other weights (seeds 1 and 2), the same ElectraConfig, train seed and vocab
    early = tmp_path / "early"
    late = tmp_path / "late"
    save_train_checkpoint(early, tok, config, seed=1)
    save_train_checkpoint(late, tok, config, seed=2)
    assert sst2_check.job_folder(tmp_path, early, recipe) != sst2_check.job_folder(
        tmp_path, late, recipe)
    assert sst2_check.twin_folder(tmp_path, early, recipe) == sst2_check.twin_folder(
        tmp_path, late, recipe)
    # another shape, or other fine-tuning flags, is another twin
    other = tmp_path / "other"
    save_train_checkpoint(other, tok, dataclasses.replace(config, num_layers=1), seed=1)
    flags = {**recipe, "finetune_flags": ["--lr", "1e-3"]}
    twins = {sst2_check.twin_folder(tmp_path, early, recipe),
             sst2_check.twin_folder(tmp_path, other, recipe),
             sst2_check.twin_folder(tmp_path, early, flags)}
    assert len(twins) == 3


def test_minutes_trained_reads_the_loop_time_at_the_checkpoint_update(tmp_path):
    tok = tiny_tokenizer()
    run = tmp_path / "run"
    save_train_checkpoint(run, tok, tiny_config(tok))  # ckpt.pt at update 7
    assert sst2_check.minutes_trained(run) is None
    rows = [{"step": 5, "elapsed_s": 60.0}, {"step": 7, "split": "eval"},
            {"step": 7, "elapsed_s": 120.0}, {"step": 9, "elapsed_s": 180.0}]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert sst2_check.minutes_trained(run) == 2.0  # 120 s at update 7; update 9 came later


def check_with_scores(tmp_path, monkeypatch, draw_scores: list[list[float]]):
    """sst2_check.main on a saved run (weights of seed 5, train seed 0) with two fine-tuning seeds
    and one draw of random weights per entry of draw_scores, each job's accuracy given by hand:
    the run scores 80 and 84 (mean and median 82). Returns the row, the config and the draws'
    folders."""
    tok = tiny_tokenizer()
    config = tiny_config(tok)
    run = tmp_path / "run"
    save_train_checkpoint(run, tok, config, seed=5)  # its train_config's seed is 0
    scores = {"pretrained": [80.0, 84.0]}
    twins = [sst2_check.twin_folder(tmp_path, run, RECIPE, d) for d in range(len(draw_scores))]
    for twin, draw in zip(twins, draw_scores):
        scores[twin.name] = draw

    def fake_job(init, seed, out_dir, args, flags):
        key = "pretrained" if out_dir.name.startswith("pretrained") else out_dir.parent.name
        return scores[key][seed]

    monkeypatch.setattr(sst2_check, "finetune_job", fake_job)
    argv = ["--init", str(run), "--seeds", "0", "1", "--draws", str(len(draw_scores)),
            "--out", str(tmp_path), "--max-train-examples", "6"]
    (row,) = sst2_check.main(argv)
    return row, config, twins


def test_draws_pool_several_random_inits_into_the_zero_point(tmp_path, monkeypatch):
    # scores by hand: the run 80 and 84 (mean 82); draw 0 70 and 72, draw 1 76 and 78
    row, config, (twin0, twin1) = check_with_scores(tmp_path, monkeypatch,
                                                    [[70.0, 72.0], [76.0, 78.0]])
    assert row["draw_folders"] == [str(twin0), str(twin1)] and twin0 != twin1
    assert [d["mean"] for d in row["draws"]] == [71.0, 77.0]
    # the zero point pools 2 draws x 2 seeds: mean 74, spread 70-78; gain 82 - 74
    assert (row["random"]["mean"] == 74.0
            and (row["random"]["min"], row["random"]["max"]) == (70, 78))
    assert row["gain"] == 8.0
    # draw d holds the weights of a fresh Electra seeded with the run's seed + d
    for draw, folder in enumerate((twin0, twin1)):
        torch.manual_seed(draw)
        fresh = Electra(config).state_dict()
        saved = torch.load(folder / "ckpt.pt", weights_only=True)["model"]
        assert all(torch.equal(saved[k], v) for k, v in fresh.items())
    table = (tmp_path / "sst2_check.md").read_text()
    assert "2 draws x 2 seeds, pooled" in table
    assert "| 74.00 [70.00-78.00] 3.65, 74.00 | 71.00 / 77.00 | +8.00 | +8.00 |" in table
    # every job's score last: the pre-trained ones, then each draw's
    assert "| +8.00 | 80.00 / 84.00; 70.00 / 72.00; 76.00 / 78.00 |" in table


def test_one_failed_random_job_moves_the_median_gain_less_than_the_gain(tmp_path, monkeypatch):
    # draw 1's second job fell to the majority class: 76 and 50 instead of 76 and 78
    row, _, _ = check_with_scores(tmp_path, monkeypatch, [[70.0, 72.0], [76.0, 50.0]])
    # means: 82 against (70 + 72 + 76 + 50) / 4 = 67, gain 15 (8 without the failure)
    assert row["random"]["mean"] == 67.0 and row["gain"] == 15.0
    # medians: 82 against (70 + 72) / 2 = 71, gain 11
    assert row["random"]["median"] == 71.0 and row["median_gain"] == 11.0
    table = (tmp_path / "sst2_check.md").read_text()
    assert "| 67.00 [50.00-76.00] 11.60, 71.00 | 71.00 / 63.00 | +15.00 | +11.00 |" in table


def test_draw_0_is_the_twin_of_one_draw(tmp_path):
    tok = tiny_tokenizer()
    run = tmp_path / "run"
    save_train_checkpoint(run, tok, tiny_config(tok))
    # --draws 1's twin folder is draw 0's: a check with more draws reuses its jobs
    assert sst2_check.twin_folder(tmp_path, run, RECIPE) == sst2_check.twin_folder(
        tmp_path, run, RECIPE, 0)
    with pytest.raises(SystemExit, match="--draws 0: give 1 or more"):
        sst2_check.parse_args(["--init", str(run), "--draws", "0"])


def test_a_second_invocation_adds_its_row_to_the_table_of_the_first(tmp_path, monkeypatch, capsys):
    # the first invocation: the run of check_with_scores, 80 and 84 against one draw, 70 and 72
    first, _, _ = check_with_scores(tmp_path, monkeypatch, [[70.0, 72.0]])
    other = shutil.copytree(tmp_path / "run", tmp_path / "other")  # a second run, the same weights
    argv = ["--init", str(other), "--seeds", "0", "1", "--out", str(tmp_path),
            "--max-train-examples", "6"]
    (second,) = sst2_check.main(argv)  # the fake jobs: the same scores, so gain 82 - 71 = 11
    assert second["init"] == str(other) and second["gain"] == 11.0
    saved = json.loads((tmp_path / "sst2_check.json").read_text())
    assert [row["init"] for row in saved["rows"]] == [first["init"], str(other)]
    table = (tmp_path / "sst2_check.md").read_text()
    assert f"| {first['init']} |" in table and f"| {other} |" in table
    # the same init again replaces its own row, not adds a second
    sst2_check.main(argv)
    saved = json.loads((tmp_path / "sst2_check.json").read_text())
    assert [row["init"] for row in saved["rows"]] == [first["init"], str(other)]
    # another protocol (here, other seeds) starts a table of its own, and says so
    capsys.readouterr()
    sst2_check.main(argv[:2] + ["--seeds", "0"] + argv[5:])
    saved = json.loads((tmp_path / "sst2_check.json").read_text())
    assert [row["init"] for row in saved["rows"]] == [str(other)]
    assert "1 earlier row(s) had other fine-tuning flags, seeds or draws" in capsys.readouterr().out
