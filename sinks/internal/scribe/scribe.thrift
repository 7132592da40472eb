// Scribe's public interface (facebookarchive/scribe, if/scribe.thrift)
// without its fb303 base service: the Log call is all a sink needs.
//
// Regenerate the Go code with `go generate ./sinks/internal/scribe`
// (see README.md).

namespace go scribe

enum ResultCode {
  OK,
  TRY_LATER
}

struct LogEntry {
  1: string category,
  2: string message
}

service scribe {
  ResultCode Log(1: list<LogEntry> messages);
}
