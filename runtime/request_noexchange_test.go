package runtime

import (
	"context"
	"errors"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
)

// A request to a requests exchange that does not exist (nobody declared
// the responder's topology) cannot reach any responder queue: it fails at
// once with ErrNoResponder, as one the exchange returns does, and the
// requester asks again on a new channel.
func TestRequestWithoutRequestsExchange(t *testing.T) {
	b := newRequestBroker(t)
	conn := b.dial(Config{})
	r, err := NewRequester(conn, testenv.Name("requests-nobody-declared"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	for range 2 {
		_, err := Call[quoteReply](context.Background(), r, quoteRequest(b.key), quote{SKU: "a"})
		if !errors.Is(err, ErrNoResponder) || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("no requests exchange: err = %v, want ErrNoResponder", err)
		}
	}
}
