"""A local cluster (1 master, 3 tablet servers) for the whole pytest session.

BASALT_BIN_DIR names the directory of `basalt` (ctest sets it; default: build/bin of this
checkout); PYTHONPATH must reach the built package (build/python).
"""

import itertools
import os
import shutil
import subprocess
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
BIN_DIR = os.environ.get("BASALT_BIN_DIR",
                         os.path.join(HERE, os.pardir, os.pardir, "build", "bin"))


def _basalt(*args):
    return subprocess.run([os.path.join(BIN_DIR, "basalt"), *args], check=True,
                          capture_output=True, text=True, timeout=120).stdout


@pytest.fixture(scope="session")
def master():
    workdir = tempfile.mkdtemp(prefix="basalt-pytest-")
    try:
        out = _basalt("local", "start", "--dir", workdir)
        addrs = [l.strip() for l in out.splitlines()
                 if l.strip().startswith("127.0.0.1:") and " " not in l.strip()]
        assert addrs, f"no master address printed by basalt local start:\n{out}"
        yield addrs[0]
    finally:
        subprocess.run([os.path.join(BIN_DIR, "basalt"), "local", "destroy", "--dir", workdir],
                       capture_output=True, timeout=120)
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def client(master):
    import basalt
    return basalt.connect(master)


_names = itertools.count()


@pytest.fixture
def table_name(client):
    """A fresh table name. Tables are left to the cluster's destruction (deleting one takes
    seconds, which the suite's time budget cannot spare)."""
    return f"pytest_{next(_names)}"
