"""Starting Spark for bitsift: a Java check with a useful message, and a quiet local session.

Spark needs a Java runtime (17 or newer for Spark 4). Without one, pyspark fails with a long
``JAVA_GATEWAY_EXITED`` traceback that does not say what to install; :func:`require_java` says it
instead. :func:`local_session` starts (or reuses) a session tuned for one machine: no web UI, few
shuffle partitions, Arrow batches of 10,000 rows, executors on this same Python, and only errors
in the log.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from bitsift.errors import BitsiftError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["JavaMissingError", "java_version", "require_java", "local_session", "main"]

MINIMUM_JAVA = 17
INSTALL_HINT = (
    "install a Java 17+ runtime, for example:\n"
    "    Debian/Ubuntu:  sudo apt-get install openjdk-17-jre-headless\n"
    "    Fedora/RHEL:    sudo dnf install java-17-openjdk-headless\n"
    "    macOS:          brew install openjdk@17\n"
    "or point JAVA_HOME at an existing Java 17+ installation."
)
_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
"""


class JavaMissingError(BitsiftError, RuntimeError):
    """No usable Java runtime for Spark."""


def _java_command() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if candidate.exists() else None
    return shutil.which("java")


def java_version() -> int | None:
    """The major version of the Java that Spark would use, or None when there is none."""
    command = _java_command()
    if command is None:
        return None
    try:
        result = subprocess.run(
            [command, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', result.stderr + result.stdout)
    if match is None:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0_392" is Java 8
        major = int(match.group(2))
    return major


def require_java() -> int:
    """Return the Java major version, or raise :class:`JavaMissingError` saying what to do."""
    version = java_version()
    where = os.environ.get("JAVA_HOME")
    if version is None:
        place = f"JAVA_HOME={where} has no working bin/java" if where else "no `java` on PATH"
        raise JavaMissingError(
            f"Spark needs Java {MINIMUM_JAVA} or newer, but {place}; {INSTALL_HINT}"
        )
    if version < MINIMUM_JAVA:
        raise JavaMissingError(
            f"Spark needs Java {MINIMUM_JAVA} or newer, but found Java {version}; {INSTALL_HINT}"
        )
    return version


def local_session(
    master: str | None = "local[2]",
    *,
    app_name: str = "bitsift",
    shuffle_partitions: int = 4,
    progress: bool = False,
) -> SparkSession:
    """A Spark session for this machine (or the cluster ``master`` names); reused if one is up.

    ``master=None`` leaves the master to ``spark-submit`` (or Spark's default, ``local[*]``).
    """
    require_java()
    from pyspark.sql import SparkSession

    # Executors must run this same Python, with bitsift importable.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    log_config = Path(tempfile.gettempdir()) / f"bitsift-log4j2-{os.getuid()}.properties"
    if not log_config.exists() or log_config.read_text() != _LOG4J:
        log_config.write_text(_LOG4J)
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    java_options = f"-Dlog4j2.configurationFile=file:{log_config}"
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "true" if progress else "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
        "spark.python.worker.reuse": "true",
        "spark.driver.extraJavaOptions": java_options,
        "spark.executor.extraJavaOptions": java_options,
        "spark.sql.session.timeZone": "UTC",
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def main(argv: list[str] | None = None) -> int:
    """``python -m bitsift.pipeline [--warn]``: the Makefile's Java check.

    Exit 0 and print the version when Java 17+ is there; otherwise print what to install and
    exit 1, or with ``--warn`` exit 0 (the Spark tests then skip themselves).
    """
    arguments = sys.argv[1:] if argv is None else argv
    try:
        version = require_java()
    except JavaMissingError as error:
        if "--warn" in arguments:
            print(f"note: the Spark tests will be skipped: {error}", file=sys.stderr)
            return 0
        print(f"bitsift: {error}", file=sys.stderr)
        return 1
    if "--warn" not in arguments:
        print(f"Java {version} found; Spark can run.", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
