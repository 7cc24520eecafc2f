"""Starts a real ``arbiter serve`` for the tests, and puts the client's source on the path.

The binary is ``$ARBITER_BIN`` when set (a missing file is then an error), otherwise
``target/release/arbiter`` under the repository root (when it is missing the tests that need a
server are skipped, saying how to build it). Each server listens on a free loopback port
(``--addr 127.0.0.1:0``, the bound address read from its first line of output) with its own
database in a temporary directory (or the one given), without the demo session unless asked.
With a :class:`TokenFile` it serves with ``--tokens``; the file's tokens are made by the binary
itself (``arbiter token create``).
"""

import math
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from typing import List, Optional

REPO = Path(__file__).resolve().parents[3]
CLIENT_ROOT = REPO / "clients" / "python"
CLIENT_SRC = CLIENT_ROOT / "src"
if str(CLIENT_SRC) not in sys.path:
    sys.path.insert(0, str(CLIENT_SRC))

_LISTENING = re.compile(r"listening on (http://\S+)")
START_SECONDS = 60.0


def arbiter_bin() -> Path:
    """The server binary; ``unittest.SkipTest`` when the default one was never built."""
    configured = os.environ.get("ARBITER_BIN")
    if configured:
        path = Path(configured)
        if not path.is_file():
            raise FileNotFoundError(f"ARBITER_BIN={configured} is not a file")
        return path
    path = REPO / "target" / "release" / "arbiter"
    if not path.is_file():
        raise unittest.SkipTest(
            f"no server binary at {path}: build it (cargo build --release) or set ARBITER_BIN"
        )
    return path


def _environment() -> dict:
    # The binary reads ARBITER_* variables as flag defaults: only the flags given count here.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARBITER_")}
    env["ARBITER_LOG"] = "warn"
    return env


class TokenFile:
    """A token file in a temporary directory, written by ``arbiter token``. Remove it with
    :meth:`cleanup`."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="arbiter-client-tokens-")
        self.path = Path(self._dir.name) / "tokens.json"

    def _run(self, *args: str) -> str:
        command = [str(arbiter_bin()), "token", *args]
        done = subprocess.run(command, capture_output=True, env=_environment(), timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.decode(errors='replace')}")
        return done.stdout.decode("utf-8").strip()

    def create(self, tenant: str, scopes: List[str], token_id: str) -> str:
        """``arbiter token create``: a new token with these scopes for ``tenant``; returns it."""
        token = self._run("create", "--file", str(self.path), "--tenant", tenant, "--scope", ",".join(scopes),
                          "--id", token_id)
        if not token.startswith("arb_") or "\n" in token:
            raise RuntimeError(f"arbiter token create printed {token!r}, not one token")
        return token

    def revoke(self, token_id: str) -> None:
        """``arbiter token revoke``: a running server refuses the token within about a second."""
        self._run("revoke", "--file", str(self.path), token_id)

    def cleanup(self) -> None:
        self._dir.cleanup()


class Server:
    """A running ``arbiter serve``; ``url`` is its base URL. Stop it with :meth:`stop`.

    ``tokens`` serves with ``--tokens`` (its file); ``db`` serves that database file, which
    :meth:`stop` then leaves in place (by default the database is a new file, removed at stop).
    """

    def __init__(
        self, *flags: str, demo: bool = False, tokens: Optional[TokenFile] = None, db: Optional[Path] = None
    ) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="arbiter-client-test-")
        self.db = Path(db) if db is not None else Path(self._dir.name) / "arbiter.db"
        self._log_path = Path(self._dir.name) / "server.log"
        self._log = open(self._log_path, "wb")
        command: List[str] = [str(arbiter_bin()), "serve", "--addr", "127.0.0.1:0", "--db", str(self.db)]
        if not demo:
            command.append("--no-demo")
        if tokens is not None:
            command.extend(["--tokens", str(tokens.path)])
        command.extend(flags)
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self._log, env=_environment())
        lines: "queue.Queue[Optional[str]]" = queue.Queue()
        threading.Thread(target=self._drain, args=(lines,), daemon=True).start()
        self.url = self._wait_for_address(lines)

    def _drain(self, lines: "queue.Queue[Optional[str]]") -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            lines.put(raw.decode("utf-8", errors="replace"))
        lines.put(None)

    def _wait_for_address(self, lines: "queue.Queue[Optional[str]]") -> str:
        deadline = time.monotonic() + START_SECONDS
        seen = []
        while True:
            left = deadline - time.monotonic()
            try:
                line = lines.get(timeout=max(left, 0.01))
            except queue.Empty:
                self.stop()
                raise RuntimeError(f"the server printed no address within {START_SECONDS} s: {seen} {self.log()}")
            if line is None:
                self.stop()
                raise RuntimeError(f"the server exited before listening: {seen} {self.log()}")
            seen.append(line)
            match = _LISTENING.search(line)
            if match:
                return match.group(1)

    def log(self) -> str:
        """What the server wrote on standard error so far."""
        self._log.flush()
        return self._log_path.read_text(errors="replace")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s; removes the database unless it was given."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._log.close()
        self._dir.cleanup()


def demo_request() -> dict:
    """The contract's demo request (``fixtures/demo.json``): 16 GPUs of three types, eight jobs."""
    import json

    return json.loads((REPO / "fixtures" / "demo.json").read_text())


def synthetic_reference(types="abcdef", job_types=10):
    """A reference table in Gavel's format whose log-throughputs have rank 2 (as the server's
    own estimator tests build theirs)."""

    def log_rate(i, w):
        return 1 + 0.2 * w + 0.1 * i + math.sin(i * 0.37) * math.cos(w * 0.5) + math.cos(i * 0.91) * math.sin(w * 0.3)

    return {
        t: {f"('job{i}', 1)": {"null": math.exp(log_rate(i, w))} for i in range(job_types)}
        for w, t in enumerate(types)
    }
