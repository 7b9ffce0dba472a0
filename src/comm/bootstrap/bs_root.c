/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The root listener: one thread per root info (or per rank-table
 * communicator, run by rank 0) that collects exactly one communicator's
 * ranks, checks each against the session token, nranks, rank range,
 * duplicates and the host whitelist, and sends the table of listen
 * addresses and host ids to the first ranks, and to the others word that
 * it comes down the table tree (bs_internal.h). It ends after that, after the
 * ranks' connect timeout (logging who never arrived), after idle_ms without any
 * rank, or when stopped. A registry owns every listener: finished ones are
 * joined by ohc_root_listeners_reap (called by create/init/destroy), the
 * rest at process exit; fork() children forget their parent's listeners.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "comm/bootstrap/bs_internal.h"
#include "util/compiler.h"
#include "util/config.h"
#include "util/file.h"
#include "util/log.h"
#include "util/time.h"

#define ROOT_SEND_MS 10000 /* time to hand out the tables */
#define ROOT_MIN_TIMEOUT_MS 100
#define ROOT_MAX_TIMEOUT_MS (7ull * 24 * 3600 * 1000)

struct root_rank {
	int fd; /* -1: not joined */
	struct bs_addr from;
	uint8_t entry[BS_ENTRY_BYTES];
	struct ohc_frame_tx tx;
};

struct bs_root {
	struct ohc_list link; /* registry, under reg_lock */
	uint64_t id;
	pthread_t thread;
	int lfd;      /* owned by the thread once started */
	int wake_fd;  /* eventfd; closed only when freed */
	int stop;     /* atomic */
	int finished; /* atomic: the thread is about to return */
	int orphan;   /* inherited through fork(): no thread behind it */
	int joined;   /* atomic: ranks held, for ohc_root_info_joined */
	struct bs_auth auth; /* the job's raw token and key */
	uint64_t token;	     /* the join token ranks must present */
	uint64_t idle_deadline;
	char where[BS_ADDR_STRLEN];
	struct bs_addr *white; /* HCCL_WHITELIST_FILE hosts when enforced */
	unsigned nwhite;
	int white_on;

	/* Private to the thread. */
	uint32_t nranks; /* 0 until the first JOIN in root-info mode */
	struct root_rank *ranks;
	uint32_t njoined;
	uint64_t first_join_ns;
	uint64_t deadline;
	struct bs_gate gate; /* connections yet to present a JOIN */
	uint8_t *table;
	size_t table_len;
	struct pollfd *pfd;
	uint32_t *pwho; /* per pollfd: WHO_WAKE, WHO_LISTEN, WHO_GATE + i
			   (gate entry i), WHO_RANK + r */
	size_t pcap;
};

#define WHO_WAKE 0u
#define WHO_LISTEN 1u
#define WHO_GATE 2u
#define WHO_RANK 0x80000000u

/* ---------------------------------------------------------------------- */
/* Whitelist                                                              */

