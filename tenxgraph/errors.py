"""Every exception tenxgraph raises, under one root.

    TenxGraphError
    ├── GraphBuildError            the graph definition is wrong (raised by build/compile)
    ├── ConfigError                an option or argument has a value the library cannot use
    │                              (also a ValueError)
    ├── UsageError                 something was called where it cannot work (also a RuntimeError)
    ├── MissingExtraError          an optional SDK is not installed (also an ImportError)
    ├── StateError                 bad input for, or a bad update to, the graph state
    │   │                          (also a ValueError)
    │   ├── InvalidIdError         a thread_id or user_id storage cannot key by
    │   │   └── InvalidMediaKeyError  a media key or graph://media URL that is malformed
    │   ├── MediaTypeError         a malformed MIME type, or one the media's bytes contradict
    │   ├── MediaTooLargeError     media over the media store's size limit
    │   ├── EventsLostError        a run's stream resumed after events the server no longer keeps
    │   ├── AlreadyExistsError     an id that is taken was created again (an assistant's)
    │   └── UnstorableStateError   a state field holds a value a save cannot store as JSON
    ├── GraphRunError              something failed while a graph was running
    │   ├── NodeError              a node raised or returned something it must not
    │   ├── RecursionLimitError    a run took more steps than its limit allows
    │   ├── WorkersExhaustedError  every worker thread is held by a call that timed out
    │   └── RunStoppedError        reserved: a run cancelled from outside (the server's cancel)
    ├── ToolError                  a tool could not be registered or called directly
    │   └── ToolArgumentsError     arguments do not fit the tool's parameters (also a ValueError)
    ├── ModelError                 a model provider failed, or a model broke its contract
    │   ├── RateLimitError
    │   ├── AuthenticationError
    │   ├── ContextWindowExceededError
    │   ├── BadRequestError
    │   ├── ServerError
    │   ├── ModelTimeoutError
    │   └── OutputValidationError  structured output did not match its schema
    ├── StorageError               a checkpointer failed
    │   ├── ConflictError          another writer changed the thread first (compare-and-swap lost)
    │   │   └── ThreadBusyError    reserved: another run holds the thread (the server's lease)
    │   ├── ThreadNotFoundError
    │   ├── MediaNotFoundError     no media with that key for this user_id
    │   ├── CorruptRecordError     a stored row failed validation
    │   └── StorageUnavailableError  the database could not be reached in time
    └── ClientError                ``tenxgraph.client``: a call to a tenxgraph server failed
        ├── APIStatusError         the server answered 4xx/5xx: ``status`` and its ``detail``
        │   ├── APIUnauthorizedError  401/403: a missing or refused API key
        │   ├── APINotFoundError   404: no such thread, run or assistant
        │   └── APIConflictError   409: the thread is busy (``multitask_strategy="reject"``)
        ├── APIConnectionError     the server could not be reached, or a stream not resumed
        └── RunFailedError         the run ended in an error; ``detail`` is the server's

Defined next to their users: ``tenxgraph.cli.errors.CliError`` (bad command-line
input) and ``tenxgraph.core.llm.testing.ScriptError`` (a test model used in a
way its test did not expect; also an AssertionError).

"Reserved" classes are part of the contract but nothing raises them yet:
callers may already catch them, and the server will raise them.

Setup errors come before anything runs: ``GraphBuildError``,
``MissingExtraError`` and ``ConfigError`` for a constructor's options
(``ConfigError`` also reports a bad argument to a call, such as a negative
``offset``). The others are raised while running.
Classes that also derive from a builtin (``ValueError``, ``RuntimeError``...)
keep ``except ValueError`` code written before they existed working.

Pydantic's ``ValidationError`` is raised unchanged for bad field values, so
the message names the field that was wrong: validators inside pydantic models
raise plain ``ValueError``, which pydantic turns into that error.
``GraphInterrupt`` (``tenxgraph.core.graph.GraphInterrupt``) is not an error but the
signal ``interrupt()`` uses to pause a run; the runtime always catches it.

``HTTP_STATUS`` and ``http_status`` give the HTTP status each error maps to.
"""

from __future__ import annotations

