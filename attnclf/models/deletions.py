"""One text with each of its tokens deleted in turn (leave-one-out), reading only what each deletion changes.

With token i deleted, the forward direction's states before i are the text's own, and so are the backward
direction's after it: only the forward states from i on and the backward ones before i change. So each
deletion runs the forward GRU over the tokens after i, started from the text's forward state at i - 1, and
the backward GRU over the tokens before i, started from its state at i + 1; the two runs are packed (each
deletion's run as long as it is), about half the steps of reading all n texts of n - 1 tokens whole: 1.7x as
fast at 174 tokens on CPU, slower below 100 (scripts/bench_loo.py, docs/performance.md). The attention and
the classifier then read each deletion's whole states.

Exact (to float rounding) for one layer of GRU with plain states: a second layer reads the first layer's both
directions, which a deletion changes everywhere; an LSTM's cell states are not outputs; orthogonal states
depend on every earlier state. `shares_states` says whether a model is one of these; callers read the
deletions whole otherwise (attnclf.analysis.measures.leave_one_out).
"""

from __future__ import annotations

from functools import partial

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from attnclf.models.classifier import ClassifierNet
from attnclf.models.encoder import concurrent_pair


def shares_states(model: ClassifierNet) -> bool:
    """Whether `each_deleted` applies: one layer of GRU with plain states, and no autocast."""
    enc = model.encoder
    device = next(model.parameters()).device.type
    plain = enc.cell is nn.GRU and len(enc.fwd) == 1 and enc.states == "plain"
    return plain and not torch.is_autocast_enabled(device)


def _run(gru: nn.GRU, x: torch.Tensor, starts: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
    """gru over x's tokens from starts[r] to the end, from state h0[r] -> outputs (R, L, H), L the longest run.
    Rows longest first (starts ascending)."""
    lengths = x.size(0) - starts  # (R,)
    L = int(lengths[0])
    idx = (starts[:, None] + torch.arange(L, device=x.device)[None]).clamp(max=x.size(0) - 1)  # (R, L)
    packed = pack_padded_sequence(x[idx], lengths.cpu(), batch_first=True, enforce_sorted=True)
    return pad_packed_sequence(gru(packed, h0[None])[0], batch_first=True, total_length=L)[0]


def _forward_states(gru: nn.GRU, x: torch.Tensor, h: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """The states (R, T-1, H) of gru reading the text x (T, E) forward with token i deleted, for each i of
    `rows` (ascending), `h` (T, H) its states over the whole text: the text's own before i; from i on, a run
    over the tokens after i from the state at i - 1 (none before the first token)."""
    T, H = x.size(0), h.size(1)
    j = torch.arange(T - 1, device=x.device)[None]  # (1, T-1): a deletion's positions
    out = h[:-1].expand(len(rows), -1, -1)  # (R, T-1, H): the positions before i
    runs = rows < T - 1  # the last token's deletion changes no forward state
    if runs.any():
        r = rows[runs]
        # the state before token r + 1, once token r is deleted: zero before the first
        before = torch.cat([torch.zeros(1, H, device=x.device, dtype=h.dtype), h])  # (T+1, H)
        after = _run(gru, x, r + 1, before[r])  # (R', T-1-r0, H)
        at = (j - r[:, None]).clamp(0, after.size(1) - 1)  # (R', T-1)
        shifted = torch.zeros(len(rows), T - 1, H, device=x.device, dtype=out.dtype)
        shifted[runs] = after.gather(1, at[..., None].expand(-1, -1, H))
        out = torch.where((j >= rows[:, None])[..., None], shifted, out)
    return out


def _backward_states(gru: nn.GRU, x: torch.Tensor, h: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """The same for the backward direction (`h`: its states, each at the token it ends on): the forward
    direction's states of the reversed text, where token i is token T - 1 - i, put back in order."""
    T = x.size(0)
    # rows and positions both reversed
    return _forward_states(gru, x.flip(0), h.flip(0), (T - 1 - rows).flip(0)).flip(0).flip(1)


@torch.no_grad()
def each_deleted(model: ClassifierNet, ids: torch.Tensor, rows_at_once: int = 256) -> torch.Tensor:
    """Logits (T, C) of the text `ids` (T,), T >= 2, with token i deleted, for each i; `rows_at_once`
    deletions a batch. Needs `shares_states(model)`."""
    enc, T = model.encoder, ids.size(0)
    x = model.embed_dropout(model.embed(ids))  # (T, E)
    # the text's own states: forward at t has read 0..t, backward at t has read T-1..t
    h_f = enc.fwd[0](x[None])[0][0]  # (T, H)
    h_b = enc.bwd[0](x.flip(0)[None])[0][0].flip(0)  # (T, H)
    H, logits = enc.hidden_dim, []
    for a in range(0, T, rows_at_once):
        rows = torch.arange(a, min(T, a + rows_at_once), device=ids.device)
        directions = (
            partial(_forward_states, enc.fwd[0], h=h_f, rows=rows),
            partial(_backward_states, enc.bwd[0], h=h_b, rows=rows),
        )
        # the two directions at once on two threads, as the encoder runs them (a packed run is latency-bound)
        if torch.get_num_threads() >= 2:
            states = concurrent_pair(directions, (enc.fwd[0], enc.bwd[0]), x)
        else:
            states = [direction(x) for direction in directions]
        out = torch.cat(states, -1)  # (R, T-1, 2H)
        # forward ends at the last token, backward at the first
        final = torch.cat([out[:, -1, :H], out[:, 0, H:]], -1)  # (R, 2H)
        mask = torch.ones(out.shape[:2], dtype=torch.bool, device=ids.device)  # (R, T-1)
        _, w = model.attention(model.query_of(final).unsqueeze(1), out, out, mask)  # (R, 1, T-1)
        logits.append(model.classify(model.pool(out, w.squeeze(1))))
    return torch.cat(logits)
