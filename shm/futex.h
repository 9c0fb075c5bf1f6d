// Sleeping on a 32-bit word in shared memory until another process changes it. Shared (not
// FUTEX_PRIVATE) futexes, since the word lives in a segment mapped by several processes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace ohio {

// Sleeps while *word == expected, for at most `timeout`. Returns when woken, when the word
// differs, on a signal or at the timeout: callers re-check their condition in every case.
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds timeout);

void FutexWakeAll(std::atomic<uint32_t>* word);

}  // namespace ohio
