// The translation unit tests/CMakeLists.txt builds the tests' precompiled <gtest/gtest.h> with;
// nothing of it is linked.
