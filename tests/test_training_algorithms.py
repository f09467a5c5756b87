"""Section 3.2's weight sharing (--sharing) and training algorithms (--algorithm): tied and untied
tensors, two-stage's frozen generator, Appendix F's policy gradient by hand, runs that resume."""
import dataclasses
import math

import pytest
import torch
import transformers
from test_electra import batch, micro_config
from test_train import args, corpus, rows, run_ddp  # noqa: F401 (corpus: the fixture)

import electra
import train
from electra import (
    Electra,
    adversarial_loss,
    baseline,
    baseline_loss,
    count_params,
    init_discriminator_from_generator,
    policy_gradient_loss,
    reward,
    two_stage_loss,
)
from support import hf, train_cli

# G as wide and deep as D: what --sharing all and two-stage training need
SAME = dict(generator_fraction=1.0, intermediate_size=128, num_heads=1)


def ptrs(module) -> set[int]:
    return {p.data_ptr() for p in module.parameters()}


# ----------------------------------------------------------------------------- weight sharing


def test_sharing_embeddings_ties_the_embeddings_only():
    model = Electra(micro_config())
    G, D = model.generator, model.discriminator
    assert G.embeddings is D.embeddings is model.embeddings
    assert not ptrs(G.layers) & ptrs(D.layers)
    # distinct parameters: D, plus G without the one embedding table
    assert count_params(model) == count_params(D) + count_params(G) - count_params(G.embeddings)


def test_sharing_none_gives_g_its_own_embeddings_as_wide_as_its_hidden_size():
    config = micro_config(sharing="none")  # D 32 wide, G 16 wide
    model = Electra(config)
    G, D = model.generator, model.discriminator
    assert not ptrs(G) & ptrs(D)  # not one tensor in common
    assert G.embeddings.word.weight.shape == (200, 16)  # official: embedding_size None -> hidden
    assert G.embeddings_project is None
    assert count_params(model) == count_params(D) + count_params(G)
    # by hand: G's embeddings are (V + positions + segments) x 16 plus LayerNorm's 2 x 16
    assert count_params(G.embeddings) == (200 + 64 + 2) * 16 + 2 * 16
    # against "embeddings": + those, - G's projection 32 -> 16 (32 x 16 + 16), and G's head
    # maps 16 -> 16 instead of 16 -> 32 (16 x 16 weights, 16 biases, 2 x 16 LayerNorm fewer)
    plain = Electra(micro_config())
    assert (count_params(model) - count_params(plain)
            == 4288 - (32 * 16 + 16) - (16 * 16 + 16 + 2 * 16))


def test_sharing_all_makes_g_d_encoder_with_its_own_head():
    model = Electra(micro_config(sharing="all", **SAME))
    G, D = model.generator, model.discriminator
    assert G.layers is D.layers and G.embeddings is D.embeddings
    assert G.layers[0].fc1.weight is D.layers[0].fc1.weight
    # by hand: G adds only its head, dense 32 -> 32 (+ bias), LayerNorm 2 x 32, output bias V
    assert count_params(model) == count_params(D) + (32 * 32 + 32) + 2 * 32 + 200
    x, seg, am = batch()
    out = model(x, seg, am)
    out.loss.backward()  # G's L_MLM and D's L_Disc both reach the one encoder


def test_sharing_all_needs_g_and_d_of_one_shape():
    with pytest.raises(ValueError, match="sharing all ties every weight of G and D: G and D need "
                                         "the same shape.*hidden_size 16 vs 32"):
        electra.check_config(micro_config(sharing="all"))


@pytest.mark.parametrize("sharing", ["none", "embeddings", "all"])
def test_each_sharing_mode_goes_to_huggingface_and_back(sharing, tmp_path):
    config = micro_config(sharing=sharing, **(SAME if sharing == "all" else {}))
    torch.manual_seed(0)
    model = Electra(config).eval()
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"t{i}\n" for i in range(200)))
    hf.export_hf(model, vocab, tmp_path / "hf")
    disc_sd, gen_sd = (hf.read_weights(tmp_path / "hf" / r) for r in ("discriminator", "generator"))
    assert hf.hf_sharing(disc_sd, gen_sd) == sharing  # read back from the weights alone
    back = hf.from_hf_state_dicts(config, disc_sd, gen_sd)
    ours, theirs = model.state_dict(), back.state_dict()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)
    # HuggingFace's own generator computes G's logits, whatever G shares
    gen = transformers.ElectraForMaskedLM.from_pretrained(tmp_path / "hf" / "generator").eval()
    x, seg, am = batch(B=1)
    with torch.no_grad():
        h = model.generator.hidden_states(x, seg, am)
        ours_g = model.generator.logits(h, torch.arange(x.shape[1])[None])
        theirs_g = gen(input_ids=x, token_type_ids=seg, attention_mask=am).logits
    torch.testing.assert_close(theirs_g, ours_g, atol=1e-4, rtol=1e-4)


