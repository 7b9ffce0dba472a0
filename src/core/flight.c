/* SPDX-License-Identifier: Apache-2.0 */
#include <inttypes.h>
#include <string.h>

#include "core/flight.h"
#include "util/log.h"
#include "util/status.h"
#include "util/time.h"

struct ohc_flight_op *ohc_flight_begin(struct ohc_flight *fr, uint64_t seq,
				       const char *what, const char *algo,
				       uint64_t bytes, uint32_t nsteps)
{
	uint64_t n = __atomic_load_n(&fr->next, __ATOMIC_RELAXED);
	struct ohc_flight_op *op = &fr->ops[n % OHC_FLIGHT_N];

	op->state = OHC_FLIGHT_FREE; /* a dump skips it while it changes */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	op->seq = seq;
	op->what = what;
	op->algo = algo;
	op->bytes = bytes;
	op->t_start = ohc_time_coarse_ns();
	op->t_end = 0;
	op->step = 0;
	op->nsteps = nsteps;
	op->wait_peer = OHC_FLIGHT_NO_PEER;
	op->status = 0;
	__atomic_store_n(&op->state, OHC_FLIGHT_RUNNING, __ATOMIC_RELEASE);
	__atomic_store_n(&fr->next, n + 1, __ATOMIC_RELEASE);
	return op;
}

void ohc_flight_end(struct ohc_flight_op *op, int32_t status)
{
	op->t_end = ohc_time_coarse_ns();
	op->status = status;
	__atomic_store_n(&op->state,
			 status < 0 ? OHC_FLIGHT_FAILED : OHC_FLIGHT_DONE,
			 __ATOMIC_RELEASE);
}

static void line(FILE *out, const char *text)
{
	if (out)
		fprintf(out, "%s\n", text);
	else
		OHC_WARN(OHC_SS_COLL, "%s", text);
}

void ohc_flight_dump(const struct ohc_flight *fr, const char *who, FILE *out)
{
	uint64_t next = __atomic_load_n(&fr->next, __ATOMIC_ACQUIRE);
	uint64_t first = next > OHC_FLIGHT_N ? next - OHC_FLIGHT_N : 0;
	uint64_t now = ohc_time_coarse_ns();
	char text[512];

	snprintf(text, sizeof(text),
		 "%s: flight recorder, the last %" PRIu64 " of %" PRIu64
		 " operations, oldest first:",
		 who, next - first, next);
	line(out, text);
	for (uint64_t i = first; i < next; i++) {
		const struct ohc_flight_op *op = &fr->ops[i % OHC_FLIGHT_N];
		int state = __atomic_load_n(&op->state, __ATOMIC_ACQUIRE);
		char wait[48] = "";
		int len;

		if (state == OHC_FLIGHT_FREE)
			continue;
		if (op->wait_peer != OHC_FLIGHT_NO_PEER)
			snprintf(wait, sizeof(wait), ", waiting for rank %u",
				 op->wait_peer);
		len = snprintf(text, sizeof(text),
			       "%s:   #%" PRIu64 " %s %" PRIu64 " B%s%s: ", who,
			       op->seq, op->what ? op->what : "?", op->bytes,
			       op->algo ? " " : "", op->algo ? op->algo : "");
		if (state == OHC_FLIGHT_RUNNING)
			snprintf(text + len, sizeof(text) - len,
				 "RUNNING for %.0f ms, in step %u of %u%s",
				 (double)(now - op->t_start) / 1e6,
				 op->step + 1, op->nsteps, wait);
		else if (state == OHC_FLIGHT_FAILED)
			snprintf(text + len, sizeof(text) - len,
				 "FAILED (%s) after %.0f ms in step %u of "
				 "%u%s",
				 ohc_status_str((ohc_status_t)op->status),
				 (double)(op->t_end - op->t_start) / 1e6,
				 op->step + 1, op->nsteps, wait);
		else
			snprintf(text + len, sizeof(text) - len,
				 "done in %.0f ms (%u steps)",
				 (double)(op->t_end - op->t_start) / 1e6,
				 op->nsteps);
		line(out, text);
	}
}
