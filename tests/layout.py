"""The installed package's import graph, read from its source with `ast` (no module is imported):
every ``import``/``from … import`` statement, at any depth, of every module of `malt` and its
mapped sub-packages. Used by tests/test_layout.py."""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

PACKAGES = ("malt", "malt.algorithms", "malt.datasets", "malt.repository")


def package_modules() -> dict[str, Path]:
    """Module name -> source file, for the installed (or editable) package and its mapped folders."""
    modules: dict[str, Path] = {}
    for package in PACKAGES:
        root = Path(importlib.util.find_spec(package).submodule_search_locations[0])
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if "__pycache__" in parts or any(not p.isidentifier() for p in parts):
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules.setdefault(".".join([package, *parts]), path)
    return modules


def _imports(tree: ast.AST):
    """(node, base module, names) of every import, skipping `if TYPE_CHECKING:` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            yield node, node.module or "", [a.name for a in node.names]
        stack.extend(ast.iter_child_nodes(node))


def _absolute(module: str, is_package: bool, node: ast.ImportFrom | ast.Import, base: str) -> str:
    level = getattr(node, "level", 0) or 0
    if not level:
        return base
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([base] if base else []))


def import_graph(modules: dict[str, Path] | None = None):
    """(edges {module: {imported module}}, private imports [(module, line, 'base.name')])."""
    modules = modules if modules is not None else package_modules()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    private = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node, base, names in _imports(tree):
            base = _absolute(module, path.name == "__init__.py", node, base)
            if not base.startswith("malt"):
                continue
            targets = []
            for name in names:
                if f"{base}.{name}" in modules:
                    targets.append(f"{base}.{name}")
                else:
                    targets.append(base)
                    if name.startswith("_") and not name.startswith("__"):
                        private.append((module, node.lineno, f"{base}.{name}"))
            if not names:
                while base and base not in modules:
                    base = base.rpartition(".")[0]
                targets.append(base)
            edges[module].update(t for t in targets if t in modules and t != module)
    return edges, private


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    import sys
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(edges) + 100))
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


if __name__ == "__main__":
    graph, private_imports = import_graph()
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} imports")
    for component in cycles(graph):
        print("cycle:", " ".join(component))
    for module, line, name in private_imports:
        print(f"private: {module}:{line} imports {name}")
