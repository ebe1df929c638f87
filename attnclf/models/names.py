"""The names the model's settings choose among, the rules that tie them, and the padding id the data
shares: torch-free, so that the settings (attnclf/settings/model.py) check a value before any data work, and
the networks, built from the settings or as a library, check what they are given, without importing the
settings."""

from __future__ import annotations

from attnclf.errors import AttnclfError
from attnclf.utils.checks import one_of

# the padding token's id, the vocabulary's first: the embedding's padding row, and what every mask leaves out
PAD_ID = 0
# additive attention's initialisation
ATTENTION_INITS = ("xavier", "default")
RNN_KERNELS = ("auto", "concurrent", "padded", "packed")
# the encoder's recurrent cell: this project's GRU, or the LSTM of Jain & Wallace's classifier
RNNS = ("gru", "lstm")
# the attention's query: the encoder's final states (the review's summary), or one learned vector for every
# review (Jain & Wallace's pooling: the weights then depend on each token's state alone)
QUERIES = ("final", "learned")
# what is done to the encoder's states so that attention over them explains (Mohankumar et al. 2020;
# attnclf/models/states.py): nothing, the Orthogonal RNN, or the Diversity RNN's conicity penalty
HIDDEN_STATES = ("plain", "orthogonal", "diversity")
# what turns the attention's scores into weights: softmax, or the sparse sparsemax and 1.5-entmax (the entmax
# package; Meister et al. 2021 measure whether their sparsity makes attention more interpretable)
NORMALIZERS = ("softmax", "sparsemax", "entmax15")


def check_rnn_kernel(kernel: str) -> None:
    """The rule for model.rnn_kernel, in one place: the settings check it before any data work, and the
    encoder built directly (attnclf/models/encoder.py, as a library) checks what it is given by it."""
    one_of("model.rnn_kernel", kernel, RNN_KERNELS)


def check_rnn(rnn: str) -> None:
    """The rule for model.rnn, checked by the settings and by the encoder built directly (as rnn_kernel is)."""
    one_of("model.rnn", rnn, RNNS)


def check_hidden_states(states: str, kernel: str) -> None:
    """The rule for model.hidden_states (and the kernels that compute it), checked as model.rnn is."""
    one_of("model.hidden_states", states, HIDDEN_STATES)
    if states == "orthogonal" and kernel == "packed":
        raise AttnclfError(
            "model.rnn_kernel=packed runs cuDNN's own steps; model.hidden_states=orthogonal steps by "
            "hand: give model.rnn_kernel=auto, padded or concurrent"
        )
