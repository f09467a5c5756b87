"""report.py's measures of a run: the held-out context AUC (D against G's samples at temperature 1)
and the held-out sentence printed at each evaluation, plain and coloured."""
import contextlib
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from test_electra import batch, micro_config

import data
import train
from electra import OBJECTIVES, Electra, get_config
from support import report
from support.report import disc_auc, stats_dict, step_stats

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(27)]


def held_out(n_examples=12, length=14, seed=0):
    """Held-out examples of random words, laid out as data.Batches lays out micro-batches of 4."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, len(VOCAB), size=n_examples * length)
    # (a_start, a_len, b_start, b_len): one sentence A of `length` tokens each, no B
    examples = np.array([[i * length, length, 0, 0] for i in range(n_examples)], dtype=np.int64)
    layout = SimpleNamespace(ids=ids, micro_batch=4, max_len=length + 2, special=(2, 3, 0))
    return examples, layout


def tiny_model(temperature):
    config = get_config("tiny", vocab_size=len(VOCAB), hidden_size=32, embedding_size=32,
                        num_layers=1, num_heads=1, intermediate_size=64, max_position=32,
                        pad_id=0, cls_id=2, sep_id=3, mask_id=4, temperature=temperature)
    torch.manual_seed(0)
    model = Electra(config)
    with torch.no_grad():  # a G with preferences, as a trained one: temperature changes its samples
        model.generator.output_bias.copy_(torch.linspace(-4.0, 4.0, len(VOCAB)))
    return model


def pass_by_hand(model, examples, layout, seed, temperature):
    """The held-out micro-batches through `model` at `temperature`, after torch.manual_seed(seed):
    D's AUC pooled over all of their tokens, and the masked inputs."""
    model.eval()
    torch.manual_seed(seed)
    p, orig, real, masked = [], [], [], []
    for i in range(0, len(examples), layout.micro_batch):
        arrays = data.pretraining_batch(layout.ids, examples[i:i + layout.micro_batch],
                                        layout.max_len, *layout.special)
        x, s, m = (torch.from_numpy(a) for a in arrays)
        with torch.no_grad():
            out = model(x, s, m, temperature=temperature)
        p.append(out.p_original)
        orig.append(out.x_corrupt == x)
        real.append(m)
        masked.append(out.x_masked)
    return disc_auc(torch.cat(p), torch.cat(orig), torch.cat(real)).item(), torch.cat(masked)


def test_context_auc_is_d_against_samples_at_temperature_1():
    """At training temperature 2 the context AUC is a second pass at temperature 1 over the same
    masks; it differs from the training-temperature AUC (other samples), which evaluate_heldout
    leaves as it was."""
    examples, layout = held_out()
    cfg = train.TrainConfig(eval_batches=3, seed=5)
    model = tiny_model(temperature=2.0)
    got = report.evaluate_heldout(model, examples, layout, cfg, contextlib.nullcontext())
    assert model.training  # back in training mode (dropout on)
    at_2, masked_2 = pass_by_hand(model, examples, layout, cfg.seed, None)
    at_1, masked_1 = pass_by_hand(model, examples, layout, cfg.seed, 1.0)
    assert torch.equal(masked_1, masked_2)  # the same masks: only G's temperature differs
    assert got["disc_auc"] == pytest.approx(at_2, abs=1e-6)
    assert got["context_auc"] == pytest.approx(at_1, abs=1e-6)
    assert abs(got["context_auc"] - got["disc_auc"]) > 1e-3


def test_context_auc_equals_the_auc_when_training_samples_at_temperature_1():
    examples, layout = held_out()
    cfg = train.TrainConfig(eval_batches=3, seed=5)
    model = tiny_model(temperature=1.0)
    got = report.evaluate_heldout(model, examples, layout, cfg, contextlib.nullcontext())
    at_1, _ = pass_by_hand(model, examples, layout, cfg.seed, None)
    assert got["context_auc"] == got["disc_auc"] == pytest.approx(at_1, abs=1e-6)


