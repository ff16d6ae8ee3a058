// Tests of the file-descriptor helpers: values, EOF, short writes and reads interrupted by
// signals.

#include "common/fd_util.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace basalt {
namespace {
namespace fd_util_test_file {

class Pipe {
 public:
  Pipe() { EXPECT_EQ(pipe(fds_), 0); }
  ~Pipe() {
    CloseWriter();
    close(fds_[0]);
  }
  int reader() const { return fds_[0]; }
  int writer() const { return fds_[1]; }
  void Write(const void* data, size_t n) { ASSERT_EQ(write(fds_[1], data, n), ssize_t(n)); }
  void CloseWriter() {
    if (fds_[1] >= 0) close(fds_[1]);
    fds_[1] = -1;
  }

 private:
  int fds_[2] = {-1, -1};
};

TEST(FdUtilTest, ReadsAnInt) {
  Pipe p;
  const int v = -123456;
  p.Write(&v, sizeof(v));
  EXPECT_EQ(ReadIntFromPipe(p.reader()), v);
}

TEST(FdUtilTest, EofAndShortReadAreZero) {
  Pipe eof;
  eof.CloseWriter();
  EXPECT_EQ(ReadIntFromPipe(eof.reader()), 0);

  Pipe short_write;
  const char two[2] = {1, 2};
  short_write.Write(two, sizeof(two));
  short_write.CloseWriter();
  EXPECT_EQ(ReadIntFromPipe(short_write.reader()), 0);

  EXPECT_EQ(ReadIntFromPipe(-1), 0);  // EBADF
}

std::atomic<int> g_signals{0};
void CountSignal(int) { g_signals.fetch_add(1); }

// A blocked read interrupted by signals (installed without SA_RESTART, so read(2) fails with
// EINTR) goes on reading and returns the value written afterwards.
TEST(FdUtilTest, RetriesWhenInterrupted) {
  struct sigaction sa = {};
  struct sigaction old = {};
  sa.sa_handler = CountSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // No SA_RESTART.
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  g_signals = 0;
  Pipe p;
  std::atomic<int> got{0};
  std::thread reader([&] { got = ReadIntFromPipe(p.reader()); });
  // Signal the reader while it waits (pacing only: the value is written after the signals).
  for (int i = 0; i < 20; ++i) {
    pthread_kill(reader.native_handle(), SIGUSR1);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const int v = 4242;
  p.Write(&v, sizeof(v));
  reader.join();
  ASSERT_EQ(sigaction(SIGUSR1, &old, nullptr), 0);
  EXPECT_GT(g_signals.load(), 0);
  EXPECT_EQ(got.load(), v);
}

}  // namespace fd_util_test_file
}  // namespace
}  // namespace basalt
