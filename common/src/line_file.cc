#include "tessera/common/line_file.h"

#include <fmt/format.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace tessera {
namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

}  // namespace

Status ForEachLine(const std::string& path,
                   const std::function<Status(std::string_view text, int64_t line_no)>& line) {
  std::unique_ptr<gzFile_s, GzCloser> in(gzopen(path.c_str(), "rb"));
  if (in == nullptr) {
    return Status::NotFound(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  }
  std::string buf(1 << 20, '\0'), pending;
  int64_t line_no = 0;
  int n;
  while ((n = gzread(in.get(), buf.data(), static_cast<unsigned>(buf.size()))) > 0) {
    size_t from = 0;
    for (;;) {
      const void* nl = std::memchr(buf.data() + from, '\n', static_cast<size_t>(n) - from);
      if (nl == nullptr) break;
      const size_t at = static_cast<size_t>(static_cast<const char*>(nl) - buf.data());
      pending.append(buf, from, at - from);
      TESSERA_RETURN_IF_ERROR(line(std::string_view(pending), ++line_no));
      pending.clear();
      from = at + 1;
    }
    pending.append(buf, from, static_cast<size_t>(n) - from);
  }
  int err = Z_OK;
  const char* message = gzerror(in.get(), &err);
  if (n < 0 || (err != Z_OK && err != Z_STREAM_END)) {
    return Status::DataLoss(fmt::format("cannot read '{}': {}", path, message));
  }
  if (!pending.empty()) TESSERA_RETURN_IF_ERROR(line(std::string_view(pending), ++line_no));
  return Status::Ok();
}

}  // namespace tessera
