package schemadiff

import (
	"cmp"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/warrenbus/warren/generator/load"
	"github.com/warrenbus/warren/runtime/topology"
)

// streamRules are the rules of a stream's declaration changed in place:
// filed under "stream <name>", with no fact and no deploy order; the
// message says what to do.
var streamRules = map[string]bool{StreamPartitionsChanged: true, StreamRetentionChanged: true, StreamKindChanged: true}

// compareStreams reports what the deploy does to each stream that both
// sides declare under one name, where warren.json changed what the broker
// already holds. RabbitMQ keeps a stream as first declared:
//
//   - a super stream's partition count cannot change: ordering keys would
//     hash to other partitions than the ones holding their earlier facts,
//     so the runtime's Declare refuses another count before it declares
//     anything (runtime.PartitionCountError), and Dial fails;
//   - a stream's arguments (x-max-age, x-max-length-bytes,
//     x-stream-max-segment-size-bytes, from maxAge, maxBytes and
//     segmentBytes, a super stream's partitions alike) cannot change
//     either: the broker refuses a redeclaration with others, which
//     Declare finds first and refuses, declaring nothing
//     (runtime.MismatchError). Retention changes with a policy instead,
//     whose keys max-age and max-length-bytes take precedence over the
//     arguments; the segment size is read when the stream is created, and
//     never again;
//   - a plain stream and a super stream of one name are different things
//     on the broker (a stream queue; an exchange and partition streams):
//     the new kind is declared beside the old, which stays bound to the
//     events exchange until `warren declare --prune` unbinds it, and its
//     readers' offsets stay in it.
//
// The first two stop every deploy of the directory; the third loses what
// the consumers had not read yet. None of them has a deploy order or a
// version that ships it, so each fails whatever the mode (Rule.Always),
// and its message says what to do instead. A change is filed under
// "stream <name>", as a saga's are under "saga <name>".
func compareStreams(old, new *Dir) []Change {
	if old.Schemas.Manifest == nil || new.Schemas.Manifest == nil {
		return nil
	}
	var out []Change
	for _, n := range new.Schemas.Manifest.Streams {
		o := streamNamed(old, n.Name)
		if o == nil {
			continue
		}
		subject := "stream " + n.Name
		if (o.Partitions == 0) != (n.Partitions == 0) {
			out = append(out, change(StreamKindChanged, subject, streamKeyPos(old, new, o, n, "partitions"), "%s", kindMessage(o, n)))
			continue // the new kind's streams are new: their arguments are their own
		}
		if o.Partitions != n.Partitions {
			out = append(out, change(StreamPartitionsChanged, subject, streamKeyPos(old, new, o, n, "partitions"),
				"partitions changed from %d to %d, which a super stream cannot do in place: ordering keys would hash to other partitions than the ones holding their earlier facts, so Declare (and so Dial, which declares the generated topology) refuses the new count before it declares anything (runtime.PartitionCountError) and the service does not start, in every deploy of this directory; keep \"partitions\": %d, or declare a super stream of another name with %d partitions beside it, move its consumers there (each starts there from its \"start\"), and remove %q from warren.json once none reads it (warren declare --prune unbinds it and keeps its facts)",
				o.Partitions, n.Partitions, o.Partitions, n.Partitions, n.Name))
		}
		if c, ok := retentionChange(old, new, o, n); ok {
			out = append(out, c)
		}
		if c, ok := segmentChange(old, new, o, n); ok {
			out = append(out, c)
		}
	}
	return out
}

// streamKeyPos is where key of a stream is: in the new warren.json, or in
// the old one when it was removed, else at the new stream's entry.
func streamKeyPos(old, new *Dir, o, n *load.Stream, key string) Pos {
	if p := appendPtr(n.Pointer, key); new.Schemas.Manifest.Doc.Offset(p) >= 0 {
		return new.pos(New, loc{load.ManifestFile, p})
	}
	if p := appendPtr(o.Pointer, key); old.Schemas.Manifest.Doc.Offset(p) >= 0 {
		return old.pos(Old, loc{load.ManifestFile, p})
	}
	return new.pos(New, loc{load.ManifestFile, n.Pointer})
}

// streamWhat names a stream for a message: "stream" or "super stream".
func streamWhat(s *load.Stream) string {
	if s.Partitions > 0 {
		return "super stream"
	}
	return "stream"
}

