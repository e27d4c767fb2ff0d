"""Fill the TrainingArguments cache of one transformers install, or remake the bundled snapshot.

    python -m tuitrain.profile.training_args_fill --version V --location DIR   (started by training_args.py)
    python -m tuitrain.profile.training_args_fill --snapshot                   (a maintainer, after upgrading)

The first runs detached in the background of the first command after installing or upgrading
transformers (see training_args.py): niced, so that a run starting beside it keeps the cores, and
one at a time under the cache folder's lock. It imports no ML library itself: the probe it runs does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from tuitrain.atomic import write_text_atomic
from tuitrain.profile.training_args import SNAPSHOT, TrainingArgsProbeError, fill_cache, introspect_training_args

BACKGROUND_TIMEOUT = 600.0


def write_snapshot() -> int:
    """The installed transformers' table, less its folder, as the snapshot shipped with tuitrain."""
    table = introspect_training_args(timeout=600.0)
    table.pop("location", None)
    write_text_atomic(SNAPSHOT, json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"{SNAPSHOT}: TrainingArguments of transformers {table['version']} ({len(table['fields'])} fields, "
          f"{len(table.get('model_types') or [])} model types)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name if __spec__ else 'training_args_fill'}",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--version", help="the transformers version the cache file is named after")
    parser.add_argument("--location", default="", help="the folder transformers is imported from")
    parser.add_argument("--snapshot", action="store_true", help="remake the bundled snapshot instead")
    args = parser.parse_args(argv)
    try:
        if args.snapshot:
            return write_snapshot()
        if not args.version:
            parser.error("--version is needed")
        try:
            os.nice(10)
        except OSError:
            pass
        # nobody waits for this niced background probe: a busy machine may take minutes to import transformers,
        # and a timeout here would leave a failure for every later command to read
        fill_cache(args.version, args.location or None, timeout=BACKGROUND_TIMEOUT)
    except TrainingArgsProbeError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
