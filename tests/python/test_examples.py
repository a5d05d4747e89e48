"""examples/ run as written (issue 30 §15): each script names the interpreter the README uses,
/usr/bin/python3 (Debian's, with torch 1.13) — `#!/usr/bin/env python3` picked whatever `python3`
came first on PATH, on such machines one without torch — and is executable. The shebang's
interpreter must import torch (skipped where the machine has no torch at all)."""
from __future__ import annotations

import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent.parent
SCRIPTS = sorted((REPO / "examples").glob("*.py")) + [REPO / "data" / "report" / "stoker_report.py"]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_shebang_names_the_readme_interpreter(script):
    first = script.read_text().splitlines()[0]
    assert first == "#!/usr/bin/python3", f"{script}: {first}"
    if script.parent.name == "examples":
        assert os.access(script, os.X_OK), f"{script} is not executable"


def test_that_interpreter_has_torch():
    if not os.path.exists("/usr/bin/python3"):
        pytest.skip("no /usr/bin/python3 here")
    r = subprocess.run(["/usr/bin/python3", "-c", "import torch; print(torch.__version__)"],
                       capture_output=True, text=True, timeout=120)
    if "No module named 'torch'" in r.stderr:
        pytest.skip("torch is not installed for /usr/bin/python3 on this machine")
    assert r.returncode == 0, r.stderr
