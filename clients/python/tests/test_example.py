"""examples/own_scheduler_loop.py end to end against a real ``arbiter serve``."""

import os
import re
import subprocess
import sys
import unittest

from server_fixture import CLIENT_ROOT, CLIENT_SRC, Server

from arbiter_client import Client

EXAMPLE = CLIENT_ROOT / "examples" / "own_scheduler_loop.py"

SERVER = None


def setUpModule():
    global SERVER
    SERVER = Server()


def tearDownModule():
    if SERVER is not None:
        SERVER.stop()


def run_example(*args, **env_overrides):
    env = dict(os.environ, PYTHONPATH=str(CLIENT_SRC), **env_overrides)
    env.pop("ARBITER_TOKEN", None)
    return subprocess.run([sys.executable, str(EXAMPLE), *args], env=env, capture_output=True, text=True, timeout=120)


class OwnSchedulerLoop(unittest.TestCase):
    def check_run(self, done):
        self.assertEqual(done.returncode, 0, done.stderr)
        out = done.stdout
        match = re.search(r"^session (\S+): 3 jobs under max_min_fairness$", out, re.M)
        self.assertIsNotNone(match, out)
        self.assertIn("added bert-x2", out)
        self.assertEqual(re.findall(r"^round (\d+): ", out, re.M), ["0", "1", "2"], out)
        finished = re.findall(r"^  (\S+) finished and was removed$", out, re.M)
        self.assertIn("a3c", finished, out)
        session = Client(SERVER.url).get_session(match.group(1))
        self.assertEqual(session.rounds, 3)
        self.assertEqual(session.metrics.completed_jobs, len(finished))
        active = sorted(j.id for j in session.jobs)
        self.assertEqual(active, sorted({"resnet50", "a3c", "transformer", "bert-x2"} - set(finished)))
        self.assertIn(f"after 3 rounds: {len(active)} jobs active, {len(finished)} completed", out)
        for job in session.jobs:
            self.assertLess(job.steps_remaining, {"resnet50": 9000, "transformer": 6000, "bert-x2": 20000}[job.id])
            self.assertIn(f"  {job.id}: {job.steps_remaining:.0f} steps left", out)

    def test_with_the_url_as_an_argument(self):
        self.check_run(run_example(SERVER.url))

    def test_with_the_url_in_the_environment(self):
        self.check_run(run_example(ARBITER_URL=SERVER.url))

    def test_a_server_that_is_not_there_is_a_clear_error(self):
        done = run_example("http://127.0.0.1:9")
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("ArbiterConnectionError", done.stderr)
        self.assertIn("connection refused", done.stderr)


if __name__ == "__main__":
    unittest.main()
