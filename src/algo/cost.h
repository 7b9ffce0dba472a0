/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_ALGO_COST_H
#define OHC_ALGO_COST_H

/*
 * The alpha-beta-gamma cost model (peers.md 2.1): its constants, every
 * one of them in one table (cost.c), and the helpers that price bytes
 * with them. Selection and the predictions (select.c), the schedule
 * simulator (src/sim) and tools/simulate all read that table.
 */
#include <stdint.h>

/* Transport classes, for the cost model. */
enum ohc_link_class {
	OHC_LINK_SELF = 0, /* threads of one process: direct copies */
	OHC_LINK_SHM = 1,  /* processes of one host */
	OHC_LINK_RDMA = 2, /* other hosts */
};

/*
 * Cost model of one link class (peers.md 2.1): a message of n bytes costs
 * alpha + n * beta, reducing n bytes costs n * gamma, copying n bytes
 * locally n * copy. Microseconds.
 */
struct ohc_cost_params {
	double alpha_us; /* per message */
	/*
	 * Of alpha, what the sender spends on each message (posting it); the
	 * rest is latency, which the messages of one step overlap: a step's
	 * k-th send starts (k-1) x send_us after its first (plus the bytes
	 * before it), and each arrives alpha after its start. 0: alpha_us
	 * (a sender's messages go one alpha apart). See ohc_cost_send_us.
	 */
	double send_us;
	double beta_us;	 /* per byte sent */
	double gamma_us; /* per byte reduced */
	double copy_us;	 /* per byte copied locally */
	/*
	 * Zero copy (shm): a message of zc_bytes or more out of the user's
	 * buffers (never scratch) is read by the receiver straight out of
	 * the sender's pages, one copy instead of the ring's two: zc_beta_us
	 * per byte instead of beta_us, and a receive-reduce of one is a
	 * single pass, max(zc_beta_us, gamma_us) per byte. 0: never.
	 * In an op of at most zc_hot_bytes (ohc_coll_bytes) it copies at
	 * zc_hot_beta_us instead: a rank's buffers then fit in its core's
	 * L2, where buffers used again and again (training steps,
	 * hccl_test's iterations) stay (ohc_cost_for_op; predictions and
	 * the simulation, not selection).
	 */
	uint64_t zc_bytes;
	double zc_beta_us;
	uint64_t zc_hot_bytes;
	double zc_hot_beta_us;
};

/* c as an op of bytes (ohc_coll_bytes) sees it: c itself or, for a
 * cache-resident op, tmp filled with the hot zero-copy cost. */
static inline const struct ohc_cost_params *
ohc_cost_for_op(const struct ohc_cost_params *c, uint64_t bytes,
		struct ohc_cost_params *tmp)
{
	if (!c->zc_hot_bytes || bytes > c->zc_hot_bytes)
		return c;
	*tmp = *c;
	tmp->zc_beta_us = c->zc_hot_beta_us;
	return tmp;
}

/* What a sender spends per message (alpha where send_us is unset). */
static inline double ohc_cost_send_us(const struct ohc_cost_params *c)
{
	return c->send_us > 0 && c->send_us < c->alpha_us ? c->send_us
							  : c->alpha_us;
}

/*
 * One step in which a rank posts n-1 messages, bytes/n each (the linear
 * algorithms: AlltoAll, AllGather, Broadcast, Scatter): they leave
 * send_us apart and their latencies overlap, a + (n-2) send_us + (n-1)/n
 * bytes beta.
 */
static inline double ohc_cost_fan_out(const struct ohc_cost_params *c,
				      uint64_t bytes, uint32_t n)
{
	return c->alpha_us + (n > 2 ? n - 2 : 0) * ohc_cost_send_us(c) +
	       (double)(n - 1) / n * (double)bytes * c->beta_us;
}

/*
 * An AllGather's own block, copied into the output first (ohc_allgather_
 * own; Bruck's into its scratch; in place it is already there, which the
 * cost functions, given sizes only, cannot tell): bytes/n at copy_us. 2
 * ranks, 4 MiB: half the time (bench/sim_validate.sh, 2026-12-08: 307 us
 * measured, 149 priced without it).
 */
