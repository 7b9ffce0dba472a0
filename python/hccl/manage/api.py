# SPDX-License-Identifier: Apache-2.0
"""HCCL's group management calls (spec section 6), over libhccl's Hcom*.

Groups are subsets of the world group "hccl_world_group"; group ranks are
numbered 0..n-1 in ``rank_ids`` order; "local" means on this server.
Arguments are checked here first (``ValueError`` naming what is wrong);
a call the library refuses raises ``hccl.HcclError`` (a ``ValueError``)
with the HCCL code and text.
"""
import ctypes

from .. import _lib, _world

WORLD = _world.WORLD
GROUP_NAME_MAX = 127
GROUP_RANKS_MAX = 32768
_U32_MAX = 0xFFFFFFFF

__all__ = [
    "create_group", "destroy_group", "get_rank_size",
    "get_local_rank_size", "get_rank_id", "get_local_rank_id",
    "get_world_rank_from_group_rank", "get_group_rank_from_world_rank",
]


def check_group(group):
    """group must be a non-empty str of at most 127 characters."""
    if not isinstance(group, str):
        raise ValueError("group must be a str, not %s" % type(group).__name__)
    if not group:
        raise ValueError("group must not be empty")
    if len(group) > GROUP_NAME_MAX:
        raise ValueError("group name is %d characters long, more than %d"
                         % (len(group), GROUP_NAME_MAX))
    if "\0" in group:
        raise ValueError("group name contains a NUL character")
    return group.encode()


def _check_rank(what, v):
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError("%s must be an int, not %s"
                         % (what, type(v).__name__))
    if v < 0 or v > _U32_MAX:
        raise ValueError("%s = %d is not in [0, %d]" % (what, v, _U32_MAX))
    return v


def _u32_call(fn, *args):
    out = ctypes.c_uint32()
    _lib.check(fn, getattr(_lib.hccl(), fn)(*args, ctypes.byref(out)))
    return out.value


def create_group(group, rank_num, rank_ids):
    """Create group over the world ranks rank_ids (in that order: group
    rank i is world rank rank_ids[i]). Collective over the members only;
    the caller must be one of them."""
    name = check_group(group)
    if group == WORLD:
        raise ValueError("'%s' is the world group; it cannot be created"
                         % WORLD)
    if isinstance(rank_num, bool) or not isinstance(rank_num, int):
        raise ValueError("rank_num must be an int, not %s"
                         % type(rank_num).__name__)
    if rank_num <= 0 or rank_num > GROUP_RANKS_MAX:
        raise ValueError("rank_num = %d is not in [1, %d]"
                         % (rank_num, GROUP_RANKS_MAX))
    if not isinstance(rank_ids, (list, tuple)):
        raise ValueError("rank_ids must be a list of world rank ids, not %s"
                         % type(rank_ids).__name__)
    if len(rank_ids) != rank_num:
        raise ValueError("rank_ids has %d entries but rank_num is %d"
                         % (len(rank_ids), rank_num))
    seen = set()
    for i, r in enumerate(rank_ids):
        _check_rank("rank_ids[%d]" % i, r)
        if r in seen:
            raise ValueError("rank_ids[%d] = %d is listed twice" % (i, r))
        seen.add(r)
    st = _world.ensure()
    for i, r in enumerate(rank_ids):
        if r >= st.size:
            raise ValueError("rank_ids[%d] = %d is not a world rank (the "
                             "world group has %d)" % (i, r, st.size))
    if st.rank not in seen:
        raise ValueError("world rank %d is not in rank_ids %s: only the "
                         "members call create_group" % (st.rank,
                                                        list(rank_ids)))
    arr = (ctypes.c_uint32 * rank_num)(*rank_ids)
    _lib.check("HcomCreateGroup",
               _lib.hccl().HcomCreateGroup(name, rank_num, arr),
               "group '%s', rank_ids %s" % (group, list(rank_ids)))
    _world.group_added(group, rank_ids)


def destroy_group(group):
    """Destroy a group made with create_group (not the world group)."""
    name = check_group(group)
    if group == WORLD:
        raise ValueError("the world group '%s' cannot be destroyed" % WORLD)
    _world.ensure()
    _lib.check("HcomDestroyGroup", _lib.hccl().HcomDestroyGroup(name),
               "group '%s'" % group)
    _world.group_removed(group)
    from ..split import api as split_api
    split_api._forget(group)


def get_rank_size(group=WORLD):
    """Number of ranks in group."""
    name = check_group(group)
    _world.ensure()
    return _u32_call("HcomGetRankSize", name)


def get_local_rank_size(group=WORLD):
    """Number of ranks of group on this server."""
    name = check_group(group)
    _world.ensure()
    return _u32_call("HcomGetLocalRankSize", name)


def get_rank_id(group=WORLD):
    """This process's rank in group."""
    name = check_group(group)
    _world.ensure()
    return _u32_call("HcomGetRankId", name)


def get_local_rank_id(group=WORLD):
    """This process's index among group's ranks on this server."""
    name = check_group(group)
    _world.ensure()
    return _u32_call("HcomGetLocalRankId", name)


def get_world_rank_from_group_rank(group, group_rank_id):
    """The world rank of group rank group_rank_id."""
    name = check_group(group)
    _check_rank("group_rank_id", group_rank_id)
    _world.ensure()
    return _u32_call("HcomGetWorldRankFromGroupRank", name, group_rank_id)


def get_group_rank_from_world_rank(world_rank_id, group):
    """The rank in group of world rank world_rank_id (note the argument
    order, reversed compared with get_world_rank_from_group_rank)."""
    _check_rank("world_rank_id", world_rank_id)
    name = check_group(group)
    _world.ensure()
    return _u32_call("HcomGetGroupRankFromWorldRank", world_rank_id, name)
