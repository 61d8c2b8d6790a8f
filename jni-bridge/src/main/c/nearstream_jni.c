// libnearstream_jni: what Java cannot do itself on the push path. Map a region file (and,
// read-only, a view slot's segment file), wrap an address as a direct ByteBuffer, shared futex
// wait and wake, and report the C layout of nearstream/shm_layout.h for the cross-language test.
// libc only; no Java fields are touched.
// Every entry point turns a failure into io.nearstream.jni.NativeException(op, errno, text) and
// returns at once.

#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <jni.h>
#include <limits.h>
#include <linux/futex.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "io_nearstream_jni_Natives.h"
#include "nearstream/shm_layout.h"

#define NS_EXPORT __attribute__((visibility("default")))

// Cached in JNI_OnLoad, released in JNI_OnUnload. A weak global ref: a strong one is a GC root
// that keeps NativeException's class loader alive, so a class loader that loaded this library
// (each Flink job that bundles the connector) could never be collected, and the JVM unloads the
// library only when its class loader is collected. While native code of this library runs, the
// calling class keeps that loader, and so the class, alive: the weak ref is always valid then.
static jweak g_native_exception;
static jmethodID g_native_exception_ctor;

// Throws NativeException(op, err, strerror(err)). Returns nothing; callers return at once.
static void throw_errno(JNIEnv* env, const char* op, int err) {
  char buf[256];
  const char* text = err != 0 ? strerror_r(err, buf, sizeof buf) : "invalid argument";
  jstring jop = (*env)->NewStringUTF(env, op);
  if (jop == NULL) return;  // OutOfMemoryError pending
  jstring jtext = (*env)->NewStringUTF(env, text);
  if (jtext == NULL) return;
  jclass cls = (jclass)(*env)->NewLocalRef(env, g_native_exception);
  if (cls == NULL) return;  // cannot happen while a class of this loader calls in (see above)
  jobject ex = (*env)->NewObject(env, cls, g_native_exception_ctor, jop, (jint)err, jtext);
  (*env)->DeleteLocalRef(env, cls);
  if (ex != NULL) (*env)->Throw(env, (jthrowable)ex);
}

