#!/usr/bin/env python3
"""Import circles between the library's modules.

Reads every src/**/*.rs of the library (not the binary's main.rs and src/cli/, not `#[cfg(test)]` modules: a test may
look at the whole crate), collects the `crate::`, `super::` and
`self::` paths each module names (in `use` items and inline, not in comments or strings),
resolves each to the module that defines the item (following `use` re-exports), and
reports, for every parent module, the circles among its children: `a -> b` when anything
in a's subtree names something in b's subtree. Edges to an ancestor's own items (a shared
error or options type) are not circles. Exit 1 if there is a circle.

    python3 scripts/module_cycles.py [--edges]
"""

import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")


def module_of(rel):
    """src-relative file path -> module path tuple ('config', 'resolve', 'buffer')."""
    parts = rel[:-3].split("/")
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return tuple(parts)


def strip(text):
    """Drop comments, string and char literals: doc links are not imports."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    text = re.sub(r"'(\\.|[^'\\])'", "' '", text)
    return re.sub(r"//[^\n]*", "", text)


def expand(tree):
    """`a::{b, c::{d, self}}` -> ['a::b', 'a::c::d', 'a::c']."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+", "@", tree))
    depth, start = 0, None
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                prefix, inner = tree[:start], tree[start + 1:i]
                items, d, cur = [], 0, ""
                for c in inner:
                    if c == "," and d == 0:
                        items.append(cur)
                        cur = ""
                        continue
                    d += c == "{"
                    d -= c == "}"
                    cur += c
                items.append(cur)
                out = []
                for it in filter(None, items):
                    if it == "self":
                        out.append(prefix.rstrip(":"))
                    else:
                        out.extend(expand(prefix + it))
                return out
    return [tree.split("@")[0]]


def main():
    edges_only = "--edges" in sys.argv
    files = {}
    for root, _, names in os.walk(SRC):
        for n in names:
            if n.endswith(".rs"):
                rel = os.path.relpath(os.path.join(root, n), SRC)
                if rel != "main.rs" and not rel.startswith("cli" + os.sep):
                    files[module_of(rel)] = strip(open(os.path.join(root, n)).read())
    tests = set()
    for m, text in files.items():
        tests |= {m + (t,) for t in re.findall(r"#\[cfg\(test\)\]\s*mod\s+(\w+)\s*;", text)}
        # An inline test module is the file's tail.
        files[m] = re.split(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)[0]
    files = {m: t for m, t in files.items() if not any(m[:len(x)] == x for x in tests)}
    modules = set(files)
    # Per module: name -> path it was imported from (re-exports and private imports alike).
    imports = {}
    uses = {}
    for m, text in files.items():
        imports[m], uses[m] = {}, []
        for u in re.findall(r"\buse\s+([^;]+);", text):
            for p in expand(u):
                alias = re.search(r"\bas\s+(\w+)\s*$", u) if "{" not in u else None
                uses[m].append(p)
                name = alias.group(1) if alias else p.split("::")[-1]
                if name != "*":
                    imports[m][name] = p
        uses[m] += re.findall(r"(?<![\w:])((?:crate|super|self)(?:::\w+)+)", text)

    def absolute(m, path):
        segs = path.split("::")
        if segs[0] == "crate":
            base, segs = (), segs[1:]
        elif segs[0] in ("super", "self"):
            base = m
            while segs and segs[0] in ("super", "self"):
                base = base[:-1] if segs[0] == "super" else base
                segs = segs[1:]
        else:
            return None  # an extern crate or a name already in scope
        return base + tuple(segs)

    def resolve(full, seen=()):
        """The module defining the item `full` names (longest module prefix, then re-exports)."""
        for k in range(len(full), -1, -1):
            if full[:k] in modules:
                mod, rest = full[:k], full[k:]
                break
        if rest and rest[0] in imports.get(mod, {}) and (mod, rest[0]) not in seen:
            target = absolute(mod, imports[mod][rest[0]])
            if target is None:
                sub = imports[mod][rest[0]].split("::")
                target = mod + tuple(sub) if mod + tuple(sub[:1]) in modules else None
            if target is not None:
                return resolve(target + rest[1:], seen + ((mod, rest[0]),))
        return mod

    edges = set()
    for m in modules:
        for p in uses[m]:
            full = absolute(m, p.replace("*", "").rstrip(":"))
            if full is None:
                sub = p.split("::")
                if m + (sub[0],) not in modules:
                    continue
                full = m + tuple(sub)
            t = resolve(full)
            if t != m:
                edges.add((m, t))
    if edges_only:
        for a, b in sorted(edges):
            print("::".join(a) or "crate", "->", "::".join(b) or "crate")
        return 0

    circles = []
    parents = {m[:-1] for m in modules if m}
    for parent in sorted(parents):
        kids = sorted({m[len(parent)] for m in modules if len(m) > len(parent) and m[:len(parent)] == parent})
        g = {k: set() for k in kids}
        for a, b in edges:
            if len(a) > len(parent) and len(b) > len(parent) and a[:len(parent)] == parent == b[:len(parent)]:
                if a[len(parent)] != b[len(parent)]:
                    g[a[len(parent)]].add(b[len(parent)])
        # Tarjan's strongly connected components.
        index, low, stack, on, sccs = {}, {}, [], set(), []

        def visit(v):
            index[v] = low[v] = len(index)
            stack.append(v)
            on.add(v)
            for w in g[v]:
                if w not in index:
                    visit(w)
                    low[v] = min(low[v], low[w])
                elif w in on:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    sccs.append(sorted(comp))

        for k in kids:
            if k not in index:
                visit(k)
        for comp in sccs:
            where = "::".join(parent) or "crate"
            detail = ", ".join(
                "%s -> %s" % (a, b) for a in comp for b in sorted(g[a]) if b in comp
            )
            circles.append("in %s: %s (%s)" % (where, " <-> ".join(comp), detail))
    for c in circles:
        print("circle", c)
    print("%d modules, %d edges, %d circle(s)" % (len(modules), len(edges), len(circles)))
    return 1 if circles else 0


if __name__ == "__main__":
    sys.exit(main())
