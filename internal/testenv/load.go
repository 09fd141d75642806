package testenv

import (
	"os"
	"strconv"
	"testing"
)

// Load returns the size of a load test: n, or n times WARREN_TEST_LOAD
// (a fraction above 0 and at most 1), at least least (and never above n). make test runs the
// load tests at their full size against the machine's broker; the targets
// that run the suites again on other brokers (test-rabbitmq4,
// test-cluster) set WARREN_TEST_LOAD=0.1. What a load test proves about
// size (a poison queue of 50,000 grouped in pages, a thousand saga
// instances racing) is proven by the first run; what another broker could
// change (requeue order, redelivery, dead-lettering, confirms) shows at a
// tenth of the size.
func Load(t testing.TB, n, least int) int {
	t.Helper()
	s := os.Getenv("WARREN_TEST_LOAD")
	if s == "" {
		return n
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 || f > 1 {
		t.Fatalf("WARREN_TEST_LOAD=%q: want a fraction above 0 and at most 1", s)
	}
	m := min(max(int(float64(n)*f), least), n)
	if m != n {
		t.Logf("load test at %d of its %d (WARREN_TEST_LOAD=%s)", m, n, s)
	}
	return m
}
