package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime/topology"
)

// itemV1 is version 1 of itemFact's payload: the SKU was called "code".
type itemV1 struct {
	Code string `json:"code"`
}

func itemV1Fact(key string) Fact {
	return Fact{RoutingKey: key, Version: 1, Validate: func(payload []byte) error {
		var v map[string]any
		if err := json.Unmarshal(payload, &v); err != nil {
			return err
		}
		if s, ok := v["code"].(string); !ok || s == "" {
			return fmt.Errorf("/code: expected a non-empty string, got %v", v["code"])
		}
		return nil
	}}
}

func upcastItem(v itemV1) (item, error) {
	if v.Code == "refuse" {
		return item{}, errors.New("no SKU for this code")
	}
	return item{SKU: v.Code, N: 1}, nil
}

// A consumer that reads versions 1 and 2 handles a version-1 fact through
// its upcast and a version-2 fact as it is; a fact whose upcast fails, and
// a version-3 fact its schema rejects, go to poison, the latter with a
// header naming both versions.
func TestConsumerReadsOlderVersionsThroughUpcasts(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "upcasts", Bindings: []string{"item.#"}, MaxAttempts: 1})
	conn := b.dial(Config{Logger: testLogger(t)})
	v1, v2 := itemV1Fact("item.changed"), itemFact("item.changed")
	v3 := v2
	v3.Version, v3.Validate = 3, nil
	handled := make(chan item, 10)
	route := HandleVersions(v2, func(_ context.Context, _ Delivery, v item) error {
		handled <- v
		return nil
	}, Upcast(v1, upcastItem))
	if got := route.Reads(); fmt.Sprint(got) != "[1 2]" {
		t.Errorf("Reads() = %v, want [1 2]", got)
	}
	c, err := NewConsumer(conn, b.consumer(0), []Route{route})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	p, err := NewPublisher(conn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	mustPublish(t, p, v1, itemV1{Code: "OLD-1"})
	mustPublish(t, p, v2, item{SKU: "NEW-2", N: 2})
	got := map[string]int{}
	for range 2 {
		v := receive(t, handled)
		got[v.SKU] = v.N
	}
	if got["OLD-1"] != 1 || got["NEW-2"] != 2 {
		t.Errorf("handled %v, want OLD-1 (upcast) and NEW-2", got)
	}
	mustPublish(t, p, v1, itemV1{Code: "refuse"})
	mustPublish(t, p, v3, map[string]any{"stock_keeping_unit": "X"})
	name := b.consumer(0).Name
	testenv.Eventually(t, "two poisoned", func() bool { return conn.Counts(name).Get(Poisoned) == 2 })
	var mismatch []string
	for range 2 {
		d := b.get(b.consumer(0).PoisonQueue)
		if m, ok := d.Headers[HeaderVersionMismatch].(string); ok {
			mismatch = append(mismatch, m)
		} else if f, _ := d.Headers[HeaderFailure].(string); !strings.Contains(f, "no SKU for this code") {
			t.Errorf("upcast failure not in %s: %q", HeaderFailure, f)
		}
	}
	if len(mismatch) != 1 || mismatch[0] != "fact version 3, consumer reads versions 1,2" {
		t.Errorf("%s headers %q, want one naming fact version 3 and versions 1,2", HeaderVersionMismatch, mismatch)
	}
	if n := conn.Counts(name).Get(Acked); n != 2 {
		t.Errorf("acked %d, want 2", n)
	}
}

