#!/usr/bin/env python3
"""Fails when a layer of tern includes upward (docs/architecture.md, "Layer rules").

Also checks that the README's layout table names every top-level folder and every folder of
runtime/, and nothing that does not exist.

Every C/C++/CUDA source under runtime/, backends/ and tools/ belongs to the layer of the most
specific folder rule below, and may include (with #include "...") only the folders that rule
lists. A source in a folder no rule covers is an error too, so a new folder gets a rule when it
is made. System headers (#include <...>) are not checked.

  scripts/check-layers.py [--root DIR]   check the tree (exit 1 and one line per violation)
  scripts/check-layers.py --self-test    check that the checker catches an upward include
"""
import argparse
import os
import re
import sys
import tempfile

RUNTIME_BELOW_EXECUTOR = ["runtime/core", "runtime/kernel", "runtime/backend"]

# folder -> folders its sources may include. "{b}" stands for one backend's name: a rule with
# it applies to every backends/<name>/ folder and allows only that same backend's folders.
RULES = {
    "runtime/core": ["runtime/core"],
    "runtime/kernel": ["runtime/core", "runtime/kernel"],
    "runtime/loader": ["runtime/core", "runtime/loader"],
    "runtime/backend": ["runtime/core", "runtime/backend"],
    "runtime/kernels/util": ["runtime/core", "runtime/kernels/util"],
    "runtime/kernels/portable": ["runtime/core", "runtime/kernel", "runtime/kernels/util",
                                 "runtime/kernels/portable"],
    "runtime/executor": RUNTIME_BELOW_EXECUTOR + ["runtime/executor", "schema"],
    "runtime/extension": RUNTIME_BELOW_EXECUTOR + ["runtime/loader", "runtime/executor",
                                                   "runtime/extension"],
    "runtime/c": ["runtime", "schema"],
    # A backend: its kernels see only core and the shared kernel helpers; its runtime half
    # adds the backend interface; its compile half is a compiler plug-in. Files at the
    # backend's top level (the blob format) are shared by both halves, and may use the shared
    # kernel helpers both halves see (e.g. the quantized-weight buffer layout).
    "backends/{b}": ["runtime/core", "runtime/kernels/util", "backends/{b}"],
    "backends/{b}/kernels": ["runtime/core", "runtime/kernels/util", "backends/{b}/kernels",
                             "backends/{b}/*.h"],
    "backends/{b}/shaders": ["backends/{b}/shaders"],
    # Weight preparation both halves share (the cpu backend packs the program's constants at
    # prepare; its compile half sizes them with the same code).
    "backends/{b}/weights": ["runtime/core", "runtime/kernels/util", "backends/{b}/weights",
                             "backends/{b}/kernels", "backends/{b}/*.h"],
    "backends/{b}/runtime": ["runtime/core", "runtime/backend", "runtime/kernels/util",
                             "backends/{b}/runtime", "backends/{b}/kernels",
                             "backends/{b}/weights", "backends/{b}/shaders",
                             "backends/{b}/*.h"],
    "backends/{b}/compile": ["runtime/core", "runtime/kernels/util", "tools/compiler",
                             "backends/{b}/compile", "backends/{b}/kernels",
                             "backends/{b}/weights", "backends/{b}/*.h"],
    "tools/compiler": ["runtime/core", "runtime/backend", "runtime/executor",
                       "runtime/kernels/util", "schema", "tools/compiler"],
    "tools/cli": ["runtime", "schema", "tools/compiler", "tools/cli"],
}

