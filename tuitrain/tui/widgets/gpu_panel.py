"""What the sampler saw, as text: the one-line hardware strip of Home, and the GPUs tab of a run
(its devices with utilisation, memory, temperature, power and short history; its ranks' CPU and
memory; the host). Pure functions of a `SampledView` and a run record."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from rich.text import Text

from tuitrain.hardware.devices import GpuInfo
from tuitrain.hardware.host import HostInfo
from tuitrain.hardware.na import NA, NaType
from tuitrain.hardware.processes import sm_share, use_notes
from tuitrain.hardware.sampler import GpuPoint, SampledView
from tuitrain.humanize import duration, gib, gpu_memory, percent, size
from tuitrain.rundir.record import RunRecord
from tuitrain.rundir.run import Fields
from tuitrain.runs.keeper.samples import run_gpus
from tuitrain.tui.format import bar

if TYPE_CHECKING:
    from pathlib import Path

    from tuitrain.hardware.report import GpuReport
    from tuitrain.runs.keeper.samples import MachineSamples
    from tuitrain.tui.machines import Machine
    from tuitrain.tui.workstation_streams import BoxGpus

SPARKS = "▁▂▃▄▅▆▇█"
HISTORY_CELLS = 20


def spark(values: Iterable[Any], top: float, width: int = HISTORY_CELLS) -> str:
    """The last `width` values as a sparkline scaled to `top` (N/A values draw as blanks)."""
    cells = []
    for value in list(values)[-width:]:
        if value is NA or value is None or not top:
            cells.append(" ")
        else:
            level = min(max(float(value) / top, 0.0), 1.0)
            cells.append(SPARKS[min(len(SPARKS) - 1, int(level * len(SPARKS)))])
    return "".join(cells).rjust(width)


def strip_line(view: SampledView) -> str:
    """'CPU  12% ▕██···▏ 2 cores · RAM 3.1 GiB/23.4 GiB · GPU0 12.1/80.0 GiB 45% · …'."""
    host = view.snapshot.host
    cpu = host.cpu_percent
    parts = [f"CPU {percent(cpu, 3)} {bar(cpu / 100 if cpu is not NA else None, 5)} {host.cpu_count} cores"]
    if not isinstance(host.memory_total, NaType) and not isinstance(host.memory_used, NaType):  # both or neither
        parts.append(f"RAM {size(host.memory_used)}/{size(host.memory_total)}")
    gpus = view.snapshot.gpus
    if not gpus:
        parts.append(view.snapshot.discovery.status_line)
    elif len(gpus) <= 3:
        parts += [f"GPU{g.index} LOST" if g.lost else f"GPU{g.index} {gpu_memory(g.memory_used, g.memory_total)}"
                  + (percent(g.utilization, 3) if g.utilization is not NA else "") for g in gpus]
    else:
        working = [g for g in gpus if not g.lost]
        used = sum(g.memory_used for g in working if g.memory_used is not NA)
        total = sum(g.memory_total for g in working if g.memory_total is not NA)
        busiest = max(working or gpus, key=lambda g: g.utilization if g.utilization is not NA else -1)
        lost = "".join(f", GPU{g.index} LOST" for g in gpus if g.lost)
        parts.append(f"{len(gpus)} GPUs {gpu_memory(used, total)} in use, busiest GPU{busiest.index}"
                     f"{percent(busiest.utilization, 3)}{lost}")
    return " · ".join(parts)


def remote_lines(out: Text, report: "GpuReport | str | None", run_id: str, now: float) -> None:
    """One machine's figures as its agent sampled them there (tuitrain.hardware.report's JSON, checked; or why they
    do not read)."""
    if report is None or isinstance(report, str):
        out.append(f"    its figures do not read ({report})\n" if report else "    no figures from it yet\n",
                   style="red" if report else "dim")
        return
    age = f"sampled {max(0.0, now - report.time):.0f} s ago" if report.time is not None else "sampled there"
    out.append(f"    {report.status or 'no GPU figures'} · {age}\n" if not report.gpus else f"    {age}\n", style="dim")
    for gpu in report.gpus:
        mine = [p for p in gpu.processes if p.owner is not None and p.owner.run_id == run_id]
        ranks = ", ".join(f"rank {p.owner.rank if p.owner else '?'} {gib(p.used_memory)} GiB"
                          + (f" SM {p.sm_util}%" if p.sm_util is not NA else "") for p in mine)
        out.append(f"    GPU {gpu.index}  {gpu.name or '?'}  util {percent(gpu.utilization, 3)}"
                   f"  memory {gpu_memory(gpu.memory_used, gpu.memory_total, gpu.lost)}"
                   + (f"  {gpu.temperature:.0f}°C" if gpu.temperature is not NA else "")
                   + (f"  ({ranks})" if ranks else "") + ("  LOST" if gpu.lost else "") + "\n")
    host = report.host or HostInfo(cpu_count=0)
    line = f"    CPU {percent(host.cpu_percent, 3)} of {host.cpu_count or '?'} cores"
    if host.memory_used is not NA and host.memory_total is not NA:
        line += f" · RAM {size(int(host.memory_used))}/{size(int(host.memory_total))}"
    out.append(line + "\n", style="dim")


def run_panel(view: SampledView | None, record: RunRecord, run_id: str, live: bool,
              machines: "Sequence[Machine]" = (), samples: "Mapping[int, GpuReport | str] | None" = None,
              now: float | None = None, run_dir: "Path | None" = None) -> Text:
    """The GPUs tab: the run's devices, its ranks, the host. A run on several machines shows what
    this machine runs of it (its devices, its ranks' figures) and names the ranks of the others,
    whose figures their agents sampled there (`samples`: machine rank → runs.keeper.mirror.read_machine_samples'
    JSON), never from a local pid. `run_dir`: the run's directory, whose samples (tuitrain.runs.keeper.samples) show what
    the run used over its whole training, with the hints they call for; a finished run shows those in place of the
    devices now."""
    recorded = _recorded(run_dir, record, live) if run_dir is not None else None
    if not live and recorded is not None and not recorded.plain.startswith(NO_SAMPLES):
        out = recorded
        if view is not None:
            _host_lines(out, view, "this machine now")
        return out
    out = _live_panel(view, record, run_id, live, machines, samples, now)  # what it runs on, and the host now
    if recorded is not None:
        out.append("\n\n")
        out.append_text(recorded)
    return out


def _cells(values: Sequence[float | None], width: int) -> list[float | None]:
    """`values` squeezed into at most `width` cells, each the mean of its share (None: nothing read there)."""
    if len(values) <= width:
        return list(values)
    out: list[float | None] = []
    for cell in range(width):
        chunk = [v for v in values[cell * len(values) // width:(cell + 1) * len(values) // width] if v is not None]
        out.append(sum(chunk) / len(chunk) if chunk else None)
    return out


RECORDED_CELLS = 40
NO_SAMPLES = "this run kept no GPU/CPU samples"


def _recorded(run_dir: "Path", record: RunRecord, live: bool) -> Text | None:
    """What the run's samples say over its training time (all of them before it trains), and the hints."""
    from tuitrain.runs.keeper.samples import damaged_words, in_window, scan_run_samples, training_window
    from tuitrain.runs.view.usage import is_script, summarise, training_settings, usage_hints

    samples, damaged = scan_run_samples(run_dir)
    out = Text()
    for machine, why in sorted(damaged.items()):  # as `status` says it: a damaged file hides nothing silently
        out.append(f"samples: {damaged_words(machine, why)}\n", style="red")
    if not samples:
        if damaged:
            return out
        if not live:
            out.append(f"{NO_SAMPLES} (runs started before tuitrain kept them keep none)\n", style="dim")
            return out
        return None
    window = training_window(run_dir / "events.jsonl")
    usage = summarise(samples, window)
    span = "of training" if usage.training else "(before training began)"
    out.append(f"{'so far' if live else 'while it ran'}: {usage.samples} samples over {duration(usage.seconds)} "
               f"{span}, one every {usage.interval:.0f} s\n", style="bold")
    for machine, data in sorted(samples.items()):
        picked = in_window(data.times, window if usage.training else None)

        def line(name: str, top: float, stat: str = "mean", data: "MachineSamples" = data,
                 picked: list[int] = picked) -> str:
            values = data.values(name, stat)
            return spark(_cells([values[i] for i in picked], RECORDED_CELLS), top, RECORDED_CELLS)

        if len(samples) > 1:
            out.append(f"machine {machine} ({data.host})\n", style="bold")
        for gpu in (g for g in usage.gpus if g.machine == machine):
            out.append(f"GPU {gpu.index}  {gpu.name or '?'}\n")
            out.append(f"  util   {_pct(gpu.util_mean)} mean {_pct(gpu.util_peak)} peak ")
            out.append(line(f"gpu.{gpu.index}.util", 100), style="green")
            total = gpu.memory_total or 0
            peak = f"{gib(gpu.memory_peak * 2**20) if gpu.memory_peak is not None else 'N/A'}/" \
                   f"{gib(total * 2**20) if total else '?'} GiB peak"
            out.append(f"\n  memory {peak:>19} ")
            out.append(line(f"gpu.{gpu.index}.mem", total, "max"), style="cyan")
            out.append("\n")
        for rank in (r for r in usage.ranks if r.machine == machine):
            cores = 100.0 * max(1, data.cpu_count or 1)
            rss = size(int(rank.rss_peak * 2**20)) if rank.rss_peak is not None else "N/A"
            out.append(f"rank {rank.rank}  CPU {_pct(rank.cpu_mean)} mean {_pct(rank.cpu_peak)} peak of a core ")
            out.append(line(f"rank.{rank.rank}.cpu", cores), style="green")
            out.append(f"  RSS peak {rss}")
            if rank.wait_mean is not None:
                out.append(f"  waits for its batch {_pct(rank.wait_mean)} of its step time")
            out.append("\n")
        host = next(h for h in usage.hosts if h.machine == machine)
        out.append(f"host  {host.cpu_count or '?'} cores {_pct(host.cpu_mean)} busy ")
        out.append(line("host.cpu", 100), style="green")
        if host.memory_peak is not None and host.memory_total:
            out.append(f"  RAM peak {size(int(host.memory_peak * 2**20))}/{size(host.memory_total * 2**20)}")
        out.append("\n")
    for hint in usage_hints(usage, training_settings(run_dir), is_script(record)):
        out.append(f"hint: {hint.text}\n", style="yellow")
    return out


def _pct(value: float | None) -> str:
    return f"{value:3.0f}%" if value is not None else "N/A%"


def _live_panel(view: SampledView | None, record: RunRecord, run_id: str, live: bool,
                machines: "Sequence[Machine]", samples: "Mapping[int, GpuReport | str] | None",
                now: float | None) -> Text:
    out = Text()
    if view is None:
        out.append("sampling the machine…", style="dim")
        return out
    if machines:
        _machine_cards(out, view, record, run_id, live, machines, samples, now)
    else:
        _device_lines(out, view, record, run_id, live)
    _host_lines(out, view, "this machine" if machines else "host")
    return out


def _machine_cards(out: Text, view: SampledView, record: RunRecord, run_id: str, live: bool,
                   machines: "Sequence[Machine]", samples: "Mapping[int, GpuReport | str] | None",
                   now: float | None) -> None:
    """One card a machine, by machine index (hostnames may be one for all): this machine's figures as sampled here,
    the others' as their agents sampled them there (machines/machine-M-gpus.json)."""
    from tuitrain.tui.machines import rank_list

    clock = now if now is not None else time.time()
    for machine in sorted(machines, key=lambda m: m.index):
        out.append(f"machine {machine.index} · {machine.label} · {rank_list(machine.ranks)}\n", style="bold")
        if machine.here:
            _device_lines(out, view, {**record, "env": dict(machine.env), "accelerator": machine.accelerator or ""}, run_id, live,
                          machine.ranks)
        else:
            remote_lines(out, (samples or {}).get(machine.index), run_id, clock)
        out.append("\n")
    if not any(m.here for m in machines):
        out.append("none of this run's ranks runs on this machine\n", style="yellow")
    if not all(m.here for m in machines):
        run = Fields(record)
        out.append("the other machines' figures are sampled there by their tuitrain agent (also: tuitrain gpus "
                   f"--profile {run.profile_path or run.profile or 'PROFILE'})\n", style="dim")


def _device_lines(out: Text, view: SampledView, record: RunRecord, run_id: str, live: bool,
                  ranks_of: tuple[int, ...] | None = None) -> None:
    """The run's devices here (its CUDA_VISIBLE_DEVICES), their processes, and its ranks here (only `ranks_of`, the
    ranks of this machine, for a run on several: the sampler may take a rank of another machine for a pid here)."""
    snapshot = view.snapshot
    _gpu_lines(out, record, snapshot.gpus, snapshot.discovery.status_line, "this machine", run_id, ranks_of,
               view.gpu_history)
    ranks = [r for r in snapshot.ranks if r.owner.run_id == run_id
             and (ranks_of is None or int(r.owner.rank or 0) in ranks_of)]
    if ranks:
        out.append("\nranks\n", style="bold")
        for usage in ranks:
            rank_history = view.rank_history.get((run_id, int(usage.owner.rank or 0)), ())
            cores = 100.0 * max(1, snapshot.host.cpu_count)
            out.append(f"  rank {usage.owner.rank}  pid {usage.pid}  CPU {percent(usage.cpu_percent, 3)} ")
            out.append(spark((p.cpu_percent for p in rank_history), cores), style="green")
            out.append(f"   RSS {size(usage.rss) if not isinstance(usage.rss, NaType) else 'N/A'}\n")
    elif live:
        out.append("\nranks: not seen yet\n", style="dim")


def _gpu_lines(out: Text, record: RunRecord, gpus: Sequence[GpuInfo], status_line: str, where: str,
               run_id: str, ranks_of: tuple[int, ...] | None = None,
               history: Mapping[int, Sequence[GpuPoint]] | None = None) -> None:
    """The run's devices among a machine's `gpus` (by its CUDA_VISIBLE_DEVICES) and their processes; `history`: each
    GPU's recent figures, drawn as sparklines (None: a machine whose history is not kept here)."""
    run = Fields(record)
    env = run.env
    devices = run_gpus(record, gpus)
    if run.accelerator == "cuda":
        out.append(f"CUDA_VISIBLE_DEVICES={env.get('CUDA_VISIBLE_DEVICES', '(all)')}  "
                   f"CUDA_DEVICE_ORDER={env.get('CUDA_DEVICE_ORDER', 'FASTEST_FIRST')}\n", style="dim")
        if not devices:
            out.append(f"none of this run's GPUs is on {where} now ({status_line})\n", style="yellow")
    else:
        out.append(f"this run trains on {(run.accelerator or 'cpu').upper()}: {status_line}\n", style="dim")
    for cuda_index, gpu in enumerate(devices):
        points = history.get(gpu.index, ()) if history is not None else None
        temperature = f"{gpu.temperature}°C" if gpu.temperature is not NA else "N/A °C"
        power = f"{gpu.power_draw:.0f}/{gpu.power_limit:.0f} W" if gpu.power_draw is not NA else "N/A W"
        out.append(f"cuda:{cuda_index} = GPU {gpu.index}  {gpu.name}", style="bold")
        out.append(f"  {temperature}  {power}")
        if gpu.lost:
            out.append("  LOST (fell off the bus)", style="bold red")
        out.append("\n")
        out.append(f"  util   {percent(gpu.utilization, 3):>15}")
        if points is not None:
            out.append(" ")
            out.append(spark((p.utilization for p in points), 100), style="green")
        out.append(f"\n  memory {gpu_memory(gpu.memory_used, gpu.memory_total, gpu.lost):>15}")
        top = gpu.memory_total if not isinstance(gpu.memory_total, NaType) else 0
        if points is not None:
            out.append(" ")
            out.append(spark((p.memory_used for p in points), top), style="cyan")
        out.append("\n")
        for proc in sorted(gpu.processes, key=lambda p: p.pid):
            mine = proc.owner is not None and proc.owner.run_id == run_id
            if mine and ranks_of is not None and proc.owner is not None and proc.owner.rank is not None \
                    and proc.owner.rank not in ranks_of:
                continue  # a rank of another machine, by a pid that is someone else's here
            who = proc.owner.describe() if proc.owner else f"pid {proc.pid} ({proc.user})"
            peak = f", peak {gib(proc.peak_memory)} GiB" if proc.peak_memory is not NA else ""
            sm = f", SM {sm_share(proc)}" if proc.sm_util is not NA else ""
            out.append(f"    {who}: {gib(proc.used_memory)} GiB{peak}{sm}\n", style="" if mine else "dim")
    for note in use_notes(tuple(devices)):  # where a process's SM share or peak memory is not given, why
        out.append(f"  {note}\n", style="dim")


def box_panel(host: str, news: "BoxGpus | None", record: RunRecord, run_id: str, live: bool,
              run_dir: "Path | None" = None) -> Text:
    """The GPUs tab of another workstation's run: its devices there as that box's tuitrain streams them to Home
    (`news`: the app's `host_gpus` of it; no history, no ranks' CPU, which the stream does not carry), and what
    the run's samples say (mirrored with the run), as `run_panel` has them for a run here."""
    recorded = _recorded(run_dir, record, live) if run_dir is not None else None
    if not live and recorded is not None and not recorded.plain.startswith(NO_SAMPLES):
        return recorded
    out = Text()
    out.append(f"on {host}, as its tuitrain streams them\n", style="bold")
    if news is not None and news.problem:
        out.append(f"{news.problem} (the GPUs below are as last heard)\n" if news.gpus is not None
                   else f"{news.problem}\n", style="red")
    if news is None or news.gpus is None:
        if news is None or not news.problem:
            out.append(f"waiting for {host}'s GPUs…\n", style="dim")
    else:
        _gpu_lines(out, record, news.gpus.gpus, news.gpus.status or "no GPU figures", host, run_id)
    if recorded is not None:
        out.append("\n\n")
        out.append_text(recorded)
    return out


def _host_lines(out: Text, view: SampledView, label: str) -> None:
    snapshot = view.snapshot
    host = snapshot.host
    out.append(f"\n{label}  ", style="bold")
    out.append(f"{host.cpu_count} cores, {percent(host.cpu_percent, 3).strip()} busy ")
    out.append(spark((p.cpu_percent for p in view.host_history), 100), style="green")
    if not isinstance(host.memory_total, NaType) and not isinstance(host.memory_used, NaType):  # both or neither
        out.append(f"   RAM {size(host.memory_used)}/{size(host.memory_total)}")
