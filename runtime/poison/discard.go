package poison

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/runtime/topology"
)

// Headers a discard writes on the copy it keeps.
const (
	HeaderDiscardReason = "x-discard-reason" // why a person discarded the message
	HeaderDiscardedAt   = "x-discarded-at"   // when (RFC 3339, UTC)
)

// DiscardQueue is the queue where [Discard] keeps what it takes out of c's
// poison queue: <consumer>.discarded.
func DiscardQueue(c topology.Consumer) string { return c.Name + ".discarded" }

// Discard takes the messages of c's poison queue that f selects out of the
// consumer's way, for good, giving reason. Nothing is deleted: each message
// is copied to [DiscardQueue] (declared on first use, a durable quorum
// queue that nothing consumes and nothing routes to) with the reason and
// the time in x-discard-reason and x-discarded-at and every other header
// kept, and removed from the poison queue only after the broker confirmed
// the copy. The discard queue is an archive for people: read it with any
// AMQP tool, purge it when its messages are no longer needed. It returns
// the messages discarded; on error, those discarded so far.
func Discard(ctx context.Context, conn Broker, c topology.Consumer, f Filter, reason string) ([]Message, error) {
	done, err := discard(ctx, conn, c, f, reason)
	if err != nil {
		return done, fmt.Errorf("discard from %s to %s: %w", c.PoisonQueue, DiscardQueue(c), err)
	}
	return done, nil
}

func discard(ctx context.Context, conn Broker, c topology.Consumer, f Filter, reason string) ([]Message, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return nil, errors.New("a reason is required: it is what the next person to look will read")
	}
	archive := DiscardQueue(c)
	if err := declareArchive(ctx, conn, archive); err != nil {
		return nil, err
	}
	pub, err := openPublisher(ctx, conn)
	if err != nil {
		return nil, err
	}
	defer pub.close()
	s, err := openScan(ctx, conn, c.PoisonQueue)
	if err != nil {
		return nil, err
	}
	defer s.close(ctx)
	now := time.Now().UTC().Format(time.RFC3339)
	return move(ctx, s, pub, c, f, archive, func(d amqp.Delivery, _ Message) amqp.Publishing {
		h := amqpmsg.CloneHeaders(d.Headers, 2)
		h[HeaderDiscardReason] = reason
		h[HeaderDiscardedAt] = now
		return amqpmsg.Republish(d, h)
	})
}

func declareArchive(ctx context.Context, conn Broker, queue string) error {
	ch, err := conn.OpenChannel(ctx)
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	defer ch.Close()
	if _, err := ch.QueueDeclare(queue, true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		return fmt.Errorf("declare %s: %w", queue, err)
	}
	return nil
}
