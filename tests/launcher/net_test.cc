#include "tessera/launcher/net.h"

#include <gtest/gtest.h>

namespace tessera::launcher {
namespace {

TEST(NetTest, ResolvesNamesAndAddresses) {
  Result<std::string> localhost = ResolveHostAddress("localhost");
  ASSERT_TRUE(localhost.ok()) << localhost.status().ToString();
  EXPECT_TRUE(*localhost == "127.0.0.1" || *localhost == "::1") << *localhost;
  Result<std::string> numeric = ResolveHostAddress("127.0.0.5");
  ASSERT_TRUE(numeric.ok());
  EXPECT_EQ(*numeric, "127.0.0.5");
  Result<std::string> missing = ResolveHostAddress("no-such-host.invalid");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("cannot resolve host 'no-such-host.invalid'"),
            std::string::npos);
}

TEST(NetTest, LocalAddressTowardLoopbackIsLoopback) {
  Result<std::string> local = LocalAddressToward("127.0.0.1");
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_EQ(*local, "127.0.0.1");
  EXPECT_FALSE(LocalAddressToward("no-such-host.invalid").ok());
}

}  // namespace
}  // namespace tessera::launcher
