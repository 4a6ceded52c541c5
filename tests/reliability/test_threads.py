"""Launches from several threads: each gets its own error report.

Before, the CPU launcher kept one list of reports per kernel, emptied by each launch: one
thread hitting a ``device_assert`` while three others launched the same kernel mostly said
"kernel chk failed without a report" (25,189 of 27,204 failing launches), or reported
another launch's failure.
"""

import threading

import numpy as np

import tilelab
import tilelab.language as tl


@tilelab.jit(debug=True)
def chk(x, out, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    v = tl.load(x + i)
    tl.device_assert(v >= 0, "x must be >= 0")
    tl.store(out + i, v * 2)


def test_each_failing_launch_reports_its_own_assert():
    good = np.arange(64, dtype=np.int32)
    bad = good.copy()
    bad[5] = -1
    chk[(2,)](good, np.zeros_like(good), BLOCK=64, target="cpu")  # warm
    messages, wrong = [], []

    def failing():
        for _ in range(300):
            try:
                chk[(2,)](bad, np.zeros_like(bad), BLOCK=64, target="cpu")
                wrong.append("no error")
            except Exception as e:  # noqa: BLE001 - the message is what is checked
                messages.append(str(e))

    def passing():
        for _ in range(300):
            out = np.zeros_like(good)
            try:
                chk[(2,)](good, out, BLOCK=64, target="cpu")
            except Exception as e:  # noqa: BLE001
                wrong.append(f"a good launch failed: {e}")
            if not (out == good * 2).all():
                wrong.append("a good launch computed wrong values")

    threads = [threading.Thread(target=failing)] + [threading.Thread(target=passing) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong, wrong[:3]
    assert len(messages) == 300
    assert all("device assertion failed in program (0, 0, 0) at element [5]: x must be >= 0" in m for m in messages)


def test_a_launch_while_another_thread_times_the_kernel_still_runs():
    """The launcher counts a launch before it keeps its time (launch 2 is timed): a launch on another
    thread in between found three launches and no time, and failed with a ``TypeError`` (one way the
    test above, four threads of 300 launches, could fail: it did once, on two busy cores). The state
    of that moment, then a launch."""
    ck = tilelab.compile(chk, {"x": "*i32", "out": "*i32"}, {"BLOCK": 64}, target="cpu")
    good = np.arange(64, dtype=np.int32)
    out = np.zeros_like(good)
    ck.launcher.launches, ck.launcher.program_seconds = 3, None
    ck[(2,)](good, out)
    np.testing.assert_array_equal(out, good * 2)
