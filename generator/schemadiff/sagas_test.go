package schemadiff

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
)

func sagaDir(t *testing.T, state string) *Dir {
	t.Helper()
	d, err := LoadFS(context.Background(), fstest.MapFS{
		"warren.json": {Data: []byte(`{"sagas": {"checkout": {"state": "state.json", "startsWith": ["order.placed"], "handles": {"order.placed": {"correlation": "/order_id"}}}}}`)},
		"placed.json": {Data: []byte(`{"x-routing-key": "order.placed", "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}`)},
		"state.json":  {Data: []byte(`{"type": "object", ` + state + `}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A saga's stored states must stay readable: a new required property of
// the state breaks reading the states stored before it; an optional one
// does not.
func TestCompareJudgesSagaStates(t *testing.T) {
	old := sagaDir(t, `"properties": {"status": {"type": "string"}}, "required": ["status"]`)
	broken := sagaDir(t, `"properties": {"status": {"type": "string"}, "total": {"type": "integer"}}, "required": ["status", "total"]`)
	r := Compare(old, broken)
	var found bool
	for _, c := range r.Changes {
		if c.Fact == "state of saga checkout" && c.Breaking && strings.Contains(c.Path+c.Message, "total") {
			found = true
		}
	}
	if !found {
		t.Errorf("a new required state property is not a breaking change of the state of saga checkout: %+v", r.Changes)
	}
	fine := sagaDir(t, `"properties": {"status": {"type": "string"}, "note": {"type": "string"}}, "required": ["status"]`)
	for _, c := range Compare(old, fine).Changes {
		if c.Breaking {
			t.Errorf("an optional state property breaks: %+v", c)
		}
	}
	if same := Compare(old, old); len(same.Changes) != 0 {
		t.Errorf("an unchanged state reports %+v", same.Changes)
	}
}
