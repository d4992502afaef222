// LogCapture: every line the nodes of a test log (they copy the default logger's sinks when
// made, so make it first), to assert that a receiver logged what it dropped.
#ifndef TESSERA_TESTS_SUPPORT_LOG_CAPTURE_H_
#define TESSERA_TESTS_SUPPORT_LOG_CAPTURE_H_

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tessera::testing {

class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<Sink>()) {
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~LogCapture() { std::erase(spdlog::default_logger()->sinks(), sink_); }
  int Count(const std::string& text) { return sink_->Count(text); }
  // Whether a line containing `text` comes within `within` (a failure bound).
  bool WaitFor(const std::string& text,
               std::chrono::milliseconds within = std::chrono::seconds(20)) {
    return sink_->WaitFor(text, within);
  }

 private:
  class Sink : public spdlog::sinks::base_sink<std::mutex> {
   public:
    int Count(const std::string& text) {
      std::lock_guard lock(lines_mu_);
      int n = 0;
      for (const std::string& line : lines_) n += line.find(text) != std::string::npos;
      return n;
    }
    bool WaitFor(const std::string& text, std::chrono::milliseconds within) {
      std::unique_lock lock(lines_mu_);
      return cv_.wait_for(lock, within, [&] {
        for (const std::string& line : lines_) {
          if (line.find(text) != std::string::npos) return true;
        }
        return false;
      });
    }

   protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
      std::lock_guard lock(lines_mu_);
      lines_.emplace_back(msg.payload.data(), msg.payload.size());
      cv_.notify_all();
    }
    void flush_() override {}

   private:
    std::mutex lines_mu_;
    std::condition_variable cv_;
    std::vector<std::string> lines_;
  };
  std::shared_ptr<Sink> sink_;
};

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_SUPPORT_LOG_CAPTURE_H_
