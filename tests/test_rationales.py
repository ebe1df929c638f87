"""Plausibility against human rationales: the readers (ERASER's released format and a simple file), the
alignment to the classifier's tokens, the scores against ERASER's definitions computed apart, and
attnclf faithfulness with `rationales.path`."""

from __future__ import annotations

import json
import logging
import random

import datasets
import numpy as np
import pytest
from helpers.config import compose_cfg
from helpers.data import FILLER, NEG, POS
from helpers.files import strict_json
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from attnclf.analysis.plausibility import auprc, plausibility, runs
from attnclf.commands.faithfulness import faithfulness
from attnclf.data.rationales import LeftOut, align, read_rationales
from attnclf.data.text import Vocab
from attnclf.errors import AttnclfError
from attnclf.settings.data import RationalesConfig


def annotation(docid: str, label: str, evidences: list[dict]) -> dict:
    """One line of an ERASER annotations file, as the movies set writes it."""
    return {
        "annotation_id": docid,
        "classification": label,
        "evidences": [[{"docid": docid, "end_sentence": -1, "start_sentence": -1, **ev}] for ev in evidences],
        "query": "What is the sentiment of this review?",
        "query_type": None,
    }


def write_eraser(root, docs: dict[str, str], splits: dict[str, list[dict]]):
    (root / "docs").mkdir(parents=True)
    for name, text in docs.items():
        (root / "docs" / name).write_text(text)
    for split, anns in splits.items():
        (root / f"{split}.jsonl").write_text("".join(json.dumps(a) + "\n" for a in anns))
    return root


# ERASER's tokens:     0    1    2    3   4   5     6    7  8  9  10  11  12
KNOWN_DOC = "the film was awful , truly boring .\nit is a waste .\n"
# the classifier's:    0    1    2    3        4     5      6  7  8  9


def known_eraser(root):
    return write_eraser(
        root,
        {"negR_000.txt": KNOWN_DOC, "posR_001.txt": "a great film .\nloved it !\n"},
        {
            "test": [
                annotation(
                    "negR_000.txt",
                    "NEG",
                    [
                        {"start_token": 3, "end_token": 7, "text": "awful , truly boring"},
                        {"start_token": 4, "end_token": 5, "text": ","},  # punctuation only: no token of ours
                        {"start_token": 11, "end_token": 13, "text": "waste ."},
                        {"start_token": 11, "end_token": 13, "text": "dull ."},  # its text is not those words
                        {"start_token": 12, "end_token": 40, "text": ""},  # beyond the document
                    ],
                ),
                # character offsets instead of tokens: "great" and "loved"
                annotation(
                    "posR_001.txt", "POS", [{"start_char": 2, "end_char": 7}, {"start_char": 15, "end_char": 20}]
                ),  # noqa: E501
                annotation("posR_404.txt", "POS", [{"start_token": 0, "end_token": 1, "text": "a"}]),  # no such doc
                annotation("negR_002.txt", "NEG", []),  # no evidence and no document
            ]
        },
    )


VOCAB = Vocab(["<pad>", "<unk>", "the", "film", "was", "awful", "truly", "boring", "a", "great", "loved", "it"])


def test_eraser_format_read_and_aligned_to_the_classifier_s_tokens(tmp_path, caplog):
    root = known_eraser(tmp_path / "movies")
    left = LeftOut()
    texts = read_rationales(RationalesConfig(path=str(root)), left)
    assert [t.id for t in texts] == ["negR_000.txt", "posR_001.txt"]
    got = align(texts, VOCAB, None, "head_tail", ["neg", "pos"], left)
    assert got.ids == ["negR_000.txt", "posR_001.txt"] and got.labels.tolist() == [0, 1]
    # "awful , truly boring" -> awful truly boring (3-5); "waste ." -> waste (9)
    assert got.spans[0] == [(3, 6), (9, 10)]
    assert np.flatnonzero(got.gold[0]).tolist() == [3, 4, 5, 9]
    assert got.seqs[0].tolist() == [2, 3, 4, 5, 6, 7, 11, 1, 8, 1]  # (is, waste: unknown words keep their place)
    assert got.spans[1] == [(1, 2), (3, 4)] and got.seqs[1].tolist() == [8, 9, 3, 10, 11, 1]  # a great film loved it !
    with caplog.at_level(logging.WARNING, "attnclf.data.rationales"):
        counts = left.report()
    assert counts == {
        "evidences whose offsets do not align with their document's tokens": 2,
        "annotations name a document missing from docs/": 2,
        "marked spans that cover no token of the classifier (punctuation or markup only)": 1,
    }
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3
    assert "rationales: 2 annotations name a document missing from docs/ (first: posR_404.txt" in lines[1]