def test_a_scheduled_temperature_is_the_training_auc_pass():
    """With a schedule of G's temperature (experiments/hooks.py), the training-AUC pass samples at
    the step's temperature (not the model's) and the context AUC stays at 1; at 1 the two are one
    pass."""
    examples, layout = held_out()
    cfg = train.TrainConfig(eval_batches=3, seed=5)
    model = tiny_model(temperature=2.0)
    got = report.evaluate_heldout(model, examples, layout, cfg, contextlib.nullcontext(),
                                  temperature=1.5)
    at_1_5, _ = pass_by_hand(model, examples, layout, cfg.seed, 1.5)
    at_1, _ = pass_by_hand(model, examples, layout, cfg.seed, 1.0)
    at_2, _ = pass_by_hand(model, examples, layout, cfg.seed, None)
    assert (got["disc_auc"] == pytest.approx(at_1_5, abs=1e-6)
            and got["context_auc"] == pytest.approx(at_1, abs=1e-6))
    assert abs(at_1_5 - at_2) > 1e-3  # the model's own temperature would have given another AUC
    got = report.evaluate_heldout(model, examples, layout, cfg, contextlib.nullcontext(),
                                  temperature=1.0)
    assert got["context_auc"] == got["disc_auc"] == pytest.approx(at_1, abs=1e-6)


def test_generator_spread_by_hand():
    """G's entropy and most likely token's probability at the masked positions: a uniform row over
    4 tokens (log 4, 1/4) and a row of probabilities 1/2, 1/4, 1/4 ((3/2) log 2, 1/2); the third
    position is padding of the masks and is not counted."""
    half = torch.log(torch.tensor([2.0, 1.0, 1.0, 0.0]).clamp_min(1e-30))
    logits_G = torch.stack([torch.zeros(4), half, torch.tensor([9.0, 0, 0, 0])])[None]  # [1, 3, 4]
    out = SimpleNamespace(logits_G=logits_G, m_valid=torch.tensor([[True, True, False]]))
    h, p_max = report.generator_spread(out)
    assert h.item() == pytest.approx((np.log(4) + 1.5 * np.log(2)) / 2, abs=1e-6)
    assert p_max.item() == pytest.approx((1 / 4 + 1 / 2) / 2, abs=1e-6)


def test_held_out_rows_give_gs_entropy_over_the_same_masks():
    """evaluate_heldout's gen_entropy and gen_p_max: generator_spread averaged over the held-out
    micro-batches, at temperature 1 whatever G samples at (the same value at 2 and at 1)."""
    examples, layout = held_out()
    cfg = train.TrainConfig(eval_batches=3, seed=5)
    model = tiny_model(temperature=2.0)
    got = report.evaluate_heldout(model, examples, layout, cfg, contextlib.nullcontext())
    model.eval()
    torch.manual_seed(cfg.seed)
    spreads = []
    for i in range(0, len(examples), layout.micro_batch):
        arrays = data.pretraining_batch(layout.ids, examples[i:i + layout.micro_batch],
                                        layout.max_len, *layout.special)
        with torch.no_grad():
            out = model(*(torch.from_numpy(a) for a in arrays))
        spreads.append(torch.stack(report.generator_spread(out)))
    h, p_max = torch.stack(spreads).mean(0).tolist()
    assert got["gen_entropy"] == pytest.approx(h, abs=1e-6)
    assert got["gen_p_max"] == pytest.approx(p_max, abs=1e-6)
    # the output bias's preferences: below the uniform log V, above 1 / V
    assert 0 < got["gen_entropy"] < np.log(len(VOCAB)) and got["gen_p_max"] > 1 / len(VOCAB)


def test_bert_objective_has_no_context_auc():
    examples, layout = held_out()
    model = Electra(get_config("tiny", vocab_size=len(VOCAB), hidden_size=32, embedding_size=32,
                               num_layers=1, num_heads=1, intermediate_size=64, pad_id=0,
                               cls_id=2, sep_id=3, mask_id=4, objective="bert"))
    got = report.evaluate_heldout(model, examples, layout, train.TrainConfig(eval_batches=1),
                                  contextlib.nullcontext())
    assert "context_auc" not in got


