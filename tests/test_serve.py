"""attnclf serve in-process: the JSON API, its refusals, the API key, the explorer's pages and the dynamic
batching, on the tiny runs (FastAPI's TestClient runs the app's startup and shutdown as uvicorn does)."""

from __future__ import annotations

import asyncio
import csv
import html
import io
import json
import logging
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, parse_qsl, urlencode

import numpy as np
import pytest
from fastapi.testclient import TestClient
from helpers.flips import fewest_to_flip
from scipy.stats import kendalltau

from attnclf.analysis import measures
from attnclf.data.text import tokenize, without_tokens
from attnclf.errors import AttnclfError
from attnclf.inference.trained import TrainedClassifier
from attnclf.serving.app import create_app
from attnclf.serving.batching import Batcher, Busy
from attnclf.settings.serve import ServeConfig

TEXT = "A wonderful film, really moving! The plot was dull at times."


def serve_config(ckpts, **kw) -> ServeConfig:
    # (a first /browse waits for its rows whatever the machine's load; the page said meanwhile has its own test)
    kw.setdefault("browse_wait", 600)
    return checked(ServeConfig(ckpt=[str(c) for c in ckpts], **kw))


def checked(s: ServeConfig) -> ServeConfig:
    """As serve_settings() hands it on: normalised, then checked."""
    s.normalize()
    s.check()
    return s


def client_of(ckpts, **kw) -> TestClient:
    from attnclf.commands.serve import load_models

    s = serve_config(ckpts, **kw)
    return TestClient(create_app(load_models(s), s))


@pytest.fixture(scope="module")
def two(tiny_run, tiny_run_additive):
    with client_of([tiny_run, tiny_run_additive]) as c:
        yield c


@pytest.fixture(scope="module")
def one(tiny_run):
    with client_of([tiny_run], max_texts=4, max_text_chars=2000, max_body_bytes=20_000) as c:
        yield c


def test_health_names_every_model_by_its_attention(two):
    r = two.get("/health")
    assert r.status_code == 200 and r.json() == {"status": "ok", "models": ["dot", "additive"]}


def test_each_models_card_names_its_run_and_its_test_accuracy(two, tiny_run, tiny_run_additive):
    """The page's line on each model: its run folder, attention, encoder and the test accuracy its run's
    metrics.json holds."""
    page = html.unescape(two.get("/", params={"text": "a wonderful film"}).text)
    for name, run in (("dot", tiny_run), ("additive", tiny_run_additive)):
        acc = json.loads((run / "metrics.json").read_text())["test/acc"]
        assert f"{run.name}: {name} attention, BiGRU, test accuracy {acc:.3f}</p>" in page


def test_predict_gives_each_text_what_the_classifier_gives_it_in_order(two, tiny_run_additive):
    texts = [TEXT, "awful boring waste", "great " * 1200, "superb"]
    r = two.post("/predict", json={"texts": texts, "model": "additive"})
    assert r.status_code == 200
    got = r.json()["predictions"]
    offline = TrainedClassifier.from_checkpoint(tiny_run_additive).predict(texts)
    assert len(got) == len(texts)
    for g, p in zip(got, offline, strict=True):
        assert g["model"] == "additive" and g["label"] == p.label_name and g["tokens"] == p.tokens
        assert set(g) == {"model", "label", "prob", "probs", "tokens", "weights", "truncated"}
        assert g["prob"] == pytest.approx(p.prob, abs=1e-5) and len(g["weights"]) == len(g["tokens"])
        assert list(g["probs"].values()) == pytest.approx(p.probs, abs=1e-5)
        assert g["weights"] == pytest.approx(p.weights, abs=1e-5)
    assert [g["truncated"] for g in got] == [False, False, True, False]  # (the run reads 1000 tokens)
    assert len(got[2]["tokens"]) == 1000


def test_explain_gives_the_measures_faithfulness_defines_and_their_taus(two, tiny_run):
    r = two.post("/explain", json={"text": TEXT, "model": "dot"})
    assert r.status_code == 200
    e = r.json()
    clf = TrainedClassifier.from_checkpoint(tiny_run)
    tokens = e["tokens"]
    assert tokens == clf.predict([TEXT])[0].tokens and len(e["gradient"]) == len(tokens) == len(e["leave_one_out"])
    # leave-one-out, independently: the text without each word in turn, through the classifier's own predict
    k = clf.labels.index(e["label"])
    without = [" ".join(tokens[:i] + tokens[i + 1 :]) for i in range(len(tokens))]
    changes = [abs(e["prob"] - q.probs[k]) for q in clf.predict(without)]
    assert e["leave_one_out"] == pytest.approx(changes, abs=1e-5)
    assert e["tau"]["leave_one_out"] == pytest.approx(kendalltau(e["weights"], changes).statistic, abs=1e-6)
    assert e["tau"]["gradient"] == pytest.approx(kendalltau(e["weights"], e["gradient"]).statistic, abs=1e-9)
    assert all(g >= 0 for g in e["gradient"]) and 0 <= e["tau_p_value"]["gradient"] <= 1
    # the gradient faithfulness measures by magnitude: the attention weights held fixed (not through them)
    ids = [np.asarray(clf.vocab.encode_tokens(tokens))]
    fixed, free = (measures.attributions(clf.module.model, ids, fixed_weights=f).gradient[0] for f in (True, False))
    assert e["gradient"] == pytest.approx(np.abs(fixed), abs=1e-7) and not np.allclose(np.abs(fixed), np.abs(free))


