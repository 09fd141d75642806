package topology

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func streamSpec(consumer ConsumerSpec) Spec {
	consumer.Name = "audit"
	consumer.Bindings = []string{"catalogue.#"}
	if consumer.Stream == "" {
		consumer.Stream = "catalogue-log"
	}
	return Spec{
		Streams:   []StreamSpec{{Name: "catalogue-log", Bindings: []string{"catalogue.#"}, MaxAge: 7 * 24 * time.Hour, MaxBytes: 10_000_000_000}},
		Consumers: []ConsumerSpec{consumer},
	}
}

// A stream is a stream queue bound to the events exchange with its
// retention as arguments; its consumer's work queue takes only retries.
func TestBuildStream(t *testing.T) {
	top, err := Build(streamSpec(ConsumerSpec{Start: Start{Kind: StartFirst}}))
	if err != nil {
		t.Fatal(err)
	}
	q, ok := top.Queue("catalogue-log")
	if !ok || q.Role != RoleStream || q.Type != Stream {
		t.Fatalf("stream queue %+v", q)
	}
	args := q.ArgumentsFor(RabbitMQ3)
	want := map[string]any{"x-queue-type": "stream", "x-max-age": "604800s", "x-max-length-bytes": int64(10_000_000_000), "x-stream-max-segment-size-bytes": DefaultSegmentBytes}
	for k, v := range want {
		if args[k] != v {
			t.Errorf("argument %s = %v, want %v", k, args[k], v)
		}
	}
	if len(args) != len(want) {
		t.Errorf("arguments %v, want exactly %v", args, want)
	}
	c, _ := top.Consumer("audit")
	if c.Stream != "catalogue-log" || c.Start.Kind != StartFirst || c.Queue != "audit" {
		t.Fatalf("consumer %+v", c)
	}
	for _, b := range top.Bindings {
		if b.Queue == "audit" {
			t.Errorf("work queue bound %+v: a stream consumer's work queue takes only its own retries", b)
		}
	}
	var streamBound bool
	for _, b := range top.Bindings {
		streamBound = streamBound || b.Queue == "catalogue-log" && b.Key == "catalogue.#" && b.Exchange == DefaultExchanges.Events
	}
	if !streamBound {
		t.Errorf("stream not bound to the events exchange: %+v", top.Bindings)
	}
	part := top.Part("audit")
	if _, ok := part.Queue("catalogue-log"); !ok {
		t.Errorf("the part of a stream consumer lacks its stream: %+v", part.Queues)
	}
}

// With delay levels, a delayed fact of a stream's bindings falls due into
// the stream, not into its consumers' work queues, which take only their
// own deferrals.
func TestBuildStreamWithDelays(t *testing.T) {
	spec := streamSpec(ConsumerSpec{})
	spec.Delays = true
	top, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	var toStream, toWork []string
	for _, b := range top.Bindings {
		if b.Exchange != top.Delay.Deliver {
			continue
		}
		switch b.Queue {
		case "catalogue-log":
			toStream = append(toStream, b.Key)
		case "audit":
			toWork = append(toWork, b.Key)
		}
	}
	if want := []string{DelayedPattern("catalogue.#")}; !slices.Equal(toStream, want) {
		t.Errorf("delivery bindings of the stream %v, want %v", toStream, want)
	}
	if want := []string{DeferPattern("audit")}; !slices.Equal(toWork, want) {
		t.Errorf("delivery bindings of the work queue %v, want only its deferrals %v", toWork, want)
	}
}

