package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
)

// runningConsole is `warren console` running in-process, as a user runs it.
type runningConsole struct {
	page  string // the address it printed, without the fragment
	token string // "" when read-only
	out   []string
}

var consoleLine = regexp.MustCompile(`^warren console: (http://[^ #]+/)(?:#token=([0-9a-f]+))?`)

// startConsole runs warren console with args (before SCHEMA_DIR) on the
// broker at url, and stops it when the test ends.
func startConsole(t *testing.T, url, dir string, args ...string) *runningConsole {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr strings.Builder
	done := make(chan int, 1)
	argv := append([]string{"warren", "console", "--listen", "127.0.0.1:0", "--url", url}, args...)
	go func() {
		done <- Run(ctx, append(argv, dir), pw, &stderr)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("warren console exited %d: %s", code, stderr.String())
		}
	})
	lines := bufio.NewScanner(pr)
	c := &runningConsole{}
	for lines.Scan() {
		c.out = append(c.out, lines.Text())
		if m := consoleLine.FindStringSubmatch(lines.Text()); m != nil {
			c.page, c.token = m[1], m[2]
			break
		}
	}
	if c.page == "" {
		t.Fatalf("warren console printed no address: %q %s", c.out, stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	return c
}

func post(t *testing.T, url, token, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("X-Warren-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// warren console prints its address with a fresh token, serves the page,
// and accepts a change only with that token; --read-only prints no token
// and refuses changes. No password is printed.
func TestConsoleCommand(t *testing.T) {
	url := testenv.VHost(t, "console-cli")
	if code := Run(context.Background(), []string{"warren", "declare", "--url", url, "../../examples/catalogue/events"}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("declare exited %d", code)
	}
	c := startConsole(t, url, "../../examples/catalogue/events")
	if len(c.token) < 32 {
		t.Fatalf("no token printed: %q", c.out)
	}
	resp, err := http.Get(c.page)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %s", c.page, resp.Status)
	}
	replay := c.page + "api/consumers/order-mailer/replay"
	if got := post(t, replay, "", `{"ids":["x"]}`); got != http.StatusUnauthorized {
		t.Errorf("replay without the token: %d, want 401", got)
	}
	if got := post(t, replay, c.token, `{"ids":["x"]}`); got != http.StatusOK {
		t.Errorf("replay with the printed token: %d, want 200", got)
	}

	ro := startConsole(t, url, "../../examples/catalogue/events", "--read-only")
	if ro.token != "" || !strings.Contains(ro.out[0], "(read-only)") {
		t.Errorf("read-only console printed %q", ro.out)
	}
	if got := post(t, ro.page+"api/consumers/order-mailer/replay", c.token, `{"ids":["x"]}`); got != http.StatusForbidden {
		t.Errorf("replay on a read-only console: %d, want 403", got)
	}
	for _, line := range append(c.out, ro.out...) {
		if strings.Contains(line, "guest") {
			t.Errorf("printed the broker's credentials: %s", line)
		}
	}
}
