"""A bidirectional GRU (or LSTM, `cell="lstm"`) on which padding has no effect, in two exact formulations.

nn.GRU's backward direction over a right-padded batch reads the padding first,
and packing (the usual fix) made the CPU kernel about 8x slower here. Instead
the backward direction reads each row reversed within its own length (padding
stays at the end) and its output is reversed back; the forward direction reads
the padded batch as is (padding only follows the real tokens). Exact for every
real position.

Kernels (`kernel`), on the same parameters (one nn.GRU per direction):
- `concurrent` (CPU default with 2+ threads for batches of 100 tokens or more):
  `padded`, with the two directions running at the same time on two threads,
  forward and backward pass, each with half of torch's threads. A GRU step is
  too small to keep two cores busy (intra-op threads help it little), two
  independent directions are not.
- `padded` (CPU default with 1 thread, and for shorter batches, where the
  hand-off between threads costs more than it gains): each direction through
  nn.GRU on the padded batch, one after the other.
- `packed` (CUDA default): one bidirectional cuDNN call per layer on packed
  sequences (exact per sequence: cuDNN reverses each one within its length),
  on the same two directions' parameters (`torch.func.functional_call`), so
  checkpoints move between kernels. The packing order comes from a host copy of
  the lengths: no host-device sync.
A fourth formulation, both directions advanced together with a hand-written
backward pass, was exact but 20-25% slower on CPU and was removed
(docs/performance.md).

Under mixed precision (autocast) the GRU runs in float32 (TF32 on CUDA):
autocast would hand cuDNN's RNN float16 whatever the autocast dtype, and
bf16-mixed has no loss scaler to keep float16 gradients from underflowing. The
GRU is latency-bound at this size, so its precision costs little; the
projections around it (attention, classifier) still run in the autocast dtype.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import torch
from torch import nn
from torch.autograd.function import once_differentiable
from torch.func import functional_call
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from attnclf.models.dropout import Dropout
from attnclf.models.names import RNN_KERNELS, check_hidden_states, check_rnn, check_rnn_kernel
from attnclf.models.states import orthogonal_steps

# the names, torch-free: attnclf/models/names.py
KERNELS = RNN_KERNELS
# the same call, the same outputs first; an LSTM's gates are 4, a GRU's 3
CELLS = {"gru": nn.GRU, "lstm": nn.LSTM}

# auto on a CPU with 2+ threads: the two directions at once for batches of at least this many steps. A short
# batch does not pay for the hand-off between threads: with 2 threads a whole training step ran 1.2-1.4x faster
# as `padded` at 10-20 tokens, 1.05-1.2x at 80, even at 100-120, and 0.85-0.9x at 160 (scripts/bench_step.py,
# batches of 16, 32 and 64; docs/performance.md)
CONCURRENT_FROM = 100

# pid, torch threads of the caller, pool
_pool: tuple[int, int, ThreadPoolExecutor] | None = None


def _direction_pool() -> ThreadPoolExecutor:
    """Two threads for the two directions, each with half of the caller's torch threads.

    Made again after a fork (a child has no copies of the threads) or when the
    caller's thread count changes.
    """
    global _pool
    n = torch.get_num_threads()
    if _pool is not None and _pool[:2] == (os.getpid(), n):
        return _pool[2]
    if _pool is not None and _pool[0] == os.getpid():
        _pool[2].shutdown(wait=False)
    ready = threading.Barrier(3)

    def start() -> None:
        # torch sets a thread's count on first use: let it, then override
        torch.get_num_threads()
        torch.set_num_threads(max(1, n // 2))

    pool = ThreadPoolExecutor(2, thread_name_prefix="bigru", initializer=start)
    # both threads started (each waits on the barrier, so a second one is made)
    for _ in range(2):
        pool.submit(ready.wait)
    ready.wait()
    # set_num_threads also sets the count new threads start with: restore it
    torch.set_num_threads(n)
    _pool = (os.getpid(), n, pool)
    return pool


def _callers_autocast(x: torch.Tensor) -> torch.autocast:
    """The caller's autocast setting (a per-thread one) to enter on a direction thread."""
    device = x.device.type
    return torch.autocast(device, torch.get_autocast_dtype(device), enabled=torch.is_autocast_enabled(device))


def _inference_pair(directions, x: torch.Tensor) -> list[torch.Tensor]:
    """Both directions at once without autograd, in the caller's inference mode and autocast."""
    inference = torch.is_inference_mode_enabled()
    autocast = _callers_autocast(x)

    def run(direction) -> torch.Tensor:
        with torch.inference_mode(inference), torch.no_grad(), autocast:
            return direction(x)

    return list(_direction_pool().map(run, directions))


