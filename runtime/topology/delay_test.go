package topology

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestDelayPath(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want []int
	}{
		{10 * time.Millisecond, []int{3, 1}}, // 1010
		// A fraction of a millisecond rounds up: never early.
		{time.Microsecond, []int{0}},
		{1500 * time.Microsecond, []int{1}},
		{4 * time.Millisecond, []int{2}},
		{time.Minute, []int{15, 14, 13, 11, 9, 6, 5}}, // 60000 = 1110101001100000
	} {
		got, err := DelayPath(c.d)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("DelayPath(%s) = %v, %v; want %v", c.d, got, err, c.want)
		}
	}
	if p, _ := DelayPath(MaxDelay); len(p) != DelayLevels || p[0] != DelayLevels-1 || p[DelayLevels-1] != 0 {
		t.Errorf("MaxDelay: path %v", p)
	}
	if MaxDelay < 366*24*time.Hour {
		t.Errorf("MaxDelay %s: less than a year", MaxDelay)
	}
	for _, d := range []time.Duration{0, -time.Second, MaxDelay + time.Millisecond} {
		if _, err := DelayPath(d); err == nil {
			t.Errorf("delay %s: no error", d)
		}
		if _, err := SetDelayHeaders(map[string]any{}, d); err == nil {
			t.Errorf("SetDelayHeaders, delay %s: no error", d)
		}
	}
}

// SetDelayHeaders replaces the delay a fact carried: a delayed fact that
// is deferred waits the new delay, not the old one as well.
func TestSetDelayHeaders(t *testing.T) {
	h := map[string]any{"x-fact-version": 1, DelayHeader(20): true, DelayHeader(3): true}
	entry, err := SetDelayHeaders(h, 5*time.Millisecond) // 101
	if err != nil || entry != 2 {
		t.Fatalf("entry %d, err %v; want 2", entry, err)
	}
	want := map[string]any{"x-fact-version": 1, "warren-delay-2": true, "warren-delay-0": true}
	if fmt.Sprint(h) != fmt.Sprint(want) {
		t.Errorf("headers %v, want %v", h, want)
	}
}

func TestDelayedRoutingKey(t *testing.T) {
	if key, err := DelayedRoutingKey("order.placed"); err != nil || key != "f.order.placed" {
		t.Errorf("key %q, %v", key, err)
	}
	if key, err := DelayedRoutingKey(strings.Repeat("a", MaxDelayedKeyLen)); err != nil || len(key) != maxNameLen {
		t.Errorf("longest key: %d bytes, %v", len(key), err)
	}
	if _, err := DelayedRoutingKey(strings.Repeat("a", MaxDelayedKeyLen+1)); err == nil {
		t.Error("a key too long to be delayed: no error")
	}
}

func TestDelayLevelExchange(t *testing.T) {
	top := DelayExchange("shop.events", DelayLevels-1)
	if got := DelayLevelExchange(top, 3); got != "shop.events.delay.3" {
		t.Errorf("level 3 = %q", got)
	}
	for _, c := range []struct {
		top string
		k   int
	}{{top, -1}, {top, DelayLevels}, {"shop.events.delay.3", 2}, {"", 0}} {
		if got := DelayLevelExchange(c.top, c.k); got != "" {
			t.Errorf("DelayLevelExchange(%q, %d) = %q, want none", c.top, c.k, got)
		}
	}
}

// delayHeaders returns the headers of a fact delayed by d.
func delayHeaders(t *testing.T, d time.Duration) map[string]any {
	t.Helper()
	h := map[string]any{}
	if _, err := SetDelayHeaders(h, d); err != nil {
		t.Fatal(err)
	}
	return h
}

// route follows top's bindings as RabbitMQ does, exchange to exchange and
// through alternate exchanges included, and returns the queues a message
// with key and headers reaches from exchange: a headers exchange's
// bindings match by a header's presence, the others' by topic pattern.
func route(top Topology, exchange, key string, headers map[string]any) []string {
	var out []string
	var walk func(x string)
	walk = func(x string) {
		var kind, alternate string
		for _, e := range top.Exchanges {
			if e.Name == x {
				kind, alternate = e.Kind, e.AlternateExchange
			}
		}
		routed := false
		for _, b := range top.Bindings {
			if b.Exchange != x {
				continue
			}
			if kind == "headers" {
				if v, _ := headers[b.Header].(bool); !v || b.Header == "" {
					continue
				}
			} else if !(b.Key == "" || TopicMatch(b.Key, key)) {
				continue
			}
			routed = true
			if b.ToExchange != "" {
				walk(b.ToExchange)
			} else {
				out = append(out, b.Queue)
			}
		}
		if !routed && alternate != "" {
			walk(alternate)
		}
	}
	walk(exchange)
	return out
}