def test_progress_line_shows_the_context_auc_of_held_out_rows():
    row = {"mlm_loss": 6.0, "disc_loss": 0.4, "gen_acc": 0.1, "disc_acc": 0.8,
           "all_original_acc": 0.75, "disc_precision": 0.6, "disc_recall": 0.4, "disc_auc": 0.815}
    assert "ctx_AUC" not in report.progress_line(row, "electra")  # a training row has none
    line = report.progress_line({**row, "context_auc": 0.535}, "electra")
    assert "D_AUC 0.815 ctx_AUC 0.535" in line


D_METRICS = {"disc_loss", "disc_acc", "all_original_acc", "disc_precision", "disc_recall",
             "disc_auc", "context_auc"}


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_curves_draw_d_only_for_the_objectives_that_train_one(objective, tmp_path):
    """A BERT run's curves.png once drew D's fields of its metrics rows, zeros: a D baseline at
    1.0 and a D AUC at 0, a discriminator that never learns in a run that has none."""
    model = Electra(get_config("tiny", vocab_size=len(VOCAB), hidden_size=32, embedding_size=32,
                               num_layers=1, num_heads=1, intermediate_size=64, pad_id=0,
                               cls_id=2, sep_id=3, mask_id=4, objective=objective))
    drawn = {key for _, keys in report.curve_panels(objective).values() for key, _ in keys}
    assert bool(drawn & D_METRICS) == (model.discriminator is not None)
    assert ("main_mlm_loss" in drawn) == (objective in ("replace_mlm", "all_tokens_mlm"))
    # a metrics row as train.py writes it, D's fields zero for the objectives without D
    row = {"step": 1, "split": "train", "lr": 1e-3, "mlm_loss": 7.0, "gen_acc": 0.1,
           "main_mlm_loss": 0.0, **dict.fromkeys(D_METRICS - {"context_auc"}, 0.0)}
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text(json.dumps(row) + "\n" + json.dumps({**row, "split": "eval"}) + "\n")
    report.plot_pretraining_curves(metrics, tmp_path / "curves.png", objective)
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_curves_name_each_quantity_once_in_its_panel():
    """Each quantity's training line and held-out dots share one colour and one legend entry (two
    entries each, "(train)" and "(eval)", once hid the accuracy panel's curves); the context AUC,
    measured on held-out text only, has its dots alone."""
    row = {"step": 1, "split": "train", "lr": 1e-3, "mlm_loss": 7.0, "gen_acc": 0.1,
           **dict.fromkeys(D_METRICS - {"context_auc"}, 0.5)}
    rows = [row, {**row, "split": "eval", "context_auc": 0.6}]
    fig = report.curves_figure(rows, "electra")
    for ax, (title, keys) in zip(fig.axes, report.curve_panels("electra").values()):
        assert ax.get_title() == title
        entries = [text.get_text() for text in ax.get_legend().get_texts()]
        assert entries == [label or key for key, label in keys]
    accuracy = fig.axes[2]
    drawn = [line.get_label() for line in accuracy.lines]
    # six quantities with both splits, the context AUC with held-out dots only
    assert len(drawn) == 6 * 2 + 1
    assert drawn.count("_nolegend_") == 6


def metrics_rows(steps, loss):
    """Training rows at `steps` and a held-out row at the last, every COMPARED quantity from
    `loss`."""
    train = [{"step": s, "split": "train", "mlm_loss": loss(s), "disc_loss": loss(s) / 10,
              "gen_acc": 0.1, "disc_auc": 0.8} for s in steps]
    return train + [{**train[-1], "split": "eval", "context_auc": 0.7}]


