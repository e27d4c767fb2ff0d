"""Built-in generated data sets: no files, no downloads, a rule a tiny model can learn."""

from __future__ import annotations

import random

_NEUTRAL = (
    "the a this that my your our their film movie book story plot actor scene music ending "
    "show song dinner trip day night team game weather city road room idea plan week year "
    "was is felt seemed looked sounded became stayed and but so very quite really rather "
    "today yesterday again still also then here there with without about around"
).split()
_POSITIVE = "good great wonderful excellent lovely brilliant superb delightful amazing pleasant".split()
_NEGATIVE = "bad awful terrible horrible dreadful poor boring dull nasty painful".split()


def sentiment_words(count: int, seed: int) -> dict[str, list]:
    """Sentences of neutral filler with exactly one sentiment word; the label says which kind."""
    rng = random.Random(seed)
    texts: list[str] = []
    labels: list[int] = []
    for _ in range(count):
        words = rng.choices(_NEUTRAL, k=rng.randint(4, 12))
        label = rng.randint(0, 1)
        words.insert(rng.randint(0, len(words)), rng.choice(_POSITIVE if label else _NEGATIVE))
        texts.append(" ".join(words))
        labels.append(label)
    return {"text": texts, "label": labels}


GENERATORS = {"sentiment-words": sentiment_words}
