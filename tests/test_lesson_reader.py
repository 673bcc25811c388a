"""physai.lesson_page.reader on the course's four lessons (../shared/seeds/) and physai's example lesson, and the lesson
server's routes and headers (no browser; tests/test_lesson_page.py drives the page in Chromium).

The expected questions, answers, steps and groups are read from the lesson text here by other means (the JSON decoder
at the block's offset, line patterns counted by hand-written regular expressions), never from the reader itself.
"""

import html
import json
import os
import re
import resource
import subprocess
import sys

import numpy as np
import pytest

from physai.cli import main
from physai.exceptions import LabError, LessonError
from physai.lab import lab_from_lesson_text, load_lab
from physai.lesson_page.reader import MAX_BYTES, lesson_from_text, read_lesson, safe_html
from physai.lab.server import serving
from physai.lesson_page.server import make_server

from lab.client import request   # tests/lab/: test support
from lab.lessons import EXAMPLE, json_checks, seed

def kinds(page) -> list[str]:
    return [b["kind"] for b in page.blocks]


def all_html(page) -> str:
    return "".join(b.get("html", "") for b in page.blocks)


def outside_math(fragment: str) -> str:
    return re.sub(r'<(span|div) class="math[^"]*">.*?</\1>', "", fragment, flags=re.S)


@pytest.mark.parametrize("number", ["002", "003"])
def test_knowledge_checks_of_the_markdown_lessons(number):
    text = seed(number).read_text(encoding="utf-8")
    expected = json_checks(text)
    page = read_lesson(seed(number))
    checks = [b for b in page.blocks if b["kind"] == "check"]
    assert len(expected) == len(checks) == 1
    for want, got in zip(expected, checks):
        assert got["id"] == want["id"] and got["title"] == want["title"]
        assert [q["id"] for q in got["questions"]] == [f"{want['id']}/{n}" for n in range(len(want["questions"]))]
        for w, g in zip(want["questions"], got["questions"], strict=True):
            assert g["kind"] == w["kind"] and g["answer"] == w["answer"]
            if w["kind"] == "numeric":
                assert (g["tol"], g["unit"]) == (w["tol"], w["unit"])
            else:
                assert len(g["options"]) == len(w["options"])
            assert html.unescape(re.sub(r"<[^>]+>", "", g["explain"])).strip()      # an explanation to reveal


def test_seed_002_has_its_docked_lab_and_typeset_math():
    text = seed("002").read_text(encoding="utf-8")
    page = read_lesson(seed("002"))
    labs = [b for b in page.blocks if b["kind"] == "lab"]
    assert len(labs) == 1 and labs[0]["dock"] is True
    assert page.labs[0].spec == lab_from_lesson_text(text, "seed 002").spec
    body = all_html(page)
    assert body.count('class="math') >= text.count("$$") // 2 + 1
    assert "$$" not in outside_math(body) and "\\[" not in outside_math(body)
    assert '<aside class="callout derivation">' in body and '<aside class="callout research">' in body
    assert "<figcaption>examples/l7_1_equations_of_motion.py</figcaption>" in body


def test_seed_000_rendered_lesson_steps_groups_and_exercises():
    text = seed("000").read_text(encoding="utf-8")
    lines = text.splitlines()
    page = read_lesson(seed("000"))
    steps = [b for b in page.blocks if b["kind"] == "steps"]
    assert len(steps) == 1
    after = lines[lines.index("Act on this lesson"):]
    assert len(steps[0]["items"]) == sum(bool(re.match(r"^\d\d · ", line)) for line in after) == 5
    groups = [b for b in page.blocks if b["kind"] == "questions"]
    headers = [re.match(r"^(.+) · (\d+) questions?", line) for line in lines]
    headers = [(m.group(1), int(m.group(2))) for m in headers if m]
    assert [(g["title"], len(g["questions"])) for g in groups] == headers
    assert sum(len(g["questions"]) for g in groups) == sum(line.startswith("Why:") for line in lines)
    for g in groups:
        for n, q in enumerate(g["questions"]):
            assert q["id"] == f"{g['title']}/{n}" and q["answer"] is None and len(q["options"]) >= 2 and q["explain"]
    exercises = [b for b in page.blocks if b["kind"] == "exercises"]
    assert [e["level"] for e in exercises[0]["items"]] == ["Easy", "Medium", "Hard"]
    assert all(e["answer"] for e in exercises[0]["items"])
    assert page.title == lines[0].strip()
    assert "<table" in all_html(page) and 'class="language-python"' in all_html(page)