// shopWithDelays builds a shop with delay levels: a mailer, an audit bound
// by "#", third, and an ordered ledger.
func shopWithDelays(t *testing.T, third ConsumerSpec) Topology {
	t.Helper()
	return mustBuild(t, Spec{
		Exchanges: Exchanges{Events: "shop.events"},
		Delays:    true,
		Consumers: []ConsumerSpec{
			{Name: "mailer", Bindings: []string{"order.*"}},
			{Name: "audit", Bindings: []string{"#"}},
			third,
			{Name: "ledger", Bindings: []string{"order.placed"}, Ordered: true},
		},
	})
}

func TestBuildDelays(t *testing.T) {
	top := shopWithDelays(t, ConsumerSpec{Name: "stock", Bindings: []string{"stock.#"}})
	d := top.Delay
	if d.Levels != DelayLevels || d.Exchange != "shop.events.delay.35" || d.Deliver != "shop.events.delay.deliver" || d.Unroutable != "shop.events.delay.unroutable" {
		t.Errorf("Delay = %+v", d)
	}
	for k := 0; k < DelayLevels; k++ {
		q, ok := top.Queue(DelayExchange("shop.events", k))
		if !ok {
			t.Fatalf("no queue for level %d", k)
		}
		args := q.ArgumentsFor(RabbitMQ3)
		next := DelayExchange("shop.events", k-1)
		if k == 0 {
			next = d.Deliver
		}
		if q.Role != RoleDelay || args["x-queue-type"] != "quorum" || args["x-message-ttl"] != int64(1)<<k ||
			args["x-dead-letter-exchange"] != next || args["x-dead-letter-strategy"] != "at-least-once" {
			t.Errorf("level %d: %+v", k, args)
		}
		if _, has := args["x-dead-letter-routing-key"]; has {
			t.Errorf("level %d replaces the routing key: %+v", k, args)
		}
	}

	for k := 0; k < DelayLevels; k++ {
		var binds []Binding
		for _, b := range top.Bindings {
			if b.Exchange == DelayExchange("shop.events", k) {
				binds = append(binds, b)
			}
		}
		want := Binding{Exchange: DelayExchange("shop.events", k), Queue: DelayExchange("shop.events", k), Header: DelayHeader(k)}
		if len(binds) != 1 || binds[0] != want {
			t.Errorf("level %d's bindings %+v, want only %+v", k, binds, want)
		}
	}

	// Each level either holds a fact (its digit 1) or passes it down: the
	// queues a fact reaches at each hop, then at the delivery exchange.
	key, _ := DelayedRoutingKey("order.placed")
	h := delayHeaders(t, 5*time.Millisecond) // 101
	if got := route(top, d.Exchange, key, h); len(got) != 1 || got[0] != DelayExchange("shop.events", 2) {
		t.Errorf("published: %v", got)
	}
	if got := route(top, DelayExchange("shop.events", 1), key, h); len(got) != 1 || got[0] != DelayExchange("shop.events", 0) {
		t.Errorf("after level 2: %v", got)
	}
	if got := strings.Join(route(top, d.Deliver, key, h), ","); got != "mailer,audit" {
		t.Errorf("delivered to %s, want mailer,audit (and ledger's hash exchange)", got)
	}
	var toHash bool
	for _, b := range top.Bindings {
		toHash = toHash || b.Exchange == d.Deliver && b.ToExchange == "ledger.ordered" && b.Key == DelayedPattern("order.placed")
	}
	if !toHash {
		t.Error("the ordered consumer's hash exchange is not bound to the delivery exchange")
	}
	// A due fact nobody binds goes to the unroutable lane, not nowhere.
	noone, _ := DelayedRoutingKey("nobody.binds.this")
	top2, _ := Build(Spec{Delays: true, Consumers: []ConsumerSpec{{Name: "c", Bindings: []string{"a.b"}}}})
	if got := route(top2, top2.Delay.Deliver, noone, nil); len(got) != 1 || got[0] != "app.events.delay.unroutable" {
		t.Errorf("unroutable: %v", got)
	}

	part := top.Part("mailer")
	levels, lanes := 0, 0
	for _, q := range part.Queues {
		switch q.Role {
		case RoleDelay:
			levels++
		case RoleUnroutable:
			lanes++
		}
	}
	if !part.Delay.Enabled() || levels != DelayLevels || lanes != 1 {
		t.Errorf("Part(mailer): delay %+v, %d levels, %d unroutable lanes", part.Delay, levels, lanes)
	}
	for _, b := range part.Bindings {
		if b.Exchange == d.Deliver && b.Queue != "mailer" {
			t.Errorf("Part(mailer) has %+v", b)
		}
	}
	for _, e := range top.Exchanges {
		if e.Name == d.Deliver && e.Arguments()["alternate-exchange"] != d.Unroutable {
			t.Errorf("delivery exchange arguments = %v", e.Arguments())
		}
	}
}

