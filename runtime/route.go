package runtime

import (
	"context"
	"encoding/json"
	"fmt"
)

// Route binds one fact to a handler. Generated consumer constructors build
// one Route per handler method with [Handle].
type Route struct {
	fact Fact
	// decode turns a validated payload into a call of the handler, so a
	// payload that cannot be decoded fails before the guard claims anything.
	decode func(payload []byte) (func(ctx context.Context, d Delivery) error, error)
}

// Fact returns the fact the route handles.
func (r Route) Fact() Fact { return r.fact }

// Handle returns a Route that decodes each payload of fact f into a T and
// calls fn. A payload that does not decode is a permanent failure; an
// error fn returns is transient unless marked with [Permanent].
func Handle[T any](f Fact, fn func(ctx context.Context, d Delivery, fact T) error) Route {
	return Route{fact: f, decode: func(payload []byte) (func(context.Context, Delivery) error, error) {
		var v T
		if err := json.Unmarshal(payload, &v); err != nil {
			return nil, Permanent(fmt.Errorf("decode %s payload: %w", f.RoutingKey, err))
		}
		return func(ctx context.Context, d Delivery) error { return fn(ctx, d, v) }, nil
	}}
}
