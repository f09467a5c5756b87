"""experiments/probe.py on tiny data: the mean cosine by hand, the per-layer states against the
encoder's own forward, the twin's weights, a probe on separable features, and the script end to
end on a fake SST-2."""
import doctest
import json
import math

import numpy as np
import pytest
import torch
from test_finetune_model import save_train_checkpoint, tiny_config, tiny_tokenizer
from test_sst2_check import fake_sst2

from electra import Electra
from experiments import probe


def test_mean_cosine_of_three_vectors_by_hand():
    # cos(a, b) = 0, cos(a, c) = cos(b, c) = 1/sqrt(2): the mean over the 3 pairs is sqrt(2)/3;
    # the scale of a vector does not count (c is (1, 1) times 5)
    h = torch.tensor([[1.0, 0.0], [0.0, 2.0], [5.0, 5.0]])
    assert probe.mean_cosine(h) == pytest.approx(math.sqrt(2) / 3)
    assert probe.mean_cosine(torch.tensor([[1.0, 2.0], [3.0, 6.0]])) == pytest.approx(1.0)
    assert probe.mean_cosine(torch.tensor([[1.0, 0.0], [-2.0, 0.0]])) == pytest.approx(-1.0)


def test_mean_cosine_is_the_mean_over_the_pairs_of_the_similarity_matrix():
    torch.manual_seed(0)
    h = torch.randn(7, 5)
    u = torch.nn.functional.normalize(h, dim=-1)
    sim = u @ u.T  # [7, 7]
    off_diagonal = sim[~torch.eye(7, dtype=torch.bool)]  # the 42 pairs i != j
    assert probe.mean_cosine(h) == pytest.approx(off_diagonal.mean().item(), abs=1e-6)


def test_layer_states_end_in_the_encoders_hidden_states():
    tok = tiny_tokenizer()
    config = tiny_config(tok)
    torch.manual_seed(0)
    encoder = Electra(config).fine_tuning_encoder().eval()
    input_ids = torch.tensor([[2, 5, 6, 7, 3], [2, 8, 3, 0, 0]])  # the second row padded
    segment_ids = torch.zeros_like(input_ids)
    attention_mask = (input_ids != tok.pad_id).long()
    with torch.no_grad():
        states = probe.layer_states(encoder, input_ids, segment_ids, attention_mask)
        hidden = encoder.hidden_states(input_ids, segment_ids, attention_mask)
        embedded = encoder.embeddings_project(encoder.embeddings(input_ids, segment_ids))
    assert config.embedding_size != config.hidden_size  # so h_0 goes through the projection
    assert len(states) == config.num_layers + 1
    assert all(h.shape == (2, 5, config.hidden_size) for h in states)
    assert torch.equal(states[0], embedded)
    assert torch.equal(states[-1], hidden)
    assert not torch.equal(states[1], states[2])  # each block's own output


@pytest.mark.parametrize("objective", ["electra", "bert"])
def test_the_twin_holds_the_runs_initial_weights(tmp_path, objective):
    tok = tiny_tokenizer()
    config = tiny_config(tok, objective=objective)
    # weights of seed 1, while its train_config's seed is 0: the twin must differ from the run
    trained = save_train_checkpoint(tmp_path / "run", tok, config, seed=1)
    pair, scored = probe.encoders(tmp_path / "run")
    torch.manual_seed(0)
    initial = Electra(config)
    # D's encoder for ELECTRA, the masked LM's for BERT, without the pre-training head
    source = {"electra": "discriminator", "bert": "mlm"}[objective]
    for name, model in (("pretrained", trained), ("random", initial)):
        expected = getattr(model, source).state_dict()
        got = pair[name].state_dict()
        assert set(got) <= set(expected)
        assert all(torch.equal(got[k], expected[k]) for k in got)
        assert not pair[name].training
    assert not torch.equal(pair["random"].embeddings.word.weight,
                           pair["pretrained"].embeddings.word.weight)
    assert scored.tokenizer.hash() == tok.hash()


def test_a_probe_on_separable_features_scores_100():
    rng = np.random.default_rng(0)
    y_train = np.array([0, 1] * 20)
    y_dev = np.array([1, 0] * 10)
    # feature 0 is the label's sign times a margin; feature 1 is noise on another scale
    x_train = np.stack([np.where(y_train == 1, 3.0, -3.0) + rng.normal(0, 0.5, 40),
                        rng.normal(0, 100, 40)], axis=1)
    x_dev = np.stack([np.where(y_dev == 1, 3.0, -3.0), rng.normal(0, 100, 20)], axis=1)
    assert probe.probe_accuracy(x_train, y_train, x_dev, y_dev) == 100.0
    assert probe.probe_accuracy(x_train, y_train, x_dev, 1 - y_dev) == 0.0


