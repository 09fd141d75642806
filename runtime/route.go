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
	// decodeAt, set when the codec reads the payload type
	// ([codec.Decodes], as for generated fact types), reads and checks the payload where it
	// stands in the envelope, in the one pass that reads the envelope, and
	// returns the delivery's handling, the decoded fact in it.
	decodeAt func(d *jx.Decoder) (*handling, error)
	// older reads the fact's older versions, by version, through their
	// upcasts (see [HandleVersions]).
	older map[int]func(d *jx.Decoder) (*handling, error)
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
// decoded fact: one allocation for both. The typedHandling of a route,
// with fn only, starts those of its deliveries. Its two methods are all the
// code that each fact type instantiates: the rest of a route ([newRoute])
// is the same for every type, so that a package of many fact types
// compiles one copy of it.
type typedHandling[T any] struct {
	handling
	fn   func(ctx context.Context, d Delivery, fact T) error
	fact T
}

func (t *typedHandling[T]) invoke(ctx context.Context, d Delivery) error {
	return t.fn(ctx, d, t.fact)
}

func (t *typedHandling[T]) start() (*handling, any) {
	h := &typedHandling[T]{fn: t.fn}
	h.call = h
	return &h.handling, &h.fact
}

// starter begins the handling of one delivery: it returns the handling,
// bound to a zero fact, and the address of that fact to decode into.
type starter interface {
	start() (*handling, any)
}

// Fact returns the fact the route handles.
func (r Route) Fact() Fact { return r.fact }

// Handle returns a Route that decodes each payload of fact f into a T and
// calls fn. A payload that does not decode is a permanent failure; an
// error fn returns is transient unless marked with [Permanent].
//
// When the codec reads *T ([codec.Decodes]: generated fact types), the
// consumer reads each body once: the envelope, and the payload decoded
// and checked against its schema by [codec.DecodeValue] in the same pass,
// without f.Validate. Other types are validated with f.Validate and then
// decoded with encoding/json.
func Handle[T any](f Fact, fn func(ctx context.Context, d Delivery, fact T) error) Route {
	return newRoute(f, &typedHandling[T]{fn: fn})
}

// HandleEach is [Handle] without a type parameter, for generated
// consumers: newFact returns a pointer to a new zero fact, which each
// payload is decoded into, and fn is called with that pointer. A generic
// Handle compiles its own copy of the route's code for every fact type
// (each struct is a GC shape of its own), several functions per fact in a
// package of many facts; HandleEach compiles once, and a fact costs only
// the two small functions its caller passes. (Not inlined, so that a
// consumer's constructor is a list of calls, not a copy of this body per
// fact.)
//
//go:noinline
func HandleEach(f Fact, newFact func() any, fn func(ctx context.Context, d Delivery, fact any) error) Route {
	return newRoute(f, &anyHandling{newFact: newFact, fn: fn})
}

// anyHandling is typedHandling for [HandleEach]: the fact is a pointer,
// allocated apart from the handling.
type anyHandling struct {
	handling
	newFact func() any
	fn      func(ctx context.Context, d Delivery, fact any) error
	fact    any
}

func (t *anyHandling) invoke(ctx context.Context, d Delivery) error {
	return t.fn(ctx, d, t.fact)
}

func (t *anyHandling) start() (*handling, any) {
	h := &anyHandling{newFact: t.newFact, fn: t.fn, fact: t.newFact()}
	h.call = h
	return &h.handling, h.fact
}

// newRoute is [Handle] but for the type: s starts each delivery's handling.
func newRoute(f Fact, s starter) Route {
	r := Route{fact: f, decode: func(payload []byte) (handlerCall, error) {
		h, v := s.start()
		if err := json.Unmarshal(payload, v); err != nil {
			return nil, Permanent(fmt.Errorf("decode %s payload: %w", f.RoutingKey, err))
		}
		return h.call.invoke, nil
	}}
	if _, v := s.start(); codec.Decodes(v) {
		r.decodeAt = func(d *jx.Decoder) (*handling, error) {
			h, v := s.start()
			if err := codec.DecodeValue(d, v); err != nil {
				return nil, err
			}
			return h, nil
		}
	}
	return r
}