def test_truncation_and_an_empty_rationale(tmp_path, caplog):
    """Marked tokens past what the classifier reads are dropped with a line; a text left with none is left out."""
    root = write_eraser(
        tmp_path / "e",
        {"a.txt": "the film was awful the film was boring", "b.txt": "the film the film the film the film awful"},
        {
            "val": [
                annotation("a.txt", "NEG", [{"start_token": 3, "end_token": 4}, {"start_token": 7, "end_token": 8}]),
                annotation("b.txt", "NEG", [{"start_token": 8, "end_token": 9, "text": "awful"}]),
            ]
        },
    )
    left = LeftOut()
    texts = read_rationales(RationalesConfig(path=str(root), split="val"), left)
    got = align(texts, VOCAB, 6, "head", ["neg", "pos"], left)  # the first 6 tokens only
    assert got.ids == ["a.txt"] and got.spans == [[(3, 4)]] and len(got.seqs[0]) == 6
    assert left.report() == {
        "marked spans beyond the tokens the classifier reads (max_length)": 2,
        "texts with an empty rationale (no marked token the classifier reads)": 1,
    }
    tail = align(texts, VOCAB, 6, "head_tail", ["neg", "pos"], LeftOut())  # the opening 3 and the closing 3
    assert tail.spans == [[(5, 6)], [(5, 6)]]


def test_simple_file_with_a_column_of_marked_spans(tmp_path):
    rows = {
        "review": ["The film was AWFUL, truly boring.", "A great film!", "a film"],
        "y": ["neg", "pos", "pos"],
        "marked": [[[13, 18], [27, 33]], [[2, 7]], []],
    }
    jsonl = tmp_path / "r.jsonl"
    datasets.Dataset.from_dict(rows).to_json(str(jsonl))
    csv = tmp_path / "r.csv"
    datasets.Dataset.from_dict({**rows, "marked": [json.dumps(m) for m in rows["marked"]]}).to_csv(str(csv))
    for path in (jsonl, csv):
        cfg = RationalesConfig(path=str(path), text_column="review", label_column="y", spans_column="marked")
        left = LeftOut()
        got = align(read_rationales(cfg, left), VOCAB, None, "head_tail", ["neg", "pos"], left)
        assert got.ids == ["row 1", "row 2"] and got.spans == [[(3, 4), (5, 6)], [(1, 2)]]
        assert left.report() == {"texts with an empty rationale (no marked token the classifier reads)": 1}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"text": "a film", "label": "pos", "rationale": [[0, 1], [3, 99], "film"]}) + "\n")
    left = LeftOut()
    assert read_rationales(RationalesConfig(path=str(bad)), left)[0].spans == [(0, 1)]
    assert left.report() == {"marked spans that are not [start, end] offsets within their text": 2}