def test_explain_says_what_flips_the_decision_in_each_measures_order(two, tiny_run_additive):
    clf = TrainedClassifier.from_checkpoint(tiny_run_additive)
    flipped = 0
    for text in (TEXT, "dull, boring and too long but the acting is wonderful and moving", "superb film"):
        e = two.post("/explain", json={"text": text, "model": "additive"}).json()
        assert e["flip_within"] == 50
        for measure, scores in (
            ("attention", e["weights"]),
            ("gradient", e["gradient"]),
            ("leave_one_out", e["leave_one_out"]),
        ):
            count, words = fewest_to_flip(clf, e["tokens"], scores, 50)
            assert e["flip"][measure] == {"count": count, "words": words}, (text, measure)
            flipped += count is not None
    assert flipped >= 2


def test_a_one_word_text_has_no_tau_and_says_so_with_null(two):
    e = two.post("/explain", json={"text": "superb", "model": "additive"}).json()
    assert e["tau"] == {"gradient": None, "leave_one_out": None} and e["leave_one_out"] == [None]


JSON = {"content-type": "application/json"}
BAD = [  # (what is sent, the status, words the one line holds)
    ({"content": b"{not json", "headers": JSON}, 400, "not valid JSON"),
    ({"content": b'{"texts": ["\xff\xfe"]}', "headers": JSON}, 400, "not UTF-8"),
    ({"content": b'{"texts": ["a"]}', "headers": {"content-type": "text/plain"}}, 415, "application/json"),
    ({"json": {}}, 422, "texts is missing"),
    ({"json": {"texts": "a review"}}, 422, "texts is a string; it must be a list"),
    ({"json": ["a review"]}, 422, "the body is a list"),
    ({"json": {"texts": []}}, 422, "texts is empty; give 1 to 4 texts"),
    ({"json": {"texts": ["ok", 3]}}, 422, "texts[1] is a number"),
    ({"json": {"texts": ["ok", None]}}, 422, "texts[1] is null"),
    ({"json": {"texts": ["ok", "  "]}}, 422, "texts[1] is empty"),
    ({"json": {"texts": ["a"] * 5}}, 413, "at most 4 a request (max_texts)"),
    ({"json": {"texts": ["a" * 2001]}}, 413, "at most 2000 (max_text_chars)"),
    # (36,000 bytes: each é written as \\u00e9)
    ({"content": json.dumps({"texts": ["é" * 1500] * 4}).encode(), "headers": JSON}, 413, "(max_body_bytes)"),
    ({"json": {"texts": ["a"], "model": "nosuch"}}, 422, "model='nosuch' is not served; allowed: dot"),
    ({"json": {"texts": ["a"], "model": 7}}, 422, "model=a number is not served; allowed: dot"),
    ({"json": {"texts": ["a"], "labels": 7}}, 422, "'labels' is not a field; allowed: texts, model"),
]


@pytest.mark.parametrize("sent,status,words", BAD, ids=[w for _, _, w in BAD])
def test_each_bad_request_is_a_4xx_with_one_line_one_log_line_and_the_next_is_answered(
    one, sent, status, words, caplog
):
    with caplog.at_level(logging.WARNING, logger="attnclf.serve"):
        r = one.post("/predict", **sent)
    assert r.status_code == status, r.text
    assert list(r.json()) == ["error"] and words in r.json()["error"] and "\n" not in r.json()["error"]
    assert "Traceback" not in r.text
    assert len([x for x in caplog.records if x.name == "attnclf.serve"]) == 1
    assert one.post("/predict", json={"texts": ["superb film"]}).status_code == 200


@pytest.mark.parametrize(
    "method,path,body,status,words",
    [
        (
            "get",
            "/nosuch",
            None,
            404,
            "no such path: /nosuch; paths: /health, /predict, /explain, /, /explain.json, /browse",
        ),
        ("get", "/predict", None, 405, "GET is not allowed on /predict; allowed: POST"),
        ("put", "/explain", None, 405, "PUT is not allowed on /explain"),
        ("post", "/health", None, 405, "POST is not allowed on /health; allowed: GET, HEAD"),
        ("post", "/explain", {"texts": ["a"]}, 422, "'texts' is not a field; allowed: text, model"),
        ("post", "/explain", {"model": "dot"}, 422, "text is missing"),
        ("post", "/explain", {"text": ""}, 422, "text is empty"),
        ("post", "/explain", {"text": "a" * 2001}, 413, "(max_text_chars)"),
    ],
)
def test_unknown_paths_wrong_methods_and_bad_explains_are_one_line_too(one, method, path, body, status, words):
    r = getattr(one, method)(path, **({"json": body} if body is not None else {}))
    assert r.status_code == status and words in r.json()["error"] and "\n" not in r.json()["error"], r.text
    assert one.post("/explain", json={"text": "superb film"}).status_code == 200


def test_with_several_models_a_request_names_one(two):
    r = two.post("/predict", json={"texts": ["a"]})
    assert r.status_code == 422 and r.json()["error"] == (
        "model is missing: 2 models are served; give one of: dot, additive"
    )


