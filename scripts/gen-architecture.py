#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the module table of docs/architecture.md from the tree: every .c file
under src/ with the first sentence of its leading comment, and the tests that
cover it alone (tests/unit/test_<name>*.c, or tests naming its header).
The table sits between the BEGIN/END markers; the prose around it is typed.
With --check it also checks the folder READMEs: every folder under src/ and
apps/, tests/, bench/ has a README.md; every file a README names in
backquotes exists; every .c file of a src/ or apps/ folder is named in its
folder's README; and every header a folder's files #include "..." is
allowed by its README's "May include:" line (folders as `dir/`, single
headers as `dir/file.h`; the folder itself is always allowed).
Usage: gen-architecture.py [--check]   (--check: exit 1 if the file is stale)"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "architecture.md")
BEGIN = "<!-- BEGIN modules (scripts/gen-architecture.py) -->"
END = "<!-- END modules -->"


def purpose(path):
    text = open(path, errors="replace").read()
    text = re.sub(r"\A\s*/\*\s*SPDX-License-Identifier:[^*]*\*/", "", text)  # scripts/spdx.sh
    m = re.match(r"\s*/\*+\s*(.*?)\*/", text, re.S)
    if not m:
        return "(no leading comment)"
    body = " ".join(l.strip().lstrip("*").strip() for l in m.group(1).splitlines())
    body = re.sub(r"\s+", " ", body).strip()
    first = re.split(r"(?<=[.:;])\s", body, maxsplit=1)[0]
    first = first.rstrip(".:;")
    return first.replace("|", "\\|")


def tests_for(rel, name):
    """Tests that declare "covers: <module>" in their first comment, unit
    tests named after the module (test_<name>, test_<x>_<name>,
    test_<name>_<x>), else any test that includes the module's header."""
    tests = []
    files = glob.glob(os.path.join(ROOT, "tests", "*", "test_*.c"))
    files += glob.glob(os.path.join(ROOT, "tests", "*", "*.sh"))
    for t in sorted(files):
        head = open(t, errors="replace").read(2000)
        m = re.search(r"covers:(.*?)\*/" if t.endswith(".c") else r"covers:([^\n]*)", head, re.S)
        if m and rel in m.group(1).replace("*", " ").split():
            base = os.path.basename(t)
            base = base[:-2] if base.endswith(".c") else base[:-3]
            tests.append("%s/%s" % (os.path.basename(os.path.dirname(t)), base))
    for t in sorted(glob.glob(os.path.join(ROOT, "tests", "unit", "test_*.c"))):
        tn = os.path.basename(t)[5:-2]
        if "unit/test_" + tn in tests:
            continue
        if tn == name or tn.startswith(name + "_") or tn.endswith("_" + name):
            tests.append("unit/test_" + tn)
    if tests:
        return ", ".join(tests)
    header = rel[len("src/"):-2] + ".h"
    for t in sorted(glob.glob(os.path.join(ROOT, "tests", "*", "test_*.c"))):
        if '"%s"' % header in open(t, errors="replace").read():
            kind = os.path.basename(os.path.dirname(t))
            tests.append("%s/%s" % (kind, os.path.basename(t)[:-2]))
    return ", ".join(tests[:3]) if tests else "(end-to-end only)"


def table():
    rows = ["| module | purpose | tested alone by |", "|---|---|---|"]
    for path in sorted(glob.glob(os.path.join(ROOT, "src", "**", "*.c"), recursive=True)):
        rel = os.path.relpath(path, ROOT)
        name = os.path.basename(path)[:-2]
        rows.append("| `%s` | %s | %s |" % (rel, purpose(path), tests_for(rel, name)))
    return "\n".join(rows)


def readme_problems():
    bad = []
    dirs = sorted({os.path.dirname(p) for p in glob.glob(os.path.join(ROOT, "src", "**", "*"),
                                                         recursive=True) if os.path.isfile(p)})
    dirs += [os.path.join(ROOT, d) for d in ("apps", "tests", "bench")]
    for d in dirs:
        rel = os.path.relpath(d, ROOT)
        readme = os.path.join(d, "README.md")
        if not os.path.exists(readme):
            bad.append("%s/ has no README.md" % rel)
            continue
        text = open(readme).read()
        named = set(re.findall(r"`([\w./-]+\.(?:c|h|sh|py|md|ini))`", text))
        for n in sorted(named):
            cands = [os.path.join(d, n), os.path.join(ROOT, n), os.path.join(ROOT, "src", n)]
            if not any(os.path.exists(c) for c in cands):
                bad.append("%s/README.md names `%s`, which does not exist" % (rel, n))
        if rel.startswith("src") or rel == "apps":
            for c in sorted(glob.glob(os.path.join(d, "*.c"))):
                if os.path.basename(c) not in named:
                    bad.append("%s/README.md does not name `%s`" % (rel, os.path.basename(c)))
        if not rel.startswith("src"):
            continue
        m = re.search(r"May include:(.*?)(?:\.\s|\.$)", text, re.S)
        if not m:
            bad.append("%s/README.md has no \"May include:\" line" % rel)
            continue
        allowed = re.findall(r"`([\w./-]+)`", m.group(1))
        own = rel[len("src/"):]
        for c in sorted(glob.glob(os.path.join(d, "*.[ch]"))):
            for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', open(c).read(), re.M):
                if "/" not in inc or os.path.dirname(inc) == own:
                    continue
                if not any(inc == a or (a.endswith("/") and inc.startswith(a)) for a in allowed):
                    bad.append("%s includes \"%s\", which %s/README.md does not allow"
                               % (os.path.relpath(c, ROOT), inc, rel))
    return bad


def main():
    doc = open(DOC).read()
    if BEGIN not in doc or END not in doc:
        sys.exit("gen-architecture: markers missing in docs/architecture.md")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = head + BEGIN + "\n" + table() + "\n" + END + tail
    if "--check" in sys.argv:
        bad = readme_problems()
        for b in bad:
            print("gen-architecture: " + b)
        if new != doc:
            print("docs/architecture.md is stale: run scripts/gen-architecture.py")
            sys.exit(1)
        sys.exit(1 if bad else 0)
    open(DOC, "w").write(new)


main()
