"""experiments/hooks.py: G's temperature schedule through train.py's before_update hook, and the
CPU hour's run built on it (tiny runs on CPU, a few steps each)."""
import pytest
import test_train
import torch
from test_train import args, rows

import electra
import train
from experiments import hooks

corpus = test_train.corpus  # the fixture: a small corpus, its vocab and a cache folder


def test_temperature_at_moves_linearly_then_holds():
    """The 9,600-update hour: 2 at update 1, 1 at update 4,800 (step 4,799) and after, half-way
    at step 4,799 / 2."""
    assert ([hooks.temperature_at(s, 2.0, 1.0, 4800) for s in (0, 4799 / 2, 4799, 9599)]
            == [2.0, 1.5, 1.0, 1.0])
    assert hooks.temperature_at(3, 2.0, 1.0, 1) == 1.0  # a one-update schedule ends at once
    assert hooks.temperature_at(0, 2.0, 1.0, 1) == 2.0


def test_temperature_schedule_is_sampled_logged_and_evaluated(corpus, tmp_path, monkeypatch):
    """T from the tiny preset's 2 to 1 over 5 updates: G samples at 2, 1.75, 1.5, 1.25 and 1
    (temperature_at's worked example), each training row logs its update's temperature, and each
    evaluation measures D at the temperature of the update just made, its context AUC at 1 (the
    last one's is that pass itself)."""
    called = []  # (temperature, training) of every forward pass of the model
    forward = electra.Electra.forward

    def recorded(self, *inputs, temperature=None, **kwargs):
        called.append((self.config.temperature if temperature is None else temperature,
                       self.training))
        return forward(self, *inputs, temperature=temperature, **kwargs)

    monkeypatch.setattr(electra.Electra, "forward", recorded)
    out = tmp_path / "run"
    train.main(args(corpus, out, "--steps", "5", "--log-interval", "1", "--eval-interval", "2"),
               before_update=hooks.TemperatureSchedule(t_end=1.0))
    assert electra.get_config("tiny").temperature == 2.0  # T_0, the tiny preset's
    expected = [2.0, 1.75, 1.5, 1.25, 1.0]
    assert [t for t, training in called if training] == expected
    assert [r["temperature"] for r in rows(out)] == expected
    held = rows(out, "eval")
    assert [(r["step"], r["temperature"]) for r in held] == [(2, 1.75), (4, 1.25), (5, 1.0)]
    assert [r["context_auc"] == r["disc_auc"] for r in held] == [False, False, True]
    assert {t for t, training in called if not training} == {1.75, 1.25, 1.0}  # 1.0: context AUC


def test_schedule_steps_ends_the_move_early_and_holds_t_end(corpus, tmp_path):
    """S = 3 of 5 updates: 2, 1.5, 1 at update 3, then 1 (temperature_at's second example)."""
    out = tmp_path / "run"
    train.main(args(corpus, out, "--steps", "5", "--log-interval", "1"),
               before_update=hooks.TemperatureSchedule(t_end=1.0, steps=3))
    assert [r["temperature"] for r in rows(out)] == [2.0, 1.5, 1.0, 1.0, 1.0]


def test_tiny_hour_masks_15_percent_and_moves_the_temperature_in_half_the_run(corpus, tmp_path):
    """tiny_hour: the tiny model at the paper's 15% masked, G's temperature moving from 2 to 1
    over the first half of the run's updates (of 6 here: by update 3) and held; its flags
    (--steps 9,600) give way to the ones given."""
    assert hooks.TINY_HOUR[hooks.TINY_HOUR.index("--steps") + 1] == "9600"
    out = tmp_path / "run"
    result = hooks.tiny_hour([*args(corpus, out), "--steps", "6", "--log-interval", "1"])
    assert result["model_config"].mask_prob == 0.15
    assert electra.get_config("tiny").mask_prob == 0.25  # the preset itself is unchanged
    assert [r["temperature"] for r in rows(out)] == [2.0, 1.5, 1.0, 1.0, 1.0, 1.0]


def test_resume_continues_the_schedule_exactly(corpus, tmp_path):
    out = tmp_path / "run"
    schedule = hooks.TemperatureSchedule(t_end=1.0)
    train.main(args(corpus, out, "--steps", "5", "--stop-at", "2", "--log-interval", "1"),
               before_update=schedule)
    result = train.main(["--out", str(out), "--resume", "--cache-dir", str(corpus[2]),
                         "--log-interval", "1"], before_update=hooks.TemperatureSchedule(t_end=1.0))
    assert result["step"] == 5
    assert [r["temperature"] for r in rows(out)] == [2.0, 1.75, 1.5, 1.25, 1.0]


def test_a_checkpoint_of_the_removed_schedule_flags_is_refused(corpus, tmp_path):
    """A run folder written when train.py had --temperature-end: resuming it without the schedule
    would change the run half-way, so it stops and names the hook."""
    out = tmp_path / "run"
    train.main(args(corpus, out, "--steps", "3", "--stop-at", "1", "--log-interval", "1"))
    saved = torch.load(out / "ckpt.pt", weights_only=True)
    saved["train_config"].update(temperature_end=1.0, temperature_steps=None)
    torch.save(saved, out / "ckpt.pt")
    with pytest.raises(SystemExit, match=r"schedule of G's temperature, an experiment's: continue "
                                         r"it with python experiments/hooks.py tiny-hour --out "):
        train.main(["--out", str(out), "--resume", "--cache-dir", str(corpus[2])])
