package declared

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/warrenbus/warren/runtime/topology"
)

// Orphans are what the record holds for the consumers in scope and the
// new topology does not declare: queues, and the bindings of queues that
// remain (a removed queue takes its bindings with it).
func TestOrphans(t *testing.T) {
	build := func(specs ...topology.ConsumerSpec) Record {
		t.Helper()
		top, err := topology.Build(topology.Spec{Consumers: specs})
		if err != nil {
			t.Fatal(err)
		}
		return Of(top)
	}
	ladder := func(ds ...int) []time.Duration {
		var out []time.Duration
		for _, d := range ds {
			out = append(out, time.Duration(d)*time.Second)
		}
		return out
	}
	before := build(
		topology.ConsumerSpec{Name: "mailer", Bindings: []string{"order.placed", "order.paid"}, MaxAttempts: 3, Backoff: ladder(1, 5)},
		topology.ConsumerSpec{Name: "audit", Bindings: []string{"#"}, MaxAttempts: 1},
	)
	after := build(
		topology.ConsumerSpec{Name: "mailer", Bindings: []string{"order.paid"}, MaxAttempts: 3, Backoff: ladder(1, 10)},
	)
	tests := []struct {
		name         string
		scope        []string
		wantQueues   map[string][]string
		wantBindings map[string][]topology.Binding
	}{
		{"every consumer", nil,
			map[string][]string{"mailer": {"mailer.retry.5s"}, "audit": {"audit.poison", "audit"}},
			map[string][]topology.Binding{"mailer": {{Exchange: "app.events", Queue: "mailer", Key: "order.placed"}}}},
		{"one consumer", []string{"mailer"},
			map[string][]string{"mailer": {"mailer.retry.5s"}},
			map[string][]topology.Binding{"mailer": {{Exchange: "app.events", Queue: "mailer", Key: "order.placed"}}}},
		{"another", []string{"audit"},
			map[string][]string{"audit": {"audit.poison", "audit"}},
			map[string][]topology.Binding{}},
	}
	for _, tt := range tests {
		queues, bindings := Orphans(before, after, tt.scope)
		if diff := cmp.Diff(tt.wantQueues, queues); diff != "" {
			t.Errorf("%s: queues (-want +got):\n%s", tt.name, diff)
		}
		if diff := cmp.Diff(tt.wantBindings, bindings); diff != "" {
			t.Errorf("%s: bindings (-want +got):\n%s", tt.name, diff)
		}
	}
	if q, b := Orphans(after, after, nil); len(q) != 0 || len(b) != 0 {
		t.Errorf("the same topology has orphans: %v, %v", q, b)
	}
}

// An ordered consumer's exchange bindings belong to it: a pattern it no
// longer binds is an orphan, one it still binds is not.
func TestOrphanedExchangeBindings(t *testing.T) {
	build := func(bindings ...string) Record {
		t.Helper()
		top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{{Name: "o", Bindings: bindings, Ordered: true}}})
		if err != nil {
			t.Fatal(err)
		}
		return Of(top)
	}
	_, bindings := Orphans(build("order.placed", "order.paid"), build("order.paid"), nil)
	want := map[string][]topology.Binding{"o": {{Exchange: "app.events", Key: "order.placed", ToExchange: "o.ordered"}}}
	if diff := cmp.Diff(want, bindings); diff != "" {
		t.Errorf("orphaned bindings (-want +got):\n%s", diff)
	}
}

func TestQueueNameFitsAMQP(t *testing.T) {
	long := make([]byte, 250)
	for i := range long {
		long[i] = 'e'
	}
	if n := QueueName(string(long)); len(n) > 255 || QueueName(string(long)) != n || QueueName("app.events") != "warren.declared.app.events" {
		t.Errorf("QueueName: %q (%d bytes)", n, len(n))
	}
}
