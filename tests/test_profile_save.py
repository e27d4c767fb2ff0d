"""Writing profiles: atomic, permission-keeping, comments kept, clean failures."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

import pytest

from tuitrain.profile import ProfileError, builtin_profile_path, load_profile, save_profile
from tuitrain.profile.save import has_comments

DEMO_TEXT = builtin_profile_path().read_text(encoding="utf-8")


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_save_round_trips(tmp_path: Path) -> None:
    profile = load_profile(builtin_profile_path())
    target = tmp_path / "copy.toml"
    assert save_profile(profile.data, target) == []
    again = load_profile(target)
    assert again.data == profile.data
    assert tomllib.loads(target.read_text()) == profile.data
    assert leftovers(tmp_path) == []


def test_save_keeps_permissions(tmp_path: Path) -> None:
    target = tmp_path / "p.toml"
    target.write_text('[run]\nname = "a"\n')
    os.chmod(target, 0o640)
    save_profile({"run": {"name": "b"}}, target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert tomllib.loads(target.read_text()) == {"run": {"name": "b"}}


def test_comments_are_kept_so_no_backup_is_needed(tmp_path: Path) -> None:
    target = tmp_path / "demo.toml"
    target.write_text(DEMO_TEXT)
    data = load_profile(target).data
    assert save_profile(data, target) == []
    assert target.read_text() == DEMO_TEXT  # nothing changed: not a byte rewritten
    data["training"]["max_steps"] = 20
    assert save_profile(data, target) == []
    assert target.read_text() == DEMO_TEXT.replace("max_steps = 150\n", "max_steps = 20\n")
    assert not (tmp_path / "demo.toml.bak").exists()


def test_hash_inside_strings_is_not_a_comment() -> None:
    assert not has_comments('[run]\nname = "a#b"\nx = \'c#d\'\ny = """\n#no\n"""\n')
    assert has_comments('[run]\nname = "a#b" # yes\n')
    assert has_comments('# top\n[run]\n')
    assert not has_comments('a = "q\\"#"\n')


def test_unwritable_value_names_the_key_and_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "p.toml"
    target.write_text(DEMO_TEXT)
    before = target.read_bytes()
    with pytest.raises(ProfileError) as info:
        save_profile({"run": {"name": "x"}, "hardware": {"gpus": None}}, target)
    [problem] = info.value.problems
    assert problem.key == "hardware.gpus" and "None" in problem.message
    assert target.read_bytes() == before
    assert leftovers(tmp_path) == [] and not (tmp_path / "p.toml.bak").exists()


def test_saving_onto_a_folder_fails_cleanly(tmp_path: Path) -> None:
    folder = tmp_path / "p.toml"
    folder.mkdir()
    with pytest.raises(ProfileError) as info:
        save_profile({"run": {"name": "x"}}, folder)
    assert "folder" in str(info.value)
    assert leftovers(tmp_path) == []


def test_saving_into_a_missing_folder_fails_cleanly(tmp_path: Path) -> None:
    with pytest.raises(ProfileError) as info:
        save_profile({"run": {"name": "x"}}, tmp_path / "nope" / "p.toml")
    assert "does not exist" in str(info.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders anyway")
def test_read_only_folder_fails_with_a_readable_message(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    target = folder / "p.toml"
    target.write_text('[run]\nname = "a"\n')
    before = target.read_bytes()
    os.chmod(folder, 0o500)
    try:
        with pytest.raises(ProfileError) as info:
            save_profile({"run": {"name": "x"}}, target)
    finally:
        os.chmod(folder, 0o700)
    assert "permission denied" in str(info.value) and str(folder) in str(info.value)
    assert target.read_bytes() == before
    assert leftovers(folder) == []


def test_save_through_a_symlink_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real.toml"
    real.write_text('[run]\nname = "a"\n')
    link = tmp_path / "link.toml"
    link.symlink_to(real)
    save_profile({"run": {"name": "b"}}, link)
    assert link.is_symlink()
    assert tomllib.loads(real.read_text()) == {"run": {"name": "b"}}


def test_a_profile_moved_to_another_folder_names_the_same_files(tmp_path: Path) -> None:
    from tuitrain.profile.paths import moved_paths

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.csv").write_text("text,label\na,0\n")
    (tmp_path / "models" / "tiny").mkdir(parents=True)
    old, new = tmp_path / "profiles", tmp_path / "elsewhere" / "deep"
    data = {"data": {"train_file": "../data/train.csv", "validation_file": str(tmp_path / "v.csv")},
            "model": {"name_or_path": "../models/tiny", "tokenizer": "bert-base-uncased"},
            "training": {"deepspeed": "ds.json"},
            "script": {"path": "~/train.py"}}
    moved = {".".join(key): (before, after) for key, before, after in moved_paths(data, old, new)}
    assert moved == {"data.train_file": ("../data/train.csv", "../../data/train.csv"),
                     "model.name_or_path": ("../models/tiny", "../../models/tiny"),
                     "training.deepspeed": ("ds.json", "../../profiles/ds.json"),  # a file still to come: a path too
                     "script.workdir": (None, "../../profiles")}  # a script still runs in its old folder
    for key, (_before, after) in moved.items():  # each names the same file from the new folder
        if key != "script.workdir":
            section, leaf = key.split(".")
            assert os.path.normpath(new / after) == os.path.normpath(old / data[section][leaf])
    assert moved_paths(data, old, tmp_path / "profiles" / ".") == []  # the same folder: nothing moves
