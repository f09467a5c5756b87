"""Shared test fixtures. Tests run on CPU, offline, in seconds."""
import functools
import http.server
import os
import sys
import threading
from pathlib import Path

import pytest

# Two tests run at once (pytest.ini). A notebook kernel or subprocess with two OpenMP threads
# beside the other worker's test would have its idle thread spin on a core that test needs,
# slowing both many times over: idle threads sleep instead. Set before torch loads OpenMP.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the core files are flat modules at the top level

# One thread: the test models are tiny, and two OpenMP threads wait on each other at every small op
# (on a busy 2-core machine a tiny step ran 100x slower with two).
torch.set_num_threads(1)


def pytest_configure(config):
    # torch's own warning, not ours: torch.compile on a CPU imports torch.utils.mkldnn, whose
    # MkldnnLinear still uses torch.jit.script_method (torch 2.13); 14 lines of noise a run.
    config.addinivalue_line(
        "filterwarnings", "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")


@pytest.fixture
def http_server(tmp_path):
    """Serve a folder over HTTP on 127.0.0.1 (never the internet), for the download code.

    Yields (root, url): put files in `root`, fetch them from `url + "/name"`.
    The server runs in a daemon thread and is shut down after the test.
    """
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


def hf_pair(cfg, seed=0):
    """Random HF ElectraForPreTraining and ElectraForMaskedLM for our config (no download), the
    generator's embeddings tied to D's as in ELECTRA, biases and LayerNorm non-zero so that a wrong
    mapping cannot hide."""
    from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

    from support.hf import hf_config_dict

    torch.manual_seed(seed)
    d = ElectraForPreTraining(ElectraConfig(**hf_config_dict(cfg))).eval()
    g = ElectraForMaskedLM(ElectraConfig(**hf_config_dict(cfg, generator=True))).eval()
    with torch.no_grad():
        for model in (d, g):
            for name, p in model.named_parameters():
                if name.endswith("bias") or "LayerNorm" in name:
                    p.add_(0.1 * torch.randn_like(p))
    g.electra.embeddings.load_state_dict(d.electra.embeddings.state_dict())
    return d, g


def save_run_folder(folder, tok, cfg, seed=0):
    """A run folder as train.py writes it: ckpt.pt (through train.checkpoint, at step 7) and
    vocab.txt, holding a freshly initialised Electra of `cfg` (seeded); returns the model."""
    import train
    from electra import Electra
    from support import plumbing

    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    model = Electra(cfg)
    opt = torch.optim.AdamW(model.parameters())
    state = train.checkpoint(model, opt, 7, train.recipe_config(size="tiny"), tok.hash(), rng=[])
    plumbing.write_checkpoint(folder / "ckpt.pt", state)
    tok.save(folder / "vocab.txt")
    return model
