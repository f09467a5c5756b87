"""finetune.py: layer-wise lr decay by hand, --init loading (train.py, HF ELECTRA, HF BERT)
against HuggingFace, a few fine-tuning steps, the CLI's outputs and its errors."""
import dataclasses
import json

import pytest
import torch
import transformers
from conftest import save_run_folder

import finetune as ft
from electra import Encoder, get_config, lr_factor
from support import glue, hf
from support.hf import load_pretrained
from tokenizer import Tokenizer

WORDS = ["good", "bad", "movie", "film", "great", "awful", "the", "a", "is", "was", "not", "very",
         "."]


def tiny_tokenizer(size=None):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
    if size is not None:
        tokens += [f"w{i}" for i in range(size - len(tokens))]
    return Tokenizer(tokens)


def tiny_config(tok, **kw):
    return get_config("tiny", vocab_size=len(tok), embedding_size=16, hidden_size=32, num_layers=3,
                      num_heads=2, intermediate_size=64, max_position=64, pad_id=tok.pad_id,
                      cls_id=tok.cls_id, sep_id=tok.sep_id, mask_id=tok.mask_id, **kw)


def save_train_checkpoint(folder, tok, cfg, seed=0):
    """A run folder as train.py writes it (conftest.save_run_folder)."""
    return save_run_folder(folder, tok, cfg, seed)


# --- layer-wise learning-rate decay ---------------------------------------------------------------


def test_layer_lrs_for_a_three_layer_model_by_hand():
    tok = tiny_tokenizer()
    model = ft.Classifier(tiny_config(tok), num_outputs=2, dropout=0.1)
    lr, d = 1e-4, 0.8
    groups = ft.param_groups(model, num_layers=3, lr=lr, decay=d, weight_decay=0.0)
    lr_of = {name: g["lr"] for g in groups for name in g["names"]}
    # every parameter has exactly one lr
    assert set(lr_of) == {n for n, _ in model.named_parameters()}
    # official _get_layer_lrs: depth emb 0, layer i -> i+1, head n+2 = 5; lr * 0.8^(5 - depth)
    # 3.2768e-5, 4.096e-5, 5.12e-5, 6.4e-5, 1e-4
    expected = {"emb": lr * 0.8 ** 5, "layer0": lr * 0.8 ** 4, "layer1": lr * 0.8 ** 3,
                "layer2": lr * 0.8 ** 2, "head": lr}
    assert expected["layer2"] == pytest.approx(6.4e-5)
    for name, got in lr_of.items():
        key = ("emb" if name.startswith("encoder.embeddings")
               else "head" if name.startswith("classifier")
               else "layer" + name.split(".")[2])
        assert got == pytest.approx(expected[key]), name
    # projection with the embeddings
    assert lr_of["encoder.embeddings_project.weight"] == pytest.approx(expected["emb"])


def test_weight_decay_skips_biases_and_layernorm():
    tok = tiny_tokenizer()
    model = ft.Classifier(tiny_config(tok), num_outputs=2, dropout=0.1)
    for g in ft.param_groups(model, 3, 1e-4, 0.8, weight_decay=0.01):
        for name in g["names"]:
            decayed = not (name.endswith(".bias") or ".ln" in name)
            assert g["weight_decay"] == (0.01 if decayed else 0.0), name


def test_lr_schedule_by_hand():
    # 10 steps, 2 of warmup: factor = (1 - s/10) * min(1, (s+1)/2)
    # s=0: 1.0*0.5 = .5; s=1: .9*1 = .9; s=9: .1
    factors = [lr_factor(s, 10, 2) for s in range(10)]
    assert factors == pytest.approx([0.5, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1])


def test_official_optimizer_two_steps_by_hand():
    # lr 0.1, betas 0.9/0.999, eps 1e-6, weight decay 0.01, p = 2.
    # step 1, g = 0.5:  m = 0.1*0.5 = 0.05, v = 0.001*0.25 = 2.5e-4, sqrt(v) = 0.0158114
    #   update = 0.05 / (0.0158114 + 1e-6) + 0.01*2 = 3.162078 + 0.02 = 3.182078
    #     -> p = 2 - 0.3182078 = 1.6817922
    # step 2, g = -0.5: m = 0.045 - 0.05 = -0.005, v = 2.4975e-4 + 2.5e-4 = 4.9975e-4,
    #   sqrt(v) = 0.0223551
    #   update = -0.005 / 0.0223561 + 0.01*1.6817922 = -0.2236530 + 0.0168179 = -0.2068348
    #     -> p = 1.7024757
    # (torch's AdamW, bias-corrected, would move p by lr * (1 + 0.02) = 0.102 in step 1, not 0.318)
    p = torch.nn.Parameter(torch.tensor([2.0], dtype=torch.float64))
    opt = ft.AdamWeightDecay([{"params": [p], "weight_decay": 0.01}], lr=0.1, betas=(0.9, 0.999),
                             eps=1e-6)
    for g, expected in ((0.5, 1.6817922327), (-0.5, 1.7024757121)):
        p.grad = torch.tensor([g], dtype=torch.float64)
        opt.step()
        assert p.item() == pytest.approx(expected, abs=1e-9)


