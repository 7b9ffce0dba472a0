# SPDX-License-Identifier: Apache-2.0
"""The world group ("hccl_world_group") of this process.

It is built on first use (or by ``hccl.init()``) from, in this order:

* ``RANK_TABLE_FILE`` and ``RANK_ID`` (HCCL's frameworks set these;
  ``python3 -m hccl.run`` sets them too, with a rank table it writes):
  ``HcclCommInitClusterInfo``, which names the communicator
  "hccl_world_group";
* nothing at all: a world of one rank (``RANK_SIZE`` unset or 1), through
  root info, so a single process runs the same code.

The device is ``DEVICE_ID`` if set, else the ``device_id`` the rank table
gives this rank, else 0 (modulo the runtime's device count). It is set in
every thread that calls into the library through this package (the
``Hcom*`` calls look groups up by the calling thread's device).

Torn down at interpreter exit (atexit): groups made with
``create_group``, then the world communicator, the device, and this
package's reference to the runtime (aclFinalizeReference: the runtime
ends with its last user).
"""
import atexit
import ctypes
import itertools
import json
import os
import threading

from . import _lib

WORLD = "hccl_world_group"

_lock = threading.RLock()
_tls = threading.local()
_state = None  # dict while the world group lives
_atexit_done = False
# Python-side bookkeeping per group: comm handle cache, members.
_groups = {}
_generations = itertools.count(1)


class _State(object):
    def __init__(self):
        self.comm = None
        self.rank = 0
        self.size = 1
        self.device = 0
        self.source = ""
        self.device_sets = 0  # aclrtSetDevice calls to undo
        self.gen = next(_generations)


def _device_for(rank_table, rank):
    env = os.environ.get("DEVICE_ID")
    if env not in (None, ""):
        try:
            dev = int(env)
        except ValueError:
            raise ValueError("DEVICE_ID=%r is not an integer" % env)
        if dev < 0:
            raise ValueError("DEVICE_ID=%d is negative" % dev)
        return dev
    if rank_table:
        try:
            with open(rank_table) as f:
                table = json.load(f)
            for server in table.get("server_list", []):
                for d in server.get("device", []):
                    if int(d.get("rank_id", -1)) == rank:
                        return int(d.get("device_id", 0))
        except (OSError, ValueError, TypeError, AttributeError):
            pass  # the library parses it and names what is wrong
    return 0


def _env_int(name):
    v = os.environ.get(name)
    if v in (None, ""):
        return None
    try:
        n = int(v)
    except ValueError:
        raise ValueError("%s=%r is not an integer" % (name, v))
    if n < 0:
        raise ValueError("%s=%d is negative" % (name, n))
    return n


def initialized():
    return _state is not None


