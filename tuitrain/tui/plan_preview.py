"""The editor's preview of what would run, in words: the command line, environment and accelerate
YAML of a plan (each machine's, for a profile that lists machines), or why there is none."""

from __future__ import annotations

from rich.text import Text

from tuitrain.launch import LaunchPlan
from tuitrain.launch.machines import MachinesPlan
from tuitrain.tui.command_fold import WithCommands
from tuitrain.tui.editor_model import Check


def plan_text(check: Check) -> Text | WithCommands:
    """The preview of what would run: command line, environment and accelerate YAML (or why not)."""
    if check.plan is None and not check.plan_error:
        return Text("fix the errors to see what would run", style="dim")
    if check.plan is None:
        return Text(f"cannot plan yet: {check.plan_error}", style="red")
    plan = check.plan
    if isinstance(plan, MachinesPlan):
        return machines_plan_text(plan)
    head = Text("accelerate command (ctrl+g copies it; ctrl+y copies `tuitrain run`)\n", style="bold")
    text = Text("\n")
    text.append("environment\n", style="bold")
    text.append("\n".join(f"{k}={v}" for k, v in sorted(plan.env.items())) + "\n\n")
    memory = plan.memory
    if memory is not None:  # the estimate's lines, here rather than among the notes
        text.append("GPU memory (an estimate, before anything is loaded)\n", style="bold")
        problem = next(iter(memory.problems), None)
        text.append("\n".join(line.removeprefix("GPU memory: ") for line in memory.lines) + "\n",
                    style="red" if problem is not None and problem.is_error else "yellow" if problem else "")
        if problem is not None:
            text.append(f"{problem.message}; {problem.fix}\n", style="bold")
        text.append("\n")
    return WithCommands([head, check.command, with_config_and_notes(text, "accelerate.yaml", plan)])


def machines_plan_text(plan: MachinesPlan) -> WithCommands:
    """The preview of a profile that lists machines: what each machine runs, in its rank's order."""
    text = Text()
    parts: list[Text | str] = [text]
    where = f"; the main machine is reached at {plan.main_process_ip}:{plan.main_process_port}" if plan.main_process_ip else ""
    text.append(f"{plan.num_machines} machine(s), {plan.num_processes} process(es) in all{where}\n", style="bold")
    text.append("commands (ctrl+g copies them all; ctrl+y copies `tuitrain run`)\n\n", style="dim")
    for machine in plan.machines:
        main = " · main machine" if machine.machine_rank == 0 else ""
        text.append(f"machine {machine.machine_rank}: {machine.host}{main}\n", style="bold")
        text.append(f"  {machine.num_processes} process(es) on {machine.accelerator}; python {machine.python}; "
                    f"in {machine.workdir}\n")
        text = Text()
        parts += [machine.command_line(), text]
        text.append("".join(f"  {k}={v}\n" for k, v in sorted(machine.env.items())), style="dim")
        if machine.notes:
            text.append("".join(f"  {note}\n" for note in machine.notes), style="dim")
        text.append("\n")
    with_config_and_notes(text, "accelerate.yaml (the main machine's; the others differ in machine_rank only)", plan)
    return WithCommands(parts, indent="  ")


def with_config_and_notes(text: Text, title: str, plan: LaunchPlan | MachinesPlan) -> Text:
    """`text` followed by the plan's accelerate config under `title`, then its notes."""
    from tuitrain.yaml_text import dump as dump_yaml

    text.append(f"{title}\n", style="bold")
    text.append(dump_yaml(plan.accelerate_config))
    memory = getattr(plan, "memory", None)
    notes = [n for n in plan.notes if memory is None or n not in memory.lines]
    if notes:
        text.append("\nnotes\n", style="bold")
        text.append("\n".join(notes), style="dim")
    return text