def test_official_update_is_larger_than_bias_corrected_adamw():
    """For a steady gradient the official update is (1 - 0.9^t) / sqrt(1 - 0.999^t) times AdamW's:
    3.16x at update 1, 6.57x at 12, 1.26x at 1,000 (what build_optimizer's note in train.py
    quotes)."""
    ours = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
    theirs = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
    recipe = ft.FinetuneConfig(lr=1e-3)
    settings = dict(lr=recipe.lr, betas=recipe.adam_betas, eps=recipe.adam_eps, weight_decay=0.0)
    opts = [ft.AdamWeightDecay([ours], **settings), torch.optim.AdamW([theirs], **settings)]
    ratios = {}
    for t in range(1, 1001):
        before = ours.item(), theirs.item()
        for p, opt in zip((ours, theirs), opts):
            p.grad = torch.ones(1, dtype=torch.float64)
            opt.step()
        ratios[t] = (before[0] - ours.item()) / (before[1] - theirs.item())
    assert ratios[1] == pytest.approx(3.162, abs=1e-3)
    assert ratios[12] == pytest.approx(6.569, abs=1e-3) and max(ratios, key=ratios.get) == 12
    assert ratios[1000] == pytest.approx(1.258, abs=1e-3)


def test_recipe_by_model_size():
    assert (ft.recipe_for(get_config("small"), ft.FinetuneConfig()).lr, ) == (3e-4,)
    large = ft.recipe_for(get_config("large"), ft.FinetuneConfig())
    assert (large.lr, large.layer_decay) == (5e-5, 0.9)
    # an explicit value wins
    assert ft.recipe_for(get_config("base"), ft.FinetuneConfig(lr=2e-5)).lr == 2e-5


# Each recipe's numbers, written out from their sources
TABLE7 = {  # the paper, Appendix A, Table 7: Learning Rate, Layerwise LR decay, Weight Decay
    "small": (3e-4, 0.8, 0.0), "base": (1e-4, 0.8, 0.0), "large": (5e-5, 0.9, 0.0)}
OFFICIAL = {  # official configure_finetuning.py: learning_rate 1e-4 (5e-5 if large),
    # layerwise_lr_decay 0.8 (0.9 if large), weight_decay_rate 0.01
    "small": (1e-4, 0.8, 0.01), "base": (1e-4, 0.8, 0.01), "large": (5e-5, 0.9, 0.01)}


@pytest.mark.parametrize("name, expected", [("table7", TABLE7), ("official", OFFICIAL)])
def test_each_recipes_numbers_are_its_sources(name, expected):
    for size, values in expected.items():
        r = ft.recipe_for(get_config(size), ft.FinetuneConfig(recipe_name=name))
        assert (r.lr, r.layer_decay, r.weight_decay) == values, (name, size)
        assert r.recipe_name == name
    # a recipe is hyper-parameters only: the other fields are the same
    a, b = (ft.recipe_for(get_config("small"), ft.FinetuneConfig(recipe_name=n))
            for n in ("table7", "official"))
    assert (dataclasses.replace(a, recipe_name="", lr=0, weight_decay=0)
            == dataclasses.replace(b, recipe_name="", lr=0, weight_decay=0))
    # an explicit value wins over either recipe
    r = ft.recipe_for(get_config("small"), ft.FinetuneConfig(recipe_name=name, lr=2e-5,
                                                             layer_decay=0.7, weight_decay=0.1))
    assert (r.lr, r.layer_decay, r.weight_decay) == (2e-5, 0.7, 0.1)


