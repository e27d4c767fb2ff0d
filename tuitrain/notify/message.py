"""What word of a run's end says: the run's facts (JSON), the Slack/Discord form, and the TUITRAIN_* variables a
command gets. Pure: a record and a progress summary in, data out."""

from __future__ import annotations

import json
from typing import Any, Mapping


def _duration(record: Mapping[str, Any]) -> float | None:
    start = record.get("started") or record.get("created")
    end = record.get("ended")
    return round(float(end) - float(start), 1) if start and end else None


def _metrics(progress: Mapping[str, Any]) -> dict[str, Any]:
    metrics = {k: progress[k] for k in ("step", "max_steps", "epoch", "loss") if progress.get(k) is not None}
    metrics.update({k: v for k, v in (progress.get("eval") or {}).items()
                    if not k.endswith(("runtime", "per_second"))})
    return metrics


def end_facts(record: Mapping[str, Any], progress: Mapping[str, Any], host: str, run_dir: str) -> dict[str, Any]:
    """`record`: a run's record at its end, or the word the keeper sends as a run restarts or hangs (its status
    "restarted", "hung"): not a run.json, so taken as any mapping."""
    status = str(record.get("status"))
    cause = record.get("error") or ("every step done" if status == "finished" else status)
    return {"run": record.get("id"), "profile": record.get("profile"), "host": host, "status": status,
            "cause": str(cause).splitlines()[0] if cause else status, "metrics": _metrics(progress),
            "duration": _duration(record), "run_dir": run_dir}


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, sec = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{sec:02d}s"


def one_line(facts: Mapping[str, Any]) -> str:
    metrics = facts.get("metrics") or {}
    shown = "  ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in metrics.items()
                      if k in ("step", "loss") or k.startswith("eval_"))
    cause = "" if facts["status"] == "finished" else f": {facts['cause']}"
    return (f"tuitrain: run {facts['run']} ({facts['profile']}) on {facts['host']} {facts['status']} after "
            f"{_clock(facts.get('duration'))}{cause}" + (f" — {shown}" if shown else ""))


def webhook_body(facts: Mapping[str, Any], fmt: str) -> bytes:
    data: Any = {"text": one_line(facts)} if fmt == "slack" else dict(facts)
    return json.dumps(data).encode("utf-8")


def command_env(facts: Mapping[str, Any]) -> dict[str, str]:
    return {"TUITRAIN_RUN_ID": str(facts["run"]), "TUITRAIN_PROFILE": str(facts["profile"]),
            "TUITRAIN_HOST": str(facts["host"]), "TUITRAIN_STATUS": str(facts["status"]),
            "TUITRAIN_CAUSE": str(facts["cause"]), "TUITRAIN_DURATION": str(facts.get("duration") or ""),
            "TUITRAIN_RUN_DIR": str(facts["run_dir"]), "TUITRAIN_METRICS": json.dumps(facts.get("metrics") or {}),
            "TUITRAIN_MESSAGE": one_line(facts)}
