// Reading a text file line by line, plain or gzip-compressed (zlib reads both alike), for the
// tools around the runtime (mf's pair files, the corpus builder). The runtime's loaders split
// files into byte ranges and have their own readers (runtime/src/input/line_reader.h).
#ifndef TESSERA_COMMON_LINE_FILE_H_
#define TESSERA_COMMON_LINE_FILE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "tessera/common/status.h"

namespace tessera {

// Calls line(text, line_no) for every line of `path` (without its '\n'; numbered from 1; a last
// line without '\n' included) until it returns an error, which is returned. NotFound when the
// file cannot be opened, DataLoss when it cannot be read (a damaged gzip stream), both naming it.
Status ForEachLine(const std::string& path,
                   const std::function<Status(std::string_view text, int64_t line_no)>& line);

}  // namespace tessera

#endif  // TESSERA_COMMON_LINE_FILE_H_
