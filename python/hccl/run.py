# SPDX-License-Identifier: Apache-2.0
"""python3 -m hccl.run: start N local ranks of an HCCL program.

    python3 -m hccl.run -n 4 train.py --epochs 3
    python3 -m hccl.run -n 4 -m mypkg.train
    python3 -m hccl.run -n 4 --no-python ./all_reduce_prog

Each rank gets a rank table and its place in it (RANK_TABLE_FILE, RANK_ID,
RANK_SIZE, DEVICE_ID: what HCCL's frameworks read, and what ``hccl``'s
world group is built from) and torchrun's variables (RANK, WORLD_SIZE,
LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), so
``dist.init_process_group("hccl")`` works unchanged.

The launcher forwards SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and
SIGUSR2 to the ranks. When a rank fails (non-zero exit, or killed by a
signal) it names it on stderr, stops the others (SIGTERM, then SIGKILL
after --grace seconds, 0.5 by default) and exits with that rank's code
(128 + N for signal N). Which rank failed first: one killed by a signal,
else the one whose exit began first (hccl marks it, hccl/_exitmark.py);
such a rank, still tearing down while its peers already failed, gets up
to 2 s to end with its own code while the others are stopped. Ranks run
in their own process groups, die with the launcher (PR_SET_PDEATHSIG)
and read no stdin.

Several nodes: one launcher per node, e.g. ``mpirun -np 2 --map-by node
python3 -m hccl.run -n 8 train.py`` or ``srun -N 2 --ntasks-per-node=1
python3 -m hccl.run -n 8 train.py``. The node count and this node's index
come from --nnodes / --node-rank, else from Open MPI (OMPI_COMM_WORLD_*),
Slurm (SLURM_NTASKS, SLURM_PROCID) or PMI (PMI_SIZE, PMI_RANK). Node 0's
launcher listens on --master-addr:--master-port (MASTER_ADDR, MASTER_PORT;
Slurm: the first node of the job; default port 29400), collects every
node's address and builds the rank table (host_ip = device_ip = the
address a node reaches node 0 from); a failure anywhere stops every node.
``--rank-table FILE`` uses a given table instead (node k runs the ranks of
its server_list[k]).
"""
import argparse
import ctypes
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT,
             signal.SIGUSR1, signal.SIGUSR2)
TERMINATING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
DEFAULT_MASTER_PORT = 29400
PR_SET_PDEATHSIG = 1
# Several nodes: how long node 0 waits for the other nodes' reports of
# their first failure (a node may spare an exiting rank for up to 2 s).
VERDICT_WAIT = 3.0


def _say(msg):
    sys.stderr.write("hccl.run: %s\n" % msg)
    sys.stderr.flush()


def _signame(n):
    try:
        return signal.Signals(n).name
    except ValueError:
        return "signal %d" % n


def _parse(argv):
    p = argparse.ArgumentParser(
        prog="python3 -m hccl.run",
        description="Start N local ranks of an HCCL program (a Python "
        "script, a module, or any program with --no-python).")
    p.add_argument("-n", "--nproc", "--nproc-per-node", type=int,
                   required=True, help="ranks on this node")
    p.add_argument("-m", "--module", action="store_true",
                   help="run the program as a module (python3 -m)")
    p.add_argument("--no-python", action="store_true",
                   help="run the program itself, not through python3")
    p.add_argument("--grace", type=float, default=0.5,
                   help="seconds between SIGTERM and SIGKILL when stopping "
                   "ranks (default 0.5)")
    p.add_argument("--rank-table", metavar="FILE",
                   help="use this rank table instead of writing one")
    p.add_argument("--nnodes", type=int, help="nodes (one launcher each)")
    p.add_argument("--node-rank", type=int, help="this node's index")
    p.add_argument("--master-addr", help="node 0's address (multi-node)")
    p.add_argument("--master-port", type=int,
                   help="node 0's launcher port (multi-node, default %d)"
                   % DEFAULT_MASTER_PORT)
    p.add_argument("--rdzv-timeout", type=float, default=120.0,
                   help="seconds to wait for every node (default 120)")
    p.add_argument("program", help="script, module or program to run")
    p.add_argument("args", nargs=argparse.REMAINDER,
                   help="its arguments")
    a = p.parse_args(argv)
    if a.nproc < 1:
        p.error("-n must be at least 1, not %d" % a.nproc)
    if a.grace < 0:
        p.error("--grace must not be negative")
    if a.module and a.no_python:
        p.error("-m and --no-python exclude each other")
    return a


def _env_int(*names):
    for n in names:
        v = os.environ.get(n)
        if v not in (None, ""):
            try:
                return int(v)
            except ValueError:
                raise SystemExit("hccl.run: %s=%r is not an integer" % (n, v))
    return None


def _slurm_first_node():
    nodes = os.environ.get("SLURM_JOB_NODELIST") or \
        os.environ.get("SLURM_STEP_NODELIST")
    if not nodes:
        return None
    try:
        out = subprocess.run(["scontrol", "show", "hostnames", nodes],
                             capture_output=True, text=True, timeout=10)
        first = out.stdout.split()
        return first[0] if out.returncode == 0 and first else None
    except (OSError, subprocess.SubprocessError):
        return None


def _nodes(a):
    """(nnodes, node_rank, master_addr, master_port)."""
    nnodes = a.nnodes if a.nnodes is not None else _env_int(
        "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "PMI_SIZE")
    node = a.node_rank if a.node_rank is not None else _env_int(
        "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK")
    nnodes = nnodes or 1
    node = node or 0
    if nnodes < 1 or not 0 <= node < nnodes:
        raise SystemExit("hccl.run: node rank %d is not in [0, %d)"
                         % (node, nnodes))
    addr = a.master_addr or os.environ.get("MASTER_ADDR")
    if nnodes > 1 and not addr and "SLURM_PROCID" in os.environ:
        addr = _slurm_first_node()
    if nnodes > 1 and not addr:
        raise SystemExit("hccl.run: %d nodes: give node 0's address with "
                         "--master-addr (or MASTER_ADDR)" % nnodes)
    port = a.master_port or _env_int("MASTER_PORT") or DEFAULT_MASTER_PORT
    return nnodes, node, addr or "127.0.0.1", port


def _free_port(host):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((host, 0))
        return s.getsockname()[1]
    finally:
        s.close()


def _rank_table(nodes, root_port):
    """Rank table 1.0 for nodes = [(host_ip, nproc, device_ip or None)]."""
    servers, rank = [], 0
    for k, (host, nproc, dev_ip) in enumerate(nodes):
        devs = []
        for d in range(nproc):
            e = {"device_id": str(d), "rank_id": str(rank)}
            if dev_ip:
                e["device_ip"] = dev_ip
            if rank == 0:
                e["host_port"] = str(root_port)
            devs.append(e)
            rank += 1
        servers.append({"server_id": "node%d" % k, "host_ip": host,
                        "device": devs})
    return json.dumps({"status": "completed", "version": "1.0",
                       "server_count": str(len(servers)),
                       "server_list": servers}, indent=1)


def _table_ranks(path, node):
    """(ranks of server_list[node] with their device ids, total ranks) of
    a given rank table."""
    try:
        with open(path) as f:
            t = json.load(f)
        servers = t["server_list"]
        total = sum(len(s["device"]) for s in servers)
        mine = [(int(d["rank_id"]), int(d.get("device_id", 0)))
                for d in servers[node]["device"]]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
        raise SystemExit("hccl.run: cannot use rank table %s for node %d: "
                         "%s" % (path, node, e))
    return sorted(mine), total


class _Line(object):
    """Newline-delimited JSON over a socket."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def send(self, msg):
        self.sock.sendall((json.dumps(msg) + "\n").encode())

    def read(self):
        """Messages available now; None when the peer closed."""
        try:
            data = self.sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            return None
        self.buf += data
        out = []
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            out.append(json.loads(line.decode()))
        return out


def _recv_one(line, deadline):
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise SystemExit("hccl.run: no answer from node 0's launcher "
                             "in time")
        r, _, _ = select.select([line.sock], [], [], left)
        if r:
            msgs = line.read()
            if msgs is None:
                raise SystemExit("hccl.run: node 0's launcher closed the "
                                 "connection during the rendezvous")
            if msgs:
                return msgs[0]


class Launcher(object):
    def __init__(self, a):
        self.a = a
        self.procs = {}  # rank -> Popen
        self.local = []  # [(rank, device)]
        self.world = 0
        self.tmp = None
        self.env = {}
        self.pending_signals = []
        self.stop_deadline = None
        self.culprit = None  # (rank, code, description)
        self.server = None  # node 0, multi-node: listening socket
        self.peers = {}  # node 0: node -> _Line
        self.up = None  # other nodes: _Line to node 0
        self.done_nodes = set()
        self.pidfds = {}  # pidfd -> rank: wakes the loop when a rank ends
        self.ended = {}  # rank -> (time.time() seen, returncode)
        self.kill_at = {}  # rank -> when SIGKILL follows our SIGTERM
        self.spare_until = None
        self.reported = False  # this node's first failure is chosen
        self.stop_requested = False  # node 0 said stop
        self.candidates = []  # node 0: the nodes' first failures
        self.heard = set()  # node 0: nodes whose report (or none) is in
        self.verdict_by = None  # node 0: when to announce the verdict
        self.nnodes, self.node = 1, 0

    # -- planning ---------------------------------------------------------

    def plan(self):
        a = self.a
        nnodes, node, maddr, mport = _nodes(a)
        self.nnodes, self.node = nnodes, node
        self.tmp = tempfile.mkdtemp(prefix="hccl_run_")
        table_path = os.path.join(self.tmp, "rank_table.json")
        if nnodes == 1:
            host = "127.0.0.1"
            if a.rank_table:
                self.local, self.world = _table_ranks(a.rank_table, 0)
                table_path = a.rank_table
            else:
                with open(table_path, "w") as f:
                    f.write(_rank_table([(host, a.nproc, None)],
                                        _free_port(host)))
                self.local = [(r, r) for r in range(a.nproc)]
                self.world = a.nproc
            torch_addr, torch_port = host, _free_port(host)
        else:
            plan = self._rendezvous(nnodes, node, maddr, mport)
            if a.rank_table:
                table_path = a.rank_table
                self.local, self.world = _table_ranks(a.rank_table, node)
            else:
                with open(table_path, "w") as f:
                    f.write(plan["rank_table"])
                first = plan["first_rank"]
                self.local = [(first + i, i) for i in range(a.nproc)]
                self.world = plan["world_size"]
            torch_addr, torch_port = plan["torch_addr"], plan["torch_port"]
        if len(self.local) != a.nproc:
            raise SystemExit("hccl.run: -n %d, but the rank table gives "
                             "node %d %d ranks" % (a.nproc, node,
                                                   len(self.local)))
        # The ranks import the same hccl package as this launcher.
        pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(
            __file__)))
        pypath = os.environ.get("PYTHONPATH", "")
        if pkg_parent not in pypath.split(os.pathsep):
            pypath = pkg_parent + (os.pathsep + pypath if pypath else "")
        self.env = {
            "PYTHONPATH": pypath,
            "RANK_TABLE_FILE": os.path.abspath(table_path),
            "RANK_SIZE": str(self.world),
            "WORLD_SIZE": str(self.world),
            "LOCAL_WORLD_SIZE": str(a.nproc),
            "MASTER_ADDR": torch_addr,
            "MASTER_PORT": str(torch_port),
            "GROUP_RANK": str(node),
            "OPENHCCL_LAUNCHER": "1",
            "OPENHCCL_RUN_DIR": self.tmp,
        }

    def _rendezvous(self, nnodes, node, maddr, mport):
        a = self.a
        deadline = time.monotonic() + a.rdzv_timeout
        if node != 0:
            sock = None
            while sock is None:
                try:
                    sock = socket.create_connection((maddr, mport), timeout=5)
                except OSError as e:
                    if time.monotonic() > deadline:
                        raise SystemExit("hccl.run: cannot reach node 0's "
                                         "launcher at %s:%d: %s"
                                         % (maddr, mport, e))
                    time.sleep(0.2)
            sock.settimeout(None)
            self.up = _Line(sock)
            self.up.send({"hello": {"node": node, "nproc": a.nproc,
                                    "addr": sock.getsockname()[0]}})
            msg = _recv_one(self.up, deadline)
            if "refused" in msg:
                raise SystemExit("hccl.run: node 0 refused this node: %s"
                                 % msg["refused"])
            return msg["plan"]
        host = socket.gethostbyname(maddr)
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            srv.bind((host, mport))
        except OSError as e:
            raise SystemExit("hccl.run: node 0 cannot listen on %s:%d: %s"
                             % (host, mport, e))
        srv.listen(nnodes)
        self.server = srv
        nodes = {0: (host, a.nproc)}
        lines = {}
        waiting = []
        while len(nodes) < nnodes:
            left = deadline - time.monotonic()
            if left <= 0:
                missing = sorted(set(range(nnodes)) - set(nodes))
                raise SystemExit("hccl.run: nodes %s never reached %s:%d "
                                 "within %.0f s" % (missing, host, mport,
                                                    a.rdzv_timeout))
            r, _, _ = select.select([srv] + [w.sock for w in waiting], [], [],
                                    left)
            for s in r:
                if s is srv:
                    c, _ = srv.accept()
                    waiting.append(_Line(c))
                    continue
                w = [x for x in waiting if x.sock is s][0]
                msgs = w.read()
                if msgs is None:
                    waiting.remove(w)
                    continue
                for m in msgs:
                    h = m.get("hello") if isinstance(m, dict) else None
                    k = h.get("node") if isinstance(h, dict) else None
                    if not isinstance(k, int) or not 0 < k < nnodes or \
                            k in nodes:
                        w.send({"refused": "node %r is not one of 1..%d, or "
                                "came twice" % (k, nnodes - 1)})
                        continue
                    nodes[k] = (h["addr"], int(h["nproc"]))
                    lines[k] = w
                    waiting.remove(w)
                    break
        for w in waiting:
            w.sock.close()
        order = [nodes[k] for k in range(nnodes)]
        table = _rank_table([(h, n, h) for h, n in order], _free_port(host))
        torch_port = _free_port(host)
        first = 0
        for k in range(nnodes):
            plan = {"rank_table": table, "first_rank": first,
                    "world_size": sum(n for _, n in order),
                    "torch_addr": host, "torch_port": torch_port}
            if k == 0:
                mine = plan
            else:
                lines[k].send({"plan": plan})
            first += order[k][1]
        self.peers = lines
        return mine

    # -- ranks ------------------------------------------------------------

    def _argv(self):
        a = self.a
        if a.no_python:
            return [a.program] + a.args
        if a.module:
            return [sys.executable, "-m", a.program] + a.args
        return [sys.executable, a.program] + a.args

    def start(self):
        argv = self._argv()
        libc = ctypes.CDLL(None, use_errno=True)

        def child_setup():
            # Die with the launcher; own process group (terminal signals
            # reach the launcher only, which forwards them once).
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            os.setpgid(0, 0)

        for i, (rank, dev) in enumerate(self.local):
            env = dict(os.environ)
            env.update(self.env)
            env.update({"RANK_ID": str(rank), "RANK": str(rank),
                        "DEVICE_ID": str(dev), "LOCAL_RANK": str(i)})
            try:
                self.procs[rank] = subprocess.Popen(
                    argv, env=env, stdin=subprocess.DEVNULL,
                    preexec_fn=child_setup)
                if hasattr(os, "pidfd_open"):
                    try:
                        fd = os.pidfd_open(self.procs[rank].pid)
                        self.pidfds[fd] = rank
                    except OSError:
                        pass
            except OSError as e:
                _say("cannot start rank %d (%s): %s" % (rank, argv[0], e))
                self.culprit = (rank, 127, "could not be started")
                self.stop_all()
                return

    def _signal_ranks(self, sig, pgroup=True):
        for p in self.procs.values():
            if p.returncode is None:
                try:
                    if pgroup:
                        os.killpg(p.pid, sig)
                    else:
                        p.send_signal(sig)
                except (ProcessLookupError, PermissionError):
                    pass

    def stop_all(self, spare=(), grace=None):
        """SIGTERM every running rank but those in spare (each once),
        SIGKILL after grace (--grace by default) seconds."""
        dl = time.monotonic() + (self.a.grace if grace is None else grace)
        for rank, p in self.procs.items():
            if rank in spare or rank in self.kill_at or \
                    p.poll() is not None:
                continue
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
            self.kill_at[rank] = dl
        self.stop_deadline = min(self.kill_at.values(), default=None)

    def _escalate(self):
        now = time.monotonic()
        for rank, dl in self.kill_at.items():
            p = self.procs[rank]
            if now >= dl and p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def on_signal(self, sig, frame):
        self.pending_signals.append(sig)

    def _handle_signals(self):
        while self.pending_signals:
            sig = self.pending_signals.pop(0)
            self._signal_ranks(sig, pgroup=False)
            if sig in TERMINATING and self.culprit is None:
                self.culprit = (None, 128 + sig, "ended: the launcher got %s"
                                % _signame(sig))
                self.reported = True
                # the ranks got it: they have 5 s (or --grace) to end
                dl = time.monotonic() + max(self.a.grace, 5.0)
                for rank, p in self.procs.items():
                    if p.poll() is None:
                        self.kill_at.setdefault(rank, dl)

    # -- failures -----------------------------------------------------
    #
    # Which rank failed first. A rank killed by a signal (not by us) comes
    # before one that exited; then the one that began to exit first
    # (hccl marks it, see hccl/_exitmark.py; wall-clock time, so nodes
    # compare too), else the one seen ending first. On one node the
    # launcher decides alone. With several, every launcher sends its own
    # first failure to node 0, which tells every node to stop, gathers
    # the reports (each node's first failure, or none) until every node
    # has answered, at most VERDICT_WAIT seconds, and announces the
    # verdict: every launcher exits with the culprit's code and names it.

    def _marks(self):
        """rank -> when (time.time()) it began to exit, where known."""
        out = {}
        try:
            names = os.listdir(self.tmp)
        except OSError:
            return out
        for n in names:
            if not n.startswith("exiting."):
                continue
            try:
                with open(os.path.join(self.tmp, n)) as f:
                    out[int(n.split(".", 1)[1])] = float(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
        return out

    def _reap(self):
        """Collect ranks that ended; pick this node's first failure.

        A rank that began to exit before the first failed one but is still
        tearing down most likely caused the others' failures: the others
        are stopped at once, and it gets up to 2 s to end with its own
        code. So do marked ranks when node 0 asked us to stop. Ranks that
        end after our SIGTERM are not candidates."""
        now = time.monotonic()
        for rank, p in self.procs.items():
            if rank not in self.ended and p.poll() is not None:
                self.ended[rank] = (time.time(), p.returncode)
        for fd in [fd for fd, r in self.pidfds.items() if r in self.ended]:
            os.close(fd)
            del self.pidfds[fd]
        if self.reported:
            return
        failed = {r: e for r, e in self.ended.items()
                  if e[1] != 0 and r not in self.kill_at}
        if not failed and not self.stop_requested:
            return
        marks = self._marks()
        if failed:
            def key(r):
                t, rc = failed[r]
                return (0 if rc < 0 else 1, marks.get(r, t), r)

            best = min(failed, key=key)
            t_best = marks.get(best, failed[best][0])
            early = set(r for r, tm in marks.items()
                        if tm < t_best and r not in self.ended)
            if failed[best][1] < 0:
                early = set()  # a rank killed by a signal: that is it
        else:
            early = set(r for r in marks if r not in self.ended)
        if early:
            if self.spare_until is None:
                self.spare_until = now + 2.0
                self.stop_all(spare=early)
            if now < self.spare_until:
                return
        self.reported = True
        if not failed:
            self.stop_all()
            self._candidate(None)  # several nodes: "no failure here"
            return
        t, rc = failed[best]
        if rc < 0:
            desc, code = "was killed by %s" % _signame(-rc), 128 - rc
        else:
            desc, code = "exited with code %d" % rc, rc
        self._candidate({"rank": best, "code": code, "desc": desc,
                         "signal": rc < 0, "t": marks.get(best, t),
                         "node": self.node})

    def _candidate(self, c):
        """This node's first failure, or None: none after a stop."""
        if self.nnodes == 1:
            if c is not None:
                self._verdict(c)
            return
        self.stop_all()
        if self.node != 0:
            try:
                self.up.send({"candidate": c})
            except (OSError, AttributeError):
                if c is not None:
                    self._verdict(c)  # node 0 is gone: our word stands
            return
        self._add_candidate(c, 0)

    def _add_candidate(self, c, node):
        """Node 0: a node's first failure (None: it had none)."""
        if self.culprit is not None:
            return
        self.heard.add(node)
        if c is None:
            return
        self.candidates.append(c)
        if self.verdict_by is None:
            self.verdict_by = time.monotonic() + VERDICT_WAIT
            self.stop_requested = True
            self._to_peers({"stop": True})

    def _verdict(self, c):
        if self.culprit is not None:
            return
        rank = c.get("rank")
        who = "rank %d" % rank if rank is not None else "a launcher"
        where = "" if self.nnodes == 1 or c.get("node") in (None, self.node) \
            else " (on node %d)" % c["node"]
        self.culprit = (rank, c["code"], c["desc"] + where)
        left = [r for r, p in self.procs.items() if p.poll() is None]
        if left:
            _say("%s%s %s; stopping %s %s" % (
                who, where, c["desc"], "rank" if len(left) == 1 else "ranks",
                ", ".join(str(r) for r in left)))
        else:
            _say("%s%s %s" % (who, where, c["desc"]))
        self.stop_all()
        if self.node == 0 and self.nnodes > 1:
            self._to_peers({"verdict": c})

    def _to_peers(self, msg):
        for ln in list(self.peers.values()):
            try:
                ln.send(msg)
            except OSError:
                pass

    def _judge(self):
        """Node 0: the verdict once every node reported, or the time for
        reports is over. A node sparing a rank that began to exit early
        reports up to 2 s after the stop; its rank is most likely the
        culprit, so the verdict waits for it."""
        if self.culprit is not None or self.verdict_by is None:
            return
        waiting = [k for k in list(self.peers) + [0]
                   if k not in self.heard and k not in self.done_nodes]
        if waiting and time.monotonic() < self.verdict_by:
            return
        best = min(self.candidates, key=lambda c: (
            0 if c.get("signal") else 1, c.get("t", float("inf"))))
        self._verdict(best)

    def _net(self, timeout):
        socks = [ln.sock for ln in self.peers.values()]
        if self.up is not None:
            socks.append(self.up.sock)
        try:
            r, _, _ = select.select(socks + list(self.pidfds), [], [],
                                    timeout)
        except InterruptedError:
            return
        for s in r:
            if isinstance(s, int):
                continue  # a rank ended: _reap looks
            if self.up is not None and s is self.up.sock:
                msgs = self.up.read()
                if msgs is None:
                    self.up.sock.close()
                    self.up = None
                    self._verdict({"rank": None, "code": 1,
                                   "desc": "went away (node 0's launcher)",
                                   "node": 0})
                    continue
                for m in msgs:
                    if "stop" in m:
                        self.stop_requested = True
                    elif "verdict" in m:
                        self._verdict(m["verdict"])
                continue
            k = [k for k, ln in self.peers.items() if ln.sock is s][0]
            msgs = self.peers[k].read()
            if msgs is None:
                self.peers.pop(k).sock.close()
                if k not in self.done_nodes:
                    self._add_candidate({
                        "rank": None, "code": 1, "node": k,
                        "desc": "went away (the launcher of node %d)" % k,
                        "t": time.time()}, k)
                continue
            for m in msgs:
                if "candidate" in m:
                    self._add_candidate(m["candidate"], k)
                elif "done" in m:
                    self.done_nodes.add(k)

    def _all_exited(self):
        return all(p.poll() is not None for p in self.procs.values())

    def run(self):
        for s in FORWARDED:
            signal.signal(s, self.on_signal)
        verdict_wait = None
        try:
            self.start()
            while True:
                self._handle_signals()
                # Looked at before _reap: a rank that ends between the
                # two would leave its failure unjudged.
                all_exited = self._all_exited()
                self._reap()
                if self.node == 0:
                    self._judge()
                self._escalate()
                if all_exited:
                    if self.culprit is not None:
                        break
                    if self.node != 0:
                        if not self.reported and self.up is not None:
                            self.up.send({"done": True})
                            break
                        # we reported a failure: wait for the verdict
                        if verdict_wait is None:
                            verdict_wait = time.monotonic() + \
                                VERDICT_WAIT + 2.0
                        if self.up is None or \
                                time.monotonic() > verdict_wait:
                            break
                    elif not self.candidates and \
                            set(self.peers) <= self.done_nodes:
                        break
                    self._net(0.02)
                    continue
                self._net(0.02 if self.spare_until is None else 0.01)
        finally:
            for s in FORWARDED:
                signal.signal(s, signal.SIG_DFL)
            self._signal_ranks(signal.SIGKILL)
            for p in self.procs.values():
                p.wait()
            for fd in self.pidfds:
                os.close(fd)
            self.pidfds.clear()
            if self.tmp:
                shutil.rmtree(self.tmp, ignore_errors=True)
        if self.culprit is None and self.reported:
            self.culprit = (None, 1, "failed (no verdict from node 0)")
        if self.culprit is None:
            return 0
        rank, code, desc = self.culprit
        who = "rank %d" % rank if rank is not None else "the job"
        _say("exit code %d: %s %s" % (code or 1, who, desc))
        return code if code else 1


def main(argv=None):
    a = _parse(sys.argv[1:] if argv is None else argv)
    launcher = Launcher(a)
    try:
        launcher.plan()
    except BaseException:
        if launcher.tmp:
            shutil.rmtree(launcher.tmp, ignore_errors=True)
        raise
    return launcher.run()


def main_exit():
    """Entry point of the hccl-run script (pip install ./python)."""
    sys.exit(main())


if __name__ == "__main__":
    sys.exit(main())
