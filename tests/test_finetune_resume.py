"""finetune.py and squad.py stopped by Ctrl-C or SIGTERM (a real signal sent to this process from
inside the training loop) and run again: they resume, and end where an uninterrupted run ends."""
import dataclasses
import json
import os
import signal

import pytest
import torch
from test_finetune_model import save_train_checkpoint, tiny_config, tiny_tokenizer
from test_squad import squad_file
from test_squad import tokenizer as squad_tokenizer

import finetune as ft
import squad

RTE_HEAD = "index\tsentence1\tsentence2\tlabel"
STSB_HEAD = "\t".join(["index", "genre", "filename", "year", "old_index", "source1", "source2",
                       "sentence1", "sentence2", "score"])


def write_glue(folder):
    """RTE (8 training rows, a test file), STS-B (8 rows, doubled to 16 by the swapped order)."""
    (folder / "RTE").mkdir(parents=True)
    pairs = [("good", "entailment"), ("bad", "not_entailment")] * 4
    rte = [RTE_HEAD] + [f"{i}\tthe film is {w} .\tthe film is {w} .\t{lab}"
                        for i, (w, lab) in enumerate(pairs)]
    (folder / "RTE" / "train.tsv").write_text("\n".join(rte) + "\n")
    (folder / "RTE" / "dev.tsv").write_text("\n".join(rte[:5]) + "\n")
    test = "index\tsentence1\tsentence2\n0\ta film\tgood\n1\tbad\tthe\n"
    (folder / "RTE" / "test.tsv").write_text(test)
    (folder / "STS-B").mkdir()
    scores = [("good", "4.0"), ("bad", "1.000"), ("very good", "4.5"), ("awful", "0.5")] * 2
    sts = [STSB_HEAD] + [f"{i}\tg\tf\ty\to\tn\tn\tthe film\ta {w} film\t{s}"
                         for i, (w, s) in enumerate(scores)]
    (folder / "STS-B" / "train.tsv").write_text("\n".join(sts) + "\n")
    (folder / "STS-B" / "dev.tsv").write_text("\n".join(sts) + "\n")


@pytest.fixture
def setup(tmp_path):
    """A tiny train.py run and GLUE folder; argv(out, *extra) is finetune.py's command line."""
    tok = tiny_tokenizer()
    save_train_checkpoint(tmp_path / "run", tok, tiny_config(tok))
    write_glue(tmp_path / "glue")

    def argv(out, *extra):
        return ["--task", "rte,stsb", "--init", str(tmp_path / "run"),
                "--data-dir", str(tmp_path / "glue"), "--epochs", "2", "--batch-size", "4",
                "--out-dir", str(out), "--device", "cpu", *extra]
    return tmp_path, argv


def signal_at(monkeypatch, module, name, task_name, calls, signals=(signal.SIGINT,)):
    """Wrap module.name (a loss) so that its `calls`-th call (for `task_name`, if not None) sends
    `signals` to this very process, as Ctrl-C or a scheduler's SIGTERM would."""
    loss = getattr(module, name)
    count = {"n": 0}

    def wrapped(*args):
        if task_name is None or args[0].name == task_name:
            count["n"] += 1
            if count["n"] == calls:
                for s in signals:
                    os.kill(os.getpid(), s)
        return loss(*args)
    monkeypatch.setattr(module, name, wrapped)


def seeds_of(results, task):
    return [s["seed"] for s in results["tasks"][task]["seeds"]]


def test_sigint_in_stsb_seed_1_resumes_to_the_uninterrupted_results(setup, monkeypatch, capsys):
    tmp_path, argv = setup
    # the handler the run must give back: Python's default, or SIG_IGN when the suite runs in a
    # background job of a non-interactive shell (as `bash .ci/run &` does)
    before = signal.getsignal(signal.SIGINT)
    whole = ft.main(argv(tmp_path / "whole", "--seeds", "3"))
    out = tmp_path / "out"
    # STS-B: 16 rows / batch 4 = 4 updates per epoch, 8 per seed; the 11th is seed 1's third
    with monkeypatch.context() as m:
        signal_at(m, ft, "task_loss", "stsb", calls=11)
        with pytest.raises(SystemExit) as e:
            ft.main(argv(out, "--seeds", "3"))
    assert str(e.value) == (f"stopped by Ctrl-C or SIGTERM in stsb seed 1, which was dropped: "
                            f"{out / 'results.json'} holds the 4 finished run(s). Run the same "
                            f"command again to resume")
    saved = json.loads((out / "results.json").read_text())
    assert seeds_of(saved, "rte") == [0, 1, 2]
    assert seeds_of(saved, "stsb") == [0]  # exactly the finished seeds
    assert (out / "glue_submission" / "RTE.tsv").is_file()  # RTE was complete
    assert signal.getsignal(signal.SIGINT) is before  # given back
    capsys.readouterr()

    resumed = ft.main(argv(out, "--seeds", "3"))
    printed = capsys.readouterr().out
    assert (f"resuming {out / 'results.json'}: skipping 4 finished run(s) "
            f"(rte seeds 0-2; stsb seed 0), running the other 2") in printed
    assert "rte seed" not in printed.split("running the other 2")[1]
    assert "stsb seed 0 epoch" not in printed  # nothing finished ran again
    assert "stsb seed 1 epoch 2" in printed and "GLUE score" in printed
    assert resumed == json.loads((out / "results.json").read_text())
    for task in ("rte", "stsb"):
        got = resumed["tasks"][task]
        want = whole["tasks"][task]
        assert seeds_of(resumed, task) == [0, 1, 2]
        for g, w in zip(got["seeds"], want["seeds"]):
            assert g["seconds"] > 0
            for gh, wh in zip(g["history"], w["history"], strict=True):
                assert gh == pytest.approx(wh, abs=1e-6)
        assert got["median"] == pytest.approx(want["median"], abs=1e-6)
        assert got["test_predictions_seed"] == want["test_predictions_seed"]
    assert resumed["glue_score"] == pytest.approx(whole["glue_score"], abs=1e-6)
    submission = (out / "glue_submission" / "RTE.tsv").read_text()
    assert submission == (tmp_path / "whole" / "glue_submission" / "RTE.tsv").read_text()
    assert (out / "finetune.png").stat().st_size > 0

    again = ft.main(argv(out, "--seeds", "3"))  # all finished: nothing runs, the same table
    assert again == resumed and "skipping 6 finished run(s)" in capsys.readouterr().out