// A fact published in versions 1 and 2 is one message, handled once by
// each consumer: by one that reads version 1 only in version 1, by one
// that reads both in version 2, which the message carries in a header.
func TestFactPublishedInTwoVersionsIsHandledOnce(t *testing.T) {
	b := newBroker(t,
		topology.ConsumerSpec{Name: "reads-v1", Bindings: []string{"item.#"}, MaxAttempts: 1},
		topology.ConsumerSpec{Name: "reads-v2", Bindings: []string{"item.#"}, MaxAttempts: 1},
	)
	conn := b.dial(Config{Logger: testLogger(t)})
	v1, v2 := itemV1Fact("item.changed"), itemFact("item.changed")
	old := make(chan itemV1, 10)
	cur := make(chan item, 10)
	ids := make(chan string, 10)
	c1, err := NewConsumer(conn, b.consumer(0), []Route{Handle(v1, func(_ context.Context, d Delivery, v itemV1) error {
		ids <- d.MessageID
		old <- v
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	c2, err := NewConsumer(conn, b.consumer(1), []Route{HandleVersions(v2, func(_ context.Context, d Delivery, v item) error {
		ids <- d.MessageID
		cur <- v
		return nil
	}, Upcast(v1, upcastItem))})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c1)
	run(t, c2)
	p, err := NewPublisher(conn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	id, err := p.PublishVersions(context.Background(), Copy{Fact: v2, Payload: item{SKU: "S-2", N: 2}}, Copy{Fact: v1, Payload: itemV1{Code: "S-2"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := receive(t, old); got.Code != "S-2" {
		t.Errorf("v1 consumer got %+v", got)
	}
	if got := receive(t, cur); got.N != 2 {
		t.Errorf("v2 consumer got %+v, want the version-2 copy (N 2), not an upcast one", got)
	}
	for _, name := range []string{b.consumer(0).Name, b.consumer(1).Name} {
		testenv.Eventually(t, name+" settled both copies", func() bool {
			n := conn.Counts(name)
			return n.Get(Acked) == 1
		})
		if n := conn.Counts(name).Get(Delivered); n != 1 {
			t.Errorf("%s received %d messages, want the fact's one", name, n)
		}
	}
	for range 2 {
		if got := receive(t, ids); got != id {
			t.Errorf("handled message id %s, want the one PublishVersions returned, %s", got, id)
		}
	}
	if len(old)+len(cur) != 0 {
		t.Errorf("a copy was handled twice")
	}
	// An invalid copy fails the publish before anything is sent.
	if _, err := p.PublishVersions(context.Background(), Copy{Fact: v2, Payload: item{SKU: "S-3"}}, Copy{Fact: v1, Payload: itemV1{}}); err == nil || !strings.Contains(err.Error(), "version 1") {
		t.Errorf("invalid copy: err %v, want one naming version 1", err)
	}
}

// Instances of two builds of one consumer share its work queue during a
// rolling deploy: one reads version 1 only, the other versions 1 and 2.
// Every fact published in both versions is handled exactly once, in the
// newest version the instance that got it reads, whichever instance that
// is and whatever order the copies were given in.
func TestRollingDeployDuringADualPublishHandlesEveryFactOnce(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "rolling", Bindings: []string{"item.#"}, MaxAttempts: 1})
	conn := b.dial(Config{Logger: testLogger(t)})
	v1, v2 := itemV1Fact("item.changed"), itemFact("item.changed")
	const facts = 40
	handled := make(chan string, 2*facts)
	var byOld, byNew atomic.Int64
	oldBuild, err := NewConsumer(conn, b.consumer(0), []Route{Handle(v1, func(_ context.Context, d Delivery, _ itemV1) error {
		byOld.Add(1)
		handled <- d.MessageID
		return nil
	})}, WithPrefetch(1), WithConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	newBuild, err := NewConsumer(conn, b.consumer(0), []Route{HandleVersions(v2, func(_ context.Context, d Delivery, v item) error {
		byNew.Add(1)
		if v.N != 2 {
			t.Errorf("the new build handled %+v, want the version-2 copy (N 2)", v)
		}
		handled <- d.MessageID
		return nil
	}, Upcast(v1, upcastItem))}, WithPrefetch(1), WithConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	run(t, oldBuild)
	run(t, newBuild)
	p, err := NewPublisher(conn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	published := map[string]bool{}
	for i := range facts {
		sku := fmt.Sprintf("S-%d", i)
		copies := []Copy{{Fact: v1, Payload: itemV1{Code: sku}}, {Fact: v2, Payload: item{SKU: sku, N: 2}}}
		if i%2 == 1 {
			copies[0], copies[1] = copies[1], copies[0]
		}
		id, err := p.PublishVersions(context.Background(), copies...)
		if err != nil {
			t.Fatal(err)
		}
		published[id] = true
	}
	name := b.consumer(0).Name
	testenv.Eventually(t, "every fact settled", func() bool {
		return conn.Counts(name).Get(Acked) == facts
	})
	seen := map[string]int{}
	for len(handled) > 0 {
		seen[<-handled]++
	}
	for id := range published {
		if seen[id] != 1 {
			t.Errorf("fact %s handled %d times, want once", id, seen[id])
		}
	}
	if n := conn.Counts(name).Get(Delivered); n != facts {
		t.Errorf("%d messages delivered, want %d: one per fact", n, facts)
	}
	// Both builds took part: the test would prove nothing if one
	// instance had received every fact.
	if byOld.Load() == 0 || byNew.Load() == 0 {
		t.Errorf("handled by the old build %d, by the new %d: want both", byOld.Load(), byNew.Load())
	}
}

// A consumer announces the versions it reads in its basic.consume
// arguments, which the broker keeps beside the consumer.
func TestConsumerAnnouncesTheVersionsItReads(t *testing.T) {
	// A vhost of its own: listing the consumers of a vhost fails when
	// another test deletes a quorum queue of the same vhost meanwhile.
	vhostURL := testenv.VHost(t, "announces")
	u, err := url.Parse(vhostURL)
	if err != nil {
		t.Fatal(err)
	}
	vhost := strings.TrimPrefix(u.Path, "/")
	b := newBrokerAt(t, vhostURL, topology.ConsumerSpec{Name: "announces", Bindings: []string{"item.#", "other.#"}, MaxAttempts: 1})
	admin := testenv.BrokerAdmin(t)
	conn := b.dial(Config{Logger: testLogger(t)})
	c, err := NewConsumer(conn, b.consumer(0), []Route{
		HandleVersions(itemFact("item.changed"), func(context.Context, Delivery, item) error { return nil }, Upcast(itemV1Fact("item.changed"), upcastItem)),
		Handle(itemV1Fact("other.changed"), func(context.Context, Delivery, itemV1) error { return nil }),
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	want := `{"queue_name":"` + b.consumer(0).Queue + `","arguments":[["` + ArgReads + `","longstr","item.changed=1,2;other.changed=1"]]}`
	testenv.Eventually(t, "the broker to list the consumer with its announcement", func() bool {
		out := admin.Run(t, "list_consumers", "-p", vhost, "queue_name", "arguments", "--formatter", "json")
		return strings.Contains(out, want)
	})
}

// ParseReads reads back what a consumer announces, and names what it
// cannot read.
func TestParseReadsReadsTheAnnouncement(t *testing.T) {
	routes := []Route{
		HandleVersions(itemFact("item.changed"), func(context.Context, Delivery, item) error { return nil }, Upcast(itemV1Fact("item.changed"), upcastItem)),
		Handle(itemV1Fact("other.changed"), func(context.Context, Delivery, itemV1) error { return nil }),
	}
	got, err := ParseReads(announceReads(routes))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "map[item.changed:[1 2] other.changed:[1]]" {
		t.Errorf("ParseReads(announceReads) = %v", got)
	}
	for _, bad := range []string{"item.changed", "item.changed=", "item.changed=1,x", "=1", "a=0"} {
		if _, err := ParseReads(bad); err == nil || !strings.Contains(err.Error(), ArgReads) {
			t.Errorf("ParseReads(%q) = %v, want an error naming %s", bad, err, ArgReads)
		}
	}
}

// A fact published in several versions directly into a stream is the same
// one message as through the exchange: a stream consumer of each build
// reads the newest version it reads out of it.
func TestDualPublishDirectIntoAStream(t *testing.T) {
	spec := topology.Spec{
		Exchanges: topology.Exchanges{Events: testenv.Name("events"), Retry: testenv.Name("retry"), Dead: testenv.Name("dead")},
		Streams:   []topology.StreamSpec{{Name: testenv.Name("dual-log"), Bindings: []string{"item.#"}, MaxAge: time.Hour, Direct: true}},
		Consumers: []topology.ConsumerSpec{
			{Name: testenv.Name("dual-old"), Bindings: []string{"item.#"}, Backoff: testLadder, Start: topology.Start{Kind: topology.StartFirst}},
			{Name: testenv.Name("dual-new"), Bindings: []string{"item.#"}, Backoff: testLadder, Start: topology.Start{Kind: topology.StartFirst}},
		},
	}
	spec.Consumers[0].Stream = spec.Streams[0].Name
	spec.Consumers[1].Stream = spec.Streams[0].Name
	b := newBrokerFrom(t, testenv.AMQPURL(t), spec)
	b.streamPort = testenv.StreamPort(t)
	conn := b.dial(Config{Logger: testLogger(t)})
	pub, err := NewPublisher(conn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	v1, v2 := itemV1Fact("item.changed"), itemFact("item.changed")
	ctx := context.Background()
	const facts = 5
	for i := range facts {
		sku := fmt.Sprintf("S-%d", i)
		if _, err := pub.PublishVersions(ctx, Copy{Fact: v2, Payload: item{SKU: sku, N: 2}}, Copy{Fact: v1, Payload: itemV1{Code: sku}}); err != nil {
			t.Fatal(err)
		}
	}
	old := make(chan itemV1, facts)
	cur := make(chan item, facts)
	oc, err := NewConsumer(conn, b.consumer(0), []Route{Handle(v1, func(_ context.Context, _ Delivery, v itemV1) error {
		old <- v
		return nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := NewConsumer(conn, b.consumer(1), []Route{HandleVersions(v2, func(_ context.Context, _ Delivery, v item) error {
		cur <- v
		return nil
	}, Upcast(v1, upcastItem))})
	if err != nil {
		t.Fatal(err)
	}
	run(t, oc)
	run(t, nc)
	for i := range facts {
		sku := fmt.Sprintf("S-%d", i)
		if got := receive(t, old); got.Code != sku {
			t.Errorf("the version-1 reader got %+v, want %s", got, sku)
		}
		if got := receive(t, cur); got.SKU != sku || got.N != 2 {
			t.Errorf("the version-2 reader got %+v, want %s in version 2 (N 2)", got, sku)
		}
	}
}

// The newer versions of a fact published in several travel in headers,
// which AMQP 0-9-1 sends in one frame: copies too large for them fail the
// publish before anything is sent, and say why.
func TestDualPublishRefusesCopiesTooLargeForHeaders(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "large-copies", Bindings: []string{"item.#"}, MaxAttempts: 1})
	conn := b.dial(Config{Logger: testLogger(t)})
	p, err := NewPublisher(conn, b.events())
	if err != nil {
		t.Fatal(err)
	}
	v1, v2 := itemV1Fact("item.changed"), itemFact("item.changed")
	large := strings.Repeat("x", maxCopiesSize)
	_, err = p.PublishVersions(context.Background(), Copy{Fact: v1, Payload: itemV1{Code: "S-1"}}, Copy{Fact: v2, Payload: item{SKU: large, N: 2}})
	if err == nil || !strings.Contains(err.Error(), "more than the 65536 their headers can carry") {
		t.Errorf("err %v, want one saying the copies are too large for headers", err)
	}
	if d := b.depth(b.consumer(0).Queue); d != 0 {
		t.Errorf("the work queue holds %d, want nothing sent", d)
	}
}

// A fact published one message per version, as warren published a dual
// publish before its versions travelled in one message, is still handled
// once: in the newest version the consumer reads, the other message acked
// unhandled.
func TestFactPublishedOneMessagePerVersionIsStillHandledOnce(t *testing.T) {
	b := newBroker(t, topology.ConsumerSpec{Name: "one-per-version", Bindings: []string{"item.#"}, MaxAttempts: 1})
	conn := b.dial(Config{Logger: testLogger(t)})
	v1, v2 := itemV1Fact("item.changed"), itemFact("item.changed")
	cur := make(chan item, 4)
	c, err := NewConsumer(conn, b.consumer(0), []Route{HandleVersions(v2, func(_ context.Context, _ Delivery, v item) error {
		cur <- v
		return nil
	}, Upcast(v1, upcastItem))})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	ch, err := b.raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	const id = "0193a3b4-0000-7000-8000-000000000001"
	for _, m := range []struct {
		version int64
		payload string
	}{{1, `{"code":"S-9"}`}, {2, `{"sku":"S-9","n":2}`}} {
		body := `{"id":"` + id + `","occurred_at":"2026-12-07T10:00:00Z","payload":` + m.payload + `}`
		dc, err := ch.PublishWithDeferredConfirm(b.events(), "item.changed", true, false, amqp.Publishing{
			MessageId: id, ContentType: "application/json", DeliveryMode: amqp.Persistent, Body: []byte(body),
			Headers: amqp.Table{HeaderFactVersion: m.version, HeaderFactVersions: "1,2"},
		})
		if err != nil || !dc.Wait() {
			t.Fatalf("publish version %d: %v", m.version, err)
		}
	}
	if got := receive(t, cur); got.N != 2 {
		t.Errorf("handled %+v, want the version-2 message (N 2)", got)
	}
	name := b.consumer(0).Name
	testenv.Eventually(t, "both messages settled", func() bool {
		n := conn.Counts(name)
		return n.Get(Acked) == 1 && n.Get(DuplicateSkipped) == 1
	})
	if len(cur) != 0 {
		t.Errorf("the fact was handled twice")
	}
}
