"""train.py's recipe: the learning-rate schedule and the optimizer's parameter groups."""
import pytest
import torch
import torch.nn as nn

from electra import Electra, get_config
from train import (
    TrainConfig,
    build_optimizer,
    clip_gradients,
    clip_groups,
    learning_rate,
    parse_args,
)


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


def gradients_of_norm(params, norm):
    """Every parameter's gradient the same value, so that ||g|| over `params` is `norm`."""
    count = sum(p.numel() for p in params)
    for p in params:
        p.grad = torch.full_like(p, norm / count ** 0.5)


def norm_of(params):
    return torch.cat([p.grad.flatten() for p in params]).norm().item()


@pytest.mark.parametrize("sharing", ["gdes", "none"])
def test_clip_apart_clips_g_and_d_each_to_the_norm(sharing):
    model = Electra(get_config("tiny", vocab_size=50, num_layers=1, sharing=sharing))
    g = list(model.generator.parameters())
    d = [p for p in model.parameters() if all(p is not q for q in g)]
    # G's token table is G's (under gdes D holds E_Delta and its LayerNorm only)
    assert any(p is model.generator.embeddings.word.weight for p in g)
    # ||g_G|| = 3, ||g_D|| = 4: the whole is 5
    gradients_of_norm(g, 3.0), gradients_of_norm(d, 4.0)
    one, apart = clip_groups(model, apart=False), clip_groups(model, apart=True)
    assert [len(ps) for ps in apart] == [len(g), len(d)]  # every parameter in one group of two
    assert clip_gradients(one, 1.0).item() == pytest.approx(5.0, rel=1e-3)
    # one factor, 1/5, for both
    assert (norm_of(g), norm_of(d)) == pytest.approx((0.6, 0.8), rel=1e-3)
    gradients_of_norm(g, 3.0), gradients_of_norm(d, 4.0)
    assert clip_gradients(apart, 1.0).item() == pytest.approx(5.0, rel=1e-3)
    assert (norm_of(g), norm_of(d)) == pytest.approx((1.0, 1.0), rel=1e-3)  # 1/3 for G, 1/4 for D
    gradients_of_norm(g, 0.5), gradients_of_norm(d, 4.0)
    clip_gradients(apart, 1.0)
    # G under the norm: untouched
    assert (norm_of(g), norm_of(d)) == pytest.approx((0.5, 1.0), rel=1e-3)


@pytest.mark.parametrize("flags", [["--sharing", "embeddings"], ["--sharing", "all"],
                                   ["--sharing", "none", "--objective", "bert"]])
def test_clip_apart_refuses_weights_g_and_d_share(flags):
    with pytest.raises(SystemExit, match="--clip-apart needs a G and a D that share no weight"):
        parse_args(["--size", "tiny", "--clip-apart", *flags])
