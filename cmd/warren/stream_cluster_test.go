package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
	"github.com/warrenbus/warren/runtime"
)

// On a cluster whose nodes share a host, each with its own stream port,
// warren replay --from stream and warren status take every node's URL and
// its port in the same order, and reach the stream protocol of the node
// they connect to. It stops no node.
func TestClusterStreamPorts(t *testing.T) {
	cl := testenv.NewCluster(t)
	first := cl.Nodes[1].Name // not the first node, so that its port is not the first of the list
	urls, ports := cl.URLsFrom(first), cl.StreamPortsFrom(first)
	b, _ := streamCaseAt(t, urls, ports)
	history, log := b.name("history"), b.name("log")
	t.Setenv("WARREN_STREAM_PORT", "")
	var broker []string
	shown := make([]string, len(ports))
	for i, u := range urls {
		broker = append(broker, "--url", u)
		shown[i] = strconv.Itoa(ports[i])
	}
	withPorts := append(slices.Clone(broker), "--stream-port", strings.Join(shown, ","))
	cli := func(cmd string, args ...string) (int, string, string) {
		return run(t, append(append(append([]string{cmd}, withPorts...), args...), b.dir)...)
	}

	if code, out, errOut := cli("replay", "--consumer", history, "--from", "stream", "--offset-name", history+".try", "--offset", "1", "--limit", "2"); code != 0 {
		t.Fatalf("replay: exit %d\n%s\n%s", code, out, errOut)
	}
	readUnder(t, b, ports[0], history+".try", 2)
	var st statusJSON
	testenv.Eventually(t, "the replay's stored offset in status", func() bool {
		code, out, _ := cli("status", "--format", "json", "--offset-name", history+".try")
		st = statusJSON{}
		return code == 0 && json.Unmarshal([]byte(out), &st) == nil && len(st.Streams) == 2 &&
			st.Streams[1].Stored != nil && *st.Streams[1].Stored == 3
	})
	for i, name := range []string{history, history + ".try"} {
		if r := st.Streams[i]; r.Stream != log || r.OffsetName != name || r.Tail == nil || *r.Tail != 4 {
			t.Errorf("row %d: %+v, want %s on %s at tail 4", i, r, name, log)
		}
	}

	// Without the ports the CLI looks for the stream protocol at the
	// default port, which is none of the nodes' here.
	if !slices.Contains(ports, runtime.DefaultStreamPort) {
		code, out, errOut := run(t, append(append([]string{"status", "--timeout", "5s"}, broker...), b.dir)...)
		if code == 0 {
			t.Errorf("status without --stream-port: exit 0, want a failure to reach the stream protocol\n%s", out)
		}
		t.Logf("without --stream-port: exit %d: %s", code, errOut)
	}
}
