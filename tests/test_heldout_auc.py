"""experiments/heldout_auc.py: a run scored on another corpus's held-out split. On the run's own
corpus it must give the very context AUC train.py logged at the run's last update; against another
run's G (--generator) it scores on that run's held-out text, masks and samples."""
import json

import pytest
import test_train
import torch
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
    assert own["gen_entropy"] == pytest.approx(last["gen_entropy"], abs=1e-5)  # G's, as logged
    assert own["gen_p_max"] == pytest.approx(last["gen_p_max"], abs=1e-5)
    other = write_corpus(tmp_path / "other", paragraphs=300, seed=1)
    scored = heldout_auc.main(["--init", str(out / "ckpt.pt"), "--data", str(other),
                               "--cache-dir", str(cache)])
    assert scored["examples"] > own["examples"]  # more text, a larger held-out split
    assert scored["context_auc"] != own["context_auc"]
    printed = capsys.readouterr().out
    assert f"context AUC {own['context_auc']:.3f}" in printed
    assert f"G's entropy {own['gen_entropy']:.2f} nats" in printed


def test_a_folder_without_a_run_is_one_line(tmp_path):
    with pytest.raises(SystemExit,
                       match="expected a train.py run folder with ckpt.pt and vocab.txt"):
        heldout_auc.main(["--init", str(tmp_path), "--data", str(tmp_path)])


def test_d_against_another_runs_g_shares_that_runs_held_out_text(corpus, tmp_path, capsys):
    """--generator: the held-out examples, masks and samples are the generator run's, so G's
    accuracy and the tokens scored are that run's own, while D is --init's."""
    folder, _, cache = corpus
    d_run = tmp_path / "d"
    g_run = tmp_path / "g"
    train.main(args(corpus, d_run, "--steps", "4", "--eval-interval", "4"))
    # another seed: another held-out split, other masks and another G
    train.main(args(corpus, g_run, "--steps", "4", "--eval-interval", "4", "--seed", "1"))
    common = ["--data", str(folder), "--cache-dir", str(cache)]
    own_d = heldout_auc.main(["--init", str(d_run), *common])
    own_g = heldout_auc.main(["--init", str(g_run), *common])
    # D against its own run as the generator is the plain context AUC, to the last digit
    itself = heldout_auc.main(["--init", str(d_run), "--generator", str(d_run), *common])
    assert itself["context_auc"] == own_d["context_auc"]
    crossed = heldout_auc.main(["--init", str(d_run), "--generator", str(g_run), *common])
    assert crossed["gen_acc"] == own_g["gen_acc"]  # G's pass is g_run's, on its held-out text
    assert crossed["tokens"] == own_g["tokens"]
    assert crossed["examples"] == own_g["examples"]
    assert crossed["context_auc"] != own_d["context_auc"]  # D's scores, G's corrupted text
    assert crossed["context_auc"] != own_g["context_auc"]
    assert f"against {g_run}'s G" in capsys.readouterr().out


def test_the_held_out_share_and_batches_can_be_set(corpus, tmp_path):
    folder, _, cache = corpus
    out = tmp_path / "run"
    train.main(args(corpus, out, "--steps", "2", "--eval-interval", "2"))
    common = ["--init", str(out), "--data", str(folder), "--cache-dir", str(cache)]
    default = heldout_auc.main(common)
    half = heldout_auc.main([*common, "--eval-fraction", "0.5", "--eval-batches", "50"])
    assert half["examples"] > default["examples"]
    assert half["tokens"] > default["tokens"]
    one = heldout_auc.main([*common, "--eval-fraction", "0.5", "--eval-batches", "1"])
    assert one["tokens"] < half["tokens"]
    with pytest.raises(SystemExit, match="--eval-fraction"):
        heldout_auc.main([*common, "--eval-fraction", "1.5"])


def test_a_generator_of_another_vocab_is_one_line(corpus, tmp_path):
    folder, _, cache = corpus
    out = tmp_path / "run"
    train.main(args(corpus, out, "--steps", "1", "--eval-interval", "1"))
    other = tmp_path / "other"
    other.mkdir()
    saved = torch.load(out / "ckpt.pt", weights_only=False)
    saved["vocab_hash"] = "0" * 64  # as a run on another vocab.txt has
    torch.save(saved, other / "ckpt.pt")
    (other / "vocab.txt").write_text((out / "vocab.txt").read_text())
    with pytest.raises(SystemExit, match="D can only be scored against a G of the same"):
        heldout_auc.main(["--init", str(out), "--generator", str(other), "--data", str(folder),
                          "--cache-dir", str(cache)])
