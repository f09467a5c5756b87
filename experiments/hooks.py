"""Hooks that change a train.py run as it goes, for experiments beyond the paper's method.

train.main(argv, before_update=hook) calls hook(step, cfg, run) before each update (step counted
from 0; cfg the run's train.TrainConfig, run its train.Run); what the hook returns is added to
metrics.jsonl's rows. The paper's method needs none.

- TemperatureSchedule: G's sampling temperature moved linearly from the model's to another over
  the first updates, then held. At a high temperature G proposes rare tokens, which D learns to
  flag from the token alone, an early signal; lowered towards the paper's 1, G's samples become
  plausible and D has to read their context to find them.
- tiny_hour: the tiny model over an hour on 2 CPU cores (experiments/README.md, what D learns):
  the paper's 15% masked, and G's temperature moving from the tiny preset's 2 to the paper's 1
  over the first half of 9,600 updates, then 1.

    python experiments/hooks.py tiny-hour --data my_texts/ --out runs/hour
    python experiments/hooks.py tiny-hour --out runs/hour --resume   # continues it exactly
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import train


def temperature_at(step: int, t_0: float, t_end: float, steps: int) -> float:
    """G's sampling temperature at update `step` (counted from 0, as train.learning_rate):

        T(step) = T_0 + (T_end - T_0) * min(step / (S - 1), 1),  S = steps

    T_0 at the first update, T_end at update S (counted from 1: step S - 1) and after, linear
    between; a schedule of a single update samples at T_0.

    Example: T_0 2, T_end 1 over 5 updates: 2, 1.75, 1.5, 1.25, 1; reaching 1 at update 3
    instead: 2, 1.5, 1, 1, 1.

    >>> [temperature_at(step, 2.0, 1.0, 5) for step in range(5)]
    [2.0, 1.75, 1.5, 1.25, 1.0]
    >>> [temperature_at(step, 2.0, 1.0, 3) for step in range(5)]
    [2.0, 1.5, 1.0, 1.0, 1.0]
    """
    fraction = min(step / max(steps - 1, 1), 1.0)
    return t_0 + (t_end - t_0) * fraction


@dataclass
class TemperatureSchedule:
    """A before_update hook: G samples at temperature_at(step, T_0, t_end, S) at update `step`,
    T_0 the model's temperature (its preset's, or --set temperature=...), S = `steps`, or the
    share `share` of the run's updates (so a shorter --steps still reaches t_end). It sets
    model.config.temperature, which Electra.forward and the held-out evaluations sample at, and
    logs the temperature in metrics.jsonl. A pure function of the step: --resume continues it
    exactly."""

    t_end: float  # the temperature reached at update S and held after it
    steps: int | None = None  # S; None: share * the run's --steps
    share: float = 1.0
    t_0: float | None = None  # None: the model's temperature when the run starts

    def __call__(self, step: int, cfg, run) -> dict:
        if self.t_0 is None:
            self.t_0 = run.raw.config.temperature
        S = self.steps if self.steps is not None else max(1, round(self.share * cfg.steps))
        t = temperature_at(step, self.t_0, self.t_end, S)
        run.raw.config.temperature = t
        return {"temperature": t}


# the CPU hour's run: train.py's flags and the hook
TINY_HOUR = ["--size", "tiny", "--set", "mask_prob=0.15", "--steps", "9600"]


def tiny_hour(argv: list[str]) -> dict:
    """train.py's tiny preset at 15% masked for 9,600 updates, G's temperature moving from 2 to 1
    over the first half (TemperatureSchedule); `argv` is any other train.py flags (--data, --out,
    --steps, --resume, ...), which win over TINY_HOUR's."""
    resume = "--resume" in argv
    # eager: the hook changes the temperature every update, which a compiled step (train.py's
    # default on a GPU) would recompile for each time
    return train.main([*([] if resume else TINY_HOUR), "--no-compile", *argv],
                      before_update=TemperatureSchedule(t_end=1.0, share=0.5))


if __name__ == "__main__":
    if sys.argv[1:2] != ["tiny-hour"]:
        raise SystemExit("usage: python experiments/hooks.py tiny-hour [train.py flags]")
    tiny_hour(sys.argv[2:])
