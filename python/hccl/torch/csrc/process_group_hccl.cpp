// SPDX-License-Identifier: Apache-2.0
//
// torch.distributed backend "hccl" for CPU tensors over libhccl (the one
// C++ file of OpenHCCL). A ProcessGroupHCCL owns one HCCL communicator
// (root info handed out through the c10d store) and one acl stream:
// every operation is enqueued on that stream in call order and returns a
// WorkHCCL at once; the work completes when a thread synchronizes the
// stream (Work::wait in the caller, or the group's progress thread once
// someone asked for the work's future, as DistributedDataParallel does).
//
// Point-to-point: HCCL's send is a rendezvous (the stream does not pass it
// until the peer's receive took it), so isend/irecv are collected and go
// to the stream together as one HcclBatchSendRecv (whose sends and
// receives do not wait for each other) when any work is waited on, at the
// next collective, or at the end of a coalescing block
// (batch_isend_irecv). Issue every isend/irecv of an exchange before
// waiting on one of them.
//
// Errors: a call the library refuses throws at once (RuntimeError with
// HCCL's text); an operation that fails on the stream (peer gone, a
// mismatch, HCCL_EXEC_TIMEOUT, which defaults to the group's timeout)
// fails its work and every work synchronized with it; wait(timeout)
// throws when the time is up. Nothing waits forever.

#include <torch/extension.h>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <pybind11/chrono.h>

