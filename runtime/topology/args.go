package topology

import (
	"fmt"
	"strconv"
	"strings"
)

// Broker is the RabbitMQ release line a topology is declared on. Quorum
// queues changed between them, so a few x-arguments differ: see
// [Queue.ArgumentsFor].
type Broker int

// The release lines warren declares for.
const (
	RabbitMQ3 Broker = 3 // RabbitMQ 3.x (3.10 and later)
	RabbitMQ4 Broker = 4 // RabbitMQ 4.x and later
)

// BrokerOf returns the release line of a broker that announces version (the
// AMQP server property "version", e.g. "4.0.5"). A version it cannot read
// counts as RabbitMQ 3: its arguments are the ones every release accepts.
func BrokerOf(version string) Broker {
	major, _, _ := strings.Cut(version, ".")
	if n, err := strconv.Atoi(major); err == nil && n >= 4 {
		return RabbitMQ4
	}
	return RabbitMQ3
}

func (b Broker) String() string {
	if b >= RabbitMQ4 {
		return "RabbitMQ 4.x"
	}
	return "RabbitMQ 3.x"
}

// Arguments returns the queue's x-arguments for RabbitMQ 3
// ([Queue.ArgumentsFor] with [RabbitMQ3]).
func (q Queue) Arguments() map[string]any {
	return q.ArgumentsFor(RabbitMQ3)
}

// ArgumentsFor returns the queue's x-arguments as broker b needs them,
// typed as the broker expects them (strings and int64), ready to pass to a
// queue declaration.
//
// x-overflow: reject-publish accompanies at-least-once dead-lettering
// because RabbitMQ ignores the strategy without it: with drop-head overflow
// a full queue would discard messages that are still waiting to be
// dead-lettered.
//
// On RabbitMQ 4 a quorum queue without a delivery limit of its own (poison
// and delay queues) gets x-delivery-limit -1, which 4.x reads as
// "unlimited": otherwise 4.x applies a default of 20 and then drops the
// message, so a poison message peeked at and returned 20 times would be
// gone. RabbitMQ 3 has no default limit and reads -1 as "none allowed", so
// it gets no such argument.
func (q Queue) ArgumentsFor(b Broker) map[string]any {
	args := map[string]any{"x-queue-type": string(q.Type)}
	if q.Type == Stream {
		// A stream takes neither dead-lettering nor overflow: its bound
		// is its retention.
		if q.MaxLengthBytes > 0 {
			args["x-max-length-bytes"] = q.MaxLengthBytes
		}
		q.streamArguments(args)
		return args
	}
	if q.MessageTTL > 0 {
		args["x-message-ttl"] = q.MessageTTL.Milliseconds()
	}
	if dl := q.DeadLetter; dl != nil {
		args["x-dead-letter-exchange"] = dl.Exchange
		if dl.RoutingKey != "" {
			args["x-dead-letter-routing-key"] = dl.RoutingKey
		}
		if dl.AtLeastOnce {
			args["x-dead-letter-strategy"] = "at-least-once"
			args["x-overflow"] = "reject-publish"
		}
	}
	if q.MaxLength > 0 {
		args["x-max-length"] = int64(q.MaxLength)
	}
	if q.MaxLengthBytes > 0 {
		args["x-max-length-bytes"] = q.MaxLengthBytes
	}
	if q.MaxPriority > 0 && q.Type == Classic {
		// Quorum queues on 4.x take priorities without an argument
		// (see [Queue.CheckFor]).
		args["x-max-priority"] = int64(q.MaxPriority)
	}
	if q.SingleActiveConsumer {
		args["x-single-active-consumer"] = true
	}
	if q.Bounded() {
		args["x-overflow"] = "reject-publish"
	}
	switch {
	case q.DeliveryLimit > 0:
		args["x-delivery-limit"] = int64(q.DeliveryLimit)
	case q.Type == Quorum && b >= RabbitMQ4:
		args["x-delivery-limit"] = int64(-1)
	}
	return args
}

// Bounded reports whether the queue has a length bound, so that a full
// queue refuses publishes.
func (q Queue) Bounded() bool { return q.MaxLength > 0 || q.MaxLengthBytes > 0 }

// Priorities of quorum queues, which RabbitMQ 4 supports in two levels
// without any queue argument: a message with priority QuorumHighPriority or
// above is high, every other one normal. A quorum work queue's maxPriority
// must be QuorumMaxPriority, the level it delivers first.
const (
	QuorumHighPriority = 5
	QuorumMaxPriority  = QuorumHighPriority
)

// CheckFor reports what broker b cannot do for q: a quorum queue with a
// priority on RabbitMQ 3, whose quorum queues have none and would hand out
// every message in arrival order.
func (q Queue) CheckFor(b Broker) error {
	if q.Type == Quorum && q.MaxPriority > 0 && b < RabbitMQ4 {
		return fmt.Errorf("queue %q: maxPriority on a quorum queue needs RabbitMQ 4.0 or later (%s has no quorum queue priorities); use queueType %q or upgrade", q.Name, b, Classic)
	}
	return nil
}
