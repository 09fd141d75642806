package streamproto

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/logs"
)

// The stream client's own lines go to slog.Default() (its default logger
// prints "[error]" lines on standard error), and the two that a close
// brings, and a reader's credit written as its connection drops, which
// report nothing lost, are debug lines; others keep their
// level.
func TestClientLinesGoToSlog(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(old) })

	// As the client reports them: a write on the socket it closed, and a
	// close request on a connection the broker closed.
	closedSocket := &net.OpError{Op: "write", Net: "tcp", Err: net.ErrClosed}
	brokenPipe := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}
	logs.LogError("Error handling command response: %s - details: %s", closedSocket, "Socket write buffer closeFrameHandler")
	logs.LogWarn("error during Send client close %s", brokenPipe)
	logs.LogWarn("credit error:%s", brokenPipe) // a reader's credit as its connection drops
	// Not noise: another command's error, another write's, another warning.
	logs.LogError("Error handling command response: %s - details: %s", errors.New("bad frame"), "Socket write buffer closeFrameHandler")
	logs.LogError("Error handling command response: %s - details: %s", closedSocket, "Socket write buffer credit")
	logs.LogWarn("error during Send client close %s", errors.New("frame too large"))
	logs.LogWarn("credit error:%s", errors.New("subscription not found"))
	logs.LogInfo("producer %d closed", 3)

	var levels []string
	for line := range strings.Lines(buf.String()) {
		level, _, _ := strings.Cut(line[strings.Index(line, "level=")+len("level="):], " ")
		levels = append(levels, level)
	}
	want := []string{"DEBUG", "DEBUG", "DEBUG", "ERROR", "ERROR", "WARN", "WARN", "INFO"}
	if strings.Join(levels, " ") != strings.Join(want, " ") {
		t.Fatalf("levels %v, want %v:\n%s", levels, want, buf.String())
	}
}