// What only queues have, a retention that cannot be met and a start in
// the future are refused, each naming its field.
func TestBuildStreamRefuses(t *testing.T) {
	future := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name  string
		spec  Spec
		field string
		want  string
	}{
		{"priority", streamSpec(ConsumerSpec{MaxPriority: 5}), "maxPriority", "has no priorities"},
		{"max length", streamSpec(ConsumerSpec{MaxLength: 100}), "maxLength", "bounded by the stream's own retention"},
		{"ordered", streamSpec(ConsumerSpec{Ordered: true}), "ordered", "cannot be ordered"},
		{"future start", streamSpec(ConsumerSpec{Start: Start{Kind: StartTime, Time: future}}), "start", "in the future"},
		{"negative offset", streamSpec(ConsumerSpec{Start: Start{Kind: StartOffset, Offset: -1}}), "start", "expected 0 or more"},
		{"unknown stream", streamSpec(ConsumerSpec{Stream: "nope"}), "stream", `stream "nope": no such stream`},
		{"start without stream", Spec{Consumers: []ConsumerSpec{{Name: "q", Bindings: []string{"a.b"}, Start: Start{Kind: StartFirst}}}}, "start", "only a stream consumer"},
		{"retention below a segment", Spec{Streams: []StreamSpec{{Name: "s", Bindings: []string{"a.#"}, MaxBytes: 1_000_000}}}, "streams.0.maxBytes", "cannot be met"},
		{"age not in seconds", Spec{Streams: []StreamSpec{{Name: "s", Bindings: []string{"a.#"}, MaxAge: 1500 * time.Millisecond}}}, "streams.0.maxAge", "whole seconds"},
		{"stream without bindings", Spec{Streams: []StreamSpec{{Name: "s"}}}, "streams.0.bindings", "at least one"},
		{"direct super stream", Spec{Streams: []StreamSpec{{Name: "s", Bindings: []string{"a.#"}, Partitions: 2, Direct: true}}}, "streams.0.publish", "hash exchange"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.spec)
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("Build: %v, want a SpecError", err)
			}
			for _, p := range se.Problems {
				if p.Field == tc.field && strings.Contains(p.Detail, tc.want) {
					return
				}
			}
			t.Fatalf("problems %v, want one at %s saying %q", se.Problems, tc.field, tc.want)
		})
	}
}

// A stream consumer's maxPriority is refused once, with the advice that
// applies to it: the quorum queue's advice (maxPriority 5, or a classic
// queue) is refused for a stream consumer too.
func TestBuildStreamPriorityAdvice(t *testing.T) {
	_, err := Build(streamSpec(ConsumerSpec{MaxPriority: 3}))
	var se *SpecError
	if !errors.As(err, &se) {
		t.Fatalf("Build: %v, want a SpecError", err)
	}
	var got []Problem
	for _, p := range se.Problems {
		if p.Field == "maxPriority" {
			got = append(got, p)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0].Detail, "remove maxPriority") {
		t.Fatalf("maxPriority problems %v, want one that says to remove it", got)
	}
}

// A fact goes directly into a stream of Direct only when no other queue
// or stream binds its key: otherwise through the exchange, which reaches
// them all.
func TestDirectStream(t *testing.T) {
	top, err := Build(Spec{
		Streams: []StreamSpec{
			{Name: "stock-log", Bindings: []string{"stock.#", "stock.counted"}, Direct: true},
			{Name: "orders-log", Bindings: []string{"order.#"}},
			{Name: "shipping-log", Bindings: []string{"order.shipped"}, Direct: true},
		},
		Consumers: []ConsumerSpec{{Name: "mailer", Bindings: []string{"stock.moved"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ex := DefaultExchanges.Events
	for _, tc := range []struct {
		exchange, key, want string
	}{
		{ex, "stock.counted", "stock-log"}, // two bindings of the same stream
		{ex, "stock.moved", ""},            // a consumer's queue binds it too
		{ex, "order.placed", ""},           // a stream without Direct
		{ex, "order.shipped", ""},          // a second stream binds it
		{ex, "nobody.binds", ""},
		{"other.events", "stock.counted", ""},
	} {
		got, ok := top.DirectStream(tc.exchange, tc.key)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("DirectStream(%s, %s) = %q, %v; want %q", tc.exchange, tc.key, got, ok, tc.want)
		}
	}
}

func TestStartDescribe(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for s, want := range map[Start]string{
		{Kind: StartFirst}:              "the oldest fact the stream still holds",
		{Kind: StartLast}:               "the last fact written when the consumer first starts, then what follows",
		{Kind: StartNext}:               "the first fact written after the consumer first starts",
		{}:                              "the first fact written after the consumer first starts",
		{Kind: StartOffset, Offset: 42}: "the fact at offset 42",
		{Kind: StartTime, Time: at}:     "the first fact written at or after 2026-01-01T00:00:00Z",
	} {
		if got := s.Describe(); got != want {
			t.Errorf("%v.Describe() = %q, want %q", s, got, want)
		}
	}
}
