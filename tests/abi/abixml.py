#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Helpers of tests/cli/abi.sh over abidw XML (abi/libquack.abi).

  abixml.py enums OLD.abi NEW.abi
      every enumerator of OLD keeps its value in NEW (new ones may be added);
      prints the changed ones, exits 1 if any. abidiff counts enumerator
      changes as harmless, quack's policy does not.
  abixml.py mutate IN.abi OUT.abi KIND NAME
      a copy of IN with one change, for the test's self-check:
      middle NAME  a 64-bit field inserted after the first field of struct NAME
      end NAME     a 64-bit field appended to struct NAME
      remove NAME  function NAME removed (symbol and declaration)
      enum NAME    enumerator NAME's value plus one
  abixml.py nodes BASE.abi NODES SYMS [--subset]
      the version nodes: SYMS lists the library's exported symbols as
      name@@NODE (readelf --dyn-syms), NODES is abi/libquack.nodes. Every
      exported symbol is listed in NODES under the node it carries; a symbol
      of the baseline keeps its node; a symbol the baseline lacks is not in
      a node the baseline has (it was added after that release). Without
      --subset every listed symbol is exported too (--subset: a library
      built from part of the headers, the transport-only one). Prints each
      problem, exits 1 if any.
"""
import re
import sys


def enums(text):
    out = {}
    for m in re.finditer(r"<enum-decl name='([^']+)'.*?</enum-decl>", text, re.S):
        for e in re.finditer(r"<enumerator name='([^']+)' value='(-?\d+)'/>", m.group(0)):
            out[(m.group(1), e.group(1))] = int(e.group(2))
    return out


def check_enums(old_path, new_path):
    old, new = enums(open(old_path).read()), enums(open(new_path).read())
    bad = [(k, v, new.get(k)) for k, v in sorted(old.items()) if k in new and new[k] != v]
    gone = [k for k in sorted(old) if k not in new and any(n[0] == k[0] for n in new)]
    for (enum, name), was, now in bad:
        print(f"enumerator {enum}::{name} changed value: {was} -> {now}")
    for enum, name in gone:
        print(f"enumerator {enum}::{name} removed")
    return 1 if bad or gone else 0


def member(offset_bits, type_id):
    return (f"<data-member access='public' layout-offset-in-bits='{offset_bits}'>\n"
            f"        <var-decl name='abi_selfcheck' type-id='{type_id}' visibility='default'/>\n"
            f"      </data-member>\n      ")


def mutate_struct(text, name, kind):
    m = re.search(r"(<class-decl name='%s' size-in-bits=')(\d+)('[^>]*>\n\s*)(.*?)(</class-decl>)"
                  % re.escape(name), text, re.S)
    if not m:
        sys.exit(f"abixml: no struct {name}")
    size, body = int(m.group(2)), m.group(4)
    type_id = re.search(r"type-id='([^']+)'", body).group(1)
    if kind == "end":
        body = body + member(size, type_id)
    else:
        offsets = [int(o) for o in re.findall(r"layout-offset-in-bits='(\d+)'", body)]
        second = offsets[1]
        body = re.sub(r"layout-offset-in-bits='(\d+)'",
                      lambda o: "layout-offset-in-bits='%d'" %
                      (int(o.group(1)) + 64 if int(o.group(1)) >= second else int(o.group(1))),
                      body)
        at = body.find("<data-member access='public' layout-offset-in-bits='%d'>" % (second + 64))
        body = body[:at] + member(second, type_id) + body[at:]
    return text[:m.start()] + m.group(1) + str(size + 64) + m.group(3) + body + m.group(5) + \
        text[m.end():]


def mutate(in_path, out_path, kind, name):
    text = open(in_path).read()
    if kind in ("middle", "end"):
        text = mutate_struct(text, name, kind)
    elif kind == "remove":
        text, n = re.subn(r"\s*<elf-symbol name='%s' [^>]*/>" % re.escape(name), "", text)
        text = re.sub(r"\s*<function-decl name='%s' .*?</function-decl>" % re.escape(name), "",
                      text, flags=re.S)
        if not n:
            sys.exit(f"abixml: no function {name}")
    elif kind == "enum":
        text, n = re.subn(r"(<enumerator name='%s' value=')(-?\d+)'" % re.escape(name),
                          lambda e: e.group(1) + str(int(e.group(2)) + 1) + "'", text)
        if not n:
            sys.exit(f"abixml: no enumerator {name}")
    else:
        sys.exit(f"abixml: unknown mutation {kind}")
    open(out_path, "w").write(text)
    return 0


def read_nodes(path):
    listed, node = {}, None
    for line in open(path):
        line = line.strip()
        m = re.fullmatch(r"\[(QUACK_\d+\.\d+)\]", line)
        if m:
            node = m.group(1)
        elif re.fullmatch(r"qk_[a-z0-9_]+", line):
            listed[line] = node
    return listed


def check_nodes(base_path, nodes_path, syms_path, subset=False):
    base = dict(re.findall(r"<elf-symbol name='([^']+)'[^>]*? version='([^']*)'",
                           open(base_path).read()))
    base_nodes = set(base.values())
    listed = read_nodes(nodes_path)
    exported = {}
    for line in open(syms_path):
        name, _, node = line.strip().partition("@@")
        if name:
            exported[name] = node
    bad = []
    for name, node in sorted(exported.items()):
        if name not in listed:
            bad.append(f"{name} ({node}) is not in abi/libquack.nodes: list it under the node "
                       "of the release that adds it")
        elif listed[name] != node:
            bad.append(f"{name} carries {node}, abi/libquack.nodes says {listed[name]}")
    for name, node in sorted(listed.items()):
        if name in base and base[name] != node:
            bad.append(f"{name} moved from {base[name]} (baseline) to {node}: a released "
                       "symbol keeps its node")
        elif name not in base and node in base_nodes:
            bad.append(f"{name} is not in the baseline but listed under {node}, a node the "
                       "baseline already has: list it under a new node (bump the project's "
                       "minor version), or write a new baseline if that release is not out")
        elif not subset and name not in exported:
            bad.append(f"{name} is listed in abi/libquack.nodes but not exported")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) in (5, 6) and sys.argv[1] == "nodes":
        sys.exit(check_nodes(*sys.argv[2:5], subset=sys.argv[5:] == ["--subset"]))
    if len(sys.argv) == 4 and sys.argv[1] == "enums":
        sys.exit(check_enums(sys.argv[2], sys.argv[3]))
    if len(sys.argv) == 6 and sys.argv[1] == "mutate":
        sys.exit(mutate(*sys.argv[2:]))
    sys.exit(__doc__)
