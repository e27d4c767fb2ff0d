"""Pure planning: a profile and the machine's hardware → what would run (argv, env, accelerate config)."""

from tuitrain.launch.plan import LaunchPlan, export_accelerate_config, plan_launch

__all__ = ["LaunchPlan", "export_accelerate_config", "plan_launch"]
