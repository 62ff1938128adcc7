"""The checkpointer conformance suite: a pytest base class every backend's tests subclass.

Subclass ``CheckpointerContract`` in a test module (the class name must
start with ``Test`` for pytest to collect it) and give it a
``make_checkpointer`` fixture that returns a factory ``(**options) ->
Checkpointer`` for your backend::

    class TestMyCheckpointer(CheckpointerContract):
        @pytest_asyncio.fixture
        async def make_checkpointer(self, tmp_path):
            made = []

            def make(**options):
                made.append(MyCheckpointer(tmp_path / "db", **options))
                return made[-1]

            yield make
            for checkpointer in made:
                await checkpointer.aclose()

Every checkpointer one test makes must share that test's storage, and the
storage must start empty. The one option the suite passes is
``keep_checkpoints`` (retention; ``0`` must raise ``ValueError``).

Leases are a contract of their own (``ThreadLeases``), with their own suite
(``tenxgraph.testing.thread_leases.ThreadLeasesContract``) for backends that
offer them: this suite needs only the ``Checkpointer`` methods.
"""

from __future__ import annotations

from tenxgraph.testing._checkpointer_base import MakeCheckpointer
from tenxgraph.testing._checkpointer_branches import BranchContract
from tenxgraph.testing._checkpointer_rewind import RewindContract
from tenxgraph.testing._checkpointer_threads import ThreadContract

__all__ = ["CheckpointerContract", "MakeCheckpointer"]


class CheckpointerContract(ThreadContract, RewindContract, BranchContract):
    """What every checkpointer does: threads, rewind and branches, as pytest test methods.

    The subclass provides the ``make_checkpointer`` fixture; the suite's
    ``checkpointer`` fixture is ``make_checkpointer()``.
    """
