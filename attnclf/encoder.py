"""A bidirectional GRU on which padding has no effect, in three exact formulations.

nn.GRU's backward direction over a right-padded batch reads the padding first,
and packing (the usual fix) made the CPU kernel about 8x slower here. Instead
the backward direction reads each row reversed within its own length (padding
stays at the end) and its output is reversed back; the forward direction reads
the padded batch as is (padding only follows the real tokens). Exact for every
real position.

Kernels (`kernel`), all on the same parameters (one nn.GRU per direction):
- `padded` (CPU default): each direction through nn.GRU.
- `stacked`: both directions advance together, one batched matmul per time
  step, and every matmul that does not depend on the previous step (input
  projections, their gradients, all weight gradients) is done once over the
  whole sequence (`StackedGRU` below). Measured on a 2-core CPU it was not
  faster than `padded` (docs/performance.md), so it is not the default.
- `packed` (CUDA default): nn.GRU on packed sequences; cuDNN's packed kernel is fast.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from attnclf.errors import AttnclfError

KERNELS = ("auto", "stacked", "padded", "packed")


def reverse_within_length(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """x (B, T, D): row b's first lengths[b] steps reversed, padding left in place."""
    B, T, D = x.shape
    t = torch.arange(T, device=x.device).unsqueeze(0)  # (1, T)
    n = lengths.to(x.device).unsqueeze(1)  # (B, 1)
    idx = torch.where(t < n, n - 1 - t, t) + T * torch.arange(B, device=x.device).unsqueeze(1)  # (B, T)
    # whole rows of D at once: about 2x faster than gather, which indexes element by element
    return x.reshape(B * T, D).index_select(0, idx.view(-1)).view(B, T, D)


def _recurrence(gi, w_hh, b_hh, save: bool):
    """The GRU recurrence from h = 0, PyTorch's gate order and equations (r, z, n).

    gi (D, T, B, 3H): input projections with their bias; w_hh (D, 3H, H); b_hh (D, 3H).
    Returns hs (T, D, B, H) and, when `save`, what the backward pass needs.
    """
    D, T, B, H3 = gi.shape
    H = H3 // 3
    wt, bias = w_hh.transpose(1, 2), b_hh.unsqueeze(1)  # (D, H, 3H), (D, 1, 3H)
    hs = gi.new_empty(T, D, B, H)
    # time-major buffers, so that each step writes one contiguous block
    gh = gi.new_empty(T if save else 1, D, B, H3)  # h @ W_hh^T + b_hh
    rz = gi.new_empty(T if save else 1, D, B, 2 * H)  # reset and update gates
    ns = gi.new_empty(T if save else 1, D, B, H)  # candidate state
    h = gi.new_zeros(D, B, H)
    for t in range(T):
        s = t if save else 0
        g = gi[:, t]  # (D, B, 3H)
        torch.baddbmm(bias, h, wt, out=gh[s])
        r_z = torch.add(g[..., : 2 * H], gh[s, ..., : 2 * H], out=rz[s]).sigmoid_()
        n = torch.addcmul(g[..., 2 * H :], r_z[..., :H], gh[s, ..., 2 * H :], out=ns[s]).tanh_()
        h = torch.addcmul(n, r_z[..., H:], h - n, out=hs[t])  # (1 - z) * n + z * h
    return hs, (gh, rz, ns)


class StackedGRU(torch.autograd.Function):
    """D unidirectional GRU layers (one per direction) advanced together.

    xs (D, T, B, E), w_ih (D, 3H, E), b_ih (D, 3H), w_hh (D, 3H, H), b_hh (D, 3H) -> hs (T, D, B, H).
    The backward pass runs the recurrence backwards for the state gradients only,
    then gets every weight and input gradient from a few sequence-wide matmuls.
    """

    @staticmethod
    def forward(ctx, xs, w_ih, b_ih, w_hh, b_hh):
        D, T, B, E = xs.shape
        gi = torch.baddbmm(b_ih.unsqueeze(1), xs.reshape(D, T * B, E), w_ih.transpose(1, 2))  # (D, T*B, 3H)
        hs, (gh, rz, ns) = _recurrence(gi.view(D, T, B, -1), w_hh, b_hh, save=True)
        ctx.save_for_backward(xs, w_ih, w_hh, hs, gh, rz, ns)
        return hs

    @staticmethod
    def backward(ctx, dhs):
        xs, w_ih, w_hh, hs, gh, rz, ns = ctx.saved_tensors
        T, D, B, H = hs.shape
        dhs = dhs.contiguous()
        dgi = hs.new_empty(T, D, B, 3 * H)  # gradients of the pre-activations, input side
        dgh = hs.new_empty(T, D, B, 3 * H)  # and hidden side (they differ in the n gate)
        dh = hs.new_zeros(D, B, H)
        for t in range(T - 1, -1, -1):
            dh = dh + dhs[t]
            r, z, n = rz[t, ..., :H], rz[t, ..., H:], ns[t]
            h_prev = hs[t - 1] if t else torch.zeros_like(n)
            omz = 1 - z
            dn = dh * omz * (1 - n * n)  # through tanh
            dz = dh * (h_prev - n) * z * omz  # through sigmoid
            dr = dn * gh[t, ..., 2 * H :] * r * (1 - r)
            torch.cat([dr, dz, dn], -1, out=dgi[t])
            torch.cat([dr, dz, dn * r], -1, out=dgh[t])
            dh = torch.baddbmm(dh * z, dgh[t], w_hh)  # (D, B, H)
        # sequence-wide matmuls, direction-major
        dgi = dgi.transpose(0, 1).reshape(D, T * B, 3 * H)
        dgh = dgh.transpose(0, 1).reshape(D, T * B, 3 * H)
        h_prev = torch.cat([hs.new_zeros(1, D, B, H), hs[:-1]]).transpose(0, 1).reshape(D, T * B, H)
        ones = hs.new_ones(D, 1, T * B)
        dxs = torch.bmm(dgi, w_ih).view(D, T, B, -1) if ctx.needs_input_grad[0] else None
        dw_ih = torch.bmm(dgi.transpose(1, 2), xs.reshape(D, T * B, -1))
        dw_hh = torch.bmm(dgh.transpose(1, 2), h_prev)
        return dxs, dw_ih, torch.bmm(ones, dgi).squeeze(1), dw_hh, torch.bmm(ones, dgh).squeeze(1)