// kindMessage says what turning a plain stream into a super stream, or
// back, does on the broker and to its readers.
func kindMessage(o, n *load.Stream) string {
	var became, beside string
	if n.Partitions > 0 {
		became = fmt.Sprintf("became a super stream of %d partitions", n.Partitions)
		beside = fmt.Sprintf("Declare adds the super stream (an exchange %q and partition streams %s) beside the plain stream, which stays bound to the events exchange and keeps receiving every fact until warren declare --prune unbinds it", n.Name, partitionNames(n))
	} else {
		became = "became a plain stream"
		beside = fmt.Sprintf("Declare adds a stream queue %q beside the super stream's exchange and partitions (%s), which stay bound to the events exchange and keep receiving every fact until warren declare --prune unbinds them", n.Name, partitionNames(o))
	}
	return fmt.Sprintf("the %s %s, which RabbitMQ cannot do in place: %s. Its consumers store their offsets in the streams they read, so on the new ones they start from their \"start\" as if they had never run: what the old %s holds that they had not read yet is left behind there, and while the old build still runs, each fact written reaches both and is handled by both builds. Declare the %s under another name beside %q instead, move its consumers to it, and remove %q from warren.json once none reads it (warren declare --prune unbinds it and keeps its facts)",
		streamWhat(o), became, beside, streamWhat(o), streamWhat(n), o.Name, o.Name)
}

// partitionNames names a super stream's partition streams, the first and
// the last.
func partitionNames(s *load.Stream) string {
	first, last := strconv.Quote(s.Name+"-0"), strconv.Quote(s.Name+"-"+strconv.Itoa(s.Partitions-1))
	switch s.Partitions {
	case 1:
		return first
	case 2:
		return first + " and " + last
	}
	return first + " … " + last
}

// retentionChange reports a stream whose maxAge or maxBytes changed: one
// change for both, since one policy must carry both (RabbitMQ applies one
// policy to a queue, the one of the highest priority).
func retentionChange(old, new *Dir, o, n *load.Stream) (Change, bool) {
	type setting struct {
		key, arg, policy string
		was, is          int64 // 0: not set
		text             func(*Dir, *load.Stream) string
	}
	settings := []setting{
		{"maxAge", "x-max-age", "max-age", int64(o.MaxAge / time.Second), int64(n.MaxAge / time.Second), func(d *Dir, s *load.Stream) string { return maxAgeText(d, s) }},
		{"maxBytes", "x-max-length-bytes", "max-length-bytes", o.MaxBytes, n.MaxBytes, func(_ *Dir, s *load.Stream) string { return strconv.FormatInt(s.MaxBytes, 10) }},
	}
	var what, back, out, policy, removed []string
	var at *Pos
	for _, s := range settings {
		if s.was == s.is {
			continue
		}
		if at == nil {
			p := streamKeyPos(old, new, o, n, s.key)
			at = &p
		}
		switch {
		case s.was == 0:
			what = append(what, fmt.Sprintf("%s %s added", s.key, s.text(new, n)))
			out = append(out, s.key)
		case s.is == 0:
			what = append(what, fmt.Sprintf("%s %s removed", s.key, s.text(old, o)))
			back = append(back, fmt.Sprintf("%q: %s", s.key, s.text(old, o)))
		default:
			what = append(what, fmt.Sprintf("%s changed from %s to %s", s.key, s.text(old, o), s.text(new, n)))
			back = append(back, fmt.Sprintf("%q: %s", s.key, s.text(old, o)))
		}
		if s.is == 0 {
			removed = append(removed, s.policy)
			continue
		}
		v := strconv.FormatInt(s.is, 10)
		if s.key == "maxAge" {
			v = strconv.Quote(v + "s")
		}
		policy = append(policy, fmt.Sprintf("%q:%s", s.policy, v))
	}
	if at == nil {
		return Change{}, false
	}
	var keep []string
	if len(back) > 0 {
		keep = append(keep, "put "+strings.Join(back, " and ")+" back")
	}
	if len(out) > 0 {
		keep = append(keep, "leave "+strings.Join(out, " and ")+" out")
	}
	msg := fmt.Sprintf("%s: a stream keeps the arguments it was declared with, and the broker refuses a redeclaration with others, so Declare (and so Dial, which declares the generated topology) refuses it before it declares anything (a runtime.MismatchError) and the service does not start, in every deploy of this directory; %s in warren.json and change the retention on the broker with a policy, whose keys max-age and max-length-bytes take precedence over the stream's x-max-age and x-max-length-bytes",
		strings.Join(what, ", "), strings.Join(keep, " and "))
	if len(policy) > 0 {
		msg += fmt.Sprintf(" (rabbitmqctl set_policy %s-retention '%s' '{%s}' --apply-to queues; one policy applies to a queue, so put any other keys of a policy that applies to it now in the same one)", n.Name, streamPattern(n), strings.Join(policy, ","))
	}
	if len(removed) > 0 {
		msg += fmt.Sprintf("; a policy sets another %s in place of the argument, but cannot take it away", strings.Join(removed, " or "))
	}
	msg += ", or declare a stream of another name"
	return change(StreamRetentionChanged, "stream "+n.Name, *at, "%s", msg), true
}

