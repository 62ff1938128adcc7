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

A public name that moved to another package stays readable from its old one
for a while (``moved``): the first read warns with a ``DeprecationWarning``
naming the new path and returns the very same object; the name is no longer
in the old package's ``__all__`` or ``dir()``.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports", "moved_name"]


def lazy_exports(
    package: str,
    modules: Mapping[str, Sequence[str]],
    *,
    moved: Mapping[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, exporting ``modules``' names.

    ``modules`` maps a module path to the names it defines, as the
    ``__init__``'s ``TYPE_CHECKING`` imports list them. ``moved`` maps a name
    that used to be exported here to the package that exports it now (see
    ``moved_name``).
    """
    where = {name: module for module, names in modules.items() for name in names}
    namespace = sys.modules[package].__dict__
    moves = dict(moved or {})

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            if name in moves:
                namespace[name] = value = moved_name(package, name, moves[name])
                return value
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        __import__(module)  # not importlib.import_module: `python -X importtime` lists this one
        value = getattr(sys.modules[module], name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__


def moved_name(old_package: str, name: str, new_package: str) -> Any:
    """``new_package.name``, after a ``DeprecationWarning`` that it moved from ``old_package``.

    The caller stores the value on the old package, so the warning comes once per
    process and the old name keeps returning the same object as the new one.
    """
    warnings.warn(  # at the reading line: warnings skips the import system's frames itself
        f"{old_package}.{name} moved to {new_package}.{name}; import it from {new_package}",
        DeprecationWarning,
        stacklevel=3,
    )
    __import__(new_package)
    return getattr(sys.modules[new_package], name)