def test_an_api_key_is_asked_of_every_path_but_health(tiny_run):
    with client_of([tiny_run], api_key="s3cret") as c:
        assert c.get("/health").status_code == 200
        for path in ("/", "/docs", "/browse", "/openapi.json"):
            r = c.get(path)
            assert r.status_code == 401 and "API key" in r.text and "/?key=" in r.text, path
        assert c.post("/predict", json={"texts": ["a"]}, headers={"X-API-Key": "wrong"}).status_code == 401
        assert c.post("/predict", json={"texts": ["a"]}, headers={"X-API-Key": "s3cret"}).status_code == 200
        assert c.post("/predict", json={"texts": ["a"]}, headers={"Authorization": "Bearer s3cret"}).status_code == 200
        page = c.get("/?key=s3cret&text=superb")
        assert page.status_code == 200 and "name='key' value='s3cret'" in page.text  # (the form keeps it)


def test_an_empty_key_or_a_prefix_of_the_key_is_refused_in_every_form(tiny_run):
    with client_of([tiny_run], api_key="s3cret") as c:
        for given in ("", "s3", "s3cre"):
            assert c.get("/browse", params={"key": given}).status_code == 401, repr(given)
            headers = {"X-API-Key": given}
            assert c.post("/predict", json={"texts": ["a"]}, headers=headers).status_code == 401, repr(given)
            bearer = {"Authorization": f"Bearer {given}"}
            assert c.post("/predict", json={"texts": ["a"]}, headers=bearer).status_code == 401, repr(given)


@pytest.mark.parametrize(
    "host,key,words",
    [
        ("0.0.0.0", None, "host='0.0.0.0' serves beyond this machine: give an API key"),
        ("::1", None, None),
        ("localhost", None, None),
        ("192.168.1.5", "k", None),
    ],
)
def test_a_host_beyond_this_machine_needs_a_key(host, key, words, tiny_run, monkeypatch):
    monkeypatch.delenv("ATTNCLF_API_KEY", raising=False)
    s = ServeConfig(ckpt=str(tiny_run), host=host, api_key=key)
    if words is None:
        checked(s)
        return
    with pytest.raises(AttnclfError, match=words.replace("(", r"\(")):
        checked(s)
    monkeypatch.setenv("ATTNCLF_API_KEY", "from-env")
    assert checked(ServeConfig(ckpt=str(tiny_run), host=host)).api_key == "from-env"


@pytest.mark.parametrize(
    "kw,words",
    [
        ({"ckpt": None}, "give the checkpoint to serve"),
        ({"ckpt": "/no/such/run"}, "ckpt='/no/such/run': no such checkpoint or run folder"),
        ({"names": ["a", "a"], "twice": True}, "names: 'a' given twice"),
        ({"names": ["a"], "twice": True}, "1 names for 2 checkpoints"),
        ({"names": ["a b"]}, "'a b' is not a name"),
        ({"port": 70000}, "port=70000 must be in 0..65535"),
        ({"max_texts": 0}, "max_texts=0 must be a positive integer"),
        ({"device": "tpu"}, "device='tpu'"),
    ],
)
def test_bad_settings_are_one_line(kw, words, tiny_run, tiny_run_additive):
    kw = dict(kw)
    ckpt = [str(tiny_run), str(tiny_run_additive)] if kw.pop("twice", False) else kw.pop("ckpt", str(tiny_run))
    with pytest.raises(AttnclfError, match=words.replace("(", r"\(").replace("[", r"\[")) as e:
        checked(ServeConfig(ckpt=ckpt, **kw))
    assert "\n" not in str(e.value)


def test_the_same_run_twice_is_refused_and_names_given_are_used(tiny_run, tiny_run_additive):
    from attnclf.commands.serve import load_models

    with pytest.raises(AttnclfError, match="is given twice; serve each model once"):
        load_models(serve_config([tiny_run, tiny_run_additive, tiny_run]))
    models = load_models(serve_config([tiny_run, tiny_run_additive], names=["mine", "theirs"]))
    assert [m.name for m in models] == ["mine", "theirs"]


def test_the_page_shows_every_model_side_by_side_and_escapes_the_text(two):
    text = "superb <img src=x onerror=alert(1)> & dull"
    r = two.get("/", params={"text": text})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    page = r.text
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert page.count("<section class='model'") == 2 and "data-model='dot'" in page and "data-model='additive'" in page
    assert page.count("class='label'") == 2 and page.count("class='tau'") == 4  # (two taus a model)
    # shaded by attention; the other measures and scales a link away, each link keeping the text
    assert page.count("title='attention ") == 2 * len(tokenize(text))
    for change in ("shade=gradient", "shade=loo", "scale=max"):
        assert f"?text=superb+%3Cimg+src%3Dx+onerror%3Dalert%281%29%3E+%26+dull&amp;{change}'" in page, change
    assert "src=" not in page.replace("src=x", "") and "http" not in page  # (nothing fetched from elsewhere)


def test_the_page_refuses_a_text_over_the_limit_in_one_line(one):
    r = one.get("/", params={"text": "a" * 2001})
    assert r.status_code == 413 and "at most 2000 (max_text_chars)" in r.text and "class='model'" not in r.text