class _ConcurrentPair(torch.autograd.Function):
    """Two functions of one input (the two directions), each forward and backward on its own thread.

    Each direction records its own autograd graph in its thread; the backward
    runs both graphs at once and hands the engine the gradient of the input
    (the sum of the two) and of the GRUs' parameters (which are this function's
    inputs, so gradient hooks such as DDP's fire as usual).
    """

    @staticmethod
    def forward(ctx, directions, modules: tuple[nn.Module, nn.Module], x: torch.Tensor, *params: torch.Tensor):
        needs_x = ctx.needs_input_grad[2]
        autocast = _callers_autocast(x)

        def run(direction):
            with torch.enable_grad(), autocast:
                x_own = x.detach().requires_grad_(needs_x)
                return x_own, direction(x_own)

        ctx.graphs = list(_direction_pool().map(run, directions))
        ctx.modules = modules
        return tuple(out.detach() for _, out in ctx.graphs)

    @staticmethod
    @once_differentiable
    def backward(ctx, *grads: torch.Tensor):
        def run(module: nn.Module, graph, grad: torch.Tensor) -> list[torch.Tensor | None]:
            x_own, out = graph
            inputs = (x_own, *module.parameters())
            wrt = [t for t in inputs if t.requires_grad]
            got = iter(torch.autograd.grad(out, wrt, grad))
            return [next(got) if t.requires_grad else None for t in inputs]

        (gx_f, *gp_f), (gx_b, *gp_b) = _direction_pool().map(run, ctx.modules, ctx.graphs, grads)
        del ctx.graphs
        gx = None if gx_f is None else gx_f + gx_b
        return None, None, gx, *gp_f, *gp_b


def concurrent_pair(directions, modules: tuple[nn.Module, nn.Module], x: torch.Tensor) -> list[torch.Tensor]:
    """[directions[0](x), directions[1](x)], computed at the same time on two threads.

    `modules` hold the parameters each direction uses (their gradients are returned).
    """
    params = [p for m in modules for p in m.parameters()]
    if torch.is_grad_enabled() and any(t.requires_grad for t in (x, *params)):
        return list(_ConcurrentPair.apply(directions, modules, x, *params))
    return _inference_pair(directions, x)


