"""CPU launches stop on Ctrl-C (and a raising ``signal.alarm`` handler) within a second; grids are bounded.

Before, a ``while tl.load(flag) == 0`` kernel kept running 20 s after SIGINT, and only SIGKILL
ended it (Jupyter's interrupt button sends SIGINT); grids of ``(2**64,)`` were accepted.
Each case runs in a fresh process, which must end by itself.
"""

import pytest

from .helpers import run_script

SPIN = """
import os, signal, threading, time

@tilelab.jit
def spin(flag, out):
    i = 0
    while tl.load(flag) == 0:
        i += 1
    tl.store(out, i)

flag, out = np.ones(1, np.int32), np.zeros(1, np.int32)
spin[(1,)](flag, out, target="cpu")  # compiled before the signal is armed
flag[0] = 0
{arm}
start = time.time()
try:
    {launch}
    print("finished")
except BaseException as e:
    print("raised", type(e).__name__, str(e), "after", round(time.time() - start, 1))
flag[0] = 1
spin[(1,)](flag, out, target="cpu")  # the kernel still works, and from 0 again
print("then", out[0])
"""

SIGINT = "threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()"
ALARM = """
def on_alarm(signum, frame):
    raise TimeoutError("too slow")
signal.signal(signal.SIGALRM, on_alarm)
signal.setitimer(signal.ITIMER_REAL, 0.5)
"""


@pytest.mark.parametrize(
    "arm, expected",
    [(SIGINT, "raised KeyboardInterrupt"), (ALARM, "raised TimeoutError too slow")],
    ids=["sigint", "alarm"],
)
def test_endless_while_loop_stops_on_a_signal(tmp_path, arm, expected):
    body = SPIN.format(arm=arm, launch='spin[(1,)](flag, out, target="cpu")')
    result = run_script(body, tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert expected in result.stdout and "then 0" in result.stdout, result.stdout
    seconds = float(result.stdout.split("after ")[1].split()[0])
    assert seconds < 2.5, result.stdout  # 0.5 s to the signal, then about a second (on a loaded machine)


def test_huge_grid_of_short_programs_stops_between_programs(tmp_path):
    body = SPIN.format(arm=SIGINT, launch='flag[0] = 1; spin[(2**31 - 1, 65535)](flag, out, target="cpu")')
    result = run_script(body, tmp_path, timeout=60)
    assert "raised KeyboardInterrupt" in result.stdout, result.stdout + result.stderr[-2000:]


@pytest.mark.parametrize(
    "grid, message",
    [
        ("(2**64,)", "grid[0] = 18446744073709551616 is over the limit of 2147483647"),
        ("(2**32, 2**32)", "grid[0] = 4294967296 is over the limit of 2147483647"),
        ("(1, 65536)", "grid[1] = 65536 is over the limit of 65535"),
        ("lambda meta: (1, 1, 2**20)", "grid[2] = 1048576 is over the limit of 65535"),
    ],
)
def test_grid_beyond_cuda_limits_is_refused(grid, message):
    import numpy as np

    from tilelab.runtime.errors import LaunchError

    from .test_target_agreement import scale_f16

    x = np.zeros(32, np.float16)
    for target in ("cpu", "interpret"):
        with pytest.raises(LaunchError, match=message.replace("[", r"\[").replace("]", r"\]")):
            scale_f16[eval(grid)](x, np.zeros_like(x), BLOCK=32, target=target)
