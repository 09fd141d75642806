package runtime

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-faster/jx"

	"github.com/warrenbus/warren/runtime/codec"
)

// envelopeHead is what a consumer reads of an envelope besides its payload.
type envelopeHead struct {
	ID         string
	OccurredAt time.Time
}

// payloadError is the error a payload decoder returned: the envelope around
// it was read as far as the payload, and the payload is what is wrong.
type payloadError struct{ err error }

func (e *payloadError) Error() string { return e.err.Error() }
func (e *payloadError) Unwrap() error { return e.err }

// errStop ends a jx object walk whose callback kept its own error: jx
// would prefix the callback's error with its own words.
var errStop = errors.New("stop")

// decodeEnvelopeOnce parses body as an envelope in one pass, handing the
// payload's value to decodeAt, which reads it from d and checks it, and
// returns what decodeAt made of it (the handling of the delivery). It accepts what [decodeEnvelope] accepts: members in
// any order, unknown members ignored, names matched as encoding/json does,
// null as absent. Its errors are permanent; a payload's own error comes
// back as a *payloadError.
func decodeEnvelopeOnce[R any](body []byte, decodeAt func(d *jx.Decoder) (R, error)) (envelopeHead, R, error) {
	d := jx.GetDecoder()
	defer jx.PutDecoder(d)
	d.ResetBytes(body)
	var head envelopeHead
	var call, none R
	var hasPayload bool
	var fail error
	err := d.ObjBytes(func(d *jx.Decoder, key []byte) error {
		if d.Next() == jx.Null {
			if envelopeMember(key) == "payload" {
				hasPayload = false
			}
			return d.Null()
		}
		switch envelopeMember(key) {
		case "id":
			s, err := d.Str()
			if err != nil {
				fail = fmt.Errorf("id: %w", err)
				return errStop
			}
			head.ID = s
		case "occurred_at":
			b, err := d.StrBytes()
			if err == nil {
				err = head.OccurredAt.UnmarshalText(b)
			}
			if err != nil {
				fail = fmt.Errorf("occurred_at: %w", err)
				return errStop
			}
		case "payload":
			hasPayload = true
			c, err := decodeAt(d)
			if err != nil {
				fail = &payloadError{err}
				return errStop
			}
			call = c
		default:
			return d.Skip()
		}
		return nil
	})
	if fail != nil {
		err = fail
	}
	if err == nil {
		// One value and nothing after it, as encoding/json requires.
		if err = d.Skip(); errors.Is(err, io.EOF) {
			err = nil
		} else if err == nil {
			err = errors.New("data after the envelope")
		}
	}
	if err != nil {
		if _, ok := err.(*payloadError); ok {
			return head, none, err
		}
		return head, none, Permanent(fmt.Errorf("body is not a JSON envelope: %w", err))
	}
	var missing []string
	if head.ID == "" {
		missing = append(missing, "id")
	}
	if head.OccurredAt.IsZero() {
		missing = append(missing, "occurred_at")
	}
	if !hasPayload {
		missing = append(missing, "payload")
	}
	if missing != nil {
		return head, none, Permanent(fmt.Errorf("envelope incomplete: missing %q", missing))
	}
	return head, call, nil
}

// envelopeMember returns the envelope member key names ("id",
// "occurred_at", "payload"), or "" for another. Like encoding/json it
// prefers an exact match and falls back to one that ignores case.
func envelopeMember(key []byte) string {
	switch string(key) {
	case "id":
		return "id"
	case "occurred_at":
		return "occurred_at"
	case "payload":
		return "payload"
	}
	for _, m := range [...]string{"id", "occurred_at", "payload"} {
		if strings.EqualFold(string(key), m) {
			return m
		}
	}
	return ""
}

// decodeValue decodes data, one JSON value, into v, a pointer to a
// generated type, which reads and checks it in one pass
// ([codec.DecodeValue]).
func decodeValue(data []byte, v any) error {
	d := jx.GetDecoder()
	defer jx.PutDecoder(d)
	d.ResetBytes(data)
	if err := codec.DecodeValue(d, v); err != nil {
		return err
	}
	if err := d.Skip(); !errors.Is(err, io.EOF) {
		return codec.Expect("one JSON value and nothing after it")
	}
	return nil
}
