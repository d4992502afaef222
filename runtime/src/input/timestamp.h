// What the rating loaders accept as a timestamp column (which they validate and then ignore).
#ifndef TESSERA_RUNTIME_SRC_INPUT_TIMESTAMP_H_
#define TESSERA_RUNTIME_SRC_INPUT_TIMESTAMP_H_

#include <string_view>

namespace tessera::internal {

// True for a finite number (Unix seconds, integer or not: "881250949", "1.1e9", "881250949.25")
// or an ISO 8601 date or date-time: "2005-09-06", "2005-09-06 13:45", "2005-09-06T13:45:07.5Z",
// "2005-09-06T13:45:07+02:00". Field ranges are checked (month 1-12, day 1-31, hour 0-23,
// minute 0-59, second 0-60); calendars are not (February 31 passes).
bool IsTimestamp(std::string_view s);

}  // namespace tessera::internal

#endif  // TESSERA_RUNTIME_SRC_INPUT_TIMESTAMP_H_