def kept_rows(run, names=("dot", "additive")) -> list[dict]:
    """The rows /browse kept in `run`'s folder for the served models `names` (other servers keep their own)."""
    kept = [json.loads(f.read_text())["rows"] for f in run.glob("browse_test_500_s42_*.json")]
    (rows,) = [r for r in kept if list(r[0]["models"]) == list(names)]
    return rows


def rows_shown(page: str) -> list[int]:
    return [int(x) for x in re.findall(r"<tr><td><a href='/\?row=(\d+)'", page)]


def all_pages(client, **params) -> list[int]:
    """The rows /browse shows over its pages (50 a page), as a user reads them following its "next" links."""
    shown, page = [], client.get("/browse", params=params).text
    while True:
        shown += rows_shown(page)
        after = re.search(r"<a href='([^']*)'>next</a>", page)
        if not after:
            return shown
        page = client.get(html.unescape(after.group(1))).text


def test_browse_lists_the_runs_test_rows_orders_them_and_opens_each(two, tiny_run):
    r = two.get("/browse")
    assert r.status_code == 200
    rows = kept_rows(tiny_run)
    # (80 test rows: fewer than 500; 50 a page)
    assert rows_shown(r.text) == list(range(50)) and "rows 1-50 of 80" in r.text
    assert all_pages(two) == [x["row"] for x in rows] == list(range(80))
    assert set(rows[0]["models"]) == {"dot", "additive"}

    def lowest(x):
        return min([m["tau"] for m in x["models"].values() if m["tau"] is not None] or [np.inf])

    def wrong(x):
        return -sum(m["label"] != x["label"] for m in x["models"].values())

    def disagree(x):
        return -len({m["label"] for m in x["models"].values()})

    for order, key in (("tau", lowest), ("misclassified", wrong), ("disagree", disagree)):
        assert all_pages(two, order=order) == [x["row"] for x in sorted(rows, key=key)], order
    opened = two.get("/", params={"row": rows[5]["row"]})
    assert opened.status_code == 200 and f"true label: <b class='gold'>{rows[5]['label']}</b>" in opened.text
    assert two.get("/browse", params={"order": "nosuch"}).status_code == 422
    assert two.get("/", params={"row": "99999"}).status_code == 404


def test_the_browse_table_downloads_as_csv_with_the_pages_rows_in_its_order(two, tiny_run):
    """/browse.csv: the page's rows in the page's order, every model's label, probability (full precision) and
    tau, the whole text; the page links to it with its order (and the key where one is in use)."""
    import csv
    import io

    assert two.get("/browse").status_code == 200
    rows = {x["row"]: x for x in kept_rows(tiny_run)}
    for order in ("row", "tau", "misclassified"):
        page = two.get("/browse", params={"order": order}).text
        assert f"href='/browse.csv{'' if order == 'row' else '?order=' + order}' download>" in page
        r = two.get("/browse.csv", params={"order": order})
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
        assert r.headers["content-disposition"] == "attachment; filename=browse.csv"
        # (a test row holds a 1 MB review: over the csv module's default field limit)
        limit = csv.field_size_limit(10**8)
        table = list(csv.reader(io.StringIO(r.text)))
        csv.field_size_limit(limit)
        assert table[0][:5] == [
            "row",
            "true",
            "dot label",
            "dot prob",
            "dot tau (Kendall, attention vs |gradient x input|)",
        ]
        assert [int(line[0]) for line in table[1:]] == all_pages(two, order=order)
        for line in table[1:]:
            want = rows[int(line[0])]
            models = [want["models"][n] for n in ("dot", "additive")]
            cells = [str(v) for m in models for v in (m["label"], m["prob"], "" if m["tau"] is None else m["tau"])]
            cut = "yes" if want["truncated"] else "no"
            assert line == [str(want["row"]), want["label"], *cells, str(want["tokens"]), cut, want["text"]]
    assert two.get("/browse.csv", params={"order": "nosuch"}).status_code == 422


def test_browse_filters_by_a_word_the_true_label_and_a_models_mistakes_and_the_csv_follows(two, tiny_run):
    """/browse?word=&label=&wrong=: the rows that hold the word (as the tokenizer reads it), of that true label,
    misclassified by that model, all three together, over the pages and in the CSV; the form's emptied fields
    are no filter; a model that is not served is a 422."""
    import csv
    import io

    assert two.get("/browse").status_code == 200
    rows = kept_rows(tiny_run)
    word = tokenize(rows[7]["text"])[2]
    label = rows[0]["label"]
    cases = [
        ({"word": word.upper()}, lambda x: word in tokenize(x["text"])),
        ({"label": label}, lambda x: x["label"] == label),
        ({"wrong": "dot"}, lambda x: x["models"]["dot"]["label"] != x["label"]),
        (
            {"label": label, "wrong": "additive"},
            lambda x: x["label"] == label and x["models"]["additive"]["label"] != label,
        ),
        ({"word": "", "label": "", "wrong": ""}, lambda x: True),
    ]
    for params, keep in cases:
        want = [x["row"] for x in rows if keep(x)]
        assert all_pages(two, **params) == want, params
        limit = csv.field_size_limit(10**8)
        table = list(csv.reader(io.StringIO(two.get("/browse.csv", params=params).text)))
        csv.field_size_limit(limit)
        assert [int(line[0]) for line in table[1:]] == want, params
    assert (
        0 < len(all_pages(two, word=word)) < 80
        and "no row is selected" in two.get("/browse", params={"word": "zzqx"}).text
    )
    assert two.get("/browse", params={"wrong": "nosuch"}).status_code == 422
    assert two.get("/browse", params={"page": 0}).status_code == 422


