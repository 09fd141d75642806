package poison

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/topology"
)

// Headers a discard writes on the copy it keeps.
const (
	HeaderDiscardReason = "x-discard-reason" // why a person discarded the message
	HeaderDiscardedAt   = "x-discarded-at"   // when (RFC 3339, UTC)
	HeaderDiscardedBy   = "x-discarded-by"   // who, when they said (Record.By)
	// HeaderDiscardGroup and HeaderDiscardBatch record a discard of a whole
	// group (Record.Group, Record.Batch): the cause's id, and how many
	// messages the group held when the discard began.
	HeaderDiscardGroup = "x-discard-group"
	HeaderDiscardBatch = "x-discard-batch"
	// HeaderDiscarded marks the tombstone a discard sends an ordered
	// consumer with onPoison park (see [DiscardAs]); its value is the
	// reason. It is runtime.HeaderDiscarded.
	HeaderDiscarded = runtime.HeaderDiscarded
)

// The archive's bounded retention. A discarded message is kept for
// ArchiveRetention (x-message-ttl) and the archive holds at most
// ArchiveMaxLength messages; when it is full it refuses new ones
// (x-overflow: reject-publish), so a discard then fails and leaves the
// message in the poison queue rather than pushing an older record out.
// An operator who wants other bounds sets a policy on the queue.
const (
	ArchiveRetention = 30 * 24 * time.Hour
	ArchiveMaxLength = 100_000
)

// DiscardQueue is the queue where [Discard] keeps what it takes out of c's
// poison queue: <consumer>.discarded.
func DiscardQueue(c topology.Consumer) string { return c.Name + ".discarded" }

// Record is what a discard writes on each message it keeps.
type Record struct {
	Reason string // required: what the next person to look will read
	By     string // who decided, optional
	// Group and Batch, optional, say that the message went with a whole
	// group: the group's id, and how many messages it held.
	Group string
	Batch int
}

// Discard is [DiscardAs] with a reason and nobody named.
func Discard(ctx context.Context, conn Broker, c topology.Consumer, f Filter, reason string) ([]Message, error) {
	return DiscardAs(ctx, conn, c, f, Record{Reason: reason})
}

// DiscardAs takes the messages of c's poison queue that f selects out of
// the consumer's way, recording r. Nothing is deleted unrecorded: each
// message is copied to [DiscardQueue] (declared on first use, a durable
// quorum queue that nothing consumes and nothing routes to, with the
// retention of [ArchiveRetention] and [ArchiveMaxLength]) with the reason,
// who and when in x-discard-reason, x-discarded-by and x-discarded-at and
// every other header kept, and removed from the poison queue only after
// the broker confirmed the copy. Read the archive with [ListFrom] and
// bring a message back with [ReplayWith] from [FromDiscarded].
//
// For an ordered consumer with onPoison park, whose key may be parked
// behind the message, the discard also tells the consumer: once the
// archive's copy is confirmed it sends a tombstone through the consumer's
// hash exchange, as a replay would send the message (so that it reaches
// the key's shard in order, x-replay-count raised), marked with
// [HeaderDiscarded]. The consumer lifts the park its key has behind the
// message, if any, and acks the tombstone without handling it; the facts
// parked behind it, replayed after the discard, are then handled. The
// message leaves the poison queue only after the tombstone is confirmed
// too.
//
// It returns the messages discarded; on error, those discarded so far.
func DiscardAs(ctx context.Context, conn Broker, c topology.Consumer, f Filter, r Record) ([]Message, error) {
	done, err := discard(ctx, conn, c, f, r)
	if err != nil {
		return done, fmt.Errorf("discard from %s to %s: %w", c.PoisonQueue, DiscardQueue(c), err)
	}
	return done, nil
}

func discard(ctx context.Context, conn Broker, c topology.Consumer, f Filter, r Record) ([]Message, error) {
	reason := strings.TrimSpace(r.Reason)
	if reason == "" {
		return nil, errors.New("a reason is required: it is what the next person to look will read")
	}
	by := strings.TrimSpace(r.By)
	archive := DiscardQueue(c)
	if err := declareArchive(ctx, conn, archive); err != nil {
		return nil, err
	}
	pub, err := openPublisher(ctx, conn)
	if err != nil {
		return nil, err
	}
	defer pub.close()
	s, err := openScan(ctx, conn, c.PoisonQueue, f.moving())
	if err != nil {
		return nil, err
	}
	defer s.close(ctx)
	at := time.Now()
	now := at.UTC().Format(time.RFC3339)
	toArchive := func(Message) (string, string, error) { return "", archive, nil }
	var tombstone func(amqp.Delivery, Message) error
	if c.Ordered() && c.Park {
		tombstone = func(d amqp.Delivery, m Message) error {
			p := replayCopy(d, m, at)
			p.Headers[HeaderDiscarded] = reason
			if err := pub.publish(ctx, c.ShardExchange, m.RoutingKey, p); err != nil {
				return fmt.Errorf("its tombstone, which lifts the park of its ordering key: %w", err)
			}
			return nil
		}
	}
	return move(ctx, s, pub, c, f, toArchive, func(d amqp.Delivery, _ Message) amqp.Publishing {
		h := amqpmsg.CloneHeaders(d.Headers, 5)
		h[HeaderDiscardReason] = reason
		h[HeaderDiscardedAt] = now
		// Values from an earlier discard of the same message go.
		delete(h, HeaderDiscardedBy)
		delete(h, HeaderDiscardGroup)
		delete(h, HeaderDiscardBatch)
		if by != "" {
			h[HeaderDiscardedBy] = by
		}
		if r.Group != "" {
			h[HeaderDiscardGroup] = r.Group
			h[HeaderDiscardBatch] = int64(r.Batch)
		}
		return amqpmsg.Republish(d, h)
	}, tombstone)
}

// ArchiveArguments are the x-arguments of a discard archive.
func ArchiveArguments() amqp.Table {
	return amqp.Table{
		"x-queue-type":  "quorum",
		"x-message-ttl": ArchiveRetention.Milliseconds(),
		"x-max-length":  int64(ArchiveMaxLength),
		"x-overflow":    "reject-publish",
	}
}

func declareArchive(ctx context.Context, conn Broker, queue string) error {
	err := declare(ctx, conn, queue, ArchiveArguments())
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.PreconditionFailed {
		return fmt.Errorf("declare %s: it exists with other arguments (an archive made before retention was bounded?); move its messages elsewhere and delete it, then discard again: %w", queue, ae)
	}
	return err
}
