"""Our Trainer subclass: the extras a profile can ask for (weighted loss, perplexity), and a
checkpoint rotation that only ever deletes checkpoints this run wrote, never its newest nor its best (`rundir.best`)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any, Iterable

from transformers import Seq2SeqTrainer, Trainer

from tuitrain.engine.errors import EngineError, first_line
from tuitrain.engine.resume_state import keep_profile_settings, settings_of
from tuitrain.rundir.best import best_rule, best_written
from tuitrain.rundir.disk_space import disk_full, exception_text


def checkpoints_to_delete(written: list[Path], limit: int | None, kept: Iterable[str | Path | None]) -> list[Path]:
    """Of the checkpoints this run wrote (oldest first), those beyond `save_total_limit`: never
    the newest (to resume from) nor those `kept` names (the best: transformers #15089, #35070)."""
    if not limit or limit <= 0 or len(written) <= limit:
        return []
    protected = {written[-1]} | {Path(p) for p in kept if p}
    keep = max(limit, len([p for p in written if p in protected]))
    deletable = [p for p in written if p not in protected]
    return deletable[: max(0, len(written) - keep)]


class EngineTrainer(Trainer):
    def __init__(self, *args: Any, class_weights: list[float] | None = None, report_perplexity: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.class_weights = class_weights
        self.report_perplexity = report_perplexity
        # Trainer's own rotation deletes any checkpoint-* in output_dir, a parent run's included
        # (a resume can share its folder) and, with save_total_limit = 1, all but the best at the
        # end of training. It is turned off here; _save_checkpoint rotates what this run wrote.
        self.save_total_limit = self.args.save_total_limit
        self.args.save_total_limit = None
        self.written_checkpoints: list[Path] = []

    def _save_checkpoint(self, model, trial):
        folder = Path(self._get_output_dir(trial=trial)) / f"checkpoint-{self.state.global_step}"
        if folder not in self.written_checkpoints:
            self.written_checkpoints.append(folder)
        # the best as tuitrain shows it, before the save writes trainer_state.json: load_best_model_at_end loads it
        # too (the Trainer's own keeps a best evaluation's step that was never saved, or none without
        # metric_for_best_model)
        rule = best_rule(self.args.metric_for_best_model, self.args.greater_is_better)
        best = best_written(self.written_checkpoints, self.state.log_history, rule)
        if best is not None:
            self.state.best_model_checkpoint = str(best)
        try:
            super()._save_checkpoint(model, trial)
        except Exception as exc:
            full = disk_full([folder.parent], exception_text(exc))
            if full is None:
                raise
            raise EngineError(f"{folder.name} was not saved: {full} ({first_line(exc)}); free space there, then resume "
                              "the run: it continues from its last complete checkpoint") from exc
        if self.args.should_save:
            kept = (best, self.state.best_model_checkpoint)
            for old in checkpoints_to_delete(self.written_checkpoints, self.save_total_limit, kept):
                shutil.rmtree(old, ignore_errors=True)
                self.written_checkpoints.remove(old)

    def _load_optimizer_and_scheduler(self, checkpoint):
        """The checkpoint's optimizer and schedule, with the profile's rates and hyperparameters put back
        (`engine.resume_state`; DeepSpeed restores its own, and `runs.start.resume_rule` refuses changing them there)."""
        if checkpoint is None or self.is_deepspeed_enabled or self.optimizer is None:
            return super()._load_optimizer_and_scheduler(checkpoint)
        fresh = settings_of(self.optimizer.param_groups)
        super()._load_optimizer_and_scheduler(checkpoint)
        changed = keep_profile_settings(self.optimizer.param_groups, fresh, self.lr_scheduler)
        if changed:
            print(f"[tuitrain] resume: the profile's optimizer settings, not the checkpoint's: {', '.join(changed)} "
                  f"(from step {self.state.global_step} on)", flush=True)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if not self.class_weights:
            return super().compute_loss(model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch)
        import torch

        labels = inputs.pop("labels")
        outputs = model(**inputs)
        logits = outputs.logits
        weight = torch.tensor(self.class_weights, dtype=logits.dtype, device=logits.device)
        loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1), weight=weight)
        return (loss, outputs) if return_outputs else loss

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        if self.report_perplexity and "eval_loss" in logs:
            logs["eval_perplexity"] = math.exp(min(logs["eval_loss"], 700.0))
        super().log(logs, *args, **kwargs)


class EngineSeq2SeqTrainer(EngineTrainer, Seq2SeqTrainer):
    """seq2seq: Seq2SeqTrainer's generation at evaluation (predict_with_generate), with EngineTrainer's
    extras (its methods come first: EngineTrainer, Seq2SeqTrainer, Trainer)."""
