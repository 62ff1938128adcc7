"""The storage conformance fixtures (``make_checkpointer``, every backend) for runtime tests."""

from tests.storage.conftest import (  # noqa: F401 - fixtures, found by pytest by name
    backend,
    checkpointer,
    make_checkpointer,
    pg_schema,
    redis_prefix,
)
