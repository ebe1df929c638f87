"""attnclf: dot-product vs additive attention pooling over a BiGRU, on IMDb."""

__version__ = "0.1.0"
