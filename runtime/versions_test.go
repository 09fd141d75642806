package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

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

// A fact published in versions 1 and 2 is handled once by each consumer:
// by one that reads version 1 only in version 1, by one that reads both in
// version 2; each acks the other copy unhandled.
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
			return n.Get(Acked) == 1 && n.Get(DuplicateSkipped) == 1
		})
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