func TestBuildWithoutDelays(t *testing.T) {
	top, err := Build(Spec{Consumers: []ConsumerSpec{{Name: "c", Bindings: []string{"a.b"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if top.Delay.Enabled() || len(top.Exchanges) != 3 {
		t.Errorf("delay %+v, exchanges %+v", top.Delay, top.Exchanges)
	}
}

func TestBuildDelaysCollision(t *testing.T) {
	_, err := Build(Spec{Delays: true, Consumers: []ConsumerSpec{{Name: "app.events.delay.3", Bindings: []string{"a.b"}}}})
	var se *SpecError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), `delay exchange "app.events.delay.3": collides with`) {
		t.Errorf("err = %v", err)
	}
}

func TestDeferredRoutingKey(t *testing.T) {
	key, err := DeferredRoutingKey("mailer")
	if err != nil || key != "d.mailer" {
		t.Fatalf("key %q, %v", key, err)
	}
	if q, ok := DeferredQueue(key); !ok || q != "mailer" {
		t.Errorf("DeferredQueue(%q) = %q, %v; want mailer", key, q, ok)
	}
	if key, _ := DeferredRoutingKey("mailer.eu"); key != "d.mailer.eu" {
		t.Errorf("key %q", key)
	} else if q, _ := DeferredQueue(key); q != "mailer.eu" {
		t.Errorf("DeferredQueue(%q) = %q, want mailer.eu", key, q)
	}
	delayed, _ := DelayedRoutingKey("order.placed")
	for _, k := range []string{delayed, "order.placed", "d.", "d", "dd.mailer", ""} {
		if q, ok := DeferredQueue(k); ok {
			t.Errorf("DeferredQueue(%q) = %q: no deferral's key", k, q)
		}
	}
	long := strings.Repeat("q", MaxDeferQueueLen)
	if key, err := DeferredRoutingKey(long); err != nil || len(key) != maxNameLen {
		t.Errorf("longest queue: key of %d bytes, err %v; want %d bytes", len(key), err, maxNameLen)
	}
	if _, err := DeferredRoutingKey(long + "q"); err == nil {
		t.Error("a queue name too long for a deferral's key: no error")
	}
}

// travel follows a message published to the top delay level through the
// levels as the broker moves it: routed by the bindings, held by a level's
// queue and dead-lettered to its target with the key kept. It returns the
// queues outside the levels it reaches and how long the levels held it.
func travel(top Topology, key string, headers map[string]any) (queues []string, waited time.Duration) {
	next := []string{top.Delay.Exchange}
	for len(next) > 0 {
		x := next[0]
		next = next[1:]
		for _, q := range route(top, x, key, headers) {
			lq, _ := top.Queue(q)
			if lq.Role != RoleDelay {
				queues = append(queues, q)
				continue
			}
			waited += lq.MessageTTL
			next = append(next, lq.DeadLetter.Exchange)
		}
	}
	return queues, waited
}

func TestBuildDeferralBindings(t *testing.T) {
	top := shopWithDelays(t, ConsumerSpec{Name: "mailer.eu", Bindings: []string{"order.placed"}})
	// A deferred fact comes back to its own queue alone, after its delay:
	// not to "audit", whose "#" matches any fact, nor to "mailer.eu",
	// whose name begins with "mailer".
	for _, d := range []time.Duration{time.Millisecond, 5 * time.Millisecond, 9 * time.Hour, MaxDelay} {
		key, err := DeferredRoutingKey("mailer")
		if err != nil {
			t.Fatal(err)
		}
		got, waited := travel(top, key, delayHeaders(t, d))
		if strings.Join(got, ",") != "mailer" || waited != d {
			t.Errorf("deferred %s: reached %v after %s, want mailer after %s", d, got, waited, d)
		}
	}
	// A delayed fact still reaches every consumer that binds it, and only
	// them, whatever its first digit: never a consumer's deferral binding.
	for _, d := range []time.Duration{5 * time.Millisecond, MaxDelay} {
		key, _ := DelayedRoutingKey("order.placed")
		got, waited := travel(top, key, delayHeaders(t, d))
		if strings.Join(got, ",") != "mailer,audit,mailer.eu" || waited != d {
			t.Errorf("delayed %s: reached %v after %s", d, got, waited)
		}
	}
	// A deferred fact whose queue is gone is kept in the unroutable lane.
	gone, _ := DeferredRoutingKey("deleted-consumer")
	if got, _ := travel(top, gone, delayHeaders(t, time.Millisecond)); strings.Join(got, ",") != "shop.events.delay.unroutable" {
		t.Errorf("deferred to a queue nobody declares: reached %v", got)
	}
	// Plain consumers know the top level, whose name gives every level's;
	// an ordered
	// consumer defers in place, so it has no deferral binding.
	for _, c := range top.Consumers {
		want := top.Delay.Exchange
		if c.Ordered() {
			want = ""
		}
		if c.DeferExchange != want || c.MaxDeferrals != DefaultMaxDeferrals {
			t.Errorf("consumer %s: DeferExchange %q, MaxDeferrals %d; want %q, %d", c.Name, c.DeferExchange, c.MaxDeferrals, want, DefaultMaxDeferrals)
		}
	}
	for _, b := range top.Bindings {
		if b.Exchange == top.Delay.Deliver && strings.HasPrefix(b.Key, "d") && b.Queue != "mailer" && b.Queue != "audit" && b.Queue != "mailer.eu" {
			t.Errorf("deferral binding to %+v", b)
		}
	}
	// Part keeps a consumer's deferral bindings.
	var own int
	for _, b := range top.Part("mailer").Bindings {
		if b.Exchange == top.Delay.Deliver && b.Queue == "mailer" && strings.HasPrefix(b.Key, "d") {
			own++
		}
	}
	if own != 1 {
		t.Errorf("Part(mailer) has %d deferral bindings, want 1", own)
	}
	if c, _ := mustBuild(t, Spec{Consumers: []ConsumerSpec{{Name: "c", Bindings: []string{"a.b"}}}}).Consumer("c"); c.DeferExchange != "" {
		t.Errorf("without delay levels: DeferExchange %q", c.DeferExchange)
	}
}

func mustBuild(t *testing.T, s Spec) Topology {
	t.Helper()
	top, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	return top
}

func TestBuildDeferralProblems(t *testing.T) {
	var se *SpecError
	_, err := Build(Spec{Consumers: []ConsumerSpec{{Name: "c", Bindings: []string{"a.b"}, MaxDeferrals: -1}}})
	if !errors.As(err, &se) || se.Problems[0].Field != "maxDeferrals" || !strings.Contains(se.Problems[0].Detail, "maxDeferrals -1: expected at least 1") {
		t.Errorf("maxDeferrals -1: err = %v", err)
	}
}

func TestIsDelayLevel(t *testing.T) {
	top := DelayExchange("shop.events", DelayLevels-1)
	for q, want := range map[string]bool{
		"shop.events.delay.0": true, "shop.events.delay.35": true,
		"shop.events.delay.36": false, "shop.events.delay.01": false, "shop.events.delay.deliver": false,
		"shop.events.delay.unroutable": false, "other.events.delay.3": false, "mailer": false,
	} {
		if got := IsDelayLevel(top, q); got != want {
			t.Errorf("IsDelayLevel(%q, %q) = %v, want %v", top, q, got, want)
		}
	}
	if IsDelayLevel("", "shop.events.delay.3") {
		t.Error("a consumer without delay levels has none")
	}
}
