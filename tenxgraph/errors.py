"""Every exception tenxgraph raises, under one root.

    TenxGraphError
    ├── GraphBuildError            the graph definition is wrong (raised by build/compile)
    ├── MissingExtraError          an optional SDK is not installed (also an ImportError)
    ├── StateError                 bad input for, or a bad update to, the graph state
    │   └── InvalidIdError         a thread_id or user_id storage cannot key by (also a ValueError)
    ├── GraphRunError              something failed while a graph was running
    │   ├── NodeError              a node raised or returned something it must not
    │   ├── RecursionLimitError    a run took more steps than its limit allows
    │   ├── WorkersExhaustedError  every worker thread is held by a call that timed out
    │   └── RunStoppedError        a run was stopped on request before it finished
    ├── ToolError                  a tool could not be registered or called directly
    ├── ModelError                 a model provider failed
    │   ├── RateLimitError
    │   ├── AuthenticationError
    │   ├── ContextWindowExceededError
    │   ├── BadRequestError
    │   ├── ServerError
    │   ├── ModelTimeoutError
    │   └── OutputValidationError  structured output did not match its schema
    └── StorageError               a checkpointer failed
        ├── ConflictError          another writer changed the thread first (compare-and-swap lost)
        ├── ThreadNotFoundError
        ├── CorruptRecordError     a stored row failed validation
        └── StorageUnavailableError  the database could not be reached in time

Pydantic's ``ValidationError`` is raised unchanged for bad field values, so
the message names the field that was wrong.
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "ContextWindowExceededError",
    "CorruptRecordError",
    "GraphBuildError",
    "GraphRunError",
    "InvalidIdError",
    "MissingExtraError",
    "ModelError",
    "ModelTimeoutError",
    "NodeError",
    "OutputValidationError",
    "RateLimitError",
    "RecursionLimitError",
    "RunStoppedError",
    "ServerError",
    "StateError",
    "StorageError",
    "StorageUnavailableError",
    "TenxGraphError",
    "ThreadNotFoundError",
    "ToolError",
    "WorkersExhaustedError",
]


class TenxGraphError(Exception):
    """Root of every error raised by tenxgraph."""


class GraphBuildError(TenxGraphError):
    """The graph definition is invalid; raised while building, never while running."""


class MissingExtraError(TenxGraphError, ImportError):
    """An optional dependency is missing; the message names the extra and how to install it.

    tenxgraph is installed from a checkout (it is not on the package index),
    so the command given is ``pip install -e ".[extra]"`` run there. The
    ``local`` extra compiles llama-cpp-python; ``CMAKE_ARGS="-DGGML_NATIVE=OFF"``
    keeps that build free of instructions only the compiling CPU has, and
    ``--no-cache-dir`` keeps pip from reusing a wheel built without it.
    """

    def __init__(self, package: str, extra: str) -> None:
        build = 'CMAKE_ARGS="-DGGML_NATIVE=OFF" ' if extra == "local" else ""
        fresh = "--no-cache-dir " if extra == "local" else ""
        super().__init__(
            f"{package!r} is not installed; it comes with the extra tenxgraph[{extra}]. "
            f'In a tenxgraph checkout run: {build}pip install {fresh}-e ".[{extra}]"'
        )
        self.package = package
        self.extra = extra


class StateError(TenxGraphError):
    """An input or an update does not fit the graph's state class."""


class InvalidIdError(StateError, ValueError):
    """A ``thread_id`` or ``user_id`` is missing, empty, not a string, too long or unstorable.

    Raised before anything is read or written, with the same rules on every
    backend (see ``tenxgraph.storage.checkpointer.base.check_id``).
    """


class GraphRunError(TenxGraphError):
    """Something failed while a graph was running."""


class NodeError(GraphRunError):
    """A node raised, or returned a value the runtime cannot merge."""

    def __init__(self, node: str, message: str) -> None:
        super().__init__(f"node {node!r}: {message}")
        self.node = node


class RecursionLimitError(GraphRunError):
    """A run took more steps than its recursion limit; the message shows the path."""

    def __init__(self, limit: int, path: list[str]) -> None:
        shown = " -> ".join(path[-20:])
        more = f"(last 20 of {len(path)}) " if len(path) > 20 else ""
        super().__init__(f"recursion limit of {limit} steps reached; path {more}{shown}")
        self.limit = limit
        self.path = path


class WorkersExhaustedError(GraphRunError):
    """No worker thread is free for sync user code: all are held by calls that timed out."""


class RunStoppedError(GraphRunError):
    """A run was stopped on request before it finished."""


class ToolError(TenxGraphError):
    """A tool could not be registered, found or called directly."""


class ModelError(TenxGraphError):
    """A model provider failed. ``status`` is the HTTP status when there was one."""

    def __init__(self, message: str, *, status: int | None = None, provider: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.provider = provider


class RateLimitError(ModelError):
    """The provider rate-limited the request (transient)."""


class AuthenticationError(ModelError):
    """The provider refused the credentials."""


class ContextWindowExceededError(ModelError):
    """The request does not fit the model's context window."""


class BadRequestError(ModelError):
    """The provider rejected the request as malformed."""


class ServerError(ModelError):
    """The provider failed on its side (transient)."""


class ModelTimeoutError(ModelError):
    """The provider did not answer in time (transient)."""


class OutputValidationError(ModelError):
    """Structured output still failed its schema after the retry."""


class StorageError(TenxGraphError):
    """A checkpointer failed."""


class ConflictError(StorageError):
    """Another writer saved the thread first; nothing was written by this call."""

    def __init__(
        self, thread_id: str, expected: int, actual: int | None, *, recreated: bool = False
    ) -> None:
        if recreated:
            message = (
                f"thread {thread_id!r} was deleted and re-created by another run since this "
                f"run read it (expected version {expected} of the deleted thread, found "
                f"version {actual} of the new one)"
            )
        else:
            message = (
                f"thread {thread_id!r} was changed by another run "
                f"(expected version {expected}, found {actual})"
            )
        super().__init__(message)
        self.thread_id = thread_id
        self.expected = expected
        self.actual = actual
        self.recreated = recreated
        """True when the thread was deleted and created anew (a new incarnation)."""


class ThreadNotFoundError(StorageError):
    """The thread does not exist for this user."""


class CorruptRecordError(StorageError):
    """A stored row failed validation; the message names the thread and the field."""


class StorageUnavailableError(StorageError):
    """The database did not answer within its timeout (down, hung, unreachable or misnamed).

    Transient when the server is merely down: the next call after it is back succeeds.
    """
