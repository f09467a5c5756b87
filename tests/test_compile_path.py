"""How train.py runs each update: compiled with CUDA graphs, compiled, or eager (the choice,
train_cli.step_path, and its flags), the start-up line that says which and why, the status and
the fallback of the first compile, and compiling under gradient accumulation. On a CPU: CUDA
graphs themselves need a GPU (tests/test_gpu.py runs them)."""
import pytest
import test_train
import torch
from test_train import args, rows

import train
from support import train_cli

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


def test_compiled_with_grad_accum_equals_eager(corpus, tmp_path):
    """The path CUDA devices take under --grad-accum and DDP, compiled without CUDA graphs, runs
    here on a CPU: two compiled micro-batches per update accumulate the eager run's gradients.
    fallback_random draws the masks and samples from torch's generator as eager code does;
    compiled kernels sum in another order, hence the tolerance (other masks or a lost micro-batch
    move the loss by far more). tests/test_train.py runs the same path under DDP."""
    import torch._inductor.config

    common = ("--steps", "3", "--log-interval", "1", "--grad-accum", "2")
    torch._dynamo.reset()
    with torch._inductor.config.patch(fallback_random=True):
        train.main(args(corpus, tmp_path / "eager", *common))
        train.main(args(corpus, tmp_path / "compiled", *common, "--compile"))
    eager, compiled = rows(tmp_path / "eager"), rows(tmp_path / "compiled")
    assert [r["step"] for r in compiled] == [1, 2, 3]
    for a, b in zip(eager, compiled):
        for key in ("loss", "mlm_loss", "disc_loss", "grad_norm"):
            assert b[key] == pytest.approx(a[key], rel=1e-4), (a["step"], key)
