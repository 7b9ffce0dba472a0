/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OHC_COMM_BOOTSTRAP_BOOTSTRAP_H
#define OHC_COMM_BOOTSTRAP_BOOTSTRAP_H

/*
 * The out-of-band bootstrap: how the ranks of a communicator find each
 * other and exchange small control data (transport address blobs, session
 * tokens, barriers) before and besides the data path. Two implementations
 * behind one ops table: TCP sockets between processes and hosts (root info
 * or rank table), and shared memory between the threads of one process
 * (HcclCommInitAll). Transports never see a bootstrap; comm/ moves their
 * blobs.
 *
 * Threading: one struct ohc_bootstrap is used by one thread at a time
 * (ohc_bootstrap_abort excepted). A bootstrap and its sub-groups
 * (ohc_bootstrap_split) may be used concurrently from different threads.
 * Every blocking call is bounded by the bootstrap's timeout and ends early
 * with OHC_ERR_CANCELED after ohc_bootstrap_abort.
 *
 * Failures: a collective (allgather, barrier, bcast) that fails because a
 * peer died, timed out or sent something inconsistent poisons the whole
 * bootstrap (and its sub-groups): every later operation fails at once with
 * the same error, and the peers notice within a few round trips. Point to
 * point operations fail alone.
 */
#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

#define OHC_ROOT_INFO_BYTES 4108
/* Host identity strings, NUL included. */
#define OHC_HOSTID_MAX 256
/* Largest communicator a socket bootstrap serves. */
#define OHC_BOOTSTRAP_MAX_RANKS 65536u
/* Largest single message (allgather slot, bcast, send/recv). */
#define OHC_BOOTSTRAP_MAX_MSG ((size_t)256 << 20)

struct ohc_bootstrap; /* opaque */

/*
 * HcclGetRootInfo: pick the listen address (HCCL_IF_IP, else the
 * HCCL_SOCKET_IFNAME rules, else the first interface that is up: ordinary
 * ones by name, then docker*, then loopback; family HCCL_SOCKET_FAMILY),
 * bind a port (HCCL_HOST_SOCKET_PORT_RANGE, else HCCL_IF_BASE_PORT..+31,
 * else an ephemeral one), start a listener thread that serves exactly one
 * communicator's rendezvous (it ends after that, or after
 * HCCL_CONNECT_TIMEOUT without any rank), and fill root_info (plain,
 * position-independent bytes): magic, format version, a random 64-bit
 * session token, the root address and port, and the identifier
 * "<ip>_<port>_<token hex>" (the default communicator name).
 */
ohc_status_t ohc_root_info_create(void *root_info /* OHC_ROOT_INFO_BYTES */);

/*
 * Validate a root info blob: magic, version, NUL-terminated strings, a
 * parsable address of a known family, a non-zero port. Garbled or
 * truncated blobs give OHC_ERR_INVALID (OHC_ERR_NULL for NULL) with one
 * log line saying what is wrong.
 */
ohc_status_t ohc_root_info_check(const void *root_info);

/* The identifier inside a valid blob (NULL if the blob is not valid). */
const char *ohc_root_info_name(const void *root_info);

/* The session token of a valid blob (0 if the blob is not valid). */
uint64_t ohc_root_info_session(const void *root_info);

/*
 * Collective: join the communicator described by root_info as `rank` of
 * `nranks`. Each rank opens its own listening socket, registers with the
 * root (token, nranks, rank, its address, its host id); the root refuses
 * and logs anything inconsistent (wrong token, nranks mismatch, duplicate
 * rank, rank out of range, a host not in HCCL_WHITELIST_FILE) and, once all
 * nranks arrived, sends everyone the table of addresses and host ids. Then
 * each rank connects to rank+1 and accepts rank-1 (connections
 * authenticated with the token); other pairs connect on first use.
 *
 * Bounded by timeout_ms (0: HCCL_CONNECT_TIMEOUT): on expiry the root logs
 * which ranks never arrived and every waiting rank returns OHC_ERR_TIMEOUT
 * (waiting a little longer than timeout_ms to hear the root's verdict). A
 * refused rank gets OHC_ERR_INVALID (OHC_ERR_TCP_CONNECT for the
 * whitelist) at once. The timeout of later operations is timeout_ms too.
 */
ohc_status_t ohc_bootstrap_init_root(const void *root_info, uint32_t nranks,
				     uint32_t rank, uint64_t timeout_ms,
				     struct ohc_bootstrap **bs_p);

/*
 * Rank-table mode: no root info. Rank 0 runs the root listener itself at
 * root_ip on the first free port of root_port .. root_port + nports - 1
 * (the wildcard address, with a warning, if root_ip is not local), and
 * every rank joins with a token derived from `token` (a hash of the rank
 * table) and the optional shared secret, as above; the other ranks try
 * the ports in turn until one answers with this job's proof. Ranks that
 * start before rank 0 retry until timeout_ms. A single rank needs no root
 * and gets an in-process bootstrap.
 */