def test_probe_runs_end_to_end_on_a_fake_sst2(tmp_path, capsys):
    tok = tiny_tokenizer()
    config = tiny_config(tok)
    run = tmp_path / "run"
    save_train_checkpoint(run, tok, config, seed=1)
    data = fake_sst2(tmp_path / "SST-2")
    out = tmp_path / "probe.json"
    results = probe.main(["--init", str(run), "--data-dir", str(data), "--max-train-examples",
                          "8", "--cosine-sentences", "3", "--batch-size", "3", "--out", str(out)])
    assert json.loads(out.read_text()) == results
    assert set(results) == {"task", "data_dir", "train_rows", "dev_rows", "cosine_sentences",
                            "max_seq_len", "runs"}
    assert (results["train_rows"], results["dev_rows"], results["cosine_sentences"]) == (8, 8, 3)
    (row,) = results["runs"]
    assert set(row) == {"init", "source", "objective", "encoder", "pretrained", "random", "draws"}
    assert row["draws"] == [row["random"]]  # one draw: the twin
    assert row["encoder"] == "discriminator" and row["objective"] == "electra"
    pair, _ = probe.encoders(run)
    for name in ("pretrained", "random"):
        measures = row[name]
        assert set(measures) == {"mean_pooled", "cls_last", "mean_cos"}
        assert len(measures["mean_pooled"]) == config.num_layers + 1
        # 8 dev rows: every accuracy is a multiple of 12.5 %
        for acc in measures["mean_pooled"] + [measures["cls_last"]]:
            assert 0.0 <= acc <= 100.0 and (acc / 12.5).is_integer()
        # the mean cosine over the first 3 dev sentences' tokens, each sentence run alone
        with torch.no_grad():
            states = []
            for sentence in fake_sst2_dev_sentences(data)[:3]:
                ids, segments = tok.encode_pair(sentence)
                x = torch.tensor([ids])
                states.append(pair[name].hidden_states(x, torch.tensor([segments]),
                                                       torch.ones_like(x))[0])
        assert measures["mean_cos"] == pytest.approx(probe.mean_cosine(torch.cat(states)),
                                                     abs=1e-5)
    assert row["pretrained"] != row["random"]
    table = capsys.readouterr().out
    assert f"| {run} (discriminator) | pre-trained | random weights | difference |" in table
    assert "| layer 0 (embeddings), mean-pooled |" in table
    assert f"| layer {config.num_layers}, [CLS] |" in table
    assert f"| mean cosine, layer {config.num_layers} tokens |" in table


def test_draws_of_random_weights_give_a_mean_and_a_range(tmp_path, capsys):
    tok = tiny_tokenizer()
    run = tmp_path / "run"
    save_train_checkpoint(run, tok, tiny_config(tok), seed=1)
    data = fake_sst2(tmp_path / "SST-2")
    found, _ = probe.encoders(run, draws=3)
    assert list(found) == ["pretrained", "random", "random 1", "random 2"]
    weights = [found[name].embeddings.word.weight for name in ("random", "random 1", "random 2")]
    assert not torch.equal(weights[0], weights[1]) and not torch.equal(weights[1], weights[2])
    twin, _ = probe.encoders(run)
    assert torch.equal(twin["random"].embeddings.word.weight, weights[0])  # draw 0 is the twin
    results = probe.main(["--init", str(run), "--data-dir", str(data), "--max-train-examples",
                          "8", "--cosine-sentences", "3", "--batch-size", "3", "--draws", "3",
                          "--out", str(tmp_path / "probe.json")])
    (row,) = results["runs"]
    assert len(row["draws"]) == 3
    cosines = [d["mean_cos"] for d in row["draws"]]
    assert len(set(cosines)) == 3  # three different draws, each measured
    assert row["random"]["mean_cos"] == pytest.approx(sum(cosines) / 3)
    assert row["random"]["cls_last"] == pytest.approx(sum(d["cls_last"] for d in row["draws"]) / 3)
    table = capsys.readouterr().out
    assert "| pre-trained | random weights, 3 draws: mean [min-max] | difference |" in table
    low, high = min(cosines), max(cosines)
    pre = row["pretrained"]["mean_cos"]
    assert (f"| mean cosine, layer 3 tokens | {pre:.3f} | {sum(cosines) / 3:.3f} "
            f"[{low:.3f}-{high:.3f}] |") in table
    with pytest.raises(SystemExit, match="--draws must be at least 1"):
        probe.main(["--init", str(run), "--draws", "0"])


def fake_sst2_dev_sentences(folder):
    return [line.split("\t")[0] for line in (folder / "dev.tsv").read_text().splitlines()[1:]]


def test_probe_errors_are_one_line(tmp_path):
    with pytest.raises(SystemExit, match="no ckpt.pt there; pass a train.py run folder"):
        probe.main(["--init", str(tmp_path), "--data-dir", str(tmp_path)])
    tok = tiny_tokenizer()
    save_train_checkpoint(tmp_path / "run", tok, tiny_config(tok))
    with pytest.raises(SystemExit, match="--cosine-sentences must be at least 1"):
        probe.main(["--init", str(tmp_path / "run"), "--cosine-sentences", "0"])
    with pytest.raises(SystemExit, match="train.tsv not found"):
        probe.main(["--init", str(tmp_path / "run"), "--data-dir", str(tmp_path / "nowhere")])
    data = fake_sst2(tmp_path / "SST-2")
    with pytest.raises(SystemExit, match="hold one label only"):
        probe.main(["--init", str(tmp_path / "run"), "--data-dir", str(data),
                    "--max-train-examples", "2"])


def test_probe_docstring_examples():
    assert doctest.testmod(probe).failed == 0
