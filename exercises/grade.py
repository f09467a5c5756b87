"""The grade sheet: every exercise with its points, pass or fail and the first failing case, then
the capstone (your pieces pre-train an ELECTRA that learns).

    python exercises/grade.py exercises/my_solution.py                  # the whole sheet
    python exercises/grade.py exercises/my_solution.py --part encoder   # one part, no capstone
    python exercises/grade.py exercises/my_solution.py --exercise 7     # one exercise
    python exercises/grade.py alice.py --csv alice.csv                  # also as CSV (or --json)
    python exercises/grade.py submissions/*.py --csv class.csv          # a class: a row per check

Each check runs in a process of its own with a time limit, so an endless loop fails that check
and the sheet goes on. The exit status is 0 when everything graded passed.
"""
from __future__ import annotations

import argparse
import csv
import json
import multiprocessing
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from exercises import (  # noqa: E402
    check_beyond,
    check_encoder,
    check_finetuning,
    check_section2,
    check_tokenizer,
    harness,
)

CHECK_MODULES = {"encoder": check_encoder, "section2": check_section2,
                 "tokenizer": check_tokenizer, "finetuning": check_finetuning,
                 "beyond": check_beyond}
EXERCISES = sorted((ex for m in CHECK_MODULES.values() for ex in m.EXERCISES),
                   key=lambda ex: ex.number)
TIME_LIMIT = 60.0  # seconds per check: the slowest takes a few on 2 cores
CAPSTONE_POINTS = 20


@dataclass
class Grade:
    file: str  # the solution graded
    number: int | str  # the exercise's, or "capstone"
    part: str
    name: str
    points: int
    max_points: int
    passed: bool
    message: str  # the first failing case ("" on a pass)
    seconds: float


def _run_in_child(number: int, path: str, conn) -> None:
    """The child process: load the student's file afresh and run one check."""
    try:
        student = harness.load_student(path)
        ex = next(e for e in EXERCISES if e.number == number)
        ex.check(student)
        conn.send((True, ""))
    except BaseException as e:  # noqa: BLE001 (a student's SystemExit fails the check too)
        conn.send((False, f"{type(e).__name__}: {e}" if not isinstance(e, AssertionError)
                   else str(e)))


def run_check(ex: harness.Exercise, path: Path, time_limit: float = TIME_LIMIT
              ) -> tuple[bool, str, float]:
    """(passed, first failing case, seconds) of one check on the student's file, in a forked
    process killed after `time_limit` seconds."""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_run_in_child, args=(ex.number, str(path), send))
    start = time.perf_counter()
    child.start()
    send.close()
    if receive.poll(time_limit):
        try:
            passed, message = receive.recv()
        except EOFError:
            passed, message = False, f"the check's process died (exit code {child.exitcode})"
    else:
        child.kill()
        passed, message = False, f"no answer within {time_limit:g} s (an endless loop?)"
    child.join()
    return passed, message.strip(), time.perf_counter() - start


def grade(path: Path, exercises: list[harness.Exercise], time_limit: float = TIME_LIMIT
          ) -> list[Grade]:
    """One Grade per exercise; a failure whose check ran through an earlier failed exercise of
    the same part (Exercise.needs) says so."""
    grades, failed = [], set()
    for ex in exercises:
        passed, message, seconds = run_check(ex, path, time_limit)
        if not passed:
            failed.add(ex.number)
            before = [n for n in ex.needs if n in failed]
            if before:
                message += f" (this check runs your exercise(s) {before}, which fail: fix " \
                           f"them first)"
        grades.append(Grade(str(path), ex.number, ex.part, ex.name, ex.points if passed else 0,
                            ex.points, passed, "" if passed else message.splitlines()[0], seconds))
    return grades


def sheet(grades: list[Grade], path: Path) -> str:
    """The grade sheet as text: one line per exercise, the total."""
    lines = [f"grade sheet for {path}", f"{'#':>3}  {'part':<10} {'exercise':<38} points  result"]
    for g in grades:
        result = "pass" if g.passed else f"FAIL  {g.message}"
        lines.append(f"{g.number!s:>3}  {g.part:<10} {g.name:<38} {g.points:>2}/{g.max_points:<2}"
                     f"   {result}")
    total, most = sum(g.points for g in grades), sum(g.max_points for g in grades)
    lines.append(f"total {total}/{most}")
    return "\n".join(lines)


def write(grades: list[Grade], out: Path) -> None:
    """The sheet as JSON (a list of rows) or CSV (a header and a row per exercise and file)."""
    rows = [asdict(g) for g in grades]
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".json":
        out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    else:
        with out.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Grade a copy of exercises/template.py.")
    p.add_argument("solutions", type=Path, nargs="+", metavar="solution",
                   help="your copy of exercises/template.py (several: a class, one sheet each)")
    p.add_argument("--part", choices=list(harness.PARTS), help="grade one part (no capstone)")
    p.add_argument("--exercise", type=int, action="append",
                   help="grade exercise N (repeatable; no capstone)")
    p.add_argument("--no-capstone", action="store_true", help="the exercises only")
    p.add_argument("--json", type=Path, help="also write the sheet as JSON here")
    p.add_argument("--csv", type=Path, help="also write the sheet as CSV here")
    p.add_argument("--time-limit", type=float, default=TIME_LIMIT,
                   help=f"seconds per check (default {TIME_LIMIT:g})")
    return p.parse_args(argv)


def main(argv=None) -> list[Grade]:
    args = parse_args(argv)
    for path in args.solutions:
        if not path.is_file():
            raise SystemExit(f"{path}: no such file (give the path of your copy of "
                             f"exercises/template.py)")
    numbers = {ex.number for ex in EXERCISES}
    unknown = sorted(set(args.exercise or ()) - numbers)
    if unknown:
        raise SystemExit(f"--exercise {unknown[0]}: the exercises are numbered "
                         f"{min(numbers)}-{max(numbers)}")
    chosen = [ex for ex in EXERCISES
              if (args.part is None or ex.part == args.part)
              and (not args.exercise or ex.number in args.exercise)]
    every = []
    for path in args.solutions:
        grades = grade(path, chosen, args.time_limit)
        if not (args.part or args.exercise or args.no_capstone):
            from exercises import capstone  # the model and the loop: only when the sheet needs them

            start = time.perf_counter()
            failing = sorted({g.part for g in grades if not g.passed} & set(capstone.PARTS))
            passed, message = capstone.grade_line(path, failing)
            grades.append(Grade(str(path), "capstone", "all", "your ELECTRA learns",
                                CAPSTONE_POINTS * passed, CAPSTONE_POINTS, passed, message,
                                time.perf_counter() - start))
        print(sheet(grades, path))
        every += grades
    for out in (args.json, args.csv):
        if out is not None:
            write(every, out)
            print(f"wrote {out}")
    return every


if __name__ == "__main__":
    sys.exit(0 if all(g.passed for g in main()) else 1)
