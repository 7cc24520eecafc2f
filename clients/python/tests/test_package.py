"""The package installs with pip, offline, and imports from where it was installed.

pip builds it with setuptools (``pyproject.toml``) without build isolation and without an index,
so nothing is downloaded: that needs an interpreter with setuptools 61 or later and either the
``wheel`` package or setuptools 70.1 or later. The test uses the interpreter running it, or else
``/usr/bin/python3``; when neither can build offline it is skipped and says why.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from server_fixture import CLIENT_ROOT

from arbiter_client import VERSION

PROBE = """
import sys
ok = sys.version_info >= (3, 9)
try:
    import setuptools
    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    ok = ok and (major, minor) >= (61, 0)
    try:
        import wheel  # noqa: F401
    except ImportError:
        ok = ok and (major, minor) >= (70, 1)
except ImportError:
    ok = False
print("yes" if ok else "no")
"""


def offline_builder():
    """An interpreter that can build and install the package without downloading anything."""
    for candidate in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
        if not Path(candidate).is_file():
            continue
        probe = subprocess.run([candidate, "-c", PROBE], capture_output=True, text=True)
        pip = subprocess.run([candidate, "-m", "pip", "--version"], capture_output=True, text=True)
        if probe.stdout.strip() == "yes" and pip.returncode == 0:
            return candidate
    return None


class Package(unittest.TestCase):
    def test_pip_installs_it_offline_and_it_imports_from_there(self):
        python = offline_builder()
        if python is None:
            self.skipTest("no interpreter here can build offline: it needs setuptools>=61 and wheel "
                          "(python3 -m pip install wheel); the package itself is not at fault")
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / "source"
            skip = shutil.ignore_patterns("tests", "__pycache__", "*.egg-info", "build")
            shutil.copytree(CLIENT_ROOT, source, ignore=skip)
            target = Path(tmp) / "site"
            env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
            env.pop("PYTHONPATH", None)
            done = subprocess.run(
                [python, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps", "--quiet",
                 "--target", str(target), str(source)],
                capture_output=True, text=True, env=env, timeout=300,
            )
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            self.assertTrue((target / "arbiter_client" / "py.typed").is_file(), "py.typed is installed")
            check = (
                "import arbiter_client, importlib.metadata as m;"
                "print(arbiter_client.__file__);"
                "print(arbiter_client.__version__, m.version('arbiter-client'));"
                "print(arbiter_client.Client, arbiter_client.AsyncClient, len(arbiter_client.ALL_MODELS))"
            )
            ran = subprocess.run([python, "-I", "-c", f"import sys; sys.path.insert(0, {str(target)!r}); {check}"],
                                 capture_output=True, text=True, cwd=tmp, env=env)
            self.assertEqual(ran.returncode, 0, ran.stderr)
            lines = ran.stdout.splitlines()
            self.assertTrue(lines[0].startswith(str(target)), lines[0])
            self.assertEqual(lines[1], f"{VERSION} {VERSION}")


if __name__ == "__main__":
    unittest.main()
