"""``bitsift filter``: standard input in process; UDP and ZeroMQ through a real subprocess.

Every wait on the subprocess is bounded (``select`` with a deadline, ``communicate`` with a
timeout), and the subprocess is killed if a test fails, so no test can hang.
"""

from __future__ import annotations

import io
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bitsift.cli import SUBCOMMANDS, main
from bitsift.models import Subscription
from bitsift.samples import w3_messages, w3_subscriptions
from bitsift.subscription_files import save_subscriptions

TIMEOUT = 20.0
CONTROL = "control.probe"
SUMMARY = "pass through only the messages some local subscription wants"
# The dispatcher lists its subcommands in bitsift/cli/__init__.py; until "filter" is listed there,
# these tests list it themselves (setdefault: a no-op once it is).
_LAUNCH = (
    "import sys; from bitsift.cli import SUBCOMMANDS, main; "
    f"SUBCOMMANDS.setdefault('filter', {SUMMARY!r}); sys.exit(main())"
)


@pytest.fixture(autouse=True)
def filter_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    if "filter" not in SUBCOMMANDS:
        monkeypatch.setitem(SUBCOMMANDS, "filter", SUMMARY)


@pytest.fixture
def subscription_file(tmp_path: Path) -> tuple[Path, list[Subscription]]:
    subscriptions = [
        *w3_subscriptions(150, seed=21),
        Subscription(id="control", topic="control.#"),
    ]
    path = tmp_path / "subscriptions.json"
    save_subscriptions(subscriptions, path)
    return path, subscriptions


def _wanted(subscriptions: list[Subscription], topic: str | None, properties: Any) -> bool:
    return any(subscription.matches(properties, topic) for subscription in subscriptions)


