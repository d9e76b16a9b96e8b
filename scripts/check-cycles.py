#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""No call or include cycle crosses a folder boundary under src/, and apps/
has no cycle at all, as the compiler sees the tree.

A module is a source file with its header (src/transport/conn/cid.c and
cid.h are "src/transport/conn/cid"). Module A depends on module B when one of
A's files #includes B's header (resolved like the compiler's -I src/ and the
file's own folder), or when A's object file in BUILD_DIR uses a symbol that
B's object file defines (nm: U against T/D/B/R). The strongly connected
components of that graph are the cycles; every component whose modules lie in
more than one folder is printed (for apps/: every component of more than
one module). Exits 1 if there is any, 2 if BUILD_DIR holds no object files.
Usage: check-cycles.py BUILD_DIR"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def module(rel):
    return os.path.splitext(rel)[0]


def include_edges(top):
    edges = set()
    for path in glob.glob(os.path.join(ROOT, top, "**", "*.[ch]"), recursive=True):
        rel = os.path.relpath(path, ROOT)
        for inc in INCLUDE.findall(open(path, errors="replace").read()):
            for cand in (os.path.join("src", inc), os.path.join(os.path.dirname(rel), inc)):
                if os.path.exists(os.path.join(ROOT, cand)):
                    if module(cand) != module(rel):
                        edges.add((module(rel), module(os.path.normpath(cand))))
                    break
    return edges


def symbol_edges(build, top):
    """(user, definer) pairs from nm over BUILD_DIR's objects of files under top/."""
    defs, uses = {}, {}
    objs = glob.glob(os.path.join(build, "CMakeFiles", "*", top, "**", "*.c.o"), recursive=True)
    for obj in objs:
        rel = obj.split(os.sep + "CMakeFiles" + os.sep, 1)[1].split(os.sep, 1)[1]
        mod = module(rel[: -len(".o")])
        out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                uses.setdefault(mod, set()).add(parts[1])
            elif len(parts) == 3 and parts[1] in "TDBR":
                defs.setdefault(parts[2], mod)
    edges = set()
    for mod, syms in uses.items():
        for s in syms:
            if s in defs and defs[s] != mod:
                edges.add((mod, defs[s]))
    return edges, len(objs)


def sccs(nodes, edges):
    """Tarjan's algorithm, iterative."""
    succ = {n: [] for n in nodes}
    for a, b in edges:
        succ[a].append(b)
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter[0]
                counter[0] += 1
                stack.append(v)
                on.add(v)
            if i < len(succ[v]):
                work.append((v, i + 1))
                w = succ[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            for w in succ[v]:
                if w in on:
                    low[v] = min(low[v], low[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def check(build, top, same_folder_ok, required=True):
    inc = include_edges(top)
    sym, nobj = symbol_edges(build, top)
    if nobj == 0 and not required:
        return [], 0, 0
    if nobj == 0:
        print("check-cycles: no object files of %s/ under %s (build it first)" % (top, build))
        sys.exit(2)
    edges = inc | sym
    nodes = {n for e in edges for n in e}
    bad = []
    for comp in sccs(nodes, edges):
        folders = {os.path.dirname(m) for m in comp}
        if len(comp) > 1 and (len(folders) > 1 or not same_folder_ok):
            why = sorted("%s -> %s (%s)" % (a, b, "include" if (a, b) in inc else "call")
                         for a, b in edges if a in comp and b in comp)
            bad.append("cycle over %s:\n    %s" % (", ".join(comp), "\n    ".join(why)))
    return bad, len(nodes), len(edges)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = sys.argv[1]
    problems = []
    for top, same_ok in (("src", True), ("apps", False)):
        bad, n, e = check(build, top, same_ok, required=top == "src")
        problems += bad
        print("check-cycles: %s/: %d modules, %d include and call edges, %d bad cycles"
              % (top, n, e, len(bad)))
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


main()
