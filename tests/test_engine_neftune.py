"""NEFTune (training.neftune_noise_alpha), verified rather than passed through: through the engine's
own TrainingArguments and Trainer, the input embeddings' output carries noise while training, within
NEFTune's bound alpha / sqrt(length × width), and none at evaluation nor after training."""

from __future__ import annotations

import math
from typing import Any

from conftest import demo_profile_data
from tuitrain.profile import Profile, settings_with_defaults

ALPHA = 5.0
WIDTH = 32


def test_neftune_noise_is_on_while_training_and_off_at_evaluation(tmp_path) -> None:
    import datasets
    import torch
    from transformers import AutoModelForSequenceClassification, BertConfig, TrainerCallback

    from tuitrain.engine.main import training_arguments
    from tuitrain.engine.trainer import EngineTrainer

    data = demo_profile_data(training={"neftune_noise_alpha": ALPHA, "max_steps": 2, "eval_strategy": "no",
                                       "save_strategy": "no", "logging_steps": 1, "warmup_steps": 0})
    profile = settings_with_defaults(Profile(path=None, data=data))
    args = training_arguments(profile, str(tmp_path / "out"), 1)
    assert args.neftune_noise_alpha == ALPHA
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(BertConfig(
        vocab_size=64, hidden_size=WIDTH, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=32, num_labels=2))
    ids = torch.tensor([[2, 7, 9, 11, 3]])
    seen: dict[str, Any] = {}

    def outputs(embedding: Any) -> dict[str, Any]:
        was = embedding.training
        with torch.no_grad():
            embedding.train()
            first, second = embedding(ids), embedding(ids)
            embedding.eval()
            quiet = embedding(ids)
        embedding.train(was)
        return {"plain": embedding.weight[ids].detach(), "first": first, "second": second, "quiet": quiet}

    class LookAtTheEmbeddings(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):
            seen.setdefault("during", outputs(model.get_input_embeddings()))

    rows = datasets.Dataset.from_dict({"input_ids": [[2, 5, 6, 3]] * 8, "attention_mask": [[1] * 4] * 8, "labels": [0, 1] * 4})
    trainer = EngineTrainer(model=model, args=args, train_dataset=rows, callbacks=[LookAtTheEmbeddings()])
    trainer.train()

    during = seen["during"]
    noise = during["first"] - during["plain"]
    assert noise.abs().max() > 0 and not torch.equal(during["first"], during["second"])  # fresh noise each forward
    bound = ALPHA / math.sqrt(ids.shape[1] * WIDTH)  # NEFTune: uniform(-1, 1) × alpha / sqrt(L × d)
    assert noise.abs().max() <= bound + 1e-6 and noise.abs().max() > bound / 4
    assert torch.equal(during["quiet"], during["plain"])  # evaluation sees the embeddings as they are
    after = outputs(model.get_input_embeddings())
    assert torch.equal(after["first"], after["plain"])  # the hook is gone once training ends
