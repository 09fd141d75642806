package poison

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/runtime/topology"
)

// Headers an edit writes on the copy it retries.
const (
	HeaderEditedAt = "x-edited-at" // when the payload was edited (RFC 3339, UTC)
	HeaderEditedBy = "x-edited-by" // who edited it (EditOptions.By), when they said
)

// Edit is what [EditMessage] does to one message.
type Edit struct {
	ID string // the message to edit
	// Copy says which of several messages with the id to edit, counted
	// from 1 in queue order; 0 when the id names one message alone. A lane
	// can hold a fact twice (published twice, or poisoned again while an
	// older copy stayed), and an edit of the first that left the other
	// unseen would have it replayed later with the old payload, or skipped
	// as a duplicate of the edited one.
	Copy    int
	Payload []byte // the new payload: JSON, replacing the envelope's payload
	By      string // who edits, optional
	// ValidateVersion checks the new payload against the schema of the
	// fact the message is (its routing key), in the version the message
	// was written under (its x-fact-version header, which the edited copy
	// keeps; 0 when it has none, which a consumer reads as version 1),
	// before anything is sent: the schema the consumer will check it
	// against. A version the validator has no schema for is its error.
	ValidateVersion func(routingKey string, version int, payload []byte) error
	// Validate is the older form of ValidateVersion, told the routing key
	// alone; used when ValidateVersion is nil. One of the two is required.
	Validate func(routingKey string, payload []byte) error
}

// ErrNotFound is matched by the error of [EditMessage] for an id that is
// not in the poison queue.
var ErrNotFound = errors.New("no such message")

// ErrSeveralCopies is matched by the error of [EditMessage] for an id
// that more than one message of the poison queue has, when [Edit.Copy]
// does not say which to edit. The error is a [*CopiesError].
var ErrSeveralCopies = errors.New("several messages have the id")

// Copy is one of the messages of a poison queue that have the same id.
type Copy struct {
	N        int // which copy it is: 1 for the first with the id in queue order ([Edit.Copy])
	Position int // where it stands in the queue: 1 for the head
	Message
}

// CopiesError is the error of [EditMessage] when [Edit.Copy] does not pick
// one message: the id has several and Copy is 0 (it matches
// [ErrSeveralCopies]), or Copy is past the last (it matches
// [ErrNotFound]). It lists the messages with the id; nothing changed.
type CopiesError struct {
	ID     string
	Queue  string // the poison queue
	Copy   int    // the copy asked for; 0 when none was
	Copies []Copy // the messages with the id, in queue order
}

// Error lists the copies, each with what tells it apart: its position,
// routing key, when it failed, its replays and its x-failure.
func (e *CopiesError) Error() string {
	var b strings.Builder
	if e.Copy > 0 {
		fmt.Fprintf(&b, "%v: no copy %d of id %q: ", ErrNotFound, e.Copy, e.ID)
	}
	// EditMessage's error names the queue before this.
	fmt.Fprintf(&b, "%d %s id %q: ", len(e.Copies), plural(len(e.Copies), "message has", "messages have"), e.ID)
	for i, c := range e.Copies {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "copy %d at position %d (%s", c.N, c.Position, c.RoutingKey)
		if !c.FailedAt.IsZero() {
			fmt.Fprintf(&b, ", failed at %s", c.FailedAt.UTC().Format(time.RFC3339))
		}
		if c.Replays > 0 {
			fmt.Fprintf(&b, ", replayed %d %s", c.Replays, plural(c.Replays, "time", "times"))
		}
		if f := firstLine(c.Failure, 100); f != "" {
			fmt.Fprintf(&b, ": %s", f)
		}
		b.WriteString(")")
	}
	b.WriteString("; nothing changed")
	return b.String()
}

