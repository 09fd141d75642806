package main

import (
	"reflect"
	"strings"
	"testing"
)

// --stream-port gives one port that every node shares, or one per --url,
// repeated or comma-separated.
func TestParseStreamPorts(t *testing.T) {
	for _, tc := range []struct {
		raw  []string
		urls int
		want streamPorts
	}{
		{nil, 3, streamPorts{}},
		{[]string{"5591"}, 1, streamPorts{shared: 5591}},
		{[]string{"5591"}, 3, streamPorts{shared: 5591}},
		{[]string{"5591", " 5592", "5593 "}, 3, streamPorts{each: []int{5591, 5592, 5593}}},
	} {
		got, err := parseStreamPorts(tc.raw, tc.urls, "--url")
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q for %d URLs: %+v, %v; want %+v", tc.raw, tc.urls, got, err, tc.want)
		}
	}
}

// A port that is not one, or a count that is neither one nor one per URL,
// is a usage error naming where the ports and the URLs came from; nothing
// is dialled.
func TestStreamPortErrors(t *testing.T) {
	dir := t.TempDir()
	const u1, u2, u3 = "amqp://guest:guest@127.0.0.1:1/", "amqp://guest:guest@127.0.0.1:2/", "amqp://guest:guest@127.0.0.1:3/"
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"status", "--url", u1, "--url", u2, "--url", u3, "--stream-port", "5591,5592"},
			"warren status: --stream-port: 2 ports for 3 broker URLs (--url): expected one port that every node shares, or one per URL in the same order\n"},
		{nil, []string{"status", "--url", u1, "--url", u2, "--stream-port", "5591", "--stream-port", "5592", "--stream-port", "5593"},
			"warren status: --stream-port: 3 ports for 2 broker URLs (--url): expected one port"},
		{map[string]string{"WARREN_AMQP_URL": u1}, []string{"status", "--stream-port", "5591,5592"},
			"warren status: --stream-port: 2 ports for 1 broker URL ($WARREN_AMQP_URL): expected one port"},
		{map[string]string{"WARREN_STREAM_PORT": "5591,5592,5593"}, []string{"status", "--url", u1, "--url", u2},
			"warren status: $WARREN_STREAM_PORT: 3 ports for 2 broker URLs (--url): expected one port"},
		{nil, []string{"status", "--url", u1, "--stream-port", "stream"},
			`warren status: --stream-port: "stream": expected a port number, 1 to 65535`},
		{nil, []string{"status", "--url", u1, "--url", u2, "--stream-port", "5591,70000"},
			`warren status: --stream-port: "70000": expected a port number, 1 to 65535`},
		{map[string]string{"WARREN_STREAM_PORT": "0"}, []string{"status", "--url", u1},
			`warren status: $WARREN_STREAM_PORT: "0": expected a port number, 1 to 65535`},
		{nil, []string{"replay", "--consumer", "history", "--from", "stream", "--offset-name", "r", "--url", u1, "--url", u2, "--stream-port", "1,2,3"},
			"warren replay: --stream-port: 3 ports for 2 broker URLs (--url): expected one port"},
		{nil, []string{"console", "--url", u1, "--url", u2, "--stream-port", "1,2,3"},
			"warren console: --stream-port: 3 ports for 2 broker URLs (--url): expected one port"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Setenv("WARREN_AMQP_URL", "")
			t.Setenv("WARREN_STREAM_PORT", "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, out, errOut := run(t, append(tc.args, dir)...)
			if code != 2 || out != "" || !strings.HasPrefix(errOut, tc.want) || strings.Contains(errOut, "guest:guest") {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and stderr starting %q", code, out, errOut, tc.want)
			}
		})
	}
}
