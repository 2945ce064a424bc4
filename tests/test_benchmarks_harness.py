"""The benchmark runner's bookkeeping and the report generator, on synthetic results.

No timing here (speed is measured only by ``make bench``): these tests check that a failed
workload is recorded and turns the run's exit code non-zero without hiding the others, that result
files round-trip, and that the report shows every workload, failures, reference lines labelled as
not measured, and plots that are real PNG files.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# benchmarks/ is a top-level folder of the checkout, not part of the installed package.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import benchmarks.__main__ as runner  # noqa: E402
from benchmarks import plots, report  # noqa: E402
from benchmarks.harness import (  # noqa: E402
    Result,
    format_ratio,
    read_results,
    results_path,
    table,
    write_results,
)


def row(workload: str, size: str, subject_ns: float, baseline_ns: float, **extra: object) -> Result:
    return Result(
        workload=workload,
        size=size,
        subject="index.match",
        baseline="evaluator loop",
        subject_ns=subject_ns,
        baseline_ns=baseline_ns,
        goal="<= 10 µs/msg",
        met=subject_ns <= 10_000,
        extra=dict(extra),
    )


def test_table_shows_ratio_goal_and_failures() -> None:
    text = table(
        [row("W3 selectors", "10k subs", 5_000, 2_500_000)], {"spark": "crashed: boom\nmore"}
    )
    lines = text.splitlines()
    assert lines[0].split() == ["workload", "size", "bitsift", "baseline", "ratio", "goal", "met?"]
    assert "500x" in lines[2] and "5.00 µs" in lines[2] and "2.50 ms" in lines[2]
    assert lines[2].rstrip().endswith("yes")
    assert "FAILED: crashed: boom" in lines[3] and "more" not in lines[3]


@pytest.mark.parametrize(
    ("ratio", "text"), [(1234.4, "1,234x"), (12.34, "12.3x"), (0.85, "0.85x"), (0.0241, "0.024x")]
)
def test_format_ratio(ratio: float, text: str) -> None:
    assert format_ratio(ratio) == text


def test_results_round_trip_with_machine_info(tmp_path: Path) -> None:
    rows = [row("W2 interval", "20k subs", 300_000, 90_000_000, peak_rss_mb=150.5)]
    path = write_results("interval", rows, full=True, seconds=12.34, directory=tmp_path)
    assert path == results_path("interval", True, tmp_path) == tmp_path / "interval.full.json"
    header, back = read_results(path)
    assert back == rows
    assert header["mode"] == "full" and header["error"] is None and header["seconds"] == 12.3
    machine = header["machine"]
    assert machine["cores"] >= 1 and machine["cpu"] and machine["python"].startswith("CPython")
    assert machine["libraries"]["pyroaring"] != "not installed"


def write_module(directory: Path, name: str, body: str) -> None:
    (directory / f"{name}.py").write_text(body)


@pytest.fixture
def fake_workloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two workloads: one that passes, one whose correctness check fails."""
    modules = tmp_path / "modules"
    modules.mkdir()
    write_module(
        modules,
        "fake_good",
        "from benchmarks.harness import Result\n"
        "def run(full):\n"
        "    return [Result('good', 'full' if full else 'quick', 'a', 'b', 1.0, 10.0)]\n",
    )
    write_module(
        modules,
        "fake_bad",
        "def run(full):\n    raise AssertionError('index and reference disagree on m1')\n",
    )
    monkeypatch.syspath_prepend(str(modules))
    monkeypatch.setattr(runner, "WORKLOADS", {"good": "fake_good", "bad": "fake_bad"})

    def in_process(
        name: str, full: bool, directory: Path, timeout: float | None
    ) -> tuple[list[Result], str | None]:
        # The real runner starts a child process, which would not see the patched WORKLOADS.
        runner.run_worker(name, full, directory)
        header, rows = read_results(results_path(name, full, directory))
        return rows, header["error"]

    monkeypatch.setattr(runner, "run_isolated", in_process)
    return tmp_path / "results"


