#include "nearstream/push/shm_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>

namespace nearstream::push {

namespace {

constexpr uint64_t kMaxRegionBytes = uint64_t{1} << 40;

template <typename T>
std::atomic_ref<T> Word(T& w) {
  return std::atomic_ref<T>(w);
}

// Writes the header and every ring of a zero-filled mapping; magic is left for the caller.
void InitializeRegion(uint8_t* base, const RegionGeometry& g, uint64_t broker_epoch) {
  auto* h = reinterpret_cast<ns_shm_region_header*>(base);
  h->layout_version = NS_SHM_LAYOUT_VERSION;
  h->header_bytes = NS_SHM_HEADER_BYTES;
  h->ring_count = g.ring_count;
  h->slots_per_ring = g.slots_per_ring;
  h->slot_bytes = g.slot_bytes;
  h->descriptor_bytes = NS_SHM_DESCRIPTOR_BYTES;
  h->ring_header_bytes = NS_SHM_RING_HEADER_BYTES;
  h->payload_offset = static_cast<uint32_t>(g.payload_offset());
  h->ring_stride = g.ring_stride();
  h->region_bytes = g.region_bytes();
  h->broker_epoch = broker_epoch;
  h->broker_heartbeat_ns = MonotonicNowNs();
  h->region_state = NS_SHM_REGION_OPEN;
  for (uint32_t r = 0; r < g.ring_count; ++r) {
    auto* ring = ns_shm_ring(base, r);
    ring->ring_id = r;
    ring->state = NS_SHM_RING_FREE;
    for (uint32_t s = 0; s < g.slots_per_ring; ++s) ns_shm_descriptor(base, r, s)->sequence = s;
  }
}

Status CheckField(const char* name, uint64_t got, uint64_t want) {
  if (got == want) return Status::Ok();
  return Status::InvalidArgument(std::string("shm region: ") + name + " is " + std::to_string(got) +
                                 ", expected " + std::to_string(want));
}

}  // namespace

Status RegionGeometry::Validate() const {
  if (ring_count == 0 || slots_per_ring == 0 || slot_bytes == 0) {
    return Status::InvalidArgument("shm region: counts and slot_bytes must be > 0");
  }
  if (slot_bytes % NS_SHM_BUFFER_ALIGNMENT != 0 || slot_bytes > NS_SHM_MAX_SLOT_BYTES) {
    return Status::InvalidArgument(
        "shm region: slot_bytes must be a multiple of 64 and at most 1 GiB, got " +
        std::to_string(slot_bytes));
  }
  if (slots_per_ring > (1u << 20) || region_bytes() > kMaxRegionBytes) {
    return Status::InvalidArgument("shm region: geometry too large");
  }
  return Status::Ok();
}

ShmRegion::ShmRegion(std::string path, int fd, uint8_t* base, uint64_t size,
                     RegionGeometry geometry, bool owner)
    : path_(std::move(path)),
      fd_(fd),
      base_(base),
      size_(size),
      geometry_(geometry),
      owner_(owner) {}

ShmRegion::~ShmRegion() {
  munmap(base_, size_);
  close(fd_);
  if (owner_) (void)Unlink();
}

Status ShmRegion::Unlink() {
  if (!owner_ || unlinked_) return Status::Ok();
  unlinked_ = true;
  if (unlink(path_.c_str()) != 0 && errno != ENOENT) {
    return Status::FromErrno(StatusCode::kIoError, "unlink " + path_, errno);
  }
  return Status::Ok();
}

Result<std::unique_ptr<ShmRegion>> ShmRegion::Create(const CreateOptions& options) {
  RETURN_IF_ERROR(options.geometry.Validate());
  if (options.name.empty() || options.name.find('/') != std::string::npos) {
    return Status::InvalidArgument("shm region: bad file name '" + options.name + "'");
  }
  if (options.slot_format != NS_SHM_SLOT_FORMAT_BINARY &&
      options.slot_format != NS_SHM_SLOT_FORMAT_BINARY_VIEW) {
    return Status::InvalidArgument("shm region: unknown slot format " +
                                   std::to_string(options.slot_format));
  }
  if (options.segment_file_prefix.size() >= NS_SHM_SEGMENT_FILE_PREFIX_BYTES) {
    return Status::InvalidArgument("shm region: segment file prefix too long");
  }
  const std::string path = options.dir + "/" + options.name;
  const RegionGeometry& g = options.geometry;
  const uint64_t size = g.region_bytes();

  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Status::FromErrno(StatusCode::kIoError, "create " + path, errno);
  auto fail = [&](const std::string& what, int err) {
    close(fd);
    unlink(path.c_str());
    return Status::FromErrno(StatusCode::kIoError, what + " " + path, err);
  };
  if (fchmod(fd, 0600) != 0) return fail("fchmod", errno);
  // Reserve the pages now: on a full tmpfs a plain ftruncate would succeed and the first touch
  // of a page would raise SIGBUS in the broker or, worse, in the consumer's JVM.
  int err = posix_fallocate(fd, 0, static_cast<off_t>(size));
  if (err == EOPNOTSUPP || err == EINVAL) {
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) return fail("ftruncate", errno);
  } else if (err != 0) {
    return fail("fallocate", err);
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return fail("mmap", errno);
  auto* base = static_cast<uint8_t*>(p);
  InitializeRegion(base, g, options.broker_epoch);
  auto* header = reinterpret_cast<ns_shm_region_header*>(base);
  header->slot_format = options.slot_format;
  std::memcpy(header->segment_file_prefix, options.segment_file_prefix.data(),
              options.segment_file_prefix.size());
  // Last, with release order: a mapper that acquires the magic sees a complete header.
  Word(reinterpret_cast<ns_shm_region_header*>(base)->magic)
      .store(NS_SHM_MAGIC, std::memory_order_release);
  return std::unique_ptr<ShmRegion>(new ShmRegion(path, fd, base, size, g, /*owner=*/true));
}

Result<std::unique_ptr<ShmRegion>> ShmRegion::Open(const std::string& path) {
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return Status::FromErrno(StatusCode::kIoError, "open " + path, errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return Status::FromErrno(StatusCode::kIoError, "fstat " + path, e);
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < NS_SHM_HEADER_BYTES) {
    close(fd);
    return Status::InvalidArgument("shm region: " + path + " is " + std::to_string(size) +
                                   " bytes, not ready");
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    close(fd);
    return Status::FromErrno(StatusCode::kIoError, "mmap " + path, e);
  }
  auto* base = static_cast<uint8_t*>(p);
  auto* h = reinterpret_cast<ns_shm_region_header*>(base);
  RegionGeometry g;
  Status s = [&]() -> Status {
    const uint64_t magic = Word(h->magic).load(std::memory_order_acquire);
    if (magic != NS_SHM_MAGIC) {
      return Status::InvalidArgument("shm region: " + path +
                                     " has no magic (not a region, or not initialized yet)");
    }
    if (h->layout_version != NS_SHM_LAYOUT_VERSION) {
      return Status::UnsupportedVersion("shm region: layout version " +
                                        std::to_string(h->layout_version) + ", this build speaks " +
                                        std::to_string(NS_SHM_LAYOUT_VERSION));
    }
    g = RegionGeometry{h->ring_count, h->slots_per_ring, h->slot_bytes};
    RETURN_IF_ERROR(g.Validate());
    RETURN_IF_ERROR(CheckField("header_bytes", h->header_bytes, NS_SHM_HEADER_BYTES));
    RETURN_IF_ERROR(CheckField("descriptor_bytes", h->descriptor_bytes, NS_SHM_DESCRIPTOR_BYTES));
    RETURN_IF_ERROR(
        CheckField("ring_header_bytes", h->ring_header_bytes, NS_SHM_RING_HEADER_BYTES));
    RETURN_IF_ERROR(CheckField("payload_offset", h->payload_offset, g.payload_offset()));
    RETURN_IF_ERROR(CheckField("ring_stride", h->ring_stride, g.ring_stride()));
    RETURN_IF_ERROR(CheckField("region_bytes", h->region_bytes, g.region_bytes()));
    return CheckField("file size", size, g.region_bytes());
  }();
  if (!s.ok()) {
    munmap(base, size);
    close(fd);
    return s;
  }
  return std::unique_ptr<ShmRegion>(new ShmRegion(path, fd, base, size, g, /*owner=*/false));
}

uint64_t ShmRegion::broker_epoch() const { return header()->broker_epoch; }

uint64_t ShmRegion::broker_heartbeat_ns() const {
  return Word(header()->broker_heartbeat_ns).load(std::memory_order_acquire);
}

uint32_t ShmRegion::region_state() const {
  return Word(header()->region_state).load(std::memory_order_acquire);
}

void ShmRegion::SetBrokerHeartbeat(uint64_t now_ns) {
  Word(header()->broker_heartbeat_ns).store(now_ns, std::memory_order_release);
}

void ShmRegion::MarkClosed() {
  Word(header()->region_state).store(NS_SHM_REGION_CLOSED, std::memory_order_release);
}

}  // namespace nearstream::push
