package topology

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDelayedRoutingKey(t *testing.T) {
	key, err := DelayedRoutingKey(10*time.Millisecond, "order.placed")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("0.", DelayLevels-4) + "1.0.1.0.order.placed"
	if key != want {
		t.Errorf("key = %q, want %q", key, want)
	}
	// A fraction of a millisecond rounds up: never early.
	if key, _ := DelayedRoutingKey(time.Microsecond, "a"); key != strings.Repeat("0.", DelayLevels-1)+"1.a" {
		t.Errorf("1µs: key = %q", key)
	}
	if key, _ := DelayedRoutingKey(MaxDelay, "a"); key != strings.Repeat("1.", DelayLevels)+"a" {
		t.Errorf("MaxDelay: key = %q", key)
	}
	if MaxDelay < 366*24*time.Hour {
		t.Errorf("MaxDelay %s: less than a year", MaxDelay)
	}
	for _, d := range []time.Duration{0, -time.Second, MaxDelay + time.Millisecond} {
		if _, err := DelayedRoutingKey(d, "a"); err == nil {
			t.Errorf("delay %s: no error", d)
		}
	}
	if _, err := DelayedRoutingKey(time.Second, strings.Repeat("a", MaxDelayedKeyLen+1)); err == nil {
		t.Error("a key too long for the delay words: no error")
	}
}

