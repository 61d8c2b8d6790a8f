#include "nearstream/common/thread_name.h"

#include <pthread.h>

namespace nearstream {

void NameThread(std::thread& thread, const std::string& name) {
  constexpr size_t kMaxLength = 15;  // TASK_COMM_LEN - 1
  pthread_setname_np(thread.native_handle(), name.substr(0, kMaxLength).c_str());
}

}  // namespace nearstream
