"""Built-in generated data sets a profile can name (data.generate): no files, no downloads, a rule a tiny model
can learn. Pure Python: the engine trains on them, `tuitrain preview` shows them without the ML stack."""

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


_ANIMALS = ("cat", "dog", "horse", "polar bear", "sea lion", "red fox", "owl", "snow leopard")
_CITIES = ("paris", "lima", "oslo", "new york", "hong kong", "buenos aires", "rome", "cape town")
WORD_TAG_LABELS = ["O", "B-ANIMAL", "I-ANIMAL", "B-CITY", "I-CITY"]


def _entity(rng: random.Random, names: tuple[str, ...], kind: str) -> tuple[list[str], list[str]]:
    words = rng.choice(names).split()
    return words, [f"B-{kind}"] + [f"I-{kind}"] * (len(words) - 1)


def word_tags(count: int, seed: int) -> dict[str, list]:
    """Token classification: neutral filler words with one to three animals and cities among them
    (some of two words), tagged BIO-style word by word."""
    rng = random.Random(seed)
    all_tokens: list[list[str]] = []
    all_tags: list[list[str]] = []
    for _ in range(count):
        tokens: list[str] = []
        tags: list[str] = []
        for _ in range(rng.randint(1, 3)):
            filler = rng.choices(_NEUTRAL, k=rng.randint(1, 4))
            tokens += filler
            tags += ["O"] * len(filler)
            words, labels = _entity(rng, _ANIMALS, "ANIMAL") if rng.random() < 0.5 else _entity(rng, _CITIES, "CITY")
            tokens += words
            tags += labels
        tail = rng.choices(_NEUTRAL, k=rng.randint(0, 3))
        all_tokens.append(tokens + tail)
        all_tags.append(tags + ["O"] * len(tail))
    return {"tokens": all_tokens, "tags": all_tags}


def reverse_words(count: int, seed: int) -> dict[str, list]:
    """Sequence to sequence: a few words in, the same words in reverse order out."""
    rng = random.Random(seed)
    sources: list[str] = []
    targets: list[str] = []
    for _ in range(count):
        words = rng.choices(_NEUTRAL[:40], k=rng.randint(2, 5))
        sources.append(" ".join(words))
        targets.append(" ".join(reversed(words)))
    return {"source": sources, "target": targets}


GENERATORS = {"sentiment-words": sentiment_words, "word-tags": word_tags, "reverse-words": reverse_words}
# The tag names of a generated token-classification set, in class id order.
GENERATED_LABELS = {"word-tags": WORD_TAG_LABELS}
