package secret

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"amqp://guest:guest@127.0.0.1:5672/", "amqp://guest:xxxxx@127.0.0.1:5672/"},
		{"amqp://probe:Xy7/Kq9z@127.0.0.1:5672/", "amqp://probe:xxxxx@127.0.0.1:5672/"},
		{"amqp://u:a?b#c@h/", "amqp://u:xxxxx@h/"},
		{"amqp://u:p@ss@h:5672/vh", "amqp://u:xxxxx@h:5672/vh"},
		{"amqp://u:100%sure@h/", "amqp://u:xxxxx@h/"},
		{"amqp://u:p%40w@h/", "amqp://u:xxxxx@h/"},
		{"amqps://u:pw@[::1]:5671/", "amqps://u:xxxxx@[::1]:5671/"},
		{"amqp://u:pw@[fe80::1%25eth0]:5672/", "amqp://u:xxxxx@[fe80::1%25eth0]:5672/"},
		{"amqp://u:@h/", "amqp://u:xxxxx@h/"},
		{"amqp://user@h/", "amqp://user@h/"},
		{"amqp://h:5672/", "amqp://h:5672/"},
		{"u:pw@h", "u:xxxxx@h"},
		{"", ""},
	} {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTextRedactsEveryURLAndNothingElse(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// The user name and other words that equal a short password stay.
		{`dial amqp://guest:guest@h:5672/: guest refused`, `dial amqp://guest:xxxxx@h:5672/: guest refused`},
		{`amqp://a:a@h/ a aa`, `amqp://a:xxxxx@h/ a aa`},
		// net/url's own error quotes the URL.
		{`parse "amqp://probe:Xy7/Kq9z@127.0.0.1:5672/": invalid port`, `parse "amqp://probe:xxxxx@127.0.0.1:5672/": invalid port`},
		// Several URLs, joined with and without separators.
		{"amqp://u:one@h1/\namqp://u:two@h2/", "amqp://u:xxxxx@h1/\namqp://u:xxxxx@h2/"},
		{"amqp://u:one@h1/,amqp://u:two@h2/", "amqp://u:xxxxx@h1/,amqp://u:xxxxx@h2/"},
		{"postgres://app:pg-pw@db:5432/x?sslmode=disable failed", "postgres://app:xxxxx@db:5432/x?sslmode=disable failed"},
		{"<amqps://u:p@[::1]:5671/>", "<amqps://u:xxxxx@[::1]:5671/>"},
		{"no URL here: a:b@c", "no URL here: a:b@c"},
		{"http://example.com/a@b is fine", "http://example.com/a@b is fine"},
		// PostgreSQL's key/value form, quoted or not, and a URL's query.
		{"--dsn host=127.0.0.1 user=postgres password=Sup3rS3cret dbname=x: expected", "--dsn host=127.0.0.1 user=postgres password=xxxxx dbname=x: expected"},
		{`host=db PASSWORD='a b\' c' dbname=x`, `host=db PASSWORD=xxxxx dbname=x`},
		{"postgres://db/x?sslmode=disable&password=pw2 refused", "postgres://db/x?sslmode=disable&password=xxxxx refused"},
		{"amqp://u:pw@h/?password=pw3", "amqp://u:xxxxx@h/?password=xxxxx"},
		{"oldpassword=kept password= empty", "oldpassword=kept password= empty"},
	} {
		if got := Text(tc.in); got != tc.want {
			t.Errorf("Text(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestErrorKeepsTheChain(t *testing.T) {
	err := Error(fmt.Errorf("dial amqp://u:hunter2@h/: %w", fs.ErrNotExist))
	if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "u:xxxxx@h") {
		t.Errorf("Error() = %q", err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("errors.Is does not see through the redaction")
	}
	if Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
	if Error(err) != err {
		t.Error("redacting twice wraps twice")
	}
}

func TestCredentialName(t *testing.T) {
	for _, name := range []string{
		"authorization", "Authorization", "proxy-authorization", "cookie", "Set-Cookie", "password", "passwd", "secret",
		"token", "api-key", "apikey", "x-api-key", "X_API_KEY", "credentials", "x-auth-token", "db_password", "client-secret",
		"x-auth", "x-session-id", "access_token", "refresh-token", "x-amz-security-token", "pwd",
	} {
		if !CredentialName(name) {
			t.Errorf("CredentialName(%q) = false, want true", name)
		}
	}
	for _, name := range []string{
		"x-attempts", "x-failure", "x-ordering-key", "x-original-routing-key", "x-death", "x-author", "content-type",
		"x-request-id", "x-tenant", "x-fact-version", "x-discarded-by", "traceparent", "x-passenger",
	} {
		if CredentialName(name) {
			t.Errorf("CredentialName(%q) = true, want false", name)
		}
	}
}

type table map[string]any // as amqp.Table is

func TestHeaders(t *testing.T) {
	h := map[string]any{
		"Authorization": "Bearer t0k",
		"x-failure":     "dial amqp://u:pw@h/: refused",
		"x-attempts":    int64(3),
		"x-death":       []any{table{"queue": "q", "x-secret": "s3"}},
		"nested":        table{"cookie": "c=1", "kept": "k"},
		"raw":           []byte("b"),
	}
	got := Headers(h)
	want := map[string]any{
		"Authorization": Mask,
		"x-failure":     "dial amqp://u:" + Mask + "@h/: refused",
		"x-attempts":    int64(3),
		"x-death":       []any{map[string]any{"queue": "q", "x-secret": Mask}},
		"nested":        map[string]any{"cookie": Mask, "kept": "k"},
		"raw":           []byte("b"),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Headers = %v\nwant %v", got, want)
	}
	if h["Authorization"] != "Bearer t0k" || h["nested"].(table)["cookie"] != "c=1" {
		t.Errorf("Headers changed its argument: %v", h)
	}
	if Headers(nil) != nil {
		t.Error("Headers(nil) is not nil")
	}
}
