package testenv

import (
	"os"
	"testing"
	"time"
)

// DefaultWait is how long [Eventually] waits before it gives up. It is a
// guard against a test that would otherwise hang, not a claim about how fast
// anything is: a loaded CI machine may need most of it.
const DefaultWait = 60 * time.Second

// Eventually polls cond every few milliseconds until it holds, and fails the
// test, naming what, if it still does not hold after [DefaultWait].
//
// WARREN_TEST_WAIT (a Go duration such as "2s") shortens the wait, for
// checking that a test fails when the code under test is broken on purpose.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	wait := DefaultWait
	if d, err := time.ParseDuration(os.Getenv("WARREN_TEST_WAIT")); err == nil {
		wait = d
	}
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
