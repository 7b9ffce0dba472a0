// SPDX-License-Identifier: Apache-2.0
//
// The Gloo peer of bench/compare.sh: one collective, fp32 (sum for
// reductions, root 0), over the same sizes, warm-ups and iterations as
// OpenHCCL's hccl_test tools, printing the same columns. Gloo has no
// launcher: compare.sh starts SIZE processes that meet in a file store,
// and its transport is TCP over loopback (Debian's Gloo has no shm one).
// With GLOO_IB_DEV=<rdma device> (GLOO_IB_PORT, default 1; GLOO_IB_GID,
// the GID index, default 0) the transport is Gloo's ibverbs one instead.
// That transport has no unbound buffers, which Gloo's options API
// (gloo::allreduce & co.) needs, so there the bound-buffer algorithms run:
// AllreduceRing, AllgatherRing, BroadcastOneToAll, the same
// ReduceScatterHalvingDoubling, BarrierAllToOne; Reduce and AlltoAll have
// none and fail with Gloo's own error, printed on stderr.
// usage: gloo_coll OP MINBYTES MAXBYTES FACTOR ITERS WARMUP RANK SIZE DIR
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <unistd.h>
#include <vector>

#include <gloo/allgather.h>
#include <gloo/allgather_ring.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_ring.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/barrier_all_to_one.h>
#include <gloo/broadcast.h>
#include <gloo/broadcast_one_to_all.h>
#include <gloo/math.h>
#include <gloo/reduce.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/ibverbs/device.h>
#include <gloo/transport/tcp/device.h>

extern "C" {
#include "peer_common.h"
}

namespace {

using Ctx = std::shared_ptr<gloo::Context>;
using ReduceFn = void (*)(void *, const void *, const void *, size_t);

struct Bench {
	Ctx ctx;
	int op;
	peer_counts c;
	std::vector<float> s, r;
	std::unique_ptr<gloo::ReduceScatterHalvingDoubling<float>> rs;
	// ibverbs: the bound-buffer algorithm of this size, if it has one
	bool bound = false;
	std::unique_ptr<gloo::Algorithm> algo;
	// earlier sizes' algorithms: destroying an ibverbs buffer whose send
	// completion is not polled yet aborts, so they live until _exit
	std::vector<std::unique_ptr<gloo::Algorithm>> done;
	std::unique_ptr<gloo::Algorithm> bar;
	uint32_t tag = 0;

	void make_bound()
	{
		if (algo)
			done.push_back(std::move(algo));
		switch (op) {
		case PEER_ALLREDUCE:
			algo.reset(new gloo::AllreduceRing<float>(
				ctx, {r.data()}, static_cast<int>(c.send)));
			break;
		case PEER_ALLGATHER:
			algo.reset(new gloo::AllgatherRing<float>(
				ctx, {s.data()}, r.data(),
				static_cast<int>(c.send)));
			break;
		case PEER_BROADCAST:
			algo.reset(new gloo::BroadcastOneToAll<float>(
				ctx, {r.data()}, c.recv, 0));
			break;
		default:
			break;
		}
	}

	// the send and receive buffers and a fresh tag, on any options
	template <typename Opts> void io(Opts &o)
	{
		o.setInput(s.data(), c.send);
		o.setOutput(r.data(), c.recv);
		o.setTag(tag++);
	}

	void run()
	{
		ReduceFn sum = &gloo::sum<float>;

		if (algo) {
			algo->run();
			return;
		}
		switch (op) {
		case PEER_ALLREDUCE: {
			gloo::AllreduceOptions o(ctx);
			io(o);
			o.setReduceFunction(sum);
			gloo::allreduce(o);
			break;
		}
		case PEER_ALLGATHER: {
			gloo::AllgatherOptions o(ctx);
			io(o);
			gloo::allgather(o);
			break;
		}
		case PEER_REDUCE_SCATTER:
			// in place over the whole send buffer, as Gloo does it
			rs->run();
			break;
		case PEER_BROADCAST: {
			gloo::BroadcastOptions o(ctx);
			o.setOutput(r.data(), c.recv);
			o.setRoot(0);
			o.setTag(tag++);
			gloo::broadcast(o);
			break;
		}
		case PEER_REDUCE: {
			gloo::ReduceOptions o(ctx);
			io(o);
			o.setRoot(0);
			o.setReduceFunction(sum);
			gloo::reduce(o);
			break;
		}
		default: {
			gloo::AlltoallOptions o(ctx);
			io(o);
			gloo::alltoall(o);
			break;
		}
		}
	}

	// the input vector: r where Gloo works in place on it or
	// broadcasts it, else s
	std::vector<float> &input()
	{
		if (op == PEER_BROADCAST || (algo && op == PEER_ALLREDUCE))
			return r;
		return s;
	}

	// one call, the input copied from pristine first (if any)
	void touch_run(std::vector<float> &in,
		       const std::vector<float> &pristine)
	{
		if (!pristine.empty())
			std::copy(pristine.begin(), pristine.end(),
				  in.begin());
		run();
	}

