"""Package exports imported on first use (PEP 562), so importing a package costs nothing.

A package ``__init__`` names each export and the private module that defines
it; the module is imported when one of its names is first read (``from
package import Name``, ``package.Name``), and the value is then stored on the
package, so later reads are plain attribute lookups. The ``__init__`` keeps
the same names under ``if TYPE_CHECKING:`` as ordinary imports, so type
checkers see real definitions (and no catch-all ``__getattr__``).

Why: the command line must answer ``--help`` without building a single
pydantic model, and a program that needs only ``Message`` should not pay
for the run loop, the checkpointers or ``asyncio``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, modules: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, exporting ``modules``' names.

    ``modules`` maps a module path to the names it defines, as the
    ``__init__``'s ``TYPE_CHECKING`` imports list them.
    """
    where = {name: module for module, names in modules.items() for name in names}
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        __import__(module)  # not importlib.import_module: `python -X importtime` lists this one
        value = getattr(sys.modules[module], name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
