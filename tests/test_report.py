"""minivit.report: tables and sentences of a run's numbers, as markdown."""

import math

import pytest

from minivit.report import Report, say, show, table, verdict


def test_table_from_rows_and_dicts():
    t = table([["ViT", "76.5%"], ["CNN", "84.7%"]], ["model", "accuracy"], caption="10,000 test images")
    assert t.markdown == ("10,000 test images\n\n| model | accuracy |\n|---|---|\n| ViT | 76.5% |\n| CNN | 84.7% |")
    d = table([{"model": "ViT", "z": 2.345678}, {"model": "CNN", "z": None}])
    assert "| ViT | 2.346 |" in d.markdown and "| CNN | – |" in d.markdown
    assert table([[1.0, math.nan]], ["a", "b"]).markdown.endswith("| 1 | – |")
    assert "a \\| b" in table([["a | b"]], ["x"]).markdown  # a pipe cannot break the table


def test_table_errors_say_what_was_expected():
    with pytest.raises(ValueError, match="at least one row"):
        table([], ["a"])
    with pytest.raises(ValueError, match="need `columns`"):
        table([[1, 2]])
    with pytest.raises(ValueError, match="row 1 has 1 cells, expected 2"):
        table([[1, 2], [3]], ["a", "b"])


def test_say_and_add():
    r = say("The ViT reaches 76.5%.", " The CNN 84.7%. ")
    assert r.markdown == "The ViT reaches 76.5%. The CNN 84.7%."
    assert (r + say("Next.")).markdown == "The ViT reaches 76.5%. The CNN 84.7%.\n\nNext."
    assert repr(r) == str(r) == r._repr_markdown_() == r.markdown
    with pytest.raises(ValueError):
        say("")
    with pytest.raises(TypeError):
        Report(3)


def test_verdict():
    words = ("ahead", "behind", "level")
    assert [verdict(z, *words) for z in (2.5, -2.5, 1.9, -1.1)] == ["ahead", "behind", "level", "level"]
    assert verdict(2.5, *words, bar=3) == "level"
    with pytest.raises(ValueError, match="NaN"):
        verdict(math.nan, *words)
    with pytest.raises(ValueError, match="positive"):
        verdict(1, *words, bar=0)


def test_show_prints_outside_a_notebook(capsys):
    show(say("a line"), table([[1]], ["x"]))
    assert capsys.readouterr().out == "a line\n| x |\n|---|\n| 1 |\n"
    with pytest.raises(TypeError, match="takes Reports"):
        show("plain text")