def test_a_failing_workload_fails_the_run_but_the_others_are_reported(
    fake_workloads: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = runner.main(["--results", str(fake_workloads), "bad", "good"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "good" in out and "10.0x" in out
    assert "FAILED" in out and "1 of 2 workloads FAILED" in err
    assert "correctness check failed: index and reference disagree on m1" in err
    header, rows = read_results(fake_workloads / "bad.quick.json")
    assert rows == [] and "correctness check failed" in header["error"]


def test_all_workloads_passing_exit_zero(
    fake_workloads: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert runner.main(["--full", "--results", str(fake_workloads), "good"]) == 0
    assert re.search(r"^good +full ", capsys.readouterr().out, re.MULTILINE)


def test_a_worker_that_dies_without_results_is_a_failure(tmp_path: Path) -> None:
    """The real child-process path: a worker stopped before it wrote anything."""
    rows, failure = runner.run_isolated("parse", False, tmp_path, timeout=0.001)
    assert rows == [] and failure is not None and "timed out" in failure
    header, _ = read_results(tmp_path / "parse.quick.json")
    assert header["error"] == failure


def test_unknown_workload_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        runner.main(["nosuch"])
    assert stopped.value.code == 2
    assert "unknown workload nosuch" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("size", "count"),
    [
        ("20k subs", 20_000),
        ("10,000 filters", 10_000),
        ("100k msgs x 10 subs", 10),
        ("1,000 subs, 10% match", 1_000),
        ("2,000 patterns, 100,000 msgs", 2_000),
        ("ZeroMQ ipc end to end", None),
    ],
)
def test_subscription_count_from_size(size: str, count: int | None) -> None:
    assert plots.subscription_count(Result("w", size, "a", "b", 1, 1)) == count


def synthetic_results(directory: Path) -> None:
    """A results directory as ``make bench`` would leave it, with one failed workload."""
    quick_interval = [row("W2 interval", "20k subs", 9e5, 9e7)]
    write_results("interval", quick_interval, full=False, directory=directory)
    interval = [
        row(
            "W2 interval",
            f"{n}k subs",
            n * 3e4,
            n * 4e6,
            peak_rss_mb=n * 2.0,
            index_bytes_per_subscription=900.0 + n,
        )
        for n in (20, 100)
    ]
    write_results("interval", interval, full=True, directory=directory)
    selectors = [
        row(
            "W3 selectors",
            f"{n}k subs",
            n * 500.0,
            n * 6e4,
            cold_ns_per_message=n * 900.0,
            peak_rss_mb=80.0,
        )
        for n in (1, 10)
    ]
    write_results("selectors", selectors, directory=directory)
    spark = [
        Result(
            "spark",
            f"100k msgs x {n} subs",
            "route()",
            "SQL filters unioned",
            1e4,
            n * 1e3,
            extra={"bitsift_s": 1.0, "baseline_s": n / 10},
        )
        for n in (10, 100, 1_000)
    ]
    write_results("spark", spark, directory=directory)
    filters = [
        Result("filter", f"1,000 subs, {rate}% match", "accepts", "match", 2e3, 6e3)
        for rate in (1, 10, 50)
    ]
    write_results("filter", filters, directory=directory)
    write_results("filter", [], full=True, error="timed out after 60 s", directory=directory)
    extra_spark = [
        Result("spark", "100k msgs x 2000 subs", "route()", "SQL", 1e4, 1e6, extra={"bitsift_s": 2})
    ]
    write_results("spark-100000", extra_spark, directory=directory)
    write_results("mqtt", [], error="crashed: ImportError: paho", directory=directory)
    (directory / "openamq.json").write_text("{}")  # an older layout: ignored


def test_report_from_synthetic_results(tmp_path: Path) -> None:
    results = tmp_path / "results"
    synthetic_results(results)
    output = report.generate(results, tmp_path / "docs" / "performance.md")  # about 5 s: PNGs
    text = output.read_text()
    # The full run wins over the quick one, and the page says which sizes it shows.
    assert "| 100k subs | index.match |" in text and "9.00 µs" not in text
    assert "Sizes: full." in text and "Sizes: quick." in text
    # A failed workload is reported as failed, with its reason, not silently left out.
    assert "## Failed workloads" in text and "crashed: ImportError: paho" in text
    assert "openamq" not in text.split("## Summary")[1].split("## Failed")[0]
    # A failed full run falls back to the quick one, and says so.
    assert "The full run failed (timed out after 60 s); this shows the quick run." in text
    assert "1,000 subs, 50% match" in text
    # A workload's own extra measurement joins its section, marked.
    assert "100k msgs x 2000 subs" in text and "separate run" in text
    assert "## spark-100000" not in text
    assert "No full-size run of this workload is in the results (`spark.full.json`)" in text
    # Published figures are labelled as such.
    assert "REIN" in text and "None of these was measured in our runs" in text
    assert "Memory" in text and "not recorded" in text
    assert ">>>" not in text  # docs/*.md run as doctests
    for name in ("interval", "selectors", "spark", "filter", "memory"):
        image = tmp_path / "docs" / "img" / f"{name}.png"
        assert f"(img/{name}.png)" in text
        assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_without_results_says_what_to_run(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="make bench"):
        report.generate(tmp_path, tmp_path / "performance.md")


def test_report_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only the parse workload, which has no chart: the command itself, without plotting time."""
    parse_row = Result("parse", "200 W3 selectors", "parse (cached)", "parse (cold)", 800, 4e5)
    write_results("parse", [parse_row], directory=tmp_path / "results")
    output = tmp_path / "out.md"
    arguments = [
        "--results",
        str(tmp_path / "results"),
        "--output",
        str(output),
        "--prefer",
        "quick",
    ]
    assert report.main(arguments) == 0
    assert str(output) in capsys.readouterr().out
    assert "| 200 W3 selectors | parse (cached) | 800 ns |" in output.read_text()


def test_a_worker_killed_by_a_signal_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_run = subprocess.run

    def killed(command: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
        if "--worker" not in command:  # git, asked for the results' machine info
            return real_run(command, **options)
        return subprocess.CompletedProcess(command, -9)

    monkeypatch.setattr(subprocess, "run", killed)
    rows, failure = runner.run_isolated("parse", True, tmp_path, timeout=None)
    assert rows == [] and failure is not None and "SIGKILL: out of memory?" in failure