def test_sharing_and_algorithm_are_refused_in_one_line(corpus, tmp_path, capsys):  # noqa: F811
    for extra, message in [
        (["--sharing", "some"], "--sharing some: must be one of none, embeddings, all, gdes"),
        (["--algorithm", "gan"], "--algorithm gan: must be one of joint, two-stage, adversarial"),
        (["--sharing", "all"], "need the same shape"),
        (["--algorithm", "two-stage"], "use sharing none"),
        (["--algorithm", "two-stage", "--sharing", "none"], "need the same shape"),
        (["--objective", "bert", "--algorithm", "adversarial"], "use it with objective electra"),
        (["--objective", "electric", "--algorithm", "two-stage"], "use it with objective electra"),
        (["--objective", "electric", "--sharing", "none"], "shares the embeddings only"),
    ]:
        with pytest.raises(SystemExit) as e:
            train.main(args(corpus, tmp_path / "x", *extra))
        assert message in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "x" / "ckpt.pt").exists()


def test_help_shows_the_sharing_and_the_algorithm(capsys):
    with pytest.raises(SystemExit):
        train.parse_args(["--help"])
    text = capsys.readouterr().out
    assert "--sharing" in text and "--algorithm" in text and "two-stage" in text


# ----------------------------------------------------------------------------- two-stage


def two_stage_model():
    return Electra(micro_config(sharing="none", algorithm="two-stage", **SAME))


def test_each_stage_trains_one_model_only():
    x, seg, am = batch()
    for stage, trained, frozen in [(1, "generator", "discriminator"),
                                   (2, "discriminator", "generator")]:
        model = two_stage_model()
        two_stage_loss(model(x, seg, am), stage).backward()
        assert all(p.grad is None for p in getattr(model, frozen).parameters())
        assert all(p.grad is not None for p in getattr(model, trained).parameters())


def test_d_starts_from_g_weights_except_its_head():
    model = two_stage_model()
    init_discriminator_from_generator(model)
    G, D = model.generator.state_dict(), model.discriminator.state_dict()
    encoder = [k for k in D if not k.startswith("head")]
    assert len(encoder) > 10 and all(torch.equal(D[k], G[k]) for k in encoder)
    assert not ptrs(model.generator) & ptrs(model.discriminator)  # copies, not ties


def test_each_stage_has_its_own_warm_up_and_decay():
    cfg = train.TrainConfig(lr=1e-3, warmup=2, steps=20, algorithm="two-stage")
    lrs = [train.learning_rate(s, cfg) for s in range(20)]
    assert lrs[:10] == lrs[10:]  # stage 2 starts over: warm-up, then decay to 0 at step 20
    assert lrs[0] == pytest.approx(5e-4) and lrs[9] == pytest.approx(1e-4)
    assert [train.stage(s, cfg) for s in (0, 9, 10, 19)] == [1, 1, 2, 2]
    with pytest.raises(SystemExit, match="--steps 1: must be an integer >= 2 with --algorithm"):
        train_cli.check_train_config(dataclasses.replace(cfg, steps=1, sharing="none"))


# ----------------------------------------------------------------------------- adversarial, by hand
#
# Three masked positions, V = 3. G's probabilities put 1/2 on the token it sampled; the samples
# x_hat = (0, 1, 2) against the originals (0, 2, 2): the middle one replaced. D's logits of
# *original* 0, ln 3, -ln 3 give D = 1/2, 3/4, 1/4; the baseline's scores s the same three.
HALF = torch.log(torch.tensor([[[2.0, 1, 1], [1, 2, 1], [1, 1, 2]]]) / 4)  # [1, 3, 3]
X_HAT, X_M = torch.tensor([[0, 1, 2]]), torch.tensor([[0, 2, 2]])
LOGITS_D = S = torch.tensor([[0.0, math.log(3), -math.log(3)]])
VALID = torch.ones(1, 3, dtype=torch.bool)
LN2, LN3, LN4 = math.log(2), math.log(3), math.log(4)


