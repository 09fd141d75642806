package otel_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	warrenotel "github.com/warrenbus/warren/contrib/otel"
	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/topology"
)

type order struct {
	N int `json:"n"`
}

// One trace runs from the request that publishes a fact, through the
// publish, to both attempts of its handler on the real broker: the first
// fails and goes through a delay queue, the retry succeeds. Each attempt's
// process span is a child of the publish span, and the handler's own span
// a child of its attempt.
func TestOneTraceFromPublishAcrossARetry(t *testing.T) {
	url := testenv.VHost(t, "otel")
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{{
		Name: "mailer", Bindings: []string{"order.*"}, Backoff: []time.Duration{20 * time.Millisecond},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	exporter := tracetest.NewInMemoryExporter()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	defer provider.Shutdown(context.Background())
	tracing := warrenotel.New(warrenotel.Options{TracerProvider: provider})
	handlerTracer := provider.Tracer("handler")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Topology: &top})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	placed := runtime.Fact{RoutingKey: "order.placed", Version: 1}
	spec, _ := top.Consumer("mailer")
	consumer, err := runtime.NewConsumer(conn, spec, []runtime.Route{
		runtime.Handle(placed, func(ctx context.Context, d runtime.Delivery, o order) error {
			_, span := handlerTracer.Start(ctx, "send mail")
			defer span.End()
			if d.Attempt == 1 {
				return errors.New("mail server busy")
			}
			return nil
		}),
	}, runtime.WithMiddleware(tracing.Process))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- consumer.Run(ctx) }()

	pub, err := runtime.NewPublisher(conn, topology.DefaultExchanges.Events, runtime.WithPublishMiddleware(tracing.Publish))
	if err != nil {
		t.Fatal(err)
	}
	reqCtx, request := provider.Tracer("http").Start(ctx, "POST /orders")
	id, err := pub.Publish(reqCtx, placed, order{N: 1})
	request.End()
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the retry acked", func() bool { return conn.Counts("mailer").Get(runtime.Acked) == 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	spans := exporter.GetSpans()
	byName := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
		if s.SpanContext.TraceID() != request.SpanContext().TraceID() {
			t.Errorf("span %q is in trace %s, want the request's %s", s.Name, s.SpanContext.TraceID(), request.SpanContext().TraceID())
		}
	}
	publish := one(t, byName, "publish app.events")
	if publish.Parent.SpanID() != request.SpanContext().SpanID() || publish.SpanKind != trace.SpanKindProducer {
		t.Errorf("publish span: parent %s kind %s, want the request %s and producer", publish.Parent.SpanID(), publish.SpanKind, request.SpanContext().SpanID())
	}
	wantAttr(t, publish, "messaging.system", "rabbitmq")
	wantAttr(t, publish, "messaging.operation.type", "send")
	wantAttr(t, publish, "messaging.destination.name", "app.events")
	wantAttr(t, publish, "messaging.rabbitmq.destination.routing_key", "order.placed")
	wantAttr(t, publish, "messaging.message.id", id)

	attempts := byName["process mailer"]
	if len(attempts) != 2 {
		t.Fatalf("%d process spans, want 2 (the failed attempt and the retry): %v", len(attempts), names(spans))
	}
	for i, p := range attempts {
		if p.Parent.SpanID() != publish.SpanContext.SpanID() || p.SpanKind != trace.SpanKindConsumer {
			t.Errorf("process span %d: parent %s kind %s, want the publish span %s and consumer", i, p.Parent.SpanID(), p.SpanKind, publish.SpanContext.SpanID())
		}
		wantAttr(t, p, "messaging.operation.type", "process")
		wantAttr(t, p, "messaging.message.id", id)
		wantAttr(t, p, "warren.attempt", int64(i+1))
	}
	if attempts[0].Status.Code.String() != "Error" || attempts[1].Status.Code.String() != "Unset" {
		t.Errorf("attempt statuses %s, %s; want Error then Unset", attempts[0].Status.Code, attempts[1].Status.Code)
	}
	wantAttr(t, attempts[0], "error.type", "transient")
	mails := byName["send mail"]
	if len(mails) != 2 || mails[0].Parent.SpanID() != attempts[0].SpanContext.SpanID() || mails[1].Parent.SpanID() != attempts[1].SpanContext.SpanID() {
		t.Errorf("the handler's spans are not children of their attempts: %v", names(spans))
	}
}

