package load

import (
	"encoding/json"
	"strconv"
	"time"
)

// Stream is one entry of the manifest's "streams", sorted by name: a
// stream the facts its bindings match are appended to.
type Stream struct {
	Name        string   // the key: names the stream queue
	Pointer     string   // JSON pointer to the entry in warren.json
	Description string   // "" when absent
	Bindings    []string // topic patterns, as written
	// MaxAge, MaxBytes and SegmentBytes are "maxAge", "maxBytes" and
	// "segmentBytes": its retention, 0 when absent.
	MaxAge       time.Duration
	MaxBytes     int64
	SegmentBytes int64
	// Partitions is "partitions": above 0, the stream is a super stream of
	// that many partitions (see readSuperStream).
	Partitions int
	// Direct is "publish": "direct": facts only this stream binds are
	// written into it over the stream protocol.
	Direct bool
}

// StreamStart is a stream consumer's "start": where it reads from the
// first time. Kind is "first", "last", "next", "offset" or "time"; "" when
// absent.
type StreamStart struct {
	Kind    string
	Offset  int64     // for "offset": the start was an integer
	Time    time.Time // for "time": the start was an RFC 3339 time
	Pointer string    // where "start" is, "" when absent
}

// readStreams reads the manifest's "streams". The meta-schema guarantees
// their shape; durations still need parsing.
func readStreams(doc *Document, root map[string]any, errs *ErrorList) []*Stream {
	streams, _ := root["streams"].(map[string]any)
	var out []*Stream
	for _, name := range SortedKeys(streams) {
		obj := streams[name].(map[string]any)
		s := &Stream{Name: name, Pointer: Pointer("streams", name)}
		s.Description, _ = obj["description"].(string)
		for _, b := range obj["bindings"].([]any) {
			s.Bindings = append(s.Bindings, b.(string))
		}
		if a, ok := obj["maxAge"].(string); ok {
			d, err := time.ParseDuration(a)
			switch {
			case err != nil:
				// The broker keeps a stream's age in whole seconds.
				errs.Add(doc.Errorf(Append(s.Pointer, "maxAge"), "%s; no maxAge keeps facts whatever their age", badDuration(a, "168h", time.Second)))
			case d == 0:
				// Absent keeps facts whatever their age; a written 0 would
				// ask for a stream that keeps nothing, which cannot be met.
				errs.Add(doc.Errorf(Append(s.Pointer, "maxAge"), "stream %q: maxAge %s cannot be met: a stream keeps at least the segment it writes; expected a positive duration such as \"168h\", or no maxAge to keep facts whatever their age", name, a))
			}
			s.MaxAge = d
		}
		s.MaxBytes = int64Of(obj["maxBytes"])
		s.SegmentBytes = int64Of(obj["segmentBytes"])
		readSuperStream(s, obj)
		s.Direct = obj["publish"] == "direct"
		out = append(out, s)
	}
	return out
}

func int64Of(v any) int64 {
	n, ok := v.(json.Number)
	if !ok {
		return 0
	}
	i, _ := strconv.ParseInt(n.String(), 10, 64)
	return i
}

// readStreamConsumer reads a consumer's "stream" and "start".
func readStreamConsumer(doc *Document, pointer string, obj map[string]any, errs *ErrorList) (string, StreamStart) {
	stream, _ := obj["stream"].(string)
	var s StreamStart
	switch v := obj["start"].(type) {
	case json.Number:
		s.Pointer, s.Kind = Append(pointer, "start"), "offset"
		off, err := strconv.ParseInt(v.String(), 10, 64)
		if err != nil {
			errs.Add(doc.Errorf(s.Pointer, "expected an offset (an integer of 0 or more), got %s", v))
			// Reported: read as no start, which the checks that
			// follow the loader take for the default.
			return stream, StreamStart{}
		}
		s.Offset = off
	case string:
		s.Pointer = Append(pointer, "start")
		switch v {
		case "first", "last", "next":
			s.Kind = v
		default:
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				errs.Add(doc.Errorf(s.Pointer, "expected \"first\", \"last\", \"next\", an offset or an RFC 3339 time such as \"2026-01-02T15:04:05Z\", got %q", v))
				return stream, StreamStart{} // as for an offset above
			}
			s.Kind, s.Time = "time", t
		}
	}
	return stream, s
}

// readSuperStream reads what makes a stream a super stream: "partitions".
func readSuperStream(s *Stream, obj map[string]any) {
	s.Partitions = int(int64Of(obj["partitions"]))
}
