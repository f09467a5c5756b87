"""experiments/heldout_auc.py: a run scored on another corpus's held-out split. On the run's own
corpus it must give the very context AUC train.py logged at the run's last update."""
import json

import pytest
import test_train
from test_train import args, write_corpus

import train
from experiments import heldout_auc

corpus = test_train.corpus  # the fixture: a corpus folder, its vocab.txt and a cache folder


def test_own_corpus_gives_the_logged_context_auc_and_another_corpus_its_own(corpus, tmp_path,
                                                                            capsys):
    folder, _, cache = corpus
    out = tmp_path / "run"
    # temperature 2 in training: the logged context AUC is the second, temperature-1 pass
    train.main(args(corpus, out, "--steps", "4", "--eval-interval", "4", "--set",
                    "temperature=2.0"))
    logged = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    (last,) = [r for r in logged if r["split"] == "eval" and r["step"] == 4]
    own = heldout_auc.main(["--init", str(out), "--data", str(folder), "--cache-dir", str(cache)])
    assert own["step"] == 4
    assert own["context_auc"] == pytest.approx(last["context_auc"], abs=1e-6)
    assert own["context_auc"] != pytest.approx(last["disc_auc"], abs=1e-6)
    other = write_corpus(tmp_path / "other", paragraphs=300, seed=1)
    scored = heldout_auc.main(["--init", str(out / "ckpt.pt"), "--data", str(other),
                               "--cache-dir", str(cache)])
    assert scored["examples"] > own["examples"]  # more text, a larger held-out split
    assert scored["context_auc"] != own["context_auc"]
    printed = capsys.readouterr().out
    assert f"context AUC {own['context_auc']:.3f}" in printed


def test_a_folder_without_a_run_is_one_line(tmp_path):
    with pytest.raises(SystemExit,
                       match="expected a train.py run folder with ckpt.pt and vocab.txt"):
        heldout_auc.main(["--init", str(tmp_path), "--data", str(tmp_path)])
