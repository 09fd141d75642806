package runtime

import (
	"bufio"
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A responder written with another client (php-amqplib), from the wire
// contract alone, answers warren's requests: replies, and a typed
// permanent error. Needs php-cli and php-amqplib (Debian packages).
func TestRequestInteropPHPResponder(t *testing.T) {
	php, err := exec.LookPath("php")
	if _, statErr := os.Stat("/usr/share/php/PhpAmqpLib/autoload.php"); err != nil || statErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("php-cli and php-amqplib are needed (apt-get install php-cli php-amqplib)")
		}
		t.Skip("php-cli and php-amqplib are not installed (apt-get install php-cli php-amqplib)")
	}
	b := newRequestBroker(t)
	u, err := url.Parse(b.url)
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	vhost := strings.TrimPrefix(u.Path, "/")
	if vhost == "" {
		vhost = "/"
	}
	vhost, _ = url.PathUnescape(vhost)
	port := u.Port()
	if port == "" {
		port = "5672"
	}
	cmd := exec.Command(php, "testdata/responder.php")
	cmd.Env = append(os.Environ(),
		"WARREN_HOST="+u.Hostname(), "WARREN_PORT="+port, "WARREN_USER="+u.User.Username(),
		"WARREN_PASSWORD="+password, "WARREN_VHOST="+vhost,
		"WARREN_QUEUE="+b.responder.Queue, "WARREN_ANSWER=2",
	)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("php responder did not start: %q, %v; stderr: %s", line, err, stderr.String())
	}

	r := b.requester(t, b.dial(Config{}))
	req := quoteRequest(b.key)
	rep, err := Call[quoteReply](context.Background(), r, req, quote{SKU: "a", N: 21})
	if err != nil || rep.N != 42 || rep.By != "php" {
		t.Fatalf("Call = %+v, %v; want n=42 by php (stderr: %s)", rep, err, stderr.String())
	}
	_, err = Call[quoteReply](context.Background(), r, req, quote{SKU: "refuse"})
	var re *ReplyError
	if !errors.As(err, &re) || !re.Permanent || re.Message != "php refuses refuse" {
		t.Fatalf("err = %v, want the php responder's permanent error", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("php responder: %v; stderr: %s", err, stderr.String())
	}
}
