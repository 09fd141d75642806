// Package testenv gives tests the real RabbitMQ and PostgreSQL they run
// against, and names that no other test uses.
//
// A service that cannot be reached skips the test on a developer machine
// and fails it in CI (CI=true), where a skipped integration test would hide
// a broken pipeline.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// Default addresses of the services on a development machine.
const (
	DefaultAMQPURL = "amqp://guest:guest@127.0.0.1:5672/"
	DefaultPGDSN   = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
)

// AMQPURL returns WARREN_AMQP_URL (or the default) once the broker answers
// on its TCP port.
func AMQPURL(t testing.TB) string {
	t.Helper()
	u := env("WARREN_AMQP_URL", DefaultAMQPURL)
	require(t, "RabbitMQ", u)
	return u
}

// PGDSN returns WARREN_PG_DSN (or the default) once PostgreSQL answers on
// its TCP port.
func PGDSN(t testing.TB) string {
	t.Helper()
	dsn := env("WARREN_PG_DSN", DefaultPGDSN)
	require(t, "PostgreSQL", dsn)
	return dsn
}

// Disruptive skips the test unless WARREN_DISRUPTIVE=1. Tests that restart
// the broker or cut its connections disturb every other broker test running
// at the same moment, so they run on their own, serially, after the main
// suite: the Makefile's test target finds them by their name, which must
// start with TestDisruptive.
func Disruptive(t testing.TB) {
	t.Helper()
	if os.Getenv("WARREN_DISRUPTIVE") != "1" {
		t.Skip("disrupts the shared broker; runs with WARREN_DISRUPTIVE=1 (make test does)")
	}
}

// Name returns prefix followed by a random suffix, for exchanges, queues
// and tables that belong to one test alone.
func Name(prefix string) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return prefix + "-" + hex.EncodeToString(b[:])
}

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func require(t testing.TB, service, rawURL string) {
	t.Helper()
	addr, err := hostPort(rawURL)
	if err != nil {
		t.Fatalf("%s address: %v", service, err)
	}
	conn, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err == nil {
		conn.Close()
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not reachable at %s (CI=true, so this fails rather than skips): %v", service, addr, err)
	}
	t.Skipf("%s is not reachable at %s: %v", service, addr, err)
}

func hostPort(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	host := u.Host
	if host == "" {
		host = "127.0.0.1"
	}
	if _, _, err := net.SplitHostPort(host); err != nil && strings.Contains(err.Error(), "missing port") {
		port := "5672"
		if strings.HasPrefix(u.Scheme, "postgres") {
			port = "5432"
		} else if u.Scheme == "amqps" {
			port = "5671"
		}
		host = net.JoinHostPort(host, port)
	}
	return host, nil
}
