"""Leave-one-out with the encoder's states shared among a text's deletions (attnclf/models/deletions.py): the
same probabilities as reading every deletion whole, for every mechanism and query, where the model allows it;
the whole reading where it does not."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers.classifier import net

from attnclf.analysis import measures
from attnclf.models.deletions import each_deleted, shares_states

V = 50


def whole(model, seq: np.ndarray) -> np.ndarray:
    """Each deletion's class probabilities, read whole."""
    return measures.probabilities(model, [measures._without(seq, t) for t in range(len(seq))])


def shared(model, seq: np.ndarray, rows_at_once: int = 256) -> np.ndarray:
    with torch.no_grad():
        return torch.softmax(each_deleted(model, torch.as_tensor(seq), rows_at_once), -1).numpy()


@pytest.mark.parametrize(
    "attention,values",
    [
        ("dot", {}),
        ("additive", {}),
        ("general", {}),
        ("multihead", {}),
        ("structured", {}),
        ("dot", {"query": "learned"}),
        ("additive", {"query": "learned"}),
    ],
)
def test_each_deletion_reads_as_the_text_without_that_token(attention, values):
    torch.manual_seed(0)
    model = net(V, 3, embed_dim=8, hidden_dim=6, attention=attention, **values).eval()
    assert shares_states(model)
    rng = np.random.default_rng(1)
    for n in (2, 3, 11):
        seq = rng.integers(1, V, size=n).astype(np.int64)
        # one batch, and several (a batch boundary inside the text)
        for rows in (256, 4, 1):
            np.testing.assert_allclose(shared(model, seq, rows), whole(model, seq), atol=1e-6, err_msg=f"{n} {rows}")


@pytest.mark.parametrize("values", [{"num_layers": 2}, {"rnn": "lstm"}, {"hidden_states": "orthogonal"}])
def test_models_whose_deletions_change_every_state_are_read_whole(values):
    """A second layer, an LSTM's cells, orthogonal states: a deletion reaches states the sharing keeps, so
    leave_one_out reads those models' deletions whole, and gets the same answer as for a short text."""
    torch.manual_seed(0)
    model = net(V, 2, embed_dim=8, hidden_dim=6, **values).eval()
    assert not shares_states(model)
    seq = np.random.default_rng(2).integers(1, V, size=measures.SHARED_FROM + 5).astype(np.int64)
    probs = measures.probabilities(model, [seq])
    c = int(probs[0].argmax())
    loo = measures.leave_one_out(model, [seq], probs)[0]
    np.testing.assert_allclose(loo, probs[0, c] - whole(model, seq)[:, c], atol=1e-6)


def test_leave_one_out_shares_states_from_its_length_on_with_the_same_answer(monkeypatch):
    """Long reviews go through the shared reading, short ones are grouped whole: the same drops either way."""
    read_shared = []
    each = measures.each_deleted_probs
    monkeypatch.setattr(measures, "each_deleted_probs", lambda m, s, b: read_shared.append(len(s)) or each(m, s, b))
    torch.manual_seed(0)
    model = net(V, 2, embed_dim=8, hidden_dim=6, attention="additive").eval()
    rng = np.random.default_rng(3)
    seqs = [rng.integers(1, V, size=n).astype(np.int64) for n in (5, measures.SHARED_FROM, 1, 30)]
    probs = measures.probabilities(model, seqs)
    loo = measures.leave_one_out(model, seqs, probs, batch_tokens=500)
    assert read_shared == [measures.SHARED_FROM]
    for i, s in enumerate(seqs):
        if len(s) < 2:
            assert np.isnan(loo[i]).all() and len(loo[i]) == 1
            continue
        c = int(probs[i].argmax())
        np.testing.assert_allclose(loo[i], probs[i, c] - whole(model, s)[:, c], atol=1e-6)
