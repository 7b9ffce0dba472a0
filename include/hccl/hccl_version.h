/* SPDX-License-Identifier: Apache-2.0 */
#ifndef HCCL_HCCL_VERSION_H
#define HCCL_HCCL_VERSION_H

/*
 * OpenHCCL's own version. HCCL's headers carry no version macro or query
 * (HCCL_COMM_CONFIG_VERSION versions a struct, not the library), and
 * ACL_MAJOR/MINOR/PATCH_VERSION in acl/acl_rt.h (with aclrtGetVersion)
 * name the ACL API level these headers mirror; the macros below name
 * this implementation. hccl_types.h includes this header, so any HCCL
 * program can test `#ifdef OPENHCCL_VERSION` to know it builds against
 * OpenHCCL. This file is the one place the version is written: CMake's
 * project version is read from it.
 *
 * OPENHCCL_VERSION is one number for #if comparisons:
 * major * 10000 + minor * 100 + patch (0.1.0 -> 100).
 */
#define OPENHCCL_VERSION_MAJOR 0
#define OPENHCCL_VERSION_MINOR 1
#define OPENHCCL_VERSION_PATCH 0
#define OPENHCCL_VERSION_STRING "0.1.0"

#define OPENHCCL_VERSION                                                       \
	(OPENHCCL_VERSION_MAJOR * 10000 + OPENHCCL_VERSION_MINOR * 100 +       \
	 OPENHCCL_VERSION_PATCH)

#endif /* HCCL_HCCL_VERSION_H */
