"""electra.py against HuggingFace's ELECTRA: randomly initialised HF models built from a config
(no download), weights copied across with our converter, outputs compared."""
import dataclasses

import pytest
import torch
from conftest import hf_pair
from transformers import (
    BertConfig,
    BertModel,
    ElectraConfig,
    ElectraForMaskedLM,
    ElectraForPreTraining,
)

import electra
from electra import Discriminator, count_params, generator_config, get_config
from support import hf
from support.hf import from_hf_state_dicts, hf_config_dict, load_hf_encoder, to_hf_state_dicts


def inputs(vocab, B=3, T=20):
    g = torch.Generator().manual_seed(1)
    x = torch.randint(5, vocab, (B, T), generator=g)
    seg = torch.zeros_like(x)
    seg[:, T // 2:] = 1
    am = torch.ones_like(x)
    am[1, 15:] = 0  # padding in rows 1 and 2
    am[2, 9:] = 0
    return x, seg, am


CONFIGS = {
    # the paper's Small (embedding 128 projected to hidden 256)
    "small": get_config("small"),
    # embedding size == hidden size: no embeddings_project in D (G still projects 64 -> 16)
    "emb_eq_hidden": electra.ElectraConfig(vocab_size=500, embedding_size=64, hidden_size=64,
                                           num_layers=2, num_heads=4, intermediate_size=128),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_logits_equal_huggingface(name):
    cfg = CONFIGS[name]
    hf_d, hf_g = hf_pair(cfg)
    ours = from_hf_state_dicts(cfg, hf_d.state_dict(), hf_g.state_dict()).eval()
    assert ((ours.discriminator.embeddings_project is None)
            == (cfg.embedding_size == cfg.hidden_size))
    x, seg, am = inputs(cfg.vocab_size)
    with torch.no_grad():
        # [B, T]
        hf_logit_replaced = hf_d(input_ids=x, token_type_ids=seg, attention_mask=am).logits
        our_logit_original = ours.discriminator(x, seg, am)
        # the paper's D predicts *original*: our logit is minus HF's
        assert torch.allclose(our_logit_original, -hf_logit_replaced, atol=1e-5)
        # [B, T, V]
        hf_g_logits = hf_g(input_ids=x, token_type_ids=seg, attention_mask=am).logits
        all_positions = torch.arange(x.shape[1]).expand(x.shape[0], -1)  # [B, T]
        h = ours.generator.hidden_states(x, seg, am)
        our_g_logits = ours.generator.logits(h, all_positions)
    real = am.bool()
    assert torch.allclose(our_g_logits[real], hf_g_logits[real], atol=1e-5)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_round_trip_hf_ours_hf_is_exact(name):
    cfg = CONFIGS[name]
    hf_d, hf_g = hf_pair(cfg, seed=1)
    disc_sd, gen_sd = to_hf_state_dicts(from_hf_state_dicts(cfg, hf_d.state_dict(),
                                                            hf_g.state_dict()))
    for ours, ref in ((disc_sd, hf_d.state_dict()), (gen_sd, hf_g.state_dict())):
        assert set(ours) == set(ref)
        for k in ref:
            assert torch.equal(ours[k], ref[k]), k
    # and the exported dicts load into HF models with strict=True
    ElectraForPreTraining(ElectraConfig(**hf_config_dict(cfg))).load_state_dict(disc_sd)
    ElectraForMaskedLM(ElectraConfig(**hf_config_dict(cfg, generator=True))).load_state_dict(gen_sd)


def test_parameter_counts_equal_huggingface():
    cfg = get_config("small")
    ours = electra.Electra(cfg)
    hf_d = ElectraForPreTraining(ElectraConfig(**hf_config_dict(cfg)))
    hf_g = ElectraForMaskedLM(ElectraConfig(**hf_config_dict(cfg, generator=True)))
    assert (count_params(ours.discriminator) == sum(p.numel() for p in hf_d.parameters())
            == 13_549_057)
    # HF's generator counts the tied output matrix once, like ours
    assert count_params(ours.generator) == sum(p.numel() for p in hf_g.parameters())
    assert generator_config(cfg).hidden_size == hf_g.config.hidden_size == 64


def test_a_wrong_state_dict_gets_a_clear_error():
    cfg = CONFIGS["emb_eq_hidden"]
    hf_d, hf_g = hf_pair(cfg)
    sd = hf_d.state_dict()
    del sd["electra.encoder.layer.1.output.dense.weight"]
    with pytest.raises(ValueError,
                       match=r"missing keys \(1\): electra.encoder.layer.1.output.dense.weight"):
        from_hf_state_dicts(cfg, sd)
    # the Small config against a checkpoint of another size: shapes are named, not a torch traceback
    with pytest.raises(ValueError, match=r"shape mismatches: "
                                         r"electra.embeddings.word_embeddings.weight: "
                                         r"checkpoint \(500, 64\) vs config \(30522, 128\)"):
        from_hf_state_dicts(get_config("small"), hf_d.state_dict())
    with pytest.raises(ValueError, match="check that the config"):
        from_hf_state_dicts(dataclasses.replace(cfg, num_layers=3), hf_d.state_dict())


def test_bert_encoder_loads_and_matches_huggingface():
    # BERT's encoder is ELECTRA's without the embedding projection: the same mapping serves both.
    bert_cfg = BertConfig(vocab_size=300, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64)
    torch.manual_seed(0)
    bert = BertModel(bert_cfg, add_pooling_layer=True).eval()
    cfg = hf.config_from_hf(bert_cfg.to_dict())
    assert cfg.embedding_size == cfg.hidden_size == 32
    ours = Discriminator(cfg).eval()
    load_hf_encoder(ours, bert.state_dict(), prefix="")
    x, seg, am = inputs(300)
    with torch.no_grad():
        ref = bert(input_ids=x, token_type_ids=seg, attention_mask=am).last_hidden_state
        assert torch.allclose(ours.hidden_states(x, seg, am)[am.bool()], ref[am.bool()], atol=1e-5)


def test_config_from_hf_round_trip():
    cfg = get_config("small", vocab_size=1234)
    back = hf.config_from_hf(hf_config_dict(cfg))
    for f in ("vocab_size", "embedding_size", "hidden_size", "num_layers", "num_heads",
              "intermediate_size", "layer_norm_eps", "max_position"):
        assert getattr(back, f) == getattr(cfg, f), f
    with pytest.raises(ValueError, match="hidden_act 'relu' is not supported"):
        hf.config_from_hf({**hf_config_dict(cfg), "hidden_act": "relu"})