static ohc_status_t whitelist_load(struct bs_root *r)
{
	const struct ohc_env *env = ohc_env();
	const char *path = env->whitelist_file;
	json_error_t jerr;
	json_t *doc, *arr;
	ohc_status_t status = OHC_OK;
	char why[256], *text;
	size_t n, len;

	if (env->whitelist_disable)
		return OHC_OK;
	if (!path[0]) {
		OHC_ERROR(OHC_SS_BOOT,
			  "HCCL_WHITELIST_DISABLE=0 needs "
			  "HCCL_WHITELIST_FILE (JSON {\"host_ip\": "
			  "[...]})");
		return OHC_ERR_INVALID;
	}
	status = ohc_file_read(path, 16u << 20, &text, &len, why, sizeof(why));
	if (status < 0) {
		OHC_ERROR(OHC_SS_BOOT, "cannot read HCCL_WHITELIST_FILE %s: %s",
			  path, why);
		return status;
	}
	doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (!doc) {
		OHC_ERROR(OHC_SS_BOOT, "HCCL_WHITELIST_FILE %s:%d:%d: %s", path,
			  jerr.line, jerr.column, jerr.text);
		return OHC_ERR_INVALID;
	}
	arr = json_is_object(doc) ? json_object_get(doc, "host_ip") : NULL;
	if (!json_is_array(arr)) {
		OHC_ERROR(OHC_SS_BOOT,
			  "HCCL_WHITELIST_FILE %s: expected an object with an "
			  "array \"host_ip\" of IP address strings",
			  path);
		status = OHC_ERR_INVALID;
		goto out;
	}
	n = json_array_size(arr);
	r->white = calloc(n ? n : 1, sizeof(*r->white));
	if (!r->white) {
		status = OHC_ERR_NO_MEMORY;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_array_get(arr, i);

		if (!json_is_string(v) ||
		    bs_addr_from_ip(json_string_value(v), 0, &r->white[i]) !=
			    OHC_OK) {
			OHC_ERROR(OHC_SS_BOOT,
				  "HCCL_WHITELIST_FILE %s: host_ip[%zu] is not "
				  "an IPv4 or IPv6 address string",
				  path, i);
			status = OHC_ERR_INVALID;
			goto out;
		}
	}
	r->nwhite = (unsigned)n;
	r->white_on = 1;
out:
	json_decref(doc);
	return status;
}

static int whitelist_allows(const struct bs_root *r, const struct bs_addr *a)
{
	for (unsigned i = 0; i < r->nwhite; i++)
		if (bs_addr_same_ip(&r->white[i], a))
			return 1;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The listener thread                                                    */

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		int f = *fd;

		*fd = -1;
		close(f);
	}
}

static ohc_status_t pollset_reserve(struct bs_root *r, size_t cap)
{
	struct pollfd *pfd;
	uint32_t *who;

	if (cap <= r->pcap)
		return OHC_OK;
	pfd = realloc(r->pfd, cap * sizeof(*pfd));
	if (!pfd)
		return OHC_ERR_NO_MEMORY;
	r->pfd = pfd;
	who = realloc(r->pwho, cap * sizeof(*who));
	if (!who)
		return OHC_ERR_NO_MEMORY;
	r->pwho = who;
	r->pcap = cap;
	return OHC_OK;
}

static ohc_status_t ranks_alloc(struct bs_root *r, uint32_t nranks)
{
	r->ranks = calloc(nranks, sizeof(*r->ranks));
	if (!r->ranks || pollset_reserve(r, 2 + (size_t)nranks) != OHC_OK) {
		free(r->ranks);
		r->ranks = NULL;
		return OHC_ERR_NO_MEMORY;
	}
	for (uint32_t i = 0; i < nranks; i++)
		r->ranks[i].fd = -1;
	r->nranks = nranks;
	return OHC_OK;
}

/* Tell a rank at once that its JOIN is accepted, with the proof that this
 * root knows the job's token. One small write into an empty socket
 * buffer; if it fails the rank's connection is broken anyway. */
static void send_welcome(struct bs_root *r, uint32_t rank)
{
	struct ohc_frame_hdr h = {.type = BS_T_WELCOME,
				  .len = BS_WELCOME_BYTES};
	uint8_t proof[BS_WELCOME_BYTES];
	struct ohc_frame_tx tx;
	int err;

	ohc_be_put64(proof, bs_auth_welcome(&r->auth, rank));
	ohc_frame_tx_init(&tx, &bs_proto, &h, proof);
	(void)ohc_frame_tx_write(r->ranks[rank].fd, &tx, &err);
}

