"""Offline `evaluate` module: ROUGE-1, ROUGE-2 and ROUGE-L F-measures, averaged over the examples
(Google's rouge_score package, as evaluate's own `rouge`, without its bootstrap)."""

from rouge_score import rouge_scorer

from tuitrain.engine import metric_base

TYPES = ("rouge1", "rouge2", "rougeL")


class Rouge(metric_base.TextMetric):
    description = "ROUGE-1, ROUGE-2, ROUGE-L F-measures (rouge_score), 0 to 1"

    def _compute(self, predictions, references):
        scorer = rouge_scorer.RougeScorer(list(TYPES))
        scores = [scorer.score(reference, prediction) for reference, prediction in zip(references, predictions, strict=True)]
        count = max(len(scores), 1)
        return {name: sum(s[name].fmeasure for s in scores) / count for name in TYPES}
