"""int8 inference: a trained classifier with its encoder's recurrent layers and its output layer quantized
dynamically (PyTorch's `quantize_dynamic`: int8 weights, activations quantized per batch as they come). The
embedding and the attention stay float: the attention is the mechanism under study (and a mechanism may read
its layers' weights directly, which an int8 layer holds packed), and a small share of the time.

On the CPU only (PyTorch's dynamic quantization has no GPU kernels). Whichever RNN kernel the run trained
with reads the same: the packed kernel (cuDNN's, GPU) runs its layers through a functional call on float
weights, so an int8 model reads with the CPU's own kernels (`auto`). The orthogonal encoder steps its cells by
hand from their float weights: there only the output layer is quantized. No gradient flows through an int8
layer, so the measures that take one (|gradient x input|: `attnclf faithfulness`) are refused for int8.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn


def quantized(model: nn.Module) -> nn.Module:
    """`model` (a ClassifierNet, float, on the CPU) with its encoder's GRU/LSTM layers and its output layer
    (`fc`) in int8, in place."""
    encoder = model.encoder
    if encoder.kernel == "packed":
        encoder.kernel = "auto"
    with warnings.catch_warnings():
        # torch.ao's eager quantization is deprecated for torchao, which has no int8 GRU or LSTM yet
        warnings.simplefilter("ignore")
        from torch.ao.quantization import default_dynamic_qconfig, quantize_dynamic

        parts = ["fc"] if encoder.states == "orthogonal" else ["encoder", "fc"]
        spec = dict.fromkeys(parts, default_dynamic_qconfig)
        return quantize_dynamic(model, spec, dtype=torch.qint8, inplace=True)
