"""tenxgraph errors as HTTP answers: ``{"detail": "..."}`` with a 4xx status for bad input.

Every route may let library errors propagate: the handlers installed by
``install_error_handlers`` map them through ``tenxgraph.errors.http_status``
(a bad id 400, a thread that is not there 404, a busy thread 409, state the
graph cannot take 422...). Pydantic's ``ValidationError`` raised inside a
route (a message or value that does not fit) is 422 with pydantic's message,
which names the field. Only the library's or the graph's own failures are
500, and their detail never carries a traceback.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, NoReturn

from fastapi import HTTPException
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from tenxgraph.errors import TenxGraphError, http_status

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.requests import Request

__all__ = ["bad_request", "error_detail", "install_error_handlers", "not_found"]

log = logging.getLogger("tenxgraph.server")


def not_found(what: str) -> NoReturn:
    """Raise the 404 of a thread, run, item... that does not exist (or is another user's)."""
    raise HTTPException(404, f"{what} not found")


def bad_request(detail: str, status: int = 422) -> NoReturn:
    """Raise a 4xx saying what was wrong with the request."""
    raise HTTPException(status, detail)


def error_detail(error: BaseException) -> tuple[int, str]:
    """The HTTP status and the ``detail`` text for an error raised while serving a request."""
    if isinstance(error, ValidationError):
        return 422, _validation_text(error)
    status = http_status(error)
    if status >= 500 and not isinstance(error, TenxGraphError):
        return status, f"internal error ({type(error).__name__}); see the server log"
    return status, str(error) or type(error).__name__


def _validation_text(error: ValidationError) -> str:
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(part) for part in item["loc"]) or error.title
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


async def _library_error(request: Request, exc: Exception) -> JSONResponse:
    status, detail = error_detail(exc)
    if status >= 500:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return JSONResponse({"detail": detail}, status_code=status)


async def _request_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    parts = []
    for item in exc.errors()[:5]:
        where = ".".join(str(part) for part in item.get("loc", ())) or "request"
        message = str(item.get("msg", "invalid"))
        if item.get("type") == "json_invalid":
            message = f"malformed JSON ({item.get('ctx', {}).get('error', 'invalid')})"
        parts.append(f"{where}: {message}")
    return JSONResponse({"detail": "; ".join(parts) or "invalid request"}, status_code=422)


def install_error_handlers(app: FastAPI) -> None:
    """Answer library errors and bad requests as ``{"detail": "..."}`` (one readable line).

    FastAPI's own request validation answers with a list of error objects;
    here it is one line naming each place that was wrong (``body.limit:
    Input should be less than or equal to 1000``), like every other error.
    """
    app.add_exception_handler(TenxGraphError, _library_error)
    app.add_exception_handler(ValidationError, _library_error)
    app.add_exception_handler(RequestValidationError, _request_error)