def test_compare_to_draws_a_run_over_the_reference(tmp_path, capsys):
    """python -m support.report RUN --compare-to REFERENCE: one panel per quantity of COMPARED, the
    run's training line and held-out dots over the reference's, each run in its colour, the run
    drawn on top; the PNG lands beside the run's metrics."""
    run = tmp_path / "runs" / "mine"
    run.mkdir(parents=True)
    mine = metrics_rows([10, 20, 30], lambda s: 10 - s / 10)
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in mine))
    reference = Path(__file__).resolve().parents[1] / "bench" / "gpu_h100" / "metrics.jsonl"
    assert report.compare_main([str(run), "--compare-to", str(reference)]) == run / "compare.png"
    assert (run / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {run / 'compare.png'}" in capsys.readouterr().out
    runs = [("mine", mine), ("gpu_h100", report.read_metrics(reference))]
    fig = report.comparison_figure(runs, "mine against gpu_h100")
    for ax, (key, title) in zip(fig.axes, report.COMPARED.items()):
        assert ax.get_title() == title
        lines = {line.get_label(): line for line in ax.lines}
        splits = ("held-out",) if key == "context_auc" else ("training", "held-out")
        assert sorted(lines) == sorted(f"{name}, {split}" for name in ("mine", "gpu_h100")
                                       for split in splits)
        ours = lines[f"mine, {splits[0]}"]
        assert ours.get_zorder() > lines[f"gpu_h100, {splits[0]}"].get_zorder()
        expected = [r for r in mine if key in r and r["split"] == ("eval" if key == "context_auc"
                                                                    else "train")]
        assert list(ours.get_xdata()) == [r["step"] for r in expected]
        assert list(ours.get_ydata()) == [r[key] for r in expected]


def test_compare_to_a_run_without_metrics_is_one_line(tmp_path):
    with pytest.raises(SystemExit, match=r"^\S+nothing: no metrics rows \(a train\.py run folder"):
        report.compare_main([str(tmp_path / "nothing")])


# the sentence of marked_sentence's docstring: "the cat sat", cat replaced by dog; D flags "the"
# (original: a false alarm) and "dog" (replaced: caught)
SENTENCE = dict(tokens=["[CLS]", "[SEP]", "the", "cat", "dog", "sat"],
                x=torch.tensor([0, 2, 3, 5, 1]), x_corrupt=torch.tensor([0, 2, 4, 5, 1]),
                p_original=torch.tensor([0.9, 0.2, 0.1, 0.7, 0.6]))


def test_marked_sentence_plain():
    text = report.marked_sentence(**SENTENCE, tty=False)
    assert text == ("held-out sentence ([orig->new]: G's replacement; *: D calls it replaced):\n"
                    "  [CLS] *the *[cat->dog] sat [SEP]")
    assert "\x1b" not in text


def test_marked_sentence_coloured_on_a_terminal():
    text = report.marked_sentence(**SENTENCE, tty=True)
    green, red, reset = "\x1b[1;32m", "\x1b[1;31m", "\x1b[0m"
    assert text.splitlines()[1] == f"  [CLS] {red}the{reset} {green}[cat->dog]{reset} sat [SEP]"
    assert f"{green}right{reset}" in text and f"{red}wrong{reset}" in text  # the legend
    assert "*" not in text


def test_marked_sentence_is_cut_to_sample_tokens():
    n = report.SAMPLE_TOKENS + 5
    x = torch.full((n,), 2)
    text = report.marked_sentence(SENTENCE["tokens"], x, x, torch.ones(n), tty=False)
    assert text.splitlines()[1] == "  " + " ".join(["the"] * report.SAMPLE_TOKENS) + " ..."


def test_the_cpu_preset_is_a_preset_of_both_the_model_and_the_recipe():
    # A renamed preset would silently turn its CPU time projection back on: the name must exist.
    from electra import SIZES

    assert report.CPU_PRESET in SIZES and report.CPU_PRESET in train.RECIPES
    # the time the CPU projection promises is the README's for the CPU preset's command
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert f"the CPU preset, about {report.CPU_PRESET_MINUTES} minutes" in readme


def test_disc_auc_by_hand():
    # D = P(original); the AUC ranks 1 - D, the score of *replaced*.
    # replaced tokens score 0.8 and 0.4, originals 0.4, 0.3, 0.1 (the last token is padding):
    # 0.8 beats all three originals (3); 0.4 beats 0.3 and 0.1 and ties 0.4 (2 + 1/2) -> 5.5 / 6
    p_original = torch.tensor([[0.2, 0.6, 0.6, 0.7, 0.9, 0.0]])
    is_original = torch.tensor([[False, False, True, True, True, False]])
    am = torch.tensor([[1, 1, 1, 1, 1, 0]])
    assert disc_auc(p_original, is_original, am).item() == pytest.approx(5.5 / 6)
    # the padding token (replaced, scored highest) would have added a third perfect replaced token
    assert disc_auc(p_original, is_original, torch.ones_like(am)).item() == pytest.approx(
        (3 + 3 + 2.5) / 9)
    # a perfect ranking is 1, the reverse 0, all scores equal 1/2 (every pair a tie)
    labels = torch.tensor([True, True, False, False])
    assert disc_auc(torch.tensor([0.9, 0.8, 0.2, 0.1]), labels, torch.ones(4)).item() == 1.0
    assert disc_auc(torch.tensor([0.1, 0.2, 0.8, 0.9]), labels, torch.ones(4)).item() == 0.0
    assert disc_auc(torch.full((4,), 0.3), labels, torch.ones(4)).item() == 0.5
    # undefined without replaced tokens: reported as chance
    assert disc_auc(torch.tensor([0.9, 0.8]), torch.tensor([True, True]),
                    torch.ones(2)).item() == 0.5


def test_disc_auc_equals_sklearn():
    from sklearn.metrics import roc_auc_score

    g = torch.Generator().manual_seed(0)
    for _ in range(4):
        # scores rounded to 2 decimals: many ties, which sklearn also counts as half
        p_original = torch.rand(16, 40, generator=g).round(decimals=2)
        is_original = torch.rand(16, 40, generator=g) < 0.85
        weights = torch.rand(16, 40, generator=g) < 0.9
        ref = roc_auc_score((~is_original)[weights].numpy(), (1 - p_original)[weights].numpy())
        assert disc_auc(p_original, is_original, weights).item() == pytest.approx(ref, abs=1e-6)


def test_step_metrics_are_consistent():
    """step_stats: what a run reports of one step, from the tensors of its ElectraOutput."""
    model = Electra(micro_config())
    x, seg, am = batch()
    out = model(x, seg, am)
    m = stats_dict(step_stats(out, x, am))
    assert set(m) >= {"loss", "mlm_loss", "disc_loss", "gen_acc", "disc_acc", "disc_precision",
                      "disc_recall", "disc_auc", "replaced_frac"}
    assert m["loss"] == pytest.approx(m["mlm_loss"] + 50 * m["disc_loss"], rel=1e-5)
    real = am.bool()
    is_orig = (out.x_corrupt == x)[real]
    assert m["replaced_frac"] == pytest.approx((~is_orig).float().mean().item())
    called_orig = (out.p_original[real] > 0.5)
    assert m["disc_acc"] == pytest.approx((called_orig == is_orig).float().mean().item(), abs=1e-6)
    assert m["disc_auc"] == pytest.approx(disc_auc(out.p_original, out.x_corrupt == x, am).item())


    replaced = ~(out.x_corrupt == x) & real
    called_replaced = (out.p_original < 0.5) & real
    assert m["disc_precision"] == pytest.approx(
        (replaced & called_replaced).sum().item() / max(called_replaced.sum().item(), 1))
    assert m["disc_recall"] == pytest.approx(
        (replaced & called_replaced).sum().item() / max(replaced.sum().item(), 1))
    top1 = out.logits_G.argmax(-1) == x.gather(1, out.m)
    assert m["gen_acc"] == pytest.approx(top1[out.m_valid].float().mean().item())
    assert m["main_mlm_loss"] == 0.0  # not an objective of ELECTRA's: reads 0
