"""The README's Python examples and the scripts in python/examples run as written."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def readme_python_blocks():
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_readme_has_python_examples():
    blocks = readme_python_blocks()
    assert len(blocks) >= 5, "the README's Python section lost its examples"
    names = " ".join(blocks)
    for engine in ("pyarrow", "polars", "duckdb"):
        assert engine in names


@pytest.mark.parametrize("index", range(len(readme_python_blocks())))
def test_readme_example_runs(index, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    exec(compile(readme_python_blocks()[index], f"README.md python block {index}", "exec"), {})
    assert capsys.readouterr().out.strip(), "each example prints what it made"


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "python" / "examples").glob("*.py")))
def test_example_script_runs(script, tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "python" / "examples" / script), str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip()