#include <acl/acl.h>
#include <hccl/hccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace ohc_torch
{

namespace
{

const char *result_name(HcclResult r)
{
	static const char *names[] = {
		"HCCL_SUCCESS",
		"HCCL_E_PARA",
		"HCCL_E_PTR",
		"HCCL_E_MEMORY",
		"HCCL_E_INTERNAL",
		"HCCL_E_NOT_SUPPORT",
		"HCCL_E_NOT_FOUND",
		"HCCL_E_UNAVAIL",
		"HCCL_E_SYSCALL",
		"HCCL_E_TIMEOUT",
		"HCCL_E_OPEN_FILE_FAILURE",
		"HCCL_E_TCP_CONNECT",
		"HCCL_E_ROCE_CONNECT",
		"HCCL_E_TCP_TRANSFER",
		"HCCL_E_ROCE_TRANSFER",
		"HCCL_E_RUNTIME",
		"HCCL_E_DRV",
		"HCCL_E_PROFILING",
		"HCCL_E_CCE",
		"HCCL_E_NETWORK",
		"HCCL_E_AGAIN",
		"HCCL_E_REMOTE",
		"HCCL_E_SUSPENDING",
		"HCCL_E_OPRETRY_FAIL",
		"HCCL_E_OOM",
	};
	int i = static_cast<int>(r);
	if (i >= 0 && i < static_cast<int>(sizeof(names) / sizeof(names[0])))
		return names[i];
	return "HCCL_E_UNKNOWN";
}

std::string hccl_text(HcclResult r)
{
	std::ostringstream s;
	const char *t = HcclGetErrorString(r);
	s << result_name(r) << " (" << static_cast<int>(r)
	  << "): " << (t ? t : "unknown");
	return s.str();
}

std::string acl_text(aclError e)
{
	std::ostringstream s;
	s << "acl error " << e;
	switch (e) {
	case ACL_ERROR_RT_TASK_TIMEOUT:
		s << " (task timeout: HCCL_EXEC_TIMEOUT expired)";
		break;
	case ACL_ERROR_RT_PARAM_INVALID:
		s << " (the ranks disagreed on the operation, or a bad "
		     "argument)";
		break;
	case 507056:
		s << " (link error: a peer failed or went away)";
		break;
	case 507000:
		s << " (internal error)";
		break;
	default:
		break;
	}
	return s.str();
}

#define OHC_CHECK_HCCL(call, what)                                             \
	do {                                                                   \
		HcclResult r_ = (call);                                        \
		TORCH_CHECK(r_ == HCCL_SUCCESS, "HCCL ", what, ": ", #call,    \
			    " failed: ", hccl_text(r_),                        \
			    " (the log line above says why)");                 \
	} while (0)

struct DType {
	HcclDataType dt;
	int mult;    // library elements per tensor element
	bool reduce; // sum/max/min
	bool prod;
	bool sum_only;
};

DType dtype_of(const at::Tensor &t, const char *what)
{
	switch (t.scalar_type()) {
	case at::kFloat:
		return {HCCL_DATA_TYPE_FP32, 1, true, true, false};
	case at::kDouble:
		return {HCCL_DATA_TYPE_FP64, 1, true, true, false};
	case at::kHalf:
		return {HCCL_DATA_TYPE_FP16, 1, true, true, false};
	case at::kBFloat16:
		return {HCCL_DATA_TYPE_BFP16, 1, true, false, false};
	case at::kChar:
		return {HCCL_DATA_TYPE_INT8, 1, true, true, false};
	case at::kShort:
		return {HCCL_DATA_TYPE_INT16, 1, true, false, false};
	case at::kInt:
		return {HCCL_DATA_TYPE_INT32, 1, true, true, false};
	case at::kLong:
		return {HCCL_DATA_TYPE_INT64, 1, true, true, false};
	case at::kByte:
		return {HCCL_DATA_TYPE_UINT8, 1, false, false, false};
	case at::kBool:
		return {HCCL_DATA_TYPE_UINT8, 1, false, false, false};
	case at::kComplexFloat:
		return {HCCL_DATA_TYPE_FP32, 2, true, false, true};
	case at::kComplexDouble:
		return {HCCL_DATA_TYPE_FP64, 2, true, false, true};
	default:
		break;
	}
	TORCH_CHECK(false, "HCCL ", what, ": tensors of type ", t.scalar_type(),
		    " are not supported");
	return {};
}

HcclReduceOp reduce_op(const c10d::ReduceOp &op, const at::Tensor &t,
		       const char *what)
{
	DType d = dtype_of(t, what);
	TORCH_CHECK(d.reduce, "HCCL ", what, ": HCCL does not reduce ",
		    t.scalar_type(),
		    " tensors (reductions take float, double, half, bfloat16, "
		    "int8, int16, int32, int64)");
	HcclReduceOp r;
	switch (op.op_) {
	case c10d::ReduceOp::SUM:
		r = HCCL_REDUCE_SUM;
		break;
	case c10d::ReduceOp::PRODUCT:
		r = HCCL_REDUCE_PROD;
		break;
	case c10d::ReduceOp::MAX:
		r = HCCL_REDUCE_MAX;
		break;
	case c10d::ReduceOp::MIN:
		r = HCCL_REDUCE_MIN;
		break;
	default:
		TORCH_CHECK(false, "HCCL ", what, ": reduce op ",
			    static_cast<int>(op.op_),
			    " is not supported (SUM, PRODUCT, MIN, MAX are)");
	}
	TORCH_CHECK(!d.sum_only || r == HCCL_REDUCE_SUM, "HCCL ", what,
		    ": complex tensors can only be summed");
	TORCH_CHECK(r != HCCL_REDUCE_PROD || d.prod, "HCCL ", what,
		    ": HCCL does not multiply ", t.scalar_type(),
		    " tensors (PRODUCT is refused for int16 and bfloat16)");
	return r;
}

void check_tensor(const at::Tensor &t, const char *what)
{
	TORCH_CHECK(t.defined(), "HCCL ", what, ": undefined tensor");
	TORCH_CHECK(t.device().is_cpu(), "HCCL ", what,
		    ": only CPU tensors are supported, got one on ",
		    t.device());
	TORCH_CHECK(t.layout() == at::kStrided, "HCCL ", what,
		    ": only dense (strided) tensors are supported");
	dtype_of(t, what);
}

void check_single(const std::vector<at::Tensor> &v, const char *what)
{
	TORCH_CHECK(v.size() == 1, "HCCL ", what, ": one tensor per call (got ",
		    v.size(), ")");
	check_tensor(v[0], what);
}

// A contiguous stand-in for t: t itself, or a copy written back to t
// when the operation completed (post).
struct Buf {
	at::Tensor dense;
	std::function<void()> post;
};

Buf dense_inout(const at::Tensor &t)
{
	if (t.is_contiguous())
		return {t, nullptr};
	at::Tensor tmp = t.contiguous();
	at::Tensor dst = t;
	return {tmp, [dst, tmp]() mutable { dst.copy_(tmp); }};
}

void *ptr(const at::Tensor &t)
{
	return t.data_ptr();
}

uint64_t count(const at::Tensor &t, const DType &d)
{
	return static_cast<uint64_t>(t.numel()) * d.mult;
}

std::vector<at::Tensor> keep_list(std::initializer_list<at::Tensor> l)
{
	return std::vector<at::Tensor>(l);
}

int env_int(const char *name, int dflt)
{
	const char *v = std::getenv(name);
	if (!v || !*v)
		return dflt;
	char *end = nullptr;
	long n = std::strtol(v, &end, 10);
	return end && *end == '\0' && n >= 0 ? static_cast<int>(n) : dflt;
}

} // namespace

class Engine;

class WorkHCCL : public c10d::Work
{
      public:
	WorkHCCL(std::shared_ptr<Engine> engine, int rank, c10d::OpType type,
		 const char *name, std::vector<at::Tensor> outputs,
		 std::vector<at::Tensor> keep, std::function<void()> post)
	    : c10d::Work(rank, type), engine_(std::move(engine)), name_(name),
	      outputs_(std::move(outputs)), keep_(std::move(keep)),
	      post_(std::move(post))
	{
	}

	~WorkHCCL() override = default;

	bool isCompleted() override;
	bool isSuccess() const override;
	std::exception_ptr exception() const override;
	std::vector<at::Tensor> result() override
	{
		return outputs_;
	}
	void synchronize() override
	{
	}
	bool wait(std::chrono::milliseconds timeout) override;
	void abort() override
	{
		TORCH_CHECK(false, "HCCL: Work::abort is not supported");
	}
	c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

	// Engine side: the work's operation is done (error empty) or failed.
	void complete(const std::string &error);

      private:
	friend class Engine;

	std::shared_ptr<Engine> engine_;
	const char *name_;
	std::vector<at::Tensor> outputs_;
	std::vector<at::Tensor> keep_;	  // alive until the stream is past it
	std::shared_ptr<void> keep_host_; // host arrays the call reads
	std::function<void()> post_;
	c10::intrusive_ptr<c10::ivalue::Future> future_; // mutex_

	// Engine::q_mu_:
	uint64_t seq_ = 0;     // position on the stream, 0: not enqueued
	bool claimed_ = false; // a synchronizer took it off the queue
	bool want_future_ = false;
};

class Engine : public std::enable_shared_from_this<Engine>
{
      public:
	Engine(int rank, int size, std::chrono::milliseconds timeout)
	    : rank_(rank), size_(size), timeout_(timeout)
	{
	}

	// The progress thread holds a reference too: the last one may go on
	// that very thread, which then cannot be joined.
	~Engine()
	{
		shutdown();
		if (progress_.joinable()) {
			if (progress_.get_id() == std::this_thread::get_id())
				progress_.detach();
			else
				progress_.join();
		}
	}

	void start(HcclComm comm, aclrtStream stream, int device)
	{
		comm_ = comm;
		stream_ = stream;
		device_ = device;
		auto self = shared_from_this();
		progress_ = std::thread([self] { self->progress_main(); });
	}

	HcclComm comm() const
	{
		return comm_;
	}

	// Enqueue one operation: launch(stream) calls the library.
	c10::intrusive_ptr<c10d::Work>
	launch(c10d::OpType type, const char *name,
	       std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep,
	       const std::function<HcclResult(aclrtStream)> &launch_fn,
	       std::function<void()> post, std::shared_ptr<void> host = {})
	{
		auto w = c10::make_intrusive<WorkHCCL>(
			shared_from_this(), rank_, type, name,
			std::move(outputs), std::move(keep), std::move(post));
		w->keep_host_ = std::move(host);
		std::lock_guard<std::mutex> l(q_mu_);
		check_open_locked(name);
		flush_locked();
		HcclResult r = launch_fn(stream_);
		TORCH_CHECK(r == HCCL_SUCCESS, "HCCL ", name,
			    ": the library refused the call: ", hccl_text(r),
			    " (the log line above says why)");
		w->seq_ = ++seq_;
		pending_.push_back(w);
		return w;
	}

	// Queue a send or receive for the next batch.
	c10::intrusive_ptr<c10d::Work> p2p(HcclSendRecvType kind,
					   const at::Tensor &t, int peer,
					   std::function<void()> post,
					   at::Tensor user)
	{
		const char *name = kind == HCCL_SEND ? "send" : "recv";
		DType d = dtype_of(t, name);
		auto w = c10::make_intrusive<WorkHCCL>(
			shared_from_this(), rank_,
			kind == HCCL_SEND ? c10d::OpType::SEND
					  : c10d::OpType::RECV,
			name, std::vector<at::Tensor>{user},
			std::vector<at::Tensor>{t, user}, std::move(post));
		HcclSendRecvItem it;
		std::memset(&it, 0, sizeof(it));
		it.sendRecvType = kind;
		it.buf = ptr(t);
		it.count = count(t, d);
		it.dataType = d.dt;
		it.remoteRank = static_cast<uint32_t>(peer);
		std::lock_guard<std::mutex> l(q_mu_);
		check_open_locked(name);
		batch_.push_back(it);
		batch_works_.push_back(w);
		return w;
	}

	void coalesce_begin()
	{
		std::lock_guard<std::mutex> l(q_mu_);
		coalescing_++;
	}

	void coalesce_end()
	{
		std::lock_guard<std::mutex> l(q_mu_);
		if (coalescing_ > 0)
			coalescing_--;
		flush_locked();
	}

	void flush()
	{
		std::lock_guard<std::mutex> l(q_mu_);
		flush_locked();
	}

	// Synchronize the stream once (bounded by deadline unless it is
	// max()) and complete what was enqueued before. false: timed out.
	bool progress_once(std::chrono::steady_clock::time_point deadline);

	void want_future(WorkHCCL *w)
	{
		std::lock_guard<std::mutex> l(q_mu_);
		if (w->claimed_ || w->want_future_)
			return;
		w->want_future_ = true;
		futures_++;
		cv_.notify_all();
	}

	bool claimed(WorkHCCL *w)
	{
		std::lock_guard<std::mutex> l(q_mu_);
		return w->claimed_;
	}

	// Stream empty: finish everything, destroy stream and comm.
	void shutdown();

	std::timed_mutex sync_mu_; // one synchronizer at a time

      private:
	void check_open_locked(const char *name)
	{
		TORCH_CHECK(!closed_, "HCCL ", name,
			    ": the process group was destroyed");
	}

	// Caller holds q_mu_.
	void flush_locked()
	{
		if (batch_.empty() || coalescing_ > 0)
			return;
		HcclResult r = HcclBatchSendRecv(
			batch_.data(), static_cast<uint32_t>(batch_.size()),
			comm_, stream_);
		std::vector<c10::intrusive_ptr<WorkHCCL>> works;
		works.swap(batch_works_);
		auto items = std::make_shared<std::vector<HcclSendRecvItem>>();
		items->swap(batch_);
		if (r != HCCL_SUCCESS) {
			std::string e =
				"HcclBatchSendRecv refused the send/recv "
				"batch: " +
				hccl_text(r);
			for (auto &w : works) {
				w->claimed_ = true;
				w->complete(e);
			}
			return;
		}
		uint64_t seq = ++seq_;
		for (auto &w : works) {
			w->seq_ = seq;
			w->keep_host_ = items;
			pending_.push_back(w);
		}
	}

	void progress_main();

	std::string failure(aclError e);

	int rank_, size_;
	std::chrono::milliseconds timeout_;
	HcclComm comm_ = nullptr;
	aclrtStream stream_ = nullptr;
	int device_ = 0;

	std::mutex q_mu_;
	std::condition_variable cv_;
	std::deque<c10::intrusive_ptr<WorkHCCL>> pending_;
	std::vector<HcclSendRecvItem> batch_;
	std::vector<c10::intrusive_ptr<WorkHCCL>> batch_works_;
	int coalescing_ = 0;
	uint64_t seq_ = 0;
	int futures_ = 0; // pending works whose future someone holds
	bool stopping_ = false;
	bool closed_ = false;
	std::thread progress_;
};

std::string Engine::failure(aclError e)
{
	std::ostringstream s;
	s << "the operation failed on the stream: " << acl_text(e);
	HcclResult async = HCCL_SUCCESS;
	if (HcclGetCommAsyncError(comm_, &async) == HCCL_SUCCESS &&
	    async != HCCL_SUCCESS)
		s << "; communicator error " << hccl_text(async);
	s << " (rank " << rank_ << " of " << size_
	  << "; the library's log names the peer and the step)";
	return s.str();
}

bool Engine::progress_once(std::chrono::steady_clock::time_point deadline)
{
	uint64_t target;
	{
		std::lock_guard<std::mutex> l(q_mu_);
		flush_locked();
		if (pending_.empty())
			return true;
		target = pending_.back()->seq_;
	}
	aclError e;
	if (deadline == std::chrono::steady_clock::time_point::max()) {
		e = aclrtSynchronizeStream(stream_);
	} else {
		auto left =
			std::chrono::duration_cast<std::chrono::milliseconds>(
				deadline - std::chrono::steady_clock::now());
		if (left.count() <= 0)
			return false;
		e = aclrtSynchronizeStreamWithTimeout(
			stream_, static_cast<int32_t>(std::min<int64_t>(
					 left.count(), INT32_MAX)));
		if (e == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT)
			return false;
	}
	std::vector<c10::intrusive_ptr<WorkHCCL>> done;
	{
		std::lock_guard<std::mutex> l(q_mu_);
		while (!pending_.empty() && pending_.front()->seq_ <= target) {
			auto w = pending_.front();
			pending_.pop_front();
			w->claimed_ = true;
			if (w->want_future_)
				futures_--;
			done.push_back(std::move(w));
		}
	}
	std::string err = e == ACL_SUCCESS ? "" : failure(e);
	sync_mu_.unlock();
	for (auto &w : done)
		w->complete(err);
	sync_mu_.lock();
	return true;
}

void Engine::progress_main()
{
	aclrtSetDevice(device_);
	for (;;) {
		{
			std::unique_lock<std::mutex> l(q_mu_);
			cv_.wait(l, [this] {
				return stopping_ || (futures_ > 0);
			});
			if (stopping_)
				break;
		}
		std::lock_guard<std::timed_mutex> s(sync_mu_);
		progress_once(std::chrono::steady_clock::time_point::max());
	}
	aclrtResetDevice(device_);
}

void Engine::shutdown()
{
	{
		std::lock_guard<std::mutex> l(q_mu_);
		if (closed_)
			return;
		stopping_ = true;
		cv_.notify_all();
	}
	if (progress_.joinable()) {
		// The last reference to a group can go in a future's callback,
		// on the progress thread itself: it ends after this returns.
		if (progress_.get_id() == std::this_thread::get_id())
			progress_.detach();
		else
			progress_.join();
	}
	for (;;) {
		{
			std::lock_guard<std::mutex> l(q_mu_);
			coalescing_ = 0;
			flush_locked();
			if (pending_.empty())
				break;
		}
		std::lock_guard<std::timed_mutex> s(sync_mu_);
		progress_once(std::chrono::steady_clock::time_point::max());
	}
	{
		std::lock_guard<std::mutex> l(q_mu_);
		closed_ = true;
	}
	if (stream_)
		aclrtDestroyStream(stream_);
	if (comm_)
		HcclCommDestroy(comm_);
	stream_ = nullptr;
	comm_ = nullptr;
}

void WorkHCCL::complete(const std::string &error)
{
	std::exception_ptr ep;
	if (error.empty() && post_) {
		try {
			post_();
		} catch (...) {
			ep = std::current_exception();
		}
	}
	if (!error.empty())
		ep = std::make_exception_ptr(std::runtime_error(
			std::string("HCCL ") + name_ + ": " + error));
	c10::intrusive_ptr<c10::ivalue::Future> fut;
	{
		std::lock_guard<std::mutex> l(mutex_);
		completed_ = true;
		exception_ = ep;
		fut = future_;
		keep_.clear();
	}
	cv_.notify_all();
	if (fut) {
		if (ep)
			fut->setError(ep);
		else
			fut->markCompleted(c10::IValue(outputs_));
	}
}

bool WorkHCCL::isCompleted()
{
	{
		std::lock_guard<std::mutex> l(mutex_);
		if (completed_)
			return true;
	}
	engine_->flush();
	std::unique_lock<std::timed_mutex> s(engine_->sync_mu_,
					     std::try_to_lock);
	if (s.owns_lock())
		engine_->progress_once(std::chrono::steady_clock::now());
	std::lock_guard<std::mutex> l(mutex_);
	return completed_;
}

bool WorkHCCL::isSuccess() const
{
	std::lock_guard<std::mutex> l(mutex_);
	return completed_ && !exception_;
}

std::exception_ptr WorkHCCL::exception() const
{
	std::lock_guard<std::mutex> l(mutex_);
	return exception_;
}

bool WorkHCCL::wait(std::chrono::milliseconds timeout)
{
	using clock = std::chrono::steady_clock;
	const bool bounded = timeout != kNoTimeout;
	const auto deadline =
		bounded ? clock::now() + timeout : clock::time_point::max();
	for (;;) {
		{
			std::lock_guard<std::mutex> l(mutex_);
			if (completed_)
				break;
		}
		if (engine_->claimed(this)) {
			// another thread is completing it right now
			std::unique_lock<std::mutex> l(mutex_);
			if (!cv_.wait_until(l, deadline,
					    [this] { return completed_; }))
				TORCH_CHECK(false, "HCCL ", name_,
					    ": wait timed out after ",
					    timeout.count(), " ms");
			break;
		}
		std::unique_lock<std::timed_mutex> s(engine_->sync_mu_,
						     std::defer_lock);
		if (bounded) {
			if (!s.try_lock_until(deadline)) {
				std::lock_guard<std::mutex> l(mutex_);
				if (completed_)
					break;
				TORCH_CHECK(false, "HCCL ", name_,
					    ": wait timed out after ",
					    timeout.count(), " ms");
			}
		} else {
			s.lock();
		}
		if (!engine_->progress_once(deadline)) {
			std::lock_guard<std::mutex> l(mutex_);
			if (completed_)
				break;
			TORCH_CHECK(false, "HCCL ", name_,
				    ": wait timed out after ", timeout.count(),
				    " ms (the operation is "
				    "still queued on the stream)");
		}
	}
	std::lock_guard<std::mutex> l(mutex_);
	if (exception_)
		std::rethrow_exception(exception_);
	return true;
}

c10::intrusive_ptr<c10::ivalue::Future> WorkHCCL::getFuture()
{
	c10::intrusive_ptr<c10::ivalue::Future> fut;
	bool done;
	std::exception_ptr ep;
	{
		std::lock_guard<std::mutex> l(mutex_);
		if (!future_)
			future_ = c10::make_intrusive<c10::ivalue::Future>(
				c10::ListType::create(c10::TensorType::get()));
		fut = future_;
		done = completed_;
		ep = exception_;
	}
	if (done) {
		if (!fut->completed()) {
			if (ep)
				fut->setErrorIfNeeded(ep);
			else
				fut->markCompleted(c10::IValue(outputs_));
		}
		return fut;
	}
	engine_->want_future(this);
	return fut;
}

class ProcessGroupHCCL : public c10d::ProcessGroup
{
      public:
	ProcessGroupHCCL(const c10::intrusive_ptr<c10d::Store> &store, int rank,
			 int size, std::chrono::milliseconds timeout);
	~ProcessGroupHCCL() override;

	const std::string getBackendName() const override
	{
		return "hccl";
	}

	void startCoalescing() override
	{
		engine_->coalesce_begin();
	}
	void endCoalescing(
		std::vector<c10::intrusive_ptr<c10d::Work>> &reqs) override
	{
		(void)reqs;
		engine_->coalesce_end();
	}

	c10::intrusive_ptr<c10d::Work>
	broadcast(std::vector<at::Tensor> &tensors,
		  const c10d::BroadcastOptions &opts) override;
	c10::intrusive_ptr<c10d::Work>
	allreduce(std::vector<at::Tensor> &tensors,
		  const c10d::AllreduceOptions &opts) override;
	c10::intrusive_ptr<c10d::Work>
	reduce(std::vector<at::Tensor> &tensors,
	       const c10d::ReduceOptions &opts) override;
	c10::intrusive_ptr<c10d::Work>
	allgather(std::vector<std::vector<at::Tensor>> &outputs,
		  std::vector<at::Tensor> &inputs,
		  const c10d::AllgatherOptions &opts) override;
	c10::intrusive_ptr<c10d::Work>
	_allgather_base(at::Tensor &output, at::Tensor &input,
			const c10d::AllgatherOptions &opts) override;
	c10::intrusive_ptr<c10d::Work>
	reduce_scatter(std::vector<at::Tensor> &outputs,
		       std::vector<std::vector<at::Tensor>> &inputs,
		       const c10d::ReduceScatterOptions &opts) override;
	c10::intrusive_ptr<c10d::Work>
	_reduce_scatter_base(at::Tensor &output, at::Tensor &input,
			     const c10d::ReduceScatterOptions &opts) override;
	c10::intrusive_ptr<c10d::Work>
	alltoall_base(at::Tensor &output, at::Tensor &input,
		      std::vector<int64_t> &outputSplits,
		      std::vector<int64_t> &inputSplits,
		      const c10d::AllToAllOptions &opts) override;
	c10::intrusive_ptr<c10d::Work>
	alltoall(std::vector<at::Tensor> &outputs,
		 std::vector<at::Tensor> &inputs,
		 const c10d::AllToAllOptions &opts) override;
	c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor> &tensors,
					    int dst, int tag) override;
	c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor> &tensors,
					    int src, int tag) override;
	c10::intrusive_ptr<c10d::Work>
	barrier(const c10d::BarrierOptions &opts) override;
	c10::intrusive_ptr<c10d::Work>
	gather(std::vector<std::vector<at::Tensor>> &outputs,
	       std::vector<at::Tensor> &inputs,
	       const c10d::GatherOptions &opts) override;
	c10::intrusive_ptr<c10d::Work>
	scatter(std::vector<at::Tensor> &outputs,
		std::vector<std::vector<at::Tensor>> &inputs,
		const c10d::ScatterOptions &opts) override;
	c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
		std::vector<at::Tensor> &tensors,
		const c10d::AllreduceCoalescedOptions &opts) override;

      private:
	void check_rank(int64_t r, const char *what, const char *arg) const
	{
		TORCH_CHECK(r >= 0 && r < size_, "HCCL ", what, ": ", arg, " ",
			    r, " is not a rank of the group (size ", size_,
			    ")");
	}

	std::shared_ptr<Engine> engine_;
	int device_ = 0;
};

