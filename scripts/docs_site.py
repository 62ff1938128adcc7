"""MkDocs hooks for the docs site: the API reference pages, and links that leave docs/.

Loaded by ``mkdocs.yml`` (``hooks:``), so ``make docs`` needs no plugin beyond
the pinned ``docs`` extra.

The API reference is generated at build time from ``tests/public_api.json``,
the reviewed list of public names per module: one page per public module,
each rendered by mkdocstrings from the docstrings. Nothing generated is
committed, so the reference cannot drift from the snapshot, and a name added
to the public surface shows up on the site with no edit here.

Each object is documented once, on the page of the most specific public
module that exports it (``Agent`` under ``tenxgraph.core.graph``, not under
``tenxgraph`` or ``tenxgraph.core``, which re-export it); the other pages
list it with a link there. That keeps one anchor per object, so the
references between pages are unambiguous and the strict build can check them.

The docs pages are plain Markdown that GitHub renders as well: a link that
leaves docs/ (``../examples/README.md``) works there but has no page on the
site. Such a link must still point at a file of the repository (a missing one
fails the strict build, like any broken link); on the site it becomes a link
to the repository's copy when ``repo_url`` is set, else the path as code.
"""

from __future__ import annotations

import json
import logging
import posixpath
import re
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SNAPSHOT = REPO / "tests" / "public_api.json"
API_DIR = "api"
LOG = logging.getLogger("mkdocs.plugins.tenxgraph")
# [text](target) outside code; targets with a scheme or an anchor only are left alone.
_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]+)\]\((?P<target>[^)\s#]+)(?P<anchor>#[^)\s]*)?\)")
_FENCE = re.compile(r"^(```|~~~)")
_CODE_SPAN = re.compile(r"`[^`]*`")


def public_api() -> dict[str, list[str]]:
    """The reviewed public surface: each public module and the names it exports."""
    surface: dict[str, list[str]] = json.loads(SNAPSHOT.read_text())
    return surface


def homes(surface: dict[str, list[str]], targets: dict[tuple[str, str], str]) -> dict[str, str]:
    """Each object's documented path -> the public module whose page documents it.

    ``targets`` maps (module, name) to the object's defining path (griffe's
    ``final_target``); an object exported by several modules is documented by
    the one whose path shares the longest prefix with where it is defined,
    ties going to the deeper module.
    """
    exporters: dict[str, list[str]] = {}
    for module, names in surface.items():
        for name in names:
            exporters.setdefault(targets[module, name], []).append(module)

    def closeness(module: str, target: str) -> tuple[int, int]:
        shared = 0
        for left, right in zip(module.split("."), target.split("."), strict=False):
            if left != right:
                break
            shared += 1
        return shared, module.count(".")

    return {
        target: max(modules, key=lambda module: closeness(module, target))
        for target, modules in exporters.items()
    }


def _targets(surface: dict[str, list[str]]) -> dict[tuple[str, str], str]:
    """(module, name) -> where the object is defined, read statically by griffe."""
    import griffe

    package = griffe.load("tenxgraph", search_paths=[str(REPO)], resolve_aliases=False)
    found: dict[tuple[str, str], str] = {}
    for module, names in surface.items():
        node = package if module == "tenxgraph" else package[module.removeprefix("tenxgraph.")]
        for name in names:
            obj = node[name]
            try:
                found[module, name] = obj.final_target.path if obj.is_alias else obj.path
            except griffe.AliasResolutionError:
                found[module, name] = f"{module}.{name}"  # the strict build reports it
    return found


def api_pages(surface: dict[str, list[str]]) -> dict[str, str]:
    """The generated reference: page path (under docs/) -> Markdown."""
    targets = _targets(surface)
    home = homes(surface, targets)
    pages = {f"{API_DIR}/index.md": _index_page(surface)}
    for module, names in surface.items():
        own = [name for name in names if home[targets[module, name]] == module]
        elsewhere = [(name, home[targets[module, name]]) for name in names if name not in own]
        pages[f"{API_DIR}/{module}.md"] = _module_page(module, own, elsewhere)
    return pages


def _index_page(surface: dict[str, list[str]]) -> str:
    rows = "\n".join(
        f"| [`{module}`]({module}.md) | {len(names)} |" for module, names in sorted(surface.items())
    )
    return (
        "# API reference\n\n"
        "Generated from the docstrings, one page per public module. The list of public\n"
        "names is the reviewed snapshot `tests/public_api.json`: a name that is not\n"
        "there is private and may change without notice. An object exported by several\n"
        "modules is documented once, on the page of the most specific one.\n\n"
        f"| module | public names |\n|---|---|\n{rows}\n"
    )


def _module_page(module: str, own: list[str], elsewhere: list[tuple[str, str]]) -> str:
    lines = [
        f"# `{module}`",
        "",
        f"::: {module}",
        "    options:",
        "      show_root_heading: false",
        "      show_root_toc_entry: false",
        "      members: false",
        "",
    ]
    if elsewhere:
        lines += ["Also exported here, documented with the module that defines them:", ""]
        lines += [f"- [`{name}`][{home}.{name}] (`{home}`)" for name, home in sorted(elsewhere)]
        lines.append("")
    for name in sorted(own, key=str.lower):
        lines += [f"::: {module}.{name}", ""]
    return "\n".join(lines)


def on_config(config: Any) -> Any:
    """Append the API reference, one entry per public module, to the navigation."""
    modules = sorted(public_api())
    entries: list[Any] = [{"Overview": f"{API_DIR}/index.md"}]
    entries += [{module: f"{API_DIR}/{module}.md"} for module in modules]
    config["nav"] = [*(config["nav"] or []), {"API reference": entries}]
    return config


def on_files(files: Any, config: Any) -> Any:
    """Add the generated reference pages to the site."""
    from mkdocs.structure.files import File

    for path, text in api_pages(public_api()).items():
        files.append(File.generated(config, path, content=text))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Check each link that leaves docs/ and point it at the repository's copy.

    Also unescapes a pipe inside code in a table row: GitHub needs the
    backslash there and shows a plain pipe; Python-Markdown leaves pipes in
    code alone and would show the backslash.
    """
    source = page.file.src_uri
    docs = Path(config["docs_dir"]).resolve()
    out: list[str] = []
    fenced = False
    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
        if not fenced:
            line = _LINK.sub(lambda match: _outside_link(match, source, docs, config), line)
            if line.lstrip().startswith("|"):
                line = _CODE_SPAN.sub(lambda span: span.group(0).replace("\\|", "|"), line)
        out.append(line)
    return "".join(out)


def _outside_link(match: re.Match[str], source: str, docs: Path, config: Any) -> str:
    target = match.group("target")
    if "://" in target or target.startswith(("mailto:", "/")):
        return match.group(0)
    resolved = (docs / posixpath.dirname(source) / target).resolve()
    if resolved.is_relative_to(docs):
        return match.group(0)  # MkDocs checks links inside docs/ itself
    if not resolved.is_relative_to(REPO) or not resolved.exists():
        LOG.warning("%s: the link %r points at no file of the repository", source, target)
        return match.group(0)
    path = resolved.relative_to(REPO).as_posix()
    repo_url = config.get("repo_url")
    if repo_url:
        kind = "tree" if resolved.is_dir() else "blob"
        return f"[{match.group('text')}]({repo_url.rstrip('/')}/{kind}/main/{path})"
    return f"{match.group('text')} (`{path}` in the repository)"
