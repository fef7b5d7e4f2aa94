#!/usr/bin/python3
"""layers.py: the include graph of the C sources follows the layers
README.md ("The source tree") describes.

Every folder of C sources has a place in LAYERS below, with the folders it
may include from.  An #include "..." of a file in another folder that is
not listed, a folder missing from the table, a cycle among the table's
folders, or a cycle among the files' own includes fails the check, with
the file and line that break it.  Prints the graph between folders and
"ok" or the faults; exits 1 on a fault.

    tests/layers.py [--dot]     (--dot: the folder graph in Graphviz form)
"""

import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# folder: the folders (besides itself) whose headers it may include.
# Lower layers first; each may use only what is above it in this list.
LAYERS = {
    "lib/base": [],
    "lib/spool": ["lib/base"],
    "lib/content": ["lib/base", "lib/spool"],
    "lib/http": ["lib/base", "lib/spool", "lib/content"],
    "spooler/providers": ["lib/base", "lib/spool", "lib/content"],
    "spooler/smpp": ["lib/base", "lib/spool", "spooler/providers"],
    "spooler/daemon": ["lib/base", "lib/spool", "lib/content", "lib/http",
                       "spooler/providers", "spooler/smpp"],
    "spooler/cli": ["lib/base", "lib/spool", "lib/content"],
    "spooler/bounce": ["lib/base", "lib/spool"],
    "cgi-bin": ["lib/base", "lib/spool", "lib/content", "lib/http"],
    "fcgi": ["lib/base", "lib/spool", "lib/content", "lib/http", "cgi-bin"],
}
# Where #include "..." looks after the including file's own folder (the
# Makefile's -I options).
INCLUDE_DIRS = ["lib", "spooler", "cgi-bin"]
SOURCE_ROOTS = ["lib", "spooler", "cgi-bin", "fcgi"]

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def sources():
    for root in SOURCE_ROOTS:
        for d, _, files in os.walk(os.path.join(TOP, root)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), TOP)


def resolve(src, name):
    for base in [os.path.dirname(src)] + INCLUDE_DIRS:
        p = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(TOP, p)):
            return p
    return None


def find_cycle(graph):
    """A cycle of graph (node -> set of nodes) as a list, or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = {n: WHITE for n in graph}
    stack = []

    def visit(n):
        colour[n] = GREY
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if colour.get(m, WHITE) == GREY:
                return stack[stack.index(m):] + [m]
            if colour.get(m, WHITE) == WHITE:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        colour[n] = BLACK
        return None

    for n in sorted(graph):
        if colour[n] == WHITE:
            c = visit(n)
            if c:
                return c
    return None


def main():
    faults = []
    files = {}          # file -> set of files it includes
    folders = {}        # folder -> set of folders it includes from
    for src in sources():
        folder = os.path.dirname(src)
        if folder not in LAYERS:
            faults.append(f"{src}: its folder {folder}/ has no place in "
                          "tests/layers.py")
            continue
        files.setdefault(src, set())
        with open(os.path.join(TOP, src), encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                target = resolve(src, m.group(1))
                if target is None:
                    faults.append(f"{src}:{lineno}: #include \"{m.group(1)}\""
                                  " names no file of the tree")
                    continue
                files[src].add(target)
                tfolder = os.path.dirname(target)
                if tfolder == folder:
                    continue
                folders.setdefault(folder, set()).add(tfolder)
                if tfolder not in LAYERS[folder]:
                    faults.append(f"{src}:{lineno}: #include \"{m.group(1)}\""
                                  f" goes from {folder}/ to {tfolder}/, "
                                  "which it may not use")
    cycle = find_cycle({f: set(v) for f, v in LAYERS.items()})
    if cycle:
        faults.append("tests/layers.py: the layers close a circle: "
                      + " -> ".join(cycle))
    cycle = find_cycle(files)
    if cycle:
        faults.append("the includes close a circle: " + " -> ".join(cycle))

    if "--dot" in sys.argv[1:]:
        print("digraph layers {")
        for f in sorted(folders):
            for t in sorted(folders[f]):
                print(f'\t"{f}" -> "{t}";')
        print("}")
    else:
        for f in LAYERS:
            print(f"{f:18} -> {', '.join(sorted(folders.get(f, ()))) or '-'}")
    for fault in faults:
        print("FAIL " + fault)
    if not faults:
        print(f"ok   layers ({len(files)} files, {len(LAYERS)} folders)")
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
