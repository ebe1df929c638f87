"""int8 inference (quantize=int8): which layers go int8, that every RNN kernel and both cells read the same
int8 model, how close it stays to the float model, and predict, eval and serve taking it."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch import nn

from attnclf.errors import AttnclfError
from attnclf.inference.trained import TrainedClassifier

TEXTS = ["A wonderful film, really moving! The plot was dull at times.", "awful boring waste " * 60, "superb"]


def probs(clf: TrainedClassifier) -> np.ndarray:
    return np.array([p.probs for p in clf.predict(TEXTS)])


def test_int8_quantizes_the_recurrent_and_output_layers_and_leaves_the_attention_float(tiny_run):
    float_clf = TrainedClassifier.from_checkpoint(tiny_run)
    clf = float_clf.int8()
    model = clf.module.model
    assert all(m._get_name() == "DynamicQuantizedGRU" for m in [*model.encoder.fwd, *model.encoder.bwd])
    assert model.fc._get_name() == "DynamicQuantizedLinear"
    assert not any("Quantized" in m._get_name() for m in model.attention.modules())
    # the float classifier it was copied from stays float
    assert isinstance(float_clf.module.model.fc, nn.Linear) and type(float_clf.module.model.fc) is nn.Linear
    assert np.allclose(probs(clf), probs(float_clf), atol=0.02)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_every_rnn_kernel_reads_the_int8_model_the_same(cell, tiny_run):
    """A run trained with any kernel (packed: cuDNN's, on a GPU) reads as int8 on the CPU's own kernels."""
    from attnclf.models.encoder import BiRNN

    clf = TrainedClassifier.from_checkpoint(tiny_run)
    if cell == "lstm":
        # the same classifier with an LSTM encoder of fresh weights (the cell is what quantization sees)
        torch.manual_seed(0)
        old = clf.module.model.encoder
        clf.module.model.encoder = BiRNN(old.fwd[0].input_size, old.hidden_dim, cell="lstm").eval()
    readings = {}
    for kernel in ("padded", "concurrent", "packed"):
        clf.module.model.encoder.kernel = kernel
        q = clf.int8()
        assert q.module.model.encoder.kernel == ("auto" if kernel == "packed" else kernel)
        readings[kernel] = probs(q)
    assert np.allclose(readings["padded"], readings["concurrent"], atol=1e-6)
    assert np.allclose(readings["padded"], readings["packed"], atol=1e-6)


def test_int8_is_refused_in_one_line_where_it_cannot_run(tiny_run):
    with pytest.raises(AttnclfError, match=r"quantize='int4'; allowed: none, int8"):
        TrainedClassifier.from_checkpoint(tiny_run, quantize="int4")


def test_predict_eval_and_serve_take_quantize_int8(tiny_run, tmp_path, capsys, in_process):
    from fastapi.testclient import TestClient

    from attnclf.commands import main
    from attnclf.commands.serve import load_models
    from attnclf.serving.app import create_app
    from attnclf.settings.serve import ServeConfig

    int8 = TrainedClassifier.from_checkpoint(tiny_run, quantize="int8")
    main(["predict", f"ckpt={tiny_run}", f"text={TEXTS[0]}", "quantize=int8"])
    assert capsys.readouterr().out.startswith(
        f"{int8.predict(TEXTS[:1])[0].label_name}\t{int8.predict(TEXTS[:1])[0].prob:.3f}"
    )
    out = tmp_path / "eval.json"
    main(["eval", f"ckpt={tiny_run}", "quantize=int8", f"output={out}"])
    assert 0 <= json.loads(out.read_text())["accuracy"] <= 1
    s = ServeConfig(ckpt=[str(tiny_run)], quantize="int8")
    s.normalize()
    s.check()
    with TestClient(create_app(load_models(s), s)) as c:
        got = c.post("/predict", json={"texts": TEXTS}).json()["predictions"]
        for g, p in zip(got, int8.predict(TEXTS), strict=True):
            assert list(g["probs"]) == int8.labels and list(g["probs"].values()) == pytest.approx(p.probs, abs=1e-5)
        # /explain reads the float model: it takes gradients
        assert c.post("/explain", json={"text": TEXTS[0]}).json()["gradient"][0] is not None