static void handle_join(struct bs_root *r, unsigned i,
			const struct ohc_frame_hdr *h, const uint8_t *pl)
{
	const struct bs_addr *p_from = bs_gate_from(&r->gate, i);
	char who[64], why[BS_TEXT_MAX], ip[BS_ADDR_STRLEN];
	uint64_t tmo, rank_deadline;
	uint32_t nranks, rank;
	struct bs_join j;

	if (bs_join_decode(h, pl, &j) != OHC_OK) {
		bs_gate_refuse(&r->gate, i, OHC_ERR_INVALID, NULL,
			       "malformed join request");
		return;
	}
	nranks = j.nranks;
	rank = j.rank;
	tmo = j.timeout_ms;

	why[0] = '\0';
	if (r->white_on && !whitelist_allows(r, p_from)) {
		bs_addr_ip_str(p_from, ip, sizeof(ip));
		snprintf(why, sizeof(why),
			 "host %s is not in HCCL_WHITELIST_FILE", ip);
		snprintf(who, sizeof(who), "rank %u", rank);
		bs_gate_refuse(&r->gate, i, OHC_ERR_TCP_CONNECT, who, why);
		return;
	}
	if (j.token != r->token) {
		snprintf(why, sizeof(why),
			 "wrong session token (a different root info, rank "
			 "table or OPENHCCL_BOOTSTRAP_SECRET)");
		snprintf(who, sizeof(who), "rank %u of %u", rank, nranks);
		/* UNAVAILABLE: not this job; a rank-table rank that tried
		 * the wrong port moves on to the next. */
		bs_gate_refuse(&r->gate, i, OHC_ERR_UNAVAILABLE, who, why);
		return;
	}
	if (bs_join_check(&j, r->nranks, why, sizeof(why)) == OHC_OK &&
	    r->ranks && r->ranks[rank].fd >= 0)
		snprintf(why, sizeof(why),
			 "duplicate rank %u (already joined from %s)", rank,
			 bs_addr_str(&r->ranks[rank].from, ip, sizeof(ip)));
	if (why[0]) {
		snprintf(who, sizeof(who), "rank %u of %u", rank, nranks);
		bs_gate_refuse(&r->gate, i, OHC_ERR_INVALID, who, why);
		return;
	}
	if (!r->ranks && ranks_alloc(r, nranks) != OHC_OK) {
		OHC_ERROR(OHC_SS_BOOT,
			  "bootstrap root %s: out of memory for %u ranks",
			  r->where, nranks);
		bs_gate_refuse(&r->gate, i, OHC_ERR_NO_MEMORY, NULL,
			       "root out of memory");
		return;
	}
	r->ranks[rank].fd = bs_gate_take(&r->gate, i, &r->ranks[rank].from);
	memcpy(r->ranks[rank].entry, j.entry, BS_ENTRY_BYTES);
	send_welcome(r, rank);

	if (tmo < ROOT_MIN_TIMEOUT_MS)
		tmo = ROOT_MIN_TIMEOUT_MS;
	if (tmo > ROOT_MAX_TIMEOUT_MS)
		tmo = ROOT_MAX_TIMEOUT_MS;
	rank_deadline = ohc_time_ns() + tmo * 1000000ull;
	if (r->njoined == 0) {
		r->deadline = rank_deadline;
		r->first_join_ns = ohc_time_ns();
	} else if (rank_deadline < r->deadline) {
		r->deadline = rank_deadline;
	}
	r->njoined++;
	__atomic_store_n(&r->joined, (int)r->njoined, __ATOMIC_RELEASE);
	OHC_DEBUG(OHC_SS_BOOT, "bootstrap root %s: rank %u/%u joined from %s",
		  r->where, rank, nranks,
		  bs_addr_str(&r->ranks[rank].from, ip, sizeof(ip)));
}

static void gate_read(struct bs_root *r, unsigned i)
{
	struct ohc_frame_hdr h;
	uint8_t *pl = NULL;

	if (bs_gate_read(&r->gate, i, &h, &pl) != OHC_OK)
		return;
	handle_join(r, i, &h, pl);
	free(pl);
}

/* New connections are read at once: a rank's JOIN is usually there. */
static void accept_all(struct bs_root *r)
{
	unsigned first = bs_gate_accept(&r->gate, r->lfd);

	for (unsigned i = first; i < r->gate.n; i++)
		gate_read(r, i);
}