__all__ = [
    "HTTP_STATUS",
    "APIConflictError",
    "APIConnectionError",
    "APINotFoundError",
    "APIStatusError",
    "APIUnauthorizedError",
    "AlreadyExistsError",
    "AuthenticationError",
    "BadRequestError",
    "ClientError",
    "ConfigError",
    "ConflictError",
    "ContextWindowExceededError",
    "CorruptRecordError",
    "EventsLostError",
    "GraphBuildError",
    "GraphRunError",
    "InvalidIdError",
    "InvalidMediaKeyError",
    "MediaNotFoundError",
    "MediaTooLargeError",
    "MediaTypeError",
    "MissingExtraError",
    "ModelError",
    "ModelTimeoutError",
    "NodeError",
    "OutputValidationError",
    "RateLimitError",
    "RecursionLimitError",
    "RunFailedError",
    "RunStoppedError",
    "ServerError",
    "StateError",
    "StorageError",
    "StorageUnavailableError",
    "TenxGraphError",
    "ThreadBusyError",
    "ThreadNotFoundError",
    "ToolArgumentsError",
    "ToolError",
    "UnstorableStateError",
    "UsageError",
    "WorkersExhaustedError",
    "http_status",
]


class TenxGraphError(Exception):
    """Root of every error raised by tenxgraph."""


class GraphBuildError(TenxGraphError):
    """The graph definition is invalid; raised while building, never while running."""


class ConfigError(TenxGraphError, ValueError):
    """An option or argument has a value the library cannot use; the message names it."""


class UsageError(TenxGraphError, RuntimeError):
    """Something was called where it cannot work (``interrupt()`` outside a running node)."""


class MissingExtraError(TenxGraphError, ImportError):
    """An optional dependency is missing; the message names the extra and how to install it.

    tenxgraph is installed from a checkout (it is not on the package index),
    so the command given is ``pip install -e ".[extra]"`` run there. The
    ``local`` extra compiles llama-cpp-python; ``CMAKE_ARGS="-DGGML_NATIVE=OFF"``
    keeps that build free of instructions only the compiling CPU has, and
    ``--no-cache-dir`` keeps pip from reusing a wheel built without it.
    """

    def __init__(self, package: str, extra: str, *, command: str | None = None) -> None:
        """``command``: how to install ``package`` when the extra does not bring it."""
        build = 'CMAKE_ARGS="-DGGML_NATIVE=OFF" ' if extra == "local" else ""
        fresh = "--no-cache-dir " if extra == "local" else ""
        if command is None:
            how = f"it comes with the extra tenxgraph[{extra}]. In a tenxgraph checkout run: "
            command = f'{build}pip install {fresh}-e ".[{extra}]"'
        else:
            how = f"it goes with the extra tenxgraph[{extra}] but is installed apart: "
        super().__init__(f"{package!r} is not installed; {how}{command}")
        self.package = package
        self.extra = extra


class StateError(TenxGraphError, ValueError):
    """An input or an update does not fit the graph's state class."""


class UnstorableStateError(StateError):
    """A state field holds a value that is not JSON data, so the thread cannot be saved.

    ``fields`` names them. Before this is raised the fields are put back to
    the values last saved (their defaults on a new thread), so the run can
    still record that it failed and nothing stored is lost.
    """

    def __init__(self, message: str, fields: list[str]) -> None:
        super().__init__(message)
        self.fields = fields


class InvalidIdError(StateError):
    """A ``thread_id`` or ``user_id`` is missing, empty, not a string, too long or unstorable.

    Raised before anything is read or written, with the same rules on every
    backend (see ``tenxgraph.core.state.check_id``).
    """


class InvalidMediaKeyError(InvalidIdError):
    """A media key, or a ``graph://media/{key}`` URL, is malformed (raised before any I/O).

    A key is 64 lowercase hex digits (the SHA-256 of the bytes), so no key
    can name a path or another tenant's media.
    """


class MediaTypeError(StateError):
    """A MIME type is malformed, or the media's first bytes show another type than declared.

    The message names the declared type and the detected one.
    """


class MediaTooLargeError(StateError):
    """Media is larger than the media store's ``max_bytes``; nothing was stored."""


class EventsLostError(StateError):
    """A stream was resumed (``Last-Event-ID``) from before the oldest event its run keeps.

    The server keeps a bounded log of each run's events; a reader that fell
    further behind gets this (HTTP 410) rather than a stream with a gap.
    ``after`` is the event asked for, ``first_kept`` the oldest one kept.
    """

    def __init__(self, after: int, first_kept: int) -> None:
        self.after, self.first_kept = after, first_kept
        super().__init__(
            f"cannot resume after event {after}: this run's stream keeps events from "
            f"{first_kept} on (older ones were dropped past the per-run bound); read the "
            "thread's state instead"
        )