def _run_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], data: bytes, *args: str
) -> tuple[int, list[str], str]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    status = main(["filter", *args])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def test_stdin_passes_exactly_the_wanted_lines(
    subscription_file: tuple[Path, list[Subscription]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path, subscriptions = subscription_file
    lines = [
        json.dumps({"topic": topic, "properties": properties}, ensure_ascii=False)
        for topic, properties in w3_messages(400, seed=22)
    ]
    expected = [line for line in lines if _wanted(subscriptions, **json.loads(line))]
    assert 0 < len(expected) < len(lines)
    status, out, err = _run_stdin(
        monkeypatch, capsys, ("\n".join(lines) + "\n").encode(), "-s", str(path)
    )
    assert status == 0
    assert out == expected
    assert f"seen {len(lines)}, accepted {len(expected)}" in err
    assert "malformed 0" in err


def test_stdin_counts_and_logs_malformed_lines(
    subscription_file: tuple[Path, list[Subscription]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path, _ = subscription_file
    good = json.dumps({"topic": "control.x", "properties": {}})
    data = "\n".join(
        [
            good,
            "{not json",
            "[1]",
            '{"topic": 1}',
            "x" * 5000,  # over --max-message-bytes below
            "",
            good,
        ]
    ).encode()
    status, out, err = _run_stdin(
        monkeypatch, capsys, data + b"\n", "-s", str(path), "--max-message-bytes", "4096"
    )
    assert status == 1  # a bad feed is noticed
    assert out == [good, good]  # the good line after the bad ones still gets through
    assert "seen 6, accepted 2, dropped 0, malformed 4" in err
    assert "bad JSON: 1" in err and "oversize: 1" in err and "wrong shape: 2" in err
    assert "line 2:" in err  # the log names the line


def test_bad_options_are_one_line_errors(
    subscription_file: tuple[Path, list[Subscription]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = subscription_file
    assert main(["filter", "-s", str(path), "--udp", "nonsense"]) == 2
    assert "HOST:PORT" in capsys.readouterr().err
    assert main(["filter", "-s", str(path), "--bind"]) == 2
    assert "--bind goes with --zmq" in capsys.readouterr().err
    assert main(["filter", "-s", str(path / "missing.json")]) == 2


# -- subprocesses --------------------------------------------------------------------------------


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=TIMEOUT)


def _start(processes: list[subprocess.Popen[bytes]], *args: str) -> subprocess.Popen[bytes]:
    environment = dict(os.environ, PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        [sys.executable, "-c", _LAUNCH, "filter", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment,
    )
    processes.append(process)
    return process


def _read_line(stream: Any, deadline: float) -> bytes:
    """One line from a pipe, waiting at most until ``deadline``."""
    line = b""
    while not line.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no complete line before the deadline (got {line!r})"
        ready, _, _ = select.select([stream], [], [], remaining)
        if ready:
            byte = os.read(stream.fileno(), 1)
            assert byte, f"the process closed the pipe (got {line!r})"
            line += byte
    return line


def test_udp_subprocess(
    subscription_file: tuple[Path, list[Subscription]],
    processes: list[subprocess.Popen[bytes]],
) -> None:
    path, subscriptions = subscription_file
    stream = list(w3_messages(150, seed=23))
    junk = [b"{oops", b"[]"]
    total = len(stream) + len(junk)
    process = _start(processes, "-s", str(path), "--udp", "127.0.0.1:0", "--count", str(total))
    deadline = time.monotonic() + TIMEOUT
    while True:
        line = _read_line(process.stderr, deadline).decode()
        if "listening on" in line:
            port = int(line.rsplit(":", 1)[1])
            break
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for number, (topic, properties) in enumerate(stream):
            record = {"topic": topic, "properties": properties}
            sender.sendto(json.dumps(record).encode(), ("127.0.0.1", port))
            if number in (10, 100):
                sender.sendto(junk[number // 100], ("127.0.0.1", port))
            if number % 25 == 0:
                time.sleep(0.01)  # loopback UDP drops when the socket buffer overflows
    finally:
        sender.close()
    out, err = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 1, err.decode()  # malformed datagrams were seen
    received = [json.loads(line) for line in out.decode().splitlines()]
    expected = [
        {"topic": topic, "properties": properties}
        for topic, properties in stream
        if _wanted(subscriptions, topic, properties)
    ]
    assert received == expected
    assert f"seen {total}, accepted {len(expected)}" in err.decode()
    assert "malformed 2" in err.decode()


def test_zmq_subprocess(
    subscription_file: tuple[Path, list[Subscription]],
    processes: list[subprocess.Popen[bytes]],
) -> None:
    zmq = pytest.importorskip("zmq")
    path, subscriptions = subscription_file
    context = zmq.Context()
    publisher = context.socket(zmq.PUB)
    publisher.setsockopt(zmq.LINGER, 0)
    publisher.bind("tcp://127.0.0.1:*")
    endpoint = publisher.getsockopt(zmq.LAST_ENDPOINT).decode()
    try:
        process = _start(processes, "-s", str(path), "--zmq", endpoint, "--stats", "0.2")
        stdout = process.stdout
        assert stdout is not None

        def control(kind: str) -> list[bytes]:
            return [CONTROL.encode(), json.dumps({"control": kind}).encode(), b""]

        def read_until(kind: str, probing: bool = False) -> list[Any]:
            lines: list[Any] = []
            deadline = time.monotonic() + TIMEOUT
            while True:
                if probing:
                    publisher.send_multipart(control("probe"))
                    ready, _, _ = select.select([stdout], [], [], 0.05)
                    assert time.monotonic() < deadline, "the subscriber never joined"
                    if not ready:
                        continue
                record = json.loads(_read_line(stdout, deadline))
                if record["topic"] == CONTROL:
                    if probing or record["properties"]["control"] == kind:
                        return lines
                    continue
                lines.append(record)

        read_until("probe", probing=True)  # the slow joiner has joined
        publisher.send_multipart(control("sync"))
        read_until("sync")
        stream = list(w3_messages(150, seed=24))
        for number, (topic, properties) in enumerate(stream):
            publisher.send_multipart(
                [topic.encode(), json.dumps(properties).encode(), b"\x01%d" % number]
            )
        publisher.send_multipart(control("end"))
        received = read_until("end")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=TIMEOUT)
    finally:
        publisher.close()
        context.term()
    expected = [
        (number, topic, properties)
        for number, (topic, properties) in enumerate(stream)
        if _wanted(subscriptions, topic, properties)
    ]
    assert [(r["topic"], r["properties"]) for r in received] == [(t, p) for _, t, p in expected]
    import base64

    assert [base64.b64decode(r["body_base64"]) for r in received] == [
        b"\x01%d" % number for number, _, _ in expected
    ]
    text = err.decode()
    assert "connected to" in text and "- done" in text and "interrupted" in text
