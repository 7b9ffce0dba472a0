/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_TRANSPORT_TRANSPORT_H
#define OHC_TRANSPORT_TRANSPORT_H

/*
 * The transports built in (self, shm, verbs), in preference order. Their
 * interface is core/tp.h.
 */
#include "core/tp.h"

/* Registry: the transports built in, in preference order. */
const struct ohc_transport_ops *ohc_transport_get(const char *name);
unsigned ohc_transport_count(void);
const struct ohc_transport_ops *ohc_transport_at(unsigned i);

#endif
