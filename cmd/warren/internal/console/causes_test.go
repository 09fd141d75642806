package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/topology"
)

// validSKU stands for a fact's schema, in every version: a payload with a
// string sku.
func validSKU(routingKey string, version int, payload []byte) error {
	var p struct {
		SKU *string `json:"sku"`
	}
	if err := json.Unmarshal(payload, &p); err != nil || p.SKU == nil {
		return errors.New("does not match schema order/placed.json: /sku: required property \"sku\"")
	}
	return nil
}

// post sends a change with the token and returns the status and the
// decoded answer.
func (c *consoleCase) post(path, body string) (int, map[string]any) {
	c.t.Helper()
	status, raw := c.do(http.MethodPost, path, body, map[string]string{TokenHeader: testToken, "Content-Type": "application/json"})
	var out map[string]any
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		c.t.Fatalf("POST %s: %v\n%s", path, err, raw)
	}
	return status, out
}

// The causes view groups the lane; a group is exported, retried and
// discarded behind the token, refused read-only; an edit is validated on
// the server.
func TestCausesAndGroupActions(t *testing.T) {
	t.Parallel()
	c := newConsole(t, func(cfg *Config) { cfg.Validate = validSKU })
	c.poisonCopy("mailer", "m1", "order.placed", `order 17: stock "A-1" gone`, `{"sku":"A-1"}`)
	c.poisonCopy("mailer", "m2", "order.placed", `order 18: stock "B-2" gone`, `{"sku":"B-2"}`)
	c.poisonCopy("mailer", "m3", "order.paid", `payload of order.paid does not match its schema: /sku: required property "sku"`, `{}`)
	c.poisonCopy("mailer", "m4", "order.paid", `payload of order.paid does not match its schema: /sku: required property "sku"`, `{"note":"`+scriptPayload+`"}`)

	var causes causesJSON
	c.getJSON("/api/consumers/mailer/causes", &causes)
	if causes.Messages != 4 || len(causes.Groups) != 2 || causes.Groups[0].Count != 2 || !causes.CanEdit {
		t.Fatalf("causes: %+v", causes)
	}
	stock, sku := causes.Groups[0], causes.Groups[1]
	if stock.Kind != "handler" || stock.Cause != `order <n>: stock "…" gone` || stock.FirstSeen == "" || sku.Kind != "validation" {
		t.Errorf("groups: %+v", causes.Groups)
	}

	status, raw := c.do(http.MethodPost, "/api/consumers/mailer/groups/"+stock.ID+"/retry", `{}`, map[string]string{"Content-Type": "application/json"})
	if status != http.StatusUnauthorized {
		t.Errorf("retry without the token: %d %s", status, raw)
	}
	if status, out := c.post("/api/consumers/mailer/groups/000000000000/retry", `{}`); status != http.StatusNotFound || !strings.Contains(out["error"].(string), "unknown group") {
		t.Errorf("unknown group: %d %v", status, out)
	}
	if status, out := c.post("/api/consumers/mailer/groups/"+stock.ID+"/retry", `{"expect":3}`); status != http.StatusConflict {
		t.Errorf("stale expect: %d %v", status, out)
	}
	status, out := c.post("/api/consumers/mailer/groups/"+sku.ID+"/export", `{}`)
	if lines := strings.Split(strings.TrimSpace(out["lines"].(string)), "\n"); status != http.StatusOK || len(lines) != 2 || !strings.Contains(lines[1], `"id":"m4"`) {
		t.Errorf("export: %d %v", status, out)
	}
	status, out = c.post("/api/consumers/mailer/groups/"+stock.ID+"/retry", `{"expect":2,"by":"ana"}`)
	if status != http.StatusOK || out["count"] != 2.0 || out["summary"] != "retried 2 messages of 2 in group "+stock.ID+" from mailer.poison to mailer" {
		t.Errorf("retry: %d %v", status, out)
	}
	if status, out = c.post("/api/consumers/mailer/groups/"+sku.ID+"/discard", `{}`); status != http.StatusBadRequest {
		t.Errorf("discard without a reason: %d %v", status, out)
	}

	if status, out = c.post("/api/consumers/mailer/edit", `{"id":"m3","payload":"{\"note\":1}"}`); status != http.StatusUnprocessableEntity || !strings.Contains(out["error"].(string), "/sku: required property") {
		t.Errorf("invalid edit: %d %v", status, out)
	}
	if status, out = c.post("/api/consumers/mailer/edit", `{"id":"m3","payload":"{\"sku\":\"C-3\"}","by":"ana"}`); status != http.StatusOK {
		t.Errorf("edit: %d %v", status, out)
	}
	if status, out = c.post("/api/consumers/mailer/groups/"+sku.ID+"/discard", `{"reason":"test data"}`); status != http.StatusOK || out["count"] != 1.0 {
		t.Errorf("discard: %d %v", status, out)
	}
	if p, w, d := c.depth("mailer.poison"), c.depth("mailer"), c.depth("mailer.discarded"); p != 0 || w != 3 || d != 2 {
		t.Errorf("poison %d, work %d, discarded %d; want 0, 3 and 2", p, w, d)
	}
	history, err := poison.History(t.Context(), c.conn, c.consumer("mailer"))
	if err != nil || len(history) != 4 || history[1].By != "ana" || history[2].Action != "edit" || history[3].By != "warren console" {
		t.Errorf("history: %+v, %v", history, err)
	}
}

