#!/usr/bin/env python3
"""Checks the interop harness's layout (issue 23); run by .ci/run before the suite, in seconds.

1. No import circle: the modules of interop/harness (and run.py) import each other along a graph
   without cycles, so no module imports a module that imports it back, directly or through others.
   Importing `harness.scenarios.sNN` counts as importing the package `harness.scenarios` too (Python
   runs the package's __init__ first).
2. One file per scenario: every `harness/scenarios/sNN_<name>.py` is registered in
   `harness.scenarios.SCENARIOS` under NN with a function defined in that file, every registered
   number has its file, a scenario file imports no other scenario nor the registry, and RUN_ORDER
   lists every scenario once.

Usage: python3 interop/check_layout.py [INTEROP_DIR]   (default: this file's directory)
Exit status 0 when the layout holds; otherwise each problem is printed and the status is 1.
"""

import ast
import importlib
import os
import re
import sys

SCENARIO_FILE = re.compile(r"^s(\d\d)_\w+\.py$")


def module_name(root, path):
    """Dotted name of a file under root (the interop directory): harness/x/y.py -> harness.x.y."""
    rel = os.path.relpath(path, root)[:-3].split(os.sep)
    if rel[-1] == "__init__":
        rel = rel[:-1]
    return ".".join(rel)


def harness_files(root):
    out = [os.path.join(root, "run.py")]
    for d, _, files in os.walk(os.path.join(root, "harness")):
        out += [os.path.join(d, f) for f in files if f.endswith(".py")]
    return sorted(out)


def imports_of(name, path, is_package):
    """Modules that `name` imports (absolute dotted names; outside modules included, filtered later)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    package = name if is_package else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            out.add(mod)
            # `from pkg import sub` imports the submodule pkg.sub when there is one.
            out.update(mod + "." + a.name for a in node.names)
    return out


def import_graph(root):
    files = {module_name(root, p): p for p in harness_files(root)}
    graph = {}
    for name, path in files.items():
        targets = set()
        for mod in imports_of(name, path, path.endswith("__init__.py")):
            if mod in files and mod != name:
                targets.add(mod)
                # A submodule's import runs its packages' __init__ first.
                parts = mod.split(".")
                targets.update(p for p in (".".join(parts[:i]) for i in range(1, len(parts)))
                               if p in files and p != name and not name.startswith(p + "."))
        graph[name] = targets
    return graph


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def circle_problems(graph):
    problems = []
    for comp in cycles(graph):
        pairs = ["%s -> %s" % (a, b) for a in comp for b in sorted(graph[a]) if b in comp]
        problems.append("import circle among %s (%s)" % (", ".join(comp), "; ".join(pairs)))
    return problems


def registry_problems(root, graph):
    sdir = os.path.join(root, "harness", "scenarios")
    files = {int(m.group(1)): f for f in os.listdir(sdir) for m in [SCENARIO_FILE.match(f)] if m}
    problems = []
    for n, f in sorted(files.items()):
        name = "harness.scenarios." + f[:-3]
        for dep in sorted(graph.get(name, ())):
            if dep == "harness.scenarios" or dep.startswith("harness.scenarios."):
                problems.append("%s imports %s (a scenario imports only shared helpers)" % (name, dep))
    sys.path.insert(0, root)
    try:
        registry = importlib.import_module("harness.scenarios")
    except Exception as e:  # noqa: BLE001 - reported as the problem it is
        return problems + ["the registry harness.scenarios does not import: %s: %s" % (type(e).__name__, e)]
    finally:
        sys.path.remove(root)
    for n, (title, fn) in sorted(registry.SCENARIOS.items()):
        want = "harness.scenarios." + files[n][:-3] if n in files else None
        if want is None:
            problems.append("scenario %d is registered but has no file harness/scenarios/s%02d_<name>.py" % (n, n))
        elif fn.__module__ != want:
            problems.append("scenario %d's function %s is defined in %s, not %s" % (n, fn.__name__, fn.__module__, want))
        if not title:
            problems.append("scenario %d has no title" % n)
    for n in sorted(set(files) - set(registry.SCENARIOS)):
        problems.append("harness/scenarios/%s is not registered in SCENARIOS" % files[n])
    if sorted(registry.RUN_ORDER) != sorted(registry.SCENARIOS):
        problems.append("RUN_ORDER %s does not list every scenario once" % registry.RUN_ORDER)
    return problems


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
    sys.dont_write_bytecode = True
    graph = import_graph(root)
    problems = circle_problems(graph)
    if not problems:  # importing the registry through a circle could fail for that reason alone
        problems = registry_problems(root, graph)
    for p in problems:
        print("interop layout: " + p)
    print("interop layout: %d modules, %s" % (len(graph), "ok" if not problems else "%d problem(s)" % len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
