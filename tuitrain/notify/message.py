"""What word of a run's end says: the run's facts (JSON), the Slack/Discord form, and the TUITRAIN_* variables a
command gets. Pure: a `RunWord` and a progress summary in, data out."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Mapping

from tuitrain.rundir.run import Run


@dataclass(frozen=True)
class RunWord:
    """What word of a run says of it: its record's facts at its end (`of`), or the keeper's as it restarts or
    hangs (its status then "restarted" or "hung", its cause the restart's or the hang's line)."""

    run: str
    profile: str | None
    status: str
    cause: str | None  # why, in one line and more
    started: float | None  # its start, else when it was made
    ended: float | None

    @classmethod
    def of(cls, run: Run) -> RunWord:
        return cls(run.name, run.profile, run.status, run.error, run.started or run.created, run.ended)

    def saying(self, status: str, cause: str | None, ended: float | None = None) -> RunWord:
        return replace(self, status=status, cause=cause, ended=ended if ended is not None else self.ended)


def _duration(word: RunWord) -> float | None:
    return round(word.ended - word.started, 1) if word.started and word.ended else None


def _metrics(progress: Mapping[str, Any]) -> dict[str, Any]:
    metrics = {k: progress[k] for k in ("step", "max_steps", "epoch", "loss") if progress.get(k) is not None}
    metrics.update({k: v for k, v in (progress.get("eval") or {}).items()
                    if not k.endswith(("runtime", "per_second"))})
    return metrics


def end_facts(word: RunWord, progress: Mapping[str, Any], host: str, run_dir: str) -> dict[str, Any]:
    status = word.status
    cause = word.cause or ("every step done" if status == "finished" else status)
    return {"run": word.run, "profile": word.profile, "host": host, "status": status,
            "cause": cause.splitlines()[0] if cause else status, "metrics": _metrics(progress),
            "duration": _duration(word), "run_dir": run_dir}


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