def test_recipe_official_on_the_command_line_is_the_config_that_runs(tmp_path, monkeypatch):
    tok = tiny_tokenizer()
    save_train_checkpoint(tmp_path / "run", tok, tiny_config(tok))  # taken for Small
    run = tmp_path / "run"
    ran = {}
    monkeypatch.setattr(ft.runs, "run_glue", lambda args, pre, recipe, *a: ran.update(ft=recipe))
    ft.main(["--task", "sst2", "--init", str(run), "--recipe", "official"])
    assert (ran["ft"].lr, ran["ft"].layer_decay, ran["ft"].weight_decay) == OFFICIAL["small"]
    assert ran["ft"].recipe_name == "official" and ran["ft"].loss_reduction == "sum"
    ft.main(["--task", "sst2", "--init", str(run), "--recipe", "official", "--lr", "3e-4",
             "--weight-decay", "0", "--loss-reduction", "mean"])
    assert (ran["ft"].lr, ran["ft"].layer_decay, ran["ft"].weight_decay) == (3e-4, 0.8, 0.0)
    assert ran["ft"].loss_reduction == "mean"
    ft.main(["--task", "sst2", "--init", str(run)])
    assert (ran["ft"].lr, ran["ft"].layer_decay, ran["ft"].weight_decay) == TABLE7["small"]
    assert ran["ft"].recipe_name == "table7"


@pytest.mark.parametrize("task", ["sst2", "stsb"])
def test_the_summed_loss_gradient_is_batch_size_times_the_means(task):
    """--loss-reduction sum (official run_finetuning.py: tf.reduce_sum over the batch): before the
    clip, the gradient is exactly B times the mean's, so clipping at 1.0 acts on more updates."""
    torch.manual_seed(0)
    batch = 6
    t = glue.get_task(task)
    head = torch.nn.Linear(4, 1 if t.regression else 2)
    x = torch.randn(batch, 4)
    labels = torch.rand(batch) * 5 if t.regression else torch.tensor([0, 1, 1, 0, 1, 0])
    grads = {}
    for reduction in ("mean", "sum"):
        head.zero_grad()
        ft.task_loss(t, head(x), labels, reduction).backward()
        grads[reduction] = torch.cat([p.grad.flatten() for p in head.parameters()])
    assert torch.allclose(grads["sum"], batch * grads["mean"], rtol=1e-5, atol=1e-7)
    assert grads["mean"].norm() > 0


# --- loading --init -------------------------------------------------------------------------------


def hidden_states(pre: hf.Pretrained, ids, seg, mask):
    enc = Encoder(pre.config)
    enc.load_state_dict(pre.encoder_state)
    return enc.eval().hidden_states(ids, seg, mask)


def inputs(vocab_size):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, vocab_size, (2, 9), generator=g)
    seg = torch.tensor([[0] * 5 + [1] * 4, [0] * 9])
    mask = torch.tensor([[1] * 9, [1] * 6 + [0] * 3])
    return ids, seg, mask


HF_SIZES = dict(vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                intermediate_size=64, max_position_embeddings=64)


