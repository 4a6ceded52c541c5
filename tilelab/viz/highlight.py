"""Syntax highlighting (pygments) of kernel source, tile IR, LLVM IR and assembly, one HTML string per line.

Why per line: the views mark single lines (diff rows, linked lines, search hits), so each line's
HTML must be balanced on its own. pygments' HtmlFormatter closes its spans at every newline, so
splitting its output on newlines gives exactly that.

    >>> highlight_lines("x = 1\\ny = 2", "python")[0]
    '<span class="n">x</span> <span class="o">=</span> <span class="mi">1</span>'
"""

from __future__ import annotations

import html

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import RegexLexer, bygroups
from pygments.lexers import GasLexer, LlvmLexer, PtxLexer, PythonLexer
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Text, Whitespace


class TileIRLexer(RegexLexer):
    """Tokens of the tile IR's MLIR-like text form."""

    name = "tile IR"
    aliases = ["tile"]
    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r'loc\("[^"]*":\d+:\d+\)', Comment),
            (r"//.*$", Comment.Single),
            (r"%[\w.]+", Name.Variable),
            (r"@\w+", Name.Function),
            (r"\^bb", Name.Label),
            (r"(\b[a-z_]+)(\.)([a-z_]+\b)", bygroups(Keyword, Punctuation, Keyword)),
            (r"\b(tensor|ptr|[iu]\d+|f\d+|bf16|fp8\w*)\b", Keyword.Type),
            (r'"[^"]*"', String),
            (r"-?\d+(\.\d+)?(e-?\d+)?", Number),
            (r"[=:,<>(){}\[\]*!x]", Operator),
            (r"\w+", Text),
            (r".", Text),
        ]
    }


_LEXERS = {
    "python": PythonLexer,
    "tile": TileIRLexer,
    "llir": LlvmLexer,
    "ptx": PtxLexer,
    "asm": GasLexer,
    "sass": GasLexer,
    "amdgcn": GasLexer,  # AMD GCN assembly is GNU-as syntax (directives, labels, ``;`` comments)
}

_FORMATTER = HtmlFormatter(nowrap=True)


def highlight_lines(text: str, language: str) -> list[str]:
    """The HTML of each line of ``text`` highlighted as ``language`` (python, tile, llir, ptx, asm, sass)."""
    n = len(text.splitlines())
    if n == 0:
        return []
    lexer_class = _LEXERS.get(language)
    if lexer_class is None:
        return [html.escape(t) for t in text.splitlines()]
    out = highlight(text, lexer_class(stripnl=False, ensurenl=True), _FORMATTER).split("\n")
    return out[:n] + [""] * (n - len(out))


def pygments_css(scope: str = ".tl-code") -> str:
    """The colour rules of the highlighted spans, scoped under ``scope``."""
    return HtmlFormatter(style="default").get_style_defs(scope)
