"""The CLI (and everything but tuitrain/engine/) must start without the heavy ML stack."""

import ast
import subprocess
import sys
from pathlib import Path

HEAVY = {"torch", "transformers", "datasets", "evaluate", "accelerate"}
PACKAGE = Path(__file__).resolve().parents[1] / "tuitrain"


def test_no_module_outside_engine_imports_the_ml_stack():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if "engine" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
            offenders += [f"{path}:{node.lineno} {n}" for n in names if n.split(".")[0] in HEAVY]
    assert offenders == []


def test_cli_commands_load_without_the_ml_stack(tmp_path):
    code = (
        "import sys, contextlib, io\n"
        "from tuitrain.cli import main\n"
        "for argv in (['--help'], ['runs'], ['plan', 'demo'], ['validate', 'demo']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        try:\n"
        "            main(argv + (['--runs-dir', sys.argv[1]] if argv[0] != '--help' else []))\n"
        "        except SystemExit:\n"
        "            pass\n"
        f"loaded = sorted(set({sorted(HEAVY)!r}) & set(m.split('.')[0] for m in sys.modules))\n"
        "print(loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr


def test_plan_loads_no_yaml_psutil_nor_pynvml_without_a_driver(tmp_path):
    """What keeps `tuitrain plan` under its 0.3 s figure: the accelerate YAML is written by
    tuitrain.yaml_text, the host is read from /proc, and without libnvidia-ml pynvml stays unloaded."""
    import ctypes

    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        pass
    else:
        import pytest

        pytest.skip("this machine has an NVIDIA driver: plan rightly loads pynvml")
    fixture = Path(__file__).parent / "fixtures" / "accelerate" / "fsdp.toml"
    code = (
        "import sys, contextlib, io\n"
        "from tuitrain.cli import main\n"
        "for argv in (['plan', 'demo'], ['plan', sys.argv[2]]):\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "        main(argv + ['--runs-dir', sys.argv[1]])\n"
        "print(sorted({'yaml', 'psutil', 'pynvml', 'importlib.metadata'} & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path), str(fixture)], capture_output=True, text=True,
                         cwd=tmp_path, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr
