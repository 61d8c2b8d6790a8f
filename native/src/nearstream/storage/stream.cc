#include "nearstream/storage/stream.h"

namespace nearstream::storage {

Stream::Stream(StreamConfig config, Env* env, const std::string& dir) : config_(std::move(config)) {
  streamlets_.reserve(config_.streamlets);
  for (uint32_t i = 0; i < config_.streamlets; ++i) {
    std::string sdir = dir.empty() ? std::string() : dir + "/" + std::to_string(i);
    streamlets_.push_back(std::make_unique<Streamlet>(i, &config_, env, sdir));
  }
}

}  // namespace nearstream::storage
