#pragma once
// Which sanitizer instruments this translation unit: RUCCL_ASAN and RUCCL_TSAN are 1 or 0.
// g++ defines __SANITIZE_ADDRESS__ and __SANITIZE_THREAD__; clang 14 defines neither and answers
// __has_feature(address_sanitizer) / __has_feature(thread_sanitizer) instead.

#if defined(__SANITIZE_ADDRESS__)
#define RUCCL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RUCCL_ASAN 1
#endif
#endif
#ifndef RUCCL_ASAN
#define RUCCL_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define RUCCL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RUCCL_TSAN 1
#endif
#endif
#ifndef RUCCL_TSAN
#define RUCCL_TSAN 0
#endif