def test_a_second_ctrl_c_quits_at_once_and_keeps_the_finished_seeds(setup, monkeypatch):
    tmp_path, argv = setup
    out = tmp_path / "out"
    # RTE: 8 rows / batch 4 = 2 updates per epoch, 4 per seed; the 6th is in seed 1
    signal_at(monkeypatch, ft, "task_loss", "rte", calls=6, signals=(signal.SIGINT, signal.SIGINT))
    with pytest.raises(KeyboardInterrupt):
        ft.main(argv(out, "--seeds", "2", "--task", "rte"))
    assert seeds_of(json.loads((out / "results.json").read_text()), "rte") == [0]
    assert not list(out.rglob("*.tmp"))


def test_other_recipe_init_or_data_is_refused_in_one_line(setup):
    tmp_path, argv = setup
    out = tmp_path / "out"
    base = argv(out, "--task", "rte", "--epochs", "1")
    first = ft.main(base)
    refusals = [
        (base + ["--lr", "1e-3"], "recipe.lr 0.001 here, 0.0003 before"),
        (base + ["--max-train-examples", "4"], "recipe.max_train_examples 4 here, None before"),
    ]
    for changed, difference in refusals:
        with pytest.raises(SystemExit) as e:
            ft.main(changed)
        assert str(e.value) == (f"--out-dir {out}: its results.json holds runs made with other "
                                f"settings: {difference}. Run with its settings to resume, pass "
                                f"--restart to start over, or use another --out-dir")
    train_tsv = tmp_path / "glue" / "RTE" / "train.tsv"
    train_tsv.write_text(train_tsv.read_text().replace("good", "great"))
    sha = r"[0-9a-f]{12}\.\.\."
    data_changed = rf"settings: data\.rte\.train\.tsv {sha} here, {sha} before"
    with pytest.raises(SystemExit, match=data_changed) as e:
        ft.main(base)
    assert "\n" not in str(e.value)
    tok = tiny_tokenizer()
    save_train_checkpoint(tmp_path / "run", tok, tiny_config(tok), seed=1)  # same path, new model
    with pytest.raises(SystemExit, match=r"settings: init_id\.sha256 \S+ here, \S+ before\. Run"):
        ft.main(base)
    restarted = ft.main(base + ["--lr", "1e-3", "--restart"])  # starts over
    assert restarted["recipe"]["lr"] == 1e-3 and seeds_of(restarted, "rte") == [0]
    assert restarted["init_id"]["sha256"] != first["init_id"]["sha256"]
    assert restarted["init_id"]["path"] == str((tmp_path / "run").resolve())


def test_a_record_from_before_a_recipe_field_existed_resumes_with_its_default(setup, capsys):
    """results.json written before --head-first-epochs, --recipe and --loss-reduction existed
    lacks their fields: it ran with 0, table7 and the mean, the first two still the defaults, so
    the command resumes it with --loss-reduction mean; without it, or with another value of any,
    it is refused."""
    tmp_path, argv = setup
    out = tmp_path / "out"
    ft.main(argv(out, "--task", "rte", "--epochs", "1", "--loss-reduction", "mean"))
    path = out / "results.json"
    record = json.loads(path.read_text())
    for name in ("head_first_epochs", "recipe_name", "loss_reduction"):
        del record["recipe"][name]
    path.write_text(json.dumps(record))
    capsys.readouterr()
    mean = ("--loss-reduction", "mean")
    results = ft.main(argv(out, "--task", "rte", "--epochs", "1", "--seeds", "2", *mean))
    assert "skipping 1 finished run(s) (rte seed 0)" in capsys.readouterr().out
    assert seeds_of(results, "rte") == [0, 1]
    assert results["recipe"]["head_first_epochs"] == 0
    assert (results["recipe"]["recipe_name"], results["recipe"]["loss_reduction"]) == (
        "table7", "mean")
    with pytest.raises(SystemExit, match="recipe.loss_reduction sum here, mean before"):
        ft.main(argv(out, "--task", "rte", "--epochs", "1"))
    with pytest.raises(SystemExit, match="recipe.head_first_epochs 1 here, 0 before"):
        ft.main(argv(out, "--task", "rte", "--epochs", "1", "--head-first-epochs", "1", *mean))
    with pytest.raises(SystemExit, match="recipe.recipe_name official here, table7 before"):
        ft.main(argv(out, "--task", "rte", "--epochs", "1", "--recipe", "official", *mean))


