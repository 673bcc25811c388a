"""A lesson file read as a page: its text as HTML (Markdown; math left as TeX for KaTeX in the page) and the blocks a
learner acts on.

    page = read_lesson("lesson.md")              # a Page; lesson_from_text(text, source, base_dir) on text
    page.as_json()                               # what the page's /lesson.json holds

A Page is a title, a storage key and a list of blocks, each a dict with a "kind":
    html       text: Markdown (CommonMark with tables; raw HTML is shown as text) with $...$, $$...$$, \\(...\\) and
               \\[...\\] math, fenced code (```python file=NAME), > [!derivation] / [!established] / [!research] callouts
    lab        a ```lab simlab {...}``` block: the lab (physai.lab.Lab), "dock" and "title"
    check      a JSON knowledge check {"id", "title", "questions": [{"kind": "mcq"|"numeric", "q", "options",
               "answer", "tol", "unit", "explain"}]}: answer is the 0-based option index, or the number within tol
    questions  a rendered lesson's question group ("Quick check · 2 questions."): numbered questions, their options
               and a "Why:" each; no answer is marked, so a choice reveals the why without a verdict
    steps      "Act on this lesson": the steps ("01 · Read ...") as a checklist
    exercises  "Easy. ..." / "Medium. ..." / "Hard. ..." with the "Answers" that follow them, hidden until asked for

It reads the formats of the course's lessons: Markdown-like lessons (## headings, math, callouts, fences, lab and
knowledge-check blocks), the text of a rendered lesson (a header table of tab-separated lines, bare headings, the
blocks above), and plain text with code (unfenced Python is recognised as code, "•" lines as lists). Text extraction
leaves fences unclosed and quotes curly: a fence never closed ends where the next fence, callout or check begins, or
at a short "Label:" line after a blank line; JSON is read with curly quotes as straight ones. Only in such extracted
text (no "##" headings, or fences never closed) is a bare short line a heading, and a rendered lesson's every line
break kept. Reading takes time linear in the lines (at most a few seconds for a file of MAX_BYTES).
Nothing in a lesson makes reading fail: what the reader does not recognise is text, and a lab or a knowledge check it
cannot use is shown as code with a note saying why (Page.notes). The text is UTF-8 (a byte order mark is dropped).
"""

import functools
import hashlib
import html
import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from physai.exceptions import LabError, LessonError
from physai.extras import require
from physai.lab.spec import BLOCK_START, MAX_FILE_BYTES, Lab, json_at, lab_block_at, read_text_file

#: Tags kept in a knowledge check's HTML (explanations); their attributes are dropped, other tags become text.
SAFE_TAGS = {"p", "br", "code", "em", "strong", "b", "i", "sub", "sup", "ul", "ol", "li", "span", "pre", "blockquote"}
#: Largest lesson file read (bytes).
MAX_BYTES = MAX_FILE_BYTES
#: A lab or knowledge-check block's JSON is looked for in at most this many characters, at most this many times a file.
JSON_WINDOW, JSON_ATTEMPTS = 1 << 18, 200

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s*(.*)$")
CALLOUT = re.compile(r"^(>\s?)?\[!(\w+)\]\s*(.*)$")
GROUP = re.compile(r"^(\S.{0,60}?) · (\d+) questions?\b\.?\s*(.*)$")
NUMBERED = re.compile(r"^(\d+)\.\s+(\S.*)$")
STEP = re.compile(r"^(\d{1,3}) · (\S.*)$")
EXERCISE = re.compile(r"^(Easy|Medium|Hard)\.\s+(\S.*)$")
CODE_START = re.compile(
    r"^\s*(import \w|from [\w.]+ import |def \w+\(|class \w+[(:]|@\w|return\b|(for|while|if|elif|with) .+:\s*(#.*)?$|"
    r"else:|try:|except\b|print\()"
    r"|^\s*[A-Za-z_][\w.\[\]]*(\s*,\s*[A-Za-z_][\w.\[\]]*)*\s*[-+*/@]?=(?!=)\s*\S")
DIAGRAM = re.compile(r"^(flowchart|graph|sequenceDiagram|classDiagram|stateDiagram)\b")
LABEL = re.compile(r"^\S[^:]{0,38}:$")


