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

// inputs are the example and every golden case that generates: one
// document each, covering every construct of the type mapping.
func inputs(t *testing.T) []string {
	t.Helper()
	dirs := []string{example}
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

// The document says what the model says: a channel per fact on the
// events exchange, a send per fact, a receive per consumer and fact.
func TestDocumentFollowsTheModel(t *testing.T) {
	for _, dir := range inputs(t) {
		m, raw := build(t, dir)
		var doc struct {
			Channels map[string]struct {
				Address  string
				Bindings struct {
					AMQP struct{ Exchange struct{ Name, Type string } }
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
		for _, c := range doc.Channels {
			if c.Address == "" { // a reply channel: its address is the request's reply_to
				replies++
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
