"""electric.py by hand: the two towers see one side each, the NCE loss of a 3-token example, the
labels of a sample equal to the original, the one-pass score as an explicit sum; and an Electric
run end to end through train.py (resume), finetune.py and support.evaluate."""
import contextlib
import dataclasses
import json
import math

import pytest
import test_train
import torch
import torch.nn.functional as F
from test_electra import batch, micro_config
from test_evaluate import PARADIGMS, write_blimp
from test_finetune_resume import write_glue
from test_train import args, rows

import electra
import electric
import finetune
import train
from electric import Electric
from support import evaluate, hf, report
from support.report import flops_per_step, flops_per_step_official

corpus = test_train.corpus  # the fixture: a small corpus, its vocab and a cache folder


def micro_electric(**kw):
    torch.manual_seed(0)
    return Electric(micro_config(objective="electric", **kw)).eval()  # dropout off


# -------------------------------------------------------------------------- the two-tower model q


@pytest.mark.parametrize("fast", [True, False])
def test_each_tower_sees_one_side_and_q_at_t_never_sees_x_t(fast):
    model = micro_electric(fast_attention=fast)
    q = model.generator
    x, seg, am = batch(B=2, T=12, n=[12, 9])
    H = q.ltr.config.hidden_size
    s = 5  # the position changed
    x2 = x.clone()
    x2[:, s] = 77
    with torch.no_grad():
        h, h2 = q.hidden_states(x, seg, am), q.hidden_states(x2, seg, am)  # [B, T, 2H]
        logits, logits2 = q(x, seg, am), q(x2, seg, am)
    assert not h.isnan().any()  # padding rows of the right-to-left tower have a key: themselves
    left, right = (h[..., :H], h2[..., :H]), (h[..., H:], h2[..., H:])
    # position t reads the left tower at t-1 (x_1..x_{t-1}) and the right tower at t+1
    # (x_{t+1}..): changing x_s leaves the left half at t <= s and the right half at t >= s alone
    assert torch.allclose(left[0][:, 1:s + 1], left[1][:, 1:s + 1])
    assert not torch.allclose(left[0][:, s + 1], left[1][:, s + 1])
    assert torch.allclose(right[0][:, s:8], right[1][:, s:8])
    assert not torch.allclose(right[0][:, s - 1], right[1][:, s - 1])
    # so q(. | x_\s) at s is the same whatever x_s is, and the neighbours' do change
    assert torch.allclose(logits[:, s], logits2[:, s], atol=1e-6)
    assert not torch.allclose(logits[:, s - 1], logits2[:, s - 1])


def test_fast_and_reference_attention_agree_on_the_towers():
    fast, slow = micro_electric(), micro_electric(fast_attention=False)
    slow.load_state_dict(fast.state_dict())
    x, seg, am = batch(B=4, T=16)
    with torch.no_grad():
        assert torch.allclose(fast.generator(x, seg, am), slow.generator(x, seg, am), atol=1e-5)


# -------------------------------------------------------------------------------- the NCE loss


def test_nce_loss_of_a_three_token_example_by_hand():
    # p = 1/2, so log(p / (1 - p)) = 0; s_t = -(E_t + log q_t)
    # t=1, data:  E = 0,      q = 1/2: s = log 2, P(data) = 2/3, loss -log(2/3)
    # t=2, noise: E = log 3,  q = 1/3: s = 0,     P(data) = 1/2, loss -log(1 - 1/2)
    # t=3, data:  E = -log 2, q = 1/4: s = log 8, P(data) = 8/9, loss -log(8/9)
    # mean: (log 3/2 + log 2 + log 9/8) / 3 = log(27/8) / 3 = log(3/2)
    energies = torch.tensor([[0.0, math.log(3), -math.log(2)]])
    log_q = torch.log(torch.tensor([[1 / 2, 1 / 3, 1 / 4]]))
    s = electric.nce_logits(energies, log_q, 0.5)
    assert s[0].tolist() == pytest.approx([math.log(2), 0.0, math.log(8)], abs=1e-6)
    is_data = torch.tensor([[True, False, True]])
    loss = electric.nce_loss(s, is_data, torch.ones(1, 3))
    assert loss.item() == pytest.approx(math.log(3 / 2), abs=1e-6)
    # the official constant at p = 0.15: log(0.15 / 0.85) is added to E + log q, against data
    s15 = electric.nce_logits(energies, log_q, 0.15)
    assert (s15 - s)[0].tolist() == pytest.approx([-math.log(0.15 / 0.85)] * 3, abs=1e-6)
    # a padding token (weight 0) changes nothing
    padded = electric.nce_loss(torch.cat([s, torch.tensor([[9.0]])], 1),
                               torch.tensor([[True, False, True, False]]),
                               torch.tensor([[1, 1, 1, 0]]))
    assert padded.item() == pytest.approx(math.log(3 / 2), abs=1e-6)


