/* SPDX-License-Identifier: Apache-2.0 */
#ifndef ACL_ACL_H
#define ACL_ACL_H

/*
 * Umbrella header of the acl* host runtime (libascendcl.so, also reachable
 * as libacl_rt.so). Declares nothing itself.
 */
#include "acl_rt.h"

#endif /* ACL_ACL_H */
