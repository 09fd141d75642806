package saga

import (
	"strings"
	"testing"
)

func TestCorrelationID(t *testing.T) {
	for _, c := range []struct {
		payload, pointer, want, err string
	}{
		{`{"order_id":"o-1"}`, "/order_id", "o-1", ""},
		{`{"order":{"id":42}}`, "/order/id", "42", ""},
		{`{"a/b":{"~":"x"}}`, "/a~1b/~0", "x", ""},
		{`{"order_id":12345678901234567890}`, "/order_id", "", "expected a string or an integer"},
		{`{"order_id":1.5}`, "/order_id", "", "expected a string or an integer"},
		{`{"order_id":true}`, "/order_id", "", "expected a string or an integer"},
		{`{"amount":1}`, "/order_id", "", `property "order_id" is missing from the payload`},
		{`{"order":"o-1"}`, "/order/id", "", "no object there"},
	} {
		got, err := correlationID([]byte(c.payload), c.pointer)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s at %s: %q, %v; want an error saying %q", c.payload, c.pointer, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s at %s: %q, %v; want %q", c.payload, c.pointer, got, err, c.want)
		}
	}
}