def test_browse_samples_by_the_seed_setting(tiny_run):
    """Two servers with one seed show the same rows (the second reads what the first kept), another seed
    other rows: 20 of the run's 80 test rows."""
    shown = {}
    for seed in (3, 3, 4):
        with client_of([tiny_run], browse_rows=20, seed=seed) as c:
            shown.setdefault(seed, []).append(rows_shown(c.get("/browse").text))
    assert shown[3][0] == shown[3][1] and len(shown[3][0]) == 20
    assert shown[4][0] != shown[3][0] and len(shown[4][0]) == 20


def test_docs_describes_every_endpoint_and_the_limits_without_fetching_anything(two):
    r = two.get("/docs")
    assert r.status_code == 200 and "src=" not in r.text and "href='http" not in r.text
    for what in ("POST /predict", "POST /explain", "GET /health", "max_texts: 64", "texts"):
        assert what in r.text
    shown = html.unescape(r.text)
    assert '-d \'{"texts": ["a wonderful film"]}\' http://testserver/predict' in shown
    assert '-d \'{"text": "a wonderful film"}\' http://testserver/explain' in shown
    schema = two.get("/openapi.json").json()
    body = schema["paths"]["/predict"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert schema["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]["required"] == ["texts", "model"]


def test_the_batcher_runs_what_arrived_while_the_model_was_busy_as_one_batch_sorted_by_length():
    """The first request runs alone; the nine that arrive while it runs go together, shortest first and at
    most batch_tokens padded tokens a batch (here run_batch records each batch it is given)."""
    busy, seen = threading.Event(), []

    def run_batch(readings):
        seen.append(list(readings))
        if len(seen) == 1:
            busy.wait(5)
        return [r * 10 for r in readings]

    async def main():
        b = Batcher(run_batch, ThreadPoolExecutor(1), batch_tokens=1000, max_queue=100)
        b.start()
        first = asyncio.ensure_future(b.submit([1], [5]))
        await asyncio.sleep(0.05)
        rest = [asyncio.ensure_future(b.submit([i], [i])) for i in range(2, 11)]
        await asyncio.sleep(0.05)
        busy.set()
        out = await asyncio.gather(first, *rest)
        await b.stop()
        return out

    assert asyncio.run(main()) == [[10], *[[i * 10] for i in range(2, 11)]]
    assert seen == [[1], list(range(2, 11))]


def test_a_full_queue_refuses_at_once_and_drains():
    gate = threading.Event()

    def run_batch(readings):
        gate.wait(5)
        return list(readings)

    async def main():
        b = Batcher(run_batch, ThreadPoolExecutor(1), batch_tokens=1000, max_queue=3)
        b.start()
        waiting = asyncio.ensure_future(b.submit([1, 2, 3], [1, 1, 1]))
        await asyncio.sleep(0.05)
        with pytest.raises(Busy, match=r"3 texts are waiting \(at most 3: max_queue\)"):
            await b.submit([4], [1])
        gate.set()
        assert await waiting == [1, 2, 3]
        assert await b.submit([4], [1]) == [4]
        await b.stop()

    asyncio.run(main())


def test_dynamic_batches_give_what_one_text_at_a_time_gives(tiny_run):
    """predict_readings by token budget, over texts of very different lengths, against each text alone."""
    clf = TrainedClassifier.from_checkpoint(tiny_run)
    texts = ["superb", TEXT, "awful dull " * 40, "great " * 300, "the plot was dull"]
    together = clf.predict_readings([clf.read(t) for t in texts], batch_tokens=700)
    for t, p in zip(texts, together, strict=True):
        alone = clf.predict_readings([clf.read(t)])[0]
        assert p.tokens == alone.tokens and np.allclose(p.probs, alone.probs, atol=1e-6)
        assert np.allclose(p.weights, alone.weights, atol=1e-6)


def test_the_listening_socket_is_tcp_so_that_answers_are_not_held_back(tmp_path):
    """asyncio turns Nagle's algorithm off (TCP_NODELAY) only on sockets whose proto says TCP: a socket made
    without it held each keep-alive answer for 40 ms (delayed ACKs), ten times the work of a request."""
    import socket

    from attnclf.commands.serve import listening_socket

    sock = listening_socket("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
        with pytest.raises(AttnclfError, match=f"port={sock.getsockname()[1]} is in use on 127.0.0.1"):
            listening_socket("127.0.0.1", sock.getsockname()[1]).close()
    finally:
        sock.close()


@pytest.mark.parametrize(
    "args,words",
    [
        ([], "give the checkpoint to serve"),
        (["names=[a,a]", "twice"], "names: 'a' given twice"),
        (["host=0.0.0.0"], "host='0.0.0.0' serves beyond this machine"),
        (["port=abc"], "port='abc' must be"),
        (["nosuch=1"], "nosuch is not a setting"),
    ],
)
def test_bad_settings_from_the_command_line_are_one_line_exit_2_and_leave_nothing_behind(
    args, words, tiny_run, tiny_run_additive, tmp_path, monkeypatch, capsys, in_process
):
    from attnclf.commands import main

    monkeypatch.delenv("ATTNCLF_API_KEY", raising=False)
    if args:
        args = [f"ckpt=[{tiny_run},{tiny_run_additive}]" if a == "twice" else a for a in args]
        args = args if any(a.startswith("ckpt=") for a in args) else [f"ckpt={tiny_run}", *args]
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(["serve", *args])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith("error: ") and words in err and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []


def test_serve_help_says_what_each_key_does(capsys, in_process):
    from attnclf.commands import main

    with pytest.raises(SystemExit) as e:
        main(["serve", "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and "max_texts" in out and "Ctrl-C or SIGTERM" in out and "api_key" in out


def test_a_served_model_is_said_with_its_own_encoder():
    """The page's line on each model names its encoder as trained: an LSTM run's is a BiLSTM (it said BiGRU for
    every run, reading a key the checkpoint does not hold at its top level)."""
    from types import SimpleNamespace

    from attnclf.commands.serve import rnn_of

    def run(rnn):
        return SimpleNamespace(module=SimpleNamespace(config=SimpleNamespace(model=SimpleNamespace(rnn=rnn))))

    assert (rnn_of(run("lstm")), rnn_of(run("gru"))) == ("BiLSTM", "BiGRU")


def documented(schema: dict, method: str, path: str, status: int) -> bool:
    """The route's answer `status` is in the schema, as the one-line error where a refusal."""
    answer = schema["paths"][path][method]["responses"].get(str(status))
    if answer is None:
        return False
    json_error = answer.get("content", {}).get("application/json", {}).get("schema", {})
    return status < 400 or json_error.get("$ref", "").endswith("/ErrorOut")


def test_each_bad_requests_answer_is_one_the_schema_describes_and_the_schema_holds_the_limits(one):
    schema = one.get("/openapi.json").json()
    for sent, status, _ in BAD:
        assert one.post("/predict", **sent).status_code == status and documented(schema, "post", "/predict", status)
    body = schema["components"]["schemas"]["PredictRequest"]
    texts = body["properties"]["texts"]
    assert (texts["minItems"], texts["maxItems"], texts["items"]["maxLength"]) == (1, 4, 2000)
    assert texts["items"]["minLength"] == 1 and body["additionalProperties"] is False
    # only real answers: FastAPI's own 422 'Validation Error' is gone where the route says its own
    assert "HTTPValidationError" not in json.dumps(schema) and set(schema["paths"]["/health"]["get"]["responses"]) == {
        "200"
    }
    assert set(schema["paths"]["/"]["get"]["responses"]) == {"200", "404", "413", "500", "503"}


def test_every_value_a_page_writes_back_is_escaped_key_order_and_row(tiny_run):
    markup = "<b id=x>'\""
    with client_of([tiny_run], api_key=markup) as c:
        page = c.get("/", params={"key": markup, "text": "superb"}).text
        assert "<b id=x>" not in page and "&lt;b id=x&gt;" in page
        for params in ({"key": markup, "order": markup}, {"key": markup, "row": markup}):
            r = c.get("/browse" if "order" in params else "/", params=params)
            assert r.status_code in (404, 422) and "<b id=x>" not in r.text and "&lt;b id=x&gt;" in r.text
        # /browse writes the filters back into its form and links
        r = c.get("/browse", params={"key": markup, "word": markup})
        assert r.status_code == 200 and "<b id=x>" not in r.text and r.text.count("&lt;b id=x&gt;") >= 2
        assert "value='&lt;b id=x&gt;&#39;&#34;'" in r.text


def test_a_batch_whose_model_call_fails_gives_its_places_back_and_each_request_one_line():
    def run_batch(readings):
        if any(r == "boom" for r in readings):
            raise RuntimeError("out of memory\nand more")
        return list(readings)

    async def main():
        b = Batcher(run_batch, ThreadPoolExecutor(1), batch_tokens=1000, max_queue=3)
        b.start()
        for _ in range(20):
            failed = await asyncio.gather(b.submit(["boom", "a"], [1, 1]), return_exceptions=True)
            assert str(failed[0]) == "the model failed on this request's batch: RuntimeError: out of memory"
        assert b.queued == 0 and await b.submit(["a", "b", "c"], [1, 1, 1]) == ["a", "b", "c"]
        await b.stop()

    asyncio.run(main())


def test_a_failed_batch_is_a_one_line_500_through_the_app(tiny_run, monkeypatch):
    monkeypatch.setattr(TrainedClassifier, "predict_readings", lambda *a, **k: 1 / 0)
    with client_of([tiny_run]) as c:
        r = c.post("/predict", json={"texts": ["superb"]})
        assert r.status_code == 500 and r.json() == {
            "error": "the model failed on this request's batch: ZeroDivisionError: division by zero"
        }


def test_explain_and_pages_wait_in_the_bounded_queue_counted_by_their_texts(tiny_run, tmp_path):
    """An /explain of n words runs n+2 texts and up to 3 x flip_within more, and counts so in max_queue: over
    it, a 503 (a page: its 503 page). /browse's rows, prepared from the start (a run folder that kept none),
    refuse no request meanwhile."""
    import shutil

    run = shutil.copytree(tiny_run, tmp_path / "run", ignore=shutil.ignore_patterns("browse_test_*"))
    words = " ".join(["superb"] * 20)
    with client_of([run], max_queue=27, flip_within=2) as c:
        assert c.post("/predict", json={"texts": [words] * 27}).status_code == 200
        r = c.post("/explain", json={"text": words})
        assert r.status_code == 503 and "(at most 27: max_queue)" in r.json()["error"]
        page = c.get("/", params={"text": words})
        assert page.status_code == 503 and page.headers["content-type"].startswith("text/html")
        assert c.post("/explain", json={"text": " ".join(["superb"] * 19)}).status_code == 200


def test_a_deleted_word_opens_the_edit_compared_with_the_pinned_original(two):
    """/?delete=i: the text less its i-th word, pinned to the original (a 303 to the whole state's address);
    the page then gives each model's probability and Δp as /predict gives them; a place past the text is a 422."""
    r = two.get("/", params={"text": TEXT, "delete": "1,3", "shade": "gradient"}, follow_redirects=False)
    edited = without_tokens(TEXT, [1, 3])
    assert r.status_code == 303
    assert r.headers["location"] == "/?" + urlencode({"text": edited, "pinned": TEXT, "shade": "gradient"})
    page = two.get(r.headers["location"]).text
    for name in ("dot", "additive"):
        before, after = (
            two.post("/predict", json={"texts": [t], "model": name}).json()["predictions"][0] for t in (TEXT, edited)
        )
        section = page.split(f"data-model='{name}'")[1].split("</section>")[0]
        assert f"<b class='prob'>{after['prob']:.3f}</b>" in section
        delta = after["probs"][before["label"]] - before["probs"][before["label"]]
        assert f"<b class='delta'>{delta:+.3f}</b>" in section and "class='pinned'" in section
    assert "title='|gradient x input| " in page
    past = two.get("/", params={"text": "superb film", "delete": "2"}, follow_redirects=False)
    assert past.status_code == 422 and "delete=2 is past the text's 2 words (0..1)" in html.unescape(past.text)
    # (the refused page keeps the text in its box: nothing typed is lost)
    assert "placeholder='Type or paste a text'>superb film</textarea>" in past.text
    # a key of the page that is not of its form says so, naming the value (not "empty" as a blank text is)
    # in words, never a regex
    bad = two.get("/", params={"text": "superb", "delete": "x"})
    assert (
        bad.status_code == 422
        and "delete='x': give the places of the words to delete: whole numbers from 0, comma-separated, e.g. 3,17</p>"
        in html.unescape(bad.text)
    )
    labels = "(dot: 0, 1; additive: 0, 1), e.g. dot:1</p>"
    for said in ("nosuch:pos", "dot:maybe", "dot"):
        bad = two.get("/browse", params={"said": said})
        words = f"said[0]={said!r}: give model:label, a served model and one of its labels {labels}"
        assert bad.status_code == 422 and words in html.unescape(bad.text), bad.text
    assert two.get("/browse", params={"said": "dot:1"}).status_code == 200
    csv.field_size_limit(10**8)  # (the 1 MB review)
    rows = len(list(csv.reader(io.StringIO(two.get("/browse.csv").text)))) - 1
    last = -(-rows // 50)
    assert two.get("/browse", params={"page": last}).status_code == 200
    past = two.get("/browse", params={"page": last + 1})
    words = f"page={last + 1} is past the last page, {last}, of the {rows} rows chosen</p>"
    assert past.status_code == 422 and words in html.unescape(past.text), past.text
    long_word = two.get("/browse", params={"word": "w" * 101})
    assert long_word.status_code == 413 and "word has 101 characters; at most 100</p>" in long_word.text


def test_the_analysis_downloads_as_json_with_each_models_explain(two):
    edited = "A film, really moving!"
    r = two.get("/explain.json", params={"text": edited, "pinned": TEXT})
    assert r.status_code == 200 and r.headers["content-disposition"] == "attachment; filename=explain.json"
    got = r.json()
    assert got["text"] == edited and got["pinned"] == TEXT
    for name in ("dot", "additive"):
        for text, part in ((edited, "models"), (TEXT, "pinned_models")):
            assert got[part][name] == two.post("/explain", json={"text": text, "model": name}).json()
    page = two.get("/", params={"text": edited, "pinned": TEXT}).text
    assert "href='/explain.json?" + html.escape(urlencode({"text": edited, "pinned": TEXT})) + "' download>" in page
    assert two.get("/explain.json").status_code == 422


def test_browse_gives_accuracy_by_slice_and_the_agreement_matrix_each_number_a_link_to_its_rows(two, tiny_run):
    assert two.get("/browse").status_code == 200
    rows = kept_rows(tiny_run)
    page = two.get("/browse").text
    metrics = page.split("<table class='metrics'>")[1].split("</table>")[0]
    cells = re.findall(r"<tr><td>([^<]*)</td><td class='num'><a href='([^']*)'>(\d+)</a></td>(.*?)</tr>", metrics)
    labels = sorted({x["label"] for x in rows})
    assert [c[0] for c in cells][:4] == ["all selected", *(f"true label {v}" for v in labels), "≤100 tokens"]
    for what, href, count, accuracies in cells:
        shown = (
            all_pages(two, **dict(parse_qsl(html.unescape(href).split("?", 1)[1]))) if "?" in href else all_pages(two)
        )
        assert len(shown) == int(count), what
        these = [x for x in rows if x["row"] in set(shown)]
        if not these:
            assert accuracies.count("–") == 2, what
            continue
        found = re.findall(r"<a href='([^']*)'[^>]*>([\d.]+)%</a>", accuracies)
        for name, (wrong_href, acc) in zip(("dot", "additive"), found, strict=True):
            right = sum(x["models"][name]["label"] == x["label"] for x in these)
            assert acc == f"{100 * right / len(these):.1f}", (what, name)
            mistakes = all_pages(two, **dict(parse_qsl(html.unescape(wrong_href).split("?", 1)[1])))
            assert mistakes == [x["row"] for x in these if x["models"][name]["label"] != x["label"]]
    matrix = page.split("<table class='matrix'")[1].split("</table>")[0]
    links = re.findall(r"<td class='cell'><a href='([^']*)'>(\d+)</a>", matrix)
    assert len(links) == 4 and sum(int(n) for _, n in links) == len(rows)
    for href, n in links:
        query = parse_qs(html.unescape(href).split("?", 1)[1])
        (a, x), (b, y) = (s.split(":", 1) for s in query["said"])
        want = [r["row"] for r in rows if r["models"][a]["label"] == x and r["models"][b]["label"] == y]
        assert all_pages(two, said=query["said"]) == want and len(want) == int(n)
    assert two.get("/browse", params={"said": "nosuch:pos"}).status_code == 422
    # the length slices count the text's tokens, as the model reads it, not its characters
    assert all(r["tokens"] == len(tokenize(r["text"])) for r in rows)
    short = [r["row"] for r in rows if len(tokenize(r["text"])) <= 100]
    assert all_pages(two, length="1-100") == short and 0 < len(short) < len(rows)


def test_an_edit_and_the_analysis_link_carry_the_api_key(tiny_run):
    with client_of([tiny_run], api_key="k3y") as c:
        r = c.get("/", params={"key": "k3y", "text": "superb film", "delete": "0"}, follow_redirects=False)
        assert r.status_code == 303 and parse_qs(r.headers["location"].split("?", 1)[1])["key"] == ["k3y"]
        page = c.get(r.headers["location"]).text
        assert "<input type='hidden' name='key' value='k3y'>" in page
        (download,) = re.findall(r"<a href='(/explain\.json\?[^']*)' download>", page)
        assert c.get(html.unescape(download)).status_code == 200
        assert c.get("/", params={"text": "superb film", "delete": "0"}).status_code == 401


def test_browse_is_prepared_from_the_start_and_a_first_visit_meanwhile_says_how_far_it_got(tiny_run, tmp_path):
    """With browse_wait=0 a first /browse answers at once with a page that refreshes itself (a meta refresh,
    no script) and says how many models have read the rows; the rows were being computed since the start,
    and the same address then gives them."""
    import shutil
    import time

    run = shutil.copytree(tiny_run, tmp_path / "run")
    for kept in run.glob("browse_test_*.json"):
        kept.unlink()
    with client_of([run], browse_wait=0) as c:
        # (asked as the server starts: the rows take the model a second or more, the page a few milliseconds)
        first = c.get("/browse")
        assert first.status_code == 200 and "<script" not in first.text
        assert "<meta http-equiv='refresh' content='5'>" in first.text and "class='progress'" in first.text
        assert re.search(r"/browse is being prepared: [01] of 1 model have read its 500 test rows", first.text)
        deadline = time.monotonic() + 120
        while "class='progress'" in (page := c.get("/browse").text) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "<table class='metrics'>" in page and "refresh" not in page
    assert list(run.glob("browse_test_*.json"))
    # prepared with no visit at all: kept in the run folder while nobody asked
    unvisited = shutil.copytree(tiny_run, tmp_path / "unvisited")
    for kept in unvisited.glob("browse_test_*.json"):
        kept.unlink()
    with client_of([unvisited], browse_wait=0) as c:
        deadline = time.monotonic() + 120
        while not list(unvisited.glob("browse_test_*.json")) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert list(unvisited.glob("browse_test_*.json"))


def test_the_api_docs_page_and_the_preparing_page_escape_what_they_show():
    """Pages rendered from templates (autoescaped): markup in any value they show is text, not markup."""
    from attnclf.presentation.api_docs import docs_page
    from attnclf.presentation.browse import preparing_page

    attack = "<img src=x onerror=alert(1)>"
    schema = {"paths": {f"/p{attack}": {"get": {"summary": attack, "responses": {"200": {"description": attack}}}}}}
    for page in (docs_page(schema, [("limit", attack)], key=f"k'{attack}"), preparing_page(attack, f"k'{attack}")):
        assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
        assert "k&#39;&lt;img" in page or "k%27%3Cimg" in page  # (the key in a link: quoted or escaped)
