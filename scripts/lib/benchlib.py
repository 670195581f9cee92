"""Helpers of the benchmark scripts (scripts/bench.py, scripts/bench_scale.py): medians,
testpmd's periodic statistics, and a child process whose output is collected."""
import os
import re
import shutil
import signal
import statistics
import subprocess
import time

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def remove_runtime_dirs(pid):
    """Remove the EAL runtime directories (/var/run/dpdk/<prefix>, ~10 MB of fbarray files
    each) whose prefix names `pid`: testpmd, OVS and a killed switch leave theirs behind,
    and every prefix of a bench run carries the run's pid."""
    base = "/var/run/dpdk"
    if not os.path.isdir(base):
        return
    for name in os.listdir(base):
        if str(pid) in name.split("-"):
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)


def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def testpmd_blocks(text):
    """testpmd --stats-period output -> list of {port: (rx_pps, tx_pps)} per period."""
    blocks, cur, port = [], {}, None
    for raw in text.splitlines():
        line = ANSI.sub("", raw)
        m = re.search(r"NIC statistics for port (\d+)", line)
        if m:
            port = int(m.group(1))
            if port in cur:
                blocks.append(cur)
                cur = {}
            continue
        m = re.search(r"Rx-pps:\s+(\d+)", line)
        if m and port is not None:
            cur.setdefault(port, [0, 0])[0] = int(m.group(1))
        m = re.search(r"Tx-pps:\s+(\d+)", line)
        if m and port is not None:
            cur.setdefault(port, [0, 0])[1] = int(m.group(1))
    if cur:
        blocks.append(cur)
    return blocks


def steady(values):
    """Drop the first nonzero sample (start-up) and the last one (stop); median of the rest."""
    nz = [v for v in values if v > 0]
    if len(nz) >= 3:
        nz = nz[1:-1]
    elif len(nz) == 2:
        nz = nz[1:]
    return med(nz)


class Proc:
    """A child process whose output (stdout+stderr) a thread collects line by line."""
    def __init__(self, cmd, stdin=False):
        import threading
        if cmd[0] == "dpdk-testpmd" and shutil.which("stdbuf"):
            cmd = ["stdbuf", "-oL"] + cmd          # testpmd's stdio is block-buffered on a pipe
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.lines = []
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()
    def _read(self):
        for line in self.p.stdout:
            self.lines.append(line)
    def text(self):
        return "".join(self.lines)
    def wait_for(self, pattern, timeout, count=1):
        rx = re.compile(pattern)
        t = time.time() + timeout
        while time.time() < t:
            if sum(1 for l in list(self.lines) if rx.search(ANSI.sub("", l))) >= count:
                return True
            if self.p.poll() is not None:
                return False
            time.sleep(0.1)
        return False
    def stop(self, how="enter", timeout=25):
        # testpmd with --stats-period only leaves its stats loop on SIGINT, then waits for
        # Enter; pfcswitch stops cleanly on SIGINT.
        try:
            self.p.send_signal(signal.SIGINT)
            if self.p.stdin:
                time.sleep(0.3)
                self.p.stdin.write("\n"); self.p.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        try:
            self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.t.join(timeout=5)
        return self.text()
