package docgen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/generator/model"
	"github.com/warrenbus/warren/runtime/topology"
)

// streamView is one stream of the manifest as the page shows it: what it
// keeps, for how long, how facts reach it and who reads it. Names come
// from the built topology (a super stream's partitions as declared).
type streamView struct {
	Name, Anchor, Description string
	Exchange                  string   // the events exchange its bindings are on
	Bindings                  []string // topic patterns on the events exchange
	Facts                     []factRef
	// Partitions are a super stream's partition streams in order; nil for
	// a plain stream. HashHeader is the header its exchange hashes on.
	Partitions []string
	HashHeader string
	Retention  string // Markdown sentence
	Short      string // the retention for the summary table
	// Direct: "publish": "direct"; DirectFacts are the facts the
	// generated Publish writes straight into it.
	Direct      bool
	DirectFacts []factRef
	Readers     []consumerRef
}

type factRef struct{ RoutingKey, Anchor string }

// streamRef links a fact to a stream that keeps it; Direct when the
// fact is written into it directly.
type streamRef struct {
	Name, Anchor string
	Direct       bool
}

func streamAnchor(name string) string { return "stream-" + name }

// Kind names the stream's kind for the summary table.
func (v streamView) Kind() string {
	if len(v.Partitions) > 0 {
		return fmt.Sprintf("super stream, %d %s", len(v.Partitions), plural(len(v.Partitions), "partition", "partitions"))
	}
	return "stream"
}

// newStreams returns the manifest's streams, sorted by name, with what
// the topology declares for each.
func newStreams(m *model.Model, s *load.Schemas) []streamView {
	var out []streamView
	top := m.Topology
	supers := top.SuperStreams()
	for _, ls := range s.Manifest.Streams {
		v := streamView{Name: ls.Name, Anchor: streamAnchor(ls.Name), Description: ls.Description, Exchange: m.Exchanges.Events}
		for _, b := range top.Bindings {
			if b.Exchange == m.Exchanges.Events && (b.Queue == ls.Name || b.ToExchange == ls.Name) {
				v.Bindings = append(v.Bindings, b.Key)
			}
		}
		queue := ls.Name
		if i := slices.IndexFunc(supers, func(ss topology.SuperStream) bool { return ss.Name == ls.Name }); i >= 0 {
			v.Partitions = supers[i].Partitions
			for _, e := range top.Exchanges {
				if e.Name == ls.Name {
					v.HashHeader = e.HashHeader
				}
			}
			if len(v.Partitions) > 0 {
				queue = v.Partitions[0] // every partition has the stream's retention
			}
		}
		q, _ := top.Queue(queue)
		v.Direct = q.Direct
		v.Retention, v.Short = retention(q, ls.SegmentBytes != 0)
		for _, f := range m.Facts {
			if !slices.ContainsFunc(v.Bindings, func(p string) bool { return model.TopicMatch(p, f.RoutingKey) }) {
				continue
			}
			ref := factRef{f.RoutingKey, factAnchor(f)}
			v.Facts = append(v.Facts, ref)
			if direct, ok := top.DirectStream(m.Exchanges.Events, f.RoutingKey); ok && direct == ls.Name && f.Import == nil {
				v.DirectFacts = append(v.DirectFacts, ref)
			}
		}
		for _, mc := range m.Consumers {
			if mc.Topology.Stream == ls.Name {
				v.Readers = append(v.Readers, consumerRef{mc.Name, consumerAnchor(mc.Name)})
			}
		}
		out = append(out, v)
	}
	return out
}

// streamsOf returns the streams that keep the fact with routing key key.
func streamsOf(streams []streamView, key string) []streamRef {
	var out []streamRef
	for _, v := range streams {
		if slices.ContainsFunc(v.Facts, func(f factRef) bool { return f.RoutingKey == key }) {
			direct := slices.ContainsFunc(v.DirectFacts, func(f factRef) bool { return f.RoutingKey == key })
			out = append(out, streamRef{v.Name, v.Anchor, direct})
		}
	}
	return out
}

