package runtime

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-faster/jx"

	"github.com/warrenbus/warren/runtime/codec"
)

// Route binds one fact to a handler. Generated consumer constructors build
// one Route per handler method with [Handle].
type Route struct {
	fact Fact
	// decode turns a validated payload into a call of the handler, so a
	// payload that cannot be decoded fails before the guard claims anything.
	decode func(payload []byte) (handlerCall, error)
	// decodeAt, set when the payload type decodes itself ([codec.Decoder],
	// as generated fact types do), reads and checks the payload where it
	// stands in the envelope, in the one pass that reads the envelope, and
	// returns the delivery's handling, the decoded fact in it.
	decodeAt func(d *jx.Decoder) (*handling, error)
}

// handlerCall is a handler bound to its decoded fact.
type handlerCall = func(ctx context.Context, d Delivery) error

// invoker calls a handler with its decoded fact.
type invoker interface {
	invoke(ctx context.Context, d Delivery) error
}

// funcInvoker is a handler bound to its fact by a closure.
type funcInvoker handlerCall

func (f funcInvoker) invoke(ctx context.Context, d Delivery) error { return f(ctx, d) }

// typedHandling is the handling of one delivery of a T together with its
// decoded fact: one allocation for both.
type typedHandling[T any] struct {
	handling
	fn   func(ctx context.Context, d Delivery, fact T) error
	fact T
}

func (t *typedHandling[T]) invoke(ctx context.Context, d Delivery) error {
	return t.fn(ctx, d, t.fact)
}

// Fact returns the fact the route handles.
func (r Route) Fact() Fact { return r.fact }

// Handle returns a Route that decodes each payload of fact f into a T and
// calls fn. A payload that does not decode is a permanent failure; an
// error fn returns is transient unless marked with [Permanent].
//
// When *T implements [codec.Decoder] (generated fact types do), the
// consumer reads each body once: the envelope, and the payload decoded
// and checked against its schema by T's DecodeJSON in the same pass,
// without f.Validate. Other types are validated with f.Validate and then
// decoded with encoding/json.
func Handle[T any](f Fact, fn func(ctx context.Context, d Delivery, fact T) error) Route {
	r := Route{fact: f, decode: func(payload []byte) (handlerCall, error) {
		var v T
		if err := json.Unmarshal(payload, &v); err != nil {
			return nil, Permanent(fmt.Errorf("decode %s payload: %w", f.RoutingKey, err))
		}
		return func(ctx context.Context, d Delivery) error { return fn(ctx, d, v) }, nil
	}}
	if _, ok := any((*T)(nil)).(codec.Decoder); ok {
		r.decodeAt = func(d *jx.Decoder) (*handling, error) {
			t := &typedHandling[T]{fn: fn}
			if err := any(&t.fact).(codec.Decoder).DecodeJSON(d); err != nil {
				return nil, err
			}
			t.call = t
			return &t.handling, nil
		}
	}
	return r
}