// Is reports whether target is [ErrSeveralCopies] or, for a copy past the
// last, [ErrNotFound].
func (e *CopiesError) Is(target error) bool {
	if e.Copy > len(e.Copies) {
		return target == ErrNotFound
	}
	return target == ErrSeveralCopies
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// firstLine is the first line of s, cut at limit runes: a failure can hold
// a whole stack trace, and a list of copies needs only enough to tell
// them apart.
func firstLine(s string, limit int) string {
	s, _, cut := strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > limit {
		s, cut = string(r[:limit]), true
	}
	if cut {
		s = strings.TrimSpace(s) + " …"
	}
	return s
}

// ErrInvalidPayload is matched by the error of [EditMessage] for a new
// payload that is not JSON or that Validate refuses.
var ErrInvalidPayload = errors.New("the edited payload is refused")

// EditMessage replaces the payload of one message of c's poison queue and
// retries it. The message is the one with id e.ID; when several have it,
// e.Copy says which, and without it the edit is refused with a
// [*CopiesError] that lists them, and nothing changes. It checks e.Payload with e.ValidateVersion (or e.Validate)
// (refused, nothing changes, the queue's order included), keeps the original in [DiscardQueue] with the reason "edited"
// (x-discard-reason, x-discarded-by, x-discarded-at), sends the edited
// copy to the consumer's work queue as [Replay] would, with x-edited-at and
// x-edited-by, and only once the broker confirmed both removes the
// original. It returns the message as it was.
func EditMessage(ctx context.Context, conn Broker, c topology.Consumer, e Edit) (Message, error) {
	m, err := edit(ctx, conn, c, e)
	if err != nil {
		return m, fmt.Errorf("edit %s in %s: %w", e.ID, c.PoisonQueue, err)
	}
	return m, nil
}

func edit(ctx context.Context, conn Broker, c topology.Consumer, e Edit) (Message, error) {
	validate := e.ValidateVersion
	if validate == nil && e.Validate != nil {
		validate = func(routingKey string, _ int, payload []byte) error { return e.Validate(routingKey, payload) }
	}
	if validate == nil {
		return Message{}, errors.New("no validator: an edited payload is checked against its fact's schema before it is sent")
	}
	if e.Copy < 0 {
		return Message{}, fmt.Errorf("copy %d: expected 1 or more, or 0 for the only message with the id", e.Copy)
	}
	var payload bytes.Buffer
	if err := json.Compact(&payload, e.Payload); err != nil {
		return Message{}, fmt.Errorf("%w: not JSON: %v", ErrInvalidPayload, err)
	}
	if !c.Ordered() {
		if err := checkQueue(ctx, conn, c.Queue); err != nil {
			return Message{}, err
		}
	}
	archive := DiscardQueue(c)
	if err := declareArchive(ctx, conn, archive); err != nil {
		return Message{}, err
	}
	pub, err := openPublisher(ctx, conn)
	if err != nil {
		return Message{}, err
	}
	defer pub.close()
	s, err := openScan(ctx, conn, c.PoisonQueue, wholeQueue)
	if err != nil {
		return Message{}, err
	}
	defer s.close(ctx)
	// Read the whole queue: the edit must know every message with the id
	// before it changes one.
	var copies []Copy
	var picked amqp.Delivery
	for pos := 1; ; pos++ {
		d, ok, err := s.next(ctx)
		if err != nil {
			return Message{}, err
		}
		if !ok {
			break
		}
		if m := read(d, c); m.ID == e.ID {
			copies = append(copies, Copy{N: len(copies) + 1, Position: pos, Message: m})
			if len(copies) == max(e.Copy, 1) {
				picked = d
			}
		}
	}
	switch {
	case len(copies) == 0:
		return Message{}, fmt.Errorf("%w: no message with id %q in %s", ErrNotFound, e.ID, c.PoisonQueue)
	case e.Copy > len(copies) || e.Copy == 0 && len(copies) > 1:
		return Message{}, &CopiesError{ID: e.ID, Queue: c.PoisonQueue, Copy: e.Copy, Copies: copies}
	}
	m := copies[max(e.Copy, 1)-1].Message
	if err := validate(m.RoutingKey, m.Version, payload.Bytes()); err != nil {
		return m, fmt.Errorf("%w: %w; nothing changed", ErrInvalidPayload, err)
	}
	body, err := withPayload(picked.Body, payload.Bytes())
	if err != nil {
		return m, err
	}
	return m, sendEdited(ctx, s, pub, c, picked, m, body, strings.TrimSpace(e.By))
}

// sendEdited keeps the original in the archive, sends the edited copy,
// and removes the original.
func sendEdited(ctx context.Context, s *scan, pub *publisher, c topology.Consumer, d amqp.Delivery, m Message, body []byte, by string) error {
	now := time.Now().UTC()
	archive := DiscardQueue(c)
	kept := amqpmsg.CloneHeaders(d.Headers, 3)
	kept[HeaderDiscardReason] = "edited: an edited copy was retried to " + c.Name
	kept[HeaderDiscardedAt] = now.Format(time.RFC3339)
	delete(kept, HeaderDiscardedBy)
	if by != "" {
		kept[HeaderDiscardedBy] = by
	}
	if err := pub.publish(ctx, "", archive, amqpmsg.Republish(d, kept)); err != nil {
		return err
	}
	retry := replayCopy(d, m, now)
	retry.Body = body
	retry.Headers[HeaderEditedAt] = now.Format(time.RFC3339)
	delete(retry.Headers, HeaderEditedBy)
	if by != "" {
		retry.Headers[HeaderEditedBy] = by
	}
	exchange, key := "", c.Queue
	if c.Ordered() {
		exchange, key = c.ShardExchange, m.RoutingKey
	}
	if err := pub.publish(ctx, exchange, key, retry); err != nil {
		return fmt.Errorf("the original is kept in %s and still in %s: %w", archive, c.PoisonQueue, err)
	}
	if err := s.ack(d); err != nil {
		return fmt.Errorf("sent to %s, but removing it from %s failed, so it is in both: %w", where(exchange, key), c.PoisonQueue, err)
	}
	return nil
}

// withPayload returns the envelope body with its payload replaced, every
// other member kept in its place.
func withPayload(body, payload []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("the message is not a JSON envelope, so it has no payload to replace")
	}
	var out bytes.Buffer
	out.WriteByte('{')
	replaced := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("read the envelope: %w", err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("read the envelope: %w", err)
		}
		key, _ := json.Marshal(tok)
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		out.Write(key)
		out.WriteByte(':')
		if tok == "payload" {
			v, replaced = payload, true
		}
		out.Write(v)
	}
	if !replaced {
		return nil, errors.New("the envelope has no payload to replace")
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}
