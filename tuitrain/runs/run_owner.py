"""Who a run belongs to, and the one rule every verb that changes a run asks: only its user may."""

from __future__ import annotations

import os

from tuitrain.rundir.layout import RunPaths


def owner_uid(paths: RunPaths) -> int:
    """The user a run belongs to: the owner of its run directory (made by the user who started or queued it)."""
    return os.stat(paths.root).st_uid


def others_run_refusal(paths: RunPaths, verb: str) -> str | None:
    """Why this user may not `verb` the run (stop, save, cancel, move, resume into its folder, ...): it is another
    user's, as a shared machine's runs root may hold. The one rule every verb that changes a run asks; root is no
    exception (as a run's files are its user's, so are its checkpoints and its place in the queue)."""
    owner = owner_uid(paths)
    if owner == os.getuid():
        return None
    return f"run {paths.id} is {user_name(owner)}'s; only they can {verb} it"


def user_name(uid: int) -> str:
    """A user's login name, or "uid N" where this machine has none for it."""
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"
