package runtime

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func TestConfigValidateKeepsPasswordsOut(t *testing.T) {
	for _, raw := range []string{
		"amqp://probe:Xy7/Kq9z@127.0.0.1:5672/", // net/url: invalid port ":Xy7" after host
		"amqp://probe:a?b#c@127.0.0.1:5672/",
		"amqp://probe:100%zz@127.0.0.1:5672/",
		"amqp://probe:[Xy7@::1:5672/",
		"amqp://probe:Xy7 Kq9z@127.0.0.1/",
		"amqp://probe:Xy7Kq9z@127.0.0.1:xyz/",
	} {
		err := (&Config{URLs: []string{raw}}).Validate()
		if err == nil {
			t.Errorf("Validate(%q) accepted it", raw)
			continue
		}
		if strings.Contains(err.Error(), "Xy7") || strings.Contains(err.Error(), "a?b") || strings.Contains(err.Error(), "zz") {
			t.Errorf("Validate(%q): the password leaked: %v", raw, err)
		}
		if !strings.Contains(err.Error(), "probe:xxxxx@") {
			t.Errorf("Validate(%q): %v does not name the (redacted) URL", raw, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	c := Config{URLs: []string{"http://u:topsecret@h/", "amqp://h/"}, ReconnectMin: time.Second, ReconnectMax: time.Millisecond}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), `URLs[0]`) || !strings.Contains(err.Error(), "ReconnectMin") || strings.Contains(err.Error(), "topsecret") {
		t.Errorf("Validate: %v", err)
	}
	if err := (&Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "at least one") {
		t.Errorf("Validate without URLs: %v", err)
	}
	if err := (&Config{URLs: []string{"amqp://a/", "amqp://b/"}, StreamPorts: []int{5591}}).Validate(); err == nil || !strings.Contains(err.Error(), "StreamPorts: 1 ports for 2 URLs") {
		t.Errorf("Validate with fewer StreamPorts than URLs: %v", err)
	}
}

// With several URLs, each broker's stream endpoint lists every broker's
// stream address, its own first, at the port StreamPorts gives it.
func TestStreamEndpointOfACluster(t *testing.T) {
	cfg := Config{URLs: []string{"amqp://u:p@h1:5681/v", "amqp://u:p@h2:5682/v", "amqp://u:p@h3:5683/v"}, StreamPorts: []int{5591, 5592, 5593}, StreamPort: 5552}
	ep, err := streamEndpointAt(1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Host != "h2" || ep.Port != 5592 || ep.VHost != "v" || !slices.Equal(ep.Cluster, []string{"h2:5592", "h3:5593", "h1:5591"}) {
		t.Errorf("endpoint of URLs[1]: %+v", ep)
	}
	cfg.StreamPorts = nil
	if ep, _ := streamEndpointAt(0, cfg); ep.Port != 5552 || !slices.Equal(ep.Cluster, []string{"h1:5552", "h2:5552", "h3:5552"}) {
		t.Errorf("endpoint without StreamPorts: %+v", ep)
	}
	if ep, _ := streamEndpointAt(0, Config{URLs: cfg.URLs[:1], StreamPort: 5552}); ep.Cluster != nil {
		t.Errorf("one URL gave a cluster: %+v", ep)
	}
}

func TestBackoffIsJitteredAndBounded(t *testing.T) {
	lo, hi := 100*time.Millisecond, 2*time.Second
	seen := map[time.Duration]bool{}
	for n := range 12 {
		ceiling := min(lo<<n, hi)
		for range 20 {
			d := backoff(n, lo, hi)
			if d < ceiling/2 || d > ceiling {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", n, d, ceiling/2, ceiling)
			}
			seen[d] = true
		}
	}
	if len(seen) < 50 {
		t.Errorf("only %d distinct delays in 240 draws: no jitter?", len(seen))
	}
}

func TestPermanent(t *testing.T) {
	base := errors.New("deleted")
	err := fmt.Errorf("handler: %w", Permanent(base))
	if !IsPermanent(err) || !errors.Is(err, base) || err.Error() != "handler: deleted" {
		t.Errorf("Permanent: %v, IsPermanent %v, Is %v", err, IsPermanent(err), errors.Is(err, base))
	}
	if Permanent(nil) != nil || IsPermanent(base) {
		t.Error("Permanent(nil) or a plain error counted as permanent")
	}
	p := &PanicError{Value: base}
	if !errors.Is(p, base) || IsPermanent(p) {
		t.Error("a panic with an error value must unwrap to it and stay transient")
	}
}

func TestFailureTextHidesPasswords(t *testing.T) {
	got := failureText(errors.New(`connect postgres://app:Kq9z@db:5432/x: refused; amqp://u:Xy7/Kq9z@h/`))
	if strings.Contains(got, "Kq9z") || strings.Contains(got, "Xy7") || !strings.Contains(got, "postgres://app:xxxxx@db:5432/x") {
		t.Errorf("x-failure %q", got)
	}
}

func TestChannelLossKeepsTheBrokersError(t *testing.T) {
	cc := &confirmChannel{deadErr: &amqp.Error{Code: amqp.ConnectionForced, Reason: "shutdown"}}
	err := cc.lostError()
	var ae *amqp.Error
	if !errors.Is(err, errChannelLost) || !errors.As(err, &ae) || ae.Code != amqp.ConnectionForced {
		t.Errorf("lostError() = %v: want errChannelLost and the *amqp.Error both reachable", err)
	}
}
