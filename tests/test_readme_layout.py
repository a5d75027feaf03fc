"""The README's "Layout" block names every module of the package, and no module that is gone.

How the block is read (the README's own convention, so it stays plain text a person writes):
`src/memproc/` opens the package; a line indented two spaces that starts with `.py` names
lists the package's top-level modules; `name/` indented 2 (or 4, 6... under the folder above)
opens a folder. Under a folder, the rest of its own line included, text made only of lowercase
module names (a `(remark)` after a name is ignored) lists modules; any other text (a
description has commas, a colon, a slash or a full stop) is prose. A folder's subpackages are
the folder lines nested under it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import memproc

PACKAGE_DIR = Path(memproc.__file__).resolve().parent
README = PACKAGE_DIR.parent.parent / "README.md"
FOLDER = re.compile(r"^(?P<indent> +)(?P<name>[a-z_]+)/(\s|$)")
REMARK = re.compile(r"\([^)]*\)")
MODULE_NAMES = re.compile(r"^[a-z_][a-z0-9_]*( [a-z_][a-z0-9_]*)*$")


def layout_block(text: str) -> list[str]:
    """The lines of the first fenced block after the "## Layout" heading."""
    after = text.split("\n## Layout\n", 1)[1]
    return after.split("```", 2)[1].splitlines()[1:]


def listed(lines: list[str]) -> dict[str, set[str]]:
    """Each folder under src/memproc/ ("" for the package itself) and the names listed for it:
    modules by their stem, subpackages as `name/`."""
    found: dict[str, set[str]] = {"": set()}
    stack: list[tuple[int, str]] = []  # (indent, path) of the folders the line is inside
    for line in package_lines(lines):
        folder = FOLDER.match(line)
        if folder:
            indent = len(folder["indent"])
            stack = [(i, path) for i, path in stack if i < indent]
            parent = stack[-1][1] if stack else ""
            found[parent].add(f"{folder['name']}/")
            stack.append((indent, f"{parent}/{folder['name']}".lstrip("/")))
            found[stack[-1][1]] = set()
            line = line[folder.end() :]
        if stack:
            found[stack[-1][1]] |= module_names(line)
        else:
            found[""] |= {w.removesuffix(".py") for w in line.split() if w.endswith(".py")}
    return found


def package_lines(lines: list[str]) -> list[str]:
    """The lines after `src/memproc/` up to the next one that is not indented."""
    start = lines.index("src/memproc/") + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith(" ")), len(lines))
    return lines[start:end]


def module_names(text: str) -> set[str]:
    """The names in `text` if it is only module names (remarks aside), else none: prose."""
    names = REMARK.sub("", text).strip()
    return set(names.split()) if MODULE_NAMES.match(names) else set()


def actual(folder: Path) -> set[str]:
    """A package folder's modules (but `__init__`) and subpackages, as `listed` names them."""
    modules = {p.stem for p in folder.glob("*.py") if p.name != "__init__.py"}
    packages = {f"{p.name}/" for p in folder.iterdir() if (p / "__init__.py").is_file()}
    return modules | packages


def package_folders() -> list[str]:
    folders = [
        p.parent.relative_to(PACKAGE_DIR).as_posix() for p in PACKAGE_DIR.rglob("__init__.py")
    ]
    return sorted("" if folder == "." else folder for folder in folders)


LISTED = listed(layout_block(README.read_text()))


def test_the_reader_of_the_block_reads_the_convention() -> None:
    lines = [
        "src/memproc/",
        "  a.py b.py          entry points",
        "  ops/        handlers, grouped by domain;",
        "              cursors search (remark, with commas)",
        "              and nothing else imports it.",
        "    memories/ memory creation",
        "              views",
        "schemas/      generated",
    ]
    assert listed(lines) == {
        "": {"a", "b", "ops/"},
        "ops": {"cursors", "search", "memories/"},
        "ops/memories": {"memory", "creation", "views"},
    }


def test_every_package_folder_is_in_the_layout() -> None:
    assert package_folders() == sorted(LISTED)


@pytest.mark.parametrize("folder", package_folders(), ids=lambda f: f or "memproc")
def test_the_layout_lists_exactly_the_modules_of_each_folder(folder: str) -> None:
    expected = actual(PACKAGE_DIR / folder)
    names = LISTED.get(folder, set())
    assert names == expected, (
        f"README lists {sorted(names - expected)}, misses {sorted(expected - names)}"
    )
