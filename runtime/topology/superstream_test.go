package topology

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// A super stream is a hash exchange on the ordering key, marked
// x-super-stream and bound to the events exchange, over its partition
// streams, each bound with its position; its consumer knows the
// partitions.
func TestBuildSuperStream(t *testing.T) {
	spec := streamSpec(ConsumerSpec{})
	spec.Streams[0].Partitions = 3
	top, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	var ex Exchange
	for _, e := range top.Exchanges {
		if e.Name == "catalogue-log" {
			ex = e
		}
	}
	args := ex.Arguments()
	if ex.Kind != HashExchangeKind || args["hash-header"] != OrderingKeyHeader || args["x-super-stream"] != true {
		t.Fatalf("super stream exchange %+v, arguments %v", ex, args)
	}
	want := []string{"catalogue-log-0", "catalogue-log-1", "catalogue-log-2"}
	if ss := top.SuperStreams(); len(ss) != 1 || ss[0].Name != "catalogue-log" || !slices.Equal(ss[0].Partitions, want) {
		t.Fatalf("SuperStreams() = %+v, want catalogue-log with %v", ss, want)
	}
	if got := top.Consumers[0].Partitions; !slices.Equal(got, want) || top.Consumers[0].Stream != "catalogue-log" {
		t.Fatalf("consumer partitions %v of %q, want %v", got, top.Consumers[0].Stream, want)
	}
	if _, ok := top.Queue("catalogue-log"); ok {
		t.Error("a super stream declares no stream of its own name, only its partitions")
	}
	for i, p := range want {
		q, ok := top.Queue(p)
		if !ok || q.Type != Stream || q.MaxAge != 7*24*time.Hour {
			t.Errorf("partition %s: %+v", p, q)
		}
		found := false
		for _, b := range top.Bindings {
			if b.Exchange == "catalogue-log" && b.Queue == p {
				found = true
				if b.Key != "1" || b.Arguments()["x-stream-partition-order"] != i {
					t.Errorf("binding of %s: key %q, arguments %v; want weight 1 and order %d", p, b.Key, b.Arguments(), i)
				}
			}
		}
		if !found {
			t.Errorf("partition %s is not bound to the super stream's exchange", p)
		}
	}
	found := false
	for _, b := range top.Bindings {
		found = found || b.Exchange == "app.events" && b.ToExchange == "catalogue-log" && b.Key == "catalogue.#"
	}
	if !found {
		t.Error("the super stream's exchange is not bound to the events exchange by its binding")
	}
}

func TestBuildSuperStreamRefusesBadPartitions(t *testing.T) {
	for _, n := range []int{-1, 65} {
		spec := streamSpec(ConsumerSpec{})
		spec.Streams[0].Partitions = n
		_, err := Build(spec)
		if err == nil || !strings.Contains(err.Error(), "expected 1 to 64") {
			t.Errorf("partitions %d: %v; want a refusal", n, err)
		}
	}
	spec := streamSpec(ConsumerSpec{})
	spec.Streams[0].Partitions = 2
	spec.Streams = append(spec.Streams, StreamSpec{Name: "catalogue-log-1", Bindings: []string{"catalogue.#"}})
	if _, err := Build(spec); err == nil || !strings.Contains(err.Error(), `partition "catalogue-log-1" collides with`) && !strings.Contains(err.Error(), `"catalogue-log-1": collides with`) {
		t.Errorf("a stream named as a partition: %v; want a collision", err)
	}
}

func TestSupportsSuperStreams(t *testing.T) {
	for v, want := range map[string]bool{"3.10.8": false, "3.11.0": true, "3.13.7": true, "4.0.5": true, "4.1.0-rc.1": true, "": false, "unknown": false} {
		if got := SupportsSuperStreams(v); got != want {
			t.Errorf("SupportsSuperStreams(%q) = %v, want %v", v, got, want)
		}
	}
}