def test_reward_is_d_loss_at_each_sample():
    # original, D = 1/2: -ln 1/2; replaced, D = 3/4: -ln(1 - 3/4) = ln 4; original, D = 1/4: ln 4
    R = reward(LOGITS_D, X_HAT == X_M)
    torch.testing.assert_close(R, torch.tensor([[LN2, LN4, LN4]]))


def test_baseline_by_hand():
    # b = -log sigmoid(s): -ln 1/2, -ln 3/4, -ln 1/4
    torch.testing.assert_close(baseline(S), torch.tensor([[LN2, math.log(4 / 3), LN4]]))


def test_policy_gradient_loss_and_its_gradient_by_hand():
    logits = HALF.clone().requires_grad_()
    s = S.clone().requires_grad_()
    R = reward(LOGITS_D, X_HAT == X_M)  # ln 2, ln 4, ln 4
    # advantages R - b = 0, ln 4 - ln 4/3 = ln 3, 0; log p_G(x_hat) = ln 1/2 at each position
    loss = policy_gradient_loss(logits, X_HAT, R, baseline(s), VALID)
    assert loss.item() == pytest.approx(LN2 * LN3 / 3, abs=1e-6)  # -(ln 1/2)(ln 3) / 3
    loss.backward()
    # d/d logits of -A log softmax(logits)[x_hat] / 3 = -A (onehot(x_hat) - p) / 3: row 2 only
    expected = torch.zeros(1, 3, 3)
    expected[0, 1] = -LN3 / 3 * (torch.tensor([0.0, 1, 0]) - torch.tensor([0.25, 0.5, 0.25]))
    torch.testing.assert_close(logits.grad, expected)
    assert s.grad is None or not s.grad.any()  # the advantage is a constant to G
    # at temperature 2 the policy is softmax(logits / 2)
    torch.testing.assert_close(policy_gradient_loss(HALF, X_HAT, R, baseline(S), VALID, 2.0),
                               policy_gradient_loss(HALF / 2, X_HAT, R, baseline(S), VALID))


def test_baseline_loss_by_hand():
    s = S.clone().requires_grad_()
    R = reward(LOGITS_D, X_HAT == X_M)
    # targets q = exp(-R) = 1/2, 1/4, 1/4 against sigmoid(s) = 1/2, 3/4, 1/4
    expected = (LN2 + (0.25 * math.log(4 / 3) + 0.75 * LN4)
                + (0.25 * LN4 + 0.75 * math.log(4 / 3))) / 3
    loss = baseline_loss(s, R, VALID)
    assert loss.item() == pytest.approx(expected, abs=1e-6)
    loss.backward()  # d/ds = (sigmoid(s) - q) / 3: zero where b already equals R
    torch.testing.assert_close(s.grad, torch.tensor([[0.0, (0.75 - 0.25) / 3, 0.0]]))


def test_adversarial_loss_reads_d_at_the_masked_positions_and_trains_the_baseline():
    model = Electra(micro_config(algorithm="adversarial"))
    h = torch.randn(1, 5, 16)  # G's hidden states, 5 positions; the masked ones are 4, 0, 2
    m = torch.tensor([[4, 0, 2]])
    logits_D = torch.zeros(1, 5).scatter(1, m, LOGITS_D)
    logits = HALF.clone().requires_grad_()
    loss = adversarial_loss(model, h, m, VALID, logits, X_HAT, X_M, logits_D, 1.0)
    s = model.baseline_w(h.gather(1, m[..., None].expand(-1, -1, 16))).squeeze(-1)
    R = reward(LOGITS_D, X_HAT == X_M)
    expected = (policy_gradient_loss(HALF, X_HAT, R, baseline(s), VALID)
                + baseline_loss(s, R, VALID))
    torch.testing.assert_close(loss, expected)
    loss.backward()
    assert model.baseline_w.weight.grad.abs().sum() > 0


