/* SPDX-License-Identifier: Apache-2.0 */
#include <pthread.h>
#include <string.h>

#include "transport/transport.h"
#include "util/compiler.h"
#include "util/log.h"

extern const struct ohc_transport_ops ohc_self_ops;
extern const struct ohc_transport_ops ohc_shm_ops;
extern const struct ohc_transport_ops ohc_verbs_ops;

/* Built-in transports, most local first. */
static const struct ohc_transport_ops *const builtin[] = {
	&ohc_self_ops,
	&ohc_shm_ops,
	&ohc_verbs_ops,
};

static struct ohc_transport_ops registry[OHC_ARRAY_SIZE(builtin)];
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;

/* Stubs for slots a transport leaves unset: the core never NULL-checks. */
static ohc_status_t stub_iface_address(struct ohc_iface *iface, void *blob,
				       size_t *len_p)
{
	(void)iface;
	(void)blob;
	*len_p = 0;
	return OHC_OK;
}

static int stub_iface_reachable(struct ohc_iface *iface, const void *blob,
				size_t len)
{
	(void)iface;
	(void)blob;
	(void)len;
	return 0;
}

static ohc_status_t stub_ep_init(struct ohc_iface *iface, struct ohc_ep *ep,
				 uint32_t peer, const void *blob, size_t len)
{
	(void)iface;
	(void)ep;
	(void)peer;
	(void)blob;
	(void)len;
	return OHC_ERR_UNSUPPORTED;
}

static ohc_status_t stub_iface_connect(struct ohc_iface *iface,
				       struct ohc_ep **eps, unsigned n,
				       uint64_t deadline)
{
	(void)iface;
	(void)eps;
	(void)deadline;
	return n ? OHC_ERR_UNSUPPORTED : OHC_OK;
}

static void stub_ep_fini(struct ohc_ep *ep)
{
	(void)ep;
}

static void stub_ep_quiesce(struct ohc_ep *ep)
{
	(void)ep;
}

static ohc_status_t stub_ep_post(struct ohc_ep *ep, struct ohc_req *req)
{
	(void)ep;
	(void)req;
	return OHC_ERR_UNSUPPORTED;
}

static unsigned stub_iface_progress(struct ohc_iface *iface)
{
	(void)iface;
	return 0;
}

static ohc_status_t stub_iface_wait(struct ohc_iface *iface, int timeout_ms)
{
	(void)iface;
	(void)timeout_ms;
	return OHC_OK; /* no sleep: caller keeps polling */
}

static void stub_iface_wake(struct ohc_iface *iface)
{
	(void)iface;
}

static ohc_status_t stub_ep_check(struct ohc_ep *ep)
{
	(void)ep;
	return OHC_OK;
}

static void stub_ep_cancel(struct ohc_ep *ep, ohc_status_t status)
{
	(void)ep;
	(void)status;
}

static void stub_iface_abort(struct ohc_iface *iface, ohc_status_t reason)
{
	(void)iface;
	(void)reason;
}

static void stub_iface_close(struct ohc_iface *iface)
{
	(void)iface;
}

static ohc_status_t stub_iface_open(struct ohc_iface *iface,
				    const struct ohc_transport_params *p)
{
	(void)iface;
	(void)p;
	return OHC_ERR_UNSUPPORTED;
}

static ohc_status_t stub_mem_reg(struct ohc_iface *iface, void *addr,
				 size_t len, const struct ohc_mem_desc *desc,
				 void **handle_p)
{
	(void)iface;
	(void)addr;
	(void)len;
	(void)desc;
	*handle_p = NULL;
	return OHC_OK;
}

static void stub_mem_dereg(struct ohc_iface *iface, void *handle)
{
	(void)iface;
	(void)handle;
}

static ohc_status_t stub_ep_mem_map(struct ohc_ep *ep,
				    const struct ohc_mem_desc *desc,
				    void **addr_p)
{
	(void)ep;
	(void)desc;
	(void)addr_p;
	return OHC_ERR_UNSUPPORTED;
}

static void stub_ep_mem_unmap(struct ohc_ep *ep, void *addr, size_t len)
{
	(void)ep;
	(void)addr;
	(void)len;
}

#define FILL(ops, slot, stub)                                                  \
	do {                                                                   \
		if (!(ops)->slot)                                              \
			(ops)->slot = stub;                                    \
	} while (0)

static void registry_init(void)
{
	for (size_t i = 0; i < OHC_ARRAY_SIZE(builtin); i++) {
		struct ohc_transport_ops *ops = &registry[i];

		*ops = *builtin[i];
		FILL(ops, iface_open, stub_iface_open);
		FILL(ops, iface_close, stub_iface_close);
		FILL(ops, iface_address, stub_iface_address);
		FILL(ops, iface_reachable, stub_iface_reachable);
		FILL(ops, ep_init, stub_ep_init);
		FILL(ops, iface_connect, stub_iface_connect);
		FILL(ops, ep_quiesce, stub_ep_quiesce);
		FILL(ops, ep_fini, stub_ep_fini);
		FILL(ops, ep_send, stub_ep_post);
		FILL(ops, ep_recv, stub_ep_post);
		FILL(ops, iface_progress, stub_iface_progress);
		FILL(ops, iface_wait, stub_iface_wait);
		FILL(ops, iface_wake, stub_iface_wake);
		FILL(ops, ep_check, stub_ep_check);
		FILL(ops, ep_cancel, stub_ep_cancel);
		FILL(ops, iface_abort, stub_iface_abort);
		FILL(ops, mem_reg, stub_mem_reg);
		FILL(ops, mem_dereg, stub_mem_dereg);
		FILL(ops, ep_mem_map, stub_ep_mem_map);
		FILL(ops, ep_mem_unmap, stub_ep_mem_unmap);
	}
}

unsigned ohc_transport_count(void)
{
	return OHC_ARRAY_SIZE(builtin);
}

const struct ohc_transport_ops *ohc_transport_at(unsigned i)
{
	pthread_once(&registry_once, registry_init);
	return i < OHC_ARRAY_SIZE(builtin) ? &registry[i] : NULL;
}

const struct ohc_transport_ops *ohc_transport_get(const char *name)
{
	for (unsigned i = 0; i < ohc_transport_count(); i++) {
		const struct ohc_transport_ops *ops = ohc_transport_at(i);

		if (!strcmp(ops->name, name))
			return ops;
	}
	return NULL;
}

/* For the capability test: 1 if slot is the registry's stub. */
int ohc_transport_slot_is_stub(const struct ohc_transport_ops *ops,
			       const char *slot);
int ohc_transport_slot_is_stub(const struct ohc_transport_ops *ops,
			       const char *slot)
{
	if (!strcmp(slot, "iface_wait"))
		return ops->iface_wait == stub_iface_wait;
	if (!strcmp(slot, "iface_wake"))
		return ops->iface_wake == stub_iface_wake;
	if (!strcmp(slot, "ep_send"))
		return ops->ep_send == stub_ep_post;
	if (!strcmp(slot, "ep_recv"))
		return ops->ep_recv == stub_ep_post;
	if (!strcmp(slot, "iface_abort"))
		return ops->iface_abort == stub_iface_abort;
	return 0;
}
