package console

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/warrenbus/warren/runtime/topology"
)

// The catalogue keeps its own anchors and tables, turns the Mermaid
// diagram into the console's drawing, and drops any other raw HTML, so a
// script in the Markdown cannot reach the page.
func TestCatalogueDropsRawHTML(t *testing.T) {
	md := "# `shop`: event catalogue\n\n" +
		"```mermaid\nflowchart LR\n  a --> b\n```\n\n" +
		"<a id=\"fact-order.placed\"></a>\n\n" +
		"### `order.placed`\n\n" +
		"| Property | Type |\n|---|---|\n| `id` | `string` |\n\n" +
		"<script>window.__xss=1</script>\n\n" +
		"An order \"><img src=x onerror=alert(1)> was placed <b>now</b>.\n\n" +
		"```\n<script>not code</script>\n```\n"
	html, err := renderCatalogue([]byte(md))
	if err != nil {
		t.Fatal(err)
	}
	got := string(html)
	for _, want := range []string{
		`<a id="fact-order.placed"></a>`,
		`<img class="topology" src="api/topology.svg"`,
		`<td><code>id</code></td>`,
		`&lt;script&gt;not code&lt;/script&gt;`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("catalogue lacks %s:\n%s", want, got)
		}
	}
	for _, bad := range []string{"<script", "onerror=alert", "<b>", "flowchart"} {
		if strings.Contains(got, bad) {
			t.Errorf("catalogue holds %s:\n%s", bad, got)
		}
	}
}

// The topology drawing is well-formed SVG naming every queue and the
// bindings, with no script and nothing from elsewhere.
func TestTopologyDrawing(t *testing.T) {
	top, err := topology.Build(topology.Spec{Consumers: []topology.ConsumerSpec{
		{Name: "mailer", Bindings: []string{"order.placed", "order.cancelled"}, Backoff: []time.Duration{time.Second, 5 * time.Second}},
		{Name: "indexer", Bindings: []string{"item.#"}, MaxAttempts: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	svg := drawTopology(top)
	all := svgText(t, svg)
	for _, want := range []string{"app.events", "mailer", "mailer.poison", "mailer.retry.*", "delay queues 1s, 5s", "order.placed, order.cancelled", "indexer.poison", "retry via app.retry", "give up via app.dead"} {
		if !strings.Contains(all, want) {
			t.Errorf("drawing lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "delay levels") {
		t.Error("a topology without delayed facts is drawn with delay levels")
	}
	if strings.Contains(all, "indexer.retry") {
		t.Error("a consumer without retries is drawn with delay queues")
	}
	if bytes.Contains(svg, []byte("<script")) || bytes.Contains(svg, []byte("href")) {
		t.Errorf("drawing holds a script or a link:\n%s", svg)
	}
}

// With delayed facts the drawing has a lane for the delay levels, their
// delivery exchange and the unroutable lane.
func TestTopologyDrawingWithDelayLevels(t *testing.T) {
	top, err := topology.Build(topology.Spec{Delays: true, Consumers: []topology.ConsumerSpec{
		{Name: "mailer", Bindings: []string{"order.placed"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	all := svgText(t, drawTopology(top))
	for _, want := range []string{"36 delay levels (TTL queues)", top.Delay.Exchange, top.Delay.Deliver, top.Delay.Unroutable, "when due", "no consumer bound", "mailer.poison"} {
		if !strings.Contains(all, want) {
			t.Errorf("drawing lacks %q:\n%s", want, all)
		}
	}
}

// svgText checks that svg is well-formed and returns its text, a line per
// text node.
func svgText(t *testing.T, svg []byte) string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var texts []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, svg)
		}
		if cd, ok := tok.(xml.CharData); ok {
			texts = append(texts, string(cd))
		}
	}
	return strings.Join(texts, "\n")
}
