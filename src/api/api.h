/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_API_API_H
#define OHC_API_API_H

#include <hccl/hccl.h>

#include "util/compiler.h"
#include "util/log.h"
#include "util/status.h"

HcclResult ohc_status_to_hccl(ohc_status_t status);

#endif