// route follows top's bindings as a topic exchange does, exchange to
// exchange included, and returns the queues key reaches from exchange.
func route(top Topology, exchange, key string) []string {
	var out []string
	var walk func(x string)
	walk = func(x string) {
		routed := false
		for _, b := range top.Bindings {
			if b.Exchange != x || !(b.Key == "" || TopicMatch(b.Key, key)) {
				continue
			}
			routed = true
			if b.ToExchange != "" {
				walk(b.ToExchange)
			} else {
				out = append(out, b.Queue)
			}
		}
		for _, e := range top.Exchanges {
			if e.Name == x && !routed && e.AlternateExchange != "" {
				walk(e.AlternateExchange)
			}
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

	// Each level either holds a fact (its digit 1) or passes it down: the
	// queues a key reaches at each hop, then at the delivery exchange.
	key, _ := DelayedRoutingKey(5*time.Millisecond, "order.placed") // 101
	if got := route(top, d.Exchange, key); len(got) != 1 || got[0] != DelayExchange("shop.events", 2) {
		t.Errorf("published: %v", got)
	}
	if got := route(top, DelayExchange("shop.events", 1), key); len(got) != 1 || got[0] != DelayExchange("shop.events", 0) {
		t.Errorf("after level 2: %v", got)
	}
	if got := strings.Join(route(top, d.Deliver, key), ","); got != "mailer,audit" {
		t.Errorf("delivered to %s, want mailer,audit (and ledger's hash exchange)", got)
	}
	var toHash bool
	for _, b := range top.Bindings {
		toHash = toHash || b.Exchange == d.Deliver && b.ToExchange == "ledger.ordered" && b.Key == DelayedPatterns("order.placed")[1]
	}
	if !toHash {
		t.Error("the ordered consumer's hash exchange is not bound to the delivery exchange")
	}
	// A due fact nobody binds goes to the unroutable lane, not nowhere.
	noone, _ := DelayedRoutingKey(time.Millisecond, "nobody.binds.this")
	top2, _ := Build(Spec{Delays: true, Consumers: []ConsumerSpec{{Name: "c", Bindings: []string{"a.b"}}}})
	if got := route(top2, top2.Delay.Deliver, noone); len(got) != 1 || got[0] != "app.events.delay.unroutable" {
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
	key, err := DeferredRoutingKey(10*time.Millisecond, "mailer")
	if err != nil {
		t.Fatal(err)
	}
	if want := "d" + strings.Repeat("0.", DelayLevels-4) + "1.0.1.0.mailer"; key != want {
		t.Errorf("key = %q, want %q", key, want)
	}
	if key, _ := DeferredRoutingKey(MaxDelay, "q"); key != "d"+strings.Repeat("1.", DelayLevels)+"q" {
		t.Errorf("MaxDelay: key = %q", key)
	}
	if q, ok := DeferredQueue(key); !ok || q != "mailer" {
		t.Errorf("DeferredQueue(%q) = %q, %v; want mailer", key, q, ok)
	}
	if key, _ := DeferredRoutingKey(time.Second, "mailer.eu"); !strings.HasSuffix(key, ".mailer.eu") {
		t.Errorf("key %q", key)
	} else if q, _ := DeferredQueue(key); q != "mailer.eu" {
		t.Errorf("DeferredQueue(%q) = %q, want mailer.eu", key, q)
	}
	delayed, _ := DelayedRoutingKey(time.Second, "order.placed")
	for _, k := range []string{delayed, "order.placed", "d0.1.mailer", "d2." + delayed[2:], ""} {
		if q, ok := DeferredQueue(k); ok {
			t.Errorf("DeferredQueue(%q) = %q: no deferral's key", k, q)
		}
	}
	long := strings.Repeat("q", MaxDeferQueueLen)
	if key, err := DeferredRoutingKey(MaxDelay, long); err != nil || len(key) != maxNameLen {
		t.Errorf("longest queue: key of %d bytes, err %v; want %d bytes", len(key), err, maxNameLen)
	}
	if _, err := DeferredRoutingKey(time.Second, long+"q"); err == nil {
		t.Error("a queue name too long for the delay words: no error")
	}
	for _, d := range []time.Duration{0, -time.Second, MaxDelay + time.Millisecond} {
		if _, err := DeferredRoutingKey(d, "q"); err == nil {
			t.Errorf("delay %s: no error", d)
		}
	}
}

// travel follows a message published to the top delay level through the
// levels as the broker moves it: routed by the bindings, held by a level's
// queue and dead-lettered to its target with the key kept. It returns the
// queues outside the levels it reaches and how long the levels held it.
func travel(top Topology, key string) (queues []string, waited time.Duration) {
	next := []string{top.Delay.Exchange}
	for len(next) > 0 {
		x := next[0]
		next = next[1:]
		for _, q := range route(top, x, key) {
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
		key, err := DeferredRoutingKey(d, "mailer")
		if err != nil {
			t.Fatal(err)
		}
		got, waited := travel(top, key)
		if strings.Join(got, ",") != "mailer" || waited != d {
			t.Errorf("deferred %s: reached %v after %s, want mailer after %s", d, got, waited, d)
		}
	}
	// A delayed fact still reaches every consumer that binds it, and only
	// them, whatever its first digit: never a consumer's deferral binding.
	for _, d := range []time.Duration{5 * time.Millisecond, MaxDelay} {
		key, _ := DelayedRoutingKey(d, "order.placed")
		got, waited := travel(top, key)
		if strings.Join(got, ",") != "mailer,audit,mailer.eu" || waited != d {
			t.Errorf("delayed %s: reached %v after %s", d, got, waited)
		}
	}
	// A deferred fact whose queue is gone is kept in the unroutable lane.
	gone, _ := DeferredRoutingKey(time.Millisecond, "deleted-consumer")
	if got, _ := travel(top, gone); strings.Join(got, ",") != "shop.events.delay.unroutable" {
		t.Errorf("deferred to a queue nobody declares: reached %v", got)
	}
	// Plain consumers publish their deferrals to the top level; an ordered
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
	if own != 2 {
		t.Errorf("Part(mailer) has %d deferral bindings, want 2", own)
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
	long := strings.Repeat("q", MaxDeferQueueLen+1)
	_, err := Build(Spec{Delays: true, Consumers: []ConsumerSpec{
		{Name: "fine", Bindings: []string{"a.b"}},
		{Name: long, Bindings: []string{"a.b"}},
	}})
	var se *SpecError
	if !errors.As(err, &se) || len(se.Problems) != 1 {
		t.Fatalf("err = %v", err)
	}
	if p := se.Problems[0]; p.Consumer != 1 || p.Field != "name" || !strings.Contains(p.Detail, "deferred fact") {
		t.Errorf("problem = %+v", p)
	}
	// Without delay levels the same name is fine: nothing is deferred there.
	mustBuild(t, Spec{Consumers: []ConsumerSpec{{Name: long, Bindings: []string{"a.b"}}}})

	_, err = Build(Spec{Consumers: []ConsumerSpec{{Name: "c", Bindings: []string{"a.b"}, MaxDeferrals: -1}}})
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

func TestRetiredBindings(t *testing.T) {
	top := mustBuild(t, Spec{Delays: true, Consumers: []ConsumerSpec{
		{Name: "mailer", Bindings: []string{"order.*", "item.added"}},
		{Name: "ledger", Bindings: []string{"order.placed"}, Ordered: true},
	}})
	var got []string
	for _, b := range top.RetiredBindings() {
		got = append(got, b.Queue+b.ToExchange+" "+b.Key)
	}
	all := strings.Repeat("*.", DelayLevels)
	want := []string{"mailer " + all + "order.*", "mailer " + all + "item.added", "ledger.ordered " + all + "order.placed"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("retired %q, want %q", got, want)
	}
	if r := mustBuild(t, Spec{Consumers: []ConsumerSpec{{Name: "c", Bindings: []string{"#"}}}}).RetiredBindings(); r != nil {
		t.Errorf("without delay levels: retired %v", r)
	}
}
