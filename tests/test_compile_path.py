"""How train.py runs each update: compiled with CUDA graphs, compiled, or eager (the choice,
train_cli.step_path, and its flags), the start-up line that says which and why, the status and
the fallback of the first compile; and the compiled run equal to the eager one for every
configuration a user can choose, resumes included. On a CPU: CUDA graphs themselves need a GPU
(tests/test_gpu.py runs them)."""
import contextlib
import functools

import pytest
import test_train
import torch
import torch._inductor.config
from test_train import args, rows
from test_training_algorithms import RUNS
from torch._dynamo.utils import counters

import train
from electra import ElectraConfig, decays
from electric import pretraining_model
from support import report, train_cli

corpus = test_train.corpus  # the fixture: a small corpus, its vocab and a cache folder


def flags(*argv):
    """--compile and --cuda-graphs as train.py parses them: None when not given."""
    parsed = train_cli.parse_args(list(argv), train.TrainConfig, train.RECIPES)
    return {"compile": parsed.compile, "cuda_graphs": parsed.cuda_graphs}


ONE_GPU = "the default on one CUDA device"
DDP = "the default under DDP: CUDA graphs need one process (--no-compile: eager)"
ACCUM = "the default with --grad-accum 2: CUDA graphs need one micro-batch per update"
CPU = "the default on cpu (--compile compiles here too)"


@pytest.mark.parametrize("device, world, grad_accum, argv, path, why", [
    ("cuda", 1, 1, [], "cuda-graphs", ONE_GPU),  # the fastest step measured
    ("cuda", 4, 1, [], "compile", DDP),
    ("cuda", 1, 2, [], "compile", ACCUM),
    ("cuda", 4, 2, [], "compile", DDP),
    ("cpu", 1, 1, [], "eager", CPU),
    ("cpu", 2, 2, [], "eager", CPU),
    ("cuda", 1, 1, ["--no-compile"], "eager", "--no-compile"),
    ("cuda", 4, 1, ["--no-compile"], "eager", "--no-compile"),
    ("cuda", 1, 1, ["--no-cuda-graphs"], "compile", "--no-cuda-graphs"),
    ("cuda", 1, 1, ["--compile", "--cuda-graphs"], "cuda-graphs", ONE_GPU),  # as the default
    ("cuda", 1, 2, ["--compile"], "compile", ACCUM),
    ("cpu", 1, 1, ["--compile"], "compile", "--compile"),  # on a CPU only when asked
    ("cpu", 1, 1, ["--no-compile"], "eager", "--no-compile"),
    ("cpu", 1, 1, ["--no-cuda-graphs"], "eager", CPU),
])
def test_the_path_each_device_and_flag_gets(device, world, grad_accum, argv, path, why):
    """(device type, processes, micro-batches per update, flags) -> the path, and the reason the
    start-up lines print, which names the opt-outs of a default."""
    chosen, reason = train_cli.step_path(device, world, grad_accum, **flags(*argv))
    assert chosen == path
    assert reason.startswith(why)
    if path == "cuda-graphs":
        assert "--no-cuda-graphs" in reason and "--no-compile" in reason


@pytest.mark.parametrize("device, world, grad_accum, argv, refused", [
    ("cuda", 1, 1, ["--no-compile", "--cuda-graphs"],
     "--cuda-graphs replays torch.compile's graphs: drop --no-compile"),
    ("cpu", 1, 1, ["--cuda-graphs"], "--cuda-graphs needs a CUDA device, not cpu"),
    ("cuda", 2, 1, ["--cuda-graphs"],
     "--cuda-graphs is not supported with DDP: drop it or run one process"),
    ("cuda", 1, 2, ["--compile", "--cuda-graphs"],
     "--cuda-graphs with --grad-accum 2 is not supported: drop one of them"),
])
def test_cuda_graphs_asked_for_where_they_cannot_run_is_refused_in_one_line(
        device, world, grad_accum, argv, refused):
    with pytest.raises(SystemExit) as e:
        train_cli.step_path(device, world, grad_accum, **flags(*argv))
    assert str(e.value) == refused


