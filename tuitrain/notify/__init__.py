"""Word when a run ends ([notify] in ~/.config/tuitrain/config.toml): a webhook, a command. Sent by the run's
supervisor once the end is recorded (tuitrain.runs.keeper.supervise), so it works with no app open."""

from tuitrain.notify.config import NotifyConfig, config_path, read_notify_config
from tuitrain.notify.message import RunWord
from tuitrain.notify.send import notify_end

__all__ = ["NotifyConfig", "RunWord", "config_path", "notify_end", "read_notify_config"]
