# SPDX-License-Identifier: Apache-2.0
"""The README's Python and torch examples run as written: each ```python
block whose first line is "# NAME.py: ..." is saved as NAME.py, and the
```sh line that runs it (PYTHONPATH=python ... NAME.py) runs in a folder
where python/ is this checkout's."""
import os
import re
import shlex
import subprocess

import pytest

from conftest import PYDIR, REPO, env


def examples(path):
    text = open(path).read()
    blocks = re.findall(r"```(\w+)\n(.*?)```", text, re.S)
    out = []
    for i, (lang, body) in enumerate(blocks):
        m = re.match(r"# (\w+\.py): ", body)
        if lang != "python" or not m:
            continue
        name = m.group(1)
        for lang2, body2 in blocks[i + 1:]:
            lines = [ln for ln in body2.splitlines()
                     if lang2 == "sh" and ln.endswith(name) or
                     (lang2 == "sh" and (" %s " % name) in ln + " ")]
            if lines:
                out.append((name, body, lines[0].split("#")[0].strip()))
                break
    return out


CASES = examples(os.path.join(REPO, "README.md"))


def test_readme_has_examples():
    assert [c[0] for c in CASES] == ["hello_hccl.py", "ddp_hccl.py"], CASES


@pytest.mark.parametrize("name,code,cmd", CASES, ids=[c[0] for c in CASES])
def test_readme_example(tmp_path, name, code, cmd):
    (tmp_path / name).write_text(code)
    os.symlink(PYDIR, tmp_path / "python")
    argv = shlex.split(cmd)
    assigns = {}
    while "=" in argv[0]:
        k, v = argv.pop(0).split("=", 1)
        assigns[k] = v
    e = env(assigns)
    e["PYTHONPATH"] = assigns.get("PYTHONPATH", "")
    r = subprocess.run(argv, cwd=tmp_path, env=e, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    n = int(argv[argv.index("-n") + 1])
    if name == "hello_hccl.py":
        for rank in range(n):
            assert "rank %d of %d: [10. 10. 10. 10.]" % (rank, n) in \
                r.stdout, r.stdout
    else:
        losses = re.findall(r"rank (\d): loss (\d+\.\d+)", r.stdout)
        assert sorted(x[0] for x in losses) == [str(k) for k in range(n)]
        assert all(float(x[1]) < 1.0 for x in losses), losses


def test_python_readme_example(tmp_path):
    text = open(os.path.join(PYDIR, "README.md")).read()
    code = re.search(r"cat > hello.py <<'EOF'\n(.*?)\nEOF\n", text,
                     re.S).group(1)
    cmd = re.search(r"\n(PYTHONPATH=python \S+ -m hccl.run -n 4 hello.py)",
                    text).group(1)
    (tmp_path / "hello.py").write_text(code)
    os.symlink(PYDIR, tmp_path / "python")
    e = env()
    e["PYTHONPATH"] = "python"
    r = subprocess.run(shlex.split(cmd)[1:], cwd=tmp_path, env=e,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(": [10. 10. 10. 10.]") == 4, r.stdout
