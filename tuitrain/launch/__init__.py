"""Pure planning: a profile and the machine's hardware → what would run (argv, env, accelerate config)."""

from tuitrain.launch.plan import LaunchPlan, plan_launch

__all__ = ["LaunchPlan", "plan_launch"]
