#include "gzip_text.hpp"

#include <zlib.h>

#include <stdexcept>

namespace trainsim::test {

std::string gzip_member(const std::string& text) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) throw std::runtime_error("deflateInit2");
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int done = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (done != Z_STREAM_END) throw std::runtime_error("deflate");
  return out;
}

std::string gzipped(const std::string& head, const std::string& filler, std::size_t repeat, const std::string& tail) {
  std::string out = gzip_member(head);
  const std::string member = gzip_member(filler);
  out.reserve(out.size() + member.size() * repeat);
  for (std::size_t i = 0; i < repeat; ++i) out += member;
  return out + gzip_member(tail);
}

}  // namespace trainsim::test
