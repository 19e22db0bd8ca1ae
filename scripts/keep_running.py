"""Run one process of the Procfile and start it again whenever it exits on its own.

    python scripts/keep_running.py NAME -- COMMAND [ARG ...]

honcho stops the whole stack when any one process exits, without saying much. Under this
wrapper an exit of the process says so, with its exit status and the last lines it
printed, and the process is started again after a pause that doubles from 1 s up to 30 s
(back to 1 s once a run lasted a minute). SIGTERM or SIGINT to the process group (honcho's
stop, Ctrl-C) stops the process and ends the wrapper with it. Production runs each
process under systemd or another supervisor that restarts (docs/faults.md, "Running in production").
"""

from __future__ import annotations

import collections
import signal
import subprocess
import sys
import threading
import time

FIRST_PAUSE_S = 1.0
LONGEST_PAUSE_S = 30.0
# A run at least this long resets the pause: the process had been healthy.
HEALTHY_RUN_S = 60.0
TAIL_LINES = 5


class Supervisor:
    def __init__(self, name: str, command: list[str]) -> None:
        self.name = name
        self.command = command
        self.stopping = threading.Event()

    def stop(self, signum: int, _frame: object) -> None:
        # The process shares this wrapper's process group, and stop signals go to the whole
        # group (honcho's killpg, a terminal's Ctrl-C, systemd's control-group kill): it has
        # the signal already. Passing it on would deliver it twice, and a second SIGINT
        # turns Celery's warm shutdown into a cold one. The wrapper only stops restarting.
        self.stopping.set()

    def run_once(self) -> tuple[int, list[str]]:
        """Run the command to its end, passing its output through; its status and last lines."""
        tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        process = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert process.stdout is not None
        for raw in process.stdout:
            sys.stdout.buffer.write(raw)
            sys.stdout.flush()
            tail.append(raw.decode(errors="replace").rstrip())
        return process.wait(), list(tail)

    def run(self) -> int:
        pause = FIRST_PAUSE_S
        while True:
            started = time.monotonic()
            status, tail = self.run_once()
            if self.stopping.is_set():
                return status
            if time.monotonic() - started >= HEALTHY_RUN_S:
                pause = FIRST_PAUSE_S
            how = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
            print(f"keep_running: {self.name} {how}; its last lines:", *(f"  | {line}" for line in tail),
                  f"keep_running: starting {self.name} again in {pause:g} s", sep="\n", flush=True)
            if self.stopping.wait(pause):
                return status
            pause = min(pause * 2, LONGEST_PAUSE_S)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    supervisor = Supervisor(argv[0], argv[2:])
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, supervisor.stop)
    status = supervisor.run()
    return 128 - status if status < 0 else status  # a shell's status for "killed by a signal"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
