"""Who is calling: an ``authenticate(request) -> user id`` function, and the built-in ones.

The user id an authenticate function returns is the caller's tenant: every
thread, run and store item is scoped to it (tenxgraph's ``user_id``), and
another user's thread is a 404. Returning None refuses the request with
401. Any function works, sync or async; two are built in:

- ``no_auth``: everyone is the single user ``"default"``. ``tenxgraph
  serve`` allows it only on a loopback address unless told otherwise
  (``--allow-no-auth``), so a server reachable from the network never
  runs open by accident.
- ``api_keys({"key": "user"})``: an API key per user, sent as
  ``Authorization: Bearer KEY`` or ``x-api-key: KEY``. Keys are compared
  in constant time.
"""

from __future__ import annotations

import hmac
import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING

from tenxgraph.core.state.ids import DEFAULT_USER, check_id
from tenxgraph.errors import ConfigError

if TYPE_CHECKING:
    from starlette.requests import Request

    from tenxgraph.server._context import Authenticate

__all__ = ["api_keys", "authenticated_user", "no_auth", "parse_api_keys", "request_key"]


def no_auth(request: Request) -> str:
    """Every caller is the ``"default"`` user (a single-user server)."""
    return DEFAULT_USER


def request_key(request: Request) -> str | None:
    """The API key a request carries: ``Authorization: Bearer KEY`` or ``x-api-key: KEY``."""
    header = request.headers.get("authorization")
    if header:
        scheme, _, token = header.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    key = request.headers.get("x-api-key")
    return key.strip() if key and key.strip() else None


def api_keys(keys: Mapping[str, str]) -> Authenticate:
    """An authenticate function accepting the given ``{api_key: user_id}`` keys."""
    if not keys:
        raise ConfigError("api_keys needs at least one key")
    table = [(key.encode(), check_id("user_id", user)) for key, user in keys.items()]
    for key, _ in table:
        if not key:
            raise ConfigError("an API key must not be empty")

    def authenticate(request: Request) -> str | None:
        given = request_key(request)
        if given is None:
            return None
        encoded = given.encode()
        found = None
        for key, user in table:  # compare with every key, so timing tells nothing
            if hmac.compare_digest(key, encoded):
                found = user
        return found

    return authenticate


def parse_api_keys(text: str) -> dict[str, str]:
    """``{key: user}`` from lines or commas of ``KEY=USER`` (a keys file, an env var).

    Blank lines and lines starting with ``#`` are skipped; anything else
    without ``=`` is refused with its line number.
    """
    keys: dict[str, str] = {}
    entries = [part for line in text.splitlines() for part in line.split(",")]
    for number, raw in enumerate(entries, 1):
        entry = raw.strip()
        if not entry or entry.startswith("#"):
            continue
        key, sep, user = entry.partition("=")
        if not sep or not key.strip() or not user.strip():
            raise ConfigError(f"API key entry {number} is not KEY=USER: {entry[:40]!r}")
        keys[key.strip()] = check_id("user_id", user.strip())
    return keys


async def authenticated_user(authenticate: Authenticate, request: Request) -> str | None:
    """Run ``authenticate`` (sync or async) and check the user id it returned."""
    user = authenticate(request)
    if inspect.isawaitable(user):
        user = await user
    if user is None:
        return None
    return check_id("user_id", user)
