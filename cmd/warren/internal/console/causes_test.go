package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/warrenbus/warren/runtime/poison"
)

// validSKU stands for a fact's schema: a payload with a string sku.
func validSKU(routingKey string, payload []byte) error {
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
