/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_API_API_HCOM_H
#define OHC_API_API_HCOM_H

#include <stdint.h>

#include "util/status.h"

#define OHC_HCOM_FUSION_MAX 8

/* The gradient-fusion strategy last set for a group (api_hcom.c). */
struct ohc_hcom_fusion {
	uint32_t nidx; /* 0: none set by index */
	uint32_t idx[OHC_HCOM_FUSION_MAX];
	uint32_t nsize; /* 0: none set by size */
	float size[OHC_HCOM_FUSION_MAX];
};

/*
 * Copy the strategy of group (as seen from the calling thread's device)
 * into *fusion_p. OHC_ERR_NOT_FOUND when nothing was ever set for group
 * (or the group is gone). Nothing queries it yet but tests.
 */
ohc_status_t ohc_hcom_grad_fusion(const char *group,
				  struct ohc_hcom_fusion *fusion_p);

#endif
