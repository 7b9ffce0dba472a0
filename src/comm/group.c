/* SPDX-License-Identifier: Apache-2.0 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "util/log.h"

/*
 * Group calls. State is per thread, as in HCCL: the depth nests and only
 * the outermost end launches. Held operations keep their order. Send and
 * Recv of one (communicator, stream) become one batch send/recv, whose
 * schedule posts every pair concurrently; collectives launch one after
 * the other in issue order (they are independent by contract).
 */
struct group_call {
	ohc_group_fn run;
	ohc_group_drop_fn drop;
	void *arg;
	int parallel;
	ohc_status_t status;
	pthread_t thread;
	int started;
	struct group_call *next;
};

struct group_state {
	int depth;
	struct ohc_op *head, *tail;
	struct group_call *calls, **calls_tail; /* deferred management */
	ohc_status_t error; /* first failure while adding */
};

static _Thread_local struct group_state group;

int ohc_group_depth(void)
{
	return group.depth;
}

void ohc_group_start(void)
{
	group.depth++;
}

ohc_status_t ohc_group_add(struct ohc_op *op, void *stream)
{
	op->group_stream = stream;
	op->group_next = NULL;
	if (group.tail)
		group.tail->group_next = op;
	else
		group.head = op;
	group.tail = op;
	return OHC_OK;
}

ohc_status_t ohc_group_defer(ohc_group_fn run, ohc_group_drop_fn drop,
			     void *arg, int parallel)
{
	struct group_call *c = calloc(1, sizeof(*c));

	if (!c) {
		OHC_ERROR(OHC_SS_API, "group: out of memory deferring a call");
		return OHC_ERR_NO_MEMORY;
	}
	c->run = run;
	c->drop = drop;
	c->arg = arg;
	c->parallel = parallel;
	if (!group.calls_tail)
		group.calls_tail = &group.calls;
	*group.calls_tail = c;
	group.calls_tail = &c->next;
	return OHC_OK;
}

static void *call_thread(void *p)
{
	struct group_call *c = p;

	c->status = c->run(c->arg);
	return NULL;
}

/*
 * Run the deferred calls in issue order; consecutive parallel ones (the
 * collective communicator inits of several ranks driven by this thread)
 * run at the same time, each on a thread of its own, since each waits
 * for the others. Returns the first failure; every call runs and is
 * dropped either way.
 */
static ohc_status_t run_calls(struct group_call *list)
{
	ohc_status_t status = OHC_OK;
	struct group_call *c, *batch, *next;
	int rc;

	for (c = list; c;) {
		if (!c->parallel) {
			c->status = c->run(c->arg);
			c = c->next;
			continue;
		}
		batch = c;
		for (; c && c->parallel; c = c->next) {
			rc = pthread_create(&c->thread, NULL, call_thread, c);
			if (rc) {
				OHC_ERROR(OHC_SS_API,
					  "group end: cannot start a thread "
					  "for a deferred call: %s",
					  strerror(rc));
				c->status = OHC_ERR_NO_MEMORY;
				continue;
			}
			c->started = 1;
		}
		for (; batch != c; batch = batch->next)
			if (batch->started)
				pthread_join(batch->thread, NULL);
	}
	for (c = list; c; c = next) {
		next = c->next;
		if (c->status < 0 && status == OHC_OK)
			status = c->status;
		if (c->drop)
			c->drop(c->arg);
		free(c);
	}
	return status;
}

static void drop_calls(struct group_call *c)
{
	while (c) {
		struct group_call *next = c->next;

		if (c->drop)
			c->drop(c->arg);
		free(c);
		c = next;
	}
}

static int is_p2p(const struct ohc_op *op)
{
	return op->args.op == OHC_COLL_SEND || op->args.op == OHC_COLL_RECV;
}

static void free_list(struct ohc_op *op)
{
	while (op) {
		struct ohc_op *next = op->group_next;

		ohc_op_free(op);
		op = next;
	}
}

/* Merge the p2p ops of (comm, stream) that start at first into a batch. */
static ohc_status_t launch_p2p_batch(struct ohc_op **list_p)
{
	struct ohc_op *first = *list_p, *op, **link;
	struct ohc_comm *comm = first->comm;
	void *stream = first->group_stream;
	struct ohc_batch_item *items;
	struct ohc_coll_args args = {.op = OHC_COLL_BATCH_SEND_RECV};
	struct ohc_op *batch;
	uint32_t n = 0;

	for (op = first; op; op = op->group_next)
		if (op->comm == comm && op->group_stream == stream)
			n++;
	items = calloc(n, sizeof(*items));
	if (!items)
		return OHC_ERR_NO_MEMORY;
	n = 0;
	for (link = list_p; (op = *link);) {
		if (op->comm != comm || op->group_stream != stream) {
			link = &op->group_next;
			continue;
		}
		items[n].kind = op->args.op == OHC_COLL_SEND ? OHC_BATCH_SEND
							     : OHC_BATCH_RECV;
		items[n].dtype = op->args.dtype;
		items[n].buf = op->args.op == OHC_COLL_SEND
				       ? (void *)op->args.sbuf
				       : op->args.rbuf;
		items[n].count = op->args.count;
		items[n].esize = op->args.esize;
		items[n].peer = op->args.peer;
		n++;
		*link = op->group_next;
		ohc_op_free(op);
	}
	args.items = items;
	args.nitems = n;
	args.dtype = items[0].dtype;
	batch = ohc_op_alloc(comm, &args);
	free(items);
	if (!batch)
		return OHC_ERR_NO_MEMORY;
	return ohc_op_launch(batch, stream);
}

ohc_status_t ohc_group_end(void)
{
	struct group_call *calls;
	struct ohc_op *list;
	ohc_status_t status = OHC_OK, st;
	int p2p = 0, other = 0, batch = 0;

	if (group.depth == 0) {
		OHC_ERROR(OHC_SS_API, "HcclGroupEnd without HcclGroupStart");
		return OHC_ERR_UNSUPPORTED;
	}
	if (--group.depth > 0)
		return OHC_OK;
	list = group.head;
	group.head = group.tail = NULL;
	calls = group.calls;
	group.calls = NULL;
	group.calls_tail = NULL;
	if (calls && list) {
		OHC_ERROR(OHC_SS_API,
			  "a group may hold either communicator management "
			  "(init/destroy) or operations, not both; nothing "
			  "was run");
		drop_calls(calls);
		free_list(list);
		return OHC_ERR_UNSUPPORTED;
	}
	if (calls)
		return run_calls(calls);
	for (struct ohc_op *op = list; op; op = op->group_next) {
		if (is_p2p(op))
			p2p++;
		else if (op->args.op == OHC_COLL_BATCH_SEND_RECV)
			batch++;
		else
			other++;
	}
	if (p2p && (other || batch)) {
		OHC_ERROR(OHC_SS_API,
			  "a group may hold either Send/Recv calls or "
			  "collectives, not both (%d point-to-point, %d "
			  "collective, %d batch calls); nothing was launched",
			  p2p, other, batch);
		free_list(list);
		return OHC_ERR_UNSUPPORTED;
	}
	while (list) {
		if (is_p2p(list)) {
			st = launch_p2p_batch(&list);
		} else {
			struct ohc_op *op = list;

			list = op->group_next;
			st = ohc_op_launch(op, op->group_stream);
		}
		if (st < 0 && status == OHC_OK)
			status = st;
	}
	return status;
}