def test_noise_log_prob_reads_q_at_the_noised_token_and_its_temperature():
    logits = torch.tensor([[[0.0, math.log(3)], [math.log(3), 0.0]]])  # q = (1/4, 3/4), (3/4, 1/4)
    got = electric.noise_log_prob(logits, torch.tensor([[1, 1]]))
    assert got[0].tolist() == pytest.approx([math.log(3 / 4), math.log(1 / 4)])
    # at temperature 2 the noise is drawn from softmax(logits / 2): (1, sqrt 3) / (1 + sqrt 3)
    hot = electric.noise_log_prob(logits, torch.tensor([[1, 1]]), temperature=2.0)
    r3 = math.sqrt(3)
    assert hot[0].tolist() == pytest.approx([math.log(r3 / (1 + r3)), math.log(1 / (1 + r3))])


def test_forward_is_the_named_steps_and_a_sample_equal_to_the_original_is_noise():
    """Every candidate is token 7 and q puts (almost) all its mass on 7: every sample equals the
    original. ELECTRA would label those tokens original; Electric labels them noise, and its loss
    is the NCE loss recomputed here from the step's own tensors."""
    model = micro_electric()
    with torch.no_grad():
        model.generator.output_bias[7] = 100.0
    x, seg, am = batch(B=3, T=16)
    x = torch.where((x > 3) & am.bool(), torch.full_like(x, 7), x)
    torch.manual_seed(1)
    out = model(x, seg, am)
    assert torch.equal(out.x_corrupt, x)  # every sample is the original token
    noised = torch.zeros_like(am, dtype=torch.bool)
    for b in range(3):
        for i in range(out.m.shape[1]):
            if out.m_valid[b, i]:
                noised[b, out.m[b, i]] = True
    assert noised.sum() == out.m_valid.sum() > 0
    with torch.no_grad():
        logits_q = model.generator(x, seg, am)
        energies = model.discriminator(x, seg, am)
    log_q = logits_q.log_softmax(-1).gather(-1, x[..., None])[..., 0]
    s = -(energies + log_q + math.log(model.config.mask_prob / (1 - model.config.mask_prob)))
    bce = F.binary_cross_entropy_with_logits(s, (~noised).float(), reduction="none")
    assert out.disc_loss.item() == pytest.approx((bce * am).sum().item() / am.sum().item(),
                                                 rel=1e-5)
    assert torch.allclose(out.energies, energies, atol=1e-6)
    # the cloze loss counts every candidate, not only the noised positions
    c = electra.candidates(x, am, model.config)
    nll = -logits_q.log_softmax(-1).gather(-1, x[..., None])[..., 0]
    assert out.mlm_loss.item() == pytest.approx(nll[c].mean().item(), rel=1e-5)
    assert out.loss.item() == pytest.approx(out.mlm_loss.item() + 50 * out.disc_loss.item(),
                                            rel=1e-5)


