package testenv

import (
	"fmt"
	"runtime"
	"testing"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the calling goroutine, as the real one does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// runEventually calls Eventually with r on a goroutine of its own, so that
// Fatalf can end it.
func runEventually(r *fatalRecorder, what string, cond func() bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		Eventually(r, what, cond)
	}()
	<-done
}

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	r := &fatalRecorder{TB: t}
	runEventually(r, "the third call", func() bool { calls++; return calls == 3 })
	if r.msg != "" || calls != 3 {
		t.Errorf("after %d calls: failed with %q, want success on the third call", calls, r.msg)
	}
}

func TestEventuallyFailsNamingWhatItWaitedFor(t *testing.T) {
	t.Setenv("WARREN_TEST_WAIT", "30ms")
	r := &fatalRecorder{TB: t}
	runEventually(r, "a condition that never holds", func() bool { return false })
	if want := "gave up waiting for a condition that never holds"; r.msg != want {
		t.Errorf("failure %q, want %q", r.msg, want)
	}
}