@dataclass
class Page:
    """A lesson read for the page: `blocks` in reading order (see the module docstring), `labs` the labs they use."""

    title: str
    source: str
    blocks: list[dict] = field(default_factory=list)
    labs: list[Lab] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        """16 hex digits naming this lesson in the browser's storage: its title and its checklist's steps."""
        steps = [item for b in self.blocks if b["kind"] == "steps" for item in b["items"]]
        return hashlib.sha256(json.dumps([self.title, steps]).encode()).hexdigest()[:16]

    def questions(self) -> list[dict]:
        """Every question the page asks: [{"id", "kind", "options"}] in reading order (the page's lesson.questions())."""
        return [{"id": q["id"], "kind": q["kind"], "options": len(q.get("options", []))}
                for b in self.blocks if b["kind"] in ("check", "questions") for q in b["questions"]]

    def as_json(self) -> dict:
        blocks = [{k: v for k, v in b.items() if k != "lab"} for b in self.blocks]
        return {"title": self.title, "source": self.source, "key": self.key, "notes": self.notes, "blocks": blocks}


def read_lesson(path: str | Path) -> Page:
    """The lesson file at `path` read as a page; LessonError when it is not a regular file of UTF-8 text of at most
    MAX_BYTES (a device such as /dev/zero, a FIFO) or its path holds a NUL byte (physai.lab.spec.read_text_file)."""
    text = read_text_file(path, "the lesson", LessonError, MAX_BYTES)
    path = Path(path).expanduser()
    return lesson_from_text(text, str(path), path.parent)


def lesson_from_text(text: str, source: str = "<lesson>", base_dir: Path | None = None) -> Page:
    """A lesson's text read as a page (see the module docstring); base_dir: where a lab's model path starts."""
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    page = Page(_title(lines, source), source)
    reader = _Reader(lines, page, base_dir)
    reader.run()
    return page


# ---- Markdown and math ----

def _math(tex: str, _options: dict) -> str:
    return html.escape(tex)


def _fence(self, tokens, idx, options, env) -> str:
    """A fenced block: its file name (```python file=NAME) as a caption above the code."""
    token = tokens[idx]
    words = token.info.split()
    name = next((w[5:] for w in words if w.startswith("file=")), "")
    token.info = words[0] if words else ""
    code = type(self).fence(self, tokens, idx, options, env)          # markdown-it's own fence rule
    return f'<figure class="code"><figcaption>{html.escape(name)}</figcaption>{code}</figure>\n' if name else code


@functools.cache
def _markdown_it(breaks: bool):
    """The Markdown parser (markdown-it-py, the lab extra, imported on first use): Markdown as written, or with every
    line break kept (breaks=True: the text of a rendered lesson, one paragraph per line)."""
    markdown_it = require("markdown_it", "lab", "physai's lesson page")
    dollarmath = require("mdit_py_plugins.dollarmath", "lab", "physai's lesson page")
    md = markdown_it.MarkdownIt("commonmark", {"html": False, "breaks": breaks}).enable("table")
    md.use(dollarmath.dollarmath_plugin, renderer=_math, double_inline=True, allow_digits=False, allow_labels=False)
    md.add_render_rule("fence", _fence)
    return md


#: What delimits math (and what it never spans: a code span, a blank line), for math_parts
MATH_TOKENS = re.compile(r"\$\$|\\\[|\\\]|\\\(|\\\)|\$|`[^`\n]*`|\n[ \t]*\n")
CLOSES = {"$$": "$$", "\\[": "\\]", "\\(": "\\)", "$": "$"}


