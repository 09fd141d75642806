package model

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/runtime/topology"
)

// FuzzTopicMatch compares TopicMatch with the plain recursive definition
// of topic matching (which is exponential in the number of '#'s, so the
// fuzzer keeps patterns short).
func FuzzTopicMatch(f *testing.F) {
	f.Add("a.#.z", "a.b.c.z")
	f.Add("#.*.#", "a")
	f.Add("*.b.#", "a.b")
	f.Fuzz(func(t *testing.T, pattern, key string) {
		if strings.Count(pattern, "#") > 6 || len(key) > 64 {
			return
		}
		want := recursiveMatch(strings.Split(pattern, "."), strings.Split(key, "."))
		if got := TopicMatch(pattern, key); got != want {
			t.Errorf("TopicMatch(%q, %q) = %v, want %v", pattern, key, got, want)
		}
	})
}

func recursiveMatch(p, k []string) bool {
	if len(p) == 0 {
		return len(k) == 0
	}
	switch p[0] {
	case "#":
		for i := 0; i <= len(k); i++ {
			if recursiveMatch(p[1:], k[i:]) {
				return true
			}
		}
		return false
	case "*":
		return len(k) > 0 && recursiveMatch(p[1:], k[1:])
	}
	return len(k) > 0 && p[0] == k[0] && recursiveMatch(p[1:], k[1:])
}

func TestTopicMatch(t *testing.T) {
	tests := []struct {
		pattern, key string
		want         bool
	}{
		{"order.placed", "order.placed", true},
		{"order.placed", "order.paid", false},
		{"order.*", "order.placed", true},
		{"order.*", "order", false},
		{"order.*", "order.placed.v2", false},
		{"*.placed", "order.placed", true},
		{"order.#", "order", true},
		{"order.#", "order.placed.v2", true},
		{"#", "a.b.c", true},
		{"#.placed", "placed", true},
		{"#.placed", "a.b.placed", true},
		{"#.placed", "a.placed.b", false},
		{"a.#.z", "a.z", true},
		{"a.#.z", "a.b.c.z", true},
		{"a.#.#.z", "a.z", true},
		{"a.*.#", "a", false},
		{"a.*.#", "a.b", true},
		{"catalogue.*.price-changed", "catalogue.item.price-changed", true},
		{"#.#", "", true},
		{"#.*.#", "a", true},
		{"#.a.#.b", "x.a.y.b", true},
		{"#.a.#.b", "x.b.y.a", false},
		// Many '#'s and no match: once exponential, now as quick as any.
		{strings.Repeat("#.", 40) + "x", strings.Repeat("a.", 120) + "a", false},
		{strings.Repeat("#.", 40) + "x", strings.Repeat("a.", 120) + "x", true},
	}
	for _, tt := range tests {
		if got := TopicMatch(tt.pattern, tt.key); got != tt.want {
			t.Errorf("TopicMatch(%q, %q) = %v, want %v", tt.pattern, tt.key, got, tt.want)
		}
	}
}

func build(t *testing.T, files map[string]string) (*Model, error) {
	t.Helper()
	fsys := fstest.MapFS{}
	for name, src := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(src)}
	}
	s, err := load.LoadFS(context.Background(), fsys)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return Build(context.Background(), s, Options{})
}

