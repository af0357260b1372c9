// The unit tests' error assertion: a call that must fail with a given status
// and name what is wrong.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <string>

#include "core/error.h"

namespace hetero::test {

// Runs `f` and checks that it fails with `status` and a message containing
// every one of `parts`.
inline void expect_error(const std::function<void()>& f, hetero_status status,
                         std::initializer_list<std::string> parts) {
  try {
    f();
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), status) << status_name(e.status()) << ": " << e.what();
    for (const std::string& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << "'" << part << "' not in: " << e.what();
    return;
  }
  ADD_FAILURE() << "no error; expected " << status_name(status);
}

}  // namespace hetero::test
