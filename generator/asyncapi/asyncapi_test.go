package asyncapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/warrenbus/warren/generator"
	"github.com/warrenbus/warren/generator/asyncapi"
	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/runtime/topology"
)

var update = flag.Bool("update", false, "rewrite testdata/catalogue.asyncapi.json")

const example = "../../examples/catalogue/events"

func build(t *testing.T, dir string) (*model.Model, []byte) {
	t.Helper()
	p, err := generator.Open(context.Background(), dir, generator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := p.AsyncAPI(asyncapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Model, doc
}

// openAPIComponents is a schema directory whose facts' schemas sit in a
// vendored OpenAPI document, under #/components/schemas, where no JSON
// Schema keyword holds them.
const openAPIComponents = "../testdata/openapi-components/events"

// inputs are the example and every golden case that generates: one
// document each, covering every construct of the type mapping.
func inputs(t *testing.T) []string {
	t.Helper()
	dirs := []string{example, openAPIComponents}
	cases, err := filepath.Glob("../../golden/*/events")
	if err != nil {
		t.Fatal(err)
	}
	for _, events := range cases {
		if _, err := os.Stat(filepath.Join(filepath.Dir(events), "stderr.txt")); err == nil {
			continue // a case that must fail
		}
		dirs = append(dirs, events)
	}
	return dirs
}

func TestGoldenCatalogue(t *testing.T) {
	_, got := build(t, example)
	golden := filepath.Join("testdata", "catalogue.asyncapi.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("document differs from %s (-want +got); go test ./generator/asyncapi -update rewrites it:\n%s", golden, diff)
	}
	// The same model gives the same bytes, run after run.
	for range 3 {
		if _, again := build(t, example); !bytes.Equal(again, got) {
			t.Fatal("two runs gave different documents")
		}
	}
}

// modelStream is a stream of a model's topology as a test sees it.
type modelStream struct {
	Name  string
	Reads string // what its consumers read: the stream, or a super stream's partitions
	Super bool
	Facts []*model.Fact // the facts its bindings on the events exchange match
}

// streamsOf returns the streams of m by name.
func streamsOf(m *model.Model) map[string]modelStream {
	out := map[string]modelStream{}
	keeps := func(s *modelStream) {
		for _, f := range m.Facts {
			for _, b := range m.Topology.Bindings {
				if b.Exchange == m.Exchanges.Events && (b.Queue == s.Name || b.ToExchange == s.Name) &&
					topology.MatchWords(strings.Split(b.Key, "."), strings.Split(f.RoutingKey, ".")) {
					s.Facts = append(s.Facts, f)
					break
				}
			}
		}
	}
	partition := map[string]bool{}
	for _, ss := range m.Topology.SuperStreams() {
		s := modelStream{Name: ss.Name, Reads: strings.Join(ss.Partitions, ", "), Super: true}
		keeps(&s)
		out[s.Name] = s
		for _, p := range ss.Partitions {
			partition[p] = true
		}
	}
	for _, q := range m.Topology.Queues {
		if q.Type == topology.Stream && !partition[q.Name] {
			s := modelStream{Name: q.Name, Reads: q.Name}
			keeps(&s)
			out[s.Name] = s
		}
	}
	return out
}

// The document says what the model says: a channel per fact on the
// events exchange and per stream, a send per fact, a receive per consumer
// and fact, on the fact's channel or, for a stream consumer, its stream's.
func TestDocumentFollowsTheModel(t *testing.T) {
	for _, dir := range inputs(t) {
		m, raw := build(t, dir)
		var doc struct {
			Channels map[string]struct {
				Address  string
				Bindings struct {
					AMQP struct {
						Is       string
						Exchange struct{ Name, Type string }
						Queue    struct{ Name string }
					}
				}
			}
			Operations map[string]struct {
				Action  string
				Channel struct {
					Ref string `json:"$ref"`
				}
				Queue string `json:"x-warren-queue"`
			}
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		var wantChannels, gotChannels []string
		for _, f := range m.Facts {
			wantChannels = append(wantChannels, f.RoutingKey+" on "+m.Exchanges.Events+" (topic)")
		}
		replies := 0
		for _, r := range m.Requests {
			wantChannels = append(wantChannels, r.Key+" on "+r.Responder.Topology.Exchange+" (direct)")
		}
		streams := streamsOf(m)
		for _, s := range streams {
			if s.Super {
				wantChannels = append(wantChannels, s.Name+" on "+s.Name+" ()") // the super stream's exchange
			} else {
				wantChannels = append(wantChannels, s.Name+" is queue "+s.Name)
			}
		}
		for _, c := range doc.Channels {
			if c.Address == "" { // a reply channel: its address is the request's reply_to
				replies++
				continue
			}
			if amqp := c.Bindings.AMQP; amqp.Is == "queue" {
				gotChannels = append(gotChannels, c.Address+" is queue "+amqp.Queue.Name)
				continue
			}
			gotChannels = append(gotChannels, c.Address+" on "+c.Bindings.AMQP.Exchange.Name+" ("+c.Bindings.AMQP.Exchange.Type+")")
		}
		if replies != len(m.Requests) {
			t.Errorf("%s: %d reply channels, want one per request (%d)", dir, replies, len(m.Requests))
		}
		slices.Sort(wantChannels)
		slices.Sort(gotChannels)
		if diff := cmp.Diff(wantChannels, gotChannels); diff != "" {
			t.Errorf("%s: channels (-want +got):\n%s", dir, diff)
		}
		var wantOps, gotOps []string
		for _, f := range m.Facts {
			wantOps = append(wantOps, "send "+f.RoutingKey)
		}
		for _, c := range m.Consumers {
			for _, f := range c.Facts {
				queue := c.Topology.Queue
				if c.Topology.Ordered() {
					queue = strings.Join(c.Topology.Shards, ", ")
				}
				if s, ok := streams[c.Topology.Stream]; ok {
					wantOps = append(wantOps, "receive "+s.Name+" from "+s.Reads)
					continue
				}
				wantOps = append(wantOps, "receive "+f.RoutingKey+" from "+queue)
			}
		}
		for _, r := range m.Requests {
			wantOps = append(wantOps, "send "+r.Key, "receive "+r.Key+" from "+r.Responder.Topology.Queue)
		}
		for _, op := range doc.Operations {
			ch := doc.Channels[strings.TrimPrefix(op.Channel.Ref, "#/channels/")]
			s := op.Action + " " + ch.Address
			if op.Queue != "" {
				s += " from " + op.Queue
			}
			gotOps = append(gotOps, s)
		}
		slices.Sort(wantOps)
		slices.Sort(gotOps)
		if diff := cmp.Diff(wantOps, gotOps); diff != "" {
			t.Errorf("%s: operations (-want +got):\n%s", dir, diff)
		}
	}
}

// Every $ref points at something inside the document: schema files are
// carried as components, their file references rewritten.
func TestRefsResolveInsideTheDocument(t *testing.T) {
	for _, dir := range inputs(t) {
		_, raw := build(t, dir)
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		n := 0
		walkRefs(doc, func(ref string) {
			n++
			if !strings.HasPrefix(ref, "#/") {
				t.Errorf("%s: $ref %q leaves the document", dir, ref)
				return
			}
			if _, ok := lookup(doc, ref[1:]); !ok {
				t.Errorf("%s: $ref %q points at nothing", dir, ref)
			}
		})
		if n == 0 {
			t.Errorf("%s: no $ref at all", dir)
		}
	}
}

func walkRefs(v any, f func(string)) {
	switch x := v.(type) {
	case map[string]any:
		if r, ok := x["$ref"].(string); ok {
			f(r)
		}
		for _, c := range x {
			walkRefs(c, f)
		}
	case []any:
		for _, c := range x {
			walkRefs(c, f)
		}
	}
}

// lookup resolves a JSON pointer (RFC 6901).
func lookup(doc any, pointer string) (any, bool) {
	if pointer == "" {
		return doc, true
	}
	cur := doc
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// The payload of a fact the manifest declares with a pointer is the
// schema at that pointer, and the $refs of the schemas there, which no
// keyword of the file holds, are rewritten to point inside the document.
func TestPayloadOfAFactInsideADocument(t *testing.T) {
	for dir, want := range map[string]map[string]string{
		openAPIComponents: {
			"PaymentCaptured": "#/components/schemas/vendor_openapi.json/components/schemas/PaymentCaptured",
			"PaymentRefunded": "#/components/schemas/team_refund.json",
		},
		"../../golden/fact-roots/events": {
			"ObjectFinalized": "#/components/schemas/vendor_gcp_storage.json/definitions/StorageObjectData",
			"PushReceived":    "#/components/schemas/vendor_github_push.json",
		},
	} {
		_, raw := build(t, dir)
		var doc struct {
			Components struct {
				Schemas  map[string]any
				Messages map[string]struct {
					Payload struct {
						Properties struct {
							Payload struct {
								Ref string `json:"$ref"`
							}
						}
					}
				}
			}
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		for msg, ref := range want {
			if got := doc.Components.Messages[msg].Payload.Properties.Payload.Ref; got != ref {
				t.Errorf("%s: message %s: payload $ref %q, want %q", dir, msg, got, ref)
			}
		}
		if dir != openAPIComponents {
			continue
		}
		var refs []string
		walkRefs(doc.Components.Schemas["vendor_openapi.json"], func(ref string) { refs = append(refs, ref) })
		slices.Sort(refs)
		wantRefs := []string{
			"#/components/schemas/common_party.json",
			"#/components/schemas/vendor_openapi.json/components/schemas/Currency",
			"#/components/schemas/vendor_openapi.json/components/schemas/Money",
		}
		if !slices.Equal(refs, wantRefs) {
			t.Errorf("$refs of vendor/openapi.json: %q, want %q", refs, wantRefs)
		}
	}
}

// A fact written directly into a stream says so where its publish is
// described: a reader who binds a queue to the exchange would get none.
func TestDirectStreamFactSaysWhereItGoes(t *testing.T) {
	_, raw := build(t, "../../golden/streams/events")
	var doc struct {
		Operations map[string]struct{ Description string }
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	direct := doc.Operations["publishStockCounted"].Description
	if !strings.Contains(direct, `directly into the stream "stock-log"`) {
		t.Errorf("publishStockCounted, written into stock-log directly: %q", direct)
	}
	if other := doc.Operations["publishOrderPlaced"].Description; strings.Contains(other, "directly") {
		t.Errorf("publishOrderPlaced, published through the exchange: %q", other)
	}
}

// A stream consumer reads its stream, not a work queue bound to the events
// exchange: its receive operations are on the stream's channel, a queue of
// type stream bound by the stream's bindings, and say where it starts and
// that a super stream's instances share the partitions.
func TestStreamConsumersReadTheirStream(t *testing.T) {
	_, raw := build(t, "../../golden/streams/events")
	var doc struct {
		Info     struct{ Description string }
		Channels map[string]struct {
			Address  string
			Messages map[string]any
			Bindings struct {
				AMQP struct {
					Is    string
					Queue *struct {
						Name    string
						Durable bool
					}
					Exchange  *struct{ Name string }
					Arguments map[string]any `json:"x-warren-arguments"`
					Bound     []struct {
						Exchange, RoutingKey string
					} `json:"x-warren-bindings"`
					Partitions []struct{ Name string } `json:"x-warren-partitions"`
				}
			}
		}
		Operations map[string]struct {
			Action      string
			Description string
			Channel     struct {
				Ref string `json:"$ref"`
			}
			Queue string `json:"x-warren-queue"`
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	channelOf := func(op string) string {
		t.Helper()
		o, ok := doc.Operations[op]
		if !ok || o.Action != "receive" {
			t.Fatalf("no receive operation %s", op)
		}
		return strings.TrimPrefix(o.Channel.Ref, "#/channels/")
	}

	// order-history reads the plain stream orders-log from its start.
	for _, op := range []string{"OrderHistory_HandleOrderPlaced", "OrderHistory_HandleOrderShipped", "ShippingAudit_HandleOrderShipped"} {
		id := channelOf(op)
		ch := doc.Channels[id]
		amqp := ch.Bindings.AMQP
		if ch.Address != "orders-log" || amqp.Is != "queue" || amqp.Queue == nil || amqp.Queue.Name != "orders-log" || !amqp.Queue.Durable || amqp.Exchange != nil {
			t.Errorf("%s: on channel %s, address %q, AMQP %+v; want the stream orders-log, a durable queue", op, id, ch.Address, amqp)
		}
		if amqp.Arguments["x-queue-type"] != "stream" || amqp.Arguments["x-max-age"] != "604800s" {
			t.Errorf("%s: stream arguments %v", op, amqp.Arguments)
		}
		if len(amqp.Bound) != 1 || amqp.Bound[0].Exchange != "app.events" || amqp.Bound[0].RoutingKey != "order.#" {
			t.Errorf("%s: stream bindings %+v, want app.events order.#", op, amqp.Bound)
		}
		if q := doc.Operations[op].Queue; q != "orders-log" {
			t.Errorf("%s: x-warren-queue %q, want the stream orders-log", op, q)
		}
	}
	if _, ok := doc.Channels["stream_orders-log"].Messages["OrderShipped"]; !ok {
		t.Errorf("stream orders-log carries %v, want its facts", doc.Channels["stream_orders-log"].Messages)
	}
	history := doc.Operations["OrderHistory_HandleOrderPlaced"].Description
	for _, want := range []string{"reads the stream orders-log", `its start "first"`, "offset it stored on the broker", "its own work queue order-history, which is bound to nothing", "order-history.poison"} {
		if !strings.Contains(history, want) {
			t.Errorf("OrderHistory_HandleOrderPlaced does not say %q:\n%s", want, history)
		}
	}
	if audit := doc.Operations["ShippingAudit_HandleOrderShipped"].Description; !strings.Contains(audit, "reads the stream orders-log") || !strings.Contains(audit, `its start "2026-01-01T00:00:00Z" (the first fact written at or after 2026-01-01T00:00:00Z)`) {
		t.Errorf("ShippingAudit_HandleOrderShipped names neither the stream nor its start:\n%s", audit)
	}
	for op, o := range doc.Operations {
		if o.Action == "receive" && strings.Contains(o.Description, "bound to the events exchange with") {
			t.Errorf("%s: a stream consumer's work queue is bound to nothing: %s", op, o.Description)
		}
	}

	// order-projection is a consumer group on the super stream's partitions.
	id := channelOf("OrderProjection_HandleOrderPlaced")
	ch := doc.Channels[id]
	var parts []string
	for _, p := range ch.Bindings.AMQP.Partitions {
		parts = append(parts, p.Name)
	}
	if ch.Address != "orders-by-id" || strings.Join(parts, " ") != "orders-by-id-0 orders-by-id-1 orders-by-id-2" {
		t.Errorf("OrderProjection_HandleOrderPlaced: on channel %s, address %q, partitions %v", id, ch.Address, parts)
	}
	projection := doc.Operations["OrderProjection_HandleOrderPlaced"].Description
	for _, want := range []string{"reads the super stream orders-by-id", "consumer group order-projection", "its instances share the partitions", `its start "first"`} {
		if !strings.Contains(strings.TrimPrefix(projection, "Keeps each order's projection; its instances share the partitions.\n\n"), want) {
			t.Errorf("OrderProjection_HandleOrderPlaced does not say %q:\n%s", want, projection)
		}
	}

	// stock reads the stream that its fact is written into directly.
	if id := channelOf("Stock_HandleStockCounted"); doc.Channels[id].Address != "stock-log" {
		t.Errorf("Stock_HandleStockCounted: on channel %s, want the stream stock-log", id)
	}
	if d := doc.Info.Description; !strings.Contains(d, "a stream consumer reads its stream") {
		t.Errorf("info does not say how stream consumers read: %s", d)
	}
}