	// elements holding the result, and where they are
	const float *result(unsigned long long *n_p) const
	{
		if (op != PEER_REDUCE_SCATTER) {
			*n_p = c.recv;
			return r.data();
		}
		*n_p = c.block;
		return s.data() + c.block * ctx->rank;
	}
};

void barrier(Bench &b, uint32_t tag)
{
	if (b.bound) {
		if (!b.bar)
			b.bar.reset(new gloo::BarrierAllToOne(b.ctx));
		b.bar->run();
		return;
	}
	const Ctx &ctx = b.ctx;
	gloo::BarrierOptions o(ctx);
	o.setTag(tag);
	gloo::barrier(o);
}

double one_size(Bench &b, unsigned long long bytes, int iters, int warmup,
		bool *ok_p)
{
	int n = b.ctx->size, rank = b.ctx->rank;
	unsigned long long nres;
	const float *res;
	bool ok = true;

	b.c = peer_sizing(b.op, bytes, n);
	b.s.assign(b.c.send + 1, peer_input(b.op, rank));
	b.r.assign(b.c.recv + 1, b.op == PEER_BROADCAST ? peer_input(b.op, rank)
							: -1.0f);
	if (b.op == PEER_REDUCE_SCATTER) {
		std::vector<int> elems(n, static_cast<int>(b.c.block));
		b.rs.reset(new gloo::ReduceScatterHalvingDoubling<float>(
			b.ctx, {b.s.data()}, static_cast<int>(b.c.send),
			elems));
	}
	if (b.bound) {
		// AllreduceRing works in place on r: it starts as the input
		if (b.op == PEER_ALLREDUCE)
			b.r = b.s;
		b.make_bound();
	}
	// OHC_BENCH_TOUCH=1: the input written again before each call
	std::vector<float> &in = b.input();
	std::vector<float> pristine;
	if (peer_touch())
		pristine = in;
	for (int i = 0; i < warmup; i++)
		b.touch_run(in, pristine);
	barrier(b, 1u << 30);
	auto t0 = std::chrono::steady_clock::now();
	for (int i = 0; i < iters; i++)
		b.touch_run(in, pristine);
	std::chrono::duration<double, std::micro> d =
		std::chrono::steady_clock::now() - t0;
	if (b.op == PEER_REDUCE_SCATTER) {
		// the timed runs reduced the buffer again and again: refresh
		std::fill(b.s.begin(), b.s.end(), peer_input(b.op, rank));
		b.rs->run();
	} else if (b.algo && b.op == PEER_ALLREDUCE) {
		// the same for the in-place AllreduceRing
		std::fill(b.r.begin(), b.r.end(), peer_input(b.op, rank));
		b.algo->run();
	}
	res = b.result(&nres);
	for (unsigned long long i = 0; i < nres; i++)
		ok = ok && peer_result_ok(b.op, rank, n, i, b.c.block, res[i]);
	*ok_p = ok;
	barrier(b, (1u << 30) + 1);
	return d.count() / iters;
}

} // namespace

int main(int argc, char **argv)
{
	int op = argc == 10 ? peer_op_parse(argv[1]) : -1;

	if (op < 0) {
		fprintf(stderr, "usage: %s OP MIN MAX FACTOR ITERS WARMUP "
				"RANK SIZE DIR\n", argv[0]);
		return 1;
	}
	unsigned long long minb = strtoull(argv[2], nullptr, 0);
	unsigned long long maxb = strtoull(argv[3], nullptr, 0);
	double factor = atof(argv[4]);
	int iters = atoi(argv[5]), warmup = atoi(argv[6]);
	int rank = atoi(argv[7]), size = atoi(argv[8]);

	const char *ibdev = getenv("GLOO_IB_DEV");
	std::shared_ptr<gloo::transport::Device> dev;
	Bench b;

	try {
		if (ibdev && *ibdev) {
			gloo::transport::ibverbs::attr ia;
			const char *port = getenv("GLOO_IB_PORT");
			const char *gid = getenv("GLOO_IB_GID");

			ia.name = ibdev;
			ia.port = port ? atoi(port) : 1;
			ia.index = gid ? atoi(gid) : 0;
			dev = gloo::transport::ibverbs::CreateDevice(ia);
			b.bound = true;
		} else {
			gloo::transport::tcp::attr attr("127.0.0.1");
			dev = gloo::transport::tcp::CreateDevice(attr);
		}
		gloo::rendezvous::FileStore store(argv[9]);
		auto ctx = std::make_shared<gloo::rendezvous::Context>(rank,
									size);
		ctx->connectFullMesh(store, dev);
		b.ctx = ctx;
	} catch (const std::exception &e) {
		fprintf(stderr, "gloo_coll: rank %d: %s\n", rank, e.what());
		return 1;
	}
	b.op = op;
	if (rank == 0)
		peer_print_header();
	for (unsigned long long by = minb; by <= maxb;
	     by = static_cast<unsigned long long>(by * factor)) {
		bool ok;
		double us;

		try {
			us = one_size(b, by, iters, warmup, &ok);
		} catch (const std::exception &e) {
			fprintf(stderr, "gloo_coll: rank %d: %s\n", rank,
				e.what());
			fflush(stdout);
			_exit(1);
		}

		// the verdict of rank 0 (every rank checks its own part)
		if (rank == 0)
			peer_print_row(op, size, by, us, ok);
		if (factor <= 1.0)
			break;
	}
	// no destructors: see Bench::done
	fflush(stdout);
	_exit(0);
}
