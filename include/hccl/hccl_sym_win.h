/* SPDX-License-Identifier: Apache-2.0 */
#ifndef HCCL_HCCL_SYM_WIN_H
#define HCCL_HCCL_SYM_WIN_H

/*
 * Symmetric memory window access. Upstream this is a device-side call;
 * here it is host-callable: it returns the address at which peerRank's
 * copy of (window, offset) is mapped in this process, and fails with
 * HCCL_E_NOT_SUPPORT for a peer without a load/store mapping (another
 * node). Valid C11 and C++11.
 */
#include <stddef.h>
#include <stdint.h>

#include <hccl/hccl_types.h>
#include <acl/acl_rt.h>

#ifdef __cplusplus
extern "C" {
#endif

HCCL_API HcclResult HcclSymWinGetPeerPointer(HcclCommSymWindow winHandle,
					     size_t offset, uint32_t peerRank,
					     void **ptr);

#ifdef __cplusplus
}
#endif

#endif /* HCCL_HCCL_SYM_WIN_H */
