#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Lists what a public header declares without a documentation comment.

A second opinion next to Doxygen's WARN_IF_UNDOCUMENTED (tests/cli/docs.sh
runs both), from clang's AST: every function, typedef, struct or enum
definition, struct field, enum value and variable declared in HEADER, and
every #define, needs a /** ... */ (or trailing /**< ... */) comment; the
file needs an @file block; doc comments hold no construct Doxygen would warn
about (an HTML-like <tag>, an unknown @command, a #name link request).
Usage: doc_coverage.py INCLUDE_DIR HEADER... ; prints FILE:LINE: what, exit 1
when anything is missing.
"""
import json
import re
import subprocess
import sys

KINDS = {
    "FunctionDecl": "function",
    "TypedefDecl": "typedef",
    "RecordDecl": "struct",
    "EnumDecl": "enum",
    "EnumConstantDecl": "enum value",
    "FieldDecl": "field",
    "VarDecl": "variable",
}
# Doxygen commands the headers may use (ALIASES in docs/Doxyfile.in included).
COMMANDS = {"file", "brief", "ref", "p", "c", "code", "endcode", "note", "see", "default", "warning", "return"}


def ast(include, header):
    src = f'#include "{header}"\n'
    out = subprocess.run(
        ["clang", "-x", "c", "-std=c17", "-I", include, "-Xclang", "-ast-dump=json", "-fsyntax-only", "-"],
        input=src, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


class Walker:
    """clang's JSON names a location's file only when it changes, in print order."""

    def __init__(self, header):
        self.header = header
        self.file = None
        self.missing = []

    def locs(self, obj):
        if isinstance(obj, dict):
            if "file" in obj:
                self.file = obj["file"]
            for k, v in obj.items():
                if k not in ("inner", "includedFrom"):
                    self.locs(v)

    def walk(self, node, in_record=False):
        self.locs({k: v for k, v in node.items() if k in ("loc", "range")})
        mine = self.file is not None and self.file.endswith(self.header)
        kind = node.get("kind")
        inner = node.get("inner", [])
        documented = any(c.get("kind") == "FullComment" for c in inner)
        line = node.get("loc", {}).get("line") or node.get("loc", {}).get("expansionLoc", {}).get("line")
        if line:
            self.line = line
        want = kind in KINDS and mine and not node.get("isImplicit")
        if kind == "RecordDecl" and not node.get("completeDefinition"):
            want = False  # an opaque forward declaration: its typedef carries the docs
        if kind == "RecordDecl" and not node.get("name"):
            want = False  # anonymous struct: documented through its typedef or field
        if kind == "ParmVarDecl":
            want = False
        if want and not documented:
            self.missing.append(f"{self.header}:{getattr(self, 'line', '?')}: "
                                f"{KINDS[kind]} {node.get('name', '(anonymous)')} has no doc comment")
        for c in inner:
            if c.get("kind") not in ("FullComment", "ParmVarDecl"):
                self.walk(c, in_record or kind == "RecordDecl")
            else:
                self.locs({k: v for k, v in c.items() if k in ("loc", "range")})


def text_checks(path):
    bad = []
    text = open(path, encoding="utf-8").read()
    lines = text.split("\n")
    start = re.sub(r"\A\s*/\*\s*SPDX-License-Identifier:[^*]*\*/", "", text).lstrip()
    if not re.match(r"/\*\*\s*@file\b", start):
        bad.append(f"{path}:1: no /** @file ... */ block first")
    else:
        # The header's contracts: return codes, time, pointers, and threads.
        fileblock = start[: start.find("*/")]
        for word in ("Contracts", "Threads", "monotonic", "borrowed"):
            if word not in fileblock:
                bad.append(f"{path}:1: the @file block does not state its contracts ({word!r} missing)")
    # A function returning int or long names its error codes (or says it
    # cannot fail).
    for m in re.finditer(r"/\*\*((?:(?!\*/).)*)\*/\s*\n(?:const )?(?:int|long)\s+\**(qk_\w+)\s*\(", text, re.S):
        if not re.search(r"QK_ERR_|[Nn]ever fails|never a QK_ERR", m.group(1)):
            line = text.count("\n", 0, m.start(2)) + 1
            bad.append(f"{path}:{line}: {m.group(2)} returns int/long but its comment lists no QK_ERR_* code")
    guard = None
    for i, ln in enumerate(lines):
        m = re.match(r"\s*#\s*ifndef\s+(QUACK_\w+_H)\b", ln)
        if m and guard is None:
            guard = m.group(1)
        m = re.match(r"\s*#\s*define\s+(\w+)", ln)
        if not m or m.group(1) == guard:
            continue
        if "/**<" in ln:
            continue
        j = i - 1
        if j >= 0 and lines[j].rstrip().endswith("*/"):
            k = j
            while k >= 0 and "/*" not in lines[k]:
                k -= 1
            if k >= 0 and re.search(r"/\*\*(?!<)", lines[k]):
                continue
        bad.append(f"{path}:{i + 1}: macro {m.group(1)} has no doc comment")
    for m in re.finditer(r"/\*\*.*?\*/", text, re.S):
        body = m.group(0)
        line = text.count("\n", 0, m.start()) + 1
        body = re.sub(r"@code.*?@endcode", "", body, flags=re.S)
        body = re.sub(r"`[^`\n]*`", "", body)
        body = re.sub(r'"[^"\n]*"', "", body)
        for t in re.findall(r"<[A-Za-z][^>\n]*>?", body):
            bad.append(f"{path}:{line}: doc comment has HTML-like {t!r} (Doxygen warns; write it in backquotes)")
        for t in re.findall(r"(?<![\w\\])[@\\]([A-Za-z]+)", body):
            if t not in COMMANDS:
                bad.append(f"{path}:{line}: doc comment has unknown command @{t}")
        for t in re.findall(r"%[A-Za-z_]\w*", body):
            bad.append(f"{path}:{line}: doc comment has {t} (Doxygen drops the %; write it in backquotes)")
        for t in re.findall(r"(?<![\w&])#([A-Za-z_]\w*)", body):
            bad.append(f"{path}:{line}: doc comment has #{t} (a Doxygen link request)")
    return bad


def main():
    include, headers = sys.argv[1], sys.argv[2:]
    bad = []
    for h in headers:
        name = h.split("include/", 1)[-1] if "include/" in h else h
        w = Walker(name)
        for n in ast(include, name).get("inner", []):
            w.walk(n)
        bad += w.missing + text_checks(h)
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
