"""Offline `evaluate` module: corpus BLEU (the sacrebleu package, its default 13a tokenization),
0 to 100 as sacrebleu reports it."""

import sacrebleu

from tuitrain.engine import metric_base


class Bleu(metric_base.TextMetric):
    description = "corpus BLEU (sacrebleu), 0 to 100"

    def _compute(self, predictions, references):
        return {"bleu": float(sacrebleu.corpus_bleu(list(predictions), [list(references)]).score)}