def test_each_flag_is_one_line_of_help(capsys):
    with pytest.raises(SystemExit):
        train_cli.parse_args(["--help"], train.TrainConfig, train.RECIPES)
    shown = capsys.readouterr().out
    assert "--compile, --no-compile" in shown and "--cuda-graphs, --no-cuda-graphs" in shown


def test_cpu_default_is_eager_and_says_why(corpus, tmp_path, capsys, monkeypatch):
    """No flag on a CPU: nothing is compiled, and the start-up lines say so and why."""
    compiled = []
    monkeypatch.setattr(torch, "compile", lambda *a, **k: compiled.append(1))
    train.main(args(corpus, tmp_path / "a", "--steps", "1"))
    assert compiled == []
    assert ", eager: the default on cpu (--compile compiles here too)" in capsys.readouterr().out


def test_cuda_graphs_path_compiles_in_reduce_overhead_mode_and_marks_each_update(
        corpus, tmp_path, monkeypatch, capsys):
    """The path "cuda-graphs" (step_path's choice on one GPU, made here on a CPU) compiles the
    model in torch.compile's reduce-overhead mode and the metrics in its default mode, marks each
    update a new step, and says so at start-up. torch.compile is replaced by a recorder that
    returns what it is given: the run stays eager, so the test takes a second."""
    modes = []
    marks = []

    def recorded(fn, mode=None):
        modes.append(mode)
        return fn

    monkeypatch.setattr(torch, "compile", recorded)
    monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin", lambda: marks.append(1))
    monkeypatch.setattr(train_cli, "step_path", lambda *a: ("cuda-graphs", "the test's"))
    train.main(args(corpus, tmp_path / "a", "--steps", "3"))
    assert modes == ["reduce-overhead", None]  # the model, then report.step_stats
    assert len(marks) == 3
    printed = capsys.readouterr().out
    assert "torch.compile with CUDA graphs: the test's" in printed
    assert "torch.compile built the step in " in printed  # after the first update's status line


def test_a_compile_that_fails_falls_back_to_eager_in_one_line(corpus, tmp_path, monkeypatch,
                                                              capsys):
    """torch.compile's backend fails when the first update calls the compiled model, as a missing
    C compiler or Triton would: one line says so, the update runs again eagerly, and the run
    completes: every update logged once, no traceback."""
    real = torch.compile

    def no_compiler(gm, example_inputs):
        raise RuntimeError("no working C compiler found")

    monkeypatch.setattr(torch, "compile", lambda fn, mode=None: real(fn, backend=no_compiler))
    common = ("--steps", "3", "--log-interval", "1")
    result = train.main(args(corpus, tmp_path / "fell", *common, "--compile"))
    out, err = capsys.readouterr()
    failed = [line for line in out.splitlines() if "torch.compile failed" in line]
    assert failed == ["torch.compile failed (RuntimeError: no working C compiler found): the run "
                      "goes on eagerly"]
    assert "Traceback" not in out + err
    assert ", torch.compile: --compile" in out  # what was asked for, at start-up
    assert result["step"] == 3 and not result["interrupted"]
    assert [r["step"] for r in rows(tmp_path / "fell")] == [1, 2, 3]
    torch._dynamo.reset()  # the broken backend's cache entries, for the tests after this one


# ----------------------------------------------------------------------------- compiled = eager
#
# Every configuration a user can choose (electra.check_config's legal ones): each objective with
# the default sharing and algorithm, each other sharing and each other algorithm with objective
# electra. The default runs through inductor, torch.compile's own backend (fallback_random: the
# masks and samples drawn from torch's generator, as eager code does); the rest through
# aot_eager, which traces the same graphs and backward (AOTAutograd: its zero gradients included)
# but runs them as eager kernels, in seconds instead of inductor's half a minute per graph.