// segmentChange reports a stream whose segmentBytes changed: RabbitMQ
// reads a stream's segment size (the argument, or the policy key
// stream-max-segment-size-bytes) only when it creates the stream.
func segmentChange(old, new *Dir, o, n *load.Stream) (Change, bool) {
	if o.SegmentBytes == n.SegmentBytes {
		return Change{}, false
	}
	text := func(v int64) string {
		if v == 0 {
			return "(none: the broker's default)"
		}
		return strconv.FormatInt(v, 10)
	}
	keep := fmt.Sprintf("put \"segmentBytes\": %d back in warren.json", o.SegmentBytes)
	if o.SegmentBytes == 0 {
		keep = "leave segmentBytes out of warren.json"
	}
	return change(StreamRetentionChanged, "stream "+n.Name, streamKeyPos(old, new, o, n, "segmentBytes"),
		"segmentBytes changed from %s to %s: the broker refuses to redeclare a stream with another x-stream-max-segment-size-bytes, so Declare (and so Dial, which declares the generated topology) refuses it before it declares anything (a runtime.MismatchError) and the service does not start, in every deploy of this directory; a stream's segment size cannot change once it exists (RabbitMQ reads it, or the policy key stream-max-segment-size-bytes, only when it creates the stream): %s, or declare a stream of another name",
		text(o.SegmentBytes), text(n.SegmentBytes), keep), true
}

// maxAgeText is a stream's maxAge as warren.json writes it.
func maxAgeText(d *Dir, s *load.Stream) string {
	if v, ok := d.Schemas.Manifest.Doc.Lookup(appendPtr(s.Pointer, "maxAge")); ok {
		if str, ok := v.(string); ok {
			return strconv.Quote(str)
		}
	}
	return strconv.Quote(strconv.FormatInt(int64(s.MaxAge/time.Second), 10) + "s")
}

// streamPattern is the policy pattern of a stream's queues: the stream, or
// a super stream's partitions.
func streamPattern(s *load.Stream) string {
	if s.Partitions > 0 {
		return "^" + regexp.QuoteMeta(s.Name) + "-[0-9]+$"
	}
	return "^" + regexp.QuoteMeta(s.Name) + "$"
}

// compareStreamStarts reports each stream consumer, on both sides reading
// the same stream, whose "start" changed. A start says where the consumer
// reads the first time, before it has an offset stored on the broker
// under its name; a consumer that has run goes on from its offset, so the
// new start changes nothing, which is what the reviewer should know. It
// breaks nobody. A consumer that moves to another stream, or whose stream
// changes kind, has no offset there: the start applies, and
// stream-consumer-moved or stream-kind-changed says what it reads.
func compareStreamStarts(old, new *Dir) []Change {
	if old.Schemas.Manifest == nil || new.Schemas.Manifest == nil {
		return nil
	}
	var out []Change
	for _, nc := range new.Schemas.Manifest.Consumers {
		oc := manifestConsumer(old, nc.Name)
		if oc == nil || nc.Stream == "" || oc.Stream != nc.Stream {
			continue
		}
		ost, ns := streamNamed(old, oc.Stream), streamNamed(new, nc.Stream)
		if ost == nil || ns == nil || (ost.Partitions == 0) != (ns.Partitions == 0) || sameStart(oc.Start, nc.Start) {
			continue
		}
		from, to := startText(oc.Start), startText(nc.Start)
		at := new.pos(New, loc{load.ManifestFile, nc.Start.Pointer})
		if nc.Start.Pointer == "" {
			at = old.pos(Old, loc{load.ManifestFile, oc.Start.Pointer})
		}
		again := fmt.Sprintf("; or read part of the stream again under a fresh offset name: warren replay --consumer %s --from stream", nc.Name)
		if ns.Partitions > 0 {
			again = "" // warren replay reads no super stream
		}
		ch := change(StreamStartChanged, "", at,
			"start changed from %s to %s, which applies only the first time the consumer starts, before the broker holds an offset under its name in %s %q: a consumer that has started goes on from its stored offset, and the change has no effect on it. For it to read from %s, give it another name, which has no offset yet (the old name's queues stay behind: warren declare --prune)%s",
			from, to, streamWhat(ns), ns.Name, to, again)
		ch.Consumer = nc.Name
		out = append(out, ch)
	}
	return out
}

