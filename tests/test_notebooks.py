"""The notebooks run headless, top to bottom, without an error; the stored copies carry their outputs.

Each notebook is executed with nbclient in a kernel started from this interpreter (sys.executable),
so it sees the same environment as the tests (a fresh CI venv included), never a `python` that
happens to come first on PATH. The notebooks train tiny models on the CPU: all three take about a
minute together on 2 cores.
"""
import json
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


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs(name, tmp_path, monkeypatch):
    for var in ("ELECTRA_RUN_DIR", "BERT_RUN_DIR", "ELECTRA_HF"):  # the notebooks' own tiny runs, not a user's
        monkeypatch.delenv(var, raising=False)
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    client = NotebookClient(nb, km=kernel_manager(tmp_path), timeout=CELL_TIMEOUT_S,
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()  # raises CellExecutionError, with the cell and traceback, on any error
    images = sum("image/png" in out.get("data", {}) for cell in nb.cells if cell.cell_type == "code"
                 for out in cell.outputs)
    assert images >= 1, f"{name} drew no figure"


@pytest.mark.parametrize("name", NAMES)
def test_stored_notebook_has_outputs_and_is_small(name):
    path = NOTEBOOKS / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(cell.outputs for cell in code if "print(" in cell.source or "plt.show()" in cell.source), \
        f"{name}: store the notebook executed (every cell that prints or plots has outputs)"
    errors = [out for cell in code for out in cell.outputs if out.output_type == "error"]
    assert not errors, f"{name}: the stored copy has an error output: {errors[0].get('ename')}"
    assert path.stat().st_size < MAX_STORED_BYTES, f"{name}: {path.stat().st_size} bytes, keep it small"
