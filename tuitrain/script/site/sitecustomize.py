"""tuitrain's hook for ranks that run a user's own script (script mode), loaded at interpreter start
because this folder is on PYTHONPATH. Outside a tuitrain run (no TUITRAIN_SCRIPT in the
environment) it imports nothing of tuitrain. Any sitecustomize this one shadows runs after it."""

import os
import sys


def _tuitrain_hook() -> None:
    if not os.environ.get("TUITRAIN_SCRIPT") or os.environ.get("TUITRAIN_HOOKED"):
        return
    try:
        from tuitrain.script.boot import boot

        boot()
    except Exception as exc:  # noqa: BLE001 — never stop the user's script for tuitrain's sake
        print(f"[tuitrain] the script-mode hook failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)


def _chain() -> None:
    """Run the sitecustomize found after this folder on sys.path, as Python would without us."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_tuitrain_hook()
_chain()
