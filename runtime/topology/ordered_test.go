package topology

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBuildOrdered(t *testing.T) {
	got, err := Build(Spec{Consumers: []ConsumerSpec{{
		Name: "fulfilment", Bindings: []string{"order.#"}, Ordered: true, Shards: 2,
		Backoff: []time.Duration{20 * ms, 40 * ms}, Concurrency: 8,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	hash := Exchange{Name: "fulfilment.ordered", Kind: "x-consistent-hash", Durable: true, HashHeader: "x-ordering-key"}
	if diff := cmp.Diff(hash, got.Exchanges[3]); diff != "" {
		t.Errorf("hash exchange (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"hash-header": "x-ordering-key"}, hash.Arguments()); diff != "" {
		t.Errorf("hash exchange arguments (-want +got):\n%s", diff)
	}
	var names []string
	for _, q := range got.Queues {
		names = append(names, q.Name)
		if q.Role == RoleShard && q.Arguments()["x-single-active-consumer"] != true {
			t.Errorf("shard %s: arguments %v lack x-single-active-consumer", q.Name, q.Arguments())
		}
	}
	if diff := cmp.Diff([]string{"fulfilment.poison", "fulfilment.shard.0", "fulfilment.shard.1"}, names); diff != "" {
		t.Errorf("queues (-want +got):\n%s", diff)
	}
	wantBindings := []Binding{
		{Exchange: "app.events", Key: "order.#", ToExchange: "fulfilment.ordered"},
		{Exchange: "fulfilment.ordered", Queue: "fulfilment.shard.0", Key: "1"},
		{Exchange: "fulfilment.ordered", Queue: "fulfilment.shard.1", Key: "1"},
		{Exchange: "app.dead", Queue: "fulfilment.poison", Key: "fulfilment"},
	}
	if diff := cmp.Diff(wantBindings, got.Bindings); diff != "" {
		t.Errorf("bindings (-want +got):\n%s", diff)
	}
	c := got.Consumers[0]
	if !c.Ordered() || c.Queue != "" || len(c.Tiers) != 0 || c.MaxAttempts != 3 {
		t.Errorf("consumer: ordered %v, queue %q, %d tiers, %d attempts; want ordered, no work queue, no tiers, 3 attempts", c.Ordered(), c.Queue, len(c.Tiers), c.MaxAttempts)
	}
	if c.DeliveryLimit != DefaultDeliveryLimit || got.Queues[1].DeliveryLimit != DefaultDeliveryLimit {
		t.Errorf("consumer's DeliveryLimit %d, shard's %d; want both the quorum default %d", c.DeliveryLimit, got.Queues[1].DeliveryLimit, DefaultDeliveryLimit)
	}
	classic, err := Build(Spec{Consumers: []ConsumerSpec{{Name: "f", Bindings: []string{"order.#"}, Ordered: true, Shards: 2, QueueType: Classic}}})
	if err != nil {
		t.Fatal(err)
	}
	if n := classic.Consumers[0].DeliveryLimit; n != 0 {
		t.Errorf("classic shards: consumer's DeliveryLimit %d, want 0 (classic queues have none)", n)
	}
	for attempt, want := range map[int]time.Duration{1: 20 * ms, 2: 40 * ms, 5: 40 * ms} {
		if d := c.Delay(attempt); d != want {
			t.Errorf("Delay(%d) = %s, want %s", attempt, d, want)
		}
	}
}

func TestBuildOrderedProblems(t *testing.T) {
	_, err := Build(Spec{Consumers: []ConsumerSpec{
		{Name: "a", Bindings: []string{"x"}, Ordered: true, Shards: 65},
		{Name: "b", Bindings: []string{"x"}, Shards: 2},
		{Name: "c", Bindings: []string{"x"}, Ordered: true, QueueType: Classic, MaxPriority: 5},
	}})
	if err == nil {
		t.Fatal("Build accepted 65 shards, shards without ordered, and an ordered priority queue")
	}
	for _, want := range []string{"shards 65: expected 1 to 64", "only for an ordered consumer", "a priority would let a later fact"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
