"""The model-driven tester: a peer that plays one side of a protocol from its
TLA+ model, against an implementation playing the other side, through the
channel emulator (``dtnconform run SCENARIO --sut NAME --tester ROLE``).

* :mod:`conformance.tester.core`: protocol-free (socket, timers, action log,
  the run loop, the result line);
* one module per protocol (``ProtocolSpec.tester``, e.g.
  :mod:`conformance.tester.ltp`) with ``ROLES`` (role name -> Role class) and
  ``check(scenario, role)``, which refuses what it cannot play;
* ``python -m conformance.tester``: one role as a process, started in its
  network namespace by the runner like any implementation's harness.

The tester gives no verdict of its own: its run is judged as any other, by
the expectation and by trace validation of both captures, where its own
segments are checked too. A trace rejected for what the tester's side did is
the harness's failure (verdict ``error``), never the implementation's.
"""