@pytest.mark.parametrize("safetensors", [True, False])
def test_hf_electra_folder_gives_hf_hidden_states(tmp_path, safetensors):
    torch.manual_seed(0)
    hf = transformers.ElectraForPreTraining(
        transformers.ElectraConfig(embedding_size=16, **HF_SIZES)).eval()
    hf.save_pretrained(tmp_path, safe_serialization=safetensors)
    tiny_tokenizer(40).save(tmp_path / "vocab.txt")
    pre = load_pretrained(tmp_path)
    assert (pre.config.embedding_size, pre.config.num_layers) == (16, 2)
    ids, seg, mask = inputs(40)
    with torch.no_grad():
        ref = hf.electra(input_ids=ids, token_type_ids=seg, attention_mask=mask).last_hidden_state
    torch.testing.assert_close(hidden_states(pre, ids, seg, mask), ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("cls", [transformers.BertForMaskedLM, transformers.BertModel])
def test_hf_bert_folder_gives_hf_hidden_states(tmp_path, cls):
    torch.manual_seed(0)
    hf = cls(transformers.BertConfig(**HF_SIZES)).eval()
    hf.save_pretrained(tmp_path)
    tiny_tokenizer(40).save(tmp_path / "vocab.txt")
    pre = load_pretrained(tmp_path)
    # BERT: no embedding projection
    assert pre.config.embedding_size == pre.config.hidden_size == 32
    ids, seg, mask = inputs(40)
    with torch.no_grad():
        bert = hf.bert if cls is transformers.BertForMaskedLM else hf
        ref = bert(input_ids=ids, token_type_ids=seg, attention_mask=mask).last_hidden_state
    torch.testing.assert_close(hidden_states(pre, ids, seg, mask), ref, atol=1e-5, rtol=1e-5)


def test_train_checkpoint_loads_the_discriminator(tmp_path):
    tok = tiny_tokenizer()
    model = save_train_checkpoint(tmp_path / "run", tok, tiny_config(tok))
    ids, seg, mask = inputs(len(tok))
    for init in (tmp_path / "run", tmp_path / "run" / "ckpt.pt"):  # the run folder or the file
        pre = load_pretrained(init)
        torch.testing.assert_close(hidden_states(pre, ids, seg, mask),
                                   model.eval().discriminator.hidden_states(ids, seg, mask))


def test_init_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_pretrained(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="without config.json"):
        load_pretrained(tmp_path / "empty")
    hf_dir = tmp_path / "hf"
    transformers.ElectraModel(
        transformers.ElectraConfig(embedding_size=16, **HF_SIZES)).save_pretrained(hf_dir)
    with pytest.raises(FileNotFoundError, match=r"no vocab.txt for .*hf.*--vocab"):
        load_pretrained(hf_dir)
    tiny_tokenizer(39).save(hf_dir / "vocab.txt")
    with pytest.raises(ValueError, match="has 39 tokens but the model .* has 40 token embeddings"):
        load_pretrained(hf_dir)
    (hf_dir / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(ValueError, match="model_type 'gpt2' is not supported"):
        load_pretrained(hf_dir)
    # a train.py run whose vocab.txt was replaced by another of the same size
    tok = tiny_tokenizer()
    save_train_checkpoint(tmp_path / "run", tok, tiny_config(tok))
    other = Tokenizer(tok.id_to_token[:-1] + ["zzz"])
    other.save(tmp_path / "run" / "vocab.txt")
    with pytest.raises(ValueError, match="is not the vocab .* was pre-trained with"):
        load_pretrained(tmp_path / "run")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="not a readable train.py checkpoint"):
        load_pretrained(tmp_path / "junk.pt")


# --- fine-tuning ----------------------------------------------------------------------------------


def sentiment_rows(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    rows = []
    for _ in range(n):
        label = int(torch.randint(0, 2, (1,), generator=g))
        word = ["bad", "good"][label]
        rows.append(f"the movie was very {word} .\t{label}")
    return rows


def test_a_few_steps_lower_the_loss(tmp_path):
    tok = tiny_tokenizer()
    save_train_checkpoint(tmp_path / "run", tok, tiny_config(tok))
    pre = load_pretrained(tmp_path / "run")
    task = glue.get_task("sst2")
    examples = [glue.Example(str(i), row.split("\t")[0], None, int(row[-1]))
                for i, row in enumerate(sentiment_rows(64))]
    data = glue.encode_examples(examples, tok, 16)
    # a random-init encoder barely separates the sentences at [CLS]: a high lr and no decay, 32
    # steps
    recipe = ft.recipe_for(pre.config, ft.FinetuneConfig(epochs=8, batch_size=16, lr=3e-3,
                                                         layer_decay=1.0))
    splits = glue.Splits(data, {"dev": data}, {})
    run = ft.finetune_seed(task, pre, splits, recipe, seed=0, device="cpu")
    losses = [h["train_loss"] for h in run["history"]]
    assert losses[-1] < 0.5 * losses[0], losses
    assert run["dev"]["acc"] == 100.0  # one word decides the label: the model must learn it


def test_cli_end_to_end(tmp_path, capsys):
    tok = tiny_tokenizer()
    save_train_checkpoint(tmp_path / "run", tok, tiny_config(tok))
    glue = tmp_path / "glue"
    (glue / "RTE").mkdir(parents=True)
    rte = ["index\tsentence1\tsentence2\tlabel"] + [
        f"{i}\tthe film is {w} .\tthe film is {w} .\t{lab}"
        for i, (w, lab) in enumerate([("good", "entailment"), ("bad", "not_entailment")] * 4)]
    (glue / "RTE" / "train.tsv").write_text("\n".join(rte) + "\n")
    (glue / "RTE" / "dev.tsv").write_text("\n".join(rte[:5]) + "\n")
    (glue / "RTE" / "test.tsv").write_text("index\tsentence1\tsentence2\n"
                                           "0\ta film\tgood\n1\tbad\tthe\n")
    (glue / "STS-B").mkdir()
    head = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2"
    sts = [head + "\tscore"] + [f"{i}\tg\tf\ty\to\tn\tn\tthe film\ta {w} film\t{s}"
                                for i, (w, s) in enumerate([("good", "4.0"), ("bad", "1.000")] * 4)]
    (glue / "STS-B" / "train.tsv").write_text("\n".join(sts) + "\n")
    (glue / "STS-B" / "dev.tsv").write_text("\n".join(sts) + "\n")
    out = tmp_path / "out"
    report = ft.main(["--task", "rte,stsb", "--init", str(tmp_path / "run"),
                      "--data_dir", str(glue), "--epochs", "2", "--seeds", "2",
                      "--out_dir", str(out), "--device", "cpu"])
    saved = json.loads((out / "results.json").read_text())
    assert saved["tasks"].keys() == {"rte", "stsb"} and saved == json.loads(json.dumps(report))
    rte_result = saved["tasks"]["rte"]
    assert [s["seed"] for s in rte_result["seeds"]] == [0, 1]
    assert [h["epoch"] for h in rte_result["seeds"][0]["history"]] == [1, 2]
    assert rte_result["median"]["acc"] == pytest.approx(
        sorted(s["dev"]["acc"] for s in rte_result["seeds"])[0] / 2 +
        sorted(s["dev"]["acc"] for s in rte_result["seeds"])[1] / 2)
    assert saved["tasks"]["stsb"]["median"].keys() == {"pearson", "spearman"}
    assert saved["glue_score"] == pytest.approx((rte_result["median"]["acc"] +
                                                 saved["tasks"]["stsb"]["median"]["spearman"]) / 2)
    # tiny takes Small's recipe
    assert saved["recipe"]["layer_decay"] == 0.8 and saved["recipe"]["lr"] == 3e-4
    sub = (out / "glue_submission" / "RTE.tsv").read_text().splitlines()
    assert sub[0] == "index\tprediction" and [r.split("\t")[0] for r in sub[1:]] == ["0", "1"]
    assert all(r.split("\t")[1] in ("entailment", "not_entailment") for r in sub[1:])
    assert not (out / "glue_submission" / "STS-B.tsv").exists()  # no test.tsv given, none written
    assert (out / "finetune.png").stat().st_size > 0
    printed = capsys.readouterr().out
    assert "rte    acc" in printed and "GLUE score" in printed


def fine_tune_recorded(tmp_path, monkeypatch, *flags):
    """finetune.main on a tiny train.py run (the tiny preset: dropout 0) and 8 SST-2 rows, one
    epoch, with `flags`: the Classifier it fine-tuned, results.json and what it printed."""
    models = []

    class Recorded(ft.Classifier):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            models.append(self)

    monkeypatch.setattr(ft, "Classifier", Recorded)
    run = tmp_path / "run"
    data = tmp_path / "SST-2"
    if not run.is_dir():
        tok = tiny_tokenizer()
        save_train_checkpoint(run, tok, tiny_config(tok))
        data.mkdir()
        for name in ("train.tsv", "dev.tsv"):
            (data / name).write_text("sentence\tlabel\n" + "\n".join(sentiment_rows(8)) + "\n")
    out = tmp_path / "out"
    results = ft.main(["--task", "sst2", "--init", str(run), "--data-dir", str(data),
                       "--epochs", "1", "--out-dir", str(out), "--device", "cpu", "--restart",
                       *flags])
    (model,) = models
    return model, results


def dropout_ps(module):
    """The p of every nn.Dropout in `module` (attention dropout included: SDPA takes
    attn_drop.p)."""
    return [m.p for m in module.modules() if isinstance(m, torch.nn.Dropout)]


def test_dropout_flag_sets_every_dropout_of_the_fine_tuned_encoder(tmp_path, monkeypatch,
                                                                   capsys):
    # the tiny preset pre-trains without dropout
    assert tiny_config(tiny_tokenizer()).dropout == 0.0
    model, results = fine_tune_recorded(tmp_path, monkeypatch, "--dropout", "0.1")
    # the embeddings' 1, each of 3 layers' 2 (attention probabilities; the two sublayer outputs
    # share one), the head's 1
    assert dropout_ps(model) == [0.1] * 8 and model.dropout.p == 0.1
    assert model.encoder.config.attention_dropout == 0.1
    assert results["recipe"]["dropout"] == 0.1
    assert "batch 32, dropout 0.1, Adam" in capsys.readouterr().out
    # without the flag: the checkpoint's dropout 0 in the encoder; the head's is Table 7's 0.1
    model, results = fine_tune_recorded(tmp_path, monkeypatch)
    assert dropout_ps(model.encoder) == [0.0] * 7 and model.dropout.p == 0.1
    assert results["recipe"]["dropout"] is None
    assert "dropout 0 (--init's)" in capsys.readouterr().out
    # a results.json fine-tuned with another dropout is not resumed
    with pytest.raises(SystemExit, match=r"settings: recipe\.dropout 0\.2 here, None before\. Run"):
        ft.main(["--task", "sst2", "--init", str(tmp_path / "run"),
                 "--data-dir", str(tmp_path / "SST-2"), "--epochs", "1",
                 "--out-dir", str(tmp_path / "out"), "--dropout", "0.2"])


def test_reinit_layers_draws_the_top_layers_afresh_and_keeps_the_rest(tmp_path, monkeypatch,
                                                                      capsys):
    start = {}  # the encoder's weights as fine-tuning's first update finds them

    def recorded(model, *args):
        start.update({k: v.clone() for k, v in model.encoder.state_dict().items()})
        return optimizer_and_schedule(model, *args)

    optimizer_and_schedule = ft.optimizer_and_schedule
    monkeypatch.setattr(ft, "optimizer_and_schedule", recorded)
    _, results = fine_tune_recorded(tmp_path, monkeypatch, "--reinit-layers", "1")
    assert results["recipe"]["reinit_layers"] == 1
    assert "the top 1 of 3 layers start from fresh random weights" in capsys.readouterr().out
    saved = torch.load(tmp_path / "run" / "ckpt.pt", weights_only=False)["model"]
    for name, value in start.items():
        pretrained = saved["discriminator." + name]
        if name.startswith("layers.2.") and name.endswith(("ln1.weight", "ln2.weight")):
            assert (value == 1).all(), name  # LayerNorm back to the identity
        elif name.startswith("layers.2.") and "ln" not in name and name.endswith("weight"):
            assert not torch.equal(value, pretrained), name  # drawn afresh
            assert 0.015 < value.std() < 0.025, name  # from init_std 0.02, as pre-training starts
        elif not name.startswith("layers.2."):
            assert torch.equal(value, pretrained), name  # the embeddings and layers 0-1: kept


def test_head_first_epochs_train_the_head_alone_on_the_frozen_encoder_then_every_weight(
        tmp_path, monkeypatch, capsys):
    # per forward in training mode: (the encoder in training mode, its weights trainable)
    calls = []
    start = {}  # the weights as the fine-tuning of every weight finds them
    heads = []  # the head's weights as drawn

    class Watched(ft.Classifier):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            heads.append(self.classifier.weight.detach().clone())

        def forward(self, *args):
            if self.training:
                trainable = {p.requires_grad for p in self.encoder.parameters()}
                calls.append((self.encoder.training, trainable))
            return super().forward(*args)

    def recorded(model, *args):
        start.update({k: v.detach().clone() for k, v in model.state_dict().items()})
        return optimizer_and_schedule(model, *args)

    optimizer_and_schedule = ft.optimizer_and_schedule
    monkeypatch.setattr(ft, "optimizer_and_schedule", recorded)
    monkeypatch.setattr(ft, "Classifier", Watched)
    # 8 rows, batch 4: 2 updates an epoch; 2 epochs of the head alone, then 1 of every weight
    _, results = fine_tune_recorded(tmp_path, monkeypatch, "--head-first-epochs", "2",
                                    "--batch-size", "4")
    assert results["recipe"]["head_first_epochs"] == 2
    out = capsys.readouterr().out
    assert "the head is trained alone on the frozen encoder for 2 epoch(s) first" in out
    # 4 updates of the head alone: the encoder frozen and read in eval mode (no dropout); then 2
    # of every weight, the encoder in training mode
    assert calls == [(False, {False})] * 4 + [(True, {True})] * 2
    saved = torch.load(tmp_path / "run" / "ckpt.pt", weights_only=False)["model"]
    for name, value in start.items():
        if name.startswith("encoder."):  # untouched by the head's phase
            assert torch.equal(value, saved["discriminator." + name[len("encoder."):]]), name
    assert not torch.equal(start["classifier.weight"], heads[0])  # the head has learned


def test_submission_format(tmp_path):
    glue.write_submission(glue.get_task("stsb"), tmp_path / "STS-B.tsv", ["0", "1", "2"],
                          [5.7, -0.2, 2.5])
    assert (tmp_path / "STS-B.tsv").read_text() == ("index\tprediction\n"
                                                    "0\t5.000\n1\t0.000\n2\t2.500\n")
    glue.write_submission(glue.get_task("mnli"), tmp_path / "MNLI-m.tsv", ["0", "1"], [2, 0])
    assert (tmp_path / "MNLI-m.tsv").read_text() == ("index\tprediction\n"
                                                     "0\tneutral\n1\tcontradiction\n")


def test_cli_errors(tmp_path):
    tok = tiny_tokenizer()
    save_train_checkpoint(tmp_path / "run", tok, tiny_config(tok))
    run = str(tmp_path / "run")
    with pytest.raises(SystemExit, match="unknown task 'glue': choose from"):
        ft.main(["--task", "glue", "--init", run])
    (tmp_path / "data").mkdir()
    with pytest.raises(SystemExit,
                       match=r"error: .*data/SST-2/train.tsv not found, nor .*data/train.tsv"):
        ft.main(["--task", "sst2", "--init", run, "--data_dir", str(tmp_path / "data")])
    (tmp_path / "data" / "train.tsv").write_text("sentence\tlabel\ngood\t1\nbad\t0\textra\n")
    with pytest.raises(SystemExit,
                       match=r"train.tsv, line 3: expected 2 tab-separated fields, found 3"):
        ft.main(["--task", "sst2", "--init", run, "--data_dir", str(tmp_path / "data")])
    with pytest.raises(SystemExit, match=r"--seeds 0: must be an integer >= 1"):
        ft.main(["--task", "sst2", "--init", run, "--seeds", "0"])
    with pytest.raises(SystemExit, match="does not exist"):
        ft.main(["--task", "sst2", "--init", str(tmp_path / "missing")])


def test_config_fields_documented():
    # every FinetuneConfig field is a CLI flag's default or documented in results.json's recipe
    assert {f.name for f in dataclasses.fields(ft.FinetuneConfig)} >= {
        "lr", "layer_decay", "weight_decay", "warmup_fraction", "batch_size", "epochs"}


def test_empty_split_is_a_clear_error(tmp_path):
    tok = tiny_tokenizer()
    save_train_checkpoint(tmp_path / "run", tok, tiny_config(tok))
    d = tmp_path / "SST-2"
    d.mkdir()
    (d / "train.tsv").write_text("sentence\tlabel\ngood\t1\n")
    (d / "dev.tsv").write_text("sentence\tlabel\n")
    with pytest.raises(SystemExit, match=r"SST-2/dev.tsv has no examples"):
        ft.main(["--task", "sst2", "--init", str(tmp_path / "run"), "--data_dir", str(d)])


def test_predict_keeps_row_order_and_ignores_padding():
    tok = tiny_tokenizer()
    torch.manual_seed(0)
    model = ft.Classifier(tiny_config(tok), num_outputs=1, dropout=0.1)
    texts = ["the film", "a very very good movie .", "bad", "the movie was not great .",
             "awful film"]
    data = glue.encode_examples([glue.Example(str(i), t, None, 1.0) for i, t in enumerate(texts)],
                                tok, 16)
    task = glue.get_task("stsb")
    one_by_one = [ft.predict(model, task, glue.Encoded([i], [s], None, ["0"]), 1, tok.pad_id,
                             torch.device("cpu"))[0]
                  for i, s in zip(data.ids, data.segments)]
    # sorted by length, padded
    batched = ft.predict(model, task, data, 4, tok.pad_id, torch.device("cpu"))
    assert batched == pytest.approx(one_by_one, abs=1e-5)
    assert len(set(batched.round(6))) == len(texts)  # distinct outputs: a row mix-up would show


# --- one clear line for every user error, never NaN in results.json


def test_corrupt_weights_and_malformed_json_name_the_file(tmp_path):
    hf_dir = tmp_path / "hf"
    transformers.ElectraModel(
        transformers.ElectraConfig(embedding_size=16, **HF_SIZES)).save_pretrained(hf_dir)
    tiny_tokenizer(40).save(hf_dir / "vocab.txt")
    weights = (hf_dir / "model.safetensors").read_bytes()
    # an interrupted download
    (hf_dir / "model.safetensors").write_bytes(weights[:len(weights) // 3])
    with pytest.raises(SystemExit, match=r"^error: .*hf/model.safetensors is not readable \(.*\): "
                                         r"download it again"):
        ft.main(["--task", "sst2", "--init", str(hf_dir)])
    (hf_dir / "model.safetensors").write_bytes(weights)
    (hf_dir / "tokenizer_config.json").write_text('{"do_lower_case": tru')
    with pytest.raises(SystemExit, match=r"^error: .*hf/tokenizer_config.json is not valid JSON "
                                         r"\(Expecting value"):
        ft.main(["--task", "sst2", "--init", str(hf_dir)])
    (hf_dir / "config.json").write_text('{"model_type": "electra",')
    with pytest.raises(SystemExit, match=r"^error: .*hf/config.json is not valid JSON"):
        ft.main(["--task", "sst2", "--init", str(hf_dir)])


def test_stsb_score_nan_is_refused_with_file_and_line(tmp_path):
    tok = tiny_tokenizer()
    save_train_checkpoint(tmp_path / "run", tok, tiny_config(tok))
    d = tmp_path / "STS-B"
    d.mkdir()
    head = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"
    rows = [f"{i}\tg\tf\ty\to\tn\tn\tthe film\ta {w} film\t{s}" for i, (w, s) in
            enumerate([("good", "4.0"), ("bad", "nan"), ("good", "inf")])]
    (d / "train.tsv").write_text("\n".join([head] + rows) + "\n")
    (d / "dev.tsv").write_text("\n".join([head] + rows[:1]) + "\n")
    out = tmp_path / "out"
    with pytest.raises(SystemExit,
                       match=r"STS-B/train.tsv, line 3: score 'nan' is not a finite number"):
        ft.main(["--task", "stsb", "--init", str(tmp_path / "run"), "--data_dir", str(d),
                 "--out_dir", str(out)])
    assert not (out / "results.json").exists()


def test_diverged_fine_tuning_stops_and_writes_no_nan(tmp_path, monkeypatch):
    tok = tiny_tokenizer()
    save_train_checkpoint(tmp_path / "run", tok, tiny_config(tok))
    d = tmp_path / "SST-2"
    d.mkdir()
    (d / "train.tsv").write_text("sentence\tlabel\n" + "\n".join(sentiment_rows(8)) + "\n")
    (d / "dev.tsv").write_text("sentence\tlabel\n" + "\n".join(sentiment_rows(4)) + "\n")
    loss = ft.task_loss
    monkeypatch.setattr(ft, "task_loss", lambda *a: loss(*a) * float("nan"))
    out = tmp_path / "out"
    with pytest.raises(SystemExit, match=r"sst2 seed 0: the loss is not finite at step 1 "
                                         r"\(epoch 1, lr 0.0003\)"
                                         r": fine-tuning diverged; .* Lower --lr"):
        ft.main(["--task", "sst2", "--init", str(tmp_path / "run"), "--data_dir", str(d),
                 "--out_dir", str(out), "--batch_size", "4"])
    assert not (out / "results.json").exists()


@pytest.mark.parametrize("flag, value, message", [
    ("--epochs", "0",
     "--epochs 0: must be an integer >= 1 (passes over train.tsv; leave it out for the paper's"),
    ("--batch_size", "0", "--batch-size 0: must be an integer >= 1 (examples per update)"),
    ("--lr", "nan", "--lr nan: must be a positive number"),
    ("--lr", "-1", "--lr -1.0: must be a positive number"),
    ("--layer_decay", "0", "--layer-decay 0.0: must be in (0, 1]"),
    ("--dropout", "-0.1", "--dropout -0.1: must be a probability in [0, 1)"),
    ("--dropout", "1", "--dropout 1.0: must be a probability in [0, 1)"),
    ("--dropout", "nan", "--dropout nan: must be a probability in [0, 1)"),
    ("--weight-decay", "-1", "--weight-decay -1.0: must be a number >= 0"),
    ("--max_seq_len", "2", "--max-seq-len 2: must be an integer >= 3"),
    ("--max-seq-len", "65", "--max-seq-len 65: must be at most 64, the positions"),
    ("--max_train_examples", "0", "--max-train-examples 0: must be an integer >= 1"),
    ("--reinit-layers", "-1", "--reinit-layers -1: must be an integer >= 0"),
    ("--reinit-layers", "4", "--reinit-layers 4: must be at most 3, the layers"),
    ("--head-first-epochs", "-1", "--head-first-epochs -1: must be an integer >= 0"),
    ("--seeds", "-1", "--seeds -1: must be an integer >= 1"),
    ("--seed", "-1", "--seed -1: must be an integer >= 0"),
])
def test_every_numeric_flag_is_range_checked(tmp_path, flag, value, message):
    tok = tiny_tokenizer()
    save_train_checkpoint(tmp_path / "run", tok, tiny_config(tok))  # max_position 64
    with pytest.raises(SystemExit) as e:
        ft.main(["--task", "sst2", "--init", str(tmp_path / "run"),
                 "--out_dir", str(tmp_path / "out"), flag, value])
    assert str(e.value.code).startswith(message) and "\n" not in str(e.value.code)


def test_epochs_is_honoured(tmp_path):
    tok = tiny_tokenizer()
    save_train_checkpoint(tmp_path / "run", tok, tiny_config(tok))
    pre = load_pretrained(tmp_path / "run")
    data = glue.encode_examples([glue.Example(str(i), r.split("\t")[0], None, int(r[-1]))
                               for i, r in enumerate(sentiment_rows(4))], tok, 16)
    for epochs, expected in ((1, [1]), (None, [1, 2, 3])):  # None: the task's (SST-2: 3, Table 7)
        recipe = ft.recipe_for(pre.config, ft.FinetuneConfig(epochs=epochs, batch_size=4))
        run = ft.finetune_seed(glue.get_task("sst2"), pre, glue.Splits(data, {"dev": data}, {}),
                               recipe, seed=0, device="cpu")
        assert [h["epoch"] for h in run["history"]] == expected
