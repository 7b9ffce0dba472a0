# SPDX-License-Identifier: Apache-2.0
"""Loading libhccl.so.1 (and the libascendcl.so beside it) with ctypes.

Where the library comes from, first match wins:

1. ``OPENHCCL_LIB``: the path of ``libhccl.so.1`` (or ``libhccl.so``);
2. ``OPENHCCL_LIB_DIR``: a directory holding it;
3. a build tree next to this package (``<repo>/build/src``, for running
   ``python/`` straight out of a checkout after ``cmake --build build``);
4. the dynamic loader's search path (an install prefix in ``ldconfig`` or
   ``LD_LIBRARY_PATH``).

A failure raises ``ValueError('load hccl lib error: ...')``, as HCCL's own
module does. Nothing here calls into the library at import time.
"""
import ctypes
import os
import threading

HCCL_SUCCESS = 0
ROOT_INFO_BYTES = 4108
COMM_NAME_MAX = 128

# HcclResult names (spec section 1.1); the library gives the text.
_RESULT_NAMES = {
    0: "HCCL_SUCCESS", 1: "HCCL_E_PARA", 2: "HCCL_E_PTR",
    3: "HCCL_E_MEMORY", 4: "HCCL_E_INTERNAL", 5: "HCCL_E_NOT_SUPPORT",
    6: "HCCL_E_NOT_FOUND", 7: "HCCL_E_UNAVAIL", 8: "HCCL_E_SYSCALL",
    9: "HCCL_E_TIMEOUT", 10: "HCCL_E_OPEN_FILE_FAILURE",
    11: "HCCL_E_TCP_CONNECT", 12: "HCCL_E_ROCE_CONNECT",
    13: "HCCL_E_TCP_TRANSFER", 14: "HCCL_E_ROCE_TRANSFER",
    15: "HCCL_E_RUNTIME", 16: "HCCL_E_DRV", 17: "HCCL_E_PROFILING",
    18: "HCCL_E_CCE", 19: "HCCL_E_NETWORK", 20: "HCCL_E_AGAIN",
    21: "HCCL_E_REMOTE", 22: "HCCL_E_SUSPENDING", 23: "HCCL_E_OPRETRY_FAIL",
    24: "HCCL_E_OOM", 1041: "HCCL_E_IN_STATUS",
}

ACL_ERROR_REPEAT_INITIALIZE = 100002


class HcclError(ValueError):
    """A call into libhccl returned something other than HCCL_SUCCESS.

    ``code`` is the HcclResult number, ``name`` its constant's name
    (``"HCCL_E_PARA"``), ``text`` the library's HcclGetErrorString and
    ``func`` the C function. A ValueError, as HCCL's Python module raises
    for every failed call; the library's log (stderr) has one line
    saying which argument or peer was at fault.
    """

    def __init__(self, func, code, detail=""):
        self.func = func
        self.code = int(code)
        self.name = _RESULT_NAMES.get(self.code, "HCCL_E_%d" % self.code)
        self.text = error_string(self.code)
        msg = "%s failed: %s (%d): %s" % (func, self.name, self.code,
                                          self.text)
        if detail:
            msg += "; " + detail
        super().__init__(msg)


_lock = threading.Lock()
_hccl = None
_acl = None
_path = None


