"""Dropout with its mask drawn by torch.rand: the same distribution as nn.Dropout, faster on CPU.

nn.Dropout draws its CPU mask with bernoulli_, slow enough here that the
embeddings' dropout (B, T, E) was ~10% of a training step. A uniform draw
compared with p keeps each element with the same probability 1 - p for less
(embedding + dropout 26 -> 14-23 ms a step, docs/performance.md). On CUDA,
PyTorch's fused kernel is used as is.
"""

from __future__ import annotations

import torch
from torch import nn


class Dropout(nn.Dropout):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        if x.is_cuda or self.p == 1.0:
            return super().forward(x)
        # 0 or 1/(1-p), as nn.Dropout
        scale = torch.rand_like(x).ge_(self.p).mul_(1.0 / (1.0 - self.p))
        return x * scale
