"""The command lines of finetune.py, squad.py and support.evaluate (support/cli.py): a mistyped
flag answers before torch is imported, --init names a local typo as one, --data-dir names the
task's folder it looked for."""
import subprocess
import sys
from pathlib import Path

import pytest
from test_finetune_model import save_train_checkpoint, tiny_config, tiny_tokenizer

import data
import electra
import finetune as ft
from support import cli, glue

ROOT = Path(__file__).resolve().parent.parent


def test_the_names_written_out_are_glues_tasks_the_models_sizes_and_the_recipes():
    assert cli.GLUE_TASKS == tuple(glue.TASKS)
    assert cli.MODEL_SIZES == tuple(electra.SIZES)
    assert cli.KNOWN_CORPORA == data.CORPUS_NAMES
    assert cli.RECIPE_NAMES == tuple(ft.RECIPES)


@pytest.mark.parametrize("command, argv, error", [
    (["finetune.py"], ["--task", "rte", "--init", "x", "--seeds", "abc"],
     "argument --seeds: invalid int value: 'abc'"),
    (["finetune.py"], ["--task", "rte", "--init", "x", "--szie", "2"],
     "unrecognized arguments: --szie 2"),
    (["finetune.py"], ["--task", "rtee", "--init", "x"], "--task: unknown task 'rtee'"),
    (["finetune.py"], ["--task", "rte", "--init", "x", "--lr", "-1"],
     "--lr -1.0: must be a positive number"),
    (["finetune.py"], ["--task", "rte", "--init", "x", "--pool", "mean"],
     "--pool is not a flag of finetune.py: the head reads the [CLS] state"),
    (["squad.py"], ["--task", "squad1", "--init", "x", "--epochs", "two"],
     "argument --epochs: invalid int value: 'two'"),
    (["-m", "support.evaluate"], ["blimp", "--init", "x", "--per-paradigm", "-1"],
     "--per-paradigm -1: must be >= 0"),
])
def test_a_mistyped_flag_answers_before_torch_is_imported(tmp_path, command, argv, error):
    """A `torch` first on the path that raises when imported: the command must answer from its
    flags alone, in one line, as it does with torch there."""
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('torch was imported')\n")
    env = {"PYTHONPATH": f"{tmp_path / 'fake'}:{ROOT}", "PATH": "/usr/bin:/bin"}
    got = subprocess.run([sys.executable, *command, *argv], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert got.returncode == 2 if "argument" in error else got.returncode == 1
    assert error in got.stderr and "torch was imported" not in got.stderr
    assert "Traceback" not in got.stderr


def test_a_mistyped_local_folder_is_not_fetched_from_the_hub(tmp_path, monkeypatch):
    """runs/tinyy next to runs/tiny: a local path that does not exist, said so in one line, with no
    request to the hub (HF_ENDPOINT points nowhere: a request would fail as a network error)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:1")
    tok = tiny_tokenizer()
    save_train_checkpoint(tmp_path / "runs" / "tiny", tok, tiny_config(tok))
    with pytest.raises(SystemExit) as e:
        ft.main(["--task", "rte", "--init", "runs/tinyy", "--hub-cache-dir", "hub"])
    assert str(e.value.code).startswith("error: --init runs/tinyy does not exist: pass a train.py")
    assert "hub" not in str(e.value.code) and not (tmp_path / "hub").exists()
    # a name of the hub's form whose org is no folder here is tried on the hub, and the message
    # says it is no local path either
    with pytest.raises(SystemExit) as e:
        ft.main(["--task", "rte", "--init", "nosuchorg/tiny", "--hub-cache-dir", "hub"])
    message = str(e.value.code)
    assert message.startswith("error: could not fetch config.json of nosuchorg/tiny")
    assert message.endswith("(--init nosuchorg/tiny is not a file or folder here either)")
    assert "\n" not in message


def test_data_dir_without_the_tasks_folder_names_the_folder_looked_for(tmp_path):
    tok = tiny_tokenizer()
    save_train_checkpoint(tmp_path / "run", tok, tiny_config(tok))
    glue_dir = tmp_path / "glue"
    (glue_dir / "SST-2").mkdir(parents=True)  # GLUE's folders, but no RTE
    with pytest.raises(SystemExit) as e:
        ft.main(["--task", "rte", "--init", str(tmp_path / "run"), "--data-dir", str(glue_dir)])
    assert str(e.value.code) == (
        f"error: {glue_dir / 'RTE' / 'train.tsv'} not found, nor {glue_dir / 'train.tsv'}: "
        f"--data-dir for RTE must be the folder from GLUE's RTE download, or a folder holding it "
        f"as RTE/; leave out --data-dir to download it")
