#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Print the function definitions of C files longer than LIMIT lines, counted
from the first line of the signature to the closing brace.

Any layout counts: the body's '{' in column 0 (clang-format's Linux style) or
at the end of the signature line ('static int f(void) {'). Comments, strings,
character literals and preprocessor lines are blanked first; a '{' at file
scope opens a function body when the text before it (since the last ';', '}'
or preprocessor line) ends in ')' and has no '=': struct, union and enum
bodies and array or struct initialisers are not functions.

Usage: long-functions.py LIMIT FILE...
Prints one line per long function: 'LINES FILE:LINE NAME' (LINE = the
signature's first line); prints nothing when every function fits."""
import re
import sys

NOT_NAMES = {"__attribute__", "__declspec", "__typeof__", "typeof", "_Alignas", "alignas"}


def blank(text):
    """text with comments, string and char literals and preprocessor lines
    replaced by spaces, a directive's '#' by ';' (newlines kept, so line numbers
    hold)."""
    out = []
    i, n = 0, len(text)
    line_start = True  # only white space since the last newline
    while i < n:
        c = text[i]
        if c == "\n":
            out.append(c)
            line_start = True
            i += 1
            continue
        if line_start and c == "#":
            # A directive, with its backslash continuations: a ';' (it ends
            # whatever came before, as a header) and spaces.
            out.append(";")
            i += 1
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        if c.isspace():
            out.append(c)
            i += 1
            continue
        line_start = False
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def function_name(header):
    for m in re.finditer(r"(\w+)\s*\(", header):
        if m.group(1) not in NOT_NAMES:
            return m.group(1)
    return "?"


def functions(text):
    """(first signature line, last line, name) of each function definition,
    lines counted from 1."""
    code = blank(text)
    found = []
    depth = 0
    header_start = 0  # offset where the text before the next file-scope '{' begins
    body = None  # (signature offset, name) while inside a function body
    for i, c in enumerate(code):
        if c == "{":
            if depth == 0:
                header = code[header_start:i]
                h = header.strip()
                if h.endswith(")") and "(" in h and "=" not in h:
                    sig = header_start + (len(header) - len(header.lstrip()))
                    body = (sig, function_name(h))
                else:
                    body = None
            depth += 1
        elif c == "}":
            depth = max(depth - 1, 0)
            if depth == 0:
                if body is not None:
                    sig, name = body
                    found.append((code.count("\n", 0, sig) + 1, code.count("\n", 0, i) + 1, name))
                    body = None
                header_start = i + 1
        elif c == ";" and depth == 0:
            header_start = i + 1
    return found


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    limit = int(argv[1])
    for path in argv[2:]:
        with open(path, errors="replace") as f:
            text = f.read()
        for first, last, name in functions(text):
            n = last - first + 1
            if n > limit:
                print(f"{n:4d} {path}:{first} {name}")


if __name__ == "__main__":
    main(sys.argv)
