"""--sharing gdes, DeBERTa-v3's gradient-disentangled embedding sharing (He et al. 2021):
E_D = sg(E_G) + E_Delta. By hand: one optimizer update from L_Disc alone leaves every G weight
as it was, one from L_MLM alone leaves E_Delta; wrong versions (E_G not detached, the LayerNorm
shared, E_Delta forgotten in the export) are caught; train.py runs, resumes, exports, re-imports."""
import pytest
import torch
import transformers
from test_electra import batch, micro_config
from test_train import args, corpus, rows  # noqa: F401 (corpus: the fixture)

import electra
import train
from electra import Electra, GdesEmbeddings, gdes_embedding
from support import hf, plumbing

TABLES = GdesEmbeddings.TABLES  # word, position, segment


def gdes_model(seed=0, moved=False, **kw) -> Electra:
    """A GDES Electra without dropout; moved: E_Delta and D's LayerNorm bias drawn at random, as a
    trained run's would be, so that E_G + E_Delta differs from E_G and from E_Delta."""
    torch.manual_seed(seed)
    model = Electra(micro_config(sharing="gdes", dropout=0.0, attention_dropout=0.0, **kw))
    if moved:
        with torch.no_grad():
            for t in TABLES:
                getattr(model.discriminator.embeddings, f"{t}_delta").normal_(std=0.02)
            model.discriminator.embeddings.ln.bias.normal_(std=0.1)
    return model


def g_state(model) -> dict:
    """Every weight of G (its embeddings, E_G, included), by name."""
    return {k: v.clone() for k, v in model.generator.state_dict().items()}


def one_update(model, loss: str, algorithm: str = "joint") -> None:
    """One update as train.py makes it (AdamW with weight decay, gradients cleared to None, the
    clip), from L_MLM alone ("mlm") or lam * L_Disc alone ("disc")."""
    cfg = train.TrainConfig(lr=1e-2, algorithm=algorithm)
    opt = train.build_optimizer(model, cfg)
    x, seg, am = batch()
    out = model(x, seg, am, rng=torch.Generator().manual_seed(0))
    (out.mlm_loss if loss == "mlm" else model.config.lam * out.disc_loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm)
    opt.step()
    opt.zero_grad(set_to_none=True)


def g_moved_by_disc(model, algorithm: str = "joint") -> list[str]:
    """The names of G's weights that one update from L_Disc alone changes: [] under GDES."""
    before = g_state(model)
    one_update(model, "disc", algorithm)
    after = model.generator.state_dict()
    return [k for k in before if not torch.equal(before[k], after[k])]


def deltas(model) -> dict:
    return {t: getattr(model.discriminator.embeddings, f"{t}_delta").detach().clone()
            for t in TABLES}


# ----------------------------------------------------------------------------- the equation


def test_gdes_embedding_by_hand_sends_the_gradient_to_delta_alone():
    e_g = torch.tensor([[1.0, 2.0]], requires_grad=True)
    delta = torch.tensor([[0.5, 0.0]], requires_grad=True)
    e_d = gdes_embedding(e_g, delta)
    assert e_d.tolist() == [[1.5, 2.0]]
    (3 * e_d).sum().backward()
    assert e_g.grad is None and delta.grad.tolist() == [[3.0, 3.0]]


def test_at_the_start_d_embeddings_equal_g_and_e_delta_is_zero():
    model = gdes_model()
    G, D = model.generator, model.discriminator
    assert G.embeddings is model.embeddings and D.embeddings is not G.embeddings
    assert all(torch.equal(d, torch.zeros_like(d)) for d in deltas(model).values())
    x, seg, _ = batch()
    assert torch.equal(D.embeddings(x, seg), G.embeddings(x, seg))
    # D's parameters hold E_Delta (one per table, each of E_G's shape), not E_G
    assert not {p.data_ptr() for p in D.parameters()} & {p.data_ptr() for p in G.parameters()}
    assert D.embeddings.word_delta.shape == G.embeddings.word.weight.shape == (200, 32)


# ----------------------------------------------------------------------------- one update


@pytest.mark.parametrize("algorithm", ["joint", "adversarial"])
def test_an_update_from_l_disc_alone_moves_e_delta_and_no_weight_of_g(algorithm):
    model = gdes_model(algorithm=algorithm)
    before = deltas(model)
    assert g_moved_by_disc(model, algorithm) == []
    after = deltas(model)
    assert all(not torch.equal(before[t], after[t]) for t in ("word", "position"))


