#!/usr/bin/env python3
"""Print the functions of C files longer than LIMIT lines (clang-format layout:
a function body opens with '{' in column 0 and closes with '}' in column 0).
Usage: long-functions.py LIMIT FILE..."""
import re
import sys

limit = int(sys.argv[1])
for path in sys.argv[2:]:
    lines = open(path, errors="replace").read().split("\n")
    start = None
    name = "?"
    for i, line in enumerate(lines):
        if line.startswith("{") and start is None:
            k = i - 1
            while k > 0 and "(" not in lines[k]:
                k -= 1
            m = re.search(r"(\w+)\s*\(", lines[k])
            name = m.group(1) if m else "?"
            start = i
        elif line.startswith("}") and start is not None:
            n = i - start + 1
            if n > limit and not line.startswith("};"):
                print(f"{n:4d} {path}:{start + 1} {name}")
            start = None
