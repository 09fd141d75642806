package streamproto

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/warrenbus/warren/internal/testenv"
)

// A password and a vhost with the characters a URL reserves reach the
// broker as they are, and a wrong password is never printed.
func TestOpenWithReservedCharacters(t *testing.T) {
	base, err := url.Parse(testenv.AMQPURL(t))
	if err != nil {
		t.Fatal(err)
	}
	port := testenv.StreamPort(t)
	admin := testenv.BrokerAdmin(t)
	user := testenv.Name("streamproto-user")
	const password = "p@ss/w%rd:x?#+ ü"
	vhost := testenv.Name("streamproto-v#1 +%/")
	admin.Run(t, "add_user", user, password)
	t.Cleanup(func() { admin.Run(t, "delete_user", user) })
	admin.Run(t, "add_vhost", vhost)
	t.Cleanup(func() { admin.Run(t, "delete_vhost", vhost) })
	admin.Run(t, "set_permissions", "-p", vhost, user, ".*", ".*", ".*")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ep := Endpoint{Host: base.Hostname(), Port: port, User: user, Password: password, VHost: vhost}
	s, err := Open(ctx, ep)
	if err != nil {
		t.Fatalf("open as a user whose password has reserved characters, in a vhost whose name has: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	ep.Password = password + "wrong"
	_, err = Open(ctx, ep)
	if err == nil {
		t.Fatal("opened with a wrong password")
	}
	for _, part := range []string{"ss/w", "w%rd", "rd:x", password, url.QueryEscape(password)} {
		if strings.Contains(err.Error(), part) {
			t.Errorf("the error shows the password (%q): %v", part, err)
		}
	}
}

// A port where nothing listens is named with the plugin that would.
func TestOpenAtARefusedPortNamesThePlugin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Open(ctx, Endpoint{Host: "127.0.0.1", Port: 1, User: "guest", Password: "guest", VHost: "/"})
	if err == nil || !strings.Contains(err.Error(), "rabbitmq-plugins enable rabbitmq_stream") || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("open at a port where nothing listens: %v; want the plugin named and ECONNREFUSED kept", err)
	}
}