def test_d_metrics_score_the_nce_labels_a_sample_equal_to_the_original_is_noise():
    """Four real tokens, positions 1 and 2 sampled: position 1's sample equals the original (6),
    position 2's does not (7 -> 9). L_NCE labels both noise; the logged metrics read the same
    labels. D's logits of data 2, 1, -1, -2 call positions 2 and 3 noise. By hand, noise = {1, 2}:
    accuracy 2/4 (0 and 2 right), precision 1/2 ({2} of {2, 3}), recall 1/2 ({2} of {1, 2}), AUC
    2/4 (each noise logit is below 2, above -2), all-original baseline 1/2. ELECTRA's labels
    (x_noised == x: only 2 replaced) would give 3/4, 1/2, 1, 2/3 and 3/4."""
    x = torch.tensor([[5, 6, 7, 8]])
    am = torch.ones(1, 4, dtype=torch.long)
    m, m_valid = torch.tensor([[1, 2]]), torch.tensor([[True, True]])
    x_noised = torch.tensor([[5, 6, 9, 8]])
    logits = torch.tensor([[2.0, 1.0, -1.0, -2.0]])
    labels = electric.is_data(x, m, m_valid)
    assert labels.tolist() == [[True, False, False, True]]
    zero = torch.zeros(())
    out = electric.ElectricOutput(
        loss=zero, mlm_loss=zero, disc_loss=electric.nce_loss(logits, labels, am), m=m,
        m_valid=m_valid, x_masked=x, logits_G=torch.zeros(1, 2, 10), x_corrupt=x_noised,
        logits_D=logits, is_data=labels)
    expected = {"disc_acc": 0.5, "disc_precision": 0.5, "disc_recall": 0.5, "disc_auc": 0.5,
                "all_original_acc": 0.5}
    logged = report.stats_dict(report.step_stats(out, x, am))
    assert {k: logged[k] for k in expected} == pytest.approx(expected)
    held = report.heldout_pass(lambda *a, **k: out, [(x, torch.zeros_like(x), am)],
                               contextlib.nullcontext(), seed=0, temperature=1.0)
    assert {k: held[k] for k in expected} == pytest.approx(expected)
    # ELECTRA's labels, from the same tensors: the metrics the NCE loss does not mean
    electra_out = electra.ElectraOutput(**{f.name: getattr(out, f.name)
                                           for f in dataclasses.fields(electra.ElectraOutput)})
    as_electra = report.stats_dict(report.step_stats(electra_out, x, am))
    assert [as_electra[k] for k in expected] == pytest.approx([0.75, 0.5, 1.0, 2 / 3, 0.75])


def test_a_forward_passes_its_loss_labels_to_the_metrics():
    model = micro_electric()
    x, seg, am = batch(B=2, T=12)
    out = model(x, seg, am)
    labels = out.is_original(x)
    assert torch.equal(labels, electric.is_data(x, out.m, out.m_valid))
    assert out.disc_loss.item() == pytest.approx(
        electric.nce_loss(out.logits_D, labels, am).item(), rel=1e-6)


def test_no_gradient_reaches_q_through_the_nce_loss():
    model = micro_electric()
    x, seg, am = batch(B=2, T=12)
    out = model(x, seg, am)
    out.disc_loss.backward()
    assert all(p.grad is None or not p.grad.any()
               for name, p in model.generator.named_parameters() if "embeddings" not in name)
    assert model.discriminator.head_out.weight.grad.abs().sum() > 0


def test_forward_is_one_graph_for_torch_compile():
    model = Electric(micro_config(objective="electric"))
    x, seg, am = batch()
    explained = torch._dynamo.explain(model)(x, seg, am)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons


def test_progress_and_curves_name_electrics_losses():
    row = {"mlm_loss": 6.5, "disc_loss": 0.25, "gen_acc": 0.1, "disc_acc": 0.8, "disc_auc": 0.7,
           "context_auc": 0.6}
    assert report.progress_line(row, "electric") == ("L_cloze 6.500 L_NCE 0.2500 q_acc 0.100 "
                                                     "D_acc 0.8000 D_AUC 0.700 ctx_AUC 0.600")
    titles = [title for title, _ in report.curve_panels("electric").values()]
    assert titles[:2] == ["L_cloze (two-tower q)", "L_NCE (energy network)"]


def test_electra_refuses_the_electric_objective_and_pretraining_model_dispatches():
    with pytest.raises(ValueError, match="electric.py's model"):
        electra.Electra(micro_config(objective="electric"))
    assert isinstance(electric.pretraining_model(micro_config(objective="electric")), Electric)
    assert isinstance(electric.pretraining_model(micro_config()), electra.Electra)


# -------------------------------------------------------------------------- the one-pass score


def test_sentence_score_is_the_explicit_sum_and_blimp_scores_it_in_one_pass():
    model = micro_electric()
    x, seg, am = batch(B=3, T=10, n=[10, 7, 5])
    energies = model.clean_energies(x, seg, am)
    tokens = evaluate.sentence_tokens(am)
    got = electric.sentence_score(energies, tokens)
    for b, n in enumerate([10, 7, 5]):
        by_hand = sum(-energies[b, t].item() for t in range(1, n - 1))  # not [CLS], [SEP]
        assert got[b].item() == pytest.approx(by_hand, rel=1e-6)
        # one sentence alone, unpadded, scores the same
        alone = electric.sentence_score(model.clean_energies(x[b:b + 1, :n], seg[b:b + 1, :n],
                                                       am[b:b + 1, :n]), tokens[b:b + 1, :n])
        assert alone.item() == pytest.approx(got[b].item(), abs=1e-4)


# -------------------------------------------------------------------------------------- FLOPs


