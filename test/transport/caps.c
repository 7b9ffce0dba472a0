/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every registered transport: its ops table is well formed and the
 * capabilities it advertises match what is wired (and what it does).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>

#include "transport/harness.h"
#include "transport/transport.h"
#include "util/time.h"

/* transport.c: 1 if the registry filled this slot with its stub. */
int ohc_transport_slot_is_stub(const struct ohc_transport_ops *ops,
			       const char *slot);

#define REACH_CAPS                                                             \
	(OHC_TP_CAP_SAME_PROCESS | OHC_TP_CAP_SAME_HOST |                      \
	 OHC_TP_CAP_REMOTE_HOST)

Test(caps, ops_tables_are_complete)
{
	unsigned n = ohc_transport_count();

	cr_assert_gt(n, 0);
	cr_expect_null(ohc_transport_at(n), "past the end");
	for (unsigned i = 0; i < n; i++) {
		const struct ohc_transport_ops *ops = ohc_transport_at(i);

		cr_assert_not_null(ops);
		cr_assert_not_null(ops->name);
		cr_expect_gt(strlen(ops->name), 0, "transport %u has a name",
			     i);
		cr_expect_eq(ops->size, sizeof(struct ohc_transport_ops),
			     "%s: size", ops->name);
		cr_expect_eq(ohc_transport_get(ops->name), ops,
			     "%s: found by name (and names are unique)",
			     ops->name);
		cr_expect_geq(ops->iface_size, sizeof(struct ohc_iface),
			      "%s: iface_size", ops->name);
		cr_expect_geq(ops->ep_size, sizeof(struct ohc_ep),
			      "%s: ep_size", ops->name);
		cr_expect(ops->caps & REACH_CAPS, "%s reaches someone",
			  ops->name);
		cr_expect_eq(ops->caps & ~(REACH_CAPS | OHC_TP_CAP_WAIT |
					   OHC_TP_CAP_WAIT_SET |
					   OHC_TP_CAP_NIC),
			     0, "%s: unknown capability bits", ops->name);
		/* a NIC reaches other hosts; the same process is reached
		 * by no NIC (its addresses are ours) */
		if (ops->caps & OHC_TP_CAP_NIC)
			cr_expect(ops->caps & OHC_TP_CAP_REMOTE_HOST,
				  "%s: NIC reaches other hosts", ops->name);
		if (ops->caps & OHC_TP_CAP_SAME_PROCESS)
			cr_expect_not(ops->caps & OHC_TP_CAP_NIC,
				      "%s: same process is not a NIC",
				      ops->name);
		cr_expect_not(ohc_transport_slot_is_stub(ops, "ep_send"),
			      "%s: real ep_send", ops->name);
		cr_expect_not(ohc_transport_slot_is_stub(ops, "ep_recv"),
			      "%s: real ep_recv", ops->name);
		cr_expect_eq(!!(ops->caps & OHC_TP_CAP_WAIT),
			     !ohc_transport_slot_is_stub(ops, "iface_wait"),
			     "%s: WAIT iff iface_wait is wired", ops->name);
		cr_expect_eq(!!(ops->caps & OHC_TP_CAP_WAIT),
			     !ohc_transport_slot_is_stub(ops, "iface_wake"),
			     "%s: WAIT iff iface_wake is wired", ops->name);
		cr_expect_eq(!!(ops->caps & OHC_TP_CAP_WAIT_SET),
			     ops->iface_wait_arm && ops->iface_wait_disarm,
			     "%s: WAIT_SET iff the wait set's arm and disarm "
			     "are wired",
			     ops->name);
		if (ops->caps & OHC_TP_CAP_WAIT_SET)
			cr_expect(ops->caps & OHC_TP_CAP_WAIT,
				  "%s: WAIT_SET sleeps for real", ops->name);
		/* Every slot is callable: the registry filled the gaps. */
		cr_expect(ops->iface_open && ops->iface_close &&
				  ops->iface_address && ops->iface_reachable &&
				  ops->ep_init && ops->iface_connect &&
				  ops->ep_fini && ops->iface_progress &&
				  ops->iface_wait && ops->iface_wake &&
				  ops->ep_check && ops->ep_cancel,
			  "%s: no NULL slot", ops->name);
	}
	cr_expect_null(ohc_transport_get("no-such-transport"));
}

/*
 * WAIT means it: an idle iface_wait of a WAIT transport sleeps out its
 * timeout without burning CPU, and a wake before the wait cuts it short.
 * Transports that need hardware to open are skipped if open fails.
 */
Test(caps, wait_capability_really_sleeps)
{
	struct ohc_transport_params p = {
		.rank = 0,
		.nranks = 1,
		.hostid = "caps-test-host",
		.ring_bytes = 64 << 10,
		.spin = 10,
	};

	cr_assert_eq(getrandom(&p.session, sizeof(p.session), 0),
		     sizeof(p.session));
	for (unsigned i = 0; i < ohc_transport_count(); i++) {
		const struct ohc_transport_ops *ops = ohc_transport_at(i);
		struct ohc_iface *iface;
		uint64_t t0;
		double cpu0;

		if (!(ops->caps & OHC_TP_CAP_WAIT))
			continue;
		iface = calloc(1, ops->iface_size);
		iface->ops = ops;
		if (ops->iface_open(iface, &p) != OHC_OK) {
			cr_log_info("%s: cannot open here, skipped", ops->name);
			free(iface);
			continue;
		}
		t0 = ohc_time_ns();
		cpu0 = tp_cpu_seconds(RUSAGE_SELF);
		cr_expect_eq(ops->iface_wait(iface, 300), OHC_OK);
		cr_expect_geq(ohc_time_ns() - t0, 250000000ull,
			      "%s: iface_wait slept", ops->name);
		cr_expect_lt(tp_cpu_seconds(RUSAGE_SELF) - cpu0, 0.1,
			     "%s: without spinning", ops->name);
		ops->iface_wake(iface);
		t0 = ohc_time_ns();
		cr_expect_eq(ops->iface_wait(iface, 5000), OHC_OK);
		cr_expect_lt(ohc_time_ns() - t0, 200000000ull,
			     "%s: a wake before the wait counts", ops->name);
		ops->iface_close(iface);
		free(iface);
	}
}