def test_seed_004_plain_text_code_is_code():
    page = read_lesson(seed("004"))
    body = all_html(page)
    code = " ".join(re.findall(r'<code class="language-python">(.*?)</code>', body, flags=re.S))
    assert "def manipulator_matrices(q, dq):" in html.unescape(code)
    assert "2-DOF planar arm" in html.unescape(code)              # its comment lines stay in the code
    assert '<span class="math inline">' in body and '<div class="math block">' in body     # \( \) and $$
    assert "<li>" in body                                        # "•" lines as a list


def test_example_lesson_holds_every_block_kind():
    page = read_lesson(EXAMPLE)
    assert set(kinds(page)) == {"html", "steps", "questions", "check", "lab", "exercises"}
    assert page.notes == []
    assert [q["id"] for q in page.questions()] == ["Before you read/0", "example-check/0", "example-check/1"]
    assert json.loads(json.dumps(page.as_json()))["key"] == page.key


NASTY = [
    "", "   \n\t\n", "\x00\x01binary\x00", "```python\nno end", "```lab simlab {bad json", "```lab simlab",
    '{"questions": 5}', '{"id": "x", "questions": [{"kind": "mcq", "q": "?", "options": ["a"], "answer": 3}]}',
    '{"questions": [' * 50000, "[!derivation]", "> [!research] title only", "Quick check · 2 questions.",
    "Quick check · 1 question.\n\n1. Q?\n", "Act on this lesson", "Act on this lesson\n\n01 · ", "Easy. x\n\nAnswers",
    "a\tb", "$$", "$x", "\\[", "\\(x", "<script>alert(1)</script>", "```\n```\n```", "~~~~\n" * 100,
    "== x ==", "flowchart TD", "# \n## \n###", "Why: alone", "1. question\n\na\nb\n\nWhy:", "•", "\ufeff# BOM",
    # what would take minutes if reading were quadratic in the lines: 20,000 of each
    "```python\n" * 20000, "```python\nx = 1\n\nLabel:\n" * 5000, "\\[" * 20000, "`a` \\[ " * 20000,
    "> ```a\n" * 20000, "Act on this lesson\n01 · a\n" + "\n" * 20000 + "02 · b\n",
    "Quick check · 1 question.\n\n1. Q?\n\na\nb\n\nWhy: w\n" * 5000, '{"questions": [\n' * 20000, "\n" * 20000 + "x",
]


@pytest.mark.parametrize("text", NASTY)
def test_no_lesson_text_makes_reading_fail(text):
    page = lesson_from_text(text, "nasty")
    json.dumps(page.as_json())


def test_random_cuts_of_the_seeds_read():
    rng = np.random.default_rng(0)
    texts = [seed(n).read_text(encoding="utf-8") for n in ("000", "002", "003", "004")]
    for _ in range(60):
        text = texts[rng.integers(len(texts))]
        a, b = sorted(rng.integers(0, len(text), 2))
        json.dumps(lesson_from_text(text[a:b] + text[:rng.integers(0, 400)], "cut").as_json())


