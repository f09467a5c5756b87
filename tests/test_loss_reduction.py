"""experiments/loss_reduction.py: each (task, reduction) is one sst2_check.py call with that
--loss-reduction, and the table's differences are the sum's mean minus the mean's, by hand."""
import doctest

from experiments import loss_reduction, sst2_check


def row(pre: list[float], twin: list[float]) -> dict:
    p, r = sst2_check.spread(pre), sst2_check.spread(twin)
    return {"pretrained": p, "random": r, "gain": p["mean"] - r["mean"]}


SCORES = {  # (task, reduction): (pre-trained jobs, twin jobs)
    ("stsb", "mean"): ([26.0, 28.0, 30.0], [15.0, 16.0, 17.0]),
    ("stsb", "sum"): ([24.0, 29.0, 22.0], [16.0, 17.0, 18.0]),
}


def test_each_reduction_is_one_check_and_the_table_subtracts_by_hand(tmp_path, monkeypatch):
    calls = []

    def fake_main(argv):
        calls.append(argv)
        task = argv[argv.index("--task") + 1]
        reduction = argv[argv.index("--loss-reduction") + 1]
        return [row(*SCORES[task, reduction])]

    monkeypatch.setattr(sst2_check, "main", fake_main)
    out = tmp_path / "out"
    text = loss_reduction.main(["--init", "runs/x", "--glue", str(tmp_path / "glue"),
                                "--tasks", "stsb", "--out", str(out)])
    assert [c[c.index("--loss-reduction") + 1] for c in calls] == ["mean", "sum"]
    assert all(c[c.index("--data-dir") + 1] == str(tmp_path / "glue" / "STS-B") for c in calls)
    assert [c[c.index("--out") + 1] for c in calls] == [str(out / "stsb-mean"),
                                                          str(out / "stsb-sum")]
    # pre-trained: 25 - 28 = -3, the sum lower on seeds 0 and 2 (24 < 26, 22 < 30), not 1 (29 > 28);
    # twin: 17 - 16 = +1, the sum higher on every seed; gains 28 - 16 = +12 and 25 - 17 = +8
    line = next(x for x in text.splitlines() if x.startswith("| STS-B"))
    assert line == ("| STS-B | 28.00 [26.00-30.00] | 25.00 [22.00-29.00] | -3.00 | 2 of 3 | "
                    "16.00 [15.00-17.00] | 17.00 [16.00-18.00] | +1.00 | 0 of 3 | +12.00 / +8.00 |")
    assert (out / "loss_reduction.md").read_text() == text + "\n"


def test_the_docstring_examples():
    assert doctest.testmod(loss_reduction).failed == 0