def math_parts(text: str, dollars: bool = True) -> list[tuple[str, str]]:
    """`text` as [(kind, part)]: kind "text", "inline" ($x$, \\(x\\)) or "display" ($$x$$, \\[x\\]), part the TeX for math.
    One pass, left to right: math never spans a code span's edge or a blank line; $x$ as Markdown reads it (no space
    inside its dollars, no digit after the opening one or after the closing one: "$5 and $10" is text).
    dollars=False: only \\(...\\) and \\[...\\] are math."""
    parts, at, opened = [], 0, None                      # opened: (delimiter, where its TeX starts, where it starts)
    for m in MATH_TOKENS.finditer(text):
        token, i, j = m.group(), m.start(), m.end()
        if token.startswith("`") or token.startswith("\n"):
            if token.startswith("\n"):
                opened = None
            continue
        if opened and token == CLOSES[opened[0]]:
            if token != "$" or (text[i - 1] not in " \t\n" and not text[j:j + 1].isdigit()):
                parts.append(("text", text[at:opened[2]]))
                parts.append(("display" if token in ("$$", "\\]") else "inline", text[opened[1]:i]))
                at, opened = j, None
            continue
        if opened is None and token in CLOSES and (dollars or token[0] == "\\"):
            if token != "$" or (text[j:j + 1] not in ("", " ", "\t", "\n", "$") and not text[j:j + 1].isdigit()):
                opened = (token, j, i)
    parts.append(("text", text[at:]))
    return [(kind, part) for kind, part in parts if part or kind != "text"]


def dollars(text: str) -> str:
    """\\[...\\] and \\(...\\) as $$...$$ and $...$, which the Markdown parser reads (outside code spans)."""
    return "".join(part if kind == "text" else f"$${part.strip()}$$" if kind == "display" else f"${part.strip()}$"
                   for kind, part in math_parts(text, dollars=False))


def markdown(text: str, breaks: bool = False) -> str:
    """Markdown text (its math delimited by dollars: see dollars()) as HTML; breaks: keep line breaks."""
    return _markdown_it(breaks).render(text)


def inline(text: str) -> str:
    """One line of Markdown (a question, an option) as inline HTML, with its math."""
    return _markdown_it(False).renderInline(dollars(text))


class _SafeHTML(HTMLParser):
    """A knowledge check's HTML with only SAFE_TAGS (no attributes) kept as tags; math in its text as math spans."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.open: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in SAFE_TAGS:
            self.out.append(html.escape(self.get_starttag_text() or ""))
            return
        self.out.append(f"<{tag}>")
        if tag != "br":
            self.open.append(tag)

    def handle_endtag(self, tag):
        if tag not in self.open:
            self.out.append(html.escape(f"</{tag}>") if tag not in SAFE_TAGS else "")
            return
        while self.open:
            top = self.open.pop()
            self.out.append(f"</{top}>")
            if top == tag:
                break

    def handle_data(self, data):
        for kind, part in math_parts(data):
            if kind == "text":
                self.out.append(html.escape(part))
            else:
                tag = "div" if kind == "display" else "span"
                self.out.append(f'<{tag} class="math {"block" if kind == "display" else "inline"}">{html.escape(part)}</{tag}>')

    def result(self) -> str:
        self.close()
        return "".join(self.out) + "".join(f"</{t}>" for t in reversed(self.open))


def safe_html(fragment: str) -> str:
    """`fragment` with only the SAFE_TAGS kept (no attributes), other markup shown as text, math as math spans (the
    whole fragment as text when the HTML parser gives up on it)."""
    parser = _SafeHTML()
    try:
        parser.feed(fragment)
        return parser.result()
    except Exception:                                    # HTMLParser's own assertion on some malformed markup
        return "".join(html.escape(part) if kind == "text" else
                       f'<span class="math inline">{html.escape(part)}</span>' for kind, part in math_parts(fragment))


# ---- the reader ----

def _title(lines: list[str], source: str) -> str:
    """The first line when it reads as a title (short, a letter or digit first, no markup, code or closing
    punctuation), else the first "# " heading among the text's first lines, else the file's name."""
    first = next((line.strip() for line in lines if line.strip()), "")
    if 0 < len(first) <= 90 and first[0].isalnum() and not re.search(r"[<>=(){}\[\]`$\\\"“”]", first) \
            and first[-1] not in ".!?:,;":
        return first
    heading = next((line[2:].strip() for line in lines[:40] if line.startswith("# ") and len(line) <= 92), "")
    return heading or Path(source).stem


def _blank(line: str) -> bool:
    return not line.strip()


class _Code(str):
    """A block of code in the reader's text (a fence of its own making): no math conversion inside."""


