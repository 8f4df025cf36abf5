"""The import contracts of the layout, read from the source with `ast` (function-level imports included):
costmodel/ imports nothing of specdash's but itself; db/ never imports ingest/, app/, cli/ or answers/ (the
service layer, which imports costmodel/ and db/ and never ingest/, app/ or cli/); app/ and
cli/ never import each other; no import cycle; no `_private` name of one module used by another; the
service layer's pure decisions (PURE_MODULES: the refresh's judging, calibration, advice) never reaches SQLAlchemy or the store, however indirectly. And the
size of functions: none over 80 lines (landed migrations and the demo document aside). Modules have no size cap: a module holds
one responsibility whole, however long (cohesion decides, not a count).

Modules are named as installed (`specdash.db.stored`); pyproject's package list names them, and each is
its top-level folder (specdash.db -> db/, which specdash/db links to); `specdash.*` root modules live in
specdash/."""

import ast
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Which top-level packages (the folder under specdash.) may not import which.
FORBIDDEN = {
    "costmodel": ("db", "ingest", "app", "cli", "migrations", "specdash", "answers"),
    "db": ("ingest", "app", "cli", "answers"),
    # the service layer answers from costmodel/ and db/; the pages and commands call it, never it them
    "answers": ("ingest", "app", "cli"),
    "app": ("cli",),
    "cli": ("app",),
}
# The refresh's judging: pure functions over typed rows, tested without a database; neither they nor
# anything of specdash they import reaches the store (specdash.db) or SQLAlchemy.
PURE_MODULES = (
    "specdash.rows",
    "specdash.answers.predicting",
    "specdash.answers.gaps",
    "specdash.answers.verdicts",
    "specdash.answers.judging",
    # calibration, depth advice and the load model's choice
    "specdash.answers.advice",
    "specdash.answers.calibration",
    "specdash.answers.loadfits",
)
STORE_PACKAGES = ("sqlalchemy", "specdash.db")
MAX_FUNCTION_LINES = 80
SIZE_EXEMPT = ("specdash.migrations.versions.", "specdash.demo")  # landed revisions; declarative data


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the specdash module imported (a package's __init__ when a name comes from it)
    name: str | None  # the name taken from it (from-imports)
    line: int
    where: str  # the importing file, relative to the repository

    def __str__(self) -> str:
        what = f"{self.target}.{self.name}" if self.name else self.target
        return f"{self.where}:{self.line} imports {what}"


def modules(root: Path) -> dict[str, Path]:
    """Every module of the installed package, by name, from pyproject's package list: `specdash.X.Y` is
    the top-level folder X/Y (specdash/X is a link to it), `specdash` itself the folder specdash/."""
    config = tomllib.loads((root / "pyproject.toml").read_text())
    found = {}
    for package in config["tool"]["setuptools"]["packages"]:
        folder = "specdash" if package == "specdash" else package.removeprefix("specdash.").replace(".", "/")
        for path in sorted((root / folder).glob("*.py")):
            found[package if path.name == "__init__.py" else f"{package}.{path.stem}"] = path
    return found


def imports(root: Path) -> list[Import]:
    """Every import of a specdash module by a specdash module, anywhere in it (function bodies too)."""
    known = modules(root)
    out = []
    for module, path in known.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        where = str(path.relative_to(root))
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                out += [
                    Import(module, a.name, None, node.lineno, where) for a in node.names if a.name in known
                ]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{parent}.{base}" if base else parent
                for alias in node.names:
                    if f"{base}.{alias.name}" in known:  # a submodule
                        out.append(Import(module, f"{base}.{alias.name}", None, node.lineno, where))
                    elif base in known:
                        out.append(Import(module, base, alias.name, node.lineno, where))
    return [i for i in out if i.target != i.module]


def top(module: str) -> str:
    """The top-level folder of a module: specdash.db.stored -> db, specdash.config -> specdash."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and f"specdash.{parts[1]}" in PACKAGES else "specdash"


PACKAGES = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])


def direction_breaks(found: list[Import]) -> list[str]:
    return [
        f"{i}: {top(i.module)}/ never imports {top(i.target)}/"
        for i in found
        if top(i.target) in FORBIDDEN.get(top(i.module), ()) and top(i.target) != top(i.module)
    ]


def private_imports(found: list[Import], root: Path) -> list[str]:
    """`from m import _name` of another module, and `m._name` on a module imported as a name."""
    out = [f"{i}: a private name of another module" for i in found if i.name and _private(i.name)]
    known = modules(root)
    for path in known.values():
        tree = ast.parse(path.read_text(), str(path))
        bound = {
            alias.asname or alias.name: f"{node.module}.{alias.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module
            for alias in node.names
            if f"{node.module}.{alias.name}" in known
        } | {
            alias.asname: alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
            if alias.asname and alias.name in known
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound
                and _private(node.attr)
            ):
                where = path.relative_to(root)
                out.append(f"{where}:{node.lineno} uses {bound[node.value.id]}.{node.attr}: a private name")
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def cycles(found: list[Import]) -> list[str]:
    """Each import cycle (a strongly connected group of modules), with the imports that close it."""
    graph: dict[str, set[str]] = {}
    for i in found:
        graph.setdefault(i.module, set()).add(i.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [
        "cycle: " + "; ".join(str(i) for i in found if i.module in group and i.target in group)
        for group in groups
    ]


def impure_imports(root: Path, pure: tuple[str, ...]) -> list[str]:
    """Each import of the store (STORE_PACKAGES) by a pure module or by a specdash module it imports,
    directly or through others: the module that imports it, and the pure module it reaches."""
    known = modules(root)
    found = imports(root)
    reaches: dict[str, set[str]] = {}
    for i in found:
        reaches.setdefault(i.module, set()).add(i.target)
    out = []
    for start in pure:
        seen, todo = {start}, [start]
        while todo:
            module = todo.pop()
            for target in sorted(reaches.get(module, ())):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        for module in sorted(seen & set(known)):
            path = known[module]
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and not node.level:
                    names = [node.module or ""]
                for name in names:
                    if name.startswith(STORE_PACKAGES):
                        where = path.relative_to(root)
                        out.append(f"{where}:{node.lineno} imports {name} (reached from {start})")
    return out


def long_units(root: Path) -> list[str]:
    out = []
    for module, path in modules(root).items():
        if module.startswith(SIZE_EXEMPT):
            continue
        text = path.read_text()
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    out.append(f"{path.relative_to(root)}:{node.lineno} {node.name}: {lines} lines")
    return out


# The store returns typed rows: DataFrames are built in app/ (app/frames.py), so no module of db/ imports
# pandas.
def typed_row_stores(root: Path) -> tuple[str, ...]:
    return tuple(m for m in modules(root) if m == "specdash.db" or m.startswith("specdash.db."))


def pandas_imports(root: Path, stores: tuple[str, ...] | None = None) -> list[str]:
    """Each import of pandas by a module named in `stores` (every module of db/ when None)."""
    known = modules(root)
    stores = typed_row_stores(root) if stores is None else stores
    out = []
    for module in stores:
        path = known[module]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            out += [
                f"{path.relative_to(root)}:{node.lineno} imports {name}: the store returns typed rows"
                for name in names
                if name.split(".")[0] == "pandas"
            ]
    return out


@pytest.fixture(scope="module")
def found() -> list[Import]:
    return imports(ROOT)


def test_the_layers_import_downwards_only(found):
    assert direction_breaks(found) == []


def test_no_import_cycles(found):
    assert cycles(found) == []


def test_no_private_name_crosses_a_module(found):
    assert private_imports(found, ROOT) == []


def test_the_pure_decisions_never_reach_the_store():
    assert set(PURE_MODULES) <= set(modules(ROOT))  # each named module exists
    assert impure_imports(ROOT, PURE_MODULES) == []


def test_the_purity_check_finds_a_store_import_however_deep(tmp_path):
    """A pure module importing a helper that imports the store is caught, at the helper's import."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.setuptools]\npackages = ["specdash", "specdash.answers", "specdash.db"]\n'
    )
    files = {
        "specdash/__init__.py": "",
        "answers/__init__.py": "",
        "answers/pure.py": "from specdash.answers import helper\n",
        "answers/helper.py": "from sqlalchemy import select\nimport specdash.db.models\n",
        "db/__init__.py": "",
        "db/models.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert impure_imports(tmp_path, ("specdash.answers.pure",)) == [
        "answers/helper.py:1 imports sqlalchemy (reached from specdash.answers.pure)",
        "answers/helper.py:2 imports specdash.db.models (reached from specdash.answers.pure)",
    ]


