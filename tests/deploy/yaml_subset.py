"""A loader for the small subset of YAML our deployment files are written in, so tests can read them
without PyYAML (not a project dependency).

Supported: block mappings and sequences (including `- key: value` items), plain, single- and double-quoted
scalars, one-line flow sequences `[a, "b"]`, block scalars (`|`, `|-`, `>`, `>-`), comments, and YAML 1.1
scalar resolution as PyYAML does it for the values we use (null, booleans, integers, decimals).
Anything else — anchors, aliases, tags, flow mappings, multi-line flow or quoted scalars, several
documents — raises YamlSubsetError naming the line, so the files stay inside what this reads correctly.
When PyYAML is available the tests compare both loaders' results on every file.
"""

from __future__ import annotations

import json
import re
from typing import Any

_INT = re.compile(r"[-+]?(0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?")
_BOOLS = {
    **dict.fromkeys(("true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"), True),
    **dict.fromkeys(("false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"), False),
}
_NULLS = {"", "~", "null", "Null", "NULL"}
_BLOCK_SCALAR = re.compile(r"[|>][-+]?")


class YamlSubsetError(ValueError):
    pass


def load(text: str) -> Any:
    return _Parser(text.splitlines()).parse()


def strip_comment(line: str) -> str:
    """The line without a trailing `# comment` (a `#` at the start or after a blank, outside quotes)."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"'" and (index == 0 or line[index - 1] in " [,:-"):
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[:index]
    return line


def _split_outside_quotes(text: str, separator: str) -> list[str]:
    parts, current, quote = [], "", ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == separator:
            parts.append(current)
            current = ""
            continue
        current += char
    return [*parts, current]


def _key_and_rest(content: str) -> tuple[str, str] | None:
    """(key, value text) when `content` is a mapping entry `key: value` or `key:`; None otherwise."""
    quote = ""
    for index, char in enumerate(content):
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'" and index == 0:
            quote = char
        elif char == ":" and (index + 1 == len(content) or content[index + 1] == " "):
            key = content[:index].strip()
            return str(scalar(key)) if key[:1] in "\"'" else key, content[index + 1 :].strip()
    return None


def scalar(text: str) -> Any:
    text = text.strip()
    if text[:1] in ("&", "*", "!", "{", "|", ">", "%", "@", "`"):
        raise YamlSubsetError(f"unsupported YAML construct: {text!r}")
    if text.startswith('"'):
        if len(text) < 2 or not text.endswith('"'):
            raise YamlSubsetError(f"unterminated double-quoted scalar: {text!r}")
        return json.loads(text)
    if text.startswith("'"):
        if len(text) < 2 or not text.endswith("'"):
            raise YamlSubsetError(f"unterminated single-quoted scalar: {text!r}")
        return text[1:-1].replace("''", "'")
    if text.startswith("["):
        if not text.endswith("]"):
            raise YamlSubsetError(f"multi-line flow sequences are not supported: {text!r}")
        inner = text[1:-1].strip()
        return [scalar(item) for item in _split_outside_quotes(inner, ",")] if inner else []
    if text in _NULLS:
        return None
    if text in _BOOLS:
        return _BOOLS[text]
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    return text


class _Parser:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.index = 0

    def _peek(self) -> tuple[int, str] | None:
        """(indent, content) of the next line with content, skipping blanks and comments."""
        while self.index < len(self.lines):
            line = strip_comment(self.lines[self.index]).rstrip()
            if not line.strip():
                self.index += 1
                continue
            if "\t" in line[: len(line) - len(line.lstrip())]:
                raise YamlSubsetError(f"line {self.index + 1}: tab in indentation")
            if line.strip() in ("---", "..."):
                raise YamlSubsetError(f"line {self.index + 1}: document markers are not supported")
            return len(line) - len(line.lstrip(" ")), line.strip()
        return None

    def _error(self, message: str) -> YamlSubsetError:
        return YamlSubsetError(f"line {self.index + 1}: {message}")

    def parse(self) -> Any:
        first = self._peek()
        if first is None:
            return None
        value = self._block(first[0])
        if self._peek() is not None:
            raise self._error("content after the top-level block (bad indentation?)")
        return value

    def _block(self, indent: int) -> Any:
        peek = self._peek()
        assert peek is not None
        content = peek[1]
        if content == "-" or content.startswith("- "):
            return self._sequence(indent)
        if _key_and_rest(content) is None:
            raise self._error(f"expected `key: value` or `- item`, found {content!r}")
        return self._mapping(indent)

    def _sequence(self, indent: int) -> list[Any]:
        items: list[Any] = []
        while (peek := self._peek()) is not None and peek[0] == indent:
            content = peek[1]
            if not (content == "-" or content.startswith("- ")):
                break
            after = content[1:].strip()
            if not after:
                self.index += 1
                following = self._peek()
                if following is None or following[0] <= indent:
                    items.append(None)
                else:
                    items.append(self._block(following[0]))
            elif _key_and_rest(after) is not None and not after.startswith(("[", '"', "'")):
                # `- key: value` opens a mapping whose keys line up after the dash.
                line = self.lines[self.index]
                dash = line.index("-")
                column = dash + 1 + (len(line) - dash - 1 - len(line[dash + 1 :].lstrip(" ")))
                self.lines[self.index] = " " * column + line[column:]
                items.append(self._mapping(column))
            else:
                self.index += 1
                items.append(scalar(after))
        if peek is not None and peek[0] > indent:
            raise self._error("unexpected indentation in a sequence")
        return items

    def _mapping(self, indent: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        while (peek := self._peek()) is not None and peek[0] == indent:
            entry = _key_and_rest(peek[1])
            if entry is None:
                if peek[1].startswith("- "):
                    break
                raise self._error(f"expected `key: value`, found {peek[1]!r}")
            key, rest = entry
            if key in result:
                raise self._error(f"duplicate key {key!r}")
            self.index += 1
            if _BLOCK_SCALAR.fullmatch(rest):
                result[key] = self._block_scalar(indent, rest)
            elif rest:
                result[key] = scalar(rest)
            else:
                following = self._peek()
                nested = following is not None and (
                    following[0] > indent
                    or (following[0] == indent and (following[1] == "-" or following[1].startswith("- ")))
                )
                result[key] = self._block(following[0]) if nested and following is not None else None
        if peek is not None and peek[0] > indent:
            raise self._error("unexpected indentation in a mapping")
        return result

    def _block_scalar(self, parent_indent: int, indicator: str) -> str:
        raw: list[str] = []
        while self.index < len(self.lines):
            line = self.lines[self.index]
            if line.strip() and len(line) - len(line.lstrip(" ")) <= parent_indent:
                break
            raw.append(line)
            self.index += 1
        while raw and not raw[-1].strip():
            raw.pop()
        content = [line for line in raw if line.strip()]
        if not content:
            return ""
        margin = min(len(line) - len(line.lstrip(" ")) for line in content)
        lines = [line[margin:] for line in raw]
        if indicator[0] == "|":
            text = "\n".join(lines)
        else:
            text = ""
            for line in lines:
                if not line:
                    text += "\n"
                elif text and not text.endswith("\n"):
                    text += " " + line
                else:
                    text += line
        return text if indicator.endswith("-") else text + "\n"