class _Reader:
    """Walks the lines once: each rule either takes the block that starts at line i or leaves it to the text."""

    def __init__(self, lines: list[str], page: Page, base_dir: Path | None):
        self.lines, self.page, self.base_dir = lines, page, base_dir
        self.text: list[str] = []                     # the Markdown of the current html block: lines, and _Code blocks
        self.attempts = 0                             # JSON blocks looked for (JSON_ATTEMPTS)
        self.ids: dict[str, int] = {}                 # the question ids' prefixes used (checks, groups): how often
        n = len(lines)
        self.next_text = [n] * (n + 1)                # the first line with text at or after each line
        for k in range(n - 1, -1, -1):
            self.next_text[k] = k if lines[k].strip() else self.next_text[k + 1]
        self.first = self.next_text[0]
        # Text extraction's traces: no Markdown section headings, or fences that are never closed. Only then are a bare
        # short line read as a heading and, in a rendered lesson (its steps or question groups), each line break kept.
        headed = any(re.match(r"^#{2,6} \S", line) for line in lines) or (self.first < n and lines[self.first].startswith("# "))
        fenced = [FENCE.match(line) for line in lines]
        # per fence character: the next line at or after each line that is a bare fence (a closing), or one that opens
        # a fence with an info string
        self.next_bare, self.next_info = {}, {}
        for c in "`~":
            bare, info = [n] * (n + 1), [n] * (n + 1)
            for k in range(n - 1, -1, -1):
                f = fenced[k]
                own = f is not None and f.group(1)[0] == c
                bare[k] = k if own and not f.group(2).strip() else bare[k + 1]
                info[k] = k if own and f.group(2).strip() else info[k + 1]
            self.next_bare[c], self.next_info[c] = bare, info
        self.fences = fenced
        unclosed = any(f and f.group(2).strip() for f in fenced) and not any(f and not f.group(2).strip() for f in fenced)
        self.extracted = not headed or unclosed
        self.rendered = self.extracted and any(GROUP.match(line) or line.strip().lower() == "act on this lesson"
                                               for line in lines)

    def run(self) -> None:
        rules = (self.lab, self.check, self.fence, self.callout, self.group, self.steps, self.exercises, self.table,
                 self.printed, self.code)
        i, n = 0, len(self.lines)
        while i < n:
            for rule in rules:
                taken = rule(i)
                if taken is not None:
                    i = taken
                    break
            else:
                self.text.append(self.plain(i))
                i += 1
        self.flush()

    def skip_blank(self, j: int) -> int:
        return self.next_text[min(j, len(self.lines))]

    def unique(self, prefix: str) -> str:
        """`prefix`, or `prefix (2)`, `(3)`, ... when a question group or check of the page already has it."""
        n = self.ids.get(prefix, 0) + 1
        self.ids[prefix] = n
        name = prefix if n == 1 else f"{prefix} ({n})"
        while n > 1 and name in self.ids:               # a title that itself reads "Quick check (2)"
            name += "'"
        self.ids.setdefault(name, 1)
        return name

    # -- text --

    def plain(self, i: int) -> str:
        """Line i as Markdown: "•" bullets as list items; in extracted text, a bare short line between blank lines
        (not a sentence that goes on in math or code) as a heading."""
        line, s = self.lines[i], self.lines[i].strip()
        if line.startswith("• "):
            return "- " + line[2:]
        if i == self.first and s == self.page.title:
            return "# " + s
        if not self.extracted or not (0 < len(s) <= 60) or line[0] in " \t#>-*+|" or not s[0].isupper():
            return line
        if _blank(self.lines[i - 1]) and (i + 1 >= len(self.lines) or _blank(self.lines[i + 1])) \
                and s[-1] not in ".,;:!?)" and not NUMBERED.match(s):
            k = self.skip_blank(i + 1)
            if k >= len(self.lines) or not self.lines[k].lstrip().startswith(("$$", "\\[", "```")):
                return "## " + s
        return line

    def flush(self) -> None:
        """The text so far as one html block: its prose with \\[...\\] and \\(...\\) read as math, its code as is."""
        if not any(line.strip() for line in self.text):
            self.text = []
            return
        out, prose = [], []
        for entry in self.text + [_Code("")]:
            if isinstance(entry, _Code):
                out.extend([dollars("\n".join(prose)), entry])
                prose = []
            else:
                prose.append(entry)
        self.page.blocks.append({"kind": "html", "html": markdown("\n".join(out) + "\n", self.rendered)})
        self.text = []

    def add(self, block: dict) -> None:
        self.flush()
        self.page.blocks.append(block)

    def add_code(self, lang: str, body: list[str]) -> None:
        fence = "`" * max(3, max((len(r) for r in re.findall(r"`+", "\n".join(body))), default=0) + 1)
        self.text.append(_Code(f"{fence}{lang}\n" + "\n".join(body) + f"\n{fence}\n"))

    def shown_as_code(self, lines: list[str], note: str) -> None:
        """`lines` as a block of code under `note` (a block the reader could not use), the note also in Page.notes."""
        self.page.notes.append(note)
        self.flush()
        self.add_code("", lines)
        self.flush()
        self.page.blocks[-1]["html"] = f'<p class="note">{html.escape(note)}</p>' + self.page.blocks[-1]["html"]

    def window(self, i: int) -> str | None:
        """The text from line i on, at most JSON_WINDOW characters, for a JSON block starting there; None once the
        file has used up its JSON_ATTEMPTS (a file of thousands of would-be blocks is read as text, not re-decoded)."""
        self.attempts += 1
        if self.attempts > JSON_ATTEMPTS:
            return None
        text, size, j = [], 0, i
        while j < len(self.lines) and size < JSON_WINDOW:
            text.append(self.lines[j])
            size += len(self.lines[j]) + 1
            j += 1
        return "\n".join(text)

    def after_json(self, i: int, text: str, end: int) -> tuple[int, str]:
        """(the line after the one holding character `end` of `text` (the window from line i), the text after the JSON
        on that line); a closing fence right after the JSON is skipped."""
        j = i + text.count("\n", 0, end)
        rest = text[end:].split("\n", 1)[0]
        if rest.strip().strip("`").strip():
            return j + 1, rest
        if j + 1 < len(self.lines) and re.match(r"^\s*```\s*$", self.lines[j + 1]):
            return j + 2, ""
        return j + 1, ""

    def add_after(self, block: dict, rest: str) -> None:
        """The block, then what followed its JSON on its last line, as text."""
        self.add(block)
        if rest:
            self.text.append(rest)

    # -- the blocks --

    def lab(self, i: int):
        if not BLOCK_START.match(self.lines[i].lstrip()):
            return None
        text = self.window(i)
        if text is None:
            return None
        try:
            lab, end = lab_block_at(text, BLOCK_START.search(text), self.page.source, self.base_dir)
        except LabError as exc:
            j = self.next_blank(i)
            self.shown_as_code(self.lines[i:j], f"lab block at line {i + 1} not used: {exc}")
            return j
        self.page.notes.extend(lab.notes)
        self.page.labs.append(lab)
        j, rest = self.after_json(i, text, end)
        self.add_after({"kind": "lab", "index": len(self.page.labs) - 1, "title": lab.title,
                        "dock": bool(lab.spec.get("dock")), "lab": lab}, rest)
        return j

    def next_blank(self, i: int) -> int:
        return next((k for k in range(i + 1, len(self.lines)) if _blank(self.lines[k])), len(self.lines))

    def check(self, i: int):
        line = self.lines[i].lstrip()
        if not line.startswith("{") or not re.search(r"[\"“]questions[\"”]", "\n".join(self.lines[i:i + 3])):
            return None
        text = self.window(i)
        if text is None:
            return None
        try:
            value, end, _ = json_at(text, len(self.lines[i]) - len(line), self.page.source)
        except (ValueError, LabError):                 # not JSON after all (or a number too long to read): text
            return None
        j, rest = self.after_json(i, text, end)
        try:
            block = _knowledge_check(value, self.unique(str(value.get("id") or "check") if isinstance(value, dict) else "check"))
        except LessonError as exc:
            self.shown_as_code(self.lines[i:j], f"knowledge check at line {i + 1} not used: {exc}")
            return j
        self.add_after(block, rest)
        return j

    def fence(self, i: int):
        """A fenced block. Its end: the closing fence (CommonMark's: the same character, at least as many, nothing
        after); when the lesson never closes it, the next fence that opens with an info string, callout, lab, check or
        short "Label:" line after a blank line. Words after the language that are not name=value are its first line of
        code only when they read as code (extraction joins the first line to the fence)."""
        m = self.fences[i]
        if not m:
            return None
        marker, info = m.group(1), m.group(2)
        n, c = len(self.lines), marker[0]
        end = self.next_bare[c][i + 1]
        while end < n and len(self.fences[end].group(1)) < len(marker):     # a shorter fence is a line of the code
            end = self.next_bare[c][end + 1]
        reopened = self.next_info[c][i + 1]
        while reopened < min(end, n) and self.fences[reopened].group(1) != marker:
            reopened = self.next_info[c][reopened + 1]
        closed = end < n and reopened >= end
        if not closed:
            end = next((j for j in range(i + 1, n) if self.reopens(j, marker) or self.ends_unclosed(j)), n)
        head = re.match(r"^([^\s=]*)((?:\s+[\w-]+=\S+)*)\s*(.*)$", info)   # lang, name=value words, then the rest
        lang, attributes, rest = head.group(1), head.group(2).split(), head.group(3).strip()
        first = [rest] if rest and (CODE_START.match(rest) or rest[0] in "\"'“”‘’#") else []
        body = first + self.lines[i + 1:end]
        while body and _blank(body[-1]):
            body.pop()
        self.add_code(" ".join([lang, *attributes]).strip(), body)
        return end + 1 if closed else end

    def reopens(self, j: int, marker: str) -> bool:
        """Whether line j opens a fence of the same kind and length with a language: a new block, where the one before
        was never closed (text extraction), rather than a line of its code."""
        m = self.fences[j]
        return bool(m and m.group(2).strip() and m.group(1) == marker)

    def ends_unclosed(self, j: int) -> bool:
        """Whether line j ends a fence that text extraction left unclosed (see fence())."""
        line = self.lines[j]
        if CALLOUT.match(line) or BLOCK_START.match(line.lstrip()):
            return True
        if line.lstrip().startswith("{") and re.search(r"[\"“]questions[\"”]", "\n".join(self.lines[j:j + 3])):
            return True
        return j > 0 and _blank(self.lines[j - 1]) and bool(LABEL.match(line)) and not CODE_START.match(line)

    def callout(self, i: int):
        m = CALLOUT.match(self.lines[i])
        if not m:
            return None
        quoted, kind, rest = bool(m.group(1)), m.group(2).lower(), m.group(3)
        j, body = i + 1, []
        while j < len(self.lines) and (self.lines[j].startswith(">") if quoted else not _blank(self.lines[j])):
            body.append(self.lines[j][1:].removeprefix(" ") if quoted else self.lines[j])
            j += 1
        if body and (quoted or _is_title(rest)):                    # the first line a title of its own
            title, text = rest, "\n".join(body)
        else:                                                       # title and text on one line, as extraction joins them
            title, first = _title_and_text(rest)
            text = "\n".join([first, *body])
        self.add({"kind": "html", "html": f'<aside class="callout {html.escape(kind)}"><header><span class="kind">'
                  f'{html.escape(kind)}</span> {inline(title)}</header>{markdown(dollars(text))}</aside>'})
        return j

    def group(self, i: int):
        """A rendered lesson's question group: "TITLE · N questions. INTRO", then N numbered questions, each with its
        options (one per line) and a "Why: ..." line."""
        m = GROUP.match(self.lines[i].strip())
        if not m:
            return None
        title, count, questions, j = m.group(1).strip(), int(m.group(2)), [], i + 1
        while len(questions) < count:
            k = self.skip_blank(j)
            q = NUMBERED.match(self.lines[k]) if k < len(self.lines) else None
            if not q:
                break
            k = self.skip_blank(k + 1)
            options = []
            while k < len(self.lines) and not _blank(self.lines[k]) and not self.lines[k].startswith("Why:"):
                options.append(self.lines[k].strip())
                k += 1
            k = self.skip_blank(k)
            why = ""
            if k < len(self.lines) and self.lines[k].startswith("Why:"):
                why, k = self.lines[k][4:].strip(), k + 1
            if len(options) < 2:
                break
            questions.append({"kind": "mcq", "text": inline(q.group(2)), "options": [inline(o) for o in options],
                              "answer": None, "explain": inline(why)})
            j = k
        if not questions:
            return None
        name = self.unique(title)
        for n, q in enumerate(questions):
            q["id"] = f"{name}/{n}"
        self.add({"kind": "questions", "id": name, "title": title, "intro": inline(m.group(3)), "questions": questions})
        return j

    def steps(self, i: int):
        """"Act on this lesson", up to three lines of introduction, then its steps ("01 · Read ...")."""
        if self.lines[i].strip().lower() != "act on this lesson":
            return None
        j, intro, items = self.skip_blank(i + 1), [], []
        while j < len(self.lines) and not STEP.match(self.lines[j].strip()):
            if len(intro) == 3:
                return None
            intro.append(self.lines[j].strip())
            j = self.skip_blank(j + 1)
        while j < len(self.lines) and STEP.match(self.lines[j].strip()):
            items.append(inline(self.lines[j].strip()))
            j = self.skip_blank(j + 1)
        if not items:
            return None
        self.add({"kind": "steps", "title": self.lines[i].strip(), "intro": inline(" ".join(intro)), "items": items})
        return j

    def exercises(self, i: int):
        """"Easy. ..." / "Medium. ..." / "Hard. ..." lines, then, if it follows, "Answers" and one answer per exercise."""
        if not EXERCISE.match(self.lines[i]):
            return None
        j, items = i, []
        while j < len(self.lines) and EXERCISE.match(self.lines[j]):
            m = EXERCISE.match(self.lines[j])
            items.append({"level": m.group(1), "text": inline(m.group(2)), "answer": None})
            j = self.skip_blank(j + 1)
        if j < len(self.lines) and self.lines[j].strip() == "Answers":
            k, answers = self.skip_blank(j + 1), []
            while k < len(self.lines) and len(answers) < len(items):
                answers.append(self.lines[k].strip())
                k = self.skip_blank(k + 1)
            if len(answers) == len(items):
                for item, answer in zip(items, answers):
                    item["answer"] = inline(answer)
                j = k
        self.add({"kind": "exercises", "items": items})
        return j

    def table(self, i: int):
        """Tab-separated lines: a table (the lesson's header table, before any other text, as names and values)."""
        j = i
        while j < len(self.lines) and "\t" in self.lines[j].strip("\t ") and not FENCE.match(self.lines[j]):
            j += 1
        if j - i < 2:
            return None
        rows = [[inline(cell.strip()) for cell in self.lines[k].strip().split("\t")] for k in range(i, j)]
        width = max(len(r) for r in rows)
        cells = lambda r, tag: "".join(f"<{tag}>{c}</{tag}>" for c in r + [""] * (width - len(r)))  # noqa: E731
        if not self.page.blocks and not any(line.strip() for line in self.text[1:]):
            head, rows = "", [[f"<b>{r[0]}</b>", *r[1:]] for r in rows]
        else:
            head, rows = f"<thead><tr>{cells(rows[0], 'th')}</tr></thead>", rows[1:]
        self.add({"kind": "html", "html": f'<table class="tabbed">{head}<tbody>'
                  + "".join(f"<tr>{cells(r, 'td')}</tr>" for r in rows) + "</tbody></table>"})
        return j

    def printed(self, i: int):
        """Printed output (a "== Step 1. ... ==" line and what follows it up to a blank line), or a Mermaid diagram
        ("flowchart TD" and its indented lines), as preformatted text."""
        line = self.lines[i]
        diagram = DIAGRAM.match(line)
        if not (re.match(r"^==+ .+ ==+\s*$", line) or diagram):
            return None
        j = i + 1
        while j < len(self.lines) and not _blank(self.lines[j]) and (not diagram or self.lines[j][:1] in " \t"):
            j += 1
        self.add_code("mermaid" if diagram else "text", self.lines[i:j])
        return j

    def code(self, i: int):
        """Unfenced Python after a blank line: a run of code-like, indented and blank lines, ending on a statement."""
        if not CODE_START.match(self.lines[i]) or (i > 0 and not _blank(self.lines[i - 1])):
            return None
        j, last = i, i
        while j < len(self.lines):
            line = self.lines[j]
            if not (_blank(line) or line[0] in " \t#)]}" or CODE_START.match(line) or line.startswith(("'''", '"""'))):
                break
            if not _blank(line) and not line.startswith("#"):     # a run never ends on a comment or a heading
                last = j
            j += 1
        self.add_code("python", self.lines[i:last + 1])
        return last + 1