CONFIGS = {
    "electra": [],
    "bert": ["--objective", "bert"],
    "electra_15": ["--objective", "electra_15"],
    "replace_mlm": ["--objective", "replace_mlm"],
    "all_tokens_mlm": ["--objective", "all_tokens_mlm"],
    "electric": ["--objective", "electric"],
    "sharing-none": RUNS["sharing-none"],
    "sharing-all": RUNS["sharing-all"],
    "sharing-gdes": RUNS["sharing-gdes"],
    "two-stage": RUNS["two-stage"],
    "adversarial": RUNS["adversarial"],
}
STEPS, STOP = 24, 12  # two-stage's switch is update 12: the resume starts stage 2


@contextlib.contextmanager
def compiled_with(backend: str, monkeypatch):
    """train.py's torch.compile calls, made with `backend`, no graph kept from another test."""
    real = torch.compile
    monkeypatch.setattr(torch, "compile", functools.partial(real, backend=backend))
    torch._dynamo.reset()  # no graph of another configuration, nor its recompile count
    counters.clear()
    with torch._inductor.config.patch(fallback_random=True):
        yield
    monkeypatch.setattr(torch, "compile", real)


def initial_weights(out) -> dict:
    """The weights the run in `out` started from: set_up seeds torch with --seed, then builds."""
    saved = torch.load(out / "ckpt.pt", weights_only=True)
    torch.manual_seed(saved["train_config"]["seed"])
    return pretraining_model(ElectraConfig(**saved["model_config"])).state_dict()


def adam_steps(out) -> dict[str, set[int]]:
    """{"generator" or "discriminator": the step counts of AdamW's state of its parameters} in the
    checkpoint of `out`; a model without state is left out."""
    saved = torch.load(out / "ckpt.pt", weights_only=True)
    model = pretraining_model(ElectraConfig(**saved["model_config"]))
    owner = {id(p): name for name in ("generator", "discriminator")
             for p in getattr(model, name).parameters()}
    # the optimizer numbers the parameters group by group (train.build_optimizer)
    params = sorted(model.parameters(), key=lambda p: not decays(p))
    steps = {}
    for i, state in saved["optimizer"]["state"].items():
        steps.setdefault(owner[id(params[i])], set()).add(int(state["step"]))
    return steps


def check_compiled_equals_eager(corpus, tmp_path, monkeypatch, flags, backend, session=()):
    """STEPS updates eager and compiled from the same seed, and compiled stopped at STOP and
    resumed (`session`: the flags a resume is given again): the weights that must not move
    bit-identical (two-stage: G through stage 2, D's head through stage 1; and AdamW's state of D
    fresh at the switch), each update's losses within LOSS_RTOL of eager, the last weights within
    WEIGHT_ATOL, and the resumed run equal to the uninterrupted one."""
    # no held-out evaluation and no curves.png: seconds of each run, and not what is compared
    monkeypatch.setattr(report, "plot_pretraining_curves", lambda *a, **k: None)
    common = ["--steps", str(STEPS), "--log-interval", "1", "--eval-fraction", "0",
              "--ckpt-interval", "1000", *flags, *session]
    resume = ["--out", str(tmp_path / "resumed"), "--resume", "--cache-dir", str(corpus[2]),
              "--log-interval", "1", "--ckpt-interval", "1000", "--compile", *session]
    eager = train.main(args(corpus, tmp_path / "eager", *common))["model"].state_dict()
    with compiled_with(backend, monkeypatch):
        compiled = train.main(args(corpus, tmp_path / "compiled", *common, "--compile"))
        compiled = compiled["model"].state_dict()
        # the model's step and its metrics ran compiled: not left to eager by a failed compile
        assert counters["stats"]["unique_graphs"] >= 2
        train.main(args(corpus, tmp_path / "resumed", *common, "--compile", "--stop-at", str(STOP)))
        at_stop = torch.load(tmp_path / "resumed" / "ckpt.pt", weights_only=True)
        resumed = train.main(resume)["model"].state_dict()
    if "two-stage" in flags:
        init = initial_weights(tmp_path / "eager")
        switch = at_stop["model"]  # the checkpoint at the switch: D initialised from G
        d_head = [k for k in switch if k.startswith("discriminator.head")]
        g = [k for k in switch if k.startswith("generator.")]
        assert d_head and g
        assert all(torch.equal(switch[k], init[k]) for k in d_head), "D's head moved in stage 1"
        assert all(torch.equal(switch[k], compiled[k]) for k in g), "G moved in stage 2"
        assert at_stop["optimizer"]["state"] == {}  # D starts stage 2 with fresh AdamW state
        # D's AdamW state counts stage 2's updates only, and G, frozen, has none
        assert adam_steps(tmp_path / "resumed") == {"discriminator": {STEPS - STOP}}
    re, rc, rr = (rows(tmp_path / name) for name in ("eager", "compiled", "resumed"))
    assert [r["step"] for r in rc] == [r["step"] for r in rr] == list(range(1, STEPS + 1))
    for a, b in zip(re, rc):
        for key in ("loss", "mlm_loss", "disc_loss"):
            assert b[key] == pytest.approx(a[key], rel=LOSS_RTOL[backend]), (a["step"], key)
    for k in eager:
        torch.testing.assert_close(compiled[k], eager[k], atol=WEIGHT_ATOL[backend], rtol=0,
                                   msg=k)
    for a, b in zip(rc, rr):  # the masks, samples and optimizer continue exactly
        for key in ("loss", "mlm_loss", "disc_loss", "grad_norm"):
            assert a[key] == b[key], (a["step"], key)
    assert all(torch.equal(compiled[k], resumed[k]) for k in compiled)


