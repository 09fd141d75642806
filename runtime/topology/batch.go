package topology

import "time"

// Batch makes a consumer's handler take its facts in batches: a batch
// closes at Size facts or Wait after its first fact, whichever comes
// first, and each fact in it is settled on its own.
//
// A batch is made of unacked deliveries, so it can never hold more than
// the channel's prefetch: Size must be at most Prefetch. With Concurrency
// handlers, Prefetch of Size × Concurrency lets every handler hold a full
// batch at once, which is the default prefetch of a batch consumer; with
// less, the handlers' batches share the window and fill in turn.
//
// An ordered consumer with a Batch holds at most one fact per ordering key
// in a batch; its prefetch is per shard queue, as for any ordered
// consumer.
type Batch struct {
	Size int           // facts per batch, 1 to Prefetch
	Wait time.Duration // how long a batch waits after its first fact, above 0
}

// Batched reports whether the consumer takes its facts in batches.
func (c Consumer) Batched() bool { return c.Batch.Size > 0 }

// checkBatch adds to ps what is wrong with a batch consumer's settings,
// defaults applied.
func checkBatch(ps *problems, c ConsumerSpec) {
	b := c.Batch
	if b == nil {
		return
	}
	switch {
	case b.Size < 1:
		ps.add("batch.size", -1, "batch size %d: expected at least 1", b.Size)
	case b.Size > c.Prefetch:
		ps.add("batch.size", -1, "batch size %d: expected at most the prefetch (%d), or no batch could fill: the broker sends no more unacked facts than the prefetch; raise prefetch to %d (size × concurrency) or lower the size",
			b.Size, c.Prefetch, b.Size*c.Concurrency)
	}
	if b.Wait <= 0 {
		ps.add("batch.wait", -1, "batch wait %s: expected a positive duration such as \"200ms\", how long a batch waits after its first fact for more", b.Wait)
	}
}

// maxPrefetch is the largest prefetch AMQP can carry (a short integer),
// the bound of a batch consumer's default prefetch.
const maxPrefetch = 65535