/* "rank 2 of 4" / "ranks 2, 5-7 of 8", cut short when long. */
static void missing_text(const struct bs_root *r, char *buf, size_t len)
{
	uint32_t count = 0, i = 0, b;
	size_t off;
	int first = 1;

	for (uint32_t k = 0; k < r->nranks; k++)
		count += r->ranks[k].fd < 0;
	off = (size_t)snprintf(buf, len, "%s ", count == 1 ? "rank" : "ranks");
	while (i < r->nranks) {
		if (r->ranks[i].fd >= 0) {
			i++;
			continue;
		}
		for (b = i; b + 1 < r->nranks && r->ranks[b + 1].fd < 0; b++)
			;
		if (off + 64 > len) {
			off += (size_t)snprintf(buf + off, len - off,
						", ... (%u in all)", count);
			break;
		}
		if (!first)
			off += (size_t)snprintf(buf + off, len - off, ", ");
		first = 0;
		if (b == i)
			off += (size_t)snprintf(buf + off, len - off, "%u", i);
		else if (b == i + 1)
			off += (size_t)snprintf(buf + off, len - off, "%u, %u",
						i, b);
		else
			off += (size_t)snprintf(buf + off, len - off, "%u-%u",
						i, b);
		i = b + 1;
	}
	snprintf(buf + off, len - off, " of %u never arrived", r->nranks);
}

static void expire(struct bs_root *r)
{
	char text[BS_TEXT_MAX];
	struct ohc_frame_hdr h = {.type = BS_T_EXPIRED};

	if (!r->nranks) {
		OHC_INFO(OHC_SS_BOOT,
			 "bootstrap root %s: no rank arrived; listener closed",
			 r->where);
		return;
	}
	missing_text(r, text, sizeof(text));
	OHC_ERROR(OHC_SS_BOOT,
		  "bootstrap root %s: %s (waited %" PRIu64
		  " ms after the first rank)",
		  r->where, text, bs_ms_since(r->first_join_ns));
	h.len = strlen(text);
	for (uint32_t i = 0; i < r->nranks; i++) {
		struct ohc_frame_tx tx;
		int err;

		if (r->ranks[i].fd < 0)
			continue;
		ohc_frame_tx_init(&tx, &bs_proto, &h, text);
		(void)ohc_frame_tx_write(r->ranks[i].fd, &tx, &err);
		close_fd(&r->ranks[i].fd);
	}
}

static ohc_status_t table_build(struct bs_root *r)
{
	struct ohc_frame_hdr h = {.type = BS_T_TABLE},
			     via = {.type = BS_T_TABLE_VIA};

	if (bs_table_encode(r->ranks[0].entry, sizeof(r->ranks[0]), r->nranks,
			    &r->table, &r->table_len) != OHC_OK) {
		OHC_ERROR(OHC_SS_BOOT,
			  "bootstrap root %s: out of memory for the rank table",
			  r->where);
		return OHC_ERR_NO_MEMORY;
	}
	h.len = r->table_len;
	for (uint32_t i = 0; i < r->nranks; i++) {
		/* the rest get it down the table tree (bs_internal.h) */
		if (bs_table_parent(r->nranks, i) == BS_NO_RANK)
			ohc_frame_tx_init(&r->ranks[i].tx, &bs_proto, &h,
					  r->table);
		else
			ohc_frame_tx_init(&r->ranks[i].tx, &bs_proto, &via,
					  NULL);
	}
	return OHC_OK;
}

static void send_step(struct bs_root *r, uint32_t i)
{
	char from[BS_ADDR_STRLEN];
	ohc_status_t status;
	int err = 0;

	status = ohc_frame_tx_write(r->ranks[i].fd, &r->ranks[i].tx, &err);
	if (status == OHC_INPROGRESS)
		return;
	if (status != OHC_OK)
		OHC_WARN(OHC_SS_BOOT,
			 "bootstrap root %s: cannot send the rank table to "
			 "rank %u at %s: %s",
			 r->where, i,
			 bs_addr_str(&r->ranks[i].from, from, sizeof(from)),
			 strerror(err));
	close_fd(&r->ranks[i].fd);
}

