package poison_test

import (
	"encoding/json"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/runtime/poison"
)

// An export is output: the values of headers whose names say they are
// credentials are masked, every other header kept as it is. The message
// itself is not changed.
func TestExportLineMasksCredentialHeaders(t *testing.T) {
	h := amqp.Table{
		"authorization":          "Bearer SECRET-TOKEN-123",
		"Proxy-Authorization":    "Basic c2VjcmV0",
		"x-api-key":              "SECRET-KEY",
		"X-Session-Token":        "SECRET-SESSION",
		"db_password":            "SECRET-PW",
		"nested":                 amqp.Table{"cookie": "SECRET-COOKIE", "kept": "visible"},
		"x-failure":              "dial amqp://svc:SECRET-URL-PW@db:5672/: refused",
		"x-attempts":             int64(3),
		"x-original-routing-key": "order.placed",
	}
	m := poison.Message{ID: "m1", RoutingKey: "order.placed", Headers: h, Body: []byte(`{"id":"m1","payload":{"sku":"x"}}`)}
	line, err := poison.ExportLine(m)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(line), "SECRET") {
		t.Errorf("the export shows a secret: %s", line)
	}
	var got struct {
		Headers map[string]any `json:"headers"`
	}
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"authorization", "Proxy-Authorization", "x-api-key", "X-Session-Token", "db_password"} {
		if got.Headers[k] != secret.Mask {
			t.Errorf("header %s: %v, want %s", k, got.Headers[k], secret.Mask)
		}
	}
	if got.Headers["x-attempts"] != float64(3) || got.Headers["x-original-routing-key"] != "order.placed" ||
		got.Headers["nested"].(map[string]any)["kept"] != "visible" ||
		got.Headers["x-failure"] != "dial amqp://svc:"+secret.Mask+"@db:5672/: refused" {
		t.Errorf("headers that hold no credential changed: %v", got.Headers)
	}
	if h["authorization"] != "Bearer SECRET-TOKEN-123" || h["nested"].(amqp.Table)["cookie"] != "SECRET-COOKIE" {
		t.Errorf("the message's own headers changed: %v", h)
	}
}
