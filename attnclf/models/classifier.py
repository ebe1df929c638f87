"""embedding -> exact BiGRU -> attention pooling -> dropout -> linear.

The attention query is the encoder's summary of the whole review: the final
states of both directions, [forward state at the last token; backward state at
the first token] (B, 2H). The first GRU output alone would not do: its forward
half has seen one word only. `query="learned"` takes one learned vector for every
review instead, as Jain & Wallace (2019) pool: a token's weight then depends on
its own state alone (additive: v^T tanh(W h + b); dot: w . h / sqrt(2H), with no
projections unless `attention_dim` asks for them). The attention is any mechanism
(attnclf/models/attention.py's interface), named by its class.
"""

from __future__ import annotations

import torch
from torch import nn

from attnclf.models.attention import AttentionShape
from attnclf.models.dropout import Dropout
from attnclf.models.encoder import BiRNN
from attnclf.models.names import PAD_ID
from attnclf.models.registry import build_attention
from attnclf.models.states import conicity


def real_tokens(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(B, T) mask of the real (not padding) positions of x (B, T, ...) whose rows hold `lengths` tokens."""
    return torch.arange(x.size(1), device=x.device) < lengths.to(x.device).unsqueeze(1)


class ClassifierNet(nn.Module):
    def __init__(self, vocab_size: int, num_classes: int, attention, model):
        """`attention`: the mechanism, read by name (AttentionConfig, attnclf/settings/attention.py: its class
        `target` and that class's own `keys`). `model`: the network's settings, read by name (ModelConfig,
        attnclf/settings/model.py: its sizes, the recurrent cell and kernel, the attention's size, query and
        normaliser, dropout, what is done to the states); each default is written there once."""
        super().__init__()
        m = model
        self.embed = nn.Embedding(vocab_size, m.embed_dim, padding_idx=PAD_ID)
        self.embed_dropout = Dropout(m.embed_dropout)
        self.encoder = BiRNN(
            m.embed_dim,
            m.hidden_dim,
            m.num_layers,
            dropout=m.dropout,
            kernel=m.rnn_kernel,
            cell=m.rnn,
            states=m.hidden_states,
        )
        # hidden_states=diversity: the conicity (B,) of the last forward's states, for the loss's penalty
        self.diversity = m.hidden_states == "diversity"
        self.last_conicity: torch.Tensor | None = None
        d = 2 * m.hidden_dim
        # a learned query: one vector (1, 2H) for every review (started as a Linear(2H, 1)'s weight is); None: the
        # encoder's final states
        learned = m.query == "learned"
        self.query = nn.Parameter(torch.empty(1, d).uniform_(-(d**-0.5), d**-0.5)) if learned else None
        shape = AttentionShape(d, d, m.attention_dim, m.attention_normalizer, learned)
        self.attention = build_attention(attention.target, attention.keys, shape)
        self.dropout = nn.Dropout(m.dropout)
        self.fc = nn.Linear(self.attention.out_dim, num_classes)

    def forward(
        self, ids: torch.Tensor, lengths: torch.Tensor, host_lengths: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """ids (B, T), lengths (B,) -> logits (B, C), attention weights (B, T).

        `host_lengths`: a CPU copy of `lengths`, when they are on a GPU (saves the encoder a sync).
        """
        return self.from_embeddings(self.embed(ids), lengths, host_lengths)

    def from_embeddings(
        self, x: torch.Tensor, lengths: torch.Tensor, host_lengths: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Embedded reviews x (B, T, E) -> logits (B, C), attention weights (B, T): forward() past the
        embedding, for the regularisers that perturb the embedded review (attnclf/training/regularizers.py)."""
        out, final, mask = self.encode(x, lengths, host_lengths)
        # (B, 1, out_dim), (B, 1, T)
        context, weights = self.attention(final.unsqueeze(1), out, out, mask)
        return self.classify(context.squeeze(1)), weights.squeeze(1)

    def encode(
        self, x: torch.Tensor, lengths: torch.Tensor, host_lengths: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Embedded reviews x (B, T, E) -> encoder outputs (B, T, 2H), query (B, 2H), real-token mask (B, T).

        Starts from the embeddings so that attnclf.analysis.measures can take gradients with respect to them.
        """
        # (B, T, 2H), (B, 2H)
        out, final = self.encoder(self.embed_dropout(x), lengths, host_lengths)
        mask = real_tokens(x, lengths)  # (B, T)
        if self.diversity:
            self.last_conicity = conicity(out, mask)  # (B,)
        return out, self.query_of(final), mask

    def query_of(self, final: torch.Tensor) -> torch.Tensor:
        """The attention's query (B, 2H): the encoder's final states (B, 2H), or the learned query."""
        return final if self.query is None else self.query.expand(final.size(0), -1)

    def pool(self, out: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """The encoder outputs (B, T, 2H) pooled by given weights (B, T) as the attention pools them -> (B,
        out_dim): for one row of weights, their weighted sum.

        forward() gets the same context from the attention itself; attnclf.analysis.measures calls this one
        with permuted, uniform or the model's own weights.
        """
        return self.attention.pool(weights.unsqueeze(1), out).squeeze(1)

    def classify(self, context: torch.Tensor) -> torch.Tensor:
        """Pooled review (B, out_dim) -> logits (B, C)."""
        return self.fc(self.dropout(context))