func one(t *testing.T, byName map[string][]tracetest.SpanStub, name string) tracetest.SpanStub {
	t.Helper()
	if len(byName[name]) != 1 {
		t.Fatalf("%d spans named %q, want 1", len(byName[name]), name)
	}
	return byName[name][0]
}

func wantAttr(t *testing.T, s tracetest.SpanStub, key string, want any) {
	t.Helper()
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			if got := a.Value.AsInterface(); got != want {
				t.Errorf("span %q: %s = %v, want %v", s.Name, key, got, want)
			}
			return
		}
	}
	t.Errorf("span %q has no attribute %s", s.Name, key)
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name+" "+s.SpanContext.SpanID().String()+"<-"+s.Parent.SpanID().String())
	}
	return out
}

// A fact poisoned and later replayed from the poison queue stays in its
// trace: the attempt after the replay is another child of the one publish
// span, marked with warren.replay_count.
func TestReplayContinuesTheTrace(t *testing.T) {
	url := testenv.VHost(t, "otel-replay")
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{{
		Name: "mailer", Bindings: []string{"order.*"}, MaxAttempts: 1,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	exporter := tracetest.NewInMemoryExporter()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	defer provider.Shutdown(context.Background())
	tracing := warrenotel.New(warrenotel.Options{TracerProvider: provider})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := runtime.Dial(ctx, runtime.Config{URLs: []string{url}, Topology: &top})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	placed := runtime.Fact{RoutingKey: "order.placed", Version: 1}
	spec, _ := top.Consumer("mailer")
	var fixed atomic.Bool
	consumer, err := runtime.NewConsumer(conn, spec, []runtime.Route{
		runtime.Handle(placed, func(ctx context.Context, d runtime.Delivery, o order) error {
			if !fixed.Load() {
				return runtime.Permanent(errors.New("no template for this order"))
			}
			return nil
		}),
	}, runtime.WithMiddleware(tracing.Process))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- consumer.Run(ctx) }()
	pub, err := runtime.NewPublisher(conn, topology.DefaultExchanges.Events, runtime.WithPublishMiddleware(tracing.Publish))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pub.Publish(ctx, placed, order{N: 1}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the fact poisoned", func() bool { return conn.Counts("mailer").Get(runtime.Poisoned) == 1 })
	fixed.Store(true)
	if replayed, err := poison.Replay(ctx, conn, spec, poison.Filter{}); err != nil || len(replayed) != 1 {
		t.Fatalf("replay: %d messages, %v", len(replayed), err)
	}
	testenv.Eventually(t, "the replay acked", func() bool { return conn.Counts("mailer").Get(runtime.Acked) == 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	byName := map[string][]tracetest.SpanStub{}
	for _, s := range exporter.GetSpans() {
		byName[s.Name] = append(byName[s.Name], s)
	}
	publish := one(t, byName, "publish app.events")
	attempts := byName["process mailer"]
	if len(attempts) != 2 {
		t.Fatalf("%d process spans, want 2 (before and after the replay)", len(attempts))
	}
	for i, p := range attempts {
		if p.SpanContext.TraceID() != publish.SpanContext.TraceID() || p.Parent.SpanID() != publish.SpanContext.SpanID() {
			t.Errorf("process span %d is not a child of the publish span in its trace", i)
		}
	}
	wantAttr(t, attempts[0], "error.type", "permanent")
	wantAttr(t, attempts[1], "warren.replay_count", int64(1))
}
