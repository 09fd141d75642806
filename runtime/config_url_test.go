package runtime

import (
	"strings"
	"testing"

	"github.com/warrenbus/warren/internal/secret"
)

// A URL that cannot be dialled is told what is wrong with it, in the part
// that is wrong: the percent-encoding advice only when the user name or
// password does not parse, the port when the port is no number or out of
// range, the host, the vhost or a query parameter otherwise. No part of
// the URL is quoted, and the password never appears.
func TestCheckURLNamesThePartToFix(t *testing.T) {
	const (
		userinfo = "not a valid URL: the user name or password holds a character it must percent-encode, such as / ? # @ % : [ ] (RFC 3986 section 3.2.1; url.UserPassword encodes them)"
		port     = `not a valid URL: the port is not a number: expected a port from 1 to 65535 after the host's ":" (amqp 5672, amqps 5671), or no ":port" for the scheme's own`
		host     = "not a valid URL: the host is not a host name, an IPv4 address or an IPv6 address in brackets ([::1])"
	)
	for _, tc := range []struct{ raw, want string }{
		{"amqps://u:Kq9z@h:x/", port},
		{"amqp://u:Kq9z@h:56a2/vh", port},
		{"amqps://u:Kq9z@:x/", `not a valid URL: the port is not a number, and no host before it: expected a port from 1 to 65535 after the host's ":" (amqp 5672, amqps 5671), or no ":port" for the scheme's own`},
		// No "@": what follows the colon is a port, and the user is told
		// where a password goes.
		{"amqp://u:Kq9z", port + "; a user name and password come before the host, as user:password@"},
		{"amqp://u:Kq9z@h:0/", `port 0 is out of range: expected 1 to 65535 (amqp 5672, amqps 5671), or no ":port" for the scheme's own`},
		{"amqp://u:Kq9z@h:65536/", `port 65536 is out of range: expected 1 to 65535 (amqp 5672, amqps 5671), or no ":port" for the scheme's own`},
		{"amqp://u:Kq9z/x@h:5672/", userinfo},
		{"amqp://u:Kq9z?x#y@h:5672/", userinfo},
		{"amqp://u:Kq9z%zz@h:5672/", userinfo},
		{"amqp://u:[Kq9z@::1:5672/", userinfo},
		{"amqp://u:Kq9z@[::1:5672/", host},
		{"amqp://u:Kq9z@h^st:5672/", host},
		{"amqp://u:Kq9z@h:5672/100%", `not a valid URL: the vhost after the host holds a "%" that is no percent-encoding, or a control character: write "%" as %25 and "/" as %2f in it (the default vhost "/" is %2f, or nothing after the host's "/")`},
		{"://u:Kq9z@h/", "not a valid URL: expected amqp:// or amqps://, then user:password@, the host, :port and /vhost"},
		{"http://u:Kq9z@h/", `scheme "http", expected amqp or amqps`},
		{"amqp://u:Kq9z @h/", "white space in the URL: percent-encode it (%20)"},
		{"amqp://u:Kq9z@h/?heartbeat=ten", "query parameter heartbeat: expected whole seconds from 0 to 65535"},
		{"amqp://u:Kq9z@h/?channel_max=70000", "query parameter channel_max: expected a number of channels from 0 to 65535"},
		{"amqp://u:Kq9z@h/?connection_timeout=1s", "query parameter connection_timeout: expected whole milliseconds"},
	} {
		err := CheckURL(tc.raw)
		if err == nil {
			t.Errorf("CheckURL(%q) accepted it", tc.raw)
			continue
		}
		if got := err.Error(); got != tc.want {
			t.Errorf("CheckURL(%q):\n got %s\nwant %s", tc.raw, got, tc.want)
		}
		if strings.Contains(err.Error(), "Kq9z") {
			t.Errorf("CheckURL(%q): the password leaked: %v", tc.raw, err)
		}
		// Commands print errors through secret.Text: nothing in the
		// advice may read as a URL with a password to mask.
		if masked := secret.Text(err.Error()); masked != err.Error() {
			t.Errorf("CheckURL(%q): printed, the advice is masked: %s", tc.raw, masked)
		}
	}
	for _, raw := range []string{
		"amqp://guest:guest@127.0.0.1:5672/",
		"amqps://u:p%2Fq@h:5671/v?heartbeat=10&connection_timeout=5000&channel_max=100",
		"amqp://u:p@[::1]:5672/%2f",
		"amqp://h",
		"amqp://u:p@h:/",
	} {
		if err := CheckURL(raw); err != nil {
			t.Errorf("CheckURL(%q): %v, want it accepted", raw, err)
		}
	}
}
