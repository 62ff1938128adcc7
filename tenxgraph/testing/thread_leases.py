"""The thread-lease conformance suite: a pytest base class for ``ThreadLeases`` backends.

``ThreadLeases`` (``tenxgraph.storage``) is the optional contract of a
backend that also holds leases on its threads, which a graph needs of its
checkpointer. The fence a lease puts on saves and rewinds is part of the
contract, so the suite runs against a checkpointer that is also a
``ThreadLeases``. Subclass ``ThreadLeasesContract`` as ``CheckpointerContract``
is subclassed (see ``tenxgraph.testing.checkpointers``), with the same
``make_checkpointer`` fixture::

    class TestMyBackendLeases(ThreadLeasesContract):
        @pytest.fixture
        def make_checkpointer(self, tmp_path):
            return lambda **options: MyCheckpointer(tmp_path / "db", **options)

Some tests sleep through short leases (about half a second each).
"""

from __future__ import annotations

from tenxgraph.testing._checkpointer_base import MakeCheckpointer
from tenxgraph.testing._thread_leases import ThreadLeasesContract

__all__ = ["MakeCheckpointer", "ThreadLeasesContract"]
