package topology

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const ms = time.Millisecond

func TestBuildSearchIndexer(t *testing.T) {
	got, err := Build(Spec{
		Exchanges: Exchanges{Events: "shop.events"},
		Consumers: []ConsumerSpec{{
			Name:     "search-indexer",
			Bindings: []string{"catalogue.#", "price.*.changed"},
			Backoff:  []time.Duration{20 * ms, 40 * ms, 40 * ms, 80 * ms},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Topology{
		Exchanges: []Exchange{
			{Name: "shop.events", Kind: "topic", Durable: true},
			{Name: "app.retry", Kind: "topic", Durable: true},
			{Name: "app.dead", Kind: "topic", Durable: true},
		},
		Queues: []Queue{
			{Name: "search-indexer.poison", Consumer: "search-indexer", Role: RolePoison, Type: Quorum},
			{Name: "search-indexer", Consumer: "search-indexer", Role: RoleWork, Type: Quorum,
				DeadLetter:    &DeadLetter{Exchange: "app.dead", RoutingKey: "search-indexer", AtLeastOnce: true},
				DeliveryLimit: DefaultDeliveryLimit},
			{Name: "search-indexer.retry.20ms", Consumer: "search-indexer", Role: RoleRetry, Type: Quorum, MessageTTL: 20 * ms,
				DeadLetter: &DeadLetter{Exchange: "", RoutingKey: "search-indexer", AtLeastOnce: true}},
			{Name: "search-indexer.retry.40ms", Consumer: "search-indexer", Role: RoleRetry, Type: Quorum, MessageTTL: 40 * ms,
				DeadLetter: &DeadLetter{Exchange: "", RoutingKey: "search-indexer", AtLeastOnce: true}},
			{Name: "search-indexer.retry.80ms", Consumer: "search-indexer", Role: RoleRetry, Type: Quorum, MessageTTL: 80 * ms,
				DeadLetter: &DeadLetter{Exchange: "", RoutingKey: "search-indexer", AtLeastOnce: true}},
		},
		Bindings: []Binding{
			{Exchange: "shop.events", Queue: "search-indexer", Key: "catalogue.#"},
			{Exchange: "shop.events", Queue: "search-indexer", Key: "price.*.changed"},
			{Exchange: "app.retry", Queue: "search-indexer.retry.20ms", Key: "search-indexer.retry.20ms"},
			{Exchange: "app.retry", Queue: "search-indexer.retry.40ms", Key: "search-indexer.retry.40ms"},
			{Exchange: "app.retry", Queue: "search-indexer.retry.80ms", Key: "search-indexer.retry.80ms"},
			{Exchange: "app.dead", Queue: "search-indexer.poison", Key: "search-indexer"},
		},
		Consumers: []Consumer{{
			Name: "search-indexer", Queue: "search-indexer", PoisonQueue: "search-indexer.poison",
			RetryExchange: "app.retry", DeadExchange: "app.dead",
			Tiers: []Tier{
				{Delay: 20 * ms, Queue: "search-indexer.retry.20ms"},
				{Delay: 40 * ms, Queue: "search-indexer.retry.40ms"},
				{Delay: 40 * ms, Queue: "search-indexer.retry.40ms"},
				{Delay: 80 * ms, Queue: "search-indexer.retry.80ms"},
			},
			MaxAttempts: 5, MaxDeferrals: DefaultMaxDeferrals, Prefetch: DefaultPrefetch, Concurrency: DefaultConcurrency,
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Build (-want +got):\n%s", diff)
	}
}

func TestQueueArguments(t *testing.T) {
	top, err := Build(Spec{Consumers: []ConsumerSpec{
		{Name: "q", Bindings: []string{"a.b"}, Backoff: []time.Duration{4 * time.Second}, DeliveryLimit: 3},
		{Name: "c", Bindings: []string{"a.b"}, QueueType: Classic, MaxAttempts: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]any{
		"q.poison": {"x-queue-type": "quorum"},
		"q": {"x-queue-type": "quorum", "x-dead-letter-exchange": "app.dead", "x-dead-letter-routing-key": "q",
			"x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish", "x-delivery-limit": int64(3)},
		"q.retry.4s": {"x-queue-type": "quorum", "x-message-ttl": int64(4000), "x-dead-letter-exchange": "",
			"x-dead-letter-routing-key": "q", "x-dead-letter-strategy": "at-least-once", "x-overflow": "reject-publish"},
		"c.poison": {"x-queue-type": "classic"},
		"c":        {"x-queue-type": "classic", "x-dead-letter-exchange": "app.dead", "x-dead-letter-routing-key": "c"},
	}
	got := map[string]map[string]any{}
	for _, q := range top.Queues {
		got[q.Name] = q.Arguments()
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("arguments (-want +got):\n%s", diff)
	}
}

func TestDefaults(t *testing.T) {
	top, err := Build(Spec{Consumers: []ConsumerSpec{
		{Name: "plain", Bindings: []string{"#"}},
		{Name: "wide", Bindings: []string{"#"}, Concurrency: 8},
		{Name: "short", Bindings: []string{"#"}, MaxAttempts: 3},
	}})
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := top.Consumer("plain")
	if plain.MaxAttempts != 8 || len(plain.Tiers) != 7 || plain.Tiers[6].Queue != "plain.retry.1m" {
		t.Errorf("plain: MaxAttempts %d, tiers %v; want 8 attempts over the 7-step default ladder ending at 1m", plain.MaxAttempts, plain.Tiers)
	}
	if wide, _ := top.Consumer("wide"); wide.Prefetch != 16 {
		t.Errorf("wide: prefetch %d, want 2*concurrency = 16", wide.Prefetch)
	}
	short, _ := top.Consumer("short")
	if len(short.Tiers) != 2 || short.Tiers[1].Delay != 2*time.Second {
		t.Errorf("short: tiers %v, want the first two steps of the default ladder", short.Tiers)
	}
	if top.Exchanges[0].Name != "app.events" || top.Exchanges[2].Name != "app.dead" {
		t.Errorf("exchanges %v, want the defaults", top.Exchanges)
	}
	if _, ok := top.Consumer("absent"); ok {
		t.Error("Consumer(absent) found something")
	}
}

func TestTierFor(t *testing.T) {
	c := Consumer{Tiers: []Tier{{Delay: 1}, {Delay: 2}, {Delay: 3}}}
	for attempt, want := range map[int]time.Duration{1: 1, 2: 2, 3: 3, 4: 3, 9: 3} {
		got, ok := c.TierFor(attempt)
		if !ok || got.Delay != want {
			t.Errorf("TierFor(%d) = %v, %v; want delay %v", attempt, got, ok, want)
		}
	}
	if _, ok := (Consumer{}).TierFor(1); ok {
		t.Error("TierFor without tiers reported a tier")
	}
}

func TestFormatDelay(t *testing.T) {
	for d, want := range map[time.Duration]string{
		20 * ms: "20ms", 1500 * ms: "1500ms", 4 * time.Second: "4s", 90 * time.Second: "90s",
		time.Minute: "1m", 2 * time.Hour: "2h", 61 * time.Minute: "61m", time.Microsecond: "1000ns",
	} {
		if got := FormatDelay(d); got != want {
			t.Errorf("FormatDelay(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestBuildRejects(t *testing.T) {
	ok := ConsumerSpec{Name: "c", Bindings: []string{"a.b"}}
	cases := []struct {
		name string
		spec Spec
		want []string
	}{
		{"same exchanges", Spec{Exchanges: Exchanges{Events: "x", Retry: "x"}}, []string{`retry exchange "x": same name as the events exchange`}},
		{"reserved", Spec{Exchanges: Exchanges{Dead: "amq.topic"}}, []string{`dead exchange "amq.topic"`, "reserved"}},
		{"no bindings", Spec{Consumers: []ConsumerSpec{{Name: "c"}}}, []string{`consumer 0 ("c"): bindings: expected at least one`}},
		{"wildcard name", Spec{Consumers: []ConsumerSpec{{Name: "a#", Bindings: []string{"x"}}}}, []string{`name: character '#'`}},
		{"bad pattern", Spec{Consumers: []ConsumerSpec{{Name: "c", Bindings: []string{"a.b*", "a..b"}}}}, []string{`binding "a.b*": word "b*"`, `binding "a..b": empty word`}},
		{"duplicate binding", Spec{Consumers: []ConsumerSpec{{Name: "c", Bindings: []string{"a", "a"}}}}, []string{`binding "a": listed twice`}},
		{"queue type", Spec{Consumers: []ConsumerSpec{{Name: "c", Bindings: []string{"a"}, QueueType: "stream"}}}, []string{`queueType "stream": expected "quorum" or "classic"`}},
		{"sub-ms delay", Spec{Consumers: []ConsumerSpec{{Name: "c", Bindings: []string{"a"}, Backoff: []time.Duration{1500 * time.Microsecond}}}}, []string{"backoff[0]: delay 1.5ms: must be a whole number of milliseconds"}},
		{"negative delay", Spec{Consumers: []ConsumerSpec{{Name: "c", Bindings: []string{"a"}, Backoff: []time.Duration{-ms}}}}, []string{"backoff[0]: delay -1ms: must be positive"}},
		{"empty ladder", Spec{Consumers: []ConsumerSpec{{Name: "c", Bindings: []string{"a"}, Backoff: []time.Duration{}, MaxAttempts: 3}}}, []string{"backoff: empty, but maxAttempts 3"}},
		{"prefetch", Spec{Consumers: []ConsumerSpec{{Name: "c", Bindings: []string{"a"}, Prefetch: 2, Concurrency: 4}}}, []string{"prefetch 2: expected at least concurrency (4)"}},
		{"duplicate consumer", Spec{Consumers: []ConsumerSpec{ok, ok}}, []string{`queue "c": collides with the work queue of consumer "c"`}},
		{"collision", Spec{Consumers: []ConsumerSpec{ok, {Name: "c.poison", Bindings: []string{"a"}}}}, []string{`consumer 1 ("c.poison"): queue "c.poison": collides with the poison queue of consumer "c"`}},
		{"long name", Spec{Consumers: []ConsumerSpec{{Name: strings.Repeat("n", 230), Bindings: []string{"a"}}}}, []string{"leaves no room for its delay queue names"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.spec)
			if err == nil {
				t.Fatal("Build accepted the spec")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestPart(t *testing.T) {
	top, err := Build(Spec{Consumers: []ConsumerSpec{
		{Name: "a", Bindings: []string{"x"}, MaxAttempts: 2, Backoff: []time.Duration{ms}},
		{Name: "b", Bindings: []string{"x"}, MaxAttempts: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	p := top.Part("b")
	var names []string
	for _, q := range p.Queues {
		names = append(names, q.Name)
	}
	if diff := cmp.Diff([]string{"b.poison", "b"}, names); diff != "" || len(p.Exchanges) != 3 || len(p.Bindings) != 2 || len(p.Consumers) != 1 {
		t.Errorf("Part(b): queues diff %s, %d exchanges, %d bindings, %d consumers", diff, len(p.Exchanges), len(p.Bindings), len(p.Consumers))
	}
}

// Each problem names the consumer (by index and name) or the exchange, the
// field as warren.json spells it and, for a list, the element at fault, so
// that a caller can point at the place the value was written.
func TestBuildProblemsNameConsumerAndField(t *testing.T) {
	_, err := Build(Spec{
		Exchanges: Exchanges{Retry: "app.events"},
		Consumers: []ConsumerSpec{
			{Name: "fine", Bindings: []string{"a"}},
			{Name: "bad", Bindings: []string{"a", "a..b"}, Prefetch: 2, Concurrency: 4, Backoff: []time.Duration{ms, -ms}},
			{Name: "fine.poison", Bindings: []string{"a"}},
		},
	})
	var se *SpecError
	if !errors.As(err, &se) {
		t.Fatalf("Build returned %v, want a *SpecError", err)
	}
	type where struct {
		Consumer    int
		Name, Field string
		Index       int
	}
	var got []where
	for _, p := range se.Problems {
		got = append(got, where{p.Consumer, p.Name, p.Field, p.Index})
	}
	want := []where{
		{-1, "retry", "retry", -1},
		{1, "bad", "bindings", 1},
		{1, "bad", "prefetch", -1},
		{1, "bad", "backoff", 1},
		{2, "fine.poison", "", -1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s\nerror:\n%v", diff, err)
	}
	var p Problem
	if !errors.As(err, &p) || p != se.Problems[0] {
		t.Errorf("errors.As found %+v, want the first problem %+v", p, se.Problems[0])
	}
	if first := strings.SplitN(err.Error(), "\n", 2)[0]; first != `topology: retry exchange "app.events": same name as the events exchange; the three must differ` {
		t.Errorf("first line of the error: %s", first)
	}
}

// On RabbitMQ 4 the quorum queues without a limit of their own are
// declared unlimited (-1), so that 4.x's default of 20 never decides;
// classic queues and the work queue's own limit are as on RabbitMQ 3.
func TestQueueArgumentsForRabbitMQ4(t *testing.T) {
	top, err := Build(Spec{Consumers: []ConsumerSpec{
		{Name: "q", Bindings: []string{"a.b"}, Backoff: []time.Duration{4 * time.Second}, DeliveryLimit: 3},
		{Name: "c", Bindings: []string{"a.b"}, QueueType: Classic, MaxAttempts: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"q.poison": int64(-1), "q": int64(3), "q.retry.4s": int64(-1), "c.poison": nil, "c": nil}
	for _, q := range top.Queues {
		three, four := q.ArgumentsFor(RabbitMQ3), q.ArgumentsFor(RabbitMQ4)
		if four["x-delivery-limit"] != want[q.Name] {
			t.Errorf("%s: x-delivery-limit %v on RabbitMQ 4, want %v", q.Name, four["x-delivery-limit"], want[q.Name])
		}
		delete(four, "x-delivery-limit")
		delete(three, "x-delivery-limit")
		if diff := cmp.Diff(three, four); diff != "" {
			t.Errorf("%s: other arguments differ between RabbitMQ 3 and 4 (-3 +4):\n%s", q.Name, diff)
		}
	}
}

func TestBrokerOf(t *testing.T) {
	for version, want := range map[string]Broker{
		"3.10.8": RabbitMQ3, "3.13.7": RabbitMQ3, "4.0.5": RabbitMQ4, "4.1.0-rc.1": RabbitMQ4, "5.0.0": RabbitMQ4,
		"": RabbitMQ3, "unknown": RabbitMQ3,
	} {
		if got := BrokerOf(version); got != want {
			t.Errorf("BrokerOf(%q) = %v, want %v", version, got, want)
		}
	}
}