/* A joined rank's connection became readable before the table: it left
 * (or broke protocol). Its slot is free again. */
static void rank_left(struct bs_root *r, uint32_t i)
{
	char from[BS_ADDR_STRLEN];

	OHC_WARN(OHC_SS_BOOT,
		 "bootstrap root %s: rank %u (%s) left before all %u ranks "
		 "arrived",
		 r->where, i,
		 bs_addr_str(&r->ranks[i].from, from, sizeof(from)), r->nranks);
	close_fd(&r->ranks[i].fd);
	r->njoined--;
	__atomic_store_n(&r->joined, (int)r->njoined, __ATOMIC_RELEASE);
}

/* 0 when out of memory for the pollset. */
static size_t build_pollset(struct bs_root *r, int sending)
{
	size_t n = 0;

	bs_gate_tidy(&r->gate);
	if (pollset_reserve(r, 2 + (size_t)r->gate.n + r->nranks) != OHC_OK)
		return 0;
	r->pfd[n] = (struct pollfd){.fd = r->wake_fd, .events = POLLIN};
	r->pwho[n++] = WHO_WAKE;
	if (!sending && r->lfd >= 0 && bs_gate_listening(&r->gate)) {
		r->pfd[n] = (struct pollfd){.fd = r->lfd, .events = POLLIN};
		r->pwho[n++] = WHO_LISTEN;
	}
	for (unsigned i = 0; i < r->gate.n; i++) {
		r->pfd[n] = (struct pollfd){.fd = r->gate.conns[i].fd,
					    .events = POLLIN};
		r->pwho[n++] = WHO_GATE + i;
	}
	for (uint32_t i = 0; i < r->nranks; i++) {
		if (r->ranks[i].fd < 0)
			continue;
		r->pfd[n] =
			(struct pollfd){.fd = r->ranks[i].fd,
					.events = sending ? POLLOUT : POLLIN};
		r->pwho[n++] = WHO_RANK + i;
	}
	return n;
}