// placedByVersion stands for order.placed in two versions, as the schema
// directory's validator checks them: version 1's payload has a string sku,
// version 2's a string sku_code; a message without x-fact-version (0) is
// version 1.
func placedByVersion(routingKey string, version int, payload []byte) error {
	prop, file := "sku", "order/placed.v1.json"
	if version == 2 {
		prop, file = "sku_code", "order/placed.v2.json"
	}
	var p map[string]any
	if err := json.Unmarshal(payload, &p); err != nil {
		return err
	}
	if _, ok := p[prop].(string); !ok {
		return fmt.Errorf("does not match schema %s: /%s: required property %q", file, prop, prop)
	}
	return nil
}

// poisonCopyOf is poisonCopy for a message written under version (none
// when 0).
func (c *consoleCase) poisonCopyOf(consumer, id, key string, version int, payload string) {
	tc := c.consumer(consumer)
	h := amqp.Table{
		runtime.HeaderAttempts: int64(3), runtime.HeaderFailure: "boom",
		runtime.HeaderFailedAt: "2026-05-01T10:00:05Z", runtime.HeaderConsumer: tc.Name,
		runtime.HeaderOriginalRoutingKey: key, runtime.HeaderOriginalExchange: topology.DefaultExchanges.Events,
	}
	if version > 0 {
		h[runtime.HeaderFactVersion] = int64(version)
	}
	c.publish(tc.DeadExchange, tc.Name, amqp.Publishing{
		MessageId: id, ContentType: "application/json", Type: key, Headers: h,
		Body: fmt.Appendf(nil, `{"id":%q,"occurred_at":"2026-05-01T10:00:00Z","payload":%s}`, id, payload),
	})
}

// An edit is checked against the schema of the version the message was
// written under (its x-fact-version; version 1 without it), as warren
// poison edit checks it, not against the fact's newest version: a
// version-1 message takes a payload valid for version 1 and refuses one
// valid only for version 2, and a version-2 message the reverse. A
// refusal changes nothing.
func TestEditChecksTheMessagesVersion(t *testing.T) {
	t.Parallel()
	c := newConsole(t, func(cfg *Config) { cfg.Validate = placedByVersion })
	c.poisonCopyOf("mailer", "v1", "order.placed", 1, `{"sku":"A-1"}`)
	c.poisonCopyOf("mailer", "v2", "order.placed", 2, `{"sku_code":"A-1"}`)
	c.poisonCopyOf("mailer", "none", "order.placed", 0, `{"sku":"A-1"}`)
	edit := func(id, payload string) (int, map[string]any) {
		body, err := json.Marshal(map[string]string{"id": id, "payload": payload})
		if err != nil {
			t.Fatal(err)
		}
		return c.post("/api/consumers/mailer/edit", string(body))
	}
	const v1, v2 = `{"sku":"B-2"}`, `{"sku_code":"B-2"}`
	for _, tc := range []struct{ id, payload, want string }{
		{"v1", v2, `does not match schema order/placed.v1.json: /sku: required property "sku"`},
		{"none", v2, `does not match schema order/placed.v1.json: /sku: required property "sku"`},
		{"v2", v1, `does not match schema order/placed.v2.json: /sku_code: required property "sku_code"`},
	} {
		status, out := edit(tc.id, tc.payload)
		if msg, _ := out["error"].(string); status != http.StatusUnprocessableEntity || !strings.Contains(msg, tc.want) {
			t.Errorf("edit %s with %s: %d %v; want 422 and %s", tc.id, tc.payload, status, out, tc.want)
		}
	}
	if p, w, d := c.depth("mailer.poison"), c.depth("mailer"), c.depth("mailer.discarded"); p != 3 || w != 0 || d != 0 {
		t.Fatalf("after refused edits: poison %d, work %d, discarded %d; want 3, 0 and 0", p, w, d)
	}
	for _, tc := range []struct{ id, payload string }{{"v1", v1}, {"none", v1}, {"v2", v2}} {
		if status, out := edit(tc.id, tc.payload); status != http.StatusOK {
			t.Errorf("edit %s with %s: %d %v; want 200", tc.id, tc.payload, status, out)
		}
	}
	if p, w, d := c.depth("mailer.poison"), c.depth("mailer"), c.depth("mailer.discarded"); p != 0 || w != 3 || d != 3 {
		t.Errorf("after the edits: poison %d, work %d, discarded %d; want 0, 3 and 3", p, w, d)
	}
}

