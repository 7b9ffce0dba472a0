# SPDX-License-Identifier: Apache-2.0
"""Building and loading the C++ extension behind ``hccl.torch``.

The extension (csrc/process_group_hccl.cpp) is compiled once per source,
library, include directory and torch version with
``torch.utils.cpp_extension`` (needs Debian's ``libtorch-dev`` and
``python3-pybind11``; a few minutes on 2 cores) into a build directory:
``OPENHCCL_TORCH_BUILD_DIR`` if set, else
``~/.cache/openhccl/torch_ext/<key>``. Later imports load the built module
straight away. ``python3 -m hccl.torch.build`` builds it ahead of time
(and prints where).

Headers: ``OPENHCCL_INCLUDE_DIR``, else the repository's ``include/``
beside this package, else ``<library dir>/../include``.
"""
import hashlib
import importlib.machinery
import importlib.util
import os
import sys

from .. import _lib

NAME = "hccl_torch_C"
_here = os.path.dirname(os.path.realpath(__file__))
SOURCE = os.path.join(_here, "csrc", "process_group_hccl.cpp")


def include_dir():
    env = os.environ.get("OPENHCCL_INCLUDE_DIR")
    cands = [env] if env else []
    repo = os.path.dirname(os.path.dirname(os.path.dirname(_here)))
    cands.append(os.path.join(repo, "include"))
    libdir = os.path.dirname(os.path.realpath(_lib.path())) \
        if os.sep in _lib.path() else ""
    if libdir:
        cands.append(os.path.join(os.path.dirname(libdir), "include"))
    for c in cands:
        if c and os.path.exists(os.path.join(c, "hccl", "hccl.h")):
            return c
    raise RuntimeError("hccl.torch: cannot find OpenHCCL's headers "
                       "(hccl/hccl.h) in %s; set OPENHCCL_INCLUDE_DIR"
                       % ", ".join(x for x in cands if x))


def lib_dir():
    p = _lib.path()
    if os.sep not in p:
        return None  # found by the loader's search path
    return os.path.dirname(os.path.abspath(p))


def _key(torch_version):
    h = hashlib.sha256()
    with open(SOURCE, "rb") as f:
        h.update(f.read())
    inc = include_dir()
    for rel in ("hccl/hccl.h", "hccl/hccl_types.h", "hccl/hccl_comm.h",
                "acl/acl_rt.h"):
        p = os.path.join(inc, rel)
        if os.path.exists(p):
            with open(p, "rb") as f:
                h.update(f.read())
    h.update(("%s|%s|%s|%s" % (inc, lib_dir(), torch_version,
                               sys.version)).encode())
    return h.hexdigest()[:16]


def build_dir(torch_version=None):
    if torch_version is None:
        import torch
        torch_version = torch.__version__
    env = os.environ.get("OPENHCCL_TORCH_BUILD_DIR")
    if env:
        return os.path.abspath(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return os.path.join(base, "openhccl", "torch_ext", _key(torch_version))


def _import_built(path):
    loader = importlib.machinery.ExtensionFileLoader(NAME, path)
    spec = importlib.util.spec_from_file_location(NAME, path, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def is_built():
    """Whether the extension for this source, library and torch exists."""
    import torch
    d = build_dir(torch.__version__)
    so = os.path.join(d, NAME + ".so")
    stamp = os.path.join(d, "stamp")
    if not (os.path.exists(so) and os.path.exists(stamp)):
        return False
    with open(stamp) as f:
        return f.read().strip() == _key(torch.__version__)


def load(verbose=False):
    """The extension module, built first if needed."""
    import torch
    _lib.load()  # the extension binds to this very libhccl.so.1
    d = build_dir(torch.__version__)
    so = os.path.join(d, NAME + ".so")
    stamp = os.path.join(d, "stamp")
    key = _key(torch.__version__)
    if is_built():
        return _import_built(so)
    os.makedirs(d, exist_ok=True)
    from torch.utils import cpp_extension
    ldflags = []
    ld = lib_dir()
    if ld:
        ldflags += ["-L" + ld, "-Wl,-rpath," + ld]
    ldflags += ["-lhccl", "-lascendcl"]
    mod = cpp_extension.load(
        name=NAME, sources=[SOURCE], extra_include_paths=[include_dir()],
        extra_cflags=["-O2", "-Wall"], extra_ldflags=ldflags,
        build_directory=d, verbose=verbose)
    tmp = "%s.%d.tmp" % (stamp, os.getpid())
    with open(tmp, "w") as f:
        f.write(key + "\n")
    os.replace(tmp, stamp)
    return mod
