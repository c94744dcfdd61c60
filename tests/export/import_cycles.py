#!/usr/bin/env python3
"""import_cycles.py: the modules of tern_export (tools/export/tern_export) import each other
without a cycle, and in particular ops_table.py never imports lower.py (lower imports
ops_table; what both need lives in errors.py or values.py). Reads the sources with `ast`
(imports inside functions count too), so it needs no torch. Exits 1 naming the cycle.

  python3 tests/export/import_cycles.py
"""
import ast
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.abspath(os.path.join(HERE, "..", "..", "tools", "export", "tern_export"))
NAME = "tern_export"


def sibling_imports(path, modules):
    """The package modules that `path` imports, anywhere in the file."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level == 0:
                if base != NAME and not base.startswith(NAME + "."):
                    continue
                base = base[len(NAME) + 1:]
            elif node.level > 1:
                continue  # above the package
            if base:
                found.add(base.split(".")[0])
            else:  # from . import x, y
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(NAME + "."):
                    found.add(alias.name.split(".")[1])
    return found & modules


def main():
    modules = {f[:-3] for f in os.listdir(PACKAGE) if f.endswith(".py") and f != "__init__.py"}
    graph = {m: sibling_imports(os.path.join(PACKAGE, m + ".py"), modules) for m in modules}
    failures = []
    if "lower" in graph.get("ops_table", ()):
        failures.append("ops_table.py imports lower.py (lower imports ops_table): move what "
                        "ops_table needs into errors.py or values.py")
    # Depth-first search for a cycle.
    state = {}

    def visit(m, stack):
        state[m] = "open"
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                cycle = stack[stack.index(n):] + [n]
                failures.append("import cycle: " + " -> ".join(cycle))
            elif n not in state:
                visit(n, stack + [n])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    for f in failures:
        print("FAIL: " + f)
    print("%d modules, %s" % (len(graph), "no import cycle" if not failures else
                              "%d failure(s)" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
