package model

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/warrenbus/warren/generator/load"
)

func buildFS(t *testing.T, fsys fstest.MapFS) (*Model, error) {
	t.Helper()
	s, err := load.LoadFS(context.Background(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	return Build(context.Background(), s, Options{PackageOptional: true})
}

func TestRequestsModel(t *testing.T) {
	m, err := buildFS(t, fstest.MapFS{
		"warren.json": {Data: []byte(`{"defaults": {"concurrency": 3}, "responders": {"pricing": {"requests": ["pricing.quote"], "queueType": "classic"}}}`)},
		"quote.json":  {Data: []byte(`{"x-request": "pricing.quote", "type": "object", "x-reply": {"type": "object", "properties": {"cents": {"type": "integer"}}}}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Requests) != 1 || len(m.Responders) != 1 {
		t.Fatalf("requests %v, responders %v", m.Requests, m.Responders)
	}
	r := m.Requests[0]
	if r.Type.GoName != "PricingQuote" || r.Reply.GoName != "PricingQuoteReply" || r.MethodName() != "QuotePricing" || r.ReplyLocation() != "quote.json#/x-reply" || r.Responder.Name != "pricing" {
		t.Errorf("request = %+v (reply %s, method %s)", r, r.Reply.GoName, r.MethodName())
	}
	tr := m.Responders[0].Topology
	if tr == nil || tr.Concurrency != 3 || tr.Queue != "pricing.requests" || m.Exchanges.Requests != "app.requests" {
		t.Errorf("responder topology = %+v, requests exchange %q", tr, m.Exchanges.Requests)
	}
	if q, _ := m.Topology.Queue("pricing.requests"); q.Type != "classic" {
		t.Errorf("queue = %+v, want classic", q)
	}
	if len(m.Schemas) != 1 || m.Schemas[0].Path != "quote.json" {
		t.Errorf("embedded schemas = %v, want the request file", m.Schemas)
	}
}

func TestRequestNamesAreClaimed(t *testing.T) {
	_, err := buildFS(t, fstest.MapFS{
		"warren.json": {Data: []byte(`{"responders": {"pricing": {"requests": ["pricing.quote"]}}}`)},
		"quote.json":  {Data: []byte(`{"x-request": "pricing.quote", "title": "Requester", "type": "object", "x-reply": {"type": "object"}}`)},
	})
	if err == nil || !strings.Contains(err.Error(), `Go name "Requester"`) {
		t.Fatalf("err = %v, want the Requester name claimed", err)
	}
}