// A read-only console shows the causes and refuses to act on them.
func TestCausesReadOnly(t *testing.T) {
	t.Parallel()
	c := newConsole(t, func(cfg *Config) { cfg.ReadOnly = true })
	c.poisonCopy("mailer", "m1", "order.placed", "boom", `{}`)
	var causes causesJSON
	c.getJSON("/api/consumers/mailer/causes", &causes)
	if len(causes.Groups) != 1 || !causes.ReadOnly || causes.CanEdit {
		t.Fatalf("causes: %+v", causes)
	}
	for _, path := range []string{"/groups/" + causes.Groups[0].ID + "/retry", "/groups/" + causes.Groups[0].ID + "/discard", "/edit"} {
		if status, out := c.post("/api/consumers/mailer"+path, `{"reason":"x","id":"m1","payload":"{}"}`); status != http.StatusForbidden {
			t.Errorf("%s read-only: %d %v", path, status, out)
		}
	}
	if got := c.depth("mailer.poison"); got != 1 {
		t.Errorf("poison queue holds %d, want 1", got)
	}
}

// The page edits a message by its id: when two messages of the lane have
// it, the edit is refused as warren poison edit refuses it, with the
// copies listed, and the lane stays as it was.
func TestEditRefusesAnIDWithSeveralCopies(t *testing.T) {
	t.Parallel()
	c := newConsole(t, func(cfg *Config) { cfg.Validate = validSKU })
	c.poisonCopy("mailer", "m1", "order.placed", "stock gone", `{"sku":"A-1"}`)
	c.poisonCopy("mailer", "m2", "order.placed", "boom", `{"sku":"B-2"}`)
	c.poisonCopy("mailer", "m1", "order.placed", "stock gone again", `{"sku":"A-1"}`)
	status, out := c.post("/api/consumers/mailer/edit", `{"id":"m1","payload":"{\"sku\":\"C-3\"}"}`)
	msg, _ := out["error"].(string)
	if status != http.StatusConflict || !strings.Contains(msg, `2 messages have id "m1": copy 1 at position 1 (order.placed, failed at 2026-05-01T10:00:05Z: stock gone); copy 2 at position 3`) ||
		!strings.HasSuffix(msg, "nothing changed; edit one of them with warren poison edit --copy N") {
		t.Errorf("edit of a shared id: %d %v", status, out)
	}
	lane, err := poison.List(t.Context(), c.conn, c.consumer("mailer"), poison.Filter{})
	var got []string
	for _, m := range lane {
		got = append(got, m.ID+" "+m.Failure)
	}
	if want := []string{"m1 stock gone", "m2 boom", "m1 stock gone again"}; err != nil || strings.Join(got, ", ") != strings.Join(want, ", ") || c.depth("mailer") != 0 {
		t.Errorf("after the refused edit the lane is %q (%v), work %d; want %q", got, err, c.depth("mailer"), want)
	}
}