def test_readers_one_line_errors(tmp_path):
    root = known_eraser(tmp_path / "movies")
    with pytest.raises(
        AttnclfError,
        match=r"label 'NEG' is not one of the classifier's classes \['bad', 'good'\]; "
        r"name its class with rationales.labels=\{NEG: <class>\}",
    ):
        align(
            read_rationales(RationalesConfig(path=str(root)), LeftOut()),
            VOCAB,
            None,
            "head",
            ["bad", "good"],
            LeftOut(),
        )
    named = align(
        read_rationales(RationalesConfig(path=str(root)), LeftOut()),
        VOCAB,
        None,
        "head",
        ["bad", "good"],
        LeftOut(),
        {"NEG": "bad", "POS": "good"},
    )
    assert named.labels.tolist() == [0, 1]
    with pytest.raises(AttnclfError, match=r"rationales.labels: 'NEG' -> 'neg' is not one of the classifier's"):
        align(
            read_rationales(RationalesConfig(path=str(root)), LeftOut()),
            VOCAB,
            None,
            "head",
            ["bad", "good"],
            LeftOut(),
            {"NEG": "neg"},
        )
    (root / "val.jsonl").write_text('{"annotation_id": "x"}\n')
    with pytest.raises(AttnclfError, match=r"val.jsonl: line 1 is not an ERASER annotation .*KeyError"):
        read_rationales(RationalesConfig(path=str(root), split="val"), LeftOut())
    f = tmp_path / "r.jsonl"
    f.write_text(json.dumps({"text": "a film", "label": "pos", "spans": [[0, 1]]}) + "\n")
    with pytest.raises(
        AttnclfError,
        match=r"has no spans column 'rationale'; columns found: \['text', 'label', "
        r"'spans'\] \(set rationales.spans_column\)",
    ):
        read_rationales(RationalesConfig(path=str(f)), LeftOut())
    c = tmp_path / "r.csv"
    c.write_text('text,label,rationale\na film,pos,"[[0, 1]"\n')
    with pytest.raises(AttnclfError, match=r"row 1's 'rationale' is not JSON \('\[\[0, 1\]'\)"):
        read_rationales(RationalesConfig(path=str(c)), LeftOut())
    for path, split, said in (
        (tmp_path / "nowhere", "test", r"rationales.path='.*nowhere' does not exist"),
        (tmp_path, "test", r"an ERASER folder holds docs/"),
        (root, "dev", r"rationales.split='dev': no dev.jsonl in .*; allowed: \['test', 'val'\]"),
        (tmp_path / "r.txt", "test", r"unknown file type '.txt'"),
    ):
        (tmp_path / "r.txt").write_text("x")
        with pytest.raises(AttnclfError, match=said):
            RationalesConfig(path=str(path), split=split).check()


# ERASER's definitions, written apart from attnclf.analysis.plausibility (loops over thresholds and spans)


def auprc_apart(scores, gold):
    """sklearn's precision_recall_curve + auc: a point at each distinct threshold, from (recall 0, precision 1)."""
    points = [(0.0, 1.0)]
    for t in sorted(set(scores.tolist()), reverse=True):
        pred = scores >= t
        tp = int((pred & gold).sum())
        points.append((tp / gold.sum(), tp / pred.sum()))
    return sum((r1 - r0) * (p0 + p1) / 2 for (r0, p0), (r1, p1) in zip(points, points[1:], strict=False))


def iou_f1_apart(pred_spans, gold_spans):
    """ERASER's partial_match_score at 0.5: (macro F1, micro F1)."""
    tps = []
    for preds, golds in zip(pred_spans, gold_spans, strict=True):
        best = []
        for p in preds:
            ps = set(range(*p))
            best.append(max(len(ps & set(range(*g))) / len(ps | set(range(*g))) for g in golds))
        tps.append(sum(b >= 0.5 for b in best))

    def f1(p, r):
        return 0 if p == 0 or r == 0 else 2 * p * r / (p + r)

    micro = f1(sum(tps) / sum(map(len, pred_spans)), sum(tps) / sum(map(len, gold_spans)))
    macro_p = np.mean([t / len(p) for t, p in zip(tps, pred_spans, strict=True)])
    macro_r = np.mean([t / len(g) for t, g in zip(tps, gold_spans, strict=True)])
    return f1(macro_p, macro_r), micro