#: Words a callout's title does not end on
TITLE_STOPWORDS = {"a", "an", "the", "of", "and", "or", "to", "in", "on", "for", "by", "with", "from", "as", "at"}
#: A word that starts a callout's text after its title: a capitalised word ("Because"; not "MuJoCo's") or code
TEXT_START = re.compile(r"[A-Z][a-z]+[’']?[a-z]*[,:]?|`?[a-z]\w*_\w+.*")


def _is_title(line: str) -> bool:
    """Whether a callout's first line reads as a title: 1 to 12 words, not ending as a sentence does."""
    return 0 < len(line.split()) <= 12 and not re.search(r"[.,;:!?]\s*$", line)


def _title_and_text(line: str) -> tuple[str, str]:
    """(title, text) of a callout whose title and text extraction joined on one line ("How MuJoCo computes the terms
    qfrc_bias comes from ..."): the title is the first 3 to 12 words, without punctuation and not ending on a word such
    as "of", before a word that starts the text (TEXT_START) with 3 words or more after it; ("", line) when none is."""
    words = line.split(" ")
    for k in range(3, min(len(words) - 2, 13)):
        head = " ".join(words[:k])
        if re.search(r"[.,;:!?$`()\[\]{}\\]", head):
            break
        if words[k - 1].lower() not in TITLE_STOPWORDS and TEXT_START.fullmatch(words[k]):
            return head, " ".join(words[k:])
    return "", line


