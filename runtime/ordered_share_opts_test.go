package runtime

import "time"

// withBalanceInterval shortens how often an ordered consumer shares out
// its shards, for tests.
func withBalanceInterval(d time.Duration) ConsumerOption {
	return func(o *consumerOptions) { o.balanceEvery = d }
}
