"""Child processes of a benchmark run: started, measured (CPU seconds from /proc) and always
cleaned up - on normal exit, on an exception and on SIGINT/SIGTERM of the runner."""
import atexit
import os
import signal
import subprocess
import time

_CLK_TCK = os.sysconf("SC_CLK_TCK")
_live = []


def cpu_seconds(pid):
    """utime + stime of a process and of its waited-for children, in seconds (None once gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except FileNotFoundError:
        return None
    # The command name may contain spaces: fields after the closing parenthesis are fixed.
    fields = stat[stat.rindex(")") + 2:].split()
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return (utime + stime + cutime + cstime) / _CLK_TCK


def _pin_to(cpus):
    """A preexec function setting the child's CPU affinity (inherited by its threads), or None."""
    if not cpus:
        return None
    cpus = set(cpus)
    return lambda: os.sched_setaffinity(0, cpus)


class Process:
    """A started child with its log file; stop() terminates it, kill() sends SIGKILL."""

    def __init__(self, name, argv, log_path, env=None, cwd=None, cpus=None):
        """cpus: CPU numbers the process (and every thread and child it starts) may run on, or
        None for all of them."""
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                     cwd=cwd, start_new_session=True,
                                     preexec_fn=_pin_to(cpus))
        self.pid = self.proc.pid
        self.started = time.monotonic()
        self.last_cpu = 0.0
        _live.append(self)

    def cpu(self):
        """CPU seconds so far (the last reading once the process is gone)."""
        c = cpu_seconds(self.pid)
        if c is not None:
            self.last_cpu = c
        return self.last_cpu

    def running(self):
        return self.proc.poll() is None

    def wait(self, timeout=None):
        """Waits for exit; returns the exit status. Reads CPU just before the process is reaped."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.proc.poll() is None:
            self.cpu()
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"{self.name} still running after {timeout} s; see {self.log_path}")
            time.sleep(0.05)
        return self.proc.returncode

    def output(self):
        if not self._log.closed:
            self._log.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self, grace=10):
        if self.running():
            self.cpu()
            try:
                os.killpg(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.kill()
        self._close()

    def kill(self):
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self._close()

    def _close(self):
        if self in _live:
            _live.remove(self)
        if not self._log.closed:
            self._log.close()


def stop_all():
    for p in list(reversed(_live)):
        p.stop(grace=5)


def _on_signal(signum, _frame):
    stop_all()
    raise SystemExit(128 + signum)


atexit.register(stop_all)
signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGINT, _on_signal)