def _knowledge_check(value, check_id: str) -> dict:
    """A JSON knowledge check as a block, its questions `check_id/n`; LessonError naming what is wrong."""
    if not isinstance(value, dict) or not isinstance(value.get("questions"), list) or not value["questions"]:
        raise LessonError('expected an object with "questions", a non-empty list')
    questions = []
    for n, q in enumerate(value["questions"]):
        where = f"question {n}"
        if not isinstance(q, dict) or q.get("kind") not in ("mcq", "numeric") or not isinstance(q.get("q"), str):
            raise LessonError(f'{where}: expected {{"kind": "mcq" or "numeric", "q": text, ...}}')
        out = {"id": f"{check_id}/{n}", "kind": q["kind"], "text": inline(q["q"]),
               "explain": safe_html(str(q.get("explain", "")))}
        if q["kind"] == "mcq":
            options, answer = q.get("options"), q.get("answer")
            if not isinstance(options, list) or len(options) < 2 or not all(isinstance(o, str) for o in options):
                raise LessonError(f"{where}: options must be a list of at least two texts")
            if answer is not None and (isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < len(options)):
                raise LessonError(f"{where}: answer must be an option's index, 0 to {len(options) - 1}; got {answer!r}")
            out.update(options=[inline(o) for o in options], answer=answer)
        else:
            answer, tol = q.get("answer"), q.get("tol", 0)
            number = lambda x: isinstance(x, (int, float)) and not isinstance(x, bool) and x == x and abs(x) != float("inf")  # noqa: E731
            if not number(answer) or not number(tol) or tol < 0:
                raise LessonError(f"{where}: a numeric question needs a finite answer and tol >= 0; got "
                                  f"answer {answer!r}, tol {tol!r}")
            out.update(answer=answer, tol=tol, unit=str(q.get("unit", "")))
        questions.append(out)
    return {"kind": "check", "id": check_id, "title": str(value.get("title") or "Knowledge check"), "questions": questions}
