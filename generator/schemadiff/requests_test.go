package schemadiff

import (
	"context"
	"testing"
	"testing/fstest"
)

func requestDir(t *testing.T, request, reply string) *Dir {
	t.Helper()
	d, err := LoadFS(context.Background(), fstest.MapFS{
		"warren.json": {Data: []byte(`{"responders": {"pricing": {"requests": ["pricing.quote"]}}}`)},
		"quote.json":  {Data: []byte(`{"x-request": "pricing.quote", "type": "object", ` + request + `, "x-reply": {"type": "object", ` + reply + `}}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A request or reply change is judged like a fact's: a new required
// property of the request breaks requesters still sending the old one; a
// removed required property of the reply breaks requesters relying on it.
func TestCompareJudgesRequestsAndReplies(t *testing.T) {
	old := requestDir(t, `"properties": {"sku": {"type": "string"}}, "required": ["sku"]`, `"properties": {"cents": {"type": "integer"}}, "required": ["cents"]`)
	new := requestDir(t, `"properties": {"sku": {"type": "string"}, "currency": {"type": "string"}}, "required": ["sku", "currency"]`, `"properties": {"cents": {"type": "integer"}}`)
	r := Compare(old, new)
	broken := map[string]bool{}
	for _, c := range r.Changes {
		if c.Breaking {
			broken[c.Fact] = true
		}
	}
	if !broken["request pricing.quote"] || !broken["reply pricing.quote"] {
		t.Errorf("breaking changes filed under %v, want both the request and the reply; changes: %+v", broken, r.Changes)
	}
	if same := Compare(old, old); len(same.Changes) != 0 {
		t.Errorf("an unchanged request reports %+v", same.Changes)
	}
}
