package load

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// Manifest is warren.json as written: values the user left out stay zero
// (nil for the settings), so that the model can apply defaults and tools can
// tell "unset" from "set to the default".
type Manifest struct {
	Doc         *Document
	Package     string // Go package name, "" when absent
	Description string // free text, "" when absent
	// Compatibility is the mode warren diff judges changes to facts in
	// ("FULL", "BACKWARD_TRANSITIVE", ...); "" when absent, which means FULL.
	Compatibility string
	Exchanges     Exchanges // exchange names, "" when absent
	// DelayedFacts is "delayedFacts": declare the delay levels, so that
	// facts can be published later (topology.Spec.Delays).
	DelayedFacts bool
	Defaults     Settings // /defaults
	// AssertFormats are the formats payloads are checked against; every
	// other "format" is an annotation.
	AssertFormats []string
	Consumers     []*Consumer
	// Responders are the manifest's "responders", sorted by name.
	Responders []*Responder
	// Sagas are the manifest's "sagas", sorted by name (see sagas.go);
	// read once the schema files are, since each names its state's schema.
	Sagas []*Saga
	// Imports are the manifest's "imports", in order (see imports.go).
	Imports []*Import
	// MetaSchemas are the manifest's "metaSchemas", sorted by URL (see
	// metaschema.go).
	MetaSchemas []*MetaSchema
	// Versions are the manifest's "versions", sorted by routing key: the
	// versions of a fact the publisher publishes (see versions.go).
	Versions []*PublishVersions
	// Streams are the manifest's "streams", sorted by name (see
	// streams.go).
	Streams []*Stream
}

// Exchanges are the exchange names of the manifest's "exchanges".
type Exchanges struct {
	Events, Retry, Dead string
	Requests            string // the requests exchange
}

// Settings are the per-consumer knobs, either in /defaults or on a consumer.
// A nil field was not set.
type Settings struct {
	Prefetch    *int
	Concurrency *int
	MaxAttempts *int
	// MaxDeferrals is maxDeferrals: how often one fact may be deferred.
	MaxDeferrals *int
	Backoff      []time.Duration // nil when not set; never empty when set
	QueueType    string          // "quorum", "classic" or "" when not set
	// DeliveryLimit is deliveryLimit: quorum work queues dead-letter a
	// message delivered this often without an ack.
	DeliveryLimit *int
	// MaxLength is maxLength: the work queue's bound in messages and
	// bytes (0 when not given); a consumer's replaces /defaults' whole.
	MaxLength MaxLength
	// MaxPriority is maxPriority: the classic work queue's x-max-priority
	// (0 when not given), on consumers only.
	MaxPriority int
}

// MaxLength bounds a work queue; a full queue rejects publishes.
type MaxLength struct {
	Messages int
	Bytes    int64
}

// Consumer is one entry of the manifest's "consumers", sorted by name.
type Consumer struct {
	Name        string   // the key: names the work queue
	Pointer     string   // JSON pointer to the entry in warren.json
	Description string   // "" when absent
	Bindings    []string // topic patterns, as written
	Settings    Settings // overrides of /defaults
	// Ordered is the consumer's ordering: "ordered", "shards", "onPoison".
	Ordered OrderedSettings
	// Batch is the consumer's "batch": its handler takes facts in batches.
	Batch BatchSettings
	// Versions are the consumer's "versions", sorted by routing key: the
	// facts whose handler reads a version older than the newest.
	Versions []ConsumerVersion
	// Stream is the stream the consumer reads ("stream"), "" for a
	// consumer of a queue; Start is where it reads from the first time.
	Stream string
	Start  StreamStart
}

// VersionOf returns the version of fact key the consumer reads, 0 for the
// newest.
func (c *Consumer) VersionOf(key string) int {
	for _, v := range c.Versions {
		if v.Fact == key {
			return v.Version
		}
	}
	return 0
}

// BindingPointer returns the JSON pointer of the i-th binding, for errors.
func (c *Consumer) BindingPointer(i int) string {
	return AppendIndex(Append(c.Pointer, "bindings"), i)
}