static inline double ohc_cost_own_block(const struct ohc_cost_params *c,
					uint64_t bytes, uint32_t n)
{
	return n ? (double)bytes / n * c->copy_us : 0;
}

/* The same, each message reduced where it arrives (linear AllReduce and
 * ReduceScatter): + (n-1)/n bytes gamma. */
static inline double ohc_cost_fan_out_reduce(const struct ohc_cost_params *c,
					     uint64_t bytes, uint32_t n)
{
	return ohc_cost_fan_out(c, bytes, n) +
	       (double)(n - 1) / n * (double)bytes * c->gamma_us;
}

/* 1 if a message of len bytes out of the user's buffers goes zero-copy. */
static inline int ohc_cost_zc(const struct ohc_cost_params *c, double len)
{
	return c->zc_bytes && len >= (double)c->zc_bytes;
}

/*
 * Time of the bytes of a message of len bytes (no alpha): user: it is
 * sent out of the user's buffers (zero copy may apply); reduce: the
 * receiver reduces it (gamma included).
 */
static inline double ohc_cost_bytes(const struct ohc_cost_params *c, double len,
				    int user, int reduce)
{
	if (user && ohc_cost_zc(c, len))
		return len * (reduce && c->gamma_us > c->zc_beta_us
				      ? c->gamma_us
				      : c->zc_beta_us);
	return len * (c->beta_us + (reduce ? c->gamma_us : 0));
}

/*
 * ohc_cost_bytes of steps messages that halve: len / 2, len / 4, ...,
 * len / 2^steps (recursive halving's sends; recursive doubling's in the
 * other order).
 */
static inline double ohc_cost_halving(const struct ohc_cost_params *c,
				      double len, unsigned steps, int user,
				      int reduce)
{
	double t = 0;

	for (unsigned k = 0; k < steps; k++) {
		len /= 2;
		t += ohc_cost_bytes(c, len, user, reduce);
	}
	return t;
}

/*
 * The fold of a non-power-of-two n into pof2 ranks (ohc_fold_newrank):
 * the vector of len bytes in and reduced, then the result back out;
 * 2(a + nb) + ng, 0 when n is a power of two.
 */
static inline double ohc_cost_fold(const struct ohc_cost_params *c, double len,
				   uint32_t pof2, uint32_t n)
{
	if (pof2 == n)
		return 0;
	return 2 * (c->alpha_us + ohc_cost_bytes(c, len, 1, 0)) +
	       len * c->gamma_us;
}

/* Default cost constants of a link class; never NULL. */
const struct ohc_cost_params *ohc_cost_params_get(enum ohc_link_class link);
const char *ohc_link_class_name(enum ohc_link_class link);

/*
 * A network of the table: constants of a link class under a name. The
 * library's defaults are the networks "self", "shm" and "rxe" (RDMA);
 * the others are networks tools/simulate models.
 */
struct ohc_cost_net {
	const char *name;
	const char *desc;
	enum ohc_link_class link; /* the class the library would see */
	/*
	 * The device's work runs on the sending rank's CPU (rxe: the whole
	 * WRITE inside ibv_post_send): ranks of one host share its bandwidth
	 * only as far as they share CPUs, not the device.
	 */
	int cpu_device;
	struct ohc_cost_params c;
};

/* The whole table, the library's defaults included; *n_p entries. */
const struct ohc_cost_net *ohc_cost_nets(unsigned *n_p);

/*
 * Ranks that take turns on a host's CPUs (tools/simulate --cores), s
 * per CPU: a message waits wake_us x s x s, a stream pays a turn
 * (wake_us x s) per turn_kb. Only the simulator prices this; selection keeps
 * the flat constants and prices a candidate at no less than its work divided
 * among the CPUs (select.c, ohc_algo.work).
 */
struct ohc_cost_share {
	double wake_us;
	double turn_kb;
};

extern const struct ohc_cost_share ohc_cost_share;

#endif
