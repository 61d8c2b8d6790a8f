// Clang thread-safety annotations (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html). Under
// clang they let -Wthread-safety check at compile time that guarded members are touched only with
// their mutex held (scripts/clang-tidy.sh turns that warning on); under other compilers they
// expand to nothing. They only check capabilities whose type is annotated: use
// nearstream::Mutex (common/mutex.h), not std::mutex, which libstdc++ does not annotate.
#pragma once

#if defined(__clang__)
#define NS_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define NS_THREAD_ANNOTATION(x)
#endif

// On a class: its objects are capabilities (locks), e.g. NS_CAPABILITY("mutex").
#define NS_CAPABILITY(name) NS_THREAD_ANNOTATION(capability(name))
// On an RAII class: constructing it acquires, destroying it releases.
#define NS_SCOPED_CAPABILITY NS_THREAD_ANNOTATION(scoped_lockable)

// On a data member: read or written only with `mu` held.
#define NS_GUARDED_BY(mu) NS_THREAD_ANNOTATION(guarded_by(mu))

// On a function: the caller must hold the given capabilities.
#define NS_REQUIRES(...) NS_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
// On a function: the caller must not hold them (the function takes them itself).
#define NS_EXCLUDES(...) NS_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// On a function: it acquires / releases them (no argument: `this`).
#define NS_ACQUIRE(...) NS_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define NS_RELEASE(...) NS_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
// On a function: tells the analysis that the capability is held when it returns (no check).
#define NS_ASSERT_CAPABILITY(x) NS_THREAD_ANNOTATION(assert_capability(x))
// For a function that holds a varying number of locks at once (in a documented order), which
// the analysis cannot follow.
#define NS_NO_THREAD_SAFETY_ANALYSIS NS_THREAD_ANNOTATION(no_thread_safety_analysis)
