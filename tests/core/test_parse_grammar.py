"""The grammar is the one description of the log: everything it knows is reachable through the
prefilter derived from it, and an addition made there alone is read."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dash.core.log import convert
from dash.core.log.convert import INT
from dash.core.log.grammar import GRAMMAR
from dash.core.log.parse import PARSER
from dash.core.log.parser import LineParser
from dash.core.log.syntax import Field, Phrase

PREFIXES = ("", "[2026-03-01 12:00:05 TP0] ", "INFO 05-01 12:00:10 [x.py:1] ",
            "(SGLangEngine pid=4242) [2026-03-01 12:00:05 DP1 TP3] ")


def _phrase_cases() -> list[tuple[Phrase, str]]:
    return [(ph, ex) for ph in GRAMMAR.phrases for ex in ph.examples]


def test_every_phrase_and_family_has_examples() -> None:
    assert all(ph.examples for ph in GRAMMAR.phrases)
    assert all(fam.examples for fam in GRAMMAR.families)


@pytest.mark.parametrize(("phrase", "example"), _phrase_cases(),
                         ids=[f"{p.event}:{e[:30]}" for p, e in _phrase_cases()])
def test_every_event_phrase_is_reachable_through_the_prefilter(phrase: Phrase, example: str) -> None:
    """Each example passes the derived prefilter and reads as its phrase's event, after every
    prefix shape (the level phrase needs a printed level: it is checked after vLLM's)."""
    for prefix in PREFIXES if not phrase.levels else ("ERROR 05-01 12:00:10 [x.py:1] ",):
        line = prefix + example
        assert PARSER.interest.search(line), line
        rec = PARSER.parse(line, 1)
        assert rec is not None and rec["kind"] == "event", line
        want = phrase.read(PARSER.prefixes.split(line).message, "ERROR" if phrase.levels else None)
        assert want is not None and rec["event"] == want["event"], line


@pytest.mark.parametrize("fam", GRAMMAR.families, ids=lambda f: f.name)
def test_every_stats_head_is_reachable_through_the_prefilter(fam: object) -> None:
    from dash.core.log.syntax import StatsFamily

    assert isinstance(fam, StatsFamily)
    for example in fam.examples:
        for prefix in PREFIXES:
            rec = PARSER.parse(prefix + example, 1)
            assert rec is not None and rec["kind"] == fam.kind, prefix + example
    for word in fam.keywords():  # a head that reads nothing is still counted, never dropped
        rec = PARSER.parse(f"[2026-03-01 12:00:05] {word} garbage", 1)
        assert rec is not None and rec["kind"] in ("unparsed", fam.kind), word


def test_a_phrase_without_literals_is_refused() -> None:
    with pytest.raises(ValueError, match="names no literal"):
        Phrase("foo", pattern=r"fo+ happened")


def test_a_new_phrase_brings_its_own_keywords() -> None:
    """Nothing but the phrase is added: its text reaches the prefilter by itself."""
    line = "[2026-03-01 12:00:05] Flux capacitor overheated at 88 mph"
    assert PARSER.parse(line) is None
    grammar = GRAMMAR.with_phrase(Phrase("flux", any=("Flux capacitor overheated",),
                                         pattern=r"at (\d+) mph",
                                         extract=lambda _msg, m: {"mph": int(m.group(1))}))
    rec = LineParser(grammar).parse(line, 4)
    assert rec is not None and (rec["event"], rec["mph"], rec["line"]) == ("flux", 88, 4)


def test_a_new_field_is_read_in_any_position() -> None:
    grammar = GRAMMAR.with_field("decode", Field("#foo-req", "foo_req", INT))
    base = ("[2026-03-01 12:00:05] Decode batch, #running-req: 3, #foo-req: 7, #token: 9, "
            "token usage: 0.10, gen throughput (token/s): 1.50, #queue-req: 0")
    rec = LineParser(grammar).parse(base)
    assert rec is not None and rec["foo_req"] == 7
    assert "foo_req" not in (PARSER.parse(base) or {})


def test_the_parser_pickles_as_its_grammar() -> None:
    import pickle

    grammar = GRAMMAR.with_field("decode", Field("#foo-req", "foo_req", INT))
    again = pickle.loads(pickle.dumps(LineParser(grammar)))
    assert again.grammar == grammar and again.keywords == LineParser(grammar).keywords


@pytest.mark.parametrize("conv", [convert.INT, convert.FLOAT, convert.COUNT, convert.BOOL,
                                  convert.RATIO],
                         ids=lambda c: c.name)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_plain_value_reads_the_same_with_the_builtin(conv: convert.Conv, data: st.DataObject) -> None:
    """The bulk reader reads plain values with a builtin: it must agree with the converter."""
    text = data.draw(st.from_regex(re.compile(conv.plain + r"\Z"), fullmatch=True))
    fast = convert.FAST[conv.kind](text)
    assert fast == conv.read(text) and type(fast) is type(conv.read(text))
    assert convert.FAST[conv.kind](text.encode()) == fast  # the bulk reader's are bytes
    if conv.kind == "int":
        assert str(fast) == text  # a plain int is its own JSON text


@settings(max_examples=500, deadline=None)
@given(data=st.data(), decimals=st.integers(0, convert.PERCENT_DECIMALS))
def test_a_plain_percent_reads_as_the_ratio_converter_reads_it(data: st.DataObject,
                                                              decimals: int) -> None:
    """A ratio printed as a percent (`88.50%`) is read by the bulk reader as its number, by
    its decimals: the fraction `to_ratio` gives, for every text of its form, one at a time or
    a column at once; every percent of 0..100 printed as servers print them (`%.1f`, `{:.2f}`)
    is of its form."""
    pattern = re.compile(convert.percent_plain(decimals) + r"\Z")
    texts = data.draw(st.lists(st.from_regex(pattern, fullmatch=True), min_size=1, max_size=5))
    printed = f"{data.draw(st.floats(0, 100)):.{decimals}f}"
    for text in [*texts, printed, "100" + "." * bool(decimals) + "0" * decimals]:
        want = convert.to_ratio(text + "%")
        kind = convert.percent_kind(text)
        assert kind == f"pct{decimals}" and want is not None, text
        assert convert.FAST[kind](text) == want and convert.FAST[kind](text.encode()) == want
        assert type(convert.FAST[kind](text.encode())) is float
    column = [t.encode() for t in texts]
    assert convert.read_plain(kind, column) == [convert.to_ratio(t + "%") for t in texts]


@pytest.mark.parametrize("odd", ["100.5", "101", "-5.0", "nan", "inf", "1e3", "5,0", " 5", "5.",
                                 ".5", "12.34567", "100.01", "", "0x1", "1_0"])
def test_a_percent_of_no_plain_form_is_the_converters(odd: str) -> None:
    """Above 100, signed, more decimals than the fast form's, or no number at all: no fast
    form (the converter reads it: None, or a value rounded as only it rounds)."""
    assert convert.percent_kind(odd) is None


@settings(max_examples=300, deadline=None)
@given(words=st.lists(st.text(alphabet="ab c.(", min_size=1, max_size=6), min_size=1, max_size=8),
       text=st.text(alphabet="ab c.(", max_size=30))
def test_the_keyword_trie_finds_what_the_words_find(words: list[str], text: str) -> None:
    """The prefilter is a trie of the grammar's literals: it finds a text that holds one."""
    from dash.core.log.syntax import keyword_pattern

    stripped = [w.strip() for w in words]
    want = any(w in text for w in stripped if w) if any(stripped) else False
    assert bool(re.search(keyword_pattern(tuple(words)), text)) == want