def test_plausibility_equals_eraser_s_definitions_computed_apart():
    rng = np.random.default_rng(0)
    scores, gold, spans, preds = [], [], [], []
    for n in (1, 2, 7, 30, 120):
        g = np.zeros(n, dtype=bool)
        starts = sorted(rng.choice(n, size=min(n, 3), replace=False).tolist())
        want = sorted({(s, min(n, s + int(rng.integers(1, 4)))) for s in starts})
        for a, b in want:
            g[a:b] = True
        s = rng.normal(size=n).round(1)  # (rounded: ties)
        scores.append(s), gold.append(g), spans.append(want)
        top = np.argsort(-s, kind="stable")[: g.sum()]
        preds.append(runs(np.isin(np.arange(n), top)))
        assert auprc(s, g) == pytest.approx(auprc_apart(s, g), abs=1e-6)
    got = plausibility(scores, gold, spans)
    f1 = [
        np.isin(np.argsort(-s, kind="stable")[: g.sum()], np.flatnonzero(g)).mean()
        for s, g in zip(scores, gold, strict=True)
    ]
    assert got["token_f1"] == pytest.approx(np.mean(f1))
    assert got["auprc"] == pytest.approx(
        np.mean([auprc_apart(s, g) for s, g in zip(scores, gold, strict=True)]), abs=1e-6
    )
    # scores far outside [0, 1] (ranks 1..80): the area of their order (torchmetrics would squash them with a
    # sigmoid, tying every score above about 37)
    ranks = rng.permutation(80) + 1.0
    marked = rng.random(80) < 0.2
    assert auprc(ranks, marked) == pytest.approx(auprc_apart(ranks, marked), abs=1e-6)
    assert auprc(ranks, marked) == pytest.approx(auprc(ranks / 1000, marked), abs=1e-6)
    macro, micro = iou_f1_apart(preds, spans)
    assert (got["iou_f1"], got["iou_f1_micro"]) == pytest.approx((macro, micro))
    # a score that is the rationale itself scores 1 everywhere; the reverse of it 0 on token F1 and IOU
    g = np.array([0, 1, 1, 0, 0, 1, 0], dtype=bool)
    assert plausibility([g * 1.0], [g], [[(1, 3), (5, 6)]]) == pytest.approx(
        {"token_f1": 1.0, "auprc": 1.0, "iou_f1": 1.0, "iou_f1_micro": 1.0}
    )
    worst = plausibility([~g * 1.0], [g], [[(1, 3), (5, 6)]])
    assert worst["token_f1"] == 0 and worst["iou_f1"] == 0 and worst["auprc"] < 0.5
    assert runs(np.array([1, 1, 0, 1, 0, 0, 1], dtype=bool)) == [(0, 2), (3, 4), (6, 7)]


def words_doc(rng: random.Random, label: int) -> tuple[str, list[tuple[int, int]]]:
    """A review in ERASER's layout (tokens, a sentence a line) and its sentiment words as evidence tokens."""
    words = [rng.choice(FILLER) for _ in range(rng.randint(8, 40))]
    for _ in range(rng.randint(1, 3)):
        words.insert(rng.randrange(len(words) + 1), rng.choice(POS if label else NEG))
    words.append(".")
    marked = [(i, i + 1) for i, w in enumerate(words) if w in POS + NEG]
    return " ".join(words[:5]) + "\n" + " ".join(words[5:]) + "\n", marked


@pytest.fixture
def movies_like(tmp_path):
    rng = random.Random(3)
    docs, anns = {}, []
    for i in range(24):
        text, marked = words_doc(rng, i % 2)
        name = f"{'posR' if i % 2 else 'negR'}_{i:03d}.txt"
        docs[name] = text
        words = text.split()
        evs = [{"start_token": a, "end_token": b, "text": " ".join(words[a:b])} for a, b in marked]
        anns.append(annotation(name, "POS" if i % 2 else "NEG", evs))
    anns.append(annotation("negR_999.txt", "NEG", [{"start_token": 0, "end_token": 1, "text": "x"}]))  # no doc
    return write_eraser(tmp_path / "movies", docs, {"test": anns})


def compose_faith(overrides):
    return compose_cfg(config_name="faithfulness", overrides=overrides)


