"""What flips a decision, computed the plain way: for the checks of /explain's and the page's flip counts."""

from __future__ import annotations


def fewest_to_flip(clf, tokens: list[str], scores: list[float], within: int) -> tuple[int | None, list[int]]:
    """Delete the words with the highest scores (ties in reading order) one more at a time, each text read by
    the classifier's own predict, until its label changes: (how many, their places), or (None, []) where
    `within` words do not change it."""
    order = sorted(range(len(tokens)), key=lambda i: (-scores[i], i))
    first = clf.predict([" ".join(tokens)])[0].label
    for k in range(1, min(within, len(tokens) - 1) + 1):
        gone = set(order[:k])
        if clf.predict([" ".join(t for i, t in enumerate(tokens) if i not in gone)])[0].label != first:
            return k, sorted(gone)
    return None, []
