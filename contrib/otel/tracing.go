// Package otel carries OpenTelemetry trace context through warren's
// messages and records spans for publishing and processing facts, following
// OpenTelemetry's semantic conventions for messaging.
//
// It is a module of its own (github.com/warrenbus/warren/contrib/otel), so
// a service that does not use OpenTelemetry never builds it.
//
//	tracing := warrenotel.New(warrenotel.Options{})
//	pub, _ := runtime.NewPublisher(conn, exchange, runtime.WithPublishMiddleware(tracing.Publish))
//	consumer, _ := runtime.NewConsumer(conn, spec, routes, runtime.WithMiddleware(tracing.Process))
//
// # What goes on the wire
//
// Publish starts a span of kind producer ("publish <exchange>"), a child of
// whatever span the caller's ctx holds (the HTTP request that made the
// fact, say), and injects its context into the message's headers with the
// configured propagator: by default W3C Trace Context, the headers
// traceparent and tracestate. The span ends with the broker's confirm, or
// with the error.
//
// # Processing, retries and replays: one trace
//
// Process extracts that context from the delivery's headers and starts a
// span of kind consumer ("process <consumer>") as its child, so the
// handler's own spans (database calls, outgoing requests) join the trace of
// the request that published the fact. Retry copies, poison copies and
// replays keep every header of the original, so every attempt of a fact,
// however late and whether it came back by a retry or by a replay from the
// poison queue, is another child of the same publish span in the same
// trace: a trace view shows the publish followed by each attempt, failed
// ones marked as errors. The attributes warren.attempt (1, 2, ...) and
// warren.replay_count (set once a message was replayed) tell the
// attempts apart. Links are not used: there is only ever one producer
// context per message, and a child relation keeps the attempts in the
// trace where people look for them.
package otel

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/warrenbus/warren/runtime"
)

// ScopeName is the instrumentation scope of warren's spans.
const ScopeName = "github.com/warrenbus/warren/contrib/otel"

// Attributes warren adds to the messaging conventions' own.
const (
	AttemptKey     = attribute.Key("warren.attempt")      // the handler attempt, 1 the first time
	ReplayCountKey = attribute.Key("warren.replay_count") // how often the message was replayed from the poison queue
)

// replayCountHeader is the header poison.Replay sets (poison.HeaderReplayCount).
const replayCountHeader = "x-replay-count"

// Options configures [New]. The zero value uses the global tracer provider
// and W3C Trace Context.
type Options struct {
	// TracerProvider makes the tracer. Default otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// Propagator writes and reads the trace context in message headers.
	// Default propagation.TraceContext{} (traceparent, tracestate); pass
	// otel.GetTextMapPropagator() to use the process-wide one, baggage
	// included.
	Propagator propagation.TextMapPropagator
}

// Tracing holds the two middleware that carry a trace across the broker.
type Tracing struct {
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
}

// New returns Tracing configured by o.
func New(o Options) *Tracing {
	if o.TracerProvider == nil {
		o.TracerProvider = otel.GetTracerProvider()
	}
	if o.Propagator == nil {
		o.Propagator = propagation.TraceContext{}
	}
	return &Tracing{
		tracer:     o.TracerProvider.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		propagator: o.Propagator,
	}
}

// Publish is [runtime.PublishMiddleware]: a producer span around the
// publish, its context injected into the message's headers.
func (t *Tracing) Publish(next runtime.PublishFunc) runtime.PublishFunc {
	return func(ctx context.Context, m *runtime.Outgoing) error {
		ctx, span := t.tracer.Start(ctx, "publish "+m.Exchange,
			trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(
				semconv.MessagingSystemRabbitMQ,
				semconv.MessagingOperationTypeSend,
				semconv.MessagingOperationName("publish"),
				semconv.MessagingDestinationName(m.Exchange),
				semconv.MessagingRabbitMQDestinationRoutingKey(m.RoutingKey),
				semconv.MessagingMessageID(m.MessageID),
			))
		defer span.End()
		t.propagator.Inject(ctx, Headers(m.Headers))
		err := next(ctx, m)
		fail(span, err)
		return err
	}
}

// Process is [runtime.Middleware]: a consumer span around the handler, a
// child of the publish span whose context the delivery's headers carry.
func (t *Tracing) Process(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(ctx context.Context, d runtime.Delivery) error {
		ctx = t.propagator.Extract(ctx, Headers(d.Headers))
		attrs := []attribute.KeyValue{
			semconv.MessagingSystemRabbitMQ,
			semconv.MessagingOperationTypeProcess,
			semconv.MessagingOperationName("process"),
			semconv.MessagingDestinationName(d.Consumer),
			semconv.MessagingRabbitMQDestinationRoutingKey(d.RoutingKey),
			semconv.MessagingMessageID(d.MessageID),
			AttemptKey.Int(d.Attempt),
		}
		if n, ok := headerInt(d.Headers[replayCountHeader]); ok {
			attrs = append(attrs, ReplayCountKey.Int64(n))
		}
		ctx, span := t.tracer.Start(ctx, "process "+d.Consumer,
			trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
		defer span.End()
		err := next(ctx, d)
		fail(span, err)
		return err
	}
}

func fail(span trace.Span, err error) {
	if err == nil {
		return
	}
	kind := "transient"
	if runtime.IsPermanent(err) {
		kind = "permanent"
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.SetAttributes(semconv.ErrorTypeKey.String(kind))
}

func headerInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case int:
		return int64(n), true
	}
	return 0, false
}

// Headers adapts AMQP message headers to a propagation.TextMapCarrier.
// Only string values are read; a header of another type is ignored.
type Headers map[string]any

var _ propagation.TextMapCarrier = Headers(nil)

// Get returns the header key as a string, or "".
func (h Headers) Get(key string) string {
	switch v := h[key].(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}

// Set sets the header key. Publish middleware's headers are writable;
// Set on a nil map (a delivery without headers) does nothing.
func (h Headers) Set(key, value string) {
	if h != nil {
		h[key] = value
	}
}

// Keys lists the header names.
func (h Headers) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}