class AlreadyExistsError(StateError):
    """Something was created with an id that is already taken (an assistant's, for example).

    Nothing was written. Update the one there, or create it with
    ``if_exists="do_nothing"`` to get it back instead. A server answers 409.
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
    """Reserved for the server's cancel path: a run cancelled from outside before it finished.

    Nothing raises it yet. ``CompiledGraph.stop`` does not: a stopped run
    ends normally, saved with status ``stopped``, and returns its
    ``RunResult``. A server that cancels a run on a client's behalf will raise
    this to the code that waits for that run's result.
    """


class ToolError(TenxGraphError):
    """A tool could not be registered, found or called directly."""


class ToolArgumentsError(ToolError, ValueError):
    """Arguments do not fit a tool's parameters; the message lists each problem.

    ``ToolNode`` turns it into an error result the model reads; it reaches
    callers only from direct calls such as ``Tool.validate``.
    """


class ModelError(TenxGraphError):
    """A model provider failed, or a model broke its contract (a stream with no final message).

    ``status`` is the provider's HTTP status when there was one.
    """

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
    """Structured output still failed its schema after the Agent's ``output_retries``."""


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
        self.expected: int | None = expected
        self.actual = actual
        self.recreated = recreated
        """True when the thread was deleted and created anew (a new incarnation)."""


class ThreadBusyError(ConflictError):
    """Another run holds the thread (its lease has not expired), or took it from this run.

    One run holds a thread at a time. A second run with the default
    ``multitask_strategy`` (``"reject"``) gets this before it writes
    anything; a run that lost its lease (it stalled past the expiry and
    another run took the thread) gets it at its next save, which writes
    nothing. Unlike a lost compare-and-swap there are no versions:
    ``expected`` and ``actual`` are None.
    """

    def __init__(self, thread_id: str, detail: str = "") -> None:
        StorageError.__init__(
            self, f"thread {thread_id!r} is busy: another run holds it{detail and ': '}{detail}"
        )
        self.thread_id = thread_id
        self.expected = None
        self.actual = None
        self.recreated = False


class ThreadNotFoundError(StorageError):
    """The thread does not exist for this user."""


class MediaNotFoundError(StorageError):
    """No media with that key is stored for this ``user_id`` (another tenant's reads as missing)."""


class CorruptRecordError(StorageError):
    """A stored row failed validation; the message names the thread and the field."""


class StorageUnavailableError(StorageError):
    """The database did not answer within its timeout (down, hung, unreachable or misnamed).

    Transient when the server is merely down: the next call after it is back succeeds.
    """


class ClientError(TenxGraphError):
    """A call from ``tenxgraph.client`` to a tenxgraph server failed."""


class APIStatusError(ClientError):
    """The server answered with an HTTP error status.

    ``status`` is the HTTP status, ``detail`` the server's own explanation (the
    ``detail`` field of its JSON body, else the body's text), and ``method`` and
    ``path`` name the request, so the message alone says what failed and why.
    """

    def __init__(self, status: int, detail: str, *, method: str = "", path: str = "") -> None:
        where = f"{method} {path} " if method or path else ""
        super().__init__(f"{where}answered {status}: {detail}")
        self.status = status
        self.detail = detail
        self.method = method
        self.path = path


class APIUnauthorizedError(APIStatusError):
    """401 or 403: the API key is missing, wrong, or not allowed this call."""


class APINotFoundError(APIStatusError):
    """404: the thread, run or assistant does not exist (for this API key)."""


class APIConflictError(APIStatusError):
    """409: the thread is busy with another run (``multitask_strategy="reject"``) or changed."""


class APIConnectionError(ClientError):
    """The server could not be reached, or a dropped stream could not be resumed in time."""


class RunFailedError(ClientError):
    """The run ended with an error; ``detail`` is what the server reported."""

    def __init__(self, detail: str, *, run_id: str | None = None) -> None:
        super().__init__(f"run {run_id} failed: {detail}" if run_id else f"run failed: {detail}")
        self.detail = detail
        self.run_id = run_id


HTTP_STATUS: dict[type[TenxGraphError], int] = {
    ConfigError: 400,
    StateError: 422,
    InvalidIdError: 400,
    MediaTooLargeError: 413,
    EventsLostError: 410,
    AlreadyExistsError: 409,
    ToolArgumentsError: 422,
    ThreadNotFoundError: 404,
    MediaNotFoundError: 404,
    ConflictError: 409,
    ThreadBusyError: 409,
    RateLimitError: 429,
    ModelTimeoutError: 504,
    ModelError: 502,
    StorageUnavailableError: 503,
}
"""The HTTP status a server answers with for each error; ``http_status`` applies it.

Bad requests are 4xx: an unusable option or id is 400, a well-formed body the
graph's state cannot take is 422, media over the store's size limit 413. A
provider failure is 502 (504 when it timed out); a database out of reach is
503. Anything else is 500, the library's or the graph's own failure.
"""


def http_status(error: BaseException) -> int:
    """The HTTP status for ``error``: its closest class in ``HTTP_STATUS``, else 500."""
    for cls in type(error).__mro__:
        status = HTTP_STATUS.get(cls)
        if status is not None:
            return status
    return 500
