// Files written whole and read back whole, as checkpoints keep them: written under a temporary
// name, fsynced and renamed into place, so that a crash never leaves a file that looks complete;
// read back with their size and crc32 checked against what the writer recorded.
#ifndef TESSERA_COMMON_CHECKED_FILE_H_
#define TESSERA_COMMON_CHECKED_FILE_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tessera/common/status.h"

namespace tessera {

// The pieces, in order, as `path` (through `path` + ".tmp"). Unavailable naming the file and the
// step that failed; the temporary file is removed then.
Status WriteFileAtomically(const std::string& path,
                           const std::vector<std::span<const char>>& pieces);

// The whole file. NotFound when it cannot be opened, DataLoss when reading fails.
Result<std::string> ReadWholeFile(const std::string& path);

// zlib's crc32 of `bytes` continued from `crc` (0 to start), for any length.
uint32_t Crc32(std::span<const char> bytes, uint32_t crc = 0);

// The whole file when it has `bytes` bytes and crc32 `crc32`; DataLoss naming the file and the
// difference otherwise (or when it cannot be read).
Result<std::string> ReadCheckedFile(const std::string& path, uint64_t bytes, uint32_t crc32);

}  // namespace tessera

#endif  // TESSERA_COMMON_CHECKED_FILE_H_