def init(rank_table=None, rank=None, device=None):
    """Build the world group unless it exists; returns nothing.

    rank_table / rank default to RANK_TABLE_FILE / RANK_ID. Without a rank
    table the world is this process alone (RANK_SIZE must be unset or 1).
    """
    global _state, _atexit_done
    with _lock:
        if _state is not None:
            return
        hccl, acl = _lib.load()
        if rank_table is None:
            rank_table = os.environ.get("RANK_TABLE_FILE") or None
        if rank is None:
            rank = _env_int("RANK_ID")
        size_env = _env_int("RANK_SIZE")
        if rank_table is not None and rank is None:
            raise ValueError("RANK_TABLE_FILE=%s is set but RANK_ID is not "
                             "(this process's rank in it)" % rank_table)
        if rank_table is None and size_env not in (None, 1):
            raise ValueError(
                "RANK_SIZE=%d but no RANK_TABLE_FILE: start the ranks with "
                "'python3 -m hccl.run -n N', or give a rank table "
                "(RANK_TABLE_FILE and RANK_ID)" % size_env)
        if rank_table is None and rank not in (None, 0):
            raise ValueError("RANK_ID=%d but no RANK_TABLE_FILE" % rank)
        st = _State()
        st.device = _device_for(rank_table, rank) if device is None \
            else int(device)
        count = ctypes.c_uint32(0)
        if acl.aclrtGetDeviceCount(ctypes.byref(count)) == 0 and count.value:
            st.device %= count.value
        ret = acl.aclInit(None)
        if ret not in (0, _lib.ACL_ERROR_REPEAT_INITIALIZE):
            raise RuntimeError("aclInit failed: %d" % ret)
        ret = acl.aclrtSetDevice(st.device)
        st.device_sets = 1 if ret == 0 else 0
        if ret != 0:
            acl.aclFinalizeReference(None)
            raise RuntimeError("aclrtSetDevice(%d) failed: %d"
                               % (st.device, ret))
        comm = ctypes.c_void_p()
        try:
            if rank_table is not None:
                if not os.path.exists(rank_table):
                    raise ValueError("rank table %s does not exist "
                                     "(RANK_TABLE_FILE)" % rank_table)
                _lib.check("HcclCommInitClusterInfo",
                           hccl.HcclCommInitClusterInfo(
                               rank_table.encode(), rank, ctypes.byref(comm)),
                           "rank table %s, rank %d" % (rank_table, rank))
                st.source = "rank table %s" % rank_table
            else:
                root = ctypes.create_string_buffer(_lib.ROOT_INFO_BYTES)
                _lib.check("HcclGetRootInfo", hccl.HcclGetRootInfo(root))
                cfg = _lib.CommConfig(WORLD)
                _lib.check("HcclCommInitRootInfoConfig",
                           hccl.HcclCommInitRootInfoConfig(
                               1, root, 0, ctypes.byref(cfg),
                               ctypes.byref(comm)))
                st.source = "single process"
            n = ctypes.c_uint32()
            _lib.check("HcclGetRankSize",
                       hccl.HcclGetRankSize(comm, ctypes.byref(n)))
            st.size = n.value
            _lib.check("HcclGetRankId",
                       hccl.HcclGetRankId(comm, ctypes.byref(n)))
            st.rank = n.value
        except BaseException:
            if comm.value:
                hccl.HcclCommDestroy(comm)
            acl.aclrtResetDevice(st.device)
            acl.aclFinalizeReference(None)
            raise
        st.comm = comm
        _tls.device = st.device
        _tls.generation = st.gen
        _groups[WORLD] = {"comm": comm, "ranks": None, "size": st.size,
                          "rank": st.rank}
        _state = st
        if not _atexit_done:
            atexit.register(_at_exit)
            _atexit_done = True


def ensure():
    """The live state; builds the world group from the environment if
    needed, and sets this thread's device."""
    st = _state
    if st is None:
        init()
        st = _state
    if getattr(_tls, "generation", None) != st.gen:
        with _lock:
            if _lib.acl().aclrtSetDevice(st.device) == 0:
                st.device_sets += 1
        _tls.generation = st.gen
    return st


def _size_rank(h):
    lib = _lib.hccl()
    n, r = ctypes.c_uint32(), ctypes.c_uint32()
    _lib.check("HcclGetRankSize", lib.HcclGetRankSize(h, ctypes.byref(n)))
    _lib.check("HcclGetRankId", lib.HcclGetRankId(h, ctypes.byref(r)))
    return n.value, r.value


def comm_info(group):
    """(HcclComm handle, size, this rank) of group, as this process sees
    it (cached for the groups made through this package)."""
    ensure()
    g = _groups.get(group)
    if g is not None:
        return g["comm"], g["size"], g["rank"]
    h = ctypes.c_void_p()
    ret = _lib.hccl().HcclCommGetHandleWithName(group.encode(),
                                                ctypes.byref(h))
    if ret != 0:
        raise _lib.HcclError("HcclCommGetHandleWithName", ret,
                             "no group '%s' in this process (create_group "
                             "first; only its members have it)" % group)
    n, r = _size_rank(h)
    return h, n, r


def group_added(group, ranks):
    h = ctypes.c_void_p()
    if _lib.hccl().HcclCommGetHandleWithName(group.encode(),
                                             ctypes.byref(h)) != 0:
        return
    n, r = _size_rank(h)
    _groups[group] = {"comm": h, "ranks": list(ranks), "size": n, "rank": r}


def group_removed(group):
    _groups.pop(group, None)


def _at_exit():
    from . import _exitmark
    _exitmark.mark()
    finalize()


def finalize():
    """Destroy the groups made here, the world group, release the device.

    Safe to call twice; the next use builds a new world group.
    """
    global _state
    with _lock:
        st = _state
        if st is None:
            return
        hccl, acl = _lib.load()
        if acl.aclrtSetDevice(st.device) == 0:  # Hcom looks up by device
            st.device_sets += 1
        for name in [g for g in _groups if g != WORLD]:
            hccl.HcomDestroyGroup(name.encode())
        _groups.clear()
        _state = None
        from . import split  # strategies die with the groups
        split.api._forget_all()
        hccl.HcclCommDestroy(st.comm)
        for _ in range(st.device_sets):
            acl.aclrtResetDevice(st.device)
        # Our reference only: hccl.torch's groups (or the application)
        # may still use the runtime.
        acl.aclFinalizeReference(None)
