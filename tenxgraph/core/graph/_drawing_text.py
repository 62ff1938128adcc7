"""The drawings of a ``GraphDescription``: Mermaid, a terminal listing, Graphviz DOT and its output.

Every drawing shows the same facts in the same order (the graph's own order
of nodes and edges), so their output is stable enough for golden files.
SVG and PNG come from Graphviz's ``dot`` program run locally: no network
service sees the graph.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import TYPE_CHECKING

from tenxgraph.errors import UsageError
from tenxgraph.utils.constants import END, START

if TYPE_CHECKING:
    from tenxgraph.core.graph._drawing import DrawnEdge, DrawnNode, GraphDescription

__all__ = ["ascii_listing", "dot_source", "mermaid", "run_dot"]

DOT_TIMEOUT = 30.0
"""Seconds ``dot`` may take; a graph of a few hundred nodes needs well under one."""

_ARROWS = {
    "edge": "-->",
    "branch": "-?->",
    "goto": "-g->",
    "any": "-?->",
    "join": "=j=>",
    "send": "-s->",
}
_LEGEND = "--> always   -?-> the router picks   -g-> Command(goto=...)"
_MORE_LEGEND = "=j=> join: waits for all its sources   -s-> Send: one task per item"


def _label(node: DrawnNode) -> str:
    shown = {START: "START", END: "END"}.get(node.name, node.name)
    parts = [shown, node.detail] if node.detail else [shown]
    if node.folded:
        parts.append("+ " + ", ".join(node.folded))
    parts += [f"({mark})" for mark in node.marks]
    return "\n".join(parts)


def ascii_listing(description: GraphDescription) -> str:
    """Each node with its marks, then one line per way out of it."""
    legend = _LEGEND
    if any(edge.kind in ("join", "send") for edge in description.edges):
        legend += "   " + _MORE_LEGEND
    lines = [f"graph {description.title}".rstrip() + f"   ({legend})"]
    outgoing: dict[str, list[DrawnEdge]] = {}
    for edge in description.edges:
        outgoing.setdefault(edge.source, []).append(edge)
    for node in description.nodes:
        head = {START: "START", END: "END"}.get(node.name, node.name)
        extras = [node.detail] if node.detail else []
        if node.folded:
            extras.append("+ " + ", ".join(node.folded))
        extras += [f"[{mark}]" for mark in node.marks]
        lines.append("  ".join([head, *extras]))
        if node.subgraph is not None:  # its own listing, indented, without the legend
            lines += [f"    | {line}" for line in ascii_listing(node.subgraph).splitlines()[1:]]
        for edge in outgoing.get(node.name, ()):
            target = {START: "START", END: "END"}.get(edge.target, edge.target)
            when = f"   when the router returns {edge.label!r}" if edge.label else ""
            if edge.kind == "any":
                when = f"   {edge.label} returns a node name (no path_map)"
            elif edge.kind == "join":
                when = f"   once {edge.label} have all finished"
            lines.append(f"  {_ARROWS[edge.kind]} {target}{when}")
    lines += [f"! {problem}" for problem in description.problems]
    return "\n".join(lines) + "\n"


def _ids(description: GraphDescription) -> dict[str, str]:
    """Mermaid/DOT-safe identifiers for node names, readable and unique."""
    ids: dict[str, str] = {}
    for node in description.nodes:
        base = {START: "__start__", END: "__end__"}.get(node.name) or (
            re.sub(r"\W", "_", node.name) or "node"
        )
        if base == "_":
            base = "any_node"
        candidate, number = base, 2
        while candidate in ids.values() or candidate in ("end", "graph", "subgraph"):
            candidate, number = f"{base}_{number}", number + 1
        ids[node.name] = candidate
    return ids


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;").replace("\n", "<br/>")


_MERMAID_SHAPES = {"start": ('(["', '"])'), "end": ('(["', '"])'), "any": ('{{"', '"}}')}
_MERMAID_ARROWS = {
    "edge": "-->",
    "branch": "-.->",
    "goto": "-.->",
    "any": "-.->",
    "join": "==>",
    "send": "-.->",
}
_MERMAID_CLASSES = {
    "first": "fill:#e8f5e9,stroke:#2e7d32",
    "last": "fill:#eceff1,stroke:#455a64",
    "hook": "fill:#fff8e1,stroke:#b28704,stroke-dasharray:3 3",
    "interrupt": "stroke:#c62828,stroke-width:3px",
    "unreachable": "fill:#f5f5f5,color:#9e9e9e,stroke:#9e9e9e,stroke-dasharray:5 5",
    "missing": "fill:#ffebee,color:#b71c1c,stroke:#b71c1c,stroke-dasharray:5 5",
}


def _mermaid_classes(node: DrawnNode) -> list[str]:
    classes = {"start": ["first"], "end": ["last"], "hook": ["hook"], "missing": ["missing"]}
    names = list(classes.get(node.kind, []))
    if node.interrupt_before or node.interrupt_after:
        names.append("interrupt")
    if node.unreachable:
        names.append("unreachable")
    return names


def mermaid(description: GraphDescription) -> str:
    """A Mermaid ``flowchart TD``: solid edges always run, dotted ones are chosen at run time.

    A subgraph node is a ``subgraph`` block holding its graph's drawing (its
    ids prefixed with the node's), which the parent's edges lead into.
    """
    used: set[str] = set()
    lines = ["flowchart TD", *_mermaid_body(description, "", "    ", used)]
    styles = _MERMAID_CLASSES.items()
    lines += [f"    classDef {name} {style}" for name, style in styles if name in used]
    return "\n".join(lines) + "\n"


def _mermaid_body(
    description: GraphDescription, prefix: str, indent: str, used: set[str]
) -> list[str]:
    """The node and edge lines of one graph (a subgraph's too, its ids under ``prefix``)."""
    ids = {name: prefix + ident for name, ident in _ids(description).items()}
    lines = []
    for node in description.nodes:
        ident = ids[node.name]
        if node.subgraph is not None:
            lines.append(f'{indent}subgraph {ident}["{_mermaid_text(_label(node))}"]')
            lines += _mermaid_body(node.subgraph, f"{ident}_", indent + "    ", used)
            lines.append(f"{indent}end")
            continue
        opening, closing = _MERMAID_SHAPES.get(node.kind, ('["', '"]'))
        lines.append(f"{indent}{ident}{opening}{_mermaid_text(_label(node))}{closing}")
        classes = _mermaid_classes(node)
        used.update(classes)
        if classes:
            lines.append(f"{indent}class {ident} {','.join(classes)}")
    for edge in description.edges:
        arrow = _MERMAID_ARROWS[edge.kind]
        text = _edge_text(edge)
        label = f'|"{_mermaid_text(text)}"|' if text else ""
        lines.append(f"{indent}{ids[edge.source]} {arrow}{label} {ids[edge.target]}")
    return lines


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


_DOT_NODES = {
    "start": 'shape=oval, style=filled, fillcolor="#e8f5e9"',
    "end": 'shape=oval, style=filled, fillcolor="#eceff1"',
    "hook": 'shape=box, style="rounded,dashed,filled", fillcolor="#fff8e1"',
    "missing": 'shape=box, style="dashed,filled", fillcolor="#ffebee", fontcolor="#b71c1c"',
    "any": "shape=hexagon, style=dashed",
}
_DOT_EDGES = {
    "edge": "",
    "branch": "style=dashed",
    "goto": "style=dotted",
    "any": "style=dashed",
    "join": "style=bold",
    "send": "style=dashed",
}


def _edge_text(edge: DrawnEdge) -> str:
    """An edge's label in Mermaid and DOT: its kind for goto, join and send edges."""
    if edge.kind == "goto":
        return "goto"
    if edge.kind == "join":
        return f"join {edge.label}"
    if edge.kind == "send":
        return f"Send {edge.label}".rstrip()
    return edge.label


def _dot_node(node: DrawnNode, ident: str, indent: str) -> str:
    attributes = [f'label="{_dot_text(_label(node))}"']
    attributes.append(_DOT_NODES.get(node.kind, 'shape=box, style="rounded"'))
    attributes += _dot_marks(node)
    return f'{indent}"{ident}" [{", ".join(attributes)}];'


def _dot_marks(node: DrawnNode) -> list[str]:
    """A node's (or a subgraph cluster's) pause and unreachable marks."""
    marks = []
    if node.interrupt_before or node.interrupt_after:
        marks.append('color="#c62828", penwidth=2')
    if node.unreachable:
        marks.append('fontcolor="#9e9e9e", color="#9e9e9e", style=dashed')
    return marks


def dot_source(description: GraphDescription) -> str:
    """Graphviz DOT for ``dot``; nodes by their Mermaid ids, labels quoted.

    A subgraph node is a cluster holding its graph's drawing (ids prefixed
    with the node's, as in Mermaid); the parent's edges lead into its START
    and out of its END, clipped at the cluster's border (``compound``).
    """
    title = _dot_text(description.title)
    compound = ", compound=true" if any(n.subgraph for n in description.nodes) else ""
    lines = [
        "digraph G {",
        f'    graph [label="{title}", labelloc=t, fontname="Helvetica"{compound}];',
        '    node [fontname="Helvetica"];',
        '    edge [fontname="Helvetica", fontsize=10];',
        *_dot_body(description, "", "    "),
        "}",
    ]
    return "\n".join(lines) + "\n"


def _dot_body(description: GraphDescription, prefix: str, indent: str) -> list[str]:
    """The node and edge lines of one graph (a subgraph's too, its ids under ``prefix``)."""
    ids = {name: prefix + ident for name, ident in _ids(description).items()}
    clusters: dict[str, tuple[str, str, str]] = {}  # per subgraph node: cluster, entry, exit
    lines = []
    for node in description.nodes:
        ident = ids[node.name]
        if node.subgraph is None:
            lines.append(_dot_node(node, ident, indent))
            continue
        cluster = f"cluster_{ident}"
        label = [f'label="{_dot_text(_label(node))}"', 'style="rounded"', *_dot_marks(node)]
        lines.append(f'{indent}subgraph "{cluster}" {{')
        lines.append(f"{indent}    graph [{', '.join(label)}];")
        lines += _dot_body(node.subgraph, f"{ident}_", indent + "    ")
        lines.append(f"{indent}}}")
        inner = _ids(node.subgraph)
        first, last = inner.get(START, next(iter(inner.values()))), inner.get(END)
        clusters[node.name] = (cluster, f"{ident}_{first}", f"{ident}_{last or first}")
    for edge in description.edges:
        source, target = ids[edge.source], ids[edge.target]
        attributes = [a for a in (_DOT_EDGES[edge.kind],) if a]
        text = _edge_text(edge)
        if text:
            attributes.append(f'label="{_dot_text(text)}"')
        if edge.source in clusters:
            source = clusters[edge.source][2]
            attributes.append(f'ltail="{clusters[edge.source][0]}"')
        if edge.target in clusters:
            target = clusters[edge.target][1]
            attributes.append(f'lhead="{clusters[edge.target][0]}"')
        suffix = f" [{', '.join(attributes)}]" if attributes else ""
        lines.append(f'{indent}"{source}" -> "{target}"{suffix};')
    return lines


def run_dot(source: str, output_format: str) -> bytes:
    """Render DOT with the local Graphviz ``dot``; ``UsageError`` when it is missing or fails."""
    program = shutil.which("dot")
    if program is None:
        raise UsageError(
            f"drawing {output_format.upper()} needs Graphviz's 'dot' program, which is not on "
            "PATH: install Graphviz (Debian/Ubuntu: apt-get install graphviz; macOS: brew "
            "install graphviz), or use draw_mermaid() / draw_ascii(), which need nothing"
        )
    try:
        done = subprocess.run(  # a fixed program and arguments, no shell
            [program, f"-T{output_format}"],
            input=source.encode("utf-8"),
            capture_output=True,
            timeout=DOT_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise UsageError(f"Graphviz dot took more than {DOT_TIMEOUT:g} s; nothing drawn") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()
        raise UsageError(f"Graphviz dot failed (status {done.returncode}): {message}")
    return done.stdout