static void *root_main(void *arg)
{
	struct bs_root *r = arg;
	int sending = 0;
	uint64_t send_deadline = 0;

	r->deadline = r->idle_deadline;
	for (;;) {
		size_t n;
		int rc, left = 0;

		if (__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE))
			break;
		if (!sending && r->nranks && r->njoined == r->nranks) {
			if (table_build(r) != OHC_OK)
				break;
			sending = 1;
			send_deadline = ohc_deadline_after_ms(ROOT_SEND_MS);
			bs_gate_fini(&r->gate);
			close_fd(&r->lfd); /* the port is free again */
			OHC_DEBUG(OHC_SS_BOOT,
				  "bootstrap root %s: all %u ranks arrived",
				  r->where, r->nranks);
		}
		if (sending) {
			for (uint32_t i = 0; i < r->nranks; i++)
				left += r->ranks[i].fd >= 0;
			if (!left)
				break;
			if (ohc_deadline_passed(send_deadline)) {
				OHC_WARN(OHC_SS_BOOT,
					 "bootstrap root %s: %d ranks did not "
					 "take their rank table",
					 r->where, left);
				break;
			}
		} else if (ohc_deadline_passed(r->deadline)) {
			expire(r);
			break;
		}
		n = build_pollset(r, sending);
		if (!n) {
			OHC_ERROR(OHC_SS_BOOT,
				  "bootstrap root %s: out of memory for the "
				  "poll set",
				  r->where);
			break;
		}
		rc = ohc_hs_poll(r->pfd, n,
				 sending ? send_deadline : r->deadline, 1000);
		if (rc < 0) {
			OHC_ERROR(OHC_SS_BOOT, "bootstrap root %s: poll: %s",
				  r->where, strerror(errno));
			break;
		}
		/* Ranks first, then the gate, then new connections (gate
		 * indices stay valid until the next tidy). */
		for (size_t k = n; k-- > 0;) {
			uint32_t who = r->pwho[k];
			short ev = r->pfd[k].revents;

			if (!ev)
				continue;
			if (who == WHO_WAKE) {
				uint64_t v;

				(void)!read(r->wake_fd, &v, sizeof(v));
			} else if (who == WHO_LISTEN) {
				accept_all(r);
			} else if (who < WHO_RANK) {
				gate_read(r, who - WHO_GATE);
			} else if (sending) {
				send_step(r, who - WHO_RANK);
			} else {
				rank_left(r, who - WHO_RANK);
			}
		}
	}

	bs_gate_fini(&r->gate);
	for (uint32_t i = 0; i < r->nranks; i++)
		close_fd(&r->ranks[i].fd);
	close_fd(&r->lfd);
	__atomic_store_n(&r->joined, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&r->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Registry                                                               */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ohc_list reg_list = OHC_LIST_INIT(reg_list);
static uint64_t reg_next_id = 1;
static pthread_once_t reg_once = PTHREAD_ONCE_INIT;

static void root_free(struct bs_root *r)
{
	close_fd(&r->lfd);
	close_fd(&r->wake_fd);
	free(r->ranks);
	free(r->table);
	free(r->pfd);
	free(r->pwho);
	free(r->white);
	free(r);
}

static void root_stop_join_free(struct bs_root *r)
{
	uint64_t one = 1;

	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
	(void)!write(r->wake_fd, &one, sizeof(one));
	pthread_join(r->thread, NULL);
	root_free(r);
}

static void reg_prepare(void)
{
	pthread_mutex_lock(&reg_lock);
}

static void reg_parent(void)
{
	pthread_mutex_unlock(&reg_lock);
}

/* The threads did not survive fork(): keep the records (reachable, never
 * joined) and drop our copies of their listening sockets. */
static void reg_child(void)
{
	struct ohc_list *pos;

	ohc_list_for_each(pos, &reg_list)
	{
		struct bs_root *r = ohc_container_of(pos, struct bs_root, link);

		if (r->orphan)
			continue;
		r->orphan = 1;
		close_fd(&r->lfd);
		close_fd(&r->wake_fd);
	}
	pthread_mutex_unlock(&reg_lock);
}

static void reg_init(void)
{
	pthread_atfork(reg_prepare, reg_parent, reg_child);
}

/* Process exit (or unload): stop and join every listener still running. */
__attribute__((destructor)) static void reg_fini(void)
{
	struct ohc_list done = OHC_LIST_INIT(done), *pos, *next;

	if (pthread_mutex_trylock(&reg_lock) != 0)
		return; /* someone is inside; the process is going anyway */
	for (pos = reg_list.next; pos != &reg_list; pos = next) {
		struct bs_root *r = ohc_container_of(pos, struct bs_root, link);

		next = pos->next;
		if (r->orphan)
			continue; /* no thread behind it; stays listed */
		ohc_list_del(&r->link);
		ohc_list_add_tail(&done, &r->link);
	}
	pthread_mutex_unlock(&reg_lock);
	while (!ohc_list_empty(&done)) {
		struct bs_root *r = ohc_list_first(&done, struct bs_root, link);

		ohc_list_del(&r->link);
		root_stop_join_free(r);
	}
}

unsigned ohc_root_listeners_reap(void)
{
	struct ohc_list done = OHC_LIST_INIT(done), *pos, *next;
	unsigned running = 0;

	pthread_mutex_lock(&reg_lock);
	for (pos = reg_list.next; pos != &reg_list; pos = next) {
		struct bs_root *r = ohc_container_of(pos, struct bs_root, link);

		next = pos->next;
		if (r->orphan)
			continue;
		if (__atomic_load_n(&r->finished, __ATOMIC_ACQUIRE)) {
			ohc_list_del(&r->link);
			ohc_list_add_tail(&done, &r->link);
		} else {
			running++;
		}
	}
	pthread_mutex_unlock(&reg_lock);
	while (!ohc_list_empty(&done)) {
		struct bs_root *r = ohc_list_first(&done, struct bs_root, link);

		ohc_list_del(&r->link);
		pthread_join(r->thread, NULL); /* it is returning */
		root_free(r);
	}
	return running;
}

void bs_root_cancel(uint64_t id)
{
	struct bs_root *found = NULL;
	struct ohc_list *pos;

	pthread_mutex_lock(&reg_lock);
	ohc_list_for_each(pos, &reg_list)
	{
		struct bs_root *r = ohc_container_of(pos, struct bs_root, link);

		if (r->id == id && !r->orphan) {
			found = r;
			break;
		}
	}
	if (found)
		ohc_list_del(&found->link);
	pthread_mutex_unlock(&reg_lock);
	if (found)
		root_stop_join_free(found);
}

int ohc_root_info_joined(const void *root_info)
{
	uint64_t raw = ohc_root_info_session(root_info);
	struct ohc_list *pos;
	int joined = -1;

	if (!raw)
		return -1;
	pthread_mutex_lock(&reg_lock);
	ohc_list_for_each(pos, &reg_list)
	{
		struct bs_root *r = ohc_container_of(pos, struct bs_root, link);

		if (r->auth.raw == raw && !r->orphan &&
		    !__atomic_load_n(&r->finished, __ATOMIC_ACQUIRE))
			joined = __atomic_load_n(&r->joined, __ATOMIC_ACQUIRE);
	}
	pthread_mutex_unlock(&reg_lock);
	return joined;
}

ohc_status_t bs_root_start(const struct bs_addr *bind_addr,
			   const struct bs_ports *ports,
			   const struct bs_auth *auth, uint32_t nranks,
			   uint64_t idle_ms, struct bs_addr *bound_p,
			   uint64_t *id_p)
{
	struct bs_addr addr = *bind_addr;
	sigset_t all, old;
	struct bs_root *r;
	ohc_status_t status;
	int rc;

	pthread_once(&reg_once, reg_init);
	r = calloc(1, sizeof(*r));
	if (!r)
		return OHC_ERR_NO_MEMORY;
	r->lfd = -1;
	r->wake_fd = -1;
	r->auth = *auth;
	r->token = bs_auth_join(auth);
	ohc_list_init(&r->link);
	status = whitelist_load(r);
	if (status < 0)
		goto err_free;
	status = nranks ? ranks_alloc(r, nranks) : pollset_reserve(r, 2);
	if (status < 0)
		goto err_free;
	status = bs_listen(&addr, ports, &r->lfd);
	if (status < 0)
		goto err_free;
	r->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (r->wake_fd < 0) {
		OHC_ERROR(OHC_SS_BOOT, "eventfd failed: %s", strerror(errno));
		status = OHC_ERR_SYSCALL;
		goto err_free;
	}
	bs_addr_str(&addr, r->where, sizeof(r->where));
	{
		char gate_where[sizeof(r->gate.where)];

		snprintf(gate_where, sizeof(gate_where), "bootstrap root %s",
			 r->where);
		bs_gate_init(&r->gate, gate_where, BS_JOIN_BYTES);
	}
	r->idle_deadline = ohc_deadline_after_ms(idle_ms);

	/* The listener takes no signals: they belong to the user's threads. */
	sigfillset(&all);
	pthread_mutex_lock(&reg_lock);
	r->id = reg_next_id++;
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&r->thread, NULL, root_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0)
		ohc_list_add_tail(&reg_list, &r->link);
	pthread_mutex_unlock(&reg_lock);
	if (rc != 0) {
		OHC_ERROR(OHC_SS_BOOT,
			  "cannot start the bootstrap root listener thread: %s",
			  strerror(rc));
		status = OHC_ERR_SYSCALL;
		goto err_free;
	}
	OHC_DEBUG(OHC_SS_BOOT, "bootstrap root listening on %s", r->where);
	*bound_p = addr;
	*id_p = r->id;
	return OHC_OK;

err_free:
	root_free(r);
	return status;
}
