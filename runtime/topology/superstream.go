package topology

import (
	"fmt"
	"strconv"
	"strings"
)

// A super stream (StreamSpec.Partitions above 0) is RabbitMQ's partitioned
// stream, built from what the broker ships:
//
//   - an x-consistent-hash exchange named after the super stream, marked
//     x-super-stream, bound to the events exchange by the stream's
//     bindings and hashing on OrderingKeyHeader, so that every fact of one
//     ordering key is appended to the same partition, in publish order;
//   - Partitions stream queues "<name>-<i>" (from 0), bound to that
//     exchange with weight "1" and x-stream-partition-order i, the order
//     the stream protocol reports them in.
//
// Publishing is unchanged (the events exchange, confirms, mandatory). A
// consumer of a super stream joins a consumer group of its name on every
// partition over the stream protocol: the broker makes one member active
// per partition, spreads the partitions over the members, and hands a
// partition to another member when its active one leaves.
//
// Super streams need RabbitMQ 3.11 or later (single active consumers on
// streams); declaring one on an older broker is refused before anything is
// declared, and so is a partition count other than the existing super
// stream's: the hash would send keys to other partitions than the ones
// holding their earlier facts.

// SuperStreamMinVersion is the first RabbitMQ release with super streams.
const SuperStreamMinVersion = "3.11"

// maxPartitions bounds a super stream's partitions: each is a stream (a
// Raft group on every node) and a consumer per group member.
const maxPartitions = 64

// PartitionStream returns the name of a super stream's i-th partition
// (from 0), "<stream>-<i>", as RabbitMQ's own tools name them.
func PartitionStream(stream string, i int) string { return stream + "-" + strconv.Itoa(i) }

// buildSuperStream adds super stream s to t: its hash exchange, its
// partitions and their bindings.
func buildSuperStream(t *Topology, ex Exchanges, idx int, s StreamSpec, owner map[string]string) []Problem {
	var all []Problem
	t.Exchanges = append(t.Exchanges, Exchange{Name: s.Name, Kind: HashExchangeKind, Durable: true, HashHeader: OrderingKeyHeader, SuperStream: true})
	for _, key := range s.Bindings {
		t.Bindings = append(t.Bindings, Binding{Exchange: ex.Events, ToExchange: s.Name, Key: key})
	}
	for i := range s.Partitions {
		name := PartitionStream(s.Name, i)
		if prev, ok := owner[name]; ok {
			all = append(all, Problem{Consumer: -1, Name: s.Name, Field: streamField(idx, "name"), Index: -1,
				Detail: fmt.Sprintf("stream %q: partition %q collides with %s", s.Name, name, prev)})
			continue
		}
		owner[name] = fmt.Sprintf("partition %q of super stream %q", name, s.Name)
		t.Queues = append(t.Queues, Queue{Name: name, Role: RoleStream, Type: Stream, MaxAge: s.MaxAge, MaxLengthBytes: s.MaxBytes, SegmentBytes: s.SegmentBytes})
		t.Bindings = append(t.Bindings, Binding{Exchange: s.Name, Queue: name, Key: "1", Partition: i + 1})
	}
	return all
}

func checkSuperStream(ps *problems, i int, s StreamSpec) {
	if s.Partitions < 0 || s.Partitions > maxPartitions {
		ps.add(streamField(i, "partitions"), -1, "stream %q: partitions %d: expected 1 to %d for a super stream, or none for a plain stream", s.Name, s.Partitions, maxPartitions)
	}
}

// SuperStreams returns the super streams of t, each its exchange and its
// partitions in order.
func (t Topology) SuperStreams() []SuperStream {
	var out []SuperStream
	for _, e := range t.Exchanges {
		if !e.SuperStream {
			continue
		}
		ss := SuperStream{Name: e.Name}
		for _, b := range t.Bindings {
			if b.Exchange == e.Name && b.Partition > 0 {
				ss.Partitions = append(ss.Partitions, b.Queue)
			}
		}
		out = append(out, ss)
	}
	return out
}

// SuperStream is a super stream of a Topology: its exchange's name and its
// partition streams in order.
type SuperStream struct {
	Name       string
	Partitions []string
}

// SupportsSuperStreams reports whether a broker announcing version (the
// AMQP server property "version", e.g. "3.10.8") has super streams. A
// version it cannot read does not.
func SupportsSuperStreams(version string) bool { return VersionAtLeast(version, 3, 11) }

// VersionAtLeast reports whether version, a RabbitMQ release as the
// broker announces it ("3.10.8", "4.0.5"), is major.minor or later; false
// for a version that does not parse.
func VersionAtLeast(version string, major, minor int) bool {
	maj, rest, _ := strings.Cut(version, ".")
	min, _, _ := strings.Cut(rest, ".")
	ma, err1 := strconv.Atoi(maj)
	mi, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// superStreamPartitions returns the partitions of stream if it is a super
// stream of streams, nil otherwise.
func superStreamPartitions(streams []StreamSpec, stream string) []string {
	for _, s := range streams {
		if s.Name != stream || stream == "" {
			continue
		}
		var out []string
		for i := range s.Partitions {
			out = append(out, PartitionStream(s.Name, i))
		}
		return out
	}
	return nil
}
