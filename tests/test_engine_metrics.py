"""The metrics a profile may name are exactly those the engine ships (offline, no Hub fallback)."""

from __future__ import annotations

import numpy as np

from tuitrain.engine.metrics import METRICS, METRICS_DIR, classification_metrics
from tuitrain.profile.schema import METRICS as PROFILE_METRICS


def test_every_metric_a_profile_may_name_is_shipped_or_computed_by_the_trainer():
    assert set(PROFILE_METRICS) == set(METRICS) | {"perplexity"}
    for name in METRICS:
        assert (METRICS_DIR / f"{name}.py").is_file(), name


def test_classification_metrics_compute_offline_with_the_right_averaging():
    compute = classification_metrics(["accuracy", "f1", "perplexity"], num_labels=3)
    logits = np.array([[3.0, 0, 0], [0, 3.0, 0], [0, 0, 3.0], [3.0, 0, 0]])
    got = compute((logits, np.array([0, 1, 2, 2])))
    assert got["accuracy"] == 0.75
    assert 0 < got["f1"] < 1  # macro over three labels
    assert classification_metrics(["perplexity"], num_labels=2) is None
