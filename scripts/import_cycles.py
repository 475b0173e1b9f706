#!/usr/bin/env python3
"""Fails on an import cycle between the files of any crate: file A names something in
file B (`use crate::…`, `super::…`, `self::…`, a child module, or such a path inside code)
while B, directly or through other files, names something in A.

Each crate's module tree is read from its roots (src/lib.rs, src/main.rs, src/bin/*.rs)
through `mod` declarations (with `#[path]`, and inline `mod x { … }` blocks), over code
with comments and string contents blanked. A path resolves to the file of the deepest
module it names, following explicit `pub use` re-exports (a `use crate::Options` that
lib.rs re-exports from options.rs is an import of options.rs) and `#[macro_export]`
macros to the file that defines them; a re-export itself is no import unless its file
uses the name too. Bare imports of a module (`use crate::lower;`)
count where the module's items are used through the alias.

Usage: scripts/import_cycles.py [REPO]   (exit 1 and the cycles, one per line, if any)
"""

import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
TOKEN = re.compile(IDENT + r"|::|\S")
KEYWORDS = {"crate", "self", "super"}


def blank(src):
    """`src` with comments and the contents of string and char literals replaced by
    spaces (newlines kept), so offsets and line numbers stay those of the file."""
    out, i, n = list(src), 0, len(src)

    def wipe(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            wipe(i, j)
            i = j
        elif (m := re.match(r'b?r(#*)"', src[i : i + 260])) and (i == 0 or not re.match(r"\w", src[i - 1])):
            end = src.find('"' + m.group(1), i + m.end())
            end = n if end < 0 else end + 1 + len(m.group(1))
            wipe(i + m.end(), end - 1 - len(m.group(1)))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            wipe(i + 1, j)
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{1F600}'), or else a lifetime.
            m = re.match(r"'(\\(u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'])'", src[i : i + 16])
            if m:
                wipe(i + 1, i + m.end() - 1)
                i += m.end()
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


class Module:
    def __init__(self, path, file, start, end, dir_):
        self.path, self.file, self.start, self.end, self.dir = path, file, start, end, dir_
        self.children = {}  # name -> Module


class Crate:
    def __init__(self, root):
        self.modules = {}  # module path (tuple) -> Module
        self.files = {}  # file -> (original, blanked)
        self.macros = {}  # exported macro name -> file
        self.load(root, (), os.path.dirname(root))

    def text(self, file):
        if file not in self.files:
            src = open(file, encoding="utf-8").read()
            self.files[file] = (src, blank(src))
        return self.files[file]

    def load(self, file, path, dir_):
        src, code = self.text(file)
        top = Module(path, file, 0, len(code), dir_)
        self.modules[path] = top
        for m in re.finditer(r"macro_export[^\]]*\]\s*macro_rules!\s*(" + IDENT + ")", code):
            self.macros[m.group(1)] = file
        self.scan(top, src, code, os.path.dirname(file))

    def scan(self, mod, src, code, file_dir):
        """Child modules declared in `mod`'s span: inline blocks and files."""
        pos = mod.start
        decl = re.compile(r"\bmod\s+(" + IDENT + r")\s*([;{])")
        while m := decl.search(code, pos, mod.end):
            name = m.group(1)
            if m.group(2) == "{":
                end = match_brace(code, m.end() - 1)
                child = Module(mod.path + (name,), mod.file, m.end(), end, os.path.join(mod.dir, name))
                self.modules[child.path] = child
                mod.children[name] = child
                self.scan(child, src, code, file_dir)
                pos = end
                continue
            pos = m.end()
            attr = re.search(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?$', src[: m.start()])
            candidates = (
                [os.path.join(file_dir, attr.group(1))]
                if attr
                else [os.path.join(mod.dir, name + ".rs"), os.path.join(mod.dir, name, "mod.rs")]
            )
            target = next((c for c in candidates if os.path.isfile(c)), None)
            if target is None:
                continue  # a module generated at build time, or a path this script does not follow
            child_dir = os.path.dirname(target) if os.path.basename(target) == "mod.rs" or attr else os.path.join(mod.dir, name)
            self.load(target, mod.path + (name,), child_dir)
            mod.children[name] = self.modules[mod.path + (name,)]

    def module_at(self, file, offset):
        """The innermost module whose span in `file` holds `offset`."""
        best = None
        for m in self.modules.values():
            if m.file == file and m.start <= offset < m.end and (best is None or len(m.path) > len(best.path)):
                best = m
        return best

    def resolve(self, start, segments, is_macro, seen=()):
        """The file that `segments` (relative to module path `start`) names, or None."""
        path = list(start)
        segs = list(segments)
        while segs and segs[0] in ("self", "super", "crate"):
            s = segs.pop(0)
            if s == "crate":
                path = []
            elif s == "super":
                path = path[:-1]
        mod = self.modules.get(tuple(path))
        if mod is None:
            return None
        while segs and segs[0] in mod.children:
            mod = mod.children[segs.pop(0)]
        if not segs or segs[0] == "*":
            return mod.file
        name = segs[0]
        if is_macro and len(segs) == 1 and name in self.macros:
            return self.macros[name]
        key = (mod.path, name)
        targets = self.reexports(mod).get(name, [])
        if targets and all(t[0] not in KEYWORDS and t[0] not in mod.children for t in targets):
            return None  # re-exported from another crate: no file of this one
        if key not in seen:
            for target in targets:
                found = self.resolve(mod.path, target, is_macro, seen + (key,))
                if found:
                    return found
        return mod.file

    def reexports(self, mod):
        """Names `mod` re-exports with `pub use`: name -> the paths it stands for."""
        if not hasattr(mod, "_reexports"):
            mod._reexports = {}
            code = self.text(mod.file)[1]
            for m in re.finditer(r"\bpub(?:\s*\([^)]*\))?\s+use\s+([^;]*);", code[mod.start : mod.end]):
                if self.module_at(mod.file, mod.start + m.start()) is not mod:
                    continue
                for segs, alias in use_paths(TOKEN.findall(m.group(1))):
                    mod._reexports.setdefault(alias or segs[-1], []).append(segs)
        return mod._reexports


def match_brace(code, open_at):
    depth = 0
    for i in range(open_at, len(code)):
        if code[i] == "{":
            depth += 1
        elif code[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return len(code)


def use_paths(tokens):
    """The paths of one use tree (`a::{b, c::d as e, self}`): [(segments, alias)]."""
    out = []

    def tree(i, prefix):
        segs = list(prefix)
        while i < len(tokens):
            t = tokens[i]
            if t == "{":
                i += 1
                while i < len(tokens) and tokens[i] != "}":
                    i = tree(i, segs)
                    i += tokens[i] == "," if i < len(tokens) else 0
                return i + 1
            if t in (",", "}"):
                break
            if t == "as":
                out.append((segs, tokens[i + 1] if i + 1 < len(tokens) else None))
                return i + 2
            if t == "self" and segs:
                pass  # `a::{self}` names `a` itself
            elif t != "::":
                segs.append(t)
            i += 1
        if len(segs) > len(prefix) or (segs and tokens[i - 1] == "self"):
            out.append((segs, None))
        return i

    tree(0, [])
    return out


def edges_of(crate):
    """(from file, to file) -> the first `file:line` that makes the edge."""
    edges = {}
    for file, (_src, code) in crate.files.items():
        aliases = {}  # (module path, alias) -> module path, from `use` of a whole module
        uses = []  # spans of use statements, so their paths are not read twice
        statements = list(re.finditer(r"(\bpub\s*(?:\([^)]*\))?\s*)?\buse\s+([^;]*);", code))
        rest = code
        for m in statements:
            rest = rest[: m.start()] + " " * (m.end() - m.start()) + rest[m.end() :]
        for m in statements:
            mod = crate.module_at(file, m.start())
            if mod is None:
                continue
            uses.append((m.start(), m.end()))
            for segs, alias in use_paths(TOKEN.findall(m.group(2))):
                if not segs or not (segs[0] in KEYWORDS or segs[0] in mod.children):
                    continue
                target = module_path(crate, mod.path, segs)
                if target is not None and segs[-1] != "*":
                    aliases[(mod.path, alias or segs[-1])] = target
                    continue
                # A re-export (`pub use kinds::MessageList;`) only routes a name: whoever
                # uses the name imports the file that defines it. It is an import of its own
                # only where the re-exporting file uses the name too.
                name = alias or segs[-1]
                if m.group(1) and name != "*" and not re.search(r"\b" + re.escape(name) + r"\b", rest):
                    continue
                add(edges, crate, file, crate.resolve(mod.path, segs, False), code, m.start())
        for m in re.finditer(r"(?<![\w:])(" + IDENT + r")(\s*::\s*" + IDENT + r")+(\s*!)?", code):
            if any(a <= m.start() < b for a, b in uses):
                continue
            mod = crate.module_at(file, m.start())
            if mod is None:
                continue
            segs = re.findall(IDENT, m.group(0))
            first = segs[0]
            if (mod.path, first) in aliases:
                target = aliases[(mod.path, first)]
                found = crate.resolve((), list(target) + segs[1:], bool(m.group(3)))
                add(edges, crate, file, found, code, m.start())
            elif first in KEYWORDS or first in mod.children:
                add(edges, crate, file, crate.resolve(mod.path, segs, bool(m.group(3))), code, m.start())
    return edges


def module_path(crate, start, segs):
    """The module path `segs` names if every segment is a module, else None."""
    path = list(start)
    for s in segs:
        if s == "crate":
            path = []
        elif s == "super":
            path = path[:-1]
        elif s == "self":
            pass
        elif tuple(path + [s]) in crate.modules:
            path.append(s)
        else:
            return None
    return tuple(path)


def add(edges, crate, file, target, code, offset):
    if target and target != file:
        edges.setdefault((file, target), code.count("\n", 0, offset) + 1)


def cycles(edges):
    """One cycle per strongly connected component of more than one file."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
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
                comps.append(set(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            strong(v)
    found = []
    for comp in comps:
        start = min(comp)
        # Shortest way back to `start` inside the component (breadth first).
        prev, frontier, done = {start: None}, [start], None
        while frontier and done is None:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v]):
                    if w == start:
                        done = v
                        break
                    if w in comp and w not in prev:
                        prev[w] = v
                        nxt.append(w)
                if done is not None:
                    break
            frontier = nxt
        path, v = [], done
        while v is not None:
            path.append(v)
            v = prev[v]
        found.append((list(reversed(path)) + [start], sorted(comp)))
    return found


def crate_roots(repo):
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = sorted(d for d in dirnames if d not in ("target", ".git", "node_modules"))
        if "Cargo.toml" in filenames and os.path.isdir(os.path.join(dirpath, "src")):
            src = os.path.join(dirpath, "src")
            roots = [os.path.join(src, f) for f in ("lib.rs", "main.rs") if os.path.isfile(os.path.join(src, f))]
            bins = os.path.join(src, "bin")
            if os.path.isdir(bins):
                for f in sorted(os.listdir(bins)):
                    p = os.path.join(bins, f)
                    roots += [p] if f.endswith(".rs") else [os.path.join(p, "main.rs")] if os.path.isfile(os.path.join(p, "main.rs")) else []
            yield from roots


def main():
    repo = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    failed = 0
    for root in crate_roots(repo):
        crate = Crate(root)
        edges = edges_of(crate)
        for cycle, component in cycles(edges):
            failed += 1
            steps = [os.path.relpath(cycle[0], repo)]
            for a, b in zip(cycle, cycle[1:]):
                steps.append(f"{os.path.relpath(b, repo)} (line {edges[(a, b)]} of {os.path.basename(a)})")
            print("import cycle: " + " -> ".join(steps))
            if len(component) > len(cycle) - 1:
                others = [os.path.relpath(f, repo) for f in component if f not in cycle]
                print("  and through the same files: " + ", ".join(others))
    if failed:
        print(f"{failed} import cycle(s): move what both sides need into a module that imports neither", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