// sameStart reports whether two starts read from the same place: no start
// is "next", and a time is an instant, whatever its zone.
func sameStart(a, b load.StreamStart) bool {
	kind := func(s load.StreamStart) string { return cmp.Or(s.Kind, "next") }
	if kind(a) != kind(b) {
		return false
	}
	switch kind(a) {
	case "offset":
		return a.Offset == b.Offset
	case "time":
		return a.Time.Equal(b.Time)
	}
	return true
}

// startText is a stream consumer's start as warren.json writes it; no
// start is "next".
func startText(s load.StreamStart) string {
	switch s.Kind {
	case "":
		return `"next"`
	case "offset":
		return "offset " + strconv.FormatInt(s.Offset, 10)
	case "time":
		return strconv.Quote(s.Time.Format(time.RFC3339Nano))
	}
	return strconv.Quote(s.Kind)
}

// manifestConsumer returns the directory's manifest consumer of that name,
// nil when it has none.
func manifestConsumer(d *Dir, name string) *load.Consumer {
	if d.Schemas.Manifest == nil {
		return nil
	}
	for _, c := range d.Schemas.Manifest.Consumers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// compareStreamMoves reports each consumer, on both sides under one name,
// that reads another stream than before: one stream (or super stream)
// for another, its queue for a stream, or a stream for its queue.
//
// A stream consumer's offset is kept in the stream it reads, under its
// name (a super stream's, in each partition), so on a stream it did not
// read it has none, and its "start" applies: "first" reads again what it
// handled from where it read before, "next" and "last" skip what was
// written before it first reads, among them what the old build had not
// read yet. While both builds run, each reads its own source, and a fact
// that reaches both is handled by both. None of that fails: facts are
// handled twice or not at all, without an error. No deploy order or
// version ships it, so it fails whatever the mode (Rule.Always), as a
// stream that changed kind does, which moves its consumers the same way;
// the message says how to move without losing or repeating facts.
//
// A stream renamed in place moves its consumers too. A stream that keeps
// its name and changes kind is stream-kind-changed, and a consumer that
// stays on its stream with another start is stream-start-changed.
func compareStreamMoves(old, new *Dir) []Change {
	if old.Schemas.Manifest == nil || new.Schemas.Manifest == nil {
		return nil
	}
	var out []Change
	for _, nc := range new.Schemas.Manifest.Consumers {
		oc := manifestConsumer(old, nc.Name)
		if oc == nil || oc.Stream == nc.Stream {
			continue
		}
		at := new.pos(New, loc{load.ManifestFile, nc.Pointer})
		if p := appendPtr(nc.Pointer, "stream"); nc.Stream != "" && new.Schemas.Manifest.Doc.Offset(p) >= 0 {
			at = new.pos(New, loc{load.ManifestFile, p})
		} else if p := appendPtr(oc.Pointer, "stream"); old.Schemas.Manifest.Doc.Offset(p) >= 0 {
			at = old.pos(Old, loc{load.ManifestFile, p})
		}
		ch := change(StreamConsumerMoved, "", at, "%s", moveMessage(old, new, oc, nc))
		ch.Consumer = nc.Name
		out = append(out, ch)
	}
	return out
}

// guardAdvice is how a consumer handles once a fact that reaches it twice.
const guardAdvice = "give the consumer a guard (runtime.WithGuard, which claims facts by consumer name and message id), so that a fact that reaches it both ways is handled once"

// moveMessage says what moving consumer oc (old side) to nc (new side)
// does to the facts it reads, and how to move it.
func moveMessage(old, new *Dir, oc, nc *load.Consumer) string {
	name := func(d *Dir, stream string) string {
		if s := streamNamed(d, stream); s != nil {
			return fmt.Sprintf("%s %q", streamWhat(s), stream)
		}
		return fmt.Sprintf("stream %q", stream)
	}
	switch {
	case nc.Stream == "":
		return fmt.Sprintf("moved from %s to its work queue %q, bound to the events exchange: the queue receives the facts its bindings match once the new build has declared those bindings, and what %q holds that the old build had not read when it stops stays behind there, with the consumer's offset. While both builds run, the old one reads %q as well as the work queue, which the new bindings now fill too, so a fact written meanwhile is handled from both. Deploy the new build before the old one stops, so that the queue is bound before %q is no longer read, and %s",
			name(old, oc.Stream), topology.WorkQueue(nc.Name), oc.Stream, oc.Stream, oc.Stream, guardAdvice)
	case oc.Stream == "":
		return fmt.Sprintf("moved from its work queue %q to %s: the deploy starts it there from its start, %s. Its work queue keeps the bindings the old build declared until warren declare --prune removes them, and a stream consumer reads its work queue too (for its own retries), so until then each fact they match reaches it from the queue and from the stream, and is handled twice. Keep \"start\": \"next\" (the facts written before it first reads the stream reach it through the queue), %s, and run warren declare --prune once no instance of the old build runs",
			topology.WorkQueue(oc.Name), name(new, nc.Stream), startEffect(nc.Start, nc.Stream, "its queue", true), guardAdvice)
	}
	msg := fmt.Sprintf("moved from %s to %s: a consumer's offset is kept in the stream it reads, under its name, so it has none in %q (unless it read it before under this name, and goes on from there) and the deploy starts it there from its start, %s. What %q holds that it had not read yet stays behind there, with its offset, and while both builds run, the old one reads %q and the new one %q, so a fact that both carry is handled by both. Before deploying, set \"start\" to the time of this change (RFC 3339, not in the future), before the old build stops reading %q, and %s",
		name(old, oc.Stream), name(new, nc.Stream), nc.Stream, startEffect(nc.Start, nc.Stream, strconv.Quote(oc.Stream), false), oc.Stream, oc.Stream, nc.Stream, oc.Stream, guardAdvice)
	if s := streamNamed(new, nc.Stream); s == nil || s.Partitions == 0 {
		// warren replay reads no super stream.
		msg += fmt.Sprintf("; or, after the deploy, read what it skipped under a fresh offset name: warren replay --consumer %s --from stream --offset-name NAME --since TIME", nc.Name)
	}
	return msg
}

// startEffect says what a consumer's start reads of stream, which it did
// not read before: facts it handled from its old source (before) are read
// again, or facts written before it first reads are skipped. Moved from
// its queue (fromQueue), it still reads the queue, whose old bindings
// bring it what was written before.
func startEffect(s load.StreamStart, stream, before string, fromQueue bool) string {
	kind := cmp.Or(s.Kind, "next")
	if fromQueue {
		switch kind {
		case "first":
			return fmt.Sprintf(`"first": it reads every fact %q keeps, those it already handled from %s among them, again`, stream, before)
		case "last":
			return fmt.Sprintf(`"last": it reads from the last fact %q holds when it first reads it, which it already handled from %s, again`, stream, before)
		case "offset", "time":
			return fmt.Sprintf("%s: it reads the facts after it that it already handled from %s again", startText(s), before)
		}
		return fmt.Sprintf(`"next": it reads what is written to %q from its first start on`, stream)
	}
	switch kind {
	case "first":
		return fmt.Sprintf(`"first": it reads every fact %q keeps, those it already handled from %s among them, again`, stream, before)
	case "last":
		return fmt.Sprintf(`"last": it reads from the last fact %q holds when it first reads it, and the facts written before that are skipped, those it had not handled from %s yet among them`, stream, before)
	case "offset", "time":
		return fmt.Sprintf("%s: the facts before it are skipped, those it had not handled from %s yet among them, and those after it that it already handled from %s are handled again", startText(s), before, before)
	}
	return fmt.Sprintf(`"next": the facts written to %q before it first reads it are skipped, those it had not handled from %s yet among them`, stream, before)
}
