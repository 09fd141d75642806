package docgen_test

import (
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

// streamSchemas has a plain stream with every retention setting, a super
// stream, a stream published directly, a consumer of each and a plain
// queue consumer beside them.
var streamSchemas = fstest.MapFS{
	"warren.json": {Data: []byte(`{
  "streams": {
    "log": {"description": "Every order fact.", "bindings": ["order.#"], "maxAge": "168h", "maxBytes": 20000000000, "segmentBytes": 100000000},
    "byid": {"bindings": ["order.#"], "partitions": 2},
    "counts": {"bindings": ["stock.#"], "maxAge": "24h", "publish": "direct"}
  },
  "consumers": {
    "history": {"bindings": ["order.#"], "stream": "log", "start": "first"},
    "proj": {"bindings": ["order.#"], "stream": "byid"},
    "stock": {"bindings": ["stock.#"], "stream": "counts"},
    "mailer": {"bindings": ["order.placed"]}
  }
}`)},
	"placed.json":  {Data: []byte(`{"x-routing-key": "order.placed", "x-ordering-key": "/id", "type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}`)},
	"counted.json": {Data: []byte(`{"x-routing-key": "stock.counted", "type": "object"}`)},
}

// The page lists the streams with their retention, partitions and how
// facts reach them, and describes each stream consumer as reading its
// stream, its work queue receiving only its retries.
func TestCatalogueCoversStreams(t *testing.T) {
	page := catalogueOf(t, streamSchemas)
	for _, want := range []string{
		"\n## Streams\n",
		"| [`byid`](#stream-byid) | super stream, 2 partitions | `order.#` | none | through `app.events` | [proj](#consumer-proj) |\n",
		"| [`counts`](#stream-counts) | stream | `stock.#` | 24h | directly, over the stream protocol | [stock](#consumer-stock) |\n",
		"| [`log`](#stream-log) | stream | `order.#` | 168h, 20 GB, segments of 100 MB | through `app.events` | [history](#consumer-history) |\n",
		"<a id=\"stream-log\"></a>\n\n### `log`\n\nEvery order fact.\n",
		"- Retention: facts older than 168h are dropped (`x-max-age`), and the oldest segments are dropped (`x-max-length-bytes`) once it holds more than 20000000000 bytes (20 GB); segment files (`x-stream-max-segment-size-bytes`, the unit retention drops) of 100000000 bytes (100 MB)\n",
		"- Retention, per partition: none: facts are kept whatever their age and size\n",
		"onto one of 2 partition streams: `byid-0`, `byid-1`;",
		"- Published directly: the generated publish calls write [`stock.counted`](#fact-stock.counted) straight into the stream over the stream protocol",
		"- Kept in stream: [`counts`](#stream-counts) (written into it directly by the generated publish calls, not through `app.events`)\n",
		"- Kept in streams: [`byid`](#stream-byid), [`log`](#stream-log)\n",
		"- Reads stream [`log`](#stream-log): the first time from the oldest fact the stream still holds (start `first`), then on from the offset stored on the broker under the consumer's name\n",
		"- Work queue: `history` (quorum, delivery limit 10), bound to nothing: it receives only the consumer's own retries and deferrals; poison queue: `history.poison`\n",
		"- Reads super stream [`byid`](#stream-byid) as a member of the consumer group `proj`: the broker makes one running instance active on each of its 2 partitions",
		"the first time from the first fact written after the consumer first starts (start `next`)",
		// The plain queue consumer is as it always was.
		"- Bindings: `order.placed`\n- Work queue: `mailer` (quorum, delivery limit 10); poison queue: `mailer.poison`\n",
		// The diagram: streams bound from the events exchange, the direct
		// write, each stream consumer reading its stream.
		"  s0[[\"byid<br>super stream, 2 partitions<br>byid-0, byid-1\"]]\n  events -->|\"order.#35;\"| s0\n",
		"  s1[[\"counts<br>stream\"]]\n  events -->|\"stock.#35;\"| s1\n",
		"  s2[[\"log<br>stream\"]]\n  events -->|\"order.#35;\"| s2\n",
		"  publisher -->|\"the other facts\"| events\n",
		"  publisher ==>|\"stock.counted: written directly\"| s1\n",
		"  s2 -->|\"from first, then its offset\"| c0\n  q0 -.->|\"retries, deferrals\"| c0\n",
		"  s0 -->|\"from next, one active per partition\"| c2\n",
		"  s1 -->|\"from next, then its offset\"| c3\n",
		"  r0 -.->|\"after the delay\"| q0\n",
		"  events -->|\"order.placed\"| q1\n  q1 --> c1\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Only the plain consumer's work queue is bound to the events
	// exchange; a stream consumer's is bound to nothing.
	bound := regexp.MustCompile(`(?m)^  events -->\|"[^"]*"\| (q\d+)$`).FindAllStringSubmatch(page, -1)
	if len(bound) != 1 || bound[0][1] != "q1" {
		t.Errorf("work queues bound to the events exchange: %v, want only the plain consumer's q1", bound)
	}
	if t.Failed() {
		t.Logf("the page:\n%s", page)
	}
}

// A directory without streams shows none of it.
func TestCatalogueWithoutStreams(t *testing.T) {
	page := catalogueOf(t, fstest.MapFS{
		"warren.json": {Data: []byte(`{"consumers": {"mailer": {"bindings": ["order.*"]}}}`)},
		"placed.json": {Data: []byte(`{"x-routing-key": "order.placed", "type": "object"}`)},
	})
	for _, unwanted := range []string{"Stream", "stream", "[[", "publisher"} {
		if strings.Contains(page, unwanted) {
			t.Errorf("the page has %q:\n%s", unwanted, page)
		}
	}
}
