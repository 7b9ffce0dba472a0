/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cost model's constants, in one table: the library's defaults per
 * link class (selection, predictions, the simulator's "shm" and "rxe")
 * and the other networks tools/simulate models. Microseconds.
 */
#include <pthread.h>

#include "algo/cost.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/cpus.h"

/*
 * The library's defaults. SELF: threads of one process, one copy per
 * message (~10 GB/s), a handoff of a fraction of a microsecond. SHM:
 * processes of one host, fitted to measurements (bench/sim_validate.sh
 * over 2, 4 and 8 ranks, 1 KiB..4 MiB, on the 2-core CI machines): about
 * 1 us per message with spinning peers, and the ring's pipelined copies
 * near 20 GB/s (the fragments stay in cache). RDMA: sized for soft-RoCE
 * (rxe), the CI fabric: tens of microseconds per message, ~1 GB/s; real
 * RoCE is far better. Reductions and local copies run on the host
 * whatever the link, at the speed measured with shm (~20 GB/s of
 * output): HOST_GAMMA_US and HOST_COPY_US, on every network.
 *
 * SHM zero copy: aclrtMalloc buffers of OPENHCCL_MALLOC_SHARED_KB and more
 * are memfds, and a message of OPENHCCL_SHM_ZC_KB and more out of one is
 * read by the receiver straight out of the sender's pages (shm_tx.c
 * ohc_shm_tx_implicit_zc): one copy, fitted at 2 ranks
 * (bench/sim_validate.sh, 1-16 MiB: Broadcast's one message 22-110 us
 * per 1-4 MiB, AllGather's 512 KiB-2 MiB at 37-45 GB/s per rank pair) to
 * ~40 GB/s; a receive-reduce out of the mapping is the reduction's one
 * pass. The threshold is the larger of the two variables (a message
 * below the allocation threshold may come from a private buffer), read
 * from the environment as the library reads it; scratch never goes
 * zero-copy.
 *
 * In an op whose buffers fit in a core's L2 (at most half of it per
 * rank's data: ohc_l2_cache_bytes, capped at 1 MiB), the zero copy runs at ~100
 * GB/s (ohc_cost_for_op): a 2-rank Broadcast of 256 KiB, one such message,
 * took 3.5-3.9 us in every run of bench/sim_validate.sh (the 40 GB/s
 * price: 8.6 us), while 1-4 MiB copy at 0.021-0.027 ns/B.
 *
 * The simulator's RoCE networks: ~2-3 us per message on hardware RC,
 * line rate at ~96 % (research/perf_reliability.md: 12 / 24 / 48 GB/s
 * per 100 / 200 / 400 Gb/s NIC); reductions and copies at the host's
 * memory speed, as the defaults.
 *
 * Of alpha, a sender spends send_us per message where it posts into
 * memory (self, shm): writing a small ring record is about 350
 * instructions (callgrind: shm_ep_send and the executor's post of an
 * 8-byte send, 0.1-0.15 us here); the rest of alpha is the handoff and
 * the receiver's noticing, which the messages of one step overlap. With
 * it, a step of n-1 messages (linear AlltoAll and Scatter) costs a
 * + (n-2) send_us, not (n-1) a: measured on the 2-core machines, linear
 * AlltoAll beat Bruck and pairwise at 4, 8 and 16 ranks (bench/README).
 * Over RDMA a message is posted to the NIC and waited for: send_us unset.
 *
 * CPU sharing: with s ranks per CPU a message waits wake_us x s x s (a
 * rank's turn comes after the other s - 1 ranks' of its CPU), and a
 * sender runs 512 KiB ahead into the ring before it waits for the
 * receiver's turn. bench/sim_validate.sh calibrates the wake per run
 * (HcclBarrier's steps on shm, 1.2 us on a 2-core host in a slow hour;
 * compare.sh -R's exchange steps on rxe); the default, 10 us, prices
 * 4 ranks on 2 CPUs as the fitted 20 us x s of before did.
 *
 * `hccl_simulate --constants` prints all of it, for the scripts
 * (bench/analysis.py), which keep no copies.
 */
#define HOST_GAMMA_US 5.0e-5
#define HOST_COPY_US 5.0e-5
#define SHM_ZC_BETA_US 2.5e-5
#define SHM_ZC_HOT_BETA_US 1.0e-5
#define SHM_ZC_HOT_MAX ((uint64_t)1 << 20)

/* Entries after the defaults, which sit at their link class's index. */
enum { NET_ROCE100 = OHC_LINK_RDMA + 1, NET_ROCE200, NET_ROCE400, NETS };

/* The zero-copy constants of "shm" are set once, from the environment. */
static struct ohc_cost_net nets[NETS] = {
	[OHC_LINK_SELF] = {"self",
			   "threads of one process (library defaults)",
			   OHC_LINK_SELF,
			   0,
			   {.alpha_us = 0.5,
			    .send_us = 0.1,
			    .beta_us = 1.0e-4,
			    .gamma_us = HOST_GAMMA_US,
			    .copy_us = HOST_COPY_US}},
	[OHC_LINK_SHM] = {"shm",
			  "processes of one host (library defaults)",
			  OHC_LINK_SHM,
			  0,
			  {.alpha_us = 1.0,
			   .send_us = 0.2,
			   .beta_us = 5.0e-5,
			   .gamma_us = HOST_GAMMA_US,
			   .copy_us = HOST_COPY_US}},
	[OHC_LINK_RDMA] = {"rxe",
			   "Soft-RoCE (library RDMA defaults)",
			   OHC_LINK_RDMA,
			   1,
			   {.alpha_us = 30.0,
			    .beta_us = 1.0e-3,
			    .gamma_us = HOST_GAMMA_US,
			    .copy_us = HOST_COPY_US}},
	[NET_ROCE100] = {"roce100",
			 "100 Gb/s RoCE",
			 OHC_LINK_RDMA,
			 0,
			 {.alpha_us = 2.5,
			  .beta_us = 1.0 / 12000.0,
			  .gamma_us = HOST_GAMMA_US,
			  .copy_us = HOST_COPY_US}},
	[NET_ROCE200] = {"roce200",
			 "200 Gb/s RoCE",
			 OHC_LINK_RDMA,
			 0,
			 {.alpha_us = 2.0,
			  .beta_us = 1.0 / 24000.0,
			  .gamma_us = HOST_GAMMA_US,
			  .copy_us = HOST_COPY_US}},
	[NET_ROCE400] = {"roce400",
			 "400 Gb/s RoCE",
			 OHC_LINK_RDMA,
			 0,
			 {.alpha_us = 2.0,
			  .beta_us = 1.0 / 48000.0,
			  .gamma_us = HOST_GAMMA_US,
			  .copy_us = HOST_COPY_US}},
};

const struct ohc_cost_share ohc_cost_share = {.wake_us = 10.0,
					      .turn_kb = 512.0};

static pthread_once_t zc_once = PTHREAD_ONCE_INIT;

static void zc_init(void)
{
	const struct ohc_env *e = ohc_env();
	int64_t kb = e->shm_zc_kb > e->malloc_shared_kb ? e->shm_zc_kb
							: e->malloc_shared_kb;
	struct ohc_cost_params *shm = &nets[OHC_LINK_SHM].c;

	size_t l2 = ohc_l2_cache_bytes();
	uint64_t hot = l2 ? (uint64_t)l2 / 2 : SHM_ZC_HOT_MAX / 2;

	if (e->shm_zc_kb > 0 && e->malloc_shared_kb > 0) {
		shm->zc_bytes = (uint64_t)kb << 10;
		shm->zc_beta_us = SHM_ZC_BETA_US;
		shm->zc_hot_bytes = OHC_MIN(hot, SHM_ZC_HOT_MAX);
		shm->zc_hot_beta_us = SHM_ZC_HOT_BETA_US;
	}
}

const struct ohc_cost_params *ohc_cost_params_get(enum ohc_link_class link)
{
	pthread_once(&zc_once, zc_init);
	if ((unsigned)link > OHC_LINK_RDMA)
		link = OHC_LINK_RDMA;
	return &nets[link].c;
}

const struct ohc_cost_net *ohc_cost_nets(unsigned *n_p)
{
	pthread_once(&zc_once, zc_init);
	*n_p = NETS;
	return nets;
}

const char *ohc_link_class_name(enum ohc_link_class link)
{
	switch (link) {
	case OHC_LINK_SELF:
		return "self";
	case OHC_LINK_SHM:
		return "shm";
	case OHC_LINK_RDMA:
		return "rdma";
	}
	return "unknown";
}
