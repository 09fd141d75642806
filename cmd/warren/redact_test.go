package main

import (
	"net/url"
	"strings"
	"testing"
)

// The passwords of the URLs below; none of them may appear in any output.
var leakParts = []string{"Xy7", "Kq9z"}

// Every command that takes --url keeps passwords out of its output, for
// URLs that net/url refuses (unescaped / ? # @ %), IPv6 hosts, several
// URLs, a password the broker refuses and a host that does not answer;
// and each one names the URL it could not use, with the password masked.
// A URL that does not parse is a wrong command line (exit 2), found
// before anything is dialled; one the broker refuses or that does not
// answer, a failed operation (exit 1).
func TestBrokerCommandsNeverPrintPasswords(t *testing.T) {
	b := newBrokerCase(t, opsSchemas, opsPlaceholders...)
	u, err := url.Parse(b.url)
	if err != nil {
		t.Fatal(err)
	}
	host := u.Host
	urlCases := []struct {
		name string
		urls []string
		want string // in stderr
		code int
	}{
		{"unescaped slash", []string{"amqp://probe:Xy7/Kq9z@" + host + "/"}, "--url amqp://probe:xxxxx@" + host + "/: not a valid URL", 2},
		{"unescaped ? and #", []string{"amqp://probe:Xy7?Kq9z#@" + host + "/"}, "--url amqp://probe:xxxxx@" + host + "/: not a valid URL", 2},
		{"bad percent escape", []string{"amqp://probe:Xy7%zzKq9z@" + host + "/"}, "--url amqp://probe:xxxxx@" + host + "/: not a valid URL", 2},
		{"unescaped @", []string{"amqp://probe:Xy7@Kq9z@" + host + "/"}, "amqp://probe:xxxxx@" + host + "/", 1},
		{"refused password", []string{"amqp://guest:Xy7Kq9z@" + host + "/"}, "amqp://guest:xxxxx@" + host + "/", 1},
		{"unreachable IPv6 host", []string{"amqp://probe:Xy7Kq9z@[::1]:1/"}, "amqp://probe:xxxxx@[::1]:1/", 1},
		{"several URLs", []string{"amqp://probe:Xy7Kq9z@127.0.0.1:1/", "amqp://guest:Kq9z@" + host + "/"}, "amqp://guest:xxxxx@" + host + "/: ", 1}, // the last error is the second URL's
	}
	commands := [][]string{
		{"status"},
		{"declare"},
		{"replay", "--list", "--consumer", b.name("mailer")},
		{"replay", "--consumer", b.name("mailer")},
		{"console", "--read-only", "--listen", "127.0.0.1:0"},
	}
	for _, uc := range urlCases {
		for _, cmd := range commands {
			t.Run(uc.name+"/"+strings.Join(cmd, " "), func(t *testing.T) {
				args := []string{cmd[0], "--timeout", "500ms"}
				for _, raw := range uc.urls {
					args = append(args, "--url", raw)
				}
				args = append(append(args, cmd[1:]...), b.dir)
				code, stdout, stderr := run(t, args...)
				for _, p := range leakParts {
					if strings.Contains(stdout+stderr, p) {
						t.Fatalf("exit %d; the password leaked (%q):\nstdout %q\nstderr %q", code, p, stdout, stderr)
					}
				}
				if code != uc.code || !strings.Contains(stderr, uc.want) {
					t.Errorf("exit %d, stderr %q; want exit %d and %q named", code, stderr, uc.code, uc.want)
				}
			})
		}
	}
}