def stacked_gru(xs, w_ih, b_ih, w_hh, b_hh) -> torch.Tensor:
    """StackedGRU, without saving anything for backward when no gradient is needed (evaluation)."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in (xs, w_ih, b_ih, w_hh, b_hh)):
        return StackedGRU.apply(xs, w_ih, b_ih, w_hh, b_hh)
    D, T, B, E = xs.shape
    gi = torch.baddbmm(b_ih.unsqueeze(1), xs.reshape(D, T * B, E), w_ih.transpose(1, 2))
    return _recurrence(gi.view(D, T, B, -1), w_hh, b_hh, save=False)[0]


class ExactBiGRU(nn.Module):
    def __init__(
        self, input_dim: int, hidden_dim: int, num_layers: int = 1, dropout: float = 0.0, kernel: str = "auto"
    ):
        super().__init__()
        if kernel not in KERNELS:
            raise AttnclfError(f"model.gru_kernel={kernel!r}; allowed: {', '.join(KERNELS)}")
        self.fwd = nn.ModuleList()
        self.bwd = nn.ModuleList()
        for layer in range(num_layers):
            d = input_dim if layer == 0 else 2 * hidden_dim
            self.fwd.append(nn.GRU(d, hidden_dim, batch_first=True))
            self.bwd.append(nn.GRU(d, hidden_dim, batch_first=True))
        self.dropout = nn.Dropout(dropout)  # between layers
        self.kernel = kernel
        self.hidden_dim = hidden_dim

    def _nn_gru(self, gru: nn.GRU, x: torch.Tensor, lengths: torch.Tensor, pack: bool) -> torch.Tensor:
        if not pack:
            return gru(x)[0]
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        return pad_packed_sequence(gru(packed)[0], batch_first=True, total_length=x.size(1))[0]

    def _stacked(self, fwd: nn.GRU, bwd: nn.GRU, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        xs = torch.stack([x, reverse_within_length(x, lengths)]).transpose(1, 2).contiguous()  # (2, T, B, D)
        w = [torch.stack([getattr(fwd, n), getattr(bwd, n)]) for n in ("weight_ih_l0", "bias_ih_l0")]
        w += [torch.stack([getattr(fwd, n), getattr(bwd, n)]) for n in ("weight_hh_l0", "bias_hh_l0")]
        hs = stacked_gru(xs, *w)  # (T, 2, B, H)
        out_f = hs[:, 0].transpose(0, 1)  # (B, T, H)
        out_b = reverse_within_length(hs[:, 1].transpose(0, 1), lengths)
        return torch.cat([out_f, out_b], dim=-1)  # (B, T, 2H)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, T, D), lengths (B,) >= 1 -> outputs (B, T, 2H), final states (B, 2H).

        Outputs at padded positions are unspecified: mask them.
        """
        kernel = self.kernel if self.kernel != "auto" else ("packed" if x.is_cuda else "padded")
        for layer, (fwd, bwd) in enumerate(zip(self.fwd, self.bwd, strict=True)):
            if layer:
                x = self.dropout(x)
            if kernel == "stacked":
                x = self._stacked(fwd, bwd, x, lengths)
                continue
            pack = kernel == "packed"
            out_f = self._nn_gru(fwd, x, lengths, pack)  # (B, T, H)
            out_b = reverse_within_length(self._nn_gru(bwd, reverse_within_length(x, lengths), lengths, pack), lengths)
            x = torch.cat([out_f, out_b], dim=-1)  # (B, T, 2H)
        rows = torch.arange(x.size(0), device=x.device)
        last = (lengths.to(x.device) - 1).clamp(min=0)
        H = self.hidden_dim
        # forward direction ends at the last real token, backward at the first
        final = torch.cat([x[rows, last, :H], x[:, 0, H:]], dim=-1)  # (B, 2H)
        return x, final
