package poison

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/runtime/topology"
)

// The actions [ActOnGroup] takes.
const (
	ActRetry   = "retry"   // back to the consumer's work queue, as [ReplayWith]
	ActDiscard = "discard" // to [DiscardQueue], as [DiscardAs]
	ActExport  = "export"  // to GroupAct.Export, leaving the messages where they are
)

// GroupAct is one action on a whole group of a poison lane.
type GroupAct struct {
	Action string // ActRetry, ActDiscard or ActExport
	Group  string // the group's id ([Cause.ID])
	From   Source // the queue acted on; the zero value is the poison queue
	// Expect, when positive, is how many messages the person saw in the
	// group: the action is refused unless the group holds exactly as many
	// now, and moves at most as many.
	Expect int
	By     string // who acts, recorded
	Reason string // required to discard; recorded
	DryRun bool   // count the group, change nothing, record nothing
	// Export receives each message of the group, for ActExport.
	Export func(Message) error
}

// RetryDestination names where a retry of c's messages goes: its work
// queue, or the hash exchange of an ordered consumer.
func RetryDestination(c topology.Consumer) string {
	if c.Ordered() {
		return "exchange " + c.ShardExchange
	}
	return c.Queue
}

// ErrExpect is matched by the error of [ActOnGroup] for a group that does
// not hold GroupAct.Expect messages.
var ErrExpect = errors.New("the group changed")

// ActOnGroup takes the group as it is now: it counts the group's messages
// (an unknown id is an error that lists the ids there are), refuses when
// a.Expect is set and differs, and then retries, discards or exports the
// messages of the group, those that joined meanwhile too (at most
// a.Expect). It records the action in c's history (see [RecordAction]),
// also one that stopped part way, and returns the group as counted and
// the action as recorded.
func ActOnGroup(ctx context.Context, conn Broker, c topology.Consumer, a GroupAct) (Group, Action, error) {
	src := a.From.Queue(c)
	dst := map[string]string{ActRetry: RetryDestination(c), ActDiscard: DiscardQueue(c), ActExport: ""}
	to, known := dst[a.Action]
	if !known {
		return Group{}, Action{}, fmt.Errorf("action %q: expected retry, discard or export", a.Action)
	}
	if a.Action == ActDiscard && strings.TrimSpace(a.Reason) == "" {
		return Group{}, Action{}, errors.New("a reason is required: it is what the next person to look will read")
	}
	if a.Action == ActExport && a.Export == nil {
		return Group{}, Action{}, errors.New("export: nowhere to write the messages")
	}
	groups, err := Groups(ctx, conn, c, a.From)
	if err != nil {
		return Group{}, Action{}, err
	}
	g, err := FindGroup(groups, a.Group, src)
	if err != nil {
		return Group{}, Action{}, err
	}
	rec := Action{
		By: a.By, Action: a.Action, Group: g.ID, Cause: g.Cause.Text, From: src, To: to,
		Matched: g.Count, Reason: strings.TrimSpace(a.Reason),
	}
	if a.Expect > 0 && g.Count != a.Expect {
		return g, rec, fmt.Errorf("%w: group %s holds %d messages now, not %d as expected: nothing changed; list the groups again", ErrExpect, g.ID, g.Count, a.Expect)
	}
	if a.DryRun {
		return g, rec, nil
	}
	f := Filter{Group: g.ID, Limit: a.Expect}
	var done []Message
	switch a.Action {
	case ActRetry:
		done, err = ReplayWith(ctx, conn, c, f, ReplayOptions{From: a.From})
	case ActDiscard:
		done, err = DiscardAs(ctx, conn, c, f, Record{Reason: a.Reason, By: a.By, Group: g.ID, Batch: g.Count})
	case ActExport:
		n := 0
		err = Each(ctx, conn, c, a.From, f, func(m Message) error {
			n++
			return a.Export(m)
		})
		rec.Count = n
	}
	if a.Action != ActExport {
		rec.Count = len(done)
	}
	if err != nil {
		rec.Error = secret.Text(err.Error())
	}
	if rerr := RecordAction(ctx, conn, c, rec); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return g, rec, err
}

// exportLine is one line of an export: a message's id, routing key,
// headers and payload.
type exportLine struct {
	ID         string          `json:"id"`
	RoutingKey string          `json:"routing_key"`
	Headers    map[string]any  `json:"headers"`
	Payload    json.RawMessage `json:"payload"`
}

// ExportLine is m as one line of JSON (newline included): its id,
// routing key, headers and payload (the envelope's payload; the whole
// body as a string when it is not a JSON envelope).
//
// An export is output, not a copy of the message: the value of every
// header whose name says it is a credential (authorization, cookie,
// x-api-key, a name with token, secret or password in it: see
// [secret.CredentialName]) is masked, and a URL's password in any other
// header, as [secret.Headers] does. A masked value stays masked: an
// export cannot bring it back. Replaying or discarding moves the message
// itself, its headers as they are.
func ExportLine(m Message) ([]byte, error) {
	line, err := json.Marshal(exportLine{ID: m.ID, RoutingKey: m.RoutingKey, Headers: ShownHeaders(m.Headers), Payload: payloadOf(m.Body)})
	if err != nil {
		return nil, fmt.Errorf("message %s: %w", m.ID, err)
	}
	return append(line, '\n'), nil
}

func payloadOf(body []byte) json.RawMessage {
	var env struct {
		Payload json.RawMessage `json:"payload"`
	}
	if json.Unmarshal(body, &env) == nil && len(env.Payload) > 0 {
		return env.Payload
	}
	s, _ := json.Marshal(string(body))
	return s
}