// retention describes a stream queue's retention as a Markdown sentence
// and in short for a table cell; the segment size only when the manifest
// sets it.
func retention(q topology.Queue, segmentSet bool) (sentence, short string) {
	var parts, shorts []string
	if q.MaxAge > 0 {
		age := topology.FormatDelay(q.MaxAge)
		parts = append(parts, "facts older than "+age+" are dropped (`x-max-age`)")
		shorts = append(shorts, age)
	}
	if q.MaxLengthBytes > 0 {
		parts = append(parts, "the oldest segments are dropped (`x-max-length-bytes`) once it holds more than "+formatBytes(q.MaxLengthBytes))
		shorts = append(shorts, shortBytes(q.MaxLengthBytes))
	}
	switch {
	case len(parts) == 0:
		sentence, short = "none: facts are kept whatever their age and size", "none"
	case q.MaxAge == 0:
		sentence = parts[0] + "; facts are kept whatever their age"
	case q.MaxLengthBytes == 0:
		sentence = parts[0] + "; no bound on size"
	default:
		sentence = parts[0] + ", and " + parts[1]
	}
	if short == "" {
		short = strings.Join(shorts, ", ")
	}
	if segmentSet {
		sentence += "; segment files (`x-stream-max-segment-size-bytes`, the unit retention drops) of " + formatBytes(q.SegmentBytes)
		short += ", segments of " + shortBytes(q.SegmentBytes)
	}
	return sentence, short
}

// byteUnits are the decimal units a size is written in when one divides
// it exactly.
var byteUnits = []struct {
	size int64
	name string
}{{1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "kB"}}

// formatBytes writes a size in bytes, with its decimal unit when one
// divides it exactly: "20000000000 bytes (20 GB)".
func formatBytes(n int64) string {
	s := strconv.FormatInt(n, 10) + " bytes"
	if short := shortBytes(n); short != s {
		return s + " (" + short + ")"
	}
	return s
}

// shortBytes writes a size in the largest decimal unit that divides it
// exactly, else in bytes.
func shortBytes(n int64) string {
	for _, u := range byteUnits {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// streamReads says, as Markdown, what a stream consumer reads and from
// where: its stream, or its super stream's partitions shared with its
// other instances.
func streamReads(tc *topology.Consumer) string {
	link := fmt.Sprintf("[%s](#%s)", mdCode(tc.Stream), streamAnchor(tc.Stream))
	start := "from " + tc.Start.Describe() + " (start " + mdCode(tc.Start.String()) + ")"
	if n := len(tc.Partitions); n > 0 {
		return fmt.Sprintf("super stream %s as a member of the consumer group %s: the broker makes one running instance active on each of its %d %s and spreads the partitions over the instances; each partition is read the first time %s, then on from the offset stored for it on the broker under the consumer's name",
			link, mdCode(tc.Name), n, plural(n, "partition", "partitions"), start)
	}
	return fmt.Sprintf("stream %s: the first time %s, then on from the offset stored on the broker under the consumer's name", link, start)
}

// startLabel is a stream consumer's start as the diagram labels it.
func startLabel(s topology.Start) string { return "from " + s.String() }

// mermaidStreams draws each stream bound from the events exchange and,
// for a stream publishing directly, the publisher writing into it. It
// returns the node of each stream by name.
func mermaidStreams(line func(string, ...any), m *model.Model, streams []streamView) map[string]string {
	nodes := map[string]string{}
	direct, exchanged := false, false
	for _, f := range m.Facts {
		if f.Import != nil {
			continue // published by the directory that declares it
		}
		_, ok := m.Topology.DirectStream(m.Exchanges.Events, f.RoutingKey)
		direct, exchanged = direct || ok, exchanged || !ok
	}
	for i, v := range streams {
		id := fmt.Sprintf("s%d", i)
		nodes[v.Name] = id
		label := mermaidLabel(v.Name) + "<br>stream"
		if n := len(v.Partitions); n > 0 {
			names := strings.Join(v.Partitions, ", ")
			if n > 3 {
				names = v.Partitions[0] + " … " + v.Partitions[n-1]
			}
			label = mermaidLabel(v.Name) + "<br>" + mermaidLabel(fmt.Sprintf("super stream, %d %s", n, plural(n, "partition", "partitions"))) + "<br>" + mermaidLabel(names)
		}
		line(`%s[["%s"]]`, id, label)
		for _, pattern := range v.Bindings {
			line(`events -->|"%s"| %s`, mermaidLabel(pattern), id)
		}
	}
	if !direct {
		return nodes
	}
	// The publisher is drawn only here, where it bypasses the exchange.
	line(`publisher(["publisher"])`)
	if exchanged {
		line(`publisher -->|"the other facts"| events`)
	}
	for i, v := range streams {
		if len(v.DirectFacts) == 0 {
			continue
		}
		var keys []string
		for _, f := range v.DirectFacts {
			keys = append(keys, f.RoutingKey)
		}
		line(`publisher ==>|"%s"| s%d`, mermaidLabel(strings.Join(keys, ", ")+": written directly"), i)
	}
	return nodes
}
