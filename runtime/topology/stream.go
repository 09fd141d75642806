package topology

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A stream is an append-only log on the broker (a RabbitMQ stream queue,
// x-queue-type stream): facts published to the events exchange whose keys
// match its bindings are appended to it and stay until its retention drops
// them, whoever read them. A stream consumer (ConsumerSpec.Stream) reads
// it from a position of its own, which the broker keeps for it (server-side
// offset tracking, over the stream protocol of the rabbitmq_stream
// plugin), and has the queues of a plain consumer besides: its work queue
// receives only its own retries, deferrals and held facts, never the
// events exchange's facts, and its poison queue what it gave up on.

// Stream is the queue type of a stream, sent as x-queue-type.
const Stream QueueType = "stream"

// RoleStream is the role of a stream queue. A stream belongs to no
// consumer: any number of them read it.
const RoleStream Role = "stream"

// StreamPlugin is the RabbitMQ plugin that serves the stream protocol,
// whose offset tracking stream consumers use. It ships with RabbitMQ but
// is off by default.
const StreamPlugin = "rabbitmq_stream"

// DefaultSegmentBytes is the broker's own default size of a stream's
// segment files (x-stream-max-segment-size-bytes): retention drops whole
// segments, never a part of one.
const DefaultSegmentBytes int64 = 500_000_000

// MaxSegmentBytes is the largest segment size the broker accepts: it
// refuses a stream declared with more ("Exceeded max value for
// x-stream-max-segment-size-bytes", RabbitMQ 3.10).
const MaxSegmentBytes int64 = 3_000_000_000

// StreamSpec describes one stream.
type StreamSpec struct {
	Name     string   // the stream queue's name
	Bindings []string // topic patterns on the events exchange; at least one
	// MaxAge drops the segments whose facts are all older (x-max-age, in
	// whole seconds); 0 keeps facts whatever their age.
	MaxAge time.Duration
	// MaxBytes drops the oldest segments once the stream is larger
	// (x-max-length-bytes); 0 means no bound. It must be at least
	// SegmentBytes: the broker keeps at least the segment being written,
	// so a smaller bound could never be met.
	MaxBytes int64
	// SegmentBytes is the size of the stream's segment files, the unit
	// retention drops (x-stream-max-segment-size-bytes). Default
	// DefaultSegmentBytes.
	SegmentBytes int64
	// Partitions, when above 0, makes the stream a super stream of that
	// many partition streams, each fact on the partition its ordering key
	// hashes to (see superstream.go). 0 is a plain stream.
	Partitions int
	// Direct publishes the facts only this stream binds straight into it
	// over the stream protocol, in batches, with the broker's confirm,
	// instead of through the events exchange: several times the rate, for
	// a fact whose one home is this stream (see [Topology.DirectStream]).
	// The bindings stay declared, so a fact published through the exchange
	// (by another client, or delayed) still reaches the stream. Plain
	// streams only: a super stream's partition is the hash exchange's
	// choice.
	Direct bool
}

// StartKind says where a stream consumer reads from the first time, before
// it has an offset of its own.
type StartKind string

// The start positions of a stream consumer, as warren.json spells them.
const (
	StartFirst  StartKind = "first"  // the oldest fact the stream still holds
	StartLast   StartKind = "last"   // the last fact written at the consumer's first start, then what follows
	StartNext   StartKind = "next"   // only facts written after the consumer first starts (default)
	StartOffset StartKind = "offset" // Start.Offset, an offset in the stream
	StartTime   StartKind = "time"   // the first fact written at or after Start.Time
)

// Start is a stream consumer's first start position. Its zero value is
// StartNext.
type Start struct {
	Kind   StartKind
	Offset int64     // for StartOffset
	Time   time.Time // for StartTime
}

// String writes the position as the x-stream-offset value it becomes, or
// "offset N" and an RFC 3339 time.
func (s Start) String() string {
	switch s.Kind {
	case StartOffset:
		return "offset " + strconv.FormatInt(s.Offset, 10)
	case StartTime:
		return s.Time.UTC().Format(time.RFC3339)
	case "":
		return string(StartNext)
	}
	return string(s.Kind)
}

// Describe says in words which fact the position is, for documentation
// and generated comments: "the oldest fact the stream still holds".
func (s Start) Describe() string {
	switch s.Kind {
	case StartFirst:
		return "the oldest fact the stream still holds"
	case StartLast:
		return "the last fact written when the consumer first starts, then what follows"
	case StartOffset:
		return "the fact at offset " + strconv.FormatInt(s.Offset, 10)
	case StartTime:
		return "the first fact written at or after " + s.String()
	}
	return "the first fact written after the consumer first starts"
}

// Relative reports whether the position depends on when it is taken:
// "next" and "last" name a different fact at each start.
func (s Start) Relative() bool {
	return s.Kind == "" || s.Kind == StartNext || s.Kind == StartLast
}

// ConsumeArgument returns the x-stream-offset argument of a basic.consume
// that reads from the position: a string, an offset (int64) or a
// timestamp (time.Time).
func (s Start) ConsumeArgument() any {
	switch s.Kind {
	case StartOffset:
		return s.Offset
	case StartTime:
		return s.Time
	case "":
		return string(StartNext)
	}
	return string(s.Kind)
}

func (s StreamSpec) withDefaults() StreamSpec {
	if s.SegmentBytes == 0 {
		s.SegmentBytes = DefaultSegmentBytes
	}
	return s
}

// buildStreams adds the streams to t, each a stream queue bound to the
// events exchange by its bindings, and returns the problems found.
func buildStreams(t *Topology, ex Exchanges, streams []StreamSpec, owner map[string]string) []Problem {
	var all []Problem
	for i, s := range streams {
		s = s.withDefaults()
		ps := problems{consumer: -1, name: s.Name}
		checkStream(&ps, i, s)
		if prev, ok := owner[s.Name]; ok {
			ps.add(streamField(i, "name"), -1, "stream %q: collides with %s", s.Name, prev)
		}
		if len(ps.list) > 0 {
			all = append(all, ps.list...)
			continue
		}
		owner[s.Name] = fmt.Sprintf("stream %q", s.Name)
		if s.Partitions > 0 {
			all = append(all, buildSuperStream(t, ex, i, s, owner)...)
			continue
		}
		t.Queues = append(t.Queues, Queue{Name: s.Name, Role: RoleStream, Type: Stream, MaxAge: s.MaxAge, MaxLengthBytes: s.MaxBytes, SegmentBytes: s.SegmentBytes, Direct: s.Direct})
		for _, key := range s.Bindings {
			t.Bindings = append(t.Bindings, Binding{Exchange: ex.Events, Queue: s.Name, Key: key})
		}
	}
	return all
}

// streamField names a stream's field as a Problem's Field: "streams.<i>.<field>".
func streamField(i int, field string) string {
	return "streams." + strconv.Itoa(i) + "." + field
}

func checkStream(ps *problems, i int, s StreamSpec) {
	if err := checkName(s.Name); err != nil {
		ps.add(streamField(i, "name"), -1, "stream %q: name: %v", s.Name, err)
	}
	if len(s.Bindings) == 0 {
		ps.add(streamField(i, "bindings"), -1, "stream %q: bindings: expected at least one topic pattern", s.Name)
	}
	for j, b := range s.Bindings {
		if err := checkPattern(b); err != nil {
			ps.add(streamField(i, "bindings"), j, "stream %q: binding %q: %v", s.Name, b, err)
		}
	}
	checkSuperStream(ps, i, s)
	if s.Direct && s.Partitions > 0 {
		ps.add(streamField(i, "publish"), -1, "stream %q: publish direct: a super stream's partition is chosen by its hash exchange, which a direct write would bypass; publish its facts through the exchange (remove publish)", s.Name)
	}
	switch {
	case s.MaxAge < 0:
		ps.add(streamField(i, "maxAge"), -1, "stream %q: maxAge %s: expected a positive duration, or none to keep facts whatever their age", s.Name, s.MaxAge)
	case s.MaxAge%time.Second != 0:
		ps.add(streamField(i, "maxAge"), -1, "stream %q: maxAge %s: expected whole seconds (the broker keeps a stream's age in seconds)", s.Name, s.MaxAge)
	}
	switch {
	case s.SegmentBytes < 0:
		ps.add(streamField(i, "segmentBytes"), -1, "stream %q: segmentBytes %d: expected a positive size", s.Name, s.SegmentBytes)
	case s.SegmentBytes > MaxSegmentBytes:
		ps.add(streamField(i, "segmentBytes"), -1, "stream %q: segmentBytes %d: the broker refuses segments larger than %d bytes; expected %d or less", s.Name, s.SegmentBytes, MaxSegmentBytes, MaxSegmentBytes)
	case s.MaxBytes < 0:
		ps.add(streamField(i, "maxBytes"), -1, "stream %q: maxBytes %d: expected a positive size, or none for no bound", s.Name, s.MaxBytes)
	case s.MaxBytes > 0 && s.MaxBytes < s.SegmentBytes:
		ps.add(streamField(i, "maxBytes"), -1, "stream %q: maxBytes %d cannot be met: the broker drops whole segments of segmentBytes (%d) and always keeps the one it writes; set maxBytes to at least segmentBytes, or a smaller segmentBytes", s.Name, s.MaxBytes, s.SegmentBytes)
	}
}

// checkStreamConsumer adds to ps what is wrong with a stream consumer c of
// the streams given, at time now (a start time must not be in the future).
func checkStreamConsumer(ps *problems, c ConsumerSpec, streams []StreamSpec, now time.Time) {
	if c.Stream == "" {
		if c.Start != (Start{}) {
			ps.add("start", -1, "start %s: only a stream consumer has a start position; set stream", c.Start)
		}
		return
	}
	found := false
	for _, s := range streams {
		found = found || s.Name == c.Stream
	}
	if !found {
		ps.add("stream", -1, "stream %q: no such stream in streams", c.Stream)
	}
	// What only queues have: a stream hands out facts in the order it
	// holds them, to every reader, and is bounded by its retention.
	if c.MaxPriority != 0 {
		ps.add("maxPriority", -1, "maxPriority %d: a stream consumer reads a stream, which has no priorities; remove maxPriority or read a queue", c.MaxPriority)
	}
	if c.MaxLength != 0 || c.MaxLengthBytes != 0 {
		ps.add("maxLength", -1, "maxLength: a stream consumer reads a stream, bounded by the stream's own retention (maxAge, maxBytes); remove maxLength")
	}
	if c.Ordered {
		ps.add("ordered", -1, "ordered: a stream consumer cannot be ordered by key: read a queue for an ordered consumer")
	}
	if c.Batch != nil {
		ps.add("batch", -1, "batch: a stream consumer takes one fact at a time")
	}
	if c.QueueType != Quorum {
		ps.add("queueType", -1, "queueType %q: a stream consumer's work and poison queues are quorum queues", c.QueueType)
	}
	switch c.Start.Kind {
	case "", StartFirst, StartLast, StartNext:
	case StartOffset:
		if c.Start.Offset < 0 {
			ps.add("start", -1, "start offset %d: expected 0 or more", c.Start.Offset)
		}
	case StartTime:
		if c.Start.Time.After(now) {
			ps.add("start", -1, "start %s: in the future: a consumer cannot start at facts not yet written; use %q to read what is written from its first start on", c.Start, StartNext)
		}
	default:
		ps.add("start", -1, "start %q: expected %q, %q, %q, an offset or a time", c.Start.Kind, StartFirst, StartLast, StartNext)
	}
}

// streamArguments adds a stream queue's x-arguments to args.
func (q Queue) streamArguments(args map[string]any) {
	if q.MaxAge > 0 {
		args["x-max-age"] = strconv.FormatInt(int64(q.MaxAge/time.Second), 10) + "s"
	}
	if q.SegmentBytes > 0 {
		args["x-stream-max-segment-size-bytes"] = q.SegmentBytes
	}
}

// DirectStream returns the stream that a fact published to exchange with
// routing key key is written into directly (over the stream protocol):
// the stream of Direct whose bindings match key, when no other queue's
// binding on exchange does. A key that another queue or stream binds as
// well goes through the exchange, which reaches them all.
func (t Topology) DirectStream(exchange, key string) (string, bool) {
	var found string
	words := strings.Split(key, ".")
	for _, b := range t.Bindings {
		if b.Exchange != exchange || !MatchWords(strings.Split(b.Key, "."), words) {
			continue
		}
		if found != "" && found != b.Queue || b.Queue == "" {
			return "", false
		}
		found = b.Queue
	}
	if found == "" {
		return "", false
	}
	for _, q := range t.Queues {
		if q.Name == found && q.Direct {
			return found, true
		}
	}
	return "", false
}

// DirectStreams returns the streams a Publisher writes into directly
// (Queue.Direct), in declaration order.
func (t Topology) DirectStreams() []string {
	var out []string
	for _, q := range t.Queues {
		if q.Direct {
			out = append(out, q.Name)
		}
	}
	return out
}

// StreamConsumers returns the consumers that read a stream.
func (t Topology) StreamConsumers() []Consumer {
	var out []Consumer
	for _, c := range t.Consumers {
		if c.Stream != "" {
			out = append(out, c)
		}
	}
	return out
}