def test_an_update_from_l_mlm_alone_moves_e_g_and_not_e_delta():
    model = gdes_model()
    e_g = model.embeddings.word.weight.detach().clone()
    d_ln = model.discriminator.embeddings.ln.weight.detach().clone()
    before = deltas(model)
    one_update(model, "mlm")
    assert not torch.equal(e_g, model.embeddings.word.weight)
    after = deltas(model)
    assert all(torch.equal(before[t], after[t]) for t in TABLES)
    assert torch.equal(d_ln, model.discriminator.embeddings.ln.weight)


def test_with_sharing_embeddings_l_disc_does_move_g_the_tug_of_war():
    """The check above, on the paper's sharing: L_Disc reaches the shared tables."""
    torch.manual_seed(0)
    model = Electra(micro_config(dropout=0.0, attention_dropout=0.0))
    moved = g_moved_by_disc(model)
    assert "embeddings.word.weight" in moved and "embeddings.ln.weight" in moved


def test_e_g_not_detached_is_caught(monkeypatch):
    monkeypatch.setattr(electra, "gdes_embedding", lambda e_g, delta: e_g + delta)
    moved = g_moved_by_disc(gdes_model())
    assert "embeddings.word.weight" in moved and "embeddings.position.weight" in moved


def test_the_layer_norm_left_shared_is_caught():
    model = gdes_model()
    model.discriminator.embeddings.ln = model.embeddings.ln  # G's LayerNorm, read by D
    assert g_moved_by_disc(model) == ["embeddings.ln.weight", "embeddings.ln.bias"]


# ----------------------------------------------------------------------------- D read as an encoder


def holds_merged(model, encoder_sd: dict, hf_sd: dict) -> bool:
    """Whether the fine-tuning encoder's and the HF export's embeddings are E_G + E_Delta (and D's
    own LayerNorm), table by table."""
    D = model.discriminator
    hf_names = {"word": "word_embeddings", "position": "position_embeddings",
                "segment": "token_type_embeddings"}
    for t in TABLES:
        want = getattr(model.embeddings, t).weight + getattr(D.embeddings, f"{t}_delta")
        if not (torch.equal(encoder_sd[f"embeddings.{t}.weight"], want)
                and torch.equal(hf_sd[f"electra.embeddings.{hf_names[t]}.weight"], want)):
            return False
    return (torch.equal(encoder_sd["embeddings.ln.bias"], D.embeddings.ln.bias)
            and torch.equal(hf_sd["electra.embeddings.LayerNorm.bias"], D.embeddings.ln.bias))


def test_fine_tuning_and_the_export_read_e_g_plus_e_delta(tmp_path):
    model = gdes_model(moved=True).eval()
    with torch.no_grad():
        encoder = model.fine_tuning_encoder().eval()
        disc_sd, _ = hf.to_hf_state_dicts(model)
        assert holds_merged(model, encoder.state_dict(), disc_sd)
        x, seg, am = batch()
        # the encoder fine-tuning starts from computes what D computes
        torch.testing.assert_close(encoder.hidden_states(x, seg, am),
                                   model.discriminator.hidden_states(x, seg, am), rtol=0, atol=0)
        assert torch.equal(model.p_original(x, seg, am),
                           torch.sigmoid(model.discriminator(x, seg, am)))
    # finetune.py's --init of a run folder: the encoder of the checkpoint, merged
    saved = train.checkpoint(model, torch.optim.AdamW(model.parameters()), 3,
                             train.recipe_config(size="tiny"), "h", rng=[])
    torch.save(saved, tmp_path / "ckpt.pt")
    ckpt = torch.load(tmp_path / "ckpt.pt", weights_only=True)
    rebuilt = Electra(electra.ElectraConfig(**ckpt["model_config"]))
    rebuilt.load_state_dict(ckpt["model"])  # the checkpoint holds E_Delta
    assert torch.equal(rebuilt.fine_tuning_encoder().state_dict()["embeddings.word.weight"],
                       encoder.state_dict()["embeddings.word.weight"])


def test_an_export_of_e_g_alone_is_caught(monkeypatch):
    model = gdes_model(moved=True)

    def e_g_alone(self):  # the wrong merge: G's tables, E_Delta forgotten
        return self.g[0]

    monkeypatch.setattr(GdesEmbeddings, "merged", e_g_alone)
    with torch.no_grad():
        assert not holds_merged(model, model.fine_tuning_encoder().state_dict(),
                                hf.to_hf_state_dicts(model)[0])


