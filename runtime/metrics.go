package runtime

import (
	"sync"
	"sync/atomic"
	"time"
)

// Event is something that happened to a delivery, counted by [Metrics].
type Event int

// The events a consumer counts. Every delivery is Delivered once and then
// ends as at most one of Acked, Retried, Held, Deferred, Poisoned,
// DuplicateSkipped or Returned (for a responder: Acked, ErrorReplied, Expired,
// DuplicateSkipped or Returned): none when the ack itself fails because
// the channel is gone, in
// which case the broker delivers the message again and that delivery is
// counted anew. Redelivered and NewerVersion are counted besides, and end
// nothing. ReplyDropped is no consumer's: a [Requester] counts it. A consumer pausing and resuming is not an event of a delivery:
// it reaches [Metrics.Paused] and [Metrics.Resumed].
const (
	Delivered        Event = iota // a message reached the consumer
	Redelivered                   // the broker had delivered it before without an ack (counted besides Delivered)
	Acked                         // the handler succeeded and the message was acked
	Retried                       // a confirmed copy went to a delay queue, then the original was acked
	Poisoned                      // a confirmed copy went to the poison queue, then the original was acked
	DuplicateSkipped              // the guard had seen the message id already, or (ordered consumers) the fact was in poison already or is the tombstone of a discarded one; acked without calling the handler
	Returned                      // handed back to the broker unsettled (shutdown, or a copy that was not confirmed)
	NewerVersion                  // its x-fact-version is newer than the fact the consumer was generated from (counted besides Delivered; handled as usual)
	Held                          // a dependency was unavailable: a confirmed copy went to a delay queue with its attempt count unchanged, then the original was acked
	ReplyDropped                  // a reply reached a Requester after its caller gave up, or answered a request a second time; counted with an empty consumer and the request's routing key
	// Ordered consumers only, counted besides (see ordered.go):
	RetriedInPlace   // a failed attempt is tried again in place after its ladder delay, the key's later facts waiting
	SequenceGap      // a fact's x-ordering-seq skipped numbers after the last one of its key and source
	SequenceStepBack // a fact's x-ordering-seq was not above the last one of its key and source (and it was not the same fact again)
	// Responders only (see [Responder]), ending a request:
	Expired      // a request whose caller's deadline had passed, acked without a reply: taken after it (not worked on), or failed after it
	ErrorReplied // the request failed (handler error, panic, refused request) and the error went back as its reply; then acked
	// Consumers, plain and ordered:
	Deferred // the handler deferred the fact (Defer): a plain consumer's confirmed copy went to the delay levels with its attempts unchanged, then the original was acked; an ordered consumer waits in place until it is due (counted besides)
	// Sagas only (runtime/saga), counted besides, once the handling committed:
	SagaStarted     // the fact started a saga instance
	SagaCompleted   // the fact or timeout completed its instance
	SagaTimedOut    // a saga's timeout fired and was handled
	SagaConflict    // the instance changed while the fact was handled: handled again on the new state (counted even when the handling then failed)
	SagaLateTimeout // a timeout that fired after its instance completed, or after it was moved or cancelled: dropped
	numEvents
)

var eventNames = [numEvents]string{"delivered", "redelivered", "acked", "retried", "poisoned", "duplicate_skipped", "returned", "newer_version", "held", "reply_dropped", "retried_in_place", "sequence_gap", "sequence_step_back", "expired", "error_replied", "deferred", "saga_started", "saga_completed", "saga_timed_out", "saga_conflict", "saga_late_timeout"}

// String returns the event's snake_case name, suitable as a metric label.
func (e Event) String() string {
	if e < 0 || e >= numEvents {
		return "unknown"
	}
	return eventNames[e]
}

// Metrics receives what consumers count, so that a metrics library
// (Prometheus, OpenTelemetry, expvar) can export it. Implementations must be
// safe for concurrent use and fast: they are called on the delivery path.
type Metrics interface {
	// Count records one event for a delivery of routingKey to consumer.
	Count(consumer string, e Event, routingKey string)
	// ObserveHandler records how long a handler ran and whether it failed.
	ObserveHandler(consumer, routingKey string, d time.Duration, err error)
	// Paused records that consumer stopped taking deliveries because a
	// dependency is unavailable (see [OutagePolicy]); Resumed that it took
	// them again, after being paused for d.
	Paused(consumer string)
	Resumed(consumer string, d time.Duration)
}

type nopMetrics struct{}

func (nopMetrics) Count(string, Event, string)                         {}
func (nopMetrics) ObserveHandler(string, string, time.Duration, error) {}
func (nopMetrics) Paused(string)                                       {}
func (nopMetrics) Resumed(string, time.Duration)                       {}

// Counts are the events a consumer counted in this process since Dial.
type Counts [numEvents]uint64

// Get returns the count of e.
func (c Counts) Get(e Event) uint64 { return c[e] }

// stats keeps per-consumer counters for Conn.Figures, whatever Metrics the
// user configured.
type stats struct {
	mu        sync.Mutex
	consumers map[string]*counters
}

type counters [numEvents]atomic.Uint64

func newStats() *stats { return &stats{consumers: map[string]*counters{}} }

func (s *stats) of(consumer string) *counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.consumers[consumer]
	if !ok {
		c = new(counters)
		s.consumers[consumer] = c
	}
	return c
}

func (c *counters) snapshot() Counts {
	var out Counts
	for i := range c {
		out[i] = c[i].Load()
	}
	return out
}

// Counts returns what the named consumer counted in this process.
func (c *Conn) Counts(consumer string) Counts { return c.stats.of(consumer).snapshot() }