def test_markup_in_a_lesson_is_text_and_explanations_keep_only_safe_tags():
    page = lesson_from_text('<script>alert(1)</script>\n\n[x](javascript:alert(1))\n\n$$x$$ (dock)\n\n{"id": "c", "questions": '
                            '[{"kind": "mcq", "q": "<img src=x onerror=alert(1)>?", "options": ["<b>a</b>", "b"], '
                            '"answer": 0, "explain": "<p onclick=\\"x()\\">Yes <b style=\\"x\\">bold</b> $a_1$ costs $5 and $10 '
                            '<script>alert(2)</script><img src=x onerror=alert(3)></p>"}]}', "markup")
    body, check = all_html(page), next(b for b in page.blocks if b["kind"] == "check")
    assert "<script>" not in body and "&lt;script&gt;" in body and 'href="javascript' not in body
    assert " id=" not in body                                  # no equation label becomes an element id
    q = check["questions"][0]
    assert "<img" not in q["text"] and "&lt;img" in q["text"] and "<b>" not in q["options"][0]
    assert q["explain"].startswith('<p>Yes <b>bold</b> <span class="math inline">a_1</span> costs $5 and $10 ')
    assert "<script>" not in q["explain"] and "<img" not in q["explain"] and "onclick" not in q["explain"]
    assert "&lt;script&gt;alert(2)&lt;/script&gt;&lt;img src=x onerror=alert(3)&gt;" in q["explain"]   # shown as text
    assert safe_html("<ul><li>open") == "<ul><li>open</li></ul>"
    assert safe_html("<![foo[ bar $x$") == '&lt;![foo[ bar <span class="math inline">x</span>'      # the parser gave up


def html_of(text: str) -> str:
    return all_html(lesson_from_text(text, "case"))


def test_fences_end_where_commonmark_ends_them_and_unclosed_ones_where_extraction_left_them():
    assert "```python\nx = 1\n```\n</code></pre>\n<p>After.</p>" in html_of("````markdown\n```python\nx = 1\n```\n````\n\nAfter.\n")
    assert "<code>```\ncode\n</code></pre>\n<p>After.</p>" in html_of("~~~\n```\ncode\n~~~\n\nAfter.\n")
    assert "training:\n  b: 2\n</code></pre>\n<p>After.</p>" in html_of("```yaml\na: 1\n\ntraining:\n  b: 2\n```\n\nAfter.\n")
    assert '<code class="language-python">x = 1\n</code>' in html_of('```python title="Two words"\nx = 1\n```\n')
    extracted = html_of("```io\nIN: a\n\n```python file=f.py x = 1\ny = 2\n\nOutput:\n\n```text\n3\n")
    assert extracted.count("<pre>") == 3 and "<figcaption>f.py</figcaption>" in extracted
    assert '<code class="language-python">x = 1\ny = 2\n</code>' in extracted and "<p>Output:</p>" in extracted
    assert r"\[a-z\]" in html_of('Text.\n\n```python\nr"\\[a-z\\]"\n```\n')             # no math made in code
    assert r"\[a\]" in html_of("Use `\\[a\\]` here, and \\[b\\] there.\n") and '"math' in html_of("\\[b\\]\n")


def test_extraction_heuristics_stay_out_of_markdown_lessons():
    text = "## Intro\n\nHello world\n\nThis paragraph is\nhard wrapped.\n\nQuick check · 1 question.\n\n1. Q?\n\na\nb\n\nWhy: w\n"
    body = html_of(text + "\n1. a list item\n2. another\n")
    assert "<p>Hello world</p>" in body and "<br" not in body and "<li>a list item</li>" in body
    assert "<h2>Hello world</h2>" in html_of("Some text.\n\nHello world\n\nMore text.\n")      # extracted text: a heading


def test_question_groups_keep_their_count_and_ids_stay_unique():
    group = "Quick check · 1 question.\n\n1. Q?\n\na\nb\n\nWhy: w\n\n"
    check = '{"id": "c", "questions": [{"kind": "mcq", "q": "?", "options": ["a", "b"], "answer": 0}]}\n\n'
    page = lesson_from_text(group + "2. not a question\n\nx\ny\n\n" + group + check + check, "ids")
    ids = [q["id"] for q in page.questions()]
    assert ids == ["Quick check/0", "Quick check (2)/0", "c/0", "c (2)/0"] and len(set(ids)) == len(ids)


def test_exercises_and_answers_across_blank_lines_and_text_after_a_check():
    page = lesson_from_text("Easy. one\n\nHard. two\n\nAnswers\n\nA1\n\nA2\n", "ex")
    assert [(e["level"], e["answer"]) for e in page.blocks[0]["items"]] == [("Easy", "A1"), ("Hard", "A2")]
    page = lesson_from_text('{"id": "c", "questions": [{"kind": "mcq", "q": "?", "options": ["a", "b"], "answer": 0}]} '
                            "trailing words\n", "rest")
    assert kinds(page) == ["check", "html"] and "trailing words" in page.blocks[1]["html"]


