"""The explorer and /browse in a real browser (headless Chromium, through selenium), served by `attnclf serve`
as a user starts it: a word clicked away and each model's new probability as /predict gives it, the flip
counts as /explain and a plain computation give them, a matrix cell's rows, the CSV download, and nothing run
from a shared link."""

from __future__ import annotations

import csv
import io
import json
import time
import urllib.request
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import pytest
from helpers.browser import chromium, need_chromium
from helpers.flips import fewest_to_flip
from helpers.server import served

from attnclf.data.text import tokenize, without_tokens
from attnclf.inference.trained import TrainedClassifier

pytestmark = pytest.mark.slow

TEXT = "A wonderful film, really moving! The plot was dull at times."
MODELS = ("dot", "additive")


@pytest.fixture(scope="module")
def server(tiny_run, tiny_run_additive, tmp_path_factory):
    need_chromium()
    with served([f"ckpt=[{tiny_run},{tiny_run_additive}]"], tmp_path_factory.mktemp("browser")) as s:
        yield s


@pytest.fixture(scope="module")
def driver(server):
    d = chromium()
    yield d
    d.quit()


def by_css(element, css: str):
    from selenium.webdriver.common.by import By

    return element.find_elements(By.CSS_SELECTOR, css)


def follow(driver, element) -> None:
    """Click `element` (a link or a form's button) and wait until the page it opens has loaded: the old page's
    element gone, the new one whole (a loaded machine answers slower than selenium's click returns)."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    element.click()
    # (asked while the old page is torn down, chromedriver can answer "unhandled inspector error": the page's
    # context is gone mid-question; under load that window is wide. Asked again until the new page is whole.)
    wait = WebDriverWait(driver, 120, ignored_exceptions=(WebDriverException,))
    wait.until(expected_conditions.staleness_of(element))
    wait.until(lambda d: d.execute_script("return document.readyState") == "complete")


def sections(driver) -> dict:
    return {s.get_attribute("data-model"): s for s in by_css(driver, "section.model")}


def predicted(server, text: str, model: str) -> dict:
    return server.post("/predict", {"texts": [text], "model": model})[1]["predictions"][0]


def test_the_page_shows_both_models_shaded_and_the_measure_a_link_away(server, driver):
    driver.get(server.url + "?text=" + quote(TEXT))
    shown = sections(driver)
    assert list(shown) == list(MODELS)
    for name, section in shown.items():
        assert by_css(section, ".label")[0].text == predicted(server, TEXT, name)["label"]
        words = by_css(section, "p.text .w")
        assert [w.text for w in words][:3] == ["A", "wonderful", "film"] and len(words) == len(tokenize(TEXT))
        # relative to uniform (the default): red above 1/n, blue below
        colours = [w.value_of_css_property("background-color") for w in words]
        assert all(c.startswith(("rgba(220, 40, 40", "rgba(40, 90, 220")) for c in colours), colours
        assert all(w.get_attribute("title").startswith("attention weight ") for w in words)
        bars = by_css(section, ".probs .bar")
        assert len(bars) == 2 and all(b.size["width"] > 0 for b in bars)
    follow(driver, by_css(driver, "p.tabs a")[0])  # |gradient x input|
    words = by_css(driver, "p.text .w")
    assert len(words) == 2 * 12 and all(w.get_attribute("title").startswith("|gradient x input| ") for w in words)
    assert "shade=gradient" in driver.current_url and "text=" in driver.current_url


def test_a_clicked_word_is_deleted_and_each_models_new_probability_is_what_predict_gives(server, driver):
    driver.get(server.url + "?text=" + quote(TEXT))
    (wonderful,) = [w for w in by_css(sections(driver)["dot"], "p.text .w") if w.text == "wonderful"]
    follow(driver, wonderful)
    edited = without_tokens(TEXT, [1])
    assert by_css(driver, "textarea")[0].get_attribute("value") == edited
    for name, section in sections(driver).items():
        before, after = predicted(server, TEXT, name), predicted(server, edited, name)
        assert by_css(section, ".prob")[0].text == f"{after['prob']:.3f}"
        delta = after["probs"][before["label"]] - before["probs"][before["label"]]
        assert by_css(section, ".delta")[0].text == f"{delta:+.3f}"
        assert len(by_css(section, "p.pinned .w")) == len(tokenize(TEXT))
        # the deleted word struck through in the pinned original
        assert [(w.text, w.tag_name) for w in by_css(section, "p.pinned del")] == [("wonderful", "del")]
        assert "line-through" in by_css(section, "p.pinned del")[0].value_of_css_property("text-decoration")
    # the address holds the whole state: opened afresh, the same view
    shared = driver.current_url
    assert shared == server.url + "?" + urlencode({"text": edited, "pinned": TEXT})
    deltas = [by_css(s, ".delta")[0].text for s in sections(driver).values()]
    driver.get("about:blank")
    driver.get(shared)
    assert [by_css(s, ".delta")[0].text for s in sections(driver).values()] == deltas
    # a word replaced in the text box: compared with the same pinned original
    box = by_css(driver, "textarea")[0]
    box.clear()
    replaced = TEXT.replace("wonderful", "dreadful")
    box.send_keys(replaced)
    follow(driver, by_css(driver, "form button[type='submit']")[0])
    assert parse_qs(urlsplit(driver.current_url).query) == {"text": [replaced], "pinned": [TEXT]}
    for name, section in sections(driver).items():
        before, after = predicted(server, TEXT, name), predicted(server, replaced, name)
        delta = after["probs"][before["label"]] - before["probs"][before["label"]]
        assert by_css(section, ".prob")[0].text == f"{after['prob']:.3f}"
        assert by_css(section, ".delta")[0].text == f"{delta:+.3f}"


def test_the_flip_counts_are_explains_and_a_plain_computations(server, driver, tiny_run, tiny_run_additive):
    runs = dict(zip(MODELS, (tiny_run, tiny_run_additive), strict=True))
    text = "dull, boring and too long but the acting is wonderful and moving"
    driver.get(server.url + "?text=" + quote(text))
    flipped = 0
    for name, section in sections(driver).items():
        clf = TrainedClassifier.from_checkpoint(runs[name])
        e = server.post("/explain", {"text": text, "model": name})[1]
        counts = {f.get_attribute("data-measure"): f.text for f in by_css(section, ".flips")}
        for measure, scores in (("attention", e["weights"]), ("gradient", e["gradient"])):
            count, words = fewest_to_flip(clf, e["tokens"], scores, 50)
            assert e["flip"][measure] == {"count": count, "words": words}
            said = "does not flip within 50 words" if count is None else f"{count} word{'s' * (count != 1)}"
            assert counts[measure] == said, (name, measure)
            flipped += count is not None
        assert len(by_css(section, "p.text .flip")) == (e["flip"]["attention"]["count"] or 0)
    assert flipped
    # a count's button deletes those words: the decision flips
    (name, section), *_ = [(n, s) for n, s in sections(driver).items() if by_css(s, "button.flips")]
    follow(driver, by_css(section, "button.flips")[0])
    section = sections(driver)[name]
    assert by_css(section, ".label")[0].text != by_css(section, ".was")[0].text


def rows_over_pages(driver) -> list[int]:
    from selenium.webdriver.common.by import By

    shown = []
    while True:
        shown += [int(a.text) for a in driver.find_elements(By.CSS_SELECTOR, "table:last-of-type tr td:first-child a")]
        after = driver.find_elements(By.LINK_TEXT, "next")
        if not after:
            return shown
        follow(driver, after[0])


def test_a_matrix_cells_link_opens_exactly_its_rows_and_the_csv_downloads_the_table(server, driver, tiny_run):
    driver.get(server.url + "browse")
    (kept,) = [
        rows
        for f in tiny_run.glob("browse_test_500_s42_*.json")
        if list((rows := json.loads(f.read_text())["rows"])[0]["models"]) == list(MODELS)
    ]
    cells = [(a.get_attribute("href"), int(a.text)) for a in by_css(driver, "table.matrix td.cell a")]
    assert len(cells) == 4 and sum(n for _, n in cells) == len(kept)
    href, n = max(cells, key=lambda c: c[1])
    caption = by_css(driver, "table.matrix td.cell a")[[c[0] for c in cells].index(href)]
    follow(driver, caption)
    said = [s.split(":", 1) for s in parse_qs(urlsplit(driver.current_url).query)["said"]]
    want = [r["row"] for r in kept if all(r["models"][m]["label"] == label for m, label in said)]
    assert rows_over_pages(driver) == want and len(want) == n
    # the CSV of these rows, as its link downloads it: the table's rows, every page
    driver.get(server.url + "browse?" + urlencode([("said", f"{m}:{label}") for m, label in said]))
    (download,) = [a for a in by_css(driver, "a[download]") if "browse.csv" in a.get_attribute("href")]
    with urllib.request.urlopen(download.get_attribute("href"), timeout=30) as r:
        limit = csv.field_size_limit(10**8)
        table = list(csv.reader(io.StringIO(r.read().decode())))
        csv.field_size_limit(limit)
    assert [int(line[0]) for line in table[1:]] == want


def test_no_edit_or_export_link_runs_a_script_from_a_shared_address(server, driver):
    attack = "superb <img src=x onerror=\"document.title='pwned'\"><script>document.title='pwned'</script>"
    other = "dull <svg onload=\"document.title='pwned'\"></svg>"
    for address in (
        "?" + urlencode({"text": attack}),
        "?" + urlencode({"text": attack, "pinned": other, "shade": "loo", "scale": "uniform"}),
        "browse?" + urlencode({"said": "dot:<img src=x onerror=\"document.title='pwned'\">"}),
        "browse?" + urlencode({"word": "<script>document.title='pwned'</script>"}),
    ):
        driver.get(server.url + address)
        time.sleep(0.3)
        assert driver.title.startswith("attnclf") and driver.title != "pwned", address
        assert by_css(driver, "img") == [] and by_css(driver, "script") == [] and by_css(driver, "svg") == []
    driver.get(server.url + "?" + urlencode({"text": attack, "pinned": other}))
    follow(driver, by_css(driver, "p.text .w")[0])  # (deleted: "superb")
    assert driver.title == "attnclf explorer" and by_css(driver, "img") == [] and by_css(driver, "script") == []
    assert "<img src=x" in by_css(driver, "textarea")[0].get_attribute("value")
    (download,) = [a for a in by_css(driver, "a[download]") if "explain.json" in a.get_attribute("href")]
    with urllib.request.urlopen(download.get_attribute("href"), timeout=60) as r:
        assert r.headers["content-type"] == "application/json" and json.loads(r.read())["pinned"] == other