SOURCE = re.compile(r"\.(h|hpp|c|cc|cpp|cu|cuh)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
CHECKED_TOPS = ("runtime/", "backends/", "tools/")


def rule_for(rel_dir):
    """(folder, allowed list) of the most specific rule covering rel_dir, or None."""
    best = None
    for folder, allowed in RULES.items():
        if "{b}" in folder:
            parts = rel_dir.split("/")
            if len(parts) < 2 or parts[0] != "backends":
                continue
            concrete = folder.replace("{b}", parts[1])
            allowed = [a.replace("{b}", parts[1]) for a in allowed]
        else:
            concrete = folder
        if rel_dir == concrete or rel_dir.startswith(concrete + "/"):
            if best is None or len(concrete) > len(best[0]):
                best = (concrete, allowed)
    return best


def allowed_include(path, allowed):
    for a in allowed:
        if a.endswith("/*.h"):  # a header directly in that folder
            folder = a[: -len("/*.h")]
            if os.path.dirname(path) == folder:
                return True
        elif path == a or path.startswith(a + "/"):
            return True
    return False


def check(root):
    problems = []
    for top in CHECKED_TOPS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not SOURCE.search(name):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                rule = rule_for(os.path.dirname(rel))
                if rule is None:
                    problems.append(f"{rel}: no layer rule covers {os.path.dirname(rel)}/ "
                                    "(add one to scripts/check-layers.py and "
                                    "docs/architecture.md)")
                    continue
                folder, allowed = rule
                with open(full, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        inc = m.group(1)
                        if "/" not in inc:  # a sibling header
                            continue
                        if not allowed_include(inc, allowed):
                            problems.append(f"{rel}:{lineno}: includes \"{inc}\", but "
                                            f"{folder}/ may include only "
                                            f"{', '.join(allowed)}")
    return problems


def readme_layout_problems(root):
    """Folders of the tree missing from the README's layout table, and rows naming none."""
    readme = os.path.join(root, "README.md")
    if not os.path.exists(readme):
        return []
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    if "## Layout" not in text:
        return ["README.md: no '## Layout' table"]
    table = text.split("## Layout", 1)[1]
    rows = re.findall(r"^\| `([^`]+)`", table, re.M)
    listed = set()
    for row in rows:
        m = re.match(r"(.*)\{([^}]+)\}(.*)", row)  # backends/{cuda,vulkan}/
        names = [m.group(1) + n + m.group(3) for n in m.group(2).split(",")] if m else [row]
        listed.update(n.rstrip("/") for n in names)
    problems = []
    wanted = [d for d in sorted(os.listdir(root))
              if os.path.isdir(os.path.join(root, d)) and not d.startswith((".", "build"))
              and d not in ("out", "__pycache__")]
    wanted += ["runtime/" + d for d in sorted(os.listdir(os.path.join(root, "runtime")))
               if os.path.isdir(os.path.join(root, "runtime", d))]
    for d in wanted:
        if d not in listed and not any(l.startswith(d + "/") for l in listed):
            problems.append(f"README.md: the layout table has no row for {d}/")
    for l in sorted(listed):
        if not os.path.exists(os.path.join(root, l)):
            problems.append(f"README.md: the layout table lists {l}/, which does not exist")
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as root:
        def write(rel, text):
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        write("runtime/core/ok.h", '#include "runtime/core/span.h"\n#include <vector>\n')
        write("backends/gpu/runtime/ok.cpp",
              '#include "backends/gpu/blob_format.h"\n#include "runtime/backend/backend.h"\n')
        if check(root):
            print("check-layers self-test: a clean tree was flagged:", check(root))
            return 1
        write("runtime/core/bad.h", '#include "runtime/executor/method.h"\n')
        write("backends/gpu/runtime/bad.cpp", '#include "backends/cpu/runtime/x.h"\n')
        write("runtime/newfolder/x.cpp", "\n")
        found = check(root)
        expected = ["runtime/core/bad.h:1", "backends/gpu/runtime/bad.cpp:1",
                    "runtime/newfolder/x.cpp"]
        missing = [e for e in expected if not any(p.startswith(e) for p in found)]
        if missing or len(found) != len(expected):
            print("check-layers self-test: expected violations", expected, "got", found)
            return 1
    print("check-layers self-test: upward includes, cross-backend includes and unruled "
          "folders are caught")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    root = os.path.abspath(args.root)
    problems = check(root) + readme_layout_problems(root)
    for p in problems:
        print("layer violation:", p)
    if problems:
        print(f"check-layers: {len(problems)} violation(s) (rules: docs/architecture.md)")
        return 1
    print("check-layers: no upward include; the README's layout table matches the tree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