def _candidates():
    env = os.environ.get("OPENHCCL_LIB")
    if env:
        return [env]
    env = os.environ.get("OPENHCCL_LIB_DIR")
    if env:
        return [os.path.join(env, "libhccl.so.1"),
                os.path.join(env, "libhccl.so")]
    here = os.path.dirname(os.path.realpath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    out = [os.path.join(repo, "build", "src", "libhccl.so.1")]
    return [p for p in out if os.path.exists(p)] + ["libhccl.so.1"]


def _proto(lib, name, res, args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = args
    return f


def _declare(hccl, acl):
    c = ctypes
    vp, u32, u64, i32 = c.c_void_p, c.c_uint32, c.c_uint64, c.c_int32
    cs, pu32, pvp = c.c_char_p, c.POINTER(c.c_uint32), c.POINTER(c.c_void_p)
    res = c.c_int
    for name, args in [
        ("HcomCreateGroup", [cs, u32, pu32]),
        ("HcomDestroyGroup", [cs]),
        ("HcomGetRankSize", [cs, pu32]),
        ("HcomGetLocalRankSize", [cs, pu32]),
        ("HcomGetRankId", [cs, pu32]),
        ("HcomGetLocalRankId", [cs, pu32]),
        ("HcomGetWorldRankFromGroupRank", [cs, u32, pu32]),
        ("HcomGetGroupRankFromWorldRank", [u32, cs, pu32]),
        ("HcomSetGradFusionByIndex", [cs, u32, pu32]),
        ("HcomSetGradFusionBySize", [cs, u32, c.POINTER(c.c_float)]),
        ("HcclCommInitClusterInfo", [cs, u32, pvp]),
        ("HcclCommInitClusterInfoConfig", [cs, u32, vp, pvp]),
        ("HcclGetRootInfo", [vp]),
        ("HcclCommInitRootInfoConfig", [u32, vp, u32, vp, pvp]),
        ("HcclCommDestroy", [vp]),
        ("HcclCommGetHandleWithName", [cs, pvp]),
        ("HcclGetRankSize", [vp, pu32]),
        ("HcclGetRankId", [vp, pu32]),
        ("HcclGetCommName", [vp, c.c_char_p]),
        ("HcclGetCommAsyncError", [vp, c.POINTER(res)]),
        ("HcclAllReduce", [vp, vp, u64, res, res, vp, vp]),
        ("HcclBroadcast", [vp, u64, res, u32, vp, vp]),
        ("HcclReduce", [vp, vp, u64, res, res, u32, vp, vp]),
        ("HcclAllGather", [vp, vp, u64, res, vp, vp]),
        ("HcclReduceScatter", [vp, vp, u64, res, res, vp, vp]),
        ("HcclAlltoAll", [vp, u64, res, vp, u64, res, vp, vp]),
        ("HcclAlltoAllV", [vp, vp, vp, res, vp, vp, vp, res, vp, vp]),
        ("HcclSend", [vp, u64, res, u32, vp, vp]),
        ("HcclRecv", [vp, u64, res, u32, vp, vp]),
        ("HcclBarrier", [vp, vp]),
    ]:
        _proto(hccl, name, res, args)
    _proto(hccl, "HcclGetErrorString", cs, [res])
    _proto(acl, "aclInit", res, [cs])
    _proto(acl, "aclFinalize", res, [])
    _proto(acl, "aclFinalizeReference", res, [c.POINTER(c.c_uint64)])
    _proto(acl, "aclrtSetDevice", res, [i32])
    _proto(acl, "aclrtResetDevice", res, [i32])
    _proto(acl, "aclrtGetDeviceCount", res, [pu32])
    _proto(acl, "aclGetRecentErrMsg", cs, [])


def load():
    """The loaded (libhccl, libascendcl) pair; loads them on first use."""
    global _hccl, _acl, _path
    if _hccl is not None:
        return _hccl, _acl
    with _lock:
        if _hccl is not None:
            return _hccl, _acl
        errors = []
        for cand in _candidates():
            try:
                acl_path = "libascendcl.so"
                if os.sep in cand:
                    acl_path = os.path.join(os.path.dirname(cand),
                                            "libascendcl.so")
                    if not os.path.exists(acl_path):
                        acl_path = "libascendcl.so"
                acl = ctypes.CDLL(acl_path, mode=ctypes.RTLD_GLOBAL)
                hccl = ctypes.CDLL(cand, mode=ctypes.RTLD_GLOBAL)
                _declare(hccl, acl)
            except (OSError, AttributeError) as e:
                errors.append("%s: %s" % (cand, e))
                continue
            _hccl, _acl, _path = hccl, acl, cand
            return _hccl, _acl
        raise ValueError("load hccl lib error: " + "; ".join(errors) +
                         " (set OPENHCCL_LIB to libhccl.so.1's path)")


def path():
    """Where libhccl was loaded from (loads it if needed)."""
    load()
    return _path


def hccl():
    return load()[0]


def acl():
    return load()[1]


def error_string(code):
    try:
        s = hccl().HcclGetErrorString(int(code))
    except ValueError:
        return "unknown"
    return s.decode() if s else "unknown"


def check(func, ret, detail=""):
    """Raise HcclError unless ret is HCCL_SUCCESS."""
    if ret != HCCL_SUCCESS:
        raise HcclError(func, ret, detail)


class CommConfig(ctypes.Structure):
    """HcclCommConfig (version 11, 2248 bytes), filled as
    HcclCommConfigInit does: every field "not set"."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("magicWord", ctypes.c_uint32),
        ("version", ctypes.c_uint32),
        ("reserved", ctypes.c_uint64),
        ("hcclBufferSize", ctypes.c_uint32),
        ("hcclDeterministic", ctypes.c_uint32),
        ("hcclCommName", ctypes.c_char * 128),
        ("hcclUdi", ctypes.c_char * 128),
        ("hcclOpExpansionMode", ctypes.c_uint32),
        ("hcclRdmaTrafficClass", ctypes.c_uint32),
        ("hcclRdmaServiceLevel", ctypes.c_uint32),
        ("hcclWorldRankID", ctypes.c_uint32),
        ("hcclJobID", ctypes.c_uint64),
        ("aclGraphZeroCopyEnable", ctypes.c_uint8),
        ("hcclExecTimeOut", ctypes.c_int32),
        ("hcclAlgo", ctypes.c_char * 1600),
        ("hcclRetryEnable", ctypes.c_char * 50),
        ("hcclRetryParams", ctypes.c_char * 128),
        ("hcclBufferName", ctypes.c_char * 128),
        ("hcclQos", ctypes.c_uint32),
        ("hcclSymWinMaxMemSizePerRank", ctypes.c_uint64),
        ("hcclChannelSqDepth", ctypes.c_uint32),
    ]

    def __init__(self, name=None):
        super().__init__()
        not_set = 0xFFFFFFFF
        self.size = ctypes.sizeof(CommConfig)
        self.magicWord = 0xF0F0F0F0
        self.version = 11
        self.hcclBufferSize = not_set
        self.hcclDeterministic = not_set
        self.hcclRdmaTrafficClass = not_set
        self.hcclRdmaServiceLevel = not_set
        self.hcclExecTimeOut = -1
        self.hcclQos = not_set
        self.hcclSymWinMaxMemSizePerRank = 16
        self.hcclChannelSqDepth = not_set
        if name:
            self.hcclCommName = name.encode()


assert ctypes.sizeof(CommConfig) == 2248