def reverse_within_length(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """x (B, T, D): row b's first lengths[b] steps reversed, padding left in place."""
    B, T, D = x.shape
    t = torch.arange(T, device=x.device).unsqueeze(0)  # (1, T)
    n = lengths.to(x.device).unsqueeze(1)  # (B, 1)
    idx = torch.where(t < n, n - 1 - t, t) + T * torch.arange(B, device=x.device).unsqueeze(1)  # (B, T)
    # whole rows of D at once: about 2x faster than gather, which indexes element by element
    return x.reshape(B * T, D).index_select(0, idx.view(-1)).view(B, T, D)


class BiRNN(nn.Module):
    # the GRU in float32 under autocast (module docstring); scripts/bench_precision.py turns it off to compare
    float32_under_autocast = True

    def __init__(
        self,
        input_dim: int,
        hidden_dim: int,
        num_layers: int = 1,
        dropout: float = 0.0,
        kernel: str = "auto",
        cell: str = "gru",
        states: str = "plain",
    ):
        super().__init__()
        check_rnn_kernel(kernel)
        check_rnn(cell)
        check_hidden_states(states, kernel)
        self.cell = CELLS[cell]
        # orthogonal: each direction stepped by hand, every state made orthogonal to the mean of the earlier ones
        # (attnclf/models/states.py); the padded and concurrent kernels, never cuDNN's packed one
        self.states = states
        self.fwd = nn.ModuleList()
        self.bwd = nn.ModuleList()
        for layer in range(num_layers):
            d = input_dim if layer == 0 else 2 * hidden_dim
            self.fwd.append(self.cell(d, hidden_dim, batch_first=True))
            self.bwd.append(self.cell(d, hidden_dim, batch_first=True))
        self.dropout = Dropout(dropout)  # between layers
        self.kernel = kernel
        self.hidden_dim = hidden_dim
        # a plain dict: not submodules, no parameters of their own
        self._templates: dict[int, nn.RNNBase] = {}

    def resolved_kernel(self, x: torch.Tensor) -> str:
        if self.kernel != "auto":
            return self.kernel
        if x.is_cuda:
            return "packed" if self.states != "orthogonal" else "padded"
        # (B, T, D): the batch's longest text
        long = x.size(1) >= CONCURRENT_FROM
        return "concurrent" if torch.get_num_threads() >= 2 and long else "padded"

    def _nn_gru(self, gru: nn.RNNBase, x: torch.Tensor) -> torch.Tensor:
        """x (B, T, D) -> gru's outputs (B, T, H)."""
        return orthogonal_steps(gru, x) if self.states == "orthogonal" else gru(x)[0]

    def _reversed(self, gru: nn.RNNBase, lengths: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """The backward direction: each row read reversed within its length, outputs put back in order."""
        return reverse_within_length(self._nn_gru(gru, reverse_within_length(x, lengths)), lengths)

    def _bidirectional(self, input_dim: int) -> nn.RNNBase:
        """A parameter-less stand-in for one bidirectional layer, called with this module's parameters."""
        if input_dim not in self._templates:
            gru = self.cell(input_dim, self.hidden_dim, batch_first=True, bidirectional=True)
            self._templates[input_dim] = gru.requires_grad_(False)
        return self._templates[input_dim]

    def _packed_layer(self, layer: int, x: torch.Tensor, order: torch.Tensor, inverse, sorted_lengths) -> torch.Tensor:
        """Both directions of one layer in one cuDNN call on the packed batch: (B, T, D) -> (B, T, 2H)."""
        fwd, bwd = self.fwd[layer], self.bwd[layer]
        names = ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")
        params = {n: getattr(fwd, n) for n in names} | {f"{n}_reverse": getattr(bwd, n) for n in names}
        packed = pack_padded_sequence(x.index_select(0, order), sorted_lengths, batch_first=True, enforce_sorted=True)
        out = functional_call(self._bidirectional(x.size(-1)), params, (packed,))[0]
        return pad_packed_sequence(out, batch_first=True, total_length=x.size(1))[0].index_select(0, inverse)

    @staticmethod
    def packing_order(lengths: torch.Tensor, host_lengths: torch.Tensor | None, device: torch.device):
        """(order, inverse) on `device` and the sorted host lengths, from the host copy of the lengths.

        Sorted here rather than by pack_padded_sequence(enforce_sorted=False), whose index copy to the
        device and unpacking (`lengths[unsorted_indices.cpu()]`) each wait for the GPU.
        """
        # a sync only without a host copy
        host = host_lengths if host_lengths is not None else lengths.cpu()
        order = torch.argsort(host, descending=True, stable=True)
        sorted_lengths, inverse = host[order], torch.argsort(order)
        # pinned, so the copies do not wait for the GPU
        if device.type == "cuda":
            return *(t.pin_memory().to(device, non_blocking=True) for t in (order, inverse)), sorted_lengths
        return order.to(device), inverse.to(device), sorted_lengths

    def forward(
        self, x: torch.Tensor, lengths: torch.Tensor, host_lengths: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, T, D), lengths (B,) >= 1 -> outputs (B, T, 2H), final states (B, 2H), in float32.

        `host_lengths`: a CPU copy of `lengths` (the packed kernel sorts by it without a device sync).
        Outputs at padded positions are unspecified: mask them.
        """
        device = x.device.type
        if self.float32_under_autocast and torch.is_autocast_enabled(device):  # (module docstring)
            with torch.autocast(device, enabled=False):
                return self._encode(x.float(), lengths, host_lengths)
        return self._encode(x, lengths, host_lengths)

    def _encode(self, x: torch.Tensor, lengths: torch.Tensor, host_lengths: torch.Tensor | None):
        kernel = self.resolved_kernel(x)
        if kernel == "packed":
            order, inverse, sorted_lengths = self.packing_order(lengths, host_lengths, x.device)
        for layer, (fwd, bwd) in enumerate(zip(self.fwd, self.bwd, strict=True)):
            if layer:
                x = self.dropout(x)
            if kernel == "packed":
                x = self._packed_layer(layer, x, order, inverse, sorted_lengths)
                continue
            directions = (partial(self._nn_gru, fwd), partial(self._reversed, bwd, lengths))
            # the backward direction's two reversals run on its thread too
            if kernel == "concurrent":
                out_f, out_b = concurrent_pair(directions, (fwd, bwd), x)
            else:
                out_f, out_b = (direction(x) for direction in directions)
            x = torch.cat([out_f, out_b], dim=-1)  # (B, T, 2H)
        rows = torch.arange(x.size(0), device=x.device)
        last = (lengths.to(x.device) - 1).clamp(min=0)
        H = self.hidden_dim
        # forward direction ends at the last real token, backward at the first
        final = torch.cat([x[rows, last, :H], x[:, 0, H:]], dim=-1)  # (B, 2H)
        return x, final