def test_the_adversarial_generator_is_not_trained_by_maximum_likelihood():
    x, seg, am = batch()
    model = Electra(micro_config(algorithm="adversarial", lam=0.0))
    out = model(x, seg, am, rng=torch.Generator().manual_seed(0))
    assert out.loss.item() != pytest.approx(out.mlm_loss.item())  # L_MLM is reported, not trained
    out.loss.backward()
    assert model.generator.layers[0].fc1.weight.grad.abs().sum() > 0  # the policy gradient


# ----------------------------------------------------------------------------- runs that resume

RUNS = {
    "sharing-none": ["--sharing", "none"],
    "sharing-all": ["--sharing", "all", "--set", "generator_fraction=1",
                    "--set", "intermediate_size=128"],
    "two-stage": ["--algorithm", "two-stage", "--sharing", "none", "--set", "generator_fraction=1",
                  "--set", "intermediate_size=128"],
    "adversarial": ["--algorithm", "adversarial"],
    "sharing-gdes": ["--sharing", "gdes"],
}
STOPS = {"two-stage": [5, 10, 15]}  # the middle of each stage, and the switch itself


@pytest.mark.parametrize("name", list(RUNS))
def test_20_updates_complete_and_resume_exactly(corpus, tmp_path, name):  # noqa: F811
    common = ["--steps", "20", "--log-interval", "1", "--eval-interval", "1000",
              "--ckpt-interval", "1000"]
    a = train.main(args(corpus, tmp_path / "a", *common, *RUNS[name]))
    assert a["step"] == 20 and math.isfinite(a["train"]["loss"])
    for stop in STOPS.get(name, [10]):
        flags = ["--stop-at", str(stop)]
        if stop == STOPS.get(name, [10])[0]:
            train.main(args(corpus, tmp_path / "b", *common, *RUNS[name], *flags))
        else:
            train.main(["--out", str(tmp_path / "b"), "--resume", "--cache-dir", str(corpus[2]),
                        *common, *flags])
    b = train.main(["--out", str(tmp_path / "b"), "--resume", "--cache-dir", str(corpus[2]),
                    *common])
    assert b["step"] == 20
    ra, rb = rows(tmp_path / "a"), rows(tmp_path / "b")
    assert [r["step"] for r in rb] == list(range(1, 21))
    for x, y in zip(ra, rb):
        for key in ("loss", "mlm_loss", "disc_loss", "gen_acc", "lr", "grad_norm"):
            assert x[key] == y[key], (x["step"], key)
    sa, sb = a["model"].state_dict(), b["model"].state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)


def test_two_stage_keeps_g_frozen_through_stage_2(corpus, tmp_path):  # noqa: F811
    common = ["--steps", "20", "--log-interval", "1", "--eval-interval", "1000"]
    half = train.main(args(corpus, tmp_path / "r", *common, *RUNS["two-stage"], "--stop-at", "10"))
    g10 = {k: v.clone() for k, v in half["model"].generator.state_dict().items()}
    d10 = {k: v.clone() for k, v in half["model"].discriminator.state_dict().items()}
    end = train.main(["--out", str(tmp_path / "r"), "--resume", "--cache-dir", str(corpus[2]),
                      *common])
    g20, d20 = end["model"].generator.state_dict(), end["model"].discriminator.state_dict()
    assert all(torch.equal(g10[k], g20[k]) for k in g10)  # not one weight of G moved
    # the checkpoint at the switch holds D initialised from G (its own head excepted)
    assert all(torch.equal(d10[k], g10[k]) for k in d10 if not k.startswith("head"))
    assert not all(torch.equal(d10[k], d20[k]) for k in d10)  # D trained
    r = rows(tmp_path / "r")
    assert r[9]["disc_loss"] != r[10]["disc_loss"]