def test_unusable_numbers_and_labs_are_noted_not_raised():
    huge = '{"id": "c", "questions": [{"kind": "numeric", "q": "?", "answer": 1' + "0" * 5000 + "}]}\n"
    assert kinds(lesson_from_text(huge, "huge")) == ["html"]
    page = lesson_from_text('```lab simlab {"model": "nonexistent_robot"}\n```\n', "lab")
    with serving(make_server(page, 0)) as server:                  # the lesson opens; its lab cannot run
        blocks = json.loads(request(server, "/lesson.json")[2])["blocks"]
        assert [b["available"] for b in blocks if b["kind"] == "lab"] == [False]
        assert "nonexistent_robot" in page.notes[-1] and request(server, "/lab/0/")[0] == 404


def test_a_non_english_lesson_reads_the_same():
    text = ("# Die Massenmatrix · 質量行列\n\nDie Gleichung $M\\ddot q = \\tau$ gilt für jeden Zustand.\n\n"
            '{"id": "de", "title": "Wissenstest", "questions": [{"kind": "numeric", "q": "Wie groß ist $M_{11}$ (kg m²)?", '
            '"answer": 0.486, "tol": 0.001, "unit": "kg m²", "explain": "<p>Übung: 0,486 — 正しい</p>"}]}\n')
    page = lesson_from_text(text, "de")
    assert page.title == "Die Massenmatrix · 質量行列"
    assert "für jeden Zustand" in all_html(page)
    check = next(b for b in page.blocks if b["kind"] == "check")
    assert check["title"] == "Wissenstest" and check["questions"][0]["unit"] == "kg m²"
    assert "正しい" in check["questions"][0]["explain"]


def test_a_malformed_knowledge_check_is_shown_with_a_note():
    page = lesson_from_text('Text.\n\n{"id": "c", "questions": [{"kind": "mcq", "q": "?", "options": ["a", "b"], '
                            '"answer": 5}]}\n', "bad")
    assert "check" not in kinds(page)
    assert len(page.notes) == 1 and "answer must be an option's index, 0 to 1; got 5" in page.notes[0]
    assert "&quot;answer&quot;: 5" in all_html(page)


def test_an_unreadable_lesson_is_a_named_error(tmp_path, capsys):
    bad = tmp_path / "latin1.md"
    bad.write_bytes("Übung".encode("latin-1"))
    with pytest.raises(LessonError, match="expected a UTF-8 text file"):
        read_lesson(bad)
    with pytest.raises(LessonError, match="cannot read the lesson"):
        read_lesson(tmp_path / "missing.md")
    assert main(["lesson", "open", str(bad), "--no-browser"]) == 2
    assert "expected a UTF-8 text file" in capsys.readouterr().err
    assert main(["lesson", "open", str(EXAMPLE), "--port", "99999"]) == 2
    assert main(["lesson", "open", str(EXAMPLE), "--colour"]) == 2
    assert main(["lesson", "eleven", "build"]) == 2
    assert main(["lesson", "open", str(EXAMPLE), "--untrusted", "--no-browser"]) == 2     # its lab holds scripts
    assert "lab 0 (The mass matrix of a swinging arm): setup, controls[0].run, readouts[0].expr" in capsys.readouterr().err



def _callouts(page) -> list[tuple[str, str]]:
    """(header text without the kind, body text) of each callout, tags dropped."""
    found = re.findall(r'<aside class="callout[^"]*"><header><span class="kind">[^<]*</span>(.*?)</header>(.*?)</aside>',
                       all_html(page), flags=re.S)
    text = lambda fragment: html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()     # noqa: E731
    return [(text(head), text(body)) for head, body in found]