namespace
{

std::atomic<int> pg_counter{0};

int pick_device(int rank)
{
	int dev = env_int("DEVICE_ID", -1);
	if (dev < 0)
		dev = env_int("LOCAL_RANK", -1);
	if (dev < 0)
		dev = rank;
	uint32_t n = 0;
	if (aclrtGetDeviceCount(&n) == ACL_SUCCESS && n > 0)
		dev %= static_cast<int>(n);
	return dev;
}

} // namespace

ProcessGroupHCCL::ProcessGroupHCCL(const c10::intrusive_ptr<c10d::Store> &store,
				   int rank, int size,
				   std::chrono::milliseconds timeout)
    : c10d::ProcessGroup(rank, size)
{
	aclError e = aclInit(nullptr);
	TORCH_CHECK(e == ACL_SUCCESS || e == ACL_ERROR_REPEAT_INITIALIZE,
		    "HCCL: aclInit failed: ", acl_text(e));
	device_ = pick_device(rank);
	e = aclrtSetDevice(device_);
	TORCH_CHECK(e == ACL_SUCCESS, "HCCL: aclrtSetDevice(", device_,
		    ") failed: ", acl_text(e));

	HcclRootInfo root;
	const std::string key = "hccl_root_info";
	if (rank == 0) {
		OHC_CHECK_HCCL(HcclGetRootInfo(&root), "process group init");
		std::vector<uint8_t> v(reinterpret_cast<uint8_t *>(&root),
				       reinterpret_cast<uint8_t *>(&root) +
					       sizeof(root));
		store->set(key, v);
	} else {
		std::vector<uint8_t> v = store->get(key);
		TORCH_CHECK(v.size() == sizeof(root),
			    "HCCL: the root info in the store has ", v.size(),
			    " bytes, not ", sizeof(root));
		std::memcpy(&root, v.data(), sizeof(root));
	}
	HcclCommConfig cfg;
	HcclCommConfigInit(&cfg);
	std::snprintf(cfg.hcclCommName, sizeof(cfg.hcclCommName),
		      "torch_hccl_%d_r%d", pg_counter++, rank);
	const char *exec_env = std::getenv("HCCL_EXEC_TIMEOUT");
	if (!exec_env || !*exec_env) {
		// the group's timeout bounds every operation on the stream
		int64_t s = (timeout.count() + 999) / 1000;
		cfg.hcclExecTimeOut = static_cast<int32_t>(
			std::max<int64_t>(1, std::min<int64_t>(s, INT32_MAX)));
	}
	HcclComm comm = nullptr;
	OHC_CHECK_HCCL(HcclCommInitRootInfoConfig(
			       static_cast<uint32_t>(size), &root,
			       static_cast<uint32_t>(rank), &cfg, &comm),
		       "process group init");
	aclrtStream stream = nullptr;
	e = aclrtCreateStream(&stream);
	if (e != ACL_SUCCESS) {
		HcclCommDestroy(comm);
		TORCH_CHECK(false,
			    "HCCL: aclrtCreateStream failed: ", acl_text(e));
	}
	aclrtSetStreamFailureMode(stream, ACL_STOP_ON_FAILURE);
	engine_ = std::make_shared<Engine>(rank, size, timeout);
	engine_->start(comm, stream, device_);
}

