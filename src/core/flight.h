/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_CORE_FLIGHT_H
#define OHC_CORE_FLIGHT_H

/*
 * Flight recorder: the last OHC_FLIGHT_N operations of a communicator,
 * with their state, the step they are in and, while one waits, the peer
 * it waits for. The executing thread writes an entry with plain stores
 * (a few per operation and per step); a dump may read it from any
 * thread at any time and may see an entry half updated, which it prints
 * as it finds it: this is diagnostics, not synchronization.
 */
#include <stdint.h>
#include <stdio.h>

#define OHC_FLIGHT_N 64

enum ohc_flight_state {
	OHC_FLIGHT_FREE = 0,
	OHC_FLIGHT_RUNNING,
	OHC_FLIGHT_DONE,
	OHC_FLIGHT_FAILED,
};

#define OHC_FLIGHT_NO_PEER UINT32_MAX

struct ohc_flight_op {
	uint64_t seq;	  /* the operation's sequence number */
	const char *what; /* operation name (static) */
	const char *algo; /* algorithm name (static), or NULL */
	uint64_t bytes;	  /* the operation's message bytes */
	uint64_t t_start; /* ohc_time_ns() */
	uint64_t t_end;	  /* 0 while running */
	uint32_t step;	  /* the step being run (or where it ended) */
	uint32_t nsteps;
	uint32_t wait_peer; /* peer waited for, or OHC_FLIGHT_NO_PEER */
	int32_t status;	    /* ohc_status_t once ended */
	int32_t state;	    /* enum ohc_flight_state */
};

struct ohc_flight {
	struct ohc_flight_op ops[OHC_FLIGHT_N];
	uint64_t next; /* entries written so far */
};

/* A new entry, running (executing thread). */
struct ohc_flight_op *ohc_flight_begin(struct ohc_flight *fr, uint64_t seq,
				       const char *what, const char *algo,
				       uint64_t bytes, uint32_t nsteps);
/* The entry's end (executing thread). */
void ohc_flight_end(struct ohc_flight_op *op, int32_t status);
/*
 * Write the record, oldest first, to out (or to the log at WARN when out
 * is NULL), each line prefixed with `who` (e.g. "rank 3, 'comm'").
 */
void ohc_flight_dump(const struct ohc_flight *fr, const char *who, FILE *out);

#endif