@pytest.mark.parametrize("number", ["002", "003"])
def test_a_callout_title_joined_to_its_text_by_extraction_is_its_header(number):
    """A rendered lesson's "[!established] How MuJoCo computes the terms qfrc_bias comes from ..." (title and text on
    one line): the title in the header, the text below it; a callout that is one sentence keeps no title."""
    page = read_lesson(seed(number))
    lines = [line for line in seed(number).read_text(encoding="utf-8").splitlines() if re.match(r"^\[!\w+\] ", line)]
    assert lines
    callouts = _callouts(page)
    for line in lines:                                  # each one-line callout: a header, then the rest of the line
        rest = line.split("] ", 1)[1]
        assert any(head and len(head.split()) <= 12 and rest.startswith(f"{head} {body[:30]}") for head, body in callouts), \
            (rest, callouts)
    joined = lesson_from_text("[!established] How MuJoCo computes the terms qfrc_bias comes from mj_rne.\n")
    assert _callouts(joined) == [("How MuJoCo computes the terms", "qfrc_bias comes from mj_rne.")]
    sentence = lesson_from_text("[!established] Armature adds to the diagonal of $M$ only, and damping goes into the "
                                "passive forces.\n")
    assert _callouts(sentence)[0][0] == ""
    own_line = lesson_from_text("[!derivation] The two-link mass matrix\nM11 holds both links.\n")
    assert _callouts(own_line) == [("The two-link mass matrix", "M11 holds both links.")]

def test_a_lesson_or_lab_path_that_is_no_regular_text_file_is_a_named_error(tmp_path):
    big = tmp_path / "big.md"
    big.write_bytes(b"a" * (MAX_BYTES + 1))
    for path, message in [(tmp_path, "not a regular file"), (big, "larger than 1 MB"), ("lesson\0.md", "holds a NUL byte"),
                          ("/dev/zero" if os.path.exists("/dev/zero") else tmp_path, "not a regular file")]:
        with pytest.raises(LessonError, match=message):
            read_lesson(path)
        with pytest.raises(LabError, match=message):
            load_lab(str(path))


def _memory_cap():
    """A child's address space capped at 4 GB: a reader that reads /dev/zero to its end fails instead of filling memory."""
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="needs a FIFO and /dev/zero (POSIX)")
@pytest.mark.parametrize("command", [["lesson", "open"], ["lab"]])
def test_the_cli_refuses_a_device_or_a_fifo_in_one_line(tmp_path, command):
    """/dev/zero (size 0, endless) and a FIFO (no writer: opening it waits) are refused at once: exit 2, one line."""
    fifo = tmp_path / "lesson.md"
    os.mkfifo(fifo)
    for path in ["/dev/zero", str(fifo)]:
        done = subprocess.run([sys.executable, "-m", "physai.cli", *command, path, "--no-browser"], capture_output=True,
                              text=True, timeout=30, preexec_fn=_memory_cap)
        assert done.returncode == 2 and "not a regular file" in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


# ---- the server ----

def test_the_server_routes_the_page_its_blocks_and_its_labs():
    page = read_lesson(EXAMPLE)
    with serving(make_server(page, 0)) as server:
        status, headers, body = request(server, "/")
        assert status == 200 and b"lesson.js" in body
        csp = headers["Content-Security-Policy"]
        assert "frame-src 'self'" in csp and "frame-ancestors 'none'" in csp and headers["X-Frame-Options"] == "DENY"
        assert "script-src 'self';" in csp                      # the page itself compiles no code: no eval
        status, _, body = request(server, "/lesson.json")
        blocks = json.loads(body)["blocks"]
        assert status == 200 and [b["available"] for b in blocks if b["kind"] == "lab"] == [True]
        status, headers, body = request(server, "/lab/0/")
        assert status == 200 and b"lab.js" in body
        assert "frame-ancestors 'self'" in headers["Content-Security-Policy"] and headers["X-Frame-Options"] == "SAMEORIGIN"
        status, _, body = request(server, "/lab/0/lab.json")
        lab = json.loads(body)
        assert status == 200 and lab["spec"]["model"] == "arm2"
        assert request(server, f"/lab/0/model/{lab['model']['file']}")[0] == 200
        assert request(server, "/lab/1/")[0] == 404 and request(server, "/lab/0/model/other.xml")[0] == 404
        assert request(server, "/vendor/katex/katex.mjs")[0] == 200
        assert request(server, "/vendor/katex/../../package.json")[0] == 400
        assert request(server, "/", host="evil.example")[0] == 403