def test_units_stay_small():
    assert long_units(ROOT) == []


def test_the_checks_find_what_they_look_for(tmp_path):
    """A made-up tree that breaks every rule: each check names the module and the import."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.setuptools]\npackages = ["specdash", "specdash.costmodel", "specdash.db", "specdash.app"]\n'
        '[tool.setuptools.package-dir]\n"specdash" = "specdash"\n"specdash.costmodel" = "costmodel"\n'
        '"specdash.db" = "db"\n"specdash.app" = "app"\n'
    )
    sources = {
        "specdash/__init__.py": "",
        "costmodel/__init__.py": "",
        "costmodel/rules.py": "def f():\n    from specdash.db.store import save\n",
        "db/__init__.py": "",
        "db/store.py": "from specdash.db import other\n\ndef save():\n    return other._hidden\n",
        "db/other.py": "from specdash.db.store import save, _helper\n\ndef long():\n" + "    x = 1\n" * 80,
        "app/__init__.py": "",
    }
    for name, text in sources.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    made = imports(tmp_path)
    assert direction_breaks(made) == [
        "costmodel/rules.py:2 imports specdash.db.store.save: costmodel/ never imports db/"
    ]
    [cycle] = cycles(made)
    assert (
        "db/store.py:1 imports specdash.db.other" in cycle
        and "db/other.py:1 imports specdash.db.store" in cycle
    )
    assert private_imports(made, tmp_path) == [
        "db/other.py:1 imports specdash.db.store._helper: a private name of another module",
        "db/store.py:4 uses specdash.db.other._hidden: a private name",
    ]
    assert long_units(tmp_path) == ["db/other.py:3 long: 81 lines"]


def page_script_lines(path: Path) -> list[str]:
    """What a page module does at its top level besides importing, defining functions, classes and
    constants and calling `render()` once, last: each such statement with its line."""
    body = ast.parse(path.read_text(), str(path)).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    last = body[-1] if body else None
    calls_render = (
        isinstance(last, ast.Expr)
        and isinstance(last.value, ast.Call)
        and isinstance(last.value.func, ast.Name)
        and last.value.func.id == "render"
        and not last.value.args
    )
    out = [] if calls_render else [f"{path.name}: does not end with render()"]
    for node in body[:-1] if calls_render else body:
        if isinstance(node, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.ClassDef):
            continue
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        names = [n for t in targets for n in ([*t.elts] if isinstance(t, ast.Tuple) else [t])]
        if names and all(isinstance(n, ast.Name) and n.id.isupper() for n in names):
            continue  # a constant
        out.append(f"{path.name}:{node.lineno}: {ast.unparse(node).splitlines()[0]}")
    return out


def test_a_page_is_a_render_of_functions():
    """A page's work is in functions (under the size rule above, which a script's top level escapes); its
    top level imports, defines and calls render()."""
    pages = {p.stem: p for p in (ROOT / "app" / "views").glob("*.py") if p.stem != "__init__"}
    found = {name: page_script_lines(path) for name, path in pages.items()}
    assert found and all(lines == [] for lines in found.values()), found


def test_the_page_check_finds_a_script(tmp_path):
    page = tmp_path / "page.py"
    page.write_text(
        '"""A page."""\nimport streamlit as st\nLIMIT = 3\nst.title("x")\n\ndef render():\n    pass\n'
    )
    assert page_script_lines(page) == ["page.py: does not end with render()", "page.py:4: st.title('x')"]
    page.write_text(
        '"""A page."""\nimport streamlit as st\n\n\ndef render():\n    st.title("x")\n\n\nrender()\n'
    )
    assert page_script_lines(page) == []


def test_the_typed_row_stores_import_no_pandas():
    assert pandas_imports(ROOT) == []


def test_the_pandas_check_finds_an_import(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.setuptools]\npackages = ["specdash", "specdash.db"]\n'
        '[tool.setuptools.package-dir]\n"specdash" = "specdash"\n"specdash.db" = "db"\n'
    )
    for name, text in {
        "specdash/__init__.py": "",
        "db/__init__.py": "",
        "db/rows.py": "import pandas as pd\n",
    }.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    assert pandas_imports(tmp_path, ("specdash.db.rows",)) == [
        "db/rows.py:1 imports pandas: the store returns typed rows"
    ]
