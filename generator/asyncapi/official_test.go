package asyncapi_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/warrenbus/warren/generator/model"
)

// nodeProject is the npm project with the AsyncAPI initiative's tools
// (@asyncapi/specs, @asyncapi/parser) pinned in package-lock.json.
const nodeProject = "testdata/node"

// needNode returns the path of node with the tools installed, or skips
// (locally) or fails (CI=true) when they are not there.
func needNode(t *testing.T) string {
	t.Helper()
	missing := func(why string) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (CI=true, so this fails rather than skips)", why)
		}
		t.Skip(why)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed: the AsyncAPI tools run on it")
	}
	if _, err := os.Stat(filepath.Join(nodeProject, "node_modules", "@asyncapi", "parser")); err != nil {
		missing("the AsyncAPI tools are not installed: run npm ci in generator/asyncapi/" + nodeProject + " (.ci/run does)")
	}
	return node
}

type summary struct {
	Version  string
	Title    string
	Channels []struct {
		ID, Address string
		Messages    []string
		AMQP        struct {
			Is       string
			Exchange struct {
				Name, Type string
				Durable    bool
			}
			Queue struct {
				Name    string
				Durable bool
			}
			ExchangeType string `json:"x-warren-exchange-type"`
		}
	}
	Operations []struct {
		ID, Action string
		Channels   []string
		Messages   []string
	}
	Messages []struct {
		ID          string
		PayloadType string
	}
	Warnings []string
}

// Every document warren writes validates against the official AsyncAPI
// 3.0.0 JSON Schema and is accepted by the official parser, which then
// sees the channels, operations and messages the model has.
func TestOfficialAsyncAPITools(t *testing.T) {
	node := needNode(t)
	dir := t.TempDir()
	var files []string
	models := map[string]string{} // document file -> schema directory
	for i, in := range inputs(t) {
		_, doc := build(t, in)
		file := filepath.Join(dir, strconv.Itoa(i)+"-"+filepath.Base(filepath.Dir(in))+".json")
		if err := os.WriteFile(file, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, file)
		models[file] = in
	}
	cmd := exec.Command(node, append([]string{"validate.mjs"}, files...)...)
	cmd.Dir = nodeProject
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the AsyncAPI tools reject a document: %v\n%s", err, stderr.String())
	}
	var got map[string]summary
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("validate.mjs printed no summary: %v\n%s", err, stdout.String())
	}
	for _, file := range files {
		s, ok := got[file]
		if !ok {
			t.Errorf("%s: no summary", file)
			continue
		}
		m, _ := build(t, models[file])
		if s.Version != "3.0.0" || s.Title != m.Package && s.Title != m.Exchanges.Events {
			t.Errorf("%s: version %q, title %q", models[file], s.Version, s.Title)
		}
		var want, have []string
		streams := streamsOf(m)
		for _, f := range m.Facts {
			want = append(want, "channel "+f.RoutingKey+" topic "+m.Exchanges.Events+" message "+f.GoName)
			want = append(want, "send "+f.RoutingKey+" "+f.GoName)
			for _, c := range m.Consumers {
				// A consumer that reads an older version receives from the
				// fact's one channel too; a stream consumer from its stream's.
				if slices.ContainsFunc(c.Facts, func(cf *model.Fact) bool { return cf.Latest() == f }) {
					if s, ok := streams[c.Topology.Stream]; ok {
						want = append(want, "receive "+s.Name+" "+f.GoName)
						continue
					}
					want = append(want, "receive "+f.RoutingKey+" "+f.GoName)
				}
			}
		}
		for _, s := range streams {
			for _, f := range s.Facts {
				if s.Super { // its x-consistent-hash exchange
					want = append(want, "channel "+s.Name+" x-consistent-hash "+s.Name+" message "+f.GoName)
				} else {
					want = append(want, "channel "+s.Name+" queue "+s.Name+" message "+f.GoName)
				}
			}
		}
		for _, r := range m.Requests {
			want = append(want,
				"channel "+r.Key+" direct "+r.Responder.Topology.Exchange+" message "+r.GoName,
				"channel  "+" message reply_"+r.GoName,
				"send "+r.Key+" "+r.GoName, "receive "+r.Key+" "+r.GoName)
		}
		for _, c := range s.Channels {
			if c.Address == "" { // a reply channel, no binding
				for _, msg := range c.Messages {
					have = append(have, "channel  "+" message "+msg)
				}
				continue
			}
			if c.AMQP.Is == "queue" { // a stream
				if !c.AMQP.Queue.Durable {
					t.Errorf("%s: channel %s: AMQP binding %+v", models[file], c.ID, c.AMQP)
				}
				for _, msg := range c.Messages {
					have = append(have, "channel "+c.Address+" queue "+c.AMQP.Queue.Name+" message "+msg)
				}
				continue
			}
			if !c.AMQP.Exchange.Durable || c.AMQP.Is != "routingKey" {
				t.Errorf("%s: channel %s: AMQP binding %+v", models[file], c.ID, c.AMQP)
			}
			kind := c.AMQP.Exchange.Type
			if kind == "" { // a super stream's exchange, of a type the binding has no value for
				kind = c.AMQP.ExchangeType
			}
			for _, msg := range c.Messages {
				have = append(have, "channel "+c.Address+" "+kind+" "+c.AMQP.Exchange.Name+" message "+msg)
			}
		}
		for _, op := range s.Operations {
			for _, ch := range op.Channels {
				for _, msg := range op.Messages {
					have = append(have, op.Action+" "+ch+" "+msg)
				}
			}
		}
		slices.Sort(want)
		slices.Sort(have)
		if diff := cmp.Diff(want, have); diff != "" {
			t.Errorf("%s: what the parser sees (-want +got):\n%s", models[file], diff)
		}
		for _, msg := range s.Messages {
			if msg.PayloadType != "object" && !strings.HasPrefix(msg.ID, "reply_") { // a reply is a oneOf: the reply's envelope or the error's

				t.Errorf("%s: message %s: payload type %q, want the envelope object", models[file], msg.ID, msg.PayloadType)
			}
		}
		if len(s.Warnings) > 0 {
			t.Errorf("%s: the parser warns:\n%q", models[file], s.Warnings)
		}
	}
}