def test_a_checkpoint_at_the_switch_holding_stage_1s_adam_state_resumes_as_a_fresh_stage_2(
        corpus, tmp_path, monkeypatch):  # noqa: F811
    """A checkpoint written at the switch with stage 1's AdamW state still in it (D's as a
    compiled backward's zero gradients leave it: a step count, zero moments; and G's) resumes as
    the uninterrupted run: stage 2 starts with D's state fresh, whichever checkpoint it starts
    from."""
    common = ["--steps", "8", "--log-interval", "1", "--eval-fraction", "0", *RUNS["two-stage"]]
    a = train.main(args(corpus, tmp_path / "a", *common))

    def switch_keeping_state(raw, optimizer):
        init_discriminator_from_generator(raw)
        for p in raw.discriminator.parameters():
            optimizer.state[p] = {"step": torch.tensor(4.0), "exp_avg": torch.zeros_like(p),
                                  "exp_avg_sq": torch.zeros_like(p)}

    with monkeypatch.context() as patched:
        patched.setattr(train, "start_stage_2", switch_keeping_state)
        train.main(args(corpus, tmp_path / "b", *common, "--stop-at", "4"))
    saved = torch.load(tmp_path / "b" / "ckpt.pt", weights_only=True)
    assert len(saved["optimizer"]["state"]) == len(list(a["model"].parameters()))  # G's and D's
    b = train.main(["--out", str(tmp_path / "b"), "--resume", "--cache-dir", str(corpus[2]),
                    "--log-interval", "1"])
    assert [r["loss"] for r in rows(tmp_path / "a")] == [r["loss"] for r in rows(tmp_path / "b")]
    sa, sb = a["model"].state_dict(), b["model"].state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)


def test_two_stage_under_compiled_ddp_keeps_each_frozen_model_bit_identical(
        corpus, tmp_path):  # noqa: F811
    """Two gloo processes, compiled (aot_eager: AOTAutograd's zero gradients, without inductor's
    compile time), DDP expecting unused parameters: G does not move in stage 2 nor D's head in
    stage 1. Update 2 is the switch; its checkpoint is kept as ckpt.prev.pt."""
    out, _, w0 = run_ddp(corpus, tmp_path, "--steps", "4", "--ckpt-interval", "2", "--compile",
                         *RUNS["two-stage"], env={"COMPILE_BACKEND": "aot_eager"})
    switch = torch.load(out / "ckpt.prev.pt", weights_only=True)
    assert switch["step"] == 2
    torch.manual_seed(0)  # set_up's seed, then the model: the initial weights
    init = Electra(electra.ElectraConfig(**switch["model_config"])).state_dict()
    g = [k for k in w0 if k.startswith("generator.")]
    d_head = [k for k in w0 if k.startswith("discriminator.head")]
    assert all(torch.equal(switch["model"][k], init[k]) for k in d_head)
    assert all(torch.equal(switch["model"][k], w0[k]) for k in g)
    assert not all(torch.equal(switch["model"][k], init[k]) for k in g)  # stage 1 trained G


def test_init_from_an_exported_untied_pair_keeps_its_sharing(corpus, tmp_path):  # noqa: F811
    run = train.main(args(corpus, tmp_path / "run", "--steps", "2", "--sharing", "none",
                          "--eval-interval", "1000"))
    train.main(["--out", str(tmp_path / "run"), "--export-hf", str(tmp_path / "hf")])
    folder, _, cache = corpus
    argv = ["--data", str(folder), "--cache-dir", str(cache), "--init-from", str(tmp_path / "hf"),
            "--steps", "2", "--batch-size", "4", "--seq-len", "32", "--lr", "1e-9",
            "--warmup", "1", "--eval-interval", "1000"]
    again = train.main([*argv, "--out", str(tmp_path / "again")])
    assert again["model_config"].sharing == "none"  # read from the weights: G's own embeddings
    torch.testing.assert_close(again["model"].generator.embeddings.word.weight,
                               run["model"].generator.embeddings.word.weight, atol=1e-6, rtol=0)
    with pytest.raises(SystemExit) as e:
        train.main([*argv, "--out", str(tmp_path / "tied"), "--sharing", "embeddings"])
    assert "share 'none': add --sharing none" in str(e.value) and "\n" not in str(e.value)


def test_export_of_a_fully_tied_pair_says_the_copies_are_untied(corpus, tmp_path,  # noqa: F811
                                                                 capsys):
    train.main(args(corpus, tmp_path / "run", "--steps", "2", "--eval-interval", "1000",
                    *RUNS["sharing-all"]))
    capsys.readouterr()
    train.main(["--out", str(tmp_path / "run"), "--export-hf", str(tmp_path / "hf")])
    assert "generator/ holds a copy of D's encoder" in capsys.readouterr().out
    disc_sd, gen_sd = (hf.read_weights(tmp_path / "hf" / r) for r in ("discriminator", "generator"))
    assert hf.hf_sharing(disc_sd, gen_sd) == "all"
