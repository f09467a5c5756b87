"""The notebooks run headless, top to bottom, without an error; the stored copies carry their
outputs.

Each notebook is executed with nbclient in a kernel started from this interpreter (sys.executable),
so it sees the same environment as the tests (a fresh CI venv included), never a `python` that
happens to come first on PATH. The notebooks train tiny models on the CPU: all three take about a
minute together on 2 cores.
"""
import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NAMES = ("01_replaced_token_detection", "02_losses_by_hand", "03_training_dynamics")
CELL_TIMEOUT_S = 600  # a cell that trains; far above what it takes, so only a hang trips it
MAX_STORED_BYTES = 400_000  # stored with outputs, but small: PNGs at modest dpi, no embedded data


def kernel_manager(tmp_path: Path) -> KernelManager:
    """A KernelManager whose only kernel is `sys.executable -m ipykernel_launcher`.

    The stock "python3" kernelspec runs `python` from PATH, which under `/venv/bin/python -m pytest`
    without an activated venv can be another interpreter without torch.
    """
    spec_dir = tmp_path / "kernels" / "this-python"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python (tests)", "language": "python"}))
    specs = KernelSpecManager(kernel_dirs=[str(spec_dir.parent)], ensure_native_kernel=False)
    return KernelManager(kernel_name="this-python", kernel_spec_manager=specs)


# what differs between two runs of the same notebook: temporary folders and speeds
VARYING = (re.compile(r"/tmp/\S+"),
           re.compile(r"'(steps_per_s|tokens_per_s|elapsed_s)': [\d.e+-]+"),
           re.compile(r"\bat 0x[0-9a-f]+"))


def text_outputs(nb) -> list[str]:
    """The printed text of every code cell, progress bars (stderr) and VARYING left out."""
    texts = ["".join(out.get("text", "") + out.get("data", {}).get("text/plain", "")
                     for out in cell.outputs if out.get("name") != "stderr")
             for cell in nb.cells if cell.cell_type == "code"]
    for pattern in VARYING:
        texts = [pattern.sub("<varies>", t) for t in texts]
    return texts


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs(name, tmp_path, monkeypatch):
    # the notebooks' own tiny runs, not a user's
    for var in ("ELECTRA_RUN_DIR", "BERT_RUN_DIR", "ELECTRA_HF"):
        monkeypatch.delenv(var, raising=False)
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    client = NotebookClient(nb, km=kernel_manager(tmp_path), timeout=CELL_TIMEOUT_S,
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    stored = text_outputs(nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4))
    client.execute()  # raises CellExecutionError, with the cell and traceback, on any error
    # the stored outputs are this run's: what the notebook's text reads from them is what a
    # reader who runs it sees
    assert text_outputs(nb) == stored, f"{name}: re-store it executed (its outputs changed)"
    images = sum("image/png" in out.get("data", {})
                 for cell in nb.cells if cell.cell_type == "code"
                 for out in cell.outputs)
    assert images >= 1, f"{name} drew no figure"


@pytest.mark.parametrize("name", NAMES)
def test_stored_notebook_has_outputs_and_is_small(name):
    path = NOTEBOOKS / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(cell.outputs for cell in code
               if "print(" in cell.source or "plt.show()" in cell.source), \
        f"{name}: store the notebook executed (every cell that prints or plots has outputs)"
    errors = [out for cell in code for out in cell.outputs if out.output_type == "error"]
    assert not errors, f"{name}: the stored copy has an error output: {errors[0].get('ename')}"
    assert path.stat().st_size < MAX_STORED_BYTES, \
        f"{name}: {path.stat().st_size} bytes, keep it small"


@pytest.mark.parametrize("schedule, expected", [("none", 2.0), ("hook", 1.0), ("old flags", 1.0)])
def test_load_run_gives_the_temperature_of_the_last_update(schedule, expected, tmp_path,
                                                           monkeypatch):
    """Notebook 01 samples G at the temperature its run ended at: the tiny model's 2 without a
    schedule; 1 at update 7 of a move from 2 to 1 that ends at update 5 (as the CPU hour's at
    4,800), whether experiments/hooks.py's schedule kept it in the model's config or the run
    folder holds the --temperature-end flags train.py once had."""
    import torch

    monkeypatch.syspath_prepend(str(NOTEBOOKS))
    sys.modules.pop("_helpers", None)
    import _helpers

    import train
    from electra import Electra, get_config
    from experiments import hooks
    from support import plumbing
    from tokenizer import Tokenizer

    tok = Tokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"])
    model = Electra(get_config("tiny", vocab_size=len(tok), hidden_size=32, embedding_size=32,
                               num_layers=1, num_heads=1, intermediate_size=64, pad_id=tok.pad_id,
                               cls_id=tok.cls_id, sep_id=tok.sep_id, mask_id=tok.mask_id))
    cfg = train.recipe_config(size="tiny", steps=10)
    if schedule == "hook":
        model.config.temperature = hooks.temperature_at(6, 2.0, 1.0, 5)  # as the hook leaves it
    state = train.checkpoint(model, torch.optim.AdamW(model.parameters()), 7, cfg, tok.hash(),
                             rng=[])
    if schedule == "old flags":
        state["train_config"].update(temperature_end=1.0, temperature_steps=5)
    plumbing.write_checkpoint(tmp_path / "ckpt.pt", state)
    tok.save(tmp_path / "vocab.txt")
    (tmp_path / "metrics.jsonl").write_text("")
    run = _helpers.load_run(tmp_path)
    assert run["step"] == 7 and run["temperature"] == expected
