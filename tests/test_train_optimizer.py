"""train.py's recipe: the learning-rate schedule and the optimizer's parameter groups."""
import pytest
import torch.nn as nn

from electra import Electra, get_config
from train import TrainConfig, build_optimizer, learning_rate


def test_learning_rate_worked_example():
    cfg = TrainConfig(lr=1e-3, warmup=10, steps=100)
    # step 0: 1e-3 * (1/10) * (1 - 0) = 1e-4; step 9: 1e-3 * 1 * 0.91; step 50: 1e-3 * 1 * 0.5
    assert learning_rate(0, cfg) == pytest.approx(1e-4)
    assert learning_rate(9, cfg) == pytest.approx(9.1e-4)
    assert learning_rate(50, cfg) == pytest.approx(5e-4)
    assert learning_rate(100, cfg) == 0.0


def test_no_weight_decay_on_layernorm_or_bias():
    model = Electra(get_config("tiny", vocab_size=50, num_layers=1))
    opt = build_optimizer(model, TrainConfig())
    decay, no_decay = opt.param_groups
    assert decay["weight_decay"] == 0.01 and no_decay["weight_decay"] == 0.0
    layer_norm = {id(p) for mod in model.modules() if isinstance(mod, nn.LayerNorm)
                  for p in mod.parameters()}
    # incl. the MLM output_bias
    biases = {id(p) for n, p in model.named_parameters() if n.endswith("bias")}
    assert {id(p) for p in no_decay["params"]} == layer_norm | biases
    assert ({id(p) for p in decay["params"]}
            == {id(p) for p in model.parameters()} - layer_norm - biases)
    assert opt.defaults["eps"] == 1e-6 and opt.defaults["betas"] == (0.9, 0.999)
