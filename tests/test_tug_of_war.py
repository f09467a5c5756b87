"""experiments/tug_of_war.py's measures, by hand on tiny tensors, and on a micro model."""
import math

import pytest
import torch
from test_electra import batch, micro_config

from electra import Electra
from experiments import tug_of_war as tw


def test_cosine_by_hand():
    assert tw.cosine(torch.tensor([3.0, 4.0]), torch.tensor([4.0, 3.0])) == pytest.approx(0.96)
    # read flat: [[1, 0], [0, 1]] . [[1, 0], [0, -1]] = 1 - 1 = 0
    assert tw.cosine(torch.tensor([[1.0, 0.0], [0.0, 1.0]]),
                     torch.tensor([[1.0, 0.0], [0.0, -1.0]])) == 0.0
    assert tw.cosine(torch.tensor([1.0, 2.0]), torch.tensor([-2.0, -4.0])) == pytest.approx(-1.0)
    assert tw.cosine(torch.zeros(2), torch.tensor([1.0, 0.0])) == 0.0


def test_mean_pairwise_cosine_by_hand():
    # pairs: (e1, e2) 0, (e1, e3) and (e2, e3) 1/sqrt(2): mean sqrt(2)/3
    table = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert tw.mean_pairwise_cosine(table) == pytest.approx(math.sqrt(2) / 3)
    # a row's length does not count, nor does its cosine with itself
    assert tw.mean_pairwise_cosine(torch.tensor([[2.0, 0.0], [5.0, 0.0]])) == pytest.approx(1.0)
    assert tw.mean_pairwise_cosine(torch.tensor([[1.0, 0.0], [-3.0, 0.0]])) == pytest.approx(-1.0)


def test_table_gradient_reads_the_rows_and_leaves_grad_alone():
    table = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    loss = (table[2] * torch.tensor([7.0, 8.0])).sum() + table[0, 0] ** 2  # d/d row 0: [2, 0]
    grad = tw.table_gradient(loss, table, torch.tensor([0, 2]))
    assert grad.tolist() == [[2.0, 0.0], [7.0, 8.0]]
    assert table.grad is None


def test_tug_cosines_on_a_micro_model():
    torch.manual_seed(0)
    model = Electra(micro_config(dropout=0.0, attention_dropout=0.0))
    tug, floor = tw.tug_cosines(model, batch(seed=0), batch(seed=1), seed=0)
    assert -1 <= tug <= 1 and -1 <= floor <= 1
    # the same batch as "another" batch, with the same masks: the floor's cosine is exactly 1
    _, same = tw.tug_cosines(model, batch(seed=0), batch(seed=0), seed=0)
    assert same == pytest.approx(1.0)
    assert all(p.grad is None for p in model.parameters())  # training's gradients untouched


def test_d_table_is_e_g_plus_e_delta_under_gdes():
    torch.manual_seed(0)
    model = Electra(micro_config(sharing="gdes"))
    with torch.no_grad():
        model.discriminator.embeddings.word_delta.fill_(0.5)
    assert torch.equal(tw.d_table(model), model.embeddings.word.weight + 0.5)


def test_main_writes_each_seed_apart_with_the_random_weights_zero_point(tmp_path, capsys):
    result = tw.main(["--out", str(tmp_path), "--steps", "2", "--every", "1", "--seed", "3"])
    assert all((tmp_path / f"tug_of_war_s3.{ext}").is_file() for ext in ("json", "png"))
    assert list(result["similarity"]) == ["random weights", "none", "embeddings", "gdes"]
    zero = result["similarity"]["random weights"]
    assert abs(zero["G"]) < 0.01 and abs(zero["D"]) < 0.01  # N(0, 0.02) rows: about orthogonal
    assert [r["step"] for r in result["tug"]] == [0, 1]