def test_more_seeds_add_to_results_json(setup, capsys):
    tmp_path, argv = setup
    out = tmp_path / "out"
    ft.main(argv(out, "--task", "rte", "--epochs", "1"))
    capsys.readouterr()
    results = ft.main(argv(out, "--task", "rte", "--epochs", "1", "--seeds", "2"))
    printed = capsys.readouterr().out
    assert "skipping 1 finished run(s) (rte seed 0), running the other 1" in printed
    assert seeds_of(results, "rte") == [0, 1]
    accuracies = [s["dev"]["acc"] for s in results["tasks"]["rte"]["seeds"]]
    assert results["tasks"]["rte"]["median"]["acc"] == pytest.approx(sum(accuracies) / 2)


# --- squad.py: a checkpoint after every epoch -----------------------------------------------


def test_sigterm_in_squad_epoch_2_resumes_at_epoch_2(tmp_path, monkeypatch, capsys):
    (tmp_path / "data").mkdir()
    squad_file(tmp_path / "data" / "train-v2.0.json")
    squad_file(tmp_path / "data" / "dev-v2.0.json")
    run = tmp_path / "run"  # test_squad's tiny run, with dropout: the RNG must be resumed too
    tok = squad_tokenizer()
    config = dataclasses.replace(tiny_config(tok), num_layers=1, dropout=0.1)
    save_train_checkpoint(run, tok, config)

    def argv(out, *extra):
        return ["--task", "squad2", "--init", str(run), "--data-dir", str(tmp_path / "data"),
                "--out-dir", str(out), "--max-seq-len", "32", "--doc-stride", "8",
                "--batch-size", "2", "--device", "cpu", *extra]
    calls = []
    loss = squad.span_loss
    with monkeypatch.context() as m:  # count the updates of an uninterrupted run
        m.setattr(squad, "span_loss", lambda *a: calls.append(1) or loss(*a))
        whole = squad.main(argv(tmp_path / "whole"))
    per_epoch = len(calls) // 2
    assert per_epoch >= 2
    assert not (tmp_path / "whole" / squad.CHECKPOINT).exists()  # removed at the end

    out = tmp_path / "out"
    with monkeypatch.context() as m:
        signal_at(m, squad, "span_loss", None, calls=per_epoch + 2, signals=(signal.SIGTERM,))
        with pytest.raises(SystemExit) as e:
            squad.main(argv(out))
    assert str(e.value) == (f"stopped by Ctrl-C or SIGTERM, the unfinished epoch dropped: "
                            f"{out / squad.CHECKPOINT} holds the finished epochs. Run the same "
                            f"command again to resume")
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is given back
    assert not (out / "predictions.json").exists() and (out / squad.CHECKPOINT).is_file()

    with pytest.raises(SystemExit) as e:  # the checkpoint is not resumed with another recipe
        squad.main(argv(out, "--lr", "1e-3"))
    assert str(e.value).startswith(f"--out-dir {out}: its {squad.CHECKPOINT} holds runs made with "
                                   f"other settings: recipe.lr 0.001 here, 0.0003 before. Run")
    capsys.readouterr()

    # a checkpoint written before --head-first-epochs existed: its recipe lacks the field, and the
    # run that wrote it ran with the default, so it resumes as it is
    saved = torch.load(out / squad.CHECKPOINT, weights_only=True)
    del saved["identity"]["recipe"]["head_first_epochs"]
    torch.save(saved, out / squad.CHECKPOINT)
    resumed = squad.main(argv(out))
    printed = capsys.readouterr().out
    assert f"resuming {out / squad.CHECKPOINT}: after epoch 1" in printed
    assert "squad epoch 1:" not in printed and "squad epoch 2:" in printed
    assert resumed["train_loss"] == pytest.approx(whole["train_loss"], abs=1e-6)
    assert resumed["dev"] == pytest.approx(whole["dev"], abs=1e-6)
    for name in ("predictions.json", "null_odds.json"):
        got = json.loads((out / name).read_text())
        want = json.loads((tmp_path / "whole" / name).read_text())
        assert got == pytest.approx(want, abs=1e-6)
    assert not (out / squad.CHECKPOINT).exists()