func TestConsumers(t *testing.T) {
	m, err := build(t, map[string]string{
		"warren.json": `{"package": "events",
  "exchanges": {"events": "shop.events"},
  "defaults": {"concurrency": 3, "backoff": ["1s", "5s"], "maxDeferrals": 7},
  "consumers": {
    "mailer": {"bindings": ["order.*"], "maxAttempts": 2, "deliveryLimit": 4, "maxDeferrals": 30},
    "audit": {"bindings": ["#"], "queueType": "classic", "backoff": ["100ms"], "prefetch": 40}
  }}`,
		"placed.json": `{"x-routing-key": "order.placed", "type": "object"}`,
		"paid.json":   `{"x-routing-key": "order.paid", "type": "object"}`,
		"item.json":   `{"x-routing-key": "catalogue.item.updated", "type": "object"}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.Exchanges != (topology.Exchanges{Events: "shop.events", Retry: "app.retry", Dead: "app.dead"}) {
		t.Errorf("exchanges = %+v", m.Exchanges)
	}
	audit, mailer := m.Consumers[0], m.Consumers[1]
	if audit.Name != "audit" || mailer.Name != "mailer" {
		t.Fatalf("consumers not sorted: %s, %s", audit.Name, mailer.Name)
	}
	if got := factKeys(mailer.Facts); !slices.Equal(got, []string{"order.paid", "order.placed"}) {
		t.Errorf("mailer facts = %v", got)
	}
	if got := factKeys(audit.Facts); len(got) != 3 {
		t.Errorf("audit facts = %v", got)
	}
	// Defaults from warren.json, overridden per consumer, the rest from
	// runtime/topology.
	for _, tc := range []struct {
		c                                  *Consumer
		queueType                          topology.QueueType
		prefetch, concurrency, maxAttempts int
		ladder                             []time.Duration
		deliveryLimit, maxDeferrals        int
	}{
		{mailer, topology.Quorum, topology.DefaultPrefetch, 3, 2, []time.Duration{time.Second}, 4, 30},
		{audit, topology.Classic, 40, 3, 2, []time.Duration{100 * time.Millisecond}, 0, 7}, // classic queues have none
	} {
		top := tc.c.Topology
		if top == nil {
			t.Fatalf("consumer %s has no topology", tc.c.Name)
		}
		var ladder []time.Duration
		for _, tier := range top.Tiers {
			ladder = append(ladder, tier.Delay)
		}
		q, _ := m.Topology.Queue(top.Queue)
		if q.Type != tc.queueType || top.Prefetch != tc.prefetch || top.Concurrency != tc.concurrency ||
			top.MaxAttempts != tc.maxAttempts || !slices.Equal(ladder, tc.ladder) {
			t.Errorf("%s: queue type %s, prefetch %d, concurrency %d, maxAttempts %d, ladder %v; want %s, %d, %d, %d, %v",
				tc.c.Name, q.Type, top.Prefetch, top.Concurrency, top.MaxAttempts, ladder,
				tc.queueType, tc.prefetch, tc.concurrency, tc.maxAttempts, tc.ladder)
		}
		if q.DeliveryLimit != tc.deliveryLimit {
			t.Errorf("%s: delivery limit %d, want %d", tc.c.Name, q.DeliveryLimit, tc.deliveryLimit)
		}
		if top.MaxDeferrals != tc.maxDeferrals {
			t.Errorf("%s: maxDeferrals %d, want %d", tc.c.Name, top.MaxDeferrals, tc.maxDeferrals)
		}
		i := slices.IndexFunc(m.Topology.Consumers, func(c topology.Consumer) bool { return c.Name == tc.c.Name })
		if i < 0 || top != &m.Topology.Consumers[i] {
			t.Errorf("%s: Consumer.Topology is not the model topology's own entry", tc.c.Name)
		}
	}
	if audit.HandlerName() != "AuditHandler" || mailer.Topology.Queue != "mailer" {
		t.Errorf("names: %s, queue %q", audit.HandlerName(), mailer.Topology.Queue)
	}
}

func factKeys(facts []*Fact) []string {
	var keys []string
	for _, f := range facts {
		keys = append(keys, f.RoutingKey)
	}
	return keys
}

// TestSharedDefinition checks that a definition used by two facts is one
// Go type, and that a struct containing itself by value gets a pointer.
func TestSharedDefinition(t *testing.T) {
	m, err := build(t, map[string]string{
		"warren.json": `{"package": "events"}`,
		"money.json":  `{"type": "object", "required": ["amount"], "properties": {"amount": {"type": "integer"}}}`,
		"a.json":      `{"x-routing-key": "a.done", "type": "object", "required": ["m"], "properties": {"m": {"$ref": "money.json"}}}`,
		"b.json":      `{"x-routing-key": "b.done", "type": "object", "required": ["m", "self"], "properties": {"m": {"$ref": "money.json"}, "self": {"$ref": "#"}}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	a, b := m.Facts[0].Type, m.Facts[1].Type
	if a.Fields[0].Type.Type != b.Fields[0].Type.Type || a.Fields[0].Type.Type.GoName != "Money" {
		t.Errorf("money is not one shared type: %v vs %v", a.Fields[0].Type.Type, b.Fields[0].Type.Type)
	}
	self := b.Fields[1]
	if self.Type.Type != b || !self.IsPointer() {
		t.Errorf("self field: type %v pointer %v; want a pointer to the fact type", self.Type.Type.GoName, self.IsPointer())
	}
	if a.Fields[0].IsPointer() {
		t.Error("a required, non-recursive struct field became a pointer")
	}
	if got := []string{m.Schemas[0].Path, m.Schemas[1].Path, m.Schemas[2].Path}; !slices.Equal(got, []string{"a.json", "b.json", "money.json"}) {
		t.Errorf("embedded schemas = %v", got)
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no package", map[string]string{"warren.json": `{}`}, `warren.json:1:1: no Go package name: set "package" in warren.json or pass --package`},
		{"circular ref", map[string]string{
			"warren.json": `{"package": "p"}`,
			"a.json":      `{"x-routing-key": "a.b", "type": "object", "properties": {"x": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"$ref": "#/$defs/y"}, "y": {"$ref": "#/$defs/x"}}}`,
		}, `leads back to itself`},
		{"bad tag", map[string]string{
			"warren.json": `{"package": "p"}`,
			"a.json":      `{"x-routing-key": "a.b", "type": "object", "properties": {"a,b": {"type": "string"}}}`,
		}, `property "a,b": the name contains ','`},
		{"oneOf next to properties", map[string]string{
			"warren.json": `{"package": "p"}`,
			"a.json":      `{"x-routing-key": "a.b", "type": "object", "properties": {"x": {"type": "string"}}, "oneOf": [{"type": "object", "properties": {"y": {"type": "string"}}}, {"type": "object", "properties": {"z": {"type": "string"}}}]}`,
		}, `oneOf next to properties cannot be one Go type`},
		{"contradicting allOf", map[string]string{
			"warren.json": `{"package": "p"}`,
			"a.json":      `{"x-routing-key": "a.b", "type": "object", "properties": {"x": {"allOf": [{"type": "string"}, {"type": "integer"}]}}}`,
		}, `no value can satisfy both`},
		{"fact that is only an alias", map[string]string{
			"warren.json": `{"package": "p"}`,
			"money.json":  `{"type": "object", "properties": {"amount": {"type": "integer"}}}`,
			"a.json":      `{"x-routing-key": "a.b", "type": "object", "oneOf": [{"$ref": "money.json"}, {"type": "null"}]}`,
		}, `only another name for another type (such as a nullable $ref) cannot carry the fact's Validate method`},
		{"fact named like the topology", map[string]string{
			"warren.json": `{"package": "p"}`,
			"a.json":      `{"x-routing-key": "a.b", "type": "object", "title": "Topology", "properties": {"x": {"type": "string"}}}`,
		}, `a.json:1:53: /title: Go name "Topology" of this struct is already taken by the topology variable Topology that every generated package declares; change this "title"`},
		{"fact named like the outbox writer", map[string]string{
			"warren.json": `{"package": "p"}`,
			"a.json":      `{"x-routing-key": "a.b", "type": "object", "title": "OutboxWriter", "properties": {"x": {"type": "string"}}}`,
		}, `a.json:1:53: /title: Go name "OutboxWriter" of this struct is already taken by the outbox writer type OutboxWriter that every generated package declares; change this "title"`},
		{"fact named like a consumer constructor", map[string]string{
			"warren.json": `{"package": "p", "consumers": {"mailer": {"bindings": ["a.b"]}}}`,
			"a.json":      `{"x-routing-key": "a.b", "type": "object", "title": "NewMailerConsumer", "properties": {"x": {"type": "string"}}}`,
		}, `Go name "NewMailerConsumer" of this constructor of consumer "mailer" is already taken by the struct from a.json:1:53 /title; rename the consumer or change the other's "title"`},
		{"binding longer than AMQP allows", map[string]string{
			"warren.json": `{"package": "p", "consumers": {"mailer": {"bindings": ["a.b", "` + strings.Repeat("#.", 128) + `b"]}}}`,
			"a.json":      `{"x-routing-key": "a.b", "type": "object", "properties": {"x": {"type": "string"}}}`,
		}, `warren.json:1:63: /consumers/mailer/bindings/1: consumer "mailer": binding of 257 bytes: expected at most 255, the longest binding key AMQP can carry`},
		{"setting from the defaults", map[string]string{
			"warren.json": `{"package": "p", "defaults": {"prefetch": 2}, "consumers": {"mailer": {"bindings": ["a.b"], "concurrency": 4}}}`,
			"a.json":      `{"x-routing-key": "a.b", "type": "object"}`,
		}, `warren.json:1:43: /defaults/prefetch: consumer "mailer": prefetch 2: expected at least concurrency (4), or handlers would sit idle`},
		{"exchanges with one name", map[string]string{
			"warren.json": `{"package": "p", "exchanges": {"events": "x", "dead": "x"}}`,
		}, `warren.json:1:55: /exchanges/dead: dead exchange "x": same name as the events exchange; the three must differ`},
		{"queue names collide", map[string]string{
			"warren.json": `{"package": "p", "consumers": {"c": {"bindings": ["a.b"]}, "c.poison": {"bindings": ["a.b"]}}}`,
			"a.json":      `{"x-routing-key": "a.b", "type": "object"}`,
		}, `warren.json:1:60: /consumers/c.poison: consumer "c.poison": queue "c.poison": collides with the poison queue of consumer "c"`},
		{"generated file names collide", map[string]string{
			"warren.json": `{"package": "p"}`,
			"a/b.json":    `{"x-routing-key": "a.b", "type": "object", "title": "One"}`,
			"a_b.json":    `{"x-routing-key": "a.c", "type": "object", "title": "Two"}`,
		}, `generated file name a_b.json.go is also the one of`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := build(t, tt.files)
			var list load.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error = %v, want a load.ErrorList", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error:\n%v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestClosestBinding(t *testing.T) {
	keys := []string{"catalogue.item.deleted", "catalogue.item.updated", "order.placed", "order.shipped"}
	cases := []struct {
		pattern, want string
		ok            bool
	}{
		{"order.shiped", "order.shipped", true},
		{"ordr.placed", "order.placed", true},
		{"ordr.#", "order.#", true},
		{"catalgue.*.updated", "catalogue.*.updated", true},
		{"catalogue.iten.*", "catalogue.item.*", true},
		{"billing.#", "", false},
		{"invoice.sent", "", false},
	}
	for _, c := range cases {
		got, ok := ClosestBinding(c.pattern, keys)
		if got != c.want || ok != c.ok {
			t.Errorf("ClosestBinding(%q) = %q, %v; want %q, %v", c.pattern, got, ok, c.want, c.ok)
		}
		if ok && !slices.ContainsFunc(keys, func(k string) bool { return TopicMatch(got, k) }) {
			t.Errorf("suggestion %q for %q matches no key", got, c.pattern)
		}
	}
}

// Names that collide are resolved, the same way every time, and each
// change is recorded for warren check to report.
func TestCollisionsAreRenamed(t *testing.T) {
	m, err := build(t, map[string]string{
		"warren.json": `{"package": "p"}`,
		"a.json": `{"x-routing-key": "a.b", "title": "Fact", "type": "object", "properties": {
  "+1": {"type": "integer"}, "-1": {"type": "integer"}, "foo": {"type": "string"}, "Foo": {"type": "string"},
  "validate": {"type": "string"},
  "op": {"enum": ["+", "-", "*", "1", "+1"]},
  "when": {"oneOf": [{"type": "string", "format": "date"}, {"type": "string", "pattern": "^Q[1-4]$"}]},
  "gh": {"$ref": "vendor/github/push.json#/definitions/user"},
  "gl": {"$ref": "vendor/gitlab/push.json#/definitions/user"},
  "hook": {"$ref": "vendor/gitlab/hook.json#/definitions/user"}}}`,
		"vendor/github/push.json": `{"definitions": {"user": {"type": "object", "properties": {"login": {"type": "string"}}}}}`,
		"vendor/gitlab/push.json": `{"definitions": {"user": {"type": "object", "properties": {"username": {"type": "string"}}}}}`,
		"vendor/gitlab/hook.json": `{"definitions": {"user": {"type": "object", "properties": {"name": {"type": "string"}}}}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range m.Renamed {
		got = append(got, r.What+": "+r.From+" -> "+r.To)
	}
	want := []string{
		`field for property "-1" of Fact: X1 -> Minus1`,
		`field for property "Foo" of Fact: Foo -> Foo2`,
		`field for property "validate" of Fact: Validate -> Validate2`,
		`branch of union FactWhen: String -> String2`,
		`type: User -> HookUser`, // vendor/github/push.json keeps User: first by path
		`type: User -> PushUser`,
		`constant for enum value "+":  -> FactOpPlus`,
		`constant for enum value "-":  -> FactOpMinus`,
		`constant for enum value "*":  -> FactOpStar`,
		`constant for enum value "+1": FactOp1 -> FactOpPlus1`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("renames (-want +got):\n%s", diff)
	}
}

// A type declared below an array's items is named after the items' type:
// items of items are Item again, the values of a map of items Value
// (nameFor's rule, docs/GENERATED.md). A property whose name has no letter or digit ("_", "-") is
// spelled out, as a taken one is, and reported as renamed.
func TestNamesBelowItemsAndOfSymbols(t *testing.T) {
	m, err := build(t, map[string]string{
		"warren.json": `{"package": "p"}`,
		"grid.json": `{"x-routing-key": "grid.updated", "type": "object", "properties": {
  "rows": {"type": "array", "items": {"type": "array", "items": {"type": "object", "properties": {"v": {"type": "integer"}}}}},
  "maps": {"type": "array", "items": {"type": "object", "additionalProperties": {"type": "object", "properties": {"w": {"type": "string"}}}}},
  "_": {"type": "string"}, "-": {"type": "string"}}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ty := range m.Types {
		types = append(types, ty.GoName+" "+ty.Pointer)
	}
	want := []string{
		"GridUpdated ",
		"GridUpdatedRowsItemItem /properties/rows/items/items",
		"GridUpdatedMapsItemValue /properties/maps/items/additionalProperties",
	}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
	var fields []string
	for _, f := range m.Types[0].Fields {
		fields = append(fields, f.JSONName+" "+f.GoName)
	}
	if diff := cmp.Diff([]string{"rows Rows", "maps Maps", "_ Underscore", "- Minus"}, fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

// A definition named like what is generated for a consumer (its handler
// interface, its constructor) gives way, as one named Topology does: a
// vendor's file cannot be edited, and renaming the consumer renames its
// queues. A fact so named stays an error (docs/GENERATED.md).
func TestDefinitionsGiveWayToConsumerNames(t *testing.T) {
	m, err := build(t, map[string]string{
		"warren.json": `{"package": "p", "consumers": {"mailer": {"bindings": ["a.b"]}}}`,
		"a.json": `{"x-routing-key": "a.b", "title": "Fact", "type": "object", "properties": {
  "h": {"$ref": "vendor/hook.json#/definitions/h"}, "c": {"$ref": "vendor/hook.json#/definitions/c"}}}`,
		"vendor/hook.json": `{"definitions": {"h": {"title": "MailerHandler", "type": "string"}, "c": {"title": "NewMailerConsumer", "type": "string"}}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range m.Renamed {
		got = append(got, r.What+": "+r.From+" -> "+r.To)
	}
	want := []string{"type: MailerHandler -> HookMailerHandler", "type: NewMailerConsumer -> HookNewMailerConsumer"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("renames (-want +got):\n%s", diff)
	}
	_, err = build(t, map[string]string{
		"warren.json": `{"package": "p", "consumers": {"mailer": {"bindings": ["a.b"]}}}`,
		"a.json":      `{"x-routing-key": "a.b", "title": "MailerHandler", "type": "object"}`,
	})
	if err == nil || !strings.Contains(err.Error(), `Go name "MailerHandler" of this handler interface of consumer "mailer" is already taken`) {
		t.Errorf("a fact named like a consumer's handler: %v", err)
	}
}