ProcessGroupHCCL::~ProcessGroupHCCL()
{
	// Completing the last works may run Python callbacks of their
	// futures on the progress thread: never wait for it holding the GIL.
	if (Py_IsInitialized() && PyGILState_Check()) {
		pybind11::gil_scoped_release nogil;
		engine_->shutdown();
	} else {
		engine_->shutdown();
	}
	aclrtResetDevice(device_);
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupHCCL::broadcast(std::vector<at::Tensor> &tensors,
			    const c10d::BroadcastOptions &opts)
{
	check_single(tensors, "broadcast");
	check_rank(opts.rootRank, "broadcast", "root");
	TORCH_CHECK(opts.rootTensor == 0, "HCCL broadcast: rootTensor must be "
					  "0 (one tensor per process)");
	at::Tensor t = tensors[0];
	DType d = dtype_of(t, "broadcast");
	Buf b = dense_inout(t);
	HcclComm c = engine_->comm();
	uint32_t root = static_cast<uint32_t>(opts.rootRank);
	at::Tensor x = b.dense;
	return engine_->launch(
		c10d::OpType::BROADCAST, "broadcast", {t}, keep_list({t, x}),
		[=](aclrtStream s) {
			return HcclBroadcast(ptr(x), count(x, d), d.dt, root, c,
					     s);
		},
		b.post);
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupHCCL::allreduce(std::vector<at::Tensor> &tensors,
			    const c10d::AllreduceOptions &opts)
{
	check_single(tensors, "allreduce");
	at::Tensor t = tensors[0];
	HcclReduceOp op = reduce_op(opts.reduceOp, t, "allreduce");
	DType d = dtype_of(t, "allreduce");
	Buf b = dense_inout(t);
	HcclComm c = engine_->comm();
	at::Tensor x = b.dense;
	return engine_->launch(
		c10d::OpType::ALLREDUCE, "allreduce", {t}, keep_list({t, x}),
		[=](aclrtStream s) {
			return HcclAllReduce(ptr(x), ptr(x), count(x, d), d.dt,
					     op, c, s);
		},
		b.post);
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupHCCL::reduce(std::vector<at::Tensor> &tensors,
			 const c10d::ReduceOptions &opts)
{
	check_single(tensors, "reduce");
	check_rank(opts.rootRank, "reduce", "root");
	TORCH_CHECK(opts.rootTensor == 0, "HCCL reduce: rootTensor must be 0 "
					  "(one tensor per process)");
	at::Tensor t = tensors[0];
	HcclReduceOp op = reduce_op(opts.reduceOp, t, "reduce");
	DType d = dtype_of(t, "reduce");
	HcclComm c = engine_->comm();
	uint32_t root = static_cast<uint32_t>(opts.rootRank);
	if (opts.rootRank == getRank()) {
		Buf b = dense_inout(t);
		at::Tensor x = b.dense;
		return engine_->launch(
			c10d::OpType::REDUCE, "reduce", {t}, keep_list({t, x}),
			[=](aclrtStream s) {
				return HcclReduce(ptr(x), ptr(x), count(x, d),
						  d.dt, op, root, c, s);
			},
			b.post);
	}
	// Elsewhere the tensor is only read (as Gloo leaves it).
	at::Tensor x = t.contiguous();
	at::Tensor scratch = at::empty_like(x);
	return engine_->launch(
		c10d::OpType::REDUCE, "reduce", {t}, keep_list({t, x, scratch}),
		[=](aclrtStream s) {
			return HcclReduce(ptr(x), ptr(scratch), count(x, d),
					  d.dt, op, root, c, s);
		},
		nullptr);
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupHCCL::_allgather_base(at::Tensor &output, at::Tensor &input,
				  const c10d::AllgatherOptions &opts)
{
	(void)opts;
	check_tensor(input, "_allgather_base");
	check_tensor(output, "_allgather_base");
	TORCH_CHECK(output.scalar_type() == input.scalar_type(),
		    "HCCL allgather: output type ", output.scalar_type(),
		    " differs from input type ", input.scalar_type());
	TORCH_CHECK(output.numel() == input.numel() * size_,
		    "HCCL allgather: output has ", output.numel(),
		    " elements, not ", input.numel(), " x ", size_);
	DType d = dtype_of(input, "allgather");
	at::Tensor in = input.contiguous();
	Buf b = dense_inout(output);
	at::Tensor out = b.dense;
	HcclComm c = engine_->comm();
	return engine_->launch(
		c10d::OpType::_ALLGATHER_BASE, "allgather", {output},
		keep_list({in, out, output}),
		[=](aclrtStream s) {
			return HcclAllGather(ptr(in), ptr(out), count(in, d),
					     d.dt, c, s);
		},
		b.post);
}

// Whether the tensors lie back to back in this order in one buffer, so
// that the first one's storage can serve as the flat buffer.
static bool adjacent(const std::vector<at::Tensor> &v)
{
	if (v.empty())
		return false;
	for (size_t i = 0; i < v.size(); i++) {
		if (!v[i].is_contiguous() ||
		    v[i].scalar_type() != v[0].scalar_type() ||
		    v[i].numel() != v[0].numel())
			return false;
		auto want = static_cast<char *>(v[0].data_ptr()) +
			    i * v[0].nbytes();
		if (v[i].data_ptr() != want)
			return false;
	}
	return true;
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupHCCL::allgather(std::vector<std::vector<at::Tensor>> &outputs,
			    std::vector<at::Tensor> &inputs,
			    const c10d::AllgatherOptions &opts)
{
	(void)opts;
	check_single(inputs, "allgather");
	TORCH_CHECK(outputs.size() == 1,
		    "HCCL allgather: one output list per "
		    "call (got ",
		    outputs.size(), ")");
	std::vector<at::Tensor> outs = outputs[0];
	TORCH_CHECK(static_cast<int>(outs.size()) == size_,
		    "HCCL allgather: the output list has ", outs.size(),
		    " tensors, the group ", size_, " ranks");
	at::Tensor in = inputs[0].contiguous();
	for (size_t i = 0; i < outs.size(); i++) {
		check_tensor(outs[i], "allgather");
		TORCH_CHECK(outs[i].scalar_type() == in.scalar_type() &&
				    outs[i].numel() == in.numel(),
			    "HCCL allgather: output ", i, " (", outs[i].sizes(),
			    ", ", outs[i].scalar_type(),
			    ") does not match the input (", in.sizes(), ", ",
			    in.scalar_type(), ")");
	}
	DType d = dtype_of(in, "allgather");
	HcclComm c = engine_->comm();
	uint64_t n = count(in, d);
	if (adjacent(outs)) {
		at::Tensor first = outs[0];
		return engine_->launch(
			c10d::OpType::ALLGATHER, "allgather", outs,
			keep_list({in, first}),
			[=](aclrtStream s) {
				return HcclAllGather(ptr(in), ptr(first), n,
						     d.dt, c, s);
			},
			nullptr);
	}
	at::Tensor flat = at::empty({size_ * in.numel()}, in.options());
	auto post = [outs, flat, in]() mutable {
		int64_t k = in.numel();
		for (size_t i = 0; i < outs.size(); i++)
			outs[i].copy_(
				flat.narrow(0, i * k, k).view(outs[i].sizes()));
	};
	return engine_->launch(
		c10d::OpType::ALLGATHER, "allgather", outs,
		keep_list({in, flat}),
		[=](aclrtStream s) {
			return HcclAllGather(ptr(in), ptr(flat), n, d.dt, c, s);
		},
		post);
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupHCCL::_reduce_scatter_base(at::Tensor &output, at::Tensor &input,
				       const c10d::ReduceScatterOptions &opts)
{
	check_tensor(input, "reduce_scatter");
	check_tensor(output, "reduce_scatter");
	TORCH_CHECK(output.scalar_type() == input.scalar_type(),
		    "HCCL reduce_scatter: output type ", output.scalar_type(),
		    " differs from input type ", input.scalar_type());
	TORCH_CHECK(input.numel() == output.numel() * size_,
		    "HCCL reduce_scatter: input has ", input.numel(),
		    " elements, not ", output.numel(), " x ", size_);
	HcclReduceOp op = reduce_op(opts.reduceOp, input, "reduce_scatter");
	DType d = dtype_of(input, "reduce_scatter");
	at::Tensor in = input.contiguous();
	Buf b = dense_inout(output);
	at::Tensor out = b.dense;
	HcclComm c = engine_->comm();
	return engine_->launch(
		c10d::OpType::_REDUCE_SCATTER_BASE, "reduce_scatter", {output},
		keep_list({in, out, output}),
		[=](aclrtStream s) {
			return HcclReduceScatter(ptr(in), ptr(out),
						 count(out, d), d.dt, op, c, s);
		},
		b.post);
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupHCCL::reduce_scatter(std::vector<at::Tensor> &outputs,
				 std::vector<std::vector<at::Tensor>> &inputs,
				 const c10d::ReduceScatterOptions &opts)
{
	check_single(outputs, "reduce_scatter");
	TORCH_CHECK(inputs.size() == 1,
		    "HCCL reduce_scatter: one input list "
		    "per call (got ",
		    inputs.size(), ")");
	std::vector<at::Tensor> ins = inputs[0];
	TORCH_CHECK(static_cast<int>(ins.size()) == size_,
		    "HCCL reduce_scatter: the input list has ", ins.size(),
		    " tensors, the group ", size_, " ranks");
	at::Tensor output = outputs[0];
	for (size_t i = 0; i < ins.size(); i++) {
		check_tensor(ins[i], "reduce_scatter");
		TORCH_CHECK(ins[i].scalar_type() == output.scalar_type() &&
				    ins[i].numel() == output.numel(),
			    "HCCL reduce_scatter: input ", i, " (",
			    ins[i].sizes(), ", ", ins[i].scalar_type(),
			    ") does not match the output (", output.sizes(),
			    ", ", output.scalar_type(), ")");
	}
	HcclReduceOp op = reduce_op(opts.reduceOp, output, "reduce_scatter");
	DType d = dtype_of(output, "reduce_scatter");
	at::Tensor flat;
	if (adjacent(ins)) {
		flat = ins[0];
	} else {
		std::vector<at::Tensor> parts;
		for (auto &t : ins)
			parts.push_back(t.reshape({-1}));
		flat = at::cat(parts);
	}
	Buf b = dense_inout(output);
	at::Tensor out = b.dense;
	HcclComm c = engine_->comm();
	return engine_->launch(
		c10d::OpType::REDUCE_SCATTER, "reduce_scatter", {output},
		keep_list({flat, out, output}),
		[=](aclrtStream s) {
			return HcclReduceScatter(ptr(flat), ptr(out),
						 count(out, d), d.dt, op, c, s);
		},
		b.post);
}

static std::vector<uint64_t> split_counts(const std::vector<int64_t> &splits,
					  const at::Tensor &t, int size,
					  int mult, const char *which)
{
	std::vector<uint64_t> out(size);
	if (splits.empty()) {
		TORCH_CHECK(t.numel() % size == 0, "HCCL alltoall: the ", which,
			    " tensor's ", t.numel(),
			    " elements do not split evenly over ", size,
			    " ranks");
		for (int i = 0; i < size; i++)
			out[i] = static_cast<uint64_t>(t.numel() / size) * mult;
		return out;
	}
	TORCH_CHECK(static_cast<int>(splits.size()) == size,
		    "HCCL alltoall: ", which, " split sizes have ",
		    splits.size(), " entries, the group ", size, " ranks");
	TORCH_CHECK(t.dim() >= 1, "HCCL alltoall: a 0-d ", which,
		    " tensor cannot be split");
	int64_t row = t.size(0) ? t.numel() / t.size(0) : 0;
	int64_t sum = 0;
	for (int i = 0; i < size; i++) {
		TORCH_CHECK(splits[i] >= 0, "HCCL alltoall: ", which, " split ",
			    i, " is negative");
		sum += splits[i];
		out[i] = static_cast<uint64_t>(splits[i] * row) * mult;
	}
	TORCH_CHECK(sum == t.size(0), "HCCL alltoall: ", which,
		    " splits sum to ", sum, ", the tensor has ", t.size(0),
		    " rows");
	return out;
}

static std::vector<uint64_t> displs(const std::vector<uint64_t> &counts)
{
	std::vector<uint64_t> d(counts.size());
	uint64_t acc = 0;
	for (size_t i = 0; i < counts.size(); i++) {
		d[i] = acc;
		acc += counts[i];
	}
	return d;
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupHCCL::alltoall_base(at::Tensor &output, at::Tensor &input,
				std::vector<int64_t> &outputSplits,
				std::vector<int64_t> &inputSplits,
				const c10d::AllToAllOptions &opts)
{
	(void)opts;
	check_tensor(input, "alltoall");
	check_tensor(output, "alltoall");
	TORCH_CHECK(output.scalar_type() == input.scalar_type(),
		    "HCCL alltoall: output type ", output.scalar_type(),
		    " differs from input type ", input.scalar_type());
	DType d = dtype_of(input, "alltoall");
	HcclComm c = engine_->comm();
	at::Tensor in = input.contiguous();
	Buf b = dense_inout(output);
	at::Tensor out = b.dense;
	if (out.data_ptr() == in.data_ptr() && in.numel() > 0) {
		// HCCL refuses in place
		in = in.clone();
	}
	if (outputSplits.empty() && inputSplits.empty()) {
		TORCH_CHECK(in.numel() == out.numel(),
			    "HCCL alltoall: input has ", in.numel(),
			    " elements, output ", out.numel());
		TORCH_CHECK(
			in.numel() % size_ == 0, "HCCL alltoall: ", in.numel(),
			" elements do not split evenly over ", size_, " ranks");
		uint64_t k = static_cast<uint64_t>(in.numel() / size_) * d.mult;
		return engine_->launch(
			c10d::OpType::ALLTOALL_BASE, "alltoall", {output},
			keep_list({in, out, output}),
			[=](aclrtStream s) {
				return HcclAlltoAll(ptr(in), k, d.dt, ptr(out),
						    k, d.dt, c, s);
			},
			b.post);
	}
	auto arrays = std::make_shared<std::vector<std::vector<uint64_t>>>();
	arrays->push_back(
		split_counts(inputSplits, in, size_, d.mult, "input"));
	arrays->push_back(displs((*arrays)[0]));
	arrays->push_back(
		split_counts(outputSplits, out, size_, d.mult, "output"));
	arrays->push_back(displs((*arrays)[2]));
	auto *a = arrays.get();
	return engine_->launch(
		c10d::OpType::ALLTOALL_BASE, "alltoall", {output},
		keep_list({in, out, output}),
		[=](aclrtStream s) {
			return HcclAlltoAllV(ptr(in), (*a)[0].data(),
					     (*a)[1].data(), d.dt, ptr(out),
					     (*a)[2].data(), (*a)[3].data(),
					     d.dt, c, s);
		},
		b.post, arrays);
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupHCCL::alltoall(std::vector<at::Tensor> &outputs,
			   std::vector<at::Tensor> &inputs,
			   const c10d::AllToAllOptions &opts)
{
	(void)opts;
	TORCH_CHECK(static_cast<int>(inputs.size()) == size_ &&
			    static_cast<int>(outputs.size()) == size_,
		    "HCCL alltoall: ", inputs.size(), " inputs and ",
		    outputs.size(), " outputs for a group of ", size_);
	for (auto &t : inputs)
		check_tensor(t, "alltoall");
	for (auto &t : outputs) {
		check_tensor(t, "alltoall");
		TORCH_CHECK(t.scalar_type() == inputs[0].scalar_type(),
			    "HCCL alltoall: mixed tensor types");
	}
	for (auto &t : inputs)
		TORCH_CHECK(t.scalar_type() == inputs[0].scalar_type(),
			    "HCCL alltoall: mixed tensor types");
	DType d = dtype_of(inputs[0], "alltoall");
	std::vector<at::Tensor> parts;
	auto arrays = std::make_shared<std::vector<std::vector<uint64_t>>>(4);
	for (auto &t : inputs) {
		parts.push_back(t.reshape({-1}));
		(*arrays)[0].push_back(static_cast<uint64_t>(t.numel()) *
				       d.mult);
	}
	int64_t rtotal = 0;
	for (auto &t : outputs) {
		(*arrays)[2].push_back(static_cast<uint64_t>(t.numel()) *
				       d.mult);
		rtotal += t.numel();
	}
	(*arrays)[1] = displs((*arrays)[0]);
	(*arrays)[3] = displs((*arrays)[2]);
	at::Tensor in = at::cat(parts);
	at::Tensor flat = at::empty({rtotal}, inputs[0].options());
	std::vector<at::Tensor> outs = outputs;
	auto post = [outs, flat]() mutable {
		int64_t off = 0;
		for (auto &t : outs) {
			t.copy_(flat.narrow(0, off, t.numel()).view(t.sizes()));
			off += t.numel();
		}
	};
	HcclComm c = engine_->comm();
	auto *a = arrays.get();
	return engine_->launch(
		c10d::OpType::ALLTOALL, "alltoall", outputs,
		keep_list({in, flat}),
		[=](aclrtStream s) {
			return HcclAlltoAllV(ptr(in), (*a)[0].data(),
					     (*a)[1].data(), d.dt, ptr(flat),
					     (*a)[2].data(), (*a)[3].data(),
					     d.dt, c, s);
		},
		post, arrays);
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupHCCL::send(std::vector<at::Tensor> &tensors, int dst, int tag)
{
	(void)tag; // HCCL matches sends and receives per peer, in order
	check_single(tensors, "send");
	check_rank(dst, "send", "destination");
	TORCH_CHECK(dst != rank_, "HCCL send: rank ", rank_,
		    " cannot send to itself");
	at::Tensor t = tensors[0];
	at::Tensor x = t.contiguous();
	return engine_->p2p(HCCL_SEND, x, dst, nullptr, t);
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupHCCL::recv(std::vector<at::Tensor> &tensors, int src, int tag)
{
	(void)tag;
	check_single(tensors, "recv");
	check_rank(src, "recv", "source");
	TORCH_CHECK(src != rank_, "HCCL recv: rank ", rank_,
		    " cannot receive from itself");
	at::Tensor t = tensors[0];
	Buf b = dense_inout(t);
	return engine_->p2p(HCCL_RECV, b.dense, src, b.post, t);
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupHCCL::barrier(const c10d::BarrierOptions &opts)
{
	(void)opts;
	HcclComm c = engine_->comm();
	return engine_->launch(
		c10d::OpType::BARRIER, "barrier", {}, {},
		[=](aclrtStream s) { return HcclBarrier(c, s); }, nullptr);
}

// HCCL has no Gather: the root receives every rank's tensor straight
// into its output (one HcclBatchSendRecv task), the others send theirs.
c10::intrusive_ptr<c10d::Work>
ProcessGroupHCCL::gather(std::vector<std::vector<at::Tensor>> &outputs,
			 std::vector<at::Tensor> &inputs,
			 const c10d::GatherOptions &opts)
{
	check_single(inputs, "gather");
	check_rank(opts.rootRank, "gather", "root");
	at::Tensor in = inputs[0].contiguous();
	DType d = dtype_of(in, "gather");
	HcclComm c = engine_->comm();
	int root = static_cast<int>(opts.rootRank);
	auto items = std::make_shared<std::vector<HcclSendRecvItem>>();
	std::vector<at::Tensor> outs, keep{in};
	std::vector<std::function<void()>> posts;
	if (getRank() == root) {
		TORCH_CHECK(outputs.size() == 1 &&
				    static_cast<int>(outputs[0].size()) ==
					    size_,
			    "HCCL gather: the root needs one list of ", size_,
			    " output tensors");
		outs = outputs[0];
		for (int r = 0; r < size_; r++) {
			check_tensor(outs[r], "gather");
			TORCH_CHECK(outs[r].scalar_type() == in.scalar_type() &&
					    outs[r].numel() == in.numel(),
				    "HCCL gather: output ", r, " (",
				    outs[r].sizes(), ", ",
				    outs[r].scalar_type(),
				    ") does not match the input (", in.sizes(),
				    ", ", in.scalar_type(), ")");
			Buf b = dense_inout(outs[r]);
			keep.push_back(b.dense);
			if (b.post)
				posts.push_back(b.post);
			if (r == root) {
				at::Tensor dst = b.dense;
				posts.insert(
					posts.begin(), [dst, in]() mutable {
						dst.copy_(in.view(dst.sizes()));
					});
				continue;
			}
			HcclSendRecvItem it;
			std::memset(&it, 0, sizeof(it));
			it.sendRecvType = HCCL_RECV;
			it.buf = ptr(b.dense);
			it.count = count(in, d);
			it.dataType = d.dt;
			it.remoteRank = static_cast<uint32_t>(r);
			items->push_back(it);
		}
	} else {
		TORCH_CHECK(outputs.empty() ||
				    (outputs.size() == 1 && outputs[0].empty()),
			    "HCCL gather: only the root takes output tensors");
		HcclSendRecvItem it;
		std::memset(&it, 0, sizeof(it));
		it.sendRecvType = HCCL_SEND;
		it.buf = ptr(in);
		it.count = count(in, d);
		it.dataType = d.dt;
		it.remoteRank = static_cast<uint32_t>(root);
		items->push_back(it);
	}
	auto *v = items.get();
	auto post = [posts]() {
		for (auto &p : posts)
			p();
	};
	return engine_->launch(
		c10d::OpType::GATHER, "gather", outs, keep,
		[=](aclrtStream s) {
			if (v->empty())
				return HCCL_SUCCESS; // a group of one
			return HcclBatchSendRecv(
				v->data(), static_cast<uint32_t>(v->size()), c,
				s);
		},
		post, items);
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupHCCL::scatter(std::vector<at::Tensor> &outputs,
			  std::vector<std::vector<at::Tensor>> &inputs,
			  const c10d::ScatterOptions &opts)
{
	check_single(outputs, "scatter");
	check_rank(opts.rootRank, "scatter", "root");
	at::Tensor output = outputs[0];
	DType d = dtype_of(output, "scatter");
	HcclComm c = engine_->comm();
	uint32_t root = static_cast<uint32_t>(opts.rootRank);
	at::Tensor flat;
	if (getRank() == static_cast<int>(root)) {
		TORCH_CHECK(inputs.size() == 1 &&
				    static_cast<int>(inputs[0].size()) == size_,
			    "HCCL scatter: the root needs one list of ", size_,
			    " input tensors");
		std::vector<at::Tensor> ins = inputs[0];
		for (size_t i = 0; i < ins.size(); i++) {
			check_tensor(ins[i], "scatter");
			TORCH_CHECK(
				ins[i].scalar_type() == output.scalar_type() &&
					ins[i].numel() == output.numel(),
				"HCCL scatter: input ", i, " (", ins[i].sizes(),
				", ", ins[i].scalar_type(),
				") does not match the output (", output.sizes(),
				", ", output.scalar_type(), ")");
		}
		if (adjacent(ins)) {
			flat = ins[0];
		} else {
			std::vector<at::Tensor> parts;
			for (auto &t : ins)
				parts.push_back(t.reshape({-1}));
			flat = at::cat(parts);
		}
	} else {
		TORCH_CHECK(inputs.empty() ||
				    (inputs.size() == 1 && inputs[0].empty()),
			    "HCCL scatter: only the root takes input tensors");
	}
	Buf b = dense_inout(output);
	at::Tensor out = b.dense;
	return engine_->launch(
		c10d::OpType::SCATTER, "scatter", {output},
		keep_list({flat, out, output}),
		[=](aclrtStream s) {
			return HcclScatter(flat.defined() ? ptr(flat) : nullptr,
					   ptr(out), count(out, d), d.dt, root,
					   c, s);
		},
		b.post);
}

// One AllReduce over the tensors packed together.
c10::intrusive_ptr<c10d::Work> ProcessGroupHCCL::allreduce_coalesced(
	std::vector<at::Tensor> &tensors,
	const c10d::AllreduceCoalescedOptions &opts)
{
	TORCH_CHECK(!tensors.empty(), "HCCL allreduce_coalesced: no tensors");
	for (auto &t : tensors) {
		check_tensor(t, "allreduce_coalesced");
		TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(),
			    "HCCL allreduce_coalesced: mixed tensor types");
	}
	HcclReduceOp op =
		reduce_op(opts.reduceOp, tensors[0], "allreduce_coalesced");
	DType d = dtype_of(tensors[0], "allreduce_coalesced");
	std::vector<at::Tensor> parts;
	for (auto &t : tensors)
		parts.push_back(t.reshape({-1}));
	at::Tensor flat = at::cat(parts);
	std::vector<at::Tensor> outs = tensors;
	auto post = [outs, flat]() mutable {
		int64_t off = 0;
		for (auto &t : outs) {
			t.copy_(flat.narrow(0, off, t.numel()).view(t.sizes()));
			off += t.numel();
		}
	};
	HcclComm c = engine_->comm();
	return engine_->launch(
		c10d::OpType::ALLREDUCE_COALESCED, "allreduce_coalesced",
		tensors, keep_list({flat}),
		[=](aclrtStream s) {
			return HcclAllReduce(ptr(flat), ptr(flat),
					     count(flat, d), d.dt, op, c, s);
		},
		post);
}

static c10::intrusive_ptr<c10d::ProcessGroup>
create(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
       const std::chrono::duration<float> &timeout)
{
	TORCH_CHECK(size >= 1 && rank >= 0 && rank < size, "HCCL: rank ", rank,
		    " of ", size, " is not a valid place in a group");
	auto ms =
		std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
	if (ms.count() <= 0)
		ms = kProcessGroupDefaultTimeout;
	return c10::make_intrusive<ProcessGroupHCCL>(store, rank, size, ms);
}

} // namespace ohc_torch

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
	m.doc() = "OpenHCCL's torch.distributed backend (CPU tensors)";
	m.def("create_process_group", &ohc_torch::create,
	      "create a ProcessGroupHCCL (store, rank, size, timeout)",
	      pybind11::arg("store"), pybind11::arg("rank"),
	      pybind11::arg("size"), pybind11::arg("timeout"),
	      pybind11::call_guard<pybind11::gil_scoped_release>());
}