#define OHC_BOOTSTRAP_PORTS_MAX 32
ohc_status_t ohc_bootstrap_init_addr(const char *root_ip, uint16_t root_port,
				     unsigned nports, uint64_t token,
				     uint32_t nranks, uint32_t rank,
				     uint64_t timeout_ms,
				     struct ohc_bootstrap **bs_p);

/*
 * In-process bootstrap for HcclCommInitAll: fills bss[0..nranks) with
 * connected bootstraps, one per thread rank, sharing memory. The timeout
 * of their operations is HCCL_CONNECT_TIMEOUT until changed.
 */
ohc_status_t ohc_bootstrap_inproc_create(uint32_t nranks,
					 struct ohc_bootstrap **bss);

uint32_t ohc_bootstrap_rank(const struct ohc_bootstrap *bs);
uint32_t ohc_bootstrap_nranks(const struct ohc_bootstrap *bs);

/*
 * Host identity of `rank` (boot id + hostname, or OPENHCCL_HOSTID): equal
 * strings mean the same host. Never NULL for rank < nranks; valid until
 * the bootstrap is destroyed.
 */
const char *ohc_bootstrap_hostid(const struct ohc_bootstrap *bs, uint32_t rank);

/* Timeout of later operations; 0 means wait without limit. */
void ohc_bootstrap_set_timeout(struct ohc_bootstrap *bs, uint64_t timeout_ms);

/*
 * Collectives, blocking, bounded by the bootstrap's timeout. A peer whose
 * connection ends gives OHC_ERR_REMOTE naming the rank; expiry gives
 * OHC_ERR_TIMEOUT naming the rank waited for.
 */
/* buf holds nranks slots of bytes_per_rank; the caller's slot is filled. */
ohc_status_t ohc_bootstrap_allgather(struct ohc_bootstrap *bs, void *buf,
				     size_t bytes_per_rank);
ohc_status_t ohc_bootstrap_barrier(struct ohc_bootstrap *bs);
ohc_status_t ohc_bootstrap_bcast(struct ohc_bootstrap *bs, void *buf,
				 size_t bytes, uint32_t root);

/*
 * Tagged point to point. Messages from one peer with one tag arrive in
 * order; recv must name the exact size (a different size is
 * OHC_ERR_INVALID and the message is dropped). send returns once the data
 * is handed to the kernel (or copied), so matching sends and receives may
 * be issued in any order by the two sides. peer may be the caller. A
 * connection this process cannot open (out of descriptors) gives
 * OHC_ERR_SYSCALL and may be retried; a peer that is gone, OHC_ERR_REMOTE.
 */
ohc_status_t ohc_bootstrap_send(struct ohc_bootstrap *bs, uint32_t peer,
				uint32_t tag, const void *buf, size_t bytes);
ohc_status_t ohc_bootstrap_recv(struct ohc_bootstrap *bs, uint32_t peer,
				uint32_t tag, void *buf, size_t bytes);

/*
 * Local (no communication): a bootstrap over the parent ranks
 * ranks[0..nranks) (in any order, each once, including the caller's),
 * whose rank i is parent rank ranks[i]. Members pass the same list and id;
 * groups with different ids never see each other's messages. It reuses the
 * parent's connections (or in-process state) and keeps them alive: parent
 * and sub-groups may be destroyed in any order. Timeout: the parent's.
 */
ohc_status_t ohc_bootstrap_split(struct ohc_bootstrap *parent, uint32_t nranks,
				 const uint32_t *ranks, uint64_t id,
				 struct ohc_bootstrap **sub_p);

/* Closes sockets, joins threads, frees; never blocks long. NULL is a no-op. */
void ohc_bootstrap_destroy(struct ohc_bootstrap *bs);

/*
 * Make every blocked or later operation of bs (and of bootstraps sharing
 * its connections) fail fast with OHC_ERR_CANCELED. Thread-safe; bs stays
 * valid until destroyed.
 */
void ohc_bootstrap_abort(struct ohc_bootstrap *bs);

/*
 * Host identity of this process: OPENHCCL_HOSTID if set, else
 * "<hostname>:<boot id>". OHC_ERR_INVALID if len is too small.
 */
ohc_status_t ohc_hostid_get(char *buf, size_t len);

/*
 * Diagnostics and tests. Number of ranks the root listener of this
 * root_info (running in this process) holds, or -1 if no such listener is
 * running here (finished, never started, or another process).
 */
int ohc_root_info_joined(const void *root_info);
/* Join root listeners that finished; returns how many still run. */
unsigned ohc_root_listeners_reap(void);

#endif
