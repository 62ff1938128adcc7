"""The run-stream routes' FastAPI route: the usual request read with less work per request.

Every streamed run is one ``POST .../runs/stream``, and FastAPI's generic
request handler was a large share of the server's overhead per run (W9 in
bench/README.md): it parses the body with ``json.loads``, validates it as a
Python dict, and solves the route's dependencies one by one. ``RunStreamRoute``
is still a FastAPI ``APIRoute``, so the path, the OpenAPI entry with its request
body schema, the middleware and the error handlers are FastAPI's own. Only its
request handler adds a shorter path for the plain request: a JSON body read
once and validated in one ``model_validate_json``, the context read from the
app, the caller from ``current_user`` (the same authenticate call and 401).

Anything else goes to FastAPI's own handler, which then answers exactly as
before: a body that is not ``application/json``, empty, or does not validate
(FastAPI's error, or the model's, with its order against the 401); dependency
overrides; FastAPI's telemetry or body size limit on the request. A route
whose endpoint, as included, takes anything the short path does not fill
(a query parameter, another dependency, one an including router adds) keeps
FastAPI's handler alone. So does every route on a FastAPI or Starlette too old
to have the telemetry and body limit the short path checks for (the server
extra allows releases without them), or without the private variable that says which
inclusion a handler is built for: there the short path cannot tell whether
FastAPI's handler would do more, so it stays off.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, get_args

from fastapi import routing as fastapi_routing
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.convertors import StringConvertor
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from tenxgraph.server._context import Context, User, current_user, get_context

# What the short path checks a request for; only recent FastAPI and Starlette have them.
# Without them (an older FastAPI the server extra allows) the short path is off.
try:
    from fastapi.telemetry import get_telemetry_data
    from starlette.middleware.body_limit import MAX_BODY_SIZE_SCOPE_KEY
except ImportError:  # pragma: no cover - FastAPI and Starlette releases before these
    _CHECKS = False
else:
    _CHECKS = True

__all__ = ["RunStreamRoute"]

Handler = Callable[[Request], Coroutine[Any, Any, Response]]

_DEPENDENCIES = [
    ("context", get_args(Context)[1].dependency),
    ("user", get_args(User)[1].dependency),
]
"""The dependencies the short path fills itself: ``Context`` and ``User``, in this order."""


class RunStreamRoute(APIRoute):
    """An ``APIRoute`` for ``endpoint(<str path params>, body: Model, request, context, user)``."""

    def get_route_handler(self) -> Handler:
        """FastAPI's handler, behind the short path for a plain JSON request."""
        full = super().get_route_handler()
        route = _as_included(self)
        if route is None or not _CHECKS:
            return full
        model = _body_model(route)
        names = _path_names(route)
        if model is None or names is None:
            return full
        endpoint = self.endpoint

        async def handler(request: Request) -> Response:
            if not _plain(request):
                return await full(request)
            try:
                raw = await request.body()
            except HTTPException:  # the body limit's 413: as FastAPI lets it through
                raise
            except Exception as exc:  # a client gone mid-body: FastAPI's answer
                raise HTTPException(400, "There was an error parsing the body") from exc
            try:
                body = model.model_validate_json(raw) if raw else None
            except Exception:  # FastAPI's handler gives the error, after the 401 as before
                body = None
            if body is None:
                return await full(request)
            user = await current_user(request)
            context = get_context(request)
            path = request.path_params  # with a prefix's own parameters, which are not passed
            response: Response = await endpoint(
                **{name: path[name] for name in names},
                body=body,
                request=request,
                context=context,
                user=user,
            )
            return response

        return handler


def _as_included(route: APIRoute) -> Any:
    """The route as the router including it sees it (its dependencies added), or None.

    FastAPI builds one handler per inclusion, with the including routers'
    dependencies in its ``dependant``; it says which inclusion it builds for in
    a context variable, read here. That variable is private: a FastAPI without
    it gives None, which turns the short path off (it cannot see an including
    router's dependencies there, an authorization check for one, so it must
    not skip them).
    """
    variable = getattr(fastapi_routing, "_effective_route_context_var", None)
    if variable is None:
        return None
    included = variable.get()
    if included is not None and getattr(included, "original_route", None) is route:
        return included
    return route


def _body_model(route: Any) -> type[BaseModel] | None:
    """The body's model when the endpoint takes just what the short path passes, else None."""
    dependant = route.dependant
    body_field = route.body_field
    model = body_field.field_info.annotation if body_field is not None else None
    if (
        [(d.name, d.call) for d in dependant.dependencies] != _DEPENDENCIES
        or [p.name for p in dependant.body_params] != ["body"]
        or dependant.request_param_name != "request"
        or dependant.response_param_name is not None
        or dependant.background_tasks_param_name is not None
        or dependant.security_scopes_param_name is not None
        or dependant.http_connection_param_name is not None
        or dependant.query_params
        or dependant.header_params
        or dependant.cookie_params
        or _path_names(route) is None
        or not (isinstance(model, type) and issubclass(model, BaseModel))
    ):
        return None
    return model


def _path_names(route: Any) -> list[str] | None:
    """The endpoint's path parameters if each is a plain ``str`` (nothing to validate), else None.

    The short path passes these as the path gives them, which is what FastAPI's
    validation makes of them only for a ``str`` with no constraint, validator or
    alias, from a ``{name}`` segment (text, not ``{name:int}``). A parameter the
    path has and the endpoint does not take (an including router's
    ``prefix="/tenants/{tenant}"``) is not passed, as FastAPI does not pass it.
    """
    names = []
    for field in route.dependant.path_params:
        info = field.field_info
        if (
            info.annotation is not str
            or info.metadata
            or field.alias != field.name
            or info.validation_alias is not None
            or type(route.param_convertors.get(field.name)) is not StringConvertor
        ):
            return None
        names.append(field.name)
    return names


def _plain(request: Request) -> bool:
    """Whether FastAPI's handler would only parse, validate and call (nothing else to honour)."""
    content_type = request.headers.get("content-type")
    if content_type is None:
        return False
    if content_type.partition(";")[0].strip().lower() != "application/json":
        return False
    return (
        MAX_BODY_SIZE_SCOPE_KEY not in request.scope
        and not request.app.dependency_overrides
        and get_telemetry_data() is None
    )
