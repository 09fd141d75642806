package runtime

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// A stream consumer keeps its offset on the broker under a name, its
// consumer name by default. Another name makes a second reader of the same
// stream for the same consumer: a replay that rebuilds a projection from
// the stream while the consumer's live processes read on, each with its
// own offset. `warren replay --from stream` positions such a name (from a
// time or an offset, with an optional bound); a process started with
// [WithOffsetName] reads under it.

// ReplayUntilSuffix ends the name under which a replay's bound is stored:
// a fresh offset name N positioned by `warren replay --limit` keeps, under
// N+ReplayUntilSuffix, the offset of the last fact the replay reads. The
// "~" cannot occur in a consumer's name, so the two never meet.
const ReplayUntilSuffix = "~until"

// StartSuffix ends the name under which a stream consumer keeps the
// offset its start ("next", "last") meant at its first start, when that
// was the stream's first offset and so no offset before it could be
// stored as the consumer's own: a later start with nothing else stored
// reads from there.
const StartSuffix = "~start"

// offsetNamePattern is what an offset name may be: a consumer's name, or
// any other of the same shape.
var offsetNamePattern = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*$`)

// CheckOffsetName reports whether name can name a stream consumer's
// offset: lower-case words joined by '-', '_' or '.', at most 200 bytes,
// as consumer names are.
func CheckOffsetName(name string) error {
	if len(name) > 200 || !offsetNamePattern.MatchString(name) {
		return fmt.Errorf("offset name %q: expected lower-case words joined by '-', '_' or '.', at most 200 bytes", name)
	}
	return nil
}

// WithOffsetName makes a stream consumer read and store its offset under
// name instead of its consumer name, so that it reads the stream apart
// from the consumer's processes that run without it:
//
//   - It starts after the offset stored under name; with none stored, at
//     the stream's first fact (not at the manifest's start: a fresh name
//     is a rebuild, which reads what the stream holds).
//   - `warren replay --from stream --offset-name NAME` stores where it
//     starts (from a time or an offset), and with --limit a bound: the
//     offset of the last fact it reads. A reader that reaches its bound
//     handles nothing after it (its stored offset stays at the bound) and
//     logs once that the replay is done.
//   - Its guard ([WithGuard]) claims facts under name, so the facts the
//     live consumer handled are handled again, once each.
//   - Its retries, deferrals and poison stay the consumer's: a fact it
//     fails goes to the consumer's retry ladder and comes back through
//     the consumer's work queue, which every process of the consumer
//     reads. Run a rebuild while no other process of the consumer fails
//     facts, or give the rebuilt projection a consumer of its own in
//     warren.json.
//
// Consumers that read a queue refuse it.
func WithOffsetName(name string) ConsumerOption {
	return func(o *consumerOptions) { o.offsetName = name; o.given |= optOffsetName }
}

// DefaultOffsetStoreInterval is how often, at most, a stream consumer (or
// a member of a consumer group) stores its offset while it runs, unless
// [WithOffsetStoreInterval] says otherwise. Stored as it advances, the
// offset was stored every few facts under load, each store a round trip
// and a record the broker writes into the stream: with this interval a
// stream was read 1.2 to 1.55 times as fast (medians of interleaved rounds,
// docs/BENCHMARKS.md), and a crash reads again at most a tenth of a
// second's facts more than those in hand.
const DefaultOffsetStoreInterval = 100 * time.Millisecond

// WithOffsetStoreInterval sets how often, at most, a stream consumer (or a
// member of a consumer group) stores its offset while it runs:
// [DefaultOffsetStoreInterval] unless set. The moves of an interval are
// gathered into one store. With 0 the offset is stored each time it
// advances, one store at a time: under load that is a store for every few
// facts. A crash reads again the facts settled in the last d as well as
// those in hand: the guard ([WithGuard]) skips them; without one they are
// handled again. A stop, a partition's handover and a new channel store
// the offset as it is, whatever d.
//
// Consumers that read a queue refuse it.
func WithOffsetStoreInterval(d time.Duration) ConsumerOption {
	return func(o *consumerOptions) { o.offsetEvery = d; o.given |= optOffsetEvery }
}

// WithStreamReadOverAMQP makes a plain stream consumer read its stream
// over AMQP, on its work queue's channel, as a queue is read, rather than
// over the stream protocol on a connection of its own. The broker then
// turns each fact into an AMQP delivery, at several times the broker's
// CPU per fact, and a backlog reads at up to half the rate; but a fact
// reaches the handler sooner at low rates (measured here at 1,000 facts
// a second: 0.5 to 0.75 ms at the median over AMQP, 1.1 to 1.9 ms over
// the stream protocol; docs/BENCHMARKS.md). Take it for a consumer whose
// facts are few and wanted at once.
//
// What the consumer guarantees is the same either way, but for a fact it
// cannot settle (its retry or poison copy not confirmed): read over AMQP,
// the consumer closes its channel and reads the stream again from the
// stored offset, where over the stream protocol it hands the fact back
// after a pause (docs/RUNTIME.md). A consumer whose offset store does not
// read streams (a [Config.StreamOffsets] that is no [StreamReader]) reads
// over AMQP without it.
//
// A member of a consumer group (a super stream's consumer) reads over the
// stream protocol, which groups need, and refuses it; so do consumers
// that read a queue.
func WithStreamReadOverAMQP() ConsumerOption {
	return func(o *consumerOptions) { o.readOverAMQP = true; o.given |= optReadOverAMQP }
}

// checkStreamOptions refuses the options of stream consumers on a consumer
// that reads no stream, and an offset name that is not one.
func checkStreamOptions(o consumerOptions, stream string) error {
	if stream == "" {
		var errs []error
		for _, bit := range []optionSet{optOffsetName, optOffsetEvery, optReadOverAMQP} {
			if o.given&bit != 0 {
				errs = append(errs, fmt.Errorf("%s does not apply: the consumer reads a queue, not a stream", optionNames[bit]))
			}
		}
		return errors.Join(errs...)
	}
	if o.given&optOffsetName == 0 {
		return nil
	}
	return CheckOffsetName(o.offsetName)
}

// guardName is the name a consumer's guard claims facts under: the offset
// name of a reader given one, else the consumer's.
func guardName(consumer, offsetName string) string {
	if offsetName != "" {
		return offsetName
	}
	return consumer
}
