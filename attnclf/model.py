"""embedding -> exact BiGRU -> attention pooling -> dropout -> linear.

The attention query is the encoder's summary of the whole review: the final
states of both directions, [forward state at the last token; backward state at
the first token] (B, 2H). The documents used the first GRU output, whose forward
half has seen one word only.
"""

from __future__ import annotations

import torch
from torch import nn

from attnclf.attention import build_attention
from attnclf.dropout import Dropout
from attnclf.encoder import ExactBiGRU
from attnclf.text import PAD_ID


class AttentionClassifier(nn.Module):
    def __init__(
        self,
        vocab_size: int,
        num_classes: int = 2,
        embed_dim: int = 128,
        hidden_dim: int = 128,
        num_layers: int = 1,
        attention: str = "dot",
        attention_dim: int | None = None,
        attention_scale: bool = True,
        attention_init: str = "xavier",
        dropout: float = 0.3,
        embed_dropout: float = 0.2,
        gru_kernel: str = "auto",
    ):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD_ID)
        self.embed_dropout = Dropout(embed_dropout)
        self.encoder = ExactBiGRU(embed_dim, hidden_dim, num_layers, dropout=dropout, kernel=gru_kernel)
        d = 2 * hidden_dim
        self.attention = build_attention(attention, d, d, attention_dim, scale=attention_scale, init=attention_init)
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(d, num_classes)

    def forward(
        self, ids: torch.Tensor, lengths: torch.Tensor, host_lengths: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """ids (B, T), lengths (B,) -> logits (B, C), attention weights (B, T).

        `host_lengths`: a CPU copy of `lengths`, when they are on a GPU (saves the encoder a sync).
        """
        x = self.embed_dropout(self.embed(ids))  # (B, T, E)
        out, final = self.encoder(x, lengths, host_lengths)  # (B, T, 2H), (B, 2H)
        mask = torch.arange(ids.size(1), device=ids.device) < lengths.to(ids.device).unsqueeze(1)  # (B, T)
        context, weights = self.attention(final.unsqueeze(1), out, out, mask)  # (B, 1, 2H), (B, 1, T)
        return self.fc(self.dropout(context.squeeze(1))), weights.squeeze(1)
