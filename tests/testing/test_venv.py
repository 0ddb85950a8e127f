"""The Python tests' packages from PyPI (numpy, onnxruntime, grpcio, grpcio-tools) live in
build/test-venv, which scripts/setup.sh makes for the tests, never in the system's Python. A
test imports them in a try block and calls run_in_test_venv_or_skip on ImportError."""
import os
import sys


def run_in_test_venv_or_skip(hint):
    """Runs this test again with $TESSERA_TEST_VENV's Python, unless it is that Python already;
    else prints "SKIP: <hint>" and exits 77 (CTest's skip code)."""
    venv = os.environ.get("TESSERA_TEST_VENV", "")
    venv_python = os.path.join(venv, "bin", "python")
    # A venv's python is a link to the same binary: the venv is told apart by sys.prefix.
    if venv and os.path.exists(venv_python) and \
            os.path.realpath(sys.prefix) != os.path.realpath(venv):
        os.execv(venv_python, [venv_python] + sys.argv)
    print("SKIP: " + hint)
    sys.exit(77)