def test_an_exported_pair_reads_back_as_gdes_and_computes_the_same(tmp_path):
    model = gdes_model(moved=True).eval()
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"t{i}\n" for i in range(200)))
    hf.export_hf(model, vocab, tmp_path / "hf")
    disc_sd, gen_sd = (hf.read_weights(tmp_path / "hf" / r) for r in ("discriminator", "generator"))
    assert hf.hf_sharing(disc_sd, gen_sd) == "gdes"  # from the weights alone
    back = hf.from_hf_state_dicts(model.config, disc_sd, gen_sd).eval()
    ours, theirs = model.state_dict(), back.state_dict()
    # E_Delta comes back as (E_G + E_Delta) - E_G: equal up to float rounding
    for k in ours:
        torch.testing.assert_close(theirs[k], ours[k], rtol=0, atol=1e-7)
    x, seg, am = batch(B=1)
    disc = transformers.ElectraForPreTraining.from_pretrained(tmp_path / "hf" / "discriminator")
    with torch.no_grad():
        torch.testing.assert_close(back.discriminator(x, seg, am), model.discriminator(x, seg, am))
        # HuggingFace's D, reading the merged table, scores *replaced*: minus our logit
        theirs_d = disc.eval()(input_ids=x, token_type_ids=seg, attention_mask=am).logits
        torch.testing.assert_close(theirs_d, -model.discriminator(x, seg, am), atol=1e-5,
                                   rtol=1e-5)
    # a GDES pair that never moved E_Delta or D's LayerNorm is a pair sharing its embeddings
    fresh_d, fresh_g = hf.to_hf_state_dicts(gdes_model())
    assert hf.hf_sharing(fresh_d, fresh_g) == "embeddings"


@pytest.mark.parametrize("changes, message", [
    (dict(objective="bert"), "sharing 'gdes' is for a generator and a discriminator"),
    (dict(objective="electric"), "shares the embeddings only"),
    (dict(algorithm="two-stage"), "use sharing none (not 'gdes')"),
])
def test_gdes_is_refused_in_one_line_where_it_does_not_apply(changes, message):
    with pytest.raises(ValueError) as e:
        electra.check_config(micro_config(sharing="gdes", **changes))
    assert message in str(e.value) and "\n" not in str(e.value)


# ----------------------------------------------------------------------------- train.py


def test_train_py_gdes_runs_resumes_exactly_exports_and_reimports(corpus, tmp_path,  # noqa: F811
                                                                 capsys):
    common = ["--steps", "8", "--log-interval", "1", "--eval-interval", "4",
              "--ckpt-interval", "1000", "--sharing", "gdes", "--clip-apart"]
    a = train.main(args(corpus, tmp_path / "a", *common))
    out = capsys.readouterr().out
    assert "G with E_G, D with its E_Delta" in out and "clip 1.0 (G and D apart)" in out
    train.main(args(corpus, tmp_path / "b", *common, "--stop-at", "3"))
    # the resume takes --clip-apart from the checkpoint
    b = train.main(["--out", str(tmp_path / "b"), "--resume", "--cache-dir", str(corpus[2]),
                    "--log-interval", "1", "--eval-interval", "4", "--ckpt-interval", "1000"])
    assert "clip 1.0 (G and D apart)" in capsys.readouterr().out
    assert a["step"] == b["step"] == 8 and b["model_config"].sharing == "gdes"
    for x, y in zip(rows(tmp_path / "a"), rows(tmp_path / "b")):
        for key in ("loss", "mlm_loss", "disc_loss", "gen_acc", "grad_norm"):
            assert x[key] == y[key], (x["step"], key)
    sa, sb = a["model"].state_dict(), b["model"].state_dict()
    assert set(sa) == set(sb) and all(torch.equal(sa[k], sb[k]) for k in sa)
    saved = plumbing.load_checkpoint(tmp_path / "b" / "ckpt.pt", "test")["model"]
    delta = saved["discriminator.embeddings.word_delta"]
    assert delta.abs().sum() > 0  # E_Delta trained, and in the checkpoint
    capsys.readouterr()
    train.main(["--out", str(tmp_path / "b"), "--export-hf", str(tmp_path / "hf")])
    assert "E_G + E_Delta" in capsys.readouterr().out
    folder, _, cache = corpus
    again = train.main(["--data", str(folder), "--cache-dir", str(cache), "--init-from",
                        str(tmp_path / "hf"), "--steps", "1", "--batch-size", "4", "--seq-len",
                        "32", "--lr", "1e-12", "--warmup", "1", "--eval-interval", "1000",
                        "--out", str(tmp_path / "again")])
    assert again["model_config"].sharing == "gdes"  # read from the weights
    merged = b["model"].fine_tuning_encoder().state_dict()["embeddings.word.weight"]
    torch.testing.assert_close(again["model"].fine_tuning_encoder().state_dict()[
        "embeddings.word.weight"], merged, rtol=0, atol=1e-6)
