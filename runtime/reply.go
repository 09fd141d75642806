package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-faster/jx"
)

// Request describes one kind of request to the runtime, as [Fact] does a
// fact. Generated code declares one Request value per request schema.
type Request struct {
	Key           string                     // the request's routing key on the requests exchange
	Validate      func(payload []byte) error // checks a request payload against the request's schema
	ValidateReply func(payload []byte) error // checks a reply payload against the reply's schema
}

// DirectReplyTo is RabbitMQ's pseudo-queue for direct reply-to: a requester
// consumes it (no-ack, on the channel it publishes on) and names it in
// reply_to; the broker routes each reply straight to that channel.
const DirectReplyTo = "amq.rabbitmq.reply-to"

// ErrNoResponder is matched (errors.Is) by the error a call returns at once
// when no responder queue is bound to its request key: the requests
// exchange returned the request (mandatory flag) instead of queueing it.
var ErrNoResponder = errors.New("no responder queue receives this request")

// ReplyError is the error a call returns when the responder answered with
// an error: its handler failed, panicked, or refused the request (invalid,
// unknown, already answered). Permanent says the responder marked it so
// ([Permanent]): asking again will fail again. [IsPermanent] holds for a
// permanent ReplyError too.
type ReplyError struct {
	Request   string // the request key
	Message   string // the responder's error text, passwords redacted, at most 500 bytes
	Permanent bool
}

func (e *ReplyError) Error() string {
	kind := "an error"
	if e.Permanent {
		kind = "a permanent error"
	}
	return fmt.Sprintf("responder of %s replied with %s: %s", e.Request, kind, e.Message)
}

// ErrInvalidReply is matched (errors.Is) by the error a call returns when
// the reply cannot be used: it is not a JSON reply envelope, has neither
// a payload nor an error, or its payload does not match the reply's schema
// or the type it is decoded into. Such a reply comes from a responder that
// does not follow the contract (one written by hand, or built from another
// version of the reply's schema), which answers the same request the same
// way again: the error is permanent ([IsPermanent]), so a caller that
// retries what is not permanent does not ask it for ever. Its text names
// the request, what was expected and the start of the reply.
var ErrInvalidReply = errors.New("the responder's reply cannot be used")

// invalidReply is the error of a reply that cannot be used (see
// [ErrInvalidReply]): err says what was wrong and what was expected, and
// shown is the part of the reply where it was found (the body, or the
// payload), quoted and cut to its first bytes.
func invalidReply(err error, part string, shown []byte) error {
	return Permanent(fmt.Errorf("%w: %w (the reply's %s: %s)", ErrInvalidReply, err, part, excerpt(shown)))
}

// maxReplyExcerpt is how much of an unusable reply its error shows.
const maxReplyExcerpt = 200

// excerpt quotes b, cut to maxReplyExcerpt bytes (at a character's start)
// with its length said when it is longer.
func excerpt(b []byte) string {
	if len(b) <= maxReplyExcerpt {
		return strconv.Quote(string(b))
	}
	cut := maxReplyExcerpt
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(string(b[:cut])), len(b))
}

// replyBody is the body of a reply: the request's envelope id, when the
// reply was made, and either the payload or the error. Exactly one of
// Payload and Error is set.
type replyBody struct {
	ID         string          `json:"id"`
	OccurredAt time.Time       `json:"occurred_at"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	Error      *replyFailure   `json:"error,omitempty"`
}

type replyFailure struct {
	Message   string `json:"message"`
	Permanent bool   `json:"permanent"`
}

// encodeReplyBody encodes a reply body. A payload, which the responder
// encoded itself, is written as it is, not scanned again as
// encoding/json would; an error reply goes through encoding/json, which
// makes any text valid JSON.
func encodeReplyBody(body replyBody) ([]byte, error) {
	if body.Error != nil || len(body.Payload) == 0 {
		return json.Marshal(body)
	}
	return writeEnvelope(body.ID, body.OccurredAt, func(e *jx.Encoder) { e.Raw(body.Payload) }), nil
}

// replyShape is what a reply body must look like, for the errors of one
// that does not.
const replyShape = `{"id", "occurred_at", "payload"}, or "error": {"message", "permanent"} in place of "payload"`

// decodeReply reads a reply body: the payload, or the responder's error as
// a [*ReplyError]. A body that is neither is an invalid reply
// ([ErrInvalidReply]).
func decodeReply(key string, body []byte) (json.RawMessage, error) {
	var r replyBody
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, invalidReply(fmt.Errorf("not a JSON reply envelope: %w: expected %s", err, replyShape), "body", body)
	}
	switch {
	case r.Error != nil:
		re := &ReplyError{Request: key, Message: r.Error.Message, Permanent: r.Error.Permanent}
		if re.Permanent {
			return nil, Permanent(re)
		}
		return nil, re
	case len(r.Payload) == 0 || string(r.Payload) == "null":
		return nil, invalidReply(fmt.Errorf(`the reply envelope has neither "payload" nor "error": expected %s`, replyShape), "body", body)
	}
	return r.Payload, nil
}

// expiration renders the time left until deadline as an AMQP expiration
// (whole milliseconds, rounded up so that a request never expires before
// its caller gives up).
func expiration(left time.Duration) string {
	ms := (left + time.Millisecond - 1) / time.Millisecond
	return strconv.FormatInt(int64(max(ms, 1)), 10)
}

// requestDeadline is when a request stops being worth working on: its
// envelope's occurred_at plus its expiration. ok is false for a request
// without an expiration.
func requestDeadline(occurredAt time.Time, exp string) (deadline time.Time, ok bool) {
	if exp == "" {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || ms < 0 {
		return time.Time{}, false
	}
	return occurredAt.Add(time.Duration(ms) * time.Millisecond), true
}
