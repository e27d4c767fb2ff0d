"""Script mode without a run: [script] validation (one line each, naming file, key and fix), the
plan's exact command, the rank-side hook's start-up rules, and the report API outside a run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import check_clean, cli
from tuitrain.launch.script import SITE_DIR, resume_args, script_program
from tuitrain.profile import validate_profile
from tuitrain.script.boot import is_launcher, is_rank, one_line, program

CPU = '[hardware]\naccelerator = "cpu"\n'


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def problems(data: dict, base_dir: Path) -> dict[str, str]:
    return {p.key: f"{p.message} | {p.fix}" for p in validate_profile(data, "p.toml", base_dir) if p.severity == "error"}


def test_each_script_mistake_is_one_line_naming_file_key_and_fix(tmp_path, runs_dir):
    profile = write(tmp_path / "proj", "bad.toml", '[script]\npath = "nope.py"\nmodule = "pkg.train"\nargs = "--epochs 3"\n'
                    '\n[model]\nname_or_path = "bert-base-uncased"\n' + CPU)
    text = check_clean(cli("validate", str(profile), runs_dir=runs_dir))
    lines = [line for line in text.splitlines() if line.strip()]
    by_key = {key: [line for line in lines if f": {key}: " in line] for key in ("script", "script.path", "script.args", "model")}
    assert len(lines) == 5 and lines[-1] == "4 error(s)"
    missing = by_key["script.path"]
    assert len(missing) == 1 and "no such file" in missing[0] and str(tmp_path / "proj" / "nope.py") in missing[0]
    assert "relative paths start from the profile's folder" in missing[0] and str(profile) in missing[0]
    assert len(by_key["script"]) == 1 and "both script.path and script.module" in by_key["script"][0]
    assert len(by_key["script.args"]) == 1 and "expected a list of strings" in by_key["script.args"][0]
    assert 'args = ["--epochs", "3"]' in by_key["script.args"][0]
    assert len(by_key["model"]) == 1 and "remove the [model] section" in by_key["model"][0]


def test_script_rules(tmp_path):
    (tmp_path / "train.py").write_text("print('hi')\n")
    assert problems({"script": {"path": "train.py"}}, tmp_path) == {}
    assert problems({"script": {"module": "pkg.train", "args": ["--x", "1"]}}, tmp_path) == {}
    found = problems({"script": {}}, tmp_path)
    assert "neither script.path nor script.module" in found["script"]
    found = problems({"script": {"path": "."}}, tmp_path)
    assert "is a folder, not a file" in found["script.path"]
    found = problems({"script": {"module": "pkg/train.py"}}, tmp_path)
    assert "not a module name" in found["script.module"]
    found = problems({"script": {"path": "train.py", "workdir": "missing"}}, tmp_path)
    assert "no such folder" in found["script.workdir"]
    found = problems({"script": {"path": "train.py", "resume_arg": "resume"}}, tmp_path)
    assert "not an option name" in found["script.resume_arg"]
    found = problems({"script": {"path": "train.py"}, "training": {"max_steps": 3}, "data": {"generate": "sentiment-words"}},
                     tmp_path)
    assert set(found) == {"training", "data"}
    warned = [p for p in validate_profile({"script": {"path": "train.py"}, "run": {"output_dir": "out"}}, "p.toml", tmp_path)
              if p.key == "run.output_dir"]
    assert len(warned) == 1 and warned[0].severity == "warning"


def test_plan_shows_the_exact_command_in_the_profile_folder(tmp_path, runs_dir):
    folder = tmp_path / "proj"
    write(folder, "train.py", "print('hi')\n")
    profile = write(folder, "mine.toml", '[script]\npath = "train.py"\nargs = ["--lr", "1e-3", "two words"]\n' + CPU)
    result = cli("plan", str(profile), "--json", runs_dir=runs_dir, cwd=tmp_path)  # started elsewhere: paths are the profile's
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    script = str(folder / "train.py")
    assert plan["argv"][1:3] == ["-m", "tuitrain.engine.direct_launch"]  # one process: its rank is started directly
    assert plan["argv"][-4:] == [script, "--lr", "1e-3", "two words"]
    assert "tuitrain.engine" not in plan["argv"]
    assert plan["cwd"] == str(folder)
    assert plan["env"]["PYTHONPATH"].split(os.pathsep)[0] == str(SITE_DIR)
    assert plan["env"]["TUITRAIN_SCRIPT"] == script
    assert plan["command"].startswith(f"cd {folder} && ")
    assert "accelerate launch --config_file" in plan["command"] and plan["command"].endswith(f"{script} --lr 1e-3 'two words'")

    module = write(folder, "mod.toml", '[script]\nmodule = "pkg.train"\nworkdir = "."\n' + CPU)
    plan = json.loads(cli("plan", str(module), "--json", runs_dir=runs_dir).stdout)
    assert plan["argv"][-2:] == ["-m", "pkg.train"] and plan["cwd"] == str(folder)


def test_engine_profiles_plan_as_before(runs_dir):
    plan = json.loads(cli("plan", "demo", "--json", runs_dir=runs_dir).stdout)
    assert plan["argv"][-3:-1] == ["-m", "tuitrain.engine"] and plan["cwd"] is None
    assert "TUITRAIN_SCRIPT" not in plan["env"] and "PYTHONPATH" not in plan["env"]


def test_resume_is_passed_the_way_the_script_takes_it():
    script = {"path": "/p/train.py", "args": ["--a", "1"], "resume_arg": "--resume_from_checkpoint"}
    assert script_program(script, "/o/checkpoint-4") == ["/p/train.py", "--a", "1", "--resume_from_checkpoint", "/o/checkpoint-4"]
    assert resume_args({"resume_arg": "--resume="}, "/o/checkpoint-4") == ["--resume=/o/checkpoint-4"]
    assert script_program({"module": "pkg.train"}) == ["-m", "pkg.train"]


def test_which_interpreters_are_ranks():
    env = {"TUITRAIN_SCRIPT": "/p/train.py", "TUITRAIN_RUN_DIR": "/r/run"}
    rank = ["/venv/bin/python", "-u", "/p/train.py", "--x"]
    launcher = ["/venv/bin/python", "-m", "accelerate.commands.launch", "--config_file", "c.yaml", "/p/train.py"]
    assert program(rank) == "/p/train.py" and program(launcher) == "-m accelerate.commands.launch"
    assert program(["python", "-X", "importtime", "-m", "pkg.train"]) == "-m pkg.train"
    assert is_launcher(launcher) and is_launcher(["/venv/bin/python", "/venv/bin/torchrun", "train.py"]) and not is_launcher(rank)
    assert is_rank(env, rank) and not is_rank(env, launcher)
    assert not is_rank({**env, "TUITRAIN_HOOKED": "123"}, rank)  # a child of a rank (a DataLoader worker)
    assert not is_rank({"TUITRAIN_SCRIPT": "/p/train.py"}, rank)


def test_the_one_line_names_the_users_own_line(tmp_path):
    source = tmp_path / "train.py"
    source.write_text("import json\n\nraise ValueError('bad value\\nsecond line')\n")
    try:
        exec(compile(source.read_text(), str(source), "exec"), {})
    except ValueError as exc:
        raised = exc
    assert one_line(raised, raised.__traceback__, str(tmp_path)) == "train.py line 3: ValueError: bad value"
    # run from another folder: the script's own folder names it
    assert one_line(raised, raised.__traceback__, "/elsewhere", str(tmp_path)) == "train.py line 3: ValueError: bad value"
    assert one_line(raised, raised.__traceback__, "/elsewhere") == "ValueError: bad value"


def _python(code: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd, timeout=60)


def test_the_hook_is_inert_outside_a_run_and_chains_to_the_users_sitecustomize(tmp_path):
    mine = write(tmp_path / "user_site", "sitecustomize.py", "import os\nos.environ['USER_SITE_RAN'] = 'yes'\n").parent
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUITRAIN_")}
    env["PYTHONPATH"] = os.pathsep.join([str(SITE_DIR), str(mine)])
    code = ("import os, sys; print(os.environ.get('USER_SITE_RAN'), "
            "sorted(m for m in sys.modules if m.split('.')[0] in ('tuitrain', 'torch', 'transformers')))")
    result = _python(code, env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["yes", "[]"]

    # a rank's child (TUITRAIN_HOOKED set): the user's sitecustomize still runs, and tuitrain stays out
    result = _python(code, {**env, "TUITRAIN_SCRIPT": "x.py", "TUITRAIN_RUN_DIR": str(tmp_path), "TUITRAIN_HOOKED": "1"},
                     tmp_path)
    assert result.stdout.split() == ["yes", "[]"]


def test_the_report_api_needs_no_ml_stack_and_does_nothing_outside_a_run(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUITRAIN_")}
    code = ("import sys, tuitrain; asked = tuitrain.report(3, loss=0.5); tuitrain.saved('nowhere', 3); "
            "print(tuple(asked), [m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'accelerate')])")
    result = _python(code, env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "(False, False, False) []"


def test_a_frozen_profile_keeps_the_scripts_folder(tmp_path):
    from tuitrain.runs.start.new_run import freeze_paths

    frozen = freeze_paths({"script": {"path": "train.py", "args": ["--x"]}}, tmp_path)
    assert frozen["script"] == {"path": str(tmp_path / "train.py"), "args": ["--x"], "workdir": str(tmp_path)}


def test_several_machines_run_the_script_with_their_own_hook(tmp_path, runs_dir):
    from tuitrain.launch.script import local_hook_path

    folder = tmp_path / "proj"
    write(folder, "train.py", "print('hi')\n")
    profile = write(folder, "two.toml", '[script]\npath = "train.py"\nargs = ["--x"]\n' + CPU
                    + '[distributed]\nstrategy = "ddp"\nmain_process_ip = "10.0.0.1"\nmain_process_port = 29555\n'
                    '[[distributed.machines]]\nhost = "node1"\n[[distributed.machines]]\nhost = "node2"\n')
    result = cli("plan", str(profile), "--json", runs_dir=runs_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    machines = json.loads(result.stdout)["machines"]
    assert [m["argv"][-2:] for m in machines] == [[str(folder / "train.py"), "--x"]] * 2
    assert all(m["env"]["TUITRAIN_SCRIPT"] == str(folder / "train.py") and "tuitrain.engine" not in m["argv"]
               for m in machines)
    # each machine's agent swaps in its own tuitrain's hook folder, keeping the rest of PYTHONPATH
    elsewhere = os.pathsep.join(["/opt/other/tuitrain/script/site", "/srv/lib"])
    assert local_hook_path(elsewhere) == os.pathsep.join([str(SITE_DIR), "/srv/lib"])
