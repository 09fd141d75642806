package runtime

import (
	"math/rand/v2"
	"time"
)

// backoff returns how long to wait before reconnect round n (0 for the
// first retry): a random duration between half and all of min*2^n, capped
// at max. The randomness spreads the reconnects of many processes that lost
// the same broker at the same moment; the lower half-bound keeps a retry
// from firing immediately.
func backoff(n int, lo, hi time.Duration) time.Duration {
	d := lo
	for i := 0; i < n && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// sleepCtx waits for d or until done is closed, and reports whether the
// full wait elapsed.
func sleepCtx(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}
