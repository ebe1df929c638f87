"""What people look at (attnclf/presentation): words readable on their cells, whole-number counts,
labels in a reader's words."""

import io
import logging
import warnings

import numpy as np
import pytest

from attnclf.presentation import figures
from attnclf.presentation.figures import (
    attention_heatmap,
    confusion_figure,
    faithfulness_figure,
    k_label,
    pyplot,
    readable_on,
)


def test_words_are_readable_on_the_darkest_and_the_lightest_cells():
    words = ["the", "film", "was", "superb"]
    fig = attention_heatmap(words, np.array([0.05, 0.05, 0.1, 0.8]), "title", columns=4)
    colours = {t.get_text(): t.get_color() for t in fig.axes[0].texts}
    assert colours["superb"] == "white" and colours["the"] == "black"  # (was black on the darkest red)
    fig = confusion_figure(np.array([[90, 3], [10, 97]]), ["neg", "pos"])
    colours = {t.get_text(): t.get_color() for t in fig.axes[0].texts}
    assert colours["97"] == "white" and colours["3"] == "black"
    assert readable_on((0.0, 0.0, 0.0, 1.0)) == "white" and readable_on((1.0, 1.0, 1.0, 1.0)) == "black"
    pyplot().close("all")


def test_a_character_no_font_holds_is_drawn_as_a_box_and_said_once(monkeypatch, caplog):
    """Private-use characters, which no font holds, in words, a title and class names: each drawn as a box, one
    line said for the process, and none of matplotlib's warnings (one a character, every figure)."""
    monkeypatch.setattr(figures, "SAID", set())
    words = ["great", "\ue000a", "\ue001", "film"]
    with warnings.catch_warnings(), caplog.at_level(logging.WARNING):
        warnings.simplefilter("error")
        for _ in range(2):
            fig = attention_heatmap(words, np.full(4, 0.25), "predicted \ue002", columns=4)
            fig.savefig(io.BytesIO(), format="png")
            pyplot().close(fig)
        # class names are the data's too
        confusion = confusion_figure(np.eye(2), ["\ue003", "b"])
        confusion.savefig(io.BytesIO(), format="png")
    shown = [t.get_text() for t in fig.axes[0].texts]
    assert shown == ["great", "\u25a1a", "\u25a1", "film"] and fig.axes[0].get_title() == "predicted \u25a1"
    assert [t.get_text() for t in confusion.axes[0].get_xticklabels()] == ["\u25a1", "b"]
    notes = [r.getMessage() for r in caplog.records if "no glyph" in r.getMessage()]
    assert len(notes) == 1 and notes[0].startswith(
        "figures: '\\ue000' and 1 more characters have no glyph in the fonts found (DejaVu Sans"
    ), notes
    assert figures.drawable(["great", "film"]) == ["great", "film"]


