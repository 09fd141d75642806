package console

import (
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime/poison"
)

// A poisoned message's headers are shown with the credentials a producer
// put in them masked, in a nested table too; the other headers as they
// are.
func TestDescribeMasksCredentialHeaders(t *testing.T) {
	m := poison.Message{ID: "m1", Body: []byte(`{}`), Headers: amqp.Table{
		"authorization": "Bearer SECRET-TOKEN-123",
		"trace":         amqp.Table{"api-key": "SECRET-KEY-9", "span": "s1"},
		"x-attempts":    int64(3),
	}}
	out := describe(m)
	all := ""
	for _, h := range out.Headers {
		all += h.Name + "=" + h.Value + "\n"
	}
	for _, secret := range []string{"SECRET-TOKEN-123", "SECRET-KEY-9"} {
		if strings.Contains(all, secret) {
			t.Errorf("the headers shown hold %q:\n%s", secret, all)
		}
	}
	for _, kept := range []string{"x-attempts=3", "s1"} {
		if !strings.Contains(all, kept) {
			t.Errorf("the headers shown lack %q:\n%s", kept, all)
		}
	}
}

// A quorum queue's x-delivery-count, which counts the readings of the
// lane and grows with each, is not shown: the console shows a message's
// headers as warren replay --list --format json and warren poison export
// do.
func TestDescribeLeavesOutTheReadingsCount(t *testing.T) {
	m := poison.Message{ID: "m1", Body: []byte(`{}`), Headers: amqp.Table{"x-delivery-count": int64(4), "x-attempts": int64(3)}}
	out := describe(m)
	if len(out.Headers) != 1 || out.Headers[0] != (headerJSON{Name: "x-attempts", Value: "3"}) {
		t.Errorf("headers shown: %+v; want x-attempts alone", out.Headers)
	}
}
