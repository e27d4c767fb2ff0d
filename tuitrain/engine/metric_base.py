"""A base for the local `evaluate` metric modules in metrics/: label metrics computed by scikit-learn.

`evaluate.load(name)` needs the Hugging Face Hub; `evaluate.load(path_to_module.py)` works offline.
Each module in metrics/ names a scikit-learn scorer; this class does the rest.
"""

from __future__ import annotations

from typing import Any

import datasets
import evaluate


class LabelMetric(evaluate.Metric):
    metric_name: str = ""
    averaged: bool = False  # f1/precision/recall take `average`; accuracy and MCC do not

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=f"{self.metric_name} of predicted class labels against references (scikit-learn).",
            citation="",
            inputs_description="predictions: list of int; references: list of int",
            features=datasets.Features({"predictions": datasets.Value("int64"), "references": datasets.Value("int64")}),
        )

    def _score(self, references: list, predictions: list, **kwargs: Any) -> float:
        raise NotImplementedError

    def _compute(self, predictions: list, references: list, average: str = "binary", **kwargs: Any) -> dict[str, float]:
        if self.averaged:
            kwargs["average"] = average
        return {self.metric_name: float(self._score(references, predictions, **kwargs))}


class TextMetric(evaluate.Metric):
    """Generated text scored against one reference text each (ROUGE, BLEU)."""

    description: str = ""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=self.description,
            citation="",
            inputs_description="predictions: list of str; references: list of str (one reference each)",
            features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
        )


class TagMetric(evaluate.Metric):
    """Tag sequences scored against reference tag sequences (entity-level scores)."""

    description: str = ""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=self.description,
            citation="",
            inputs_description="predictions: list of list of str (tags); references: the same shape",
            features=datasets.Features({"predictions": datasets.Sequence(datasets.Value("string")),
                                        "references": datasets.Sequence(datasets.Value("string"))}),
        )