// readManifest turns root, the manifest of doc or what of it could be read
// around the values its meta-schema rejected (see readAround), into a
// Manifest. root satisfies the meta-schema, so types are guaranteed;
// durations still need parsing, and one that does not parse is reported
// and left unset, so that the checks after the loader pass over it.
func readManifest(doc *Document, root map[string]any, errs *ErrorList) *Manifest {
	m := &Manifest{Doc: doc}
	m.Package, _ = root["package"].(string)
	m.Description, _ = root["description"].(string)
	m.Compatibility, _ = root["compatibility"].(string)
	m.DelayedFacts, _ = root["delayedFacts"].(bool)
	if ex, ok := root["exchanges"].(map[string]any); ok {
		m.Exchanges.Events, _ = ex["events"].(string)
		m.Exchanges.Retry, _ = ex["retry"].(string)
		m.Exchanges.Dead, _ = ex["dead"].(string)
		m.Exchanges.Requests, _ = ex["requests"].(string)
	}
	if formats, ok := root["assertFormats"].([]any); ok {
		for _, f := range formats {
			m.AssertFormats = append(m.AssertFormats, f.(string))
		}
		slices.Sort(m.AssertFormats)
	}
	if d, ok := root["defaults"].(map[string]any); ok {
		m.Defaults = readSettings(doc, "/defaults", d, errs)
	}
	consumers, _ := root["consumers"].(map[string]any)
	for _, name := range SortedKeys(consumers) {
		obj := consumers[name].(map[string]any)
		c := &Consumer{Name: name, Pointer: Pointer("consumers", name)}
		c.Description, _ = obj["description"].(string)
		for _, b := range obj["bindings"].([]any) {
			c.Bindings = append(c.Bindings, b.(string))
		}
		c.Settings = readSettings(doc, c.Pointer, obj, errs)
		c.Ordered = readOrderedSettings(c.Pointer, obj)
		c.Batch = readBatchSettings(doc, c.Pointer, obj, errs)
		c.Versions = readConsumerVersions(c.Pointer, obj)
		c.Stream, c.Start = readStreamConsumer(doc, c.Pointer, obj, errs)
		m.Consumers = append(m.Consumers, c)
	}
	m.Streams = readStreams(doc, root, errs)
	m.Responders = readResponders(doc, root, errs)
	m.Imports = readImports(doc, root, errs)
	m.MetaSchemas = readMetaSchemas(doc, root, errs)
	m.Versions = readPublishVersions(root)
	return m
}

func readSettings(doc *Document, pointer string, obj map[string]any, errs *ErrorList) Settings {
	var s Settings
	intAt := func(key string) *int {
		n, ok := obj[key].(json.Number)
		if !ok {
			return nil
		}
		i, err := strconv.Atoi(n.String())
		if err != nil {
			errs.Add(doc.Errorf(Append(pointer, key), "expected an integer, got %s", n))
			return nil
		}
		return &i
	}
	s.Prefetch = intAt("prefetch")
	s.Concurrency = intAt("concurrency")
	s.MaxAttempts = intAt("maxAttempts")
	s.MaxDeferrals = intAt("maxDeferrals")
	s.DeliveryLimit = intAt("deliveryLimit")
	s.QueueType, _ = obj["queueType"].(string)
	if p := intAt("maxPriority"); p != nil {
		s.MaxPriority = *p
	}
	if ml, ok := obj["maxLength"].(map[string]any); ok {
		// The meta-schema bounds both well inside int range.
		if n, ok := ml["messages"].(json.Number); ok {
			v, _ := n.Int64()
			s.MaxLength.Messages = int(v)
		}
		if n, ok := ml["bytes"].(json.Number); ok {
			s.MaxLength.Bytes, _ = n.Int64()
		}
	}
	if ladder, ok := obj["backoff"].([]any); ok {
		s.Backoff = make([]time.Duration, 0, len(ladder))
		for i, v := range ladder {
			p := AppendIndex(Append(pointer, "backoff"), i)
			d, err := time.ParseDuration(v.(string))
			switch {
			case err != nil:
				// Delays become queue TTLs, which the broker counts in whole milliseconds.
				errs.Add(doc.Errorf(p, "%s", badDuration(v, "4s", time.Millisecond)))
			case d < time.Millisecond || d%time.Millisecond != 0:
				errs.Add(doc.Errorf(p, "expected a whole number of milliseconds of at least 1ms, got %s", describe(v)))
			default:
				s.Backoff = append(s.Backoff, d)
			}
		}
		if len(s.Backoff) < len(ladder) {
			// Reported: read as no ladder rather than a shorter one, which
			// the checks that follow the loader would find too short.
			s.Backoff = nil
		}
	}
	return s
}
