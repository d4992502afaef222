// Checks the apps make on their input and output paths before any work starts, so that a typo
// costs a second, not a training run.
//
// Every function returns a Status whose message names the path and what is wrong with it.
// Thread safety: reentrant.
#ifndef TESSERA_APPS_COMMON_APP_IO_H_
#define TESSERA_APPS_COMMON_APP_IO_H_

#include <string>
#include <vector>

#include "tessera/common/status.h"

namespace tessera::apps {

// `path` is an existing readable file (not a directory). Errors: NotFound, InvalidArgument.
Status CheckInputFile(const std::string& path);

// `path` can be written: its directory exists and is writable and `path` is not a directory.
// Leaves no file behind when `path` did not exist. Errors: NotFound, InvalidArgument.
Status CheckOutputFile(const std::string& path);

// Creates `dir` (and its parents) when missing and checks that files can be created in it.
// Errors: InvalidArgument (a file in the way, not writable).
Status PrepareOutputDir(const std::string& dir);

// `dir` is a directory holding every one of `files` (names relative to it).
// Errors: NotFound (the directory or a file is missing, naming it), InvalidArgument.
Status CheckModelDir(const std::string& dir, const std::vector<std::string>& files);

}  // namespace tessera::apps

#endif  // TESSERA_APPS_COMMON_APP_IO_H_