def test_the_faithfulness_figure_counts_reviews_in_whole_numbers_and_names_k_plainly():
    rng = np.random.default_rng(0)
    r = {
        "ks": ["k1", "k3", "k10pct"],
        "erasure": {"attention": {k: {"flipped": 0.1} for k in ("k1", "k3", "k10pct")}},
        "attention": "dot",
        "reviews": 3,
        "split": "test",
    }
    arrays = {
        "tau": {"gradient": rng.uniform(-1, 1, 3)},
        "flip_frac": np.array([0.2, np.nan, 0.5]),
        "entropy": rng.uniform(0, 3, 3),
        "tv": rng.uniform(0, 1, 3),
    }
    fig = faithfulness_figure(r, arrays)
    fig.canvas.draw()
    for ax in (fig.axes[0], fig.axes[2]):  # the two histograms of reviews
        ticks = [t for t in ax.get_yticks() if ax.get_ylim()[0] <= t <= ax.get_ylim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
    labels = [t.get_text() for t in fig.axes[1].get_xticklabels()]
    assert labels == ["top 1", "top 3", "top 10%"] and fig.axes[1].get_xlabel() == "tokens removed"
    assert [k_label(k) for k in r["ks"]] == ["top 1", "top 3", "top 10%"]
    pyplot().close("all")


def test_the_confusion_figure_has_true_classes_down_and_predicted_across():
    """Row i, column j: reviews of true class i predicted as j, drawn at x=j, y=i (not transposed)."""
    confusion = np.array([[90, 3, 1], [10, 97, 2], [4, 5, 60]])
    fig = confusion_figure(confusion, ["neg", "pos", "mixed"])
    ax = fig.axes[0]
    at = {t.get_text(): t.get_position() for t in ax.texts}
    for (i, j), v in np.ndenumerate(confusion):
        assert at[str(v)] == (j, i), (v, at[str(v)])
    assert (ax.images[0].get_array() == confusion).all()
    assert ax.get_xlabel() == "predicted" and ax.get_ylabel() == "true"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["neg", "pos", "mixed"]
    pyplot().close("all")


def test_html_shading_is_relative_to_the_reviews_peak_weight():
    """A long review's weights are all small: shaded by the raw weights the page would be almost white. The
    review's highest weight is full colour, the others in proportion."""
    import re
    from types import SimpleNamespace

    from attnclf.presentation.html import shade_words

    p = SimpleNamespace(
        text="good bad film", tokens=["good", "bad", "film"], positions=[0, 1, 2], weights=[0.01, 0.005, 0.002]
    )
    alphas = [float(a) for a in re.findall(r"rgba\(220,40,40,([0-9.]+)\)", shade_words(p))]
    assert alphas == [1.0, 0.5, 0.2]
    p.text, p.positions = "", []  # (the words as the model read them: the same rule)
    assert [float(a) for a in re.findall(r"rgba\(220,40,40,([0-9.]+)\)", shade_words(p))] == [1.0, 0.5, 0.2]


def test_the_uniform_scale_is_white_at_one_over_n_red_above_and_blue_below():
    """Relative to uniform: a word's share of the text's total against 1/n (log scale, full at 8x either way),
    so that near-uniform weights shade pale where the highest-relative scale paints them all dark."""
    import re
    from types import SimpleNamespace

    from attnclf.presentation.html import by_peak, by_uniform, shade_words

    def colours(weights, scale):
        p = SimpleNamespace(text="", tokens=["w"] * len(weights), positions=[], weights=weights)
        return re.findall(r"background:rgba\((\d+),\d+,\d+,([0-9.]+)\)", shade_words(p, scale=scale))

    near = [0.26, 0.25, 0.25, 0.24]
    assert all(float(a) < 0.05 for _, a in colours(near, by_uniform))
    assert all(float(a) > 0.9 for _, a in colours(near, by_peak))
    # 10 words, one 80 times the others: its share is 8.99 times uniform (full red), theirs 0.11 (full blue)
    assert colours([80.0] + [1.0] * 9, by_uniform) == [("220", "1.000")] + [("40", "1.000")] * 9
    # in between, the log of the share against uniform, base 8: 1.5 x uniform is red at log8(1.5)
    import math

    ratios = [w * 3 / 4 for w in (2.0, 1.0, 1.0)]
    want = [("220" if r >= 1 else "40", f"{abs(math.log(r, 8)):.3f}") for r in ratios]
    assert colours([2.0, 1.0, 1.0], by_uniform) == want and want[0] == ("220", "0.195")


def test_the_top_words_are_one_entry_a_word_with_its_highest_value_and_its_count():
    from attnclf.presentation.explorer import by_word

    tokens = ["i", "loved", "i", "it", "i", "x"]
    values = [0.00171, 0.3, 0.00162, 0.1, 0.00161, -1.0]
    assert by_word(tokens, values) == [("loved", 0.3, 1), ("it", 0.1, 1), ("i", 0.00171, 3)]


def test_the_predicted_class_reads_above_the_others_however_close():
    from attnclf.presentation.explorer import telling_digits

    assert telling_digits([0.2, 0.8], 1) == 3
    assert telling_digits([0.49996, 0.50004], 1) == 5  # (both 0.500 at 3 decimals, and 0.5000 at 4)


def test_a_browse_snippet_is_clean_text_cut_at_a_word():
    from attnclf.presentation.browse import snippet

    text = "A fine<br /><br />film.  " + "word " * 30
    said = snippet(text, 40)
    assert "<br" not in said and said.startswith("A fine film. word") and said.endswith(" …")
    assert len(said) <= 42 and said[:-2].split(" ")[-1] == "word"
    assert snippet("short<br/>one") == "short one"


def test_the_words_an_edit_deleted_are_found_in_the_original():
    from attnclf.presentation.explorer import deleted_places

    assert deleted_places("a wonderful film, really moving", "a film, moving") == [1, 3]
    assert deleted_places("same text", "same text") == []


def test_an_empty_selection_reads_no_rows_and_the_matrices_sit_in_a_grid():
    from attnclf.presentation.browse import Selection, browse_page, selected

    model = {"label": "pos", "prob": 0.9, "tau": 0.1}
    row = {"row": 0, "label": "pos", "text": "great", "tokens": 1, "truncated": False}
    rows = [{**row, "models": {"a": model, "b": model}}]
    none = Selection(word="nosuchword")
    empty = browse_page(rows, selected(rows, none), ["a", "b"], none, "about")
    assert "no rows: the selection holds none" in empty and "class='matrix'" not in empty
    full = browse_page(rows, rows, ["a", "b"], Selection(), "about")
    assert "<div class='matrices'><table class='matrix'" in full and "no rows:" not in full


@pytest.mark.parametrize("uniform", [True, False])
def test_compare_attentions_figures_have_a_colour_scale_each_and_pale_uniform_weights_on_the_uniform_one(uniform):
    """Each model's grid with its own colour bar; near-uniform weights (within 5% of 1/n) shade near white
    relative to uniform, and full red relative to the highest."""
    from attnclf.presentation.figures import attention_pair_figure

    words = [f"w{i}" for i in range(24)]
    flat = np.full(24, 1 / 24) * np.linspace(0.95, 1.05, 24)
    fig = attention_pair_figure([("a", words, flat), ("b", words, flat)], uniform=uniform)
    grids = [im for ax in fig.axes for im in ax.get_images()]
    assert len(fig.axes) == 4 and len(grids) == 2  # (two grids, two colour bars)
    colours = grids[0].cmap(grids[0].norm(grids[0].get_array().compressed()))
    darkest = 1 - colours[:, :3].min()
    assert (darkest < 0.15) if uniform else (darkest > 0.5), darkest
