"""`tuitrain preview PROFILE [--rows N]`: the training data as the engine will see it, before a launch."""

from __future__ import annotations

import argparse

from tuitrain.profile import load_profile, resolve_profile_path
from tuitrain.profile.preview import preview_lines, preview_profile


def cmd_preview(args: argparse.Namespace) -> int:
    profile = load_profile(resolve_profile_path(args.profile), args.set)
    for line in preview_lines(preview_profile(profile, rows=args.rows)):
        print(line)
    return 0
