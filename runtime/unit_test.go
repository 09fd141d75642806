package runtime

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"amqp://app:hunter2@rabbit-1:5672/vh": "amqp://app:xxxxx@rabbit-1:5672/vh",
		"amqps://rabbit-1/":                   "amqps://rabbit-1/",
		"amqp://app:hunter2@[::1:5672":        "<unparseable URL>",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
	err := redactErr(fmt.Errorf("dial: %w", errors.New("bad URL amqp://app:p%40ss@host")), secretsOf([]string{"amqp://app:p%40ss@host/"}))
	if strings.Contains(err.Error(), "p%40ss") || strings.Contains(err.Error(), "p@ss") {
		t.Errorf("secret left in %q", err)
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