# aot_eager runs the eager kernels: measured bit-identical to eager (0 difference), the margin
# for a backward that sums in another order. Inductor's fused kernels round differently: over
# 24 updates the losses moved by at most 2e-7 (relative) and the weights by 1.2e-7, 50 times
# under these. A Gumbel-argmax flip (two candidates' g + logit closer than those 1e-7: roughly
# one run in several thousand, and with the seed fixed it happens on every run on a platform or
# never)
# would change one of the ~1,500 samples, moving L_Disc by about a token's loss over the ~240
# tokens, 0.5%, and every update after: it fails these tolerances and would need 1e-2.
LOSS_RTOL = {"aot_eager": 1e-6, "inductor": 1e-5}
WEIGHT_ATOL = {"aot_eager": 1e-6, "inductor": 1e-5}


@pytest.mark.parametrize("name", [n for n in CONFIGS if n != "electra"])
def test_compiled_equals_eager_for_every_configuration(corpus, tmp_path, monkeypatch, name):
    check_compiled_equals_eager(corpus, tmp_path, monkeypatch, CONFIGS[name], "aot_eager")


def test_compiled_equals_eager_default_configuration_with_inductor(corpus, tmp_path, monkeypatch):
    """The default configuration through inductor, under --grad-accum 2: the path CUDA devices
    take under accumulation and DDP (tests/test_train.py runs DDP), compiled without CUDA graphs,
    here on a CPU; two compiled micro-batches per update accumulate the eager run's gradients."""
    check_compiled_equals_eager(corpus, tmp_path, monkeypatch, CONFIGS["electra"], "inductor",
                                session=["--grad-accum", "2"])


def test_the_matrix_catches_a_frozen_model_that_moves_under_compile(corpus, tmp_path,
                                                                     monkeypatch):
    """Without drop_frozen_gradients the compiled backward's zero gradients reach AdamW: eager
    two-stage still keeps G frozen (its gradients are None), the compiled run moves it."""
    monkeypatch.setattr(train, "drop_frozen_gradients", lambda model, stage: None)
    with pytest.raises(AssertionError, match="D's head moved in stage 1|G moved in stage 2"):
        check_compiled_equals_eager(corpus, tmp_path, monkeypatch, CONFIGS["two-stage"],
                                    "aot_eager")
