#include "async_io.hpp"

#include <libaio.h>
#include <liburing.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "errors.hpp"

namespace trainsim::calibrate {
namespace {

class UringIo final : public AsyncIo {
 public:
  explicit UringIo(io_uring ring) : ring_(ring) {}
  ~UringIo() override { io_uring_queue_exit(&ring_); }
  std::string_view backend() const override { return "io_uring"; }

  void prepare(bool write, int fd, void* buffer, std::size_t bytes, off_t offset, std::uint64_t tag) override {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) throw CalibrationError("io_uring: submission queue full");
    if (write) {
      io_uring_prep_write(sqe, fd, buffer, static_cast<unsigned>(bytes), static_cast<__u64>(offset));
    } else {
      io_uring_prep_read(sqe, fd, buffer, static_cast<unsigned>(bytes), static_cast<__u64>(offset));
    }
    io_uring_sqe_set_data64(sqe, tag);
  }

  void submit() override {
    const int r = io_uring_submit(&ring_);
    if (r < 0) throw CalibrationError(std::string("io_uring_submit: ") + std::strerror(-r));
  }

  void wait(std::vector<IoCompletion>& out) override {
    io_uring_cqe* cqe = nullptr;
    int r;
    do {
      r = io_uring_wait_cqe(&ring_, &cqe);
    } while (r == -EINTR);
    if (r < 0) throw CalibrationError(std::string("io_uring_wait_cqe: ") + std::strerror(-r));
    unsigned head = 0, seen = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      out.push_back({io_uring_cqe_get_data64(cqe), static_cast<long>(cqe->res)});
      ++seen;
    }
    io_uring_cq_advance(&ring_, seen);
  }

 private:
  io_uring ring_;
};

class LibaioIo final : public AsyncIo {
 public:
  LibaioIo(io_context_t ctx, int depth) : ctx_(ctx), iocbs_(static_cast<std::size_t>(depth)), events_(depth) {}
  ~LibaioIo() override { io_destroy(ctx_); }
  std::string_view backend() const override { return "libaio"; }

  void prepare(bool write, int fd, void* buffer, std::size_t bytes, off_t offset, std::uint64_t tag) override {
    // iocbs are reused round-robin: at most `depth` requests are ever in flight.
    iocb& cb = iocbs_[next_++ % iocbs_.size()];
    if (write) {
      io_prep_pwrite(&cb, fd, buffer, bytes, offset);
    } else {
      io_prep_pread(&cb, fd, buffer, bytes, offset);
    }
    cb.data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(tag));
    pending_.push_back(&cb);
  }

  void submit() override {
    std::size_t done = 0;
    while (done < pending_.size()) {
      const int r = io_submit(ctx_, static_cast<long>(pending_.size() - done), pending_.data() + done);
      if (r == -EINTR || r == -EAGAIN) continue;
      if (r < 0) throw CalibrationError(std::string("io_submit: ") + std::strerror(-r));
      done += static_cast<std::size_t>(r);
    }
    pending_.clear();
  }

  void wait(std::vector<IoCompletion>& out) override {
    int r;
    do {
      r = io_getevents(ctx_, 1, static_cast<long>(events_.size()), events_.data(), nullptr);
    } while (r == -EINTR);
    if (r < 0) throw CalibrationError(std::string("io_getevents: ") + std::strerror(-r));
    for (int i = 0; i < r; ++i) {
      const long res = static_cast<long>(events_[static_cast<std::size_t>(i)].res);
      out.push_back({static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(events_[static_cast<std::size_t>(i)].data)),
                     res});
    }
  }

 private:
  io_context_t ctx_;
  std::vector<iocb> iocbs_;
  std::vector<io_event> events_;
  std::vector<iocb*> pending_;
  std::size_t next_ = 0;
};

}  // namespace

std::unique_ptr<AsyncIo> open_async_io(int depth, std::string_view backend) {
  int r = 0;
  if (backend != "libaio") {
    io_uring ring{};
    r = io_uring_queue_init(static_cast<unsigned>(depth), &ring, 0);
    if (r == 0) return std::make_unique<UringIo>(ring);
    if (backend == "io_uring") throw CalibrationError(std::string("io_uring_queue_init: ") + std::strerror(-r));
  }
  // io_uring can be disabled (kernel.io_uring_disabled, seccomp in containers): fall back.
  io_context_t ctx = nullptr;
  const int a = io_setup(depth, &ctx);
  if (a == 0) return std::make_unique<LibaioIo>(ctx, depth);
  throw CalibrationError(std::string("no asynchronous I/O:") +
                         (r != 0 ? std::string(" io_uring_queue_init: ") + std::strerror(-r) + ";" : "") +
                         " io_setup: " + std::strerror(-a));
}

}  // namespace trainsim::calibrate
