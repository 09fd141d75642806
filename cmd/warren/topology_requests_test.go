package main

import (
	"encoding/json"
	"testing"
)

// warren topology exports the request side: the durable direct requests
// exchange, each responder's queue and a binding per request key.
func TestTopologyExportsRequests(t *testing.T) {
	code, stdout, stderr := run(t, "topology", "--rabbitmq", "3", "../../golden/requests/events")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var defs struct {
		Exchanges []struct{ Name, Type string }
		Queues    []struct {
			Name      string
			Arguments map[string]any
		}
		Bindings []struct {
			Source, Destination string
			RoutingKey          string `json:"routing_key"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &defs); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, e := range defs.Exchanges {
		if e.Name == "shop.requests" && e.Type == "direct" {
			found["exchange"] = true
		}
	}
	for _, q := range defs.Queues {
		if q.Name == "stock.requests" && q.Arguments["x-queue-type"] == "classic" {
			found["queue"] = true
		}
	}
	for _, b := range defs.Bindings {
		if b.Source == "shop.requests" && b.Destination == "pricing.requests" && b.RoutingKey == "pricing.quote" {
			found["binding"] = true
		}
	}
	for _, what := range []string{"exchange", "queue", "binding"} {
		if !found[what] {
			t.Errorf("no requests %s in the export:\n%s", what, stdout)
		}
	}
}
