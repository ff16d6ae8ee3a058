// Status, the status macros, Slice, MonoDelta/MonoTime and the absl -> kudu status map.

#include "kudu/util/status.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/status/status.h"
#include "compat/kudu/status_convert.h"
#include "kudu/util/monotime.h"
#include "kudu/util/slice.h"

namespace kudu {
namespace {

TEST(StatusTest, OkAndCodes) {
  EXPECT_TRUE(Status::OK().ok()) << Status::OK().ToString();
  EXPECT_EQ("OK", Status::OK().ToString());
  Status s = Status::NotFound("table", "db.t");
  EXPECT_FALSE(s.ok()) << s.ToString();
  EXPECT_TRUE(s.IsNotFound());
  EXPECT_FALSE(s.IsAlreadyPresent());
  EXPECT_EQ("Not found: table: db.t", s.ToString());
  EXPECT_EQ("table: db.t", s.message().ToString());
  EXPECT_EQ(-1, s.posix_code());
  EXPECT_EQ("IO error: disk (error 5)", Status::IOError("disk", "", EIO).ToString());
  EXPECT_TRUE(Status::IOError("disk", "", EIO).IsDiskFailure());
  EXPECT_TRUE(Status::NotSupported("x").IsNotSupported());
  EXPECT_EQ("Not implemented", Status::NotSupported("x").CodeAsString());
  EXPECT_TRUE(Status::Incomplete("x").IsIncomplete());
  EXPECT_TRUE(Status::Immutable("x").IsImmutable());
  EXPECT_TRUE(Status::EndOfFile("x").IsEndOfFile());
}

TEST(StatusTest, CopyMovePrependAppend) {
  Status a = Status::InvalidArgument("bad");
  Status b = a;
  EXPECT_EQ(a.ToString(), b.ToString());
  Status c = std::move(b);
  EXPECT_TRUE(c.IsInvalidArgument());
  a = Status::OK();
  EXPECT_TRUE(a.ok()) << a.ToString();
  EXPECT_EQ("Invalid argument: ctx: bad", c.CloneAndPrepend("ctx").ToString());
  EXPECT_EQ("Invalid argument: bad: more", c.CloneAndAppend("more").ToString());
  EXPECT_TRUE(Status::OK().CloneAndPrepend("x").ok())
      << Status::OK().CloneAndPrepend("x").ToString();
  EXPECT_GT(c.memory_footprint_including_this(), sizeof(Status));
  int calls = 0;
  Status d = Status::OK().AndThen([&] {
    calls++;
    return Status::Aborted("then");
  });
  EXPECT_TRUE(d.IsAborted());
  EXPECT_TRUE(d.AndThen([&] {
                 calls++;
                 return Status::OK();
               }).IsAborted());
  EXPECT_EQ(1, calls);
}

Status ReturnsFirstError(int* reached) {
  KUDU_RETURN_NOT_OK(Status::OK());
  (*reached)++;
  KUDU_RETURN_NOT_OK_PREPEND(Status::TimedOut("slow"), "step 2");
  (*reached)++;
  return Status::OK();
}

int ReturnsCode() {
  KUDU_RETURN_NOT_OK_RET(Status::Corruption("x"), 7);
  return 0;
}

TEST(StatusTest, Macros) {
  int reached = 0;
  Status s = ReturnsFirstError(&reached);
  EXPECT_EQ(1, reached);
  EXPECT_EQ("Timed out: step 2: slow", s.ToString());
  EXPECT_EQ(7, ReturnsCode());
  KUDU_CHECK_OK(Status::OK());
  EXPECT_DEATH(KUDU_CHECK_OK(Status::IllegalState("boom")), "Bad status: Illegal state: boom");
  EXPECT_DEATH(KUDU_LOG(FATAL) << "fatal " << 42, "fatal 42");
}

TEST(StatusTest, AbslMap) {
  using client::FromAbsl;
  EXPECT_TRUE(FromAbsl(absl::OkStatus()).ok()) << FromAbsl(absl::OkStatus()).ToString();
  EXPECT_TRUE(FromAbsl(absl::NotFoundError("t")).IsNotFound());
  EXPECT_TRUE(FromAbsl(absl::AlreadyExistsError("k")).IsAlreadyPresent());
  EXPECT_TRUE(FromAbsl(absl::InvalidArgumentError("a")).IsInvalidArgument());
  EXPECT_TRUE(FromAbsl(absl::OutOfRangeError("a")).IsInvalidArgument());
  EXPECT_TRUE(FromAbsl(absl::DeadlineExceededError("a")).IsTimedOut());
  EXPECT_TRUE(FromAbsl(absl::UnavailableError("a")).IsServiceUnavailable());
  EXPECT_TRUE(FromAbsl(absl::FailedPreconditionError("a")).IsIllegalState());
  EXPECT_TRUE(FromAbsl(absl::ResourceExhaustedError("a")).IsIncomplete());
  EXPECT_TRUE(FromAbsl(absl::DataLossError("a")).IsCorruption());
  EXPECT_TRUE(FromAbsl(absl::UnimplementedError("a")).IsNotSupported());
  EXPECT_TRUE(FromAbsl(absl::AbortedError("a")).IsAborted());
  EXPECT_TRUE(FromAbsl(absl::PermissionDeniedError("a")).IsNotAuthorized());
  EXPECT_TRUE(FromAbsl(absl::UnknownError("some operations failed")).IsIOError());
  EXPECT_TRUE(FromAbsl(absl::InternalError("a")).IsRuntimeError());
  EXPECT_EQ("Not found: table 'x' not found",
            FromAbsl(absl::NotFoundError("table 'x' not found")).ToString());
}

TEST(SliceTest, Basics) {
  std::string str = "hello";
  Slice s(str);
  EXPECT_EQ(5u, s.size());
  EXPECT_EQ('h', s[0]);
  EXPECT_TRUE(s.starts_with("he"));
  EXPECT_FALSE(s.starts_with("hex"));
  EXPECT_EQ(Slice("hello"), s);
  EXPECT_LT(Slice("abc"), Slice("abd"));
  EXPECT_LT(Slice("ab"), Slice("abc"));
  EXPECT_EQ(0, Slice().compare(Slice("")));
  s.remove_prefix(1);
  s.truncate(3);
  EXPECT_EQ("ell", s.ToString());
  EXPECT_TRUE(s.check_size(3).ok()) << s.check_size(3).ToString();
  EXPECT_TRUE(s.check_size(4).IsCorruption());
  EXPECT_EQ("a\\x00b", Slice("a\0b", 3).ToDebugString());
  EXPECT_EQ("ab...<4 bytes total>", Slice("abcd").ToDebugString(2));
  EXPECT_TRUE(IsAllZeros(Slice("\0\0", 2)));
  EXPECT_FALSE(IsAllZeros(Slice("\0a", 2)));
  SliceMap<int>::type m;
  m[Slice("b")] = 2;
  m[Slice("a")] = 1;
  EXPECT_EQ(1, m.begin()->second);
}

TEST(MonoTimeTest, DeltasAndTimes) {
  EXPECT_FALSE(MonoDelta().Initialized());
  MonoDelta d = MonoDelta::FromMilliseconds(1500);
  EXPECT_TRUE(d.Initialized());
  EXPECT_EQ(1500, d.ToMilliseconds());
  EXPECT_EQ(1500000, d.ToMicroseconds());
  EXPECT_DOUBLE_EQ(1.5, d.ToSeconds());
  EXPECT_EQ("1.500s", d.ToString());
  EXPECT_EQ(MonoDelta::FromSeconds(1.5), d);
  EXPECT_LT(MonoDelta::FromMicroseconds(1), MonoDelta::FromNanoseconds(1001));
  EXPECT_EQ(MonoDelta::FromSeconds(2), d + MonoDelta::FromMilliseconds(500));
  struct timespec ts;
  MonoDelta::FromNanoseconds(-1).ToTimeSpec(&ts);
  EXPECT_EQ(-1, ts.tv_sec);
  EXPECT_EQ(999999999, ts.tv_nsec);

  EXPECT_FALSE(MonoTime().Initialized());
  const MonoTime start = MonoTime::Now();
  SleepFor(MonoDelta::FromMilliseconds(2));
  const MonoTime end = MonoTime::Now();
  EXPECT_GE((end - start).ToMilliseconds(), 2);
  EXPECT_LT(start, end);
  EXPECT_EQ(start + (end - start), end);
  EXPECT_EQ(end - (end - start), start);
  EXPECT_LT(MonoTime::Min(), start);
  EXPECT_LT(end, MonoTime::Max());
}

}  // namespace
}  // namespace kudu