NS_EXPORT JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* reserved) {
  (void)reserved;
  JNIEnv* env;
  if ((*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  jclass local = (*env)->FindClass(env, "io/nearstream/jni/NativeException");
  if (local == NULL) return JNI_ERR;
  g_native_exception_ctor =
      (*env)->GetMethodID(env, local, "<init>", "(Ljava/lang/String;ILjava/lang/String;)V");
  g_native_exception = (*env)->NewWeakGlobalRef(env, local);
  (*env)->DeleteLocalRef(env, local);
  if (g_native_exception_ctor == NULL || g_native_exception == NULL) return JNI_ERR;
  return JNI_VERSION_1_8;
}

NS_EXPORT JNIEXPORT void JNICALL JNI_OnUnload(JavaVM* vm, void* reserved) {
  (void)reserved;
  JNIEnv* env;
  if ((*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_8) != JNI_OK) return;
  if (g_native_exception != NULL) (*env)->DeleteWeakGlobalRef(env, g_native_exception);
  g_native_exception = NULL;
}

// Maps the first `length` bytes of `path` MAP_SHARED: read-write (a region, whose control words
// the consumer writes) or read-only (a segment file: the broker's; the consumer only reads records
// through it). `what` names the call in errors. Returns 0 with a NativeException pending on
// failure.
static jlong map_file(JNIEnv* env, jstring path, jlong length, int writable, const char* what) {
  if (path == NULL || length <= 0) {
    char op[64];
    snprintf(op, sizeof op, "%s(null path or length <= 0)", what);
    throw_errno(env, op, EINVAL);
    return 0;
  }
  const char* cpath = (*env)->GetStringUTFChars(env, path, NULL);
  if (cpath == NULL) return 0;  // OutOfMemoryError pending
  char op[320];
  const char* mode = writable ? "O_RDWR" : "O_RDONLY";
  int fd = open(cpath, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    snprintf(op, sizeof op, "open(%s, %s)", cpath, mode);
    (*env)->ReleaseStringUTFChars(env, path, cpath);
    throw_errno(env, op, err);
    return 0;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    snprintf(op, sizeof op, "fstat(%s)", cpath);
    close(fd);
    (*env)->ReleaseStringUTFChars(env, path, cpath);
    throw_errno(env, op, err);
    return 0;
  }
  if (st.st_size < length) {
    // Touching a mapping past the end of the file raises SIGBUS and would kill the JVM.
    snprintf(op, sizeof op, "%s(%s): file has %lld bytes, %lld requested", what, cpath,
             (long long)st.st_size, (long long)length);
    close(fd);
    (*env)->ReleaseStringUTFChars(env, path, cpath);
    throw_errno(env, op, EINVAL);
    return 0;
  }
  const int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
  void* addr = mmap(NULL, (size_t)length, prot, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);  // the mapping keeps the file alive, also once the broker unlinks it
  if (addr == MAP_FAILED) {
    snprintf(op, sizeof op, "mmap(%s, %lld, %s, MAP_SHARED)", cpath, (long long)length,
             writable ? "PROT_READ|PROT_WRITE" : "PROT_READ");
    (*env)->ReleaseStringUTFChars(env, path, cpath);
    throw_errno(env, op, err);
    return 0;
  }
  (*env)->ReleaseStringUTFChars(env, path, cpath);
  return (jlong)(uintptr_t)addr;
}

JNIEXPORT jlong JNICALL Java_io_nearstream_jni_Natives_mapRegion(JNIEnv* env, jclass cls,
                                                                 jstring path, jlong length) {
  (void)cls;
  return map_file(env, path, length, 1, "mapRegion");
}

JNIEXPORT jlong JNICALL Java_io_nearstream_jni_Natives_mapReadOnly(JNIEnv* env, jclass cls,
                                                                   jstring path, jlong length) {
  (void)cls;
  return map_file(env, path, length, 0, "mapReadOnly");
}

JNIEXPORT void JNICALL Java_io_nearstream_jni_Natives_unmapRegion(JNIEnv* env, jclass cls,
                                                                  jlong address, jlong length) {
  (void)cls;
  if (address == 0 || length <= 0) {
    throw_errno(env, "munmap(0 address or length <= 0)", EINVAL);
    return;
  }
  if (munmap((void*)(uintptr_t)address, (size_t)length) != 0) {
    throw_errno(env, "munmap", errno);
  }
}

JNIEXPORT jobject JNICALL Java_io_nearstream_jni_Natives_directBuffer(JNIEnv* env, jclass cls,
                                                                      jlong address, jlong length) {
  (void)cls;
  if (address == 0 || length < 0 || length > INT_MAX) {
    throw_errno(env, "directBuffer(0 address or length outside [0, 2^31))", EINVAL);
    return NULL;
  }
  jobject buf = (*env)->NewDirectByteBuffer(env, (void*)(uintptr_t)address, length);
  if (buf == NULL && !(*env)->ExceptionCheck(env)) {
    throw_errno(env, "NewDirectByteBuffer", ENOTSUP);
  }
  return buf;
}

JNIEXPORT jint JNICALL Java_io_nearstream_jni_Natives_futexWait(JNIEnv* env, jclass cls,
                                                                jlong address, jint expected,
                                                                jlong timeout_nanos) {
  (void)cls;
  if (address == 0 || (address & 3) != 0) {
    throw_errno(env, "futexWait(address not 4-byte aligned)", EINVAL);
    return 0;
  }
  struct timespec ts;
  struct timespec* tsp = NULL;
  if (timeout_nanos >= 0) {
    ts.tv_sec = (time_t)(timeout_nanos / 1000000000LL);
    ts.tv_nsec = (long)(timeout_nanos % 1000000000LL);
    tsp = &ts;
  }
  // FUTEX_WAIT without FUTEX_PRIVATE_FLAG: the word is in a MAP_SHARED file mapping and the waker
  // is another process. The timeout is relative (CLOCK_MONOTONIC).
  long rc = syscall(SYS_futex, (uint32_t*)(uintptr_t)address, FUTEX_WAIT, (uint32_t)expected, tsp,
                    NULL, 0);
  if (rc == 0) return 0;
  switch (errno) {
    case ETIMEDOUT: return 1;
    case EAGAIN: return 2;
    case EINTR: return 0;  // a signal; the caller re-checks its condition like after a wake
    default: throw_errno(env, "futex(FUTEX_WAIT)", errno); return 0;
  }
}

JNIEXPORT jint JNICALL Java_io_nearstream_jni_Natives_futexWake(JNIEnv* env, jclass cls,
                                                                jlong address, jint count) {
  (void)cls;
  if (address == 0 || (address & 3) != 0 || count <= 0) {
    throw_errno(env, "futexWake(address not 4-byte aligned or count <= 0)", EINVAL);
    return 0;
  }
  long rc = syscall(SYS_futex, (uint32_t*)(uintptr_t)address, FUTEX_WAKE, count, NULL, NULL, 0);
  if (rc < 0) {
    throw_errno(env, "futex(FUTEX_WAKE)", errno);
    return 0;
  }
  return (jint)rc;
}

JNIEXPORT void JNICALL Java_io_nearstream_jni_Natives_noop(JNIEnv* env, jclass cls) {
  (void)env;
  (void)cls;
}

// The layout of nearstream/shm_layout.h as the C compiler sees it, for ShmLayoutTest. The order
// is the contract with that test (ShmLayoutTest.C_ORDER); append, never reorder.
#define NS_OFF(type, field) (jlong) offsetof(type, field)
static const jlong kLayout[] = {
    // constants
    (jlong)NS_SHM_MAGIC,
    NS_SHM_LAYOUT_VERSION,
    NS_SHM_HEADER_BYTES,
    NS_SHM_RING_HEADER_BYTES,
    NS_SHM_DESCRIPTOR_BYTES,
    NS_SHM_CHUNK_MAP_ENTRY_BYTES,
    NS_SHM_CACHE_LINE,
    NS_SHM_PAGE,
    NS_SHM_BUFFER_ALIGNMENT,
    NS_SHM_MAX_SLOT_BYTES,
    NS_SHM_REGION_OPEN,
    NS_SHM_REGION_CLOSED,
    NS_SHM_RING_FREE,
    NS_SHM_RING_ACTIVE,
    NS_SHM_RING_RECLAIMED,
    // sizes
    sizeof(ns_shm_region_header),
    sizeof(ns_shm_ring_header),
    sizeof(ns_shm_slot_descriptor),
    sizeof(ns_shm_chunk_map_entry),
    // region header
    NS_OFF(ns_shm_region_header, magic),
    NS_OFF(ns_shm_region_header, layout_version),
    NS_OFF(ns_shm_region_header, header_bytes),
    NS_OFF(ns_shm_region_header, ring_count),
    NS_OFF(ns_shm_region_header, slots_per_ring),
    NS_OFF(ns_shm_region_header, slot_bytes),
    NS_OFF(ns_shm_region_header, descriptor_bytes),
    NS_OFF(ns_shm_region_header, ring_header_bytes),
    NS_OFF(ns_shm_region_header, payload_offset),
    NS_OFF(ns_shm_region_header, ring_stride),
    NS_OFF(ns_shm_region_header, region_bytes),
    NS_OFF(ns_shm_region_header, broker_epoch),
    NS_OFF(ns_shm_region_header, broker_heartbeat_ns),
    NS_OFF(ns_shm_region_header, region_state),
    NS_OFF(ns_shm_region_header, release_doorbell),
    NS_OFF(ns_shm_region_header, broker_waiting),
    // ring header
    NS_OFF(ns_shm_ring_header, ring_id),
    NS_OFF(ns_shm_ring_header, subtask_index),
    NS_OFF(ns_shm_ring_header, state),
    NS_OFF(ns_shm_ring_header, generation),
    NS_OFF(ns_shm_ring_header, base_position),
    NS_OFF(ns_shm_ring_header, data_doorbell),
    NS_OFF(ns_shm_ring_header, published),
    NS_OFF(ns_shm_ring_header, consumer_waiting),
    NS_OFF(ns_shm_ring_header, released),
    NS_OFF(ns_shm_ring_header, consumer_heartbeat_ns),
    // slot descriptor
    NS_OFF(ns_shm_slot_descriptor, sequence),
    NS_OFF(ns_shm_slot_descriptor, row_count),
    NS_OFF(ns_shm_slot_descriptor, chunk_count),
    NS_OFF(ns_shm_slot_descriptor, validity_offset),
    NS_OFF(ns_shm_slot_descriptor, validity_length),
    NS_OFF(ns_shm_slot_descriptor, offsets_offset),
    NS_OFF(ns_shm_slot_descriptor, offsets_length),
    NS_OFF(ns_shm_slot_descriptor, data_offset),
    NS_OFF(ns_shm_slot_descriptor, data_length),
    NS_OFF(ns_shm_slot_descriptor, chunk_map_offset),
    NS_OFF(ns_shm_slot_descriptor, chunk_map_length),
    NS_OFF(ns_shm_slot_descriptor, flags),
    NS_OFF(ns_shm_slot_descriptor, payload_length),
    // chunk map entry
    NS_OFF(ns_shm_chunk_map_entry, streamlet),
    NS_OFF(ns_shm_chunk_map_entry, record_count),
    NS_OFF(ns_shm_chunk_map_entry, group),
    NS_OFF(ns_shm_chunk_map_entry, segment),
    NS_OFF(ns_shm_chunk_map_entry, byte_position),
    NS_OFF(ns_shm_chunk_map_entry, chunk_bytes),
    NS_OFF(ns_shm_chunk_map_entry, first_timestamp_ms),
    // descriptor flags (layout version 2)
    NS_SHM_SLOT_FETCH_CHUNK,
    NS_SHM_SLOT_DAMAGED,
    // push geometry bounds
    NS_SHM_MIN_SLOTS_PER_RING,
    NS_SHM_MAX_SLOTS_PER_RING,
    NS_SHM_MIN_SLOT_BYTES,
    NS_SHM_MAX_PUSH_SLOT_BYTES,
    NS_SHM_MAX_RINGS,
    (jlong)NS_SHM_MAX_REGION_BYTES,
    // view slots (layout version 3)
    NS_SHM_VIEW_BYTES,
    NS_SHM_BUFFER_TABLE_ENTRY_BYTES,
    NS_SHM_VIEW_INLINE_BYTES,
    NS_SHM_SEGMENT_FILE_PREFIX_BYTES,
    NS_SHM_SLOT_FORMAT_BINARY,
    NS_SHM_SLOT_FORMAT_BINARY_VIEW,
    sizeof(ns_shm_buffer_table_entry),
    NS_OFF(ns_shm_region_header, slot_format),
    NS_OFF(ns_shm_region_header, segment_file_prefix),
    sizeof(((ns_shm_region_header*)0)->segment_file_prefix),
    NS_OFF(ns_shm_slot_descriptor, buffers_offset),
    NS_OFF(ns_shm_slot_descriptor, buffers_length),
    NS_OFF(ns_shm_buffer_table_entry, segment_file),
    NS_OFF(ns_shm_buffer_table_entry, file_bytes),
};
#undef NS_OFF

// Geometry samples: (slots_per_ring, slot_bytes, ring_count) -> payload offset, stride, region.
static const uint32_t kGeometry[][3] = {
    {8, 1u << 20, 1}, {8, 1u << 20, 2}, {1, 64, 3}, {100, 4160, 7}};

JNIEXPORT jlongArray JNICALL Java_io_nearstream_jni_Natives_offsetsOfLayout(JNIEnv* env,
                                                                            jclass cls) {
  (void)cls;
  enum {
    kFixed = sizeof kLayout / sizeof kLayout[0],
    kSamples = sizeof kGeometry / sizeof kGeometry[0]
  };
  jlong values[kFixed + 3 * kSamples];
  memcpy(values, kLayout, sizeof kLayout);
  for (size_t i = 0; i < kSamples; i++) {
    values[kFixed + 3 * i] = (jlong)ns_shm_payload_offset(kGeometry[i][0]);
    values[kFixed + 3 * i + 1] = (jlong)ns_shm_ring_stride(kGeometry[i][0], kGeometry[i][1]);
    values[kFixed + 3 * i + 2] =
        (jlong)ns_shm_region_bytes(kGeometry[i][2], kGeometry[i][0], kGeometry[i][1]);
  }
  jlongArray out = (*env)->NewLongArray(env, (jsize)(kFixed + 3 * kSamples));
  if (out == NULL) return NULL;  // OutOfMemoryError pending
  (*env)->SetLongArrayRegion(env, out, 0, (jsize)(kFixed + 3 * kSamples), values);
  return out;
}
