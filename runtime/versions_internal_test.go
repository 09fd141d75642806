package runtime

import (
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// A message whose x-fact-versions names no version (a publisher other
// than warren writing the header its own way) is read as it came, and is
// no other version's copy: reading the list must not assume a version in
// it.
func TestAVersionListNamingNoVersionIsReadAsItCame(t *testing.T) {
	for _, list := range []string{"", "junk", " , "} {
		in := inbound{d: amqp.Delivery{Headers: amqp.Table{HeaderFactVersions: list}, Body: []byte(`{"payload": 1}`)}}
		var r Route
		if got := r.readAs(in); string(got.d.Body) != string(in.d.Body) || got.d.Headers[HeaderFactVersion] != nil {
			t.Errorf("x-fact-versions %q: read as %s with headers %v; want the message as it came", list, got.d.Body, got.d.Headers)
		}
		if r.otherCopy(in.d.Headers, 1) {
			t.Errorf("x-fact-versions %q: called another version's copy", list)
		}
	}
}
