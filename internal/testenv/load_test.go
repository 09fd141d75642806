package testenv

import (
	"runtime"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	t.Setenv("WARREN_TEST_LOAD", "")
	if got := Load(t, 50_000, 100); got != 50_000 {
		t.Errorf("unset: %d, want the full 50,000", got)
	}
	t.Setenv("WARREN_TEST_LOAD", "0.1")
	if got := Load(t, 50_000, 100); got != 5_000 {
		t.Errorf("0.1 of 50,000: %d", got)
	}
	if got := Load(t, 500, 100); got != 100 {
		t.Errorf("0.1 of 500, at least 100: %d", got)
	}
	if got := Load(t, 50, 100); got != 50 {
		t.Errorf("0.1 of 50, at least 100: %d, want the whole 50", got)
	}
	for _, bad := range []string{"0", "1.5", "a tenth"} {
		t.Setenv("WARREN_TEST_LOAD", bad)
		r := &fatalRecorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			Load(r, 10, 1)
			runtime.Goexit()
		}()
		<-done
		if !strings.Contains(r.msg, "want a fraction above 0 and at most 1") {
			t.Errorf("WARREN_TEST_LOAD=%s: %q", bad, r.msg)
		}
	}
}
