package streamproto

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
)

// A writer of a stream that does not exist is refused for good
// (ErrWriterRefused), in words that say why alone: whoever wraps the
// refusal says that the writer was refused, once.
func TestWriterOfAMissingStream(t *testing.T) {
	base, err := url.Parse(testenv.AMQPURL(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pw, _ := base.User.Password()
	vhost := strings.TrimPrefix(base.Path, "/")
	if vhost == "" {
		vhost = "/"
	}
	s, err := Open(ctx, Endpoint{Host: base.Hostname(), Port: testenv.StreamPort(t), User: base.User.Username(), Password: pw, VHost: vhost})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	name := testenv.Name("no-such-log")
	_, err = s.Writer(ctx, name)
	if !errors.Is(err, ErrWriterRefused) {
		t.Fatalf("a writer of a missing stream: %v, want ErrWriterRefused", err)
	}
	if want := fmt.Sprintf("write into stream %q: it does not exist", name); err.Error() != want {
		t.Fatalf("a writer of a missing stream: %q, want %q", err, want)
	}
	if wrapped := fmt.Errorf("%w: %w", errors.New("the broker refused the stream writer"), err); strings.Count(wrapped.Error(), "refused the stream writer") != 1 {
		t.Fatalf("wrapped once: %q", wrapped)
	}
}
