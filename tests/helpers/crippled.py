"""A user's own mechanism that cripples the classifier, for tests of the comparisons: the source of a module
holding `Blind`, written where a test's runs can import it."""

from __future__ import annotations

BLIND = '''
from attnclf.models.attention import Attention, DotAttention


class Blind(Attention):
    """Uniform weights and a context of zeros: the classifier sees nothing of the text."""

    def scores(self, query, keys):
        return keys.new_zeros(keys.size(0), query.size(1), keys.size(1))

    def forward(self, query, keys, values, mask=None):
        context, weights = super().forward(query, keys, values, mask)
        return context * 0, weights


class Twin(DotAttention):
    """Dot, under a name of its own."""
'''