@pytest.mark.slow  # (three faithfulness runs)
def test_faithfulness_with_eraser_rationales(
    tiny_run, tiny_run_additive, movies_like, tmp_path, caplog, capsys, monkeypatch
):
    out = tmp_path / "f"
    monkeypatch.chdir(movies_like.parent)  # (named from its folder: faithfulness.json names it whole)
    base = [
        f"ckpt={tiny_run}",
        f"rationales.path={movies_like.name}",
        "permutations=5",
        f"paths.cache_dir={tmp_path}",
        "rationales.labels={NEG:'0',POS:'1'}",
    ]  # (the tiny run's classes are 0 and 1)
    with caplog.at_level(logging.WARNING, "attnclf.data.rationales"):
        result = faithfulness(compose_faith([*base, f"output={out}"]))
    assert "rationales: 1 annotations name a document missing from docs/ (first: negR_999.txt" in caplog.text
    saved = strict_json(out / "faithfulness.json")
    assert saved["reviews"] == 24 and saved["split"] == "test" and saved["data"] == str(movies_like.resolve())
    assert saved["rationales"] == {"read": 24, "left_out": {"annotations name a document missing from docs/": 1}}
    pl = saved["plausibility"]
    assert set(pl["sources"]) == {"attention", "gradient", "loo", "random"} and pl["reviews"] == 24
    for v in pl["sources"].values():
        assert set(v) == {"token_f1", "auprc", "iou_f1", "iou_f1_micro"} and all(0 <= x <= 1 for x in v.values())
    assert 0 < pl["marked_share"] < 0.3 and saved["eraser"]["reviews"] == 24
    md = (out / "summary.md").read_text()
    assert "## Plausibility: agreement with the tokens people marked (24 reviews" in md
    assert md in capsys.readouterr().out
    assert "left out: 1 annotations name a document missing from docs/" in md
    events = EventAccumulator(str(out))
    events.Reload()
    assert {
        "faithfulness_test/plausibility_auprc/attention",
        "faithfulness_test/plausibility_token_f1/random",
        "faithfulness_test/plausibility_iou_f1/loo",
    } <= set(events.Tags()["scalars"])
    # a sample of them, seeded; the default folder is the run's
    fewer = faithfulness(compose_faith([*base, "reviews=10"]))
    assert fewer["reviews"] == 10 and (tiny_run / "faithfulness_rationales_test" / "faithfulness.json").is_file()
    assert result["plausibility"]["sources"]["attention"] != fewer["plausibility"]["sources"]["attention"]

    # side by side, per attention: mean ± sd over the runs (dot twice: sd 0), and the AOPC figure
    additive = tmp_path / "a"
    faithfulness(compose_faith([*base[1:], f"ckpt={tiny_run_additive}", f"output={additive}"]))
    from attnclf.commands.compare_faithfulness import command as main

    capsys.readouterr()
    png = tmp_path / "aopc.png"
    assert main([str(out), str(out), str(additive), "--by-attention", "--aopc-out", str(png)]) == 0
    table = capsys.readouterr().out
    assert "| measure | dot (2 runs) | additive (1 runs) |" in table and png.stat().st_size > 10_000
    auprc = pl["sources"]["attention"]["auprc"]
    assert f"| plausibility: AUPRC, attention | {auprc:.3f} ± 0.000 | " in table
    comp = saved["eraser"]["sources"]["loo"]["aopc_comprehensiveness"]
    assert f"| AOPC comprehensiveness, loo (higher: more faithful) | {comp:.3f} ± 0.000 | " in table
    tau = saved["agreement"]["magnitude"]["gradient_vs_loo"]  # Jain & Wallace's definition, and significance
    assert f"| tau by magnitude, gradient vs leave-one-out (mean) | {tau['mean']:.3f} ± 0.000 | " in table
    assert f"|   significant (p <= 0.05), gradient vs leave-one-out | {tau['significant']:.2f} ± 0.00 | " in table


def test_faithfulness_rationales_bad_input(tiny_run, movies_like, tmp_path):
    base = [f"ckpt={tiny_run}", f"output={tmp_path / 'o'}", "rationales.labels={NEG:'0',POS:'1'}"]
    with pytest.raises(AttnclfError, match=r"rationales.split='dev': no dev.jsonl"):
        faithfulness(compose_faith([*base, f"rationales.path={movies_like}", "rationales.split=dev"]))
    with pytest.raises(AttnclfError, match=r"rationales.color is not a setting of rationales; allowed: path, split"):
        faithfulness(compose_faith([*base, f"rationales.path={movies_like}", "+rationales.color=red"]))
    empty = write_eraser(tmp_path / "empty", {"a.txt": ", . !"}, {"test": [annotation("a.txt", "NEG", [])]})
    with pytest.raises(AttnclfError, match=r"no review with a marked token to score \(1 read; left out: \{'texts with"):
        faithfulness(compose_faith([*base, f"rationales.path={empty}"]))
    assert not (tmp_path / "o").exists()


def test_evidence_that_differs_only_in_case_or_spacing_is_kept():
    """An evidence's `text` is compared with the words its offsets cover without case or spacing ("awful" for
    "Awful", "Awful," for "Awful ,"), as a reader means it; other words are left out."""
    import re

    from attnclf.data.rationales import evidence_span

    text = "Awful , truly boring film ."
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    for said in ("Awful", "awful", "Awful,", "AWFUL  ,"):
        end = 2 if "," in said else 1
        assert evidence_span({"start_token": 0, "end_token": end, "text": said}, text, words) == (0, words[end - 1][1])
    assert evidence_span({"start_token": 0, "end_token": 1, "text": "dull"}, text, words) is None
    assert evidence_span({"start_char": 6, "end_char": 20, "text": ", Truly  boring"}, text, words) == (6, 20)