def test_flops_count_both_towers_and_the_cloze_output_at_every_position():
    cfg = electra.get_config("small")
    electra_cfg, electric_cfg = cfg, electra.ElectraConfig(**{**cfg.__dict__,
                                                              "objective": "electric"})
    B, T, E, V, Hg, L = 128, 128, 128, 30522, 64, 12
    k = round(0.15 * T)  # ELECTRA's generator output runs at the 19 masked positions
    # one tower of G's shape: QKV, attention output, FFN (4 Hg), the two attention matmuls, and
    # the embedding projection
    tower = T * (L * (8 * Hg * Hg + 16 * Hg * Hg + 4 * T * Hg) + 2 * E * Hg)
    cloze = T * (2 * (2 * Hg) * E + 2 * E * V)  # dense 2Hg -> E and the tied E -> V, every t
    g_output = k * (2 * Hg * E + 2 * E * V)
    extra = 3 * B * (tower + cloze - g_output)
    assert (flops_per_step(electric_cfg, B, T) - flops_per_step(electra_cfg, B, T)
            == pytest.approx(extra, rel=1e-12))
    assert flops_per_step_official(electric_cfg, B, T) > flops_per_step_official(electra_cfg, B, T)


def test_fine_tuning_encoder_is_the_energy_networks():
    model = micro_electric(embedding_size=16)
    x, seg, am = batch(B=2, T=12)
    enc = model.fine_tuning_encoder().eval()
    with torch.no_grad():
        assert torch.equal(enc.hidden_states(x, seg, am),
                           model.discriminator.hidden_states(x, seg, am))


# ------------------------------------------------ a run: train.py, resume, finetune.py, BLiMP


def test_train_resume_finetune_and_blimp_of_an_electric_run(corpus, tmp_path, capsys):
    common = ["--objective", "electric", "--steps", "6", "--log-interval", "1",
              "--eval-interval", "3"]
    a = train.main(args(corpus, tmp_path / "a", *common))
    assert isinstance(a["model"], Electric)
    train.main(args(corpus, tmp_path / "b", *common, "--stop-at", "2"))
    b = train.main(["--out", str(tmp_path / "b"), "--resume", "--cache-dir", str(corpus[2]),
                    "--log-interval", "1", "--eval-interval", "3"])
    assert b["step"] == 6
    ra, rb = rows(tmp_path / "a"), rows(tmp_path / "b")
    assert [r["step"] for r in rb] == list(range(1, 7))
    for x, y in zip(ra, rb):  # masks, samples, data order continue exactly
        for key in ("loss", "mlm_loss", "disc_loss", "gen_acc", "disc_auc", "grad_norm"):
            assert x[key] == y[key], (x["step"], key)
    assert rows(tmp_path / "a", "eval")[-1]["disc_auc"] > 0  # held-out NCE AUC
    sa, sb = (torch.load(p / "ckpt.pt", weights_only=True)["model"]
              for p in (tmp_path / "a", tmp_path / "b"))
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    out = capsys.readouterr().out
    assert "objective electric" in out

    # fine-tuning starts from the energy network's encoder
    pre = hf.load_pretrained(tmp_path / "a")
    wanted = a["model"].fine_tuning_encoder().state_dict()
    assert pre.encoder_state.keys() == wanted.keys()
    assert all(torch.equal(pre.encoder_state[k], wanted[k]) for k in wanted)
    write_glue(tmp_path / "glue")
    results = finetune.main(["--task", "stsb", "--init", str(tmp_path / "a"), "--data-dir",
                             str(tmp_path / "glue"), "--epochs", "1", "--batch-size", "4",
                             "--out-dir", str(tmp_path / "ft"), "--device", "cpu"])
    assert "stsb" in results["tasks"]

    # zero-shot BLiMP: the one-pass energy score, with its time per pair
    data = write_blimp(tmp_path / "blimp", PARADIGMS)
    got = evaluate.main(["blimp", "--init", str(tmp_path / "a"), "--data-dir", str(data)])
    assert set(got["overall"]) == {"pairs", "electric"} and got["overall"]["pairs"] == 5
    assert set(got["seconds_per_pair"]) == {"electric"} and got["seconds_per_pair"]["electric"] > 0
    saved = json.loads((tmp_path / "a" / "blimp.json").read_text())
    assert saved["overall"] == got["overall"]
    # and HuggingFace's layout, which has no Electric, is refused in one line
    with pytest.raises(SystemExit, match="Electric run"):
        train.main(["--out", str(tmp_path / "a"), "--export-hf", str(tmp_path / "hf")])
