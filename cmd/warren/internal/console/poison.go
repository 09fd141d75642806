package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/runtime/poison"
	"github.com/warrenbus/warren/runtime/topology"
)

// messageJSON is one poison message as the page shows it. Every field is
// text for the page to show as text.
type messageJSON struct {
	ID         string       `json:"id"`
	RoutingKey string       `json:"routing_key"`
	Exchange   string       `json:"exchange"`
	Attempts   int          `json:"attempts"`
	Replays    int          `json:"replays"`
	FailedAt   string       `json:"failed_at"` // RFC 3339, "" when unknown
	Failure    string       `json:"failure"`
	OccurredAt string       `json:"occurred_at"` // from the envelope, "" when absent
	Payload    string       `json:"payload"`     // the envelope's payload pretty-printed, else the body as text
	PayloadOK  bool         `json:"payload_json"`
	Headers    []headerJSON `json:"headers"`
}

type headerJSON struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type poisonJSON struct {
	Consumer    string        `json:"consumer"`
	PoisonQueue string        `json:"poison_queue"`
	Limit       int           `json:"limit"` // the page lists at most this many
	Messages    []messageJSON `json:"messages"`
	ReadOnly    bool          `json:"read_only"`
	CanEdit     bool          `json:"can_edit"` // the console checks edited payloads against their schemas
}

// actionRequest is the body of a replay, a discard, an action on a group
// or an edit.
type actionRequest struct {
	IDs     []string `json:"ids"`
	Reason  string   `json:"reason"`
	Expect  int      `json:"expect"`  // a group's count as the page showed it; 0 acts on what is there now
	By      string   `json:"by"`      // who acts, for the history
	ID      string   `json:"id"`      // the message to edit
	Payload string   `json:"payload"` // its new payload, JSON text
}

// actionJSON says what an action did.
type actionJSON struct {
	Action  string       `json:"action"` // replay or discard
	From    string       `json:"from"`
	To      string       `json:"to"`
	Done    []actionItem `json:"done"`
	Missing []string     `json:"missing"` // ids that were not in the poison queue (any more)
	Summary string       `json:"summary"`
	Error   string       `json:"error,omitempty"` // set when the action stopped part way
}

type actionItem struct {
	ID         string `json:"id"`
	RoutingKey string `json:"routing_key"`
}

func (s *Server) consumer(w http.ResponseWriter, r *http.Request) (topology.Consumer, bool) {
	name := r.PathValue("name")
	c, ok := s.cfg.Topology.Consumer(name)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("consumer %q is not in the schema directory", name))
	}
	return c, ok
}

func (s *Server) listPoison(w http.ResponseWriter, r *http.Request) {
	c, ok := s.consumer(w, r)
	if !ok {
		return
	}
	msgs, err := poison.List(r.Context(), s.cfg.Broker, c, poison.Filter{Limit: s.cfg.PoisonLimit})
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	out := poisonJSON{Consumer: c.Name, PoisonQueue: c.PoisonQueue, Limit: s.cfg.PoisonLimit, Messages: []messageJSON{}, ReadOnly: s.cfg.ReadOnly, CanEdit: s.cfg.Validate != nil}
	for _, m := range msgs {
		out.Messages = append(out.Messages, describe(m))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) replay(w http.ResponseWriter, r *http.Request, req actionRequest) {
	c, ok := s.consumer(w, r)
	if !ok {
		return
	}
	if len(req.IDs) == 0 {
		writeError(w, http.StatusBadRequest, "select at least one message: nothing was replayed")
		return
	}
	done, err := poison.Replay(r.Context(), s.cfg.Broker, c, poison.Filter{IDs: req.IDs})
	rec := poison.Action{By: s.by(req), Action: poison.ActRetry, From: c.PoisonQueue, To: c.Queue}
	if rerr := poison.RecordMoved(r.Context(), s.cfg.Broker, c, rec, done, err); rerr != nil {
		err = errors.Join(err, rerr) // moved all the same; rerr names the history queue
	}
	s.report(w, "replay", c.PoisonQueue, c.Queue, req.IDs, done, err)
}

func (s *Server) discard(w http.ResponseWriter, r *http.Request, req actionRequest) {
	c, ok := s.consumer(w, r)
	if !ok {
		return
	}
	if len(req.IDs) == 0 {
		writeError(w, http.StatusBadRequest, "select at least one message: nothing was discarded")
		return
	}
	if strings.TrimSpace(req.Reason) == "" {
		writeError(w, http.StatusBadRequest, "give a reason for discarding: nothing was discarded")
		return
	}
	done, err := poison.DiscardAs(r.Context(), s.cfg.Broker, c, poison.Filter{IDs: req.IDs}, poison.Record{Reason: req.Reason, By: s.by(req)})
	rec := poison.Action{By: s.by(req), Action: poison.ActDiscard, From: c.PoisonQueue, To: poison.DiscardQueue(c), Reason: req.Reason}
	if rerr := poison.RecordMoved(r.Context(), s.cfg.Broker, c, rec, done, err); rerr != nil {
		err = errors.Join(err, rerr)
	}
	s.report(w, "discard", c.PoisonQueue, poison.DiscardQueue(c), req.IDs, done, err)
}

// report answers an action with what it did, also when it stopped part
// way: the messages it moved before the error are moved.
func (s *Server) report(w http.ResponseWriter, action, from, to string, ids []string, done []poison.Message, err error) {
	out := actionJSON{Action: action, From: from, To: to, Done: []actionItem{}, Missing: []string{}}
	for _, m := range done {
		out.Done = append(out.Done, actionItem{ID: m.ID, RoutingKey: m.RoutingKey})
	}
	for _, id := range ids {
		if !slices.ContainsFunc(done, func(m poison.Message) bool { return m.ID == id }) {
			out.Missing = append(out.Missing, id)
		}
	}
	verb := map[string]string{"replay": "replayed", "discard": "discarded"}[action]
	out.Summary = fmt.Sprintf("%s %s from %s to %s", verb, plural(len(done), "message"), from, to)
	if len(out.Missing) > 0 && err == nil {
		out.Summary += fmt.Sprintf("; %s no longer in %s", plural(len(out.Missing), "selected message was", "selected messages were"), from)
	}
	status := http.StatusOK
	if err != nil {
		out.Error = secret.Text(err.Error())
		status = http.StatusBadGateway
	}
	s.cfg.Logger.Info("console "+action, "from", from, "to", to, "messages", len(done), "err", out.Error)
	writeJSON(w, status, out)
}

func plural(n int, one string, many ...string) string {
	if n == 1 {
		return "1 " + one
	}
	if len(many) > 0 {
		return strconv.Itoa(n) + " " + many[0]
	}
	return strconv.Itoa(n) + " " + one + "s"
}

// describe turns a poison message into text for the page.
func describe(m poison.Message) messageJSON {
	out := messageJSON{
		ID: m.ID, RoutingKey: m.RoutingKey, Exchange: m.Exchange, Attempts: m.Attempts, Replays: m.Replays,
		Failure: m.Failure, Headers: []headerJSON{},
	}
	if !m.FailedAt.IsZero() {
		out.FailedAt = m.FailedAt.UTC().Format(time.RFC3339)
	}
	var env struct {
		OccurredAt string          `json:"occurred_at"`
		Payload    json.RawMessage `json:"payload"`
	}
	var pretty bytes.Buffer
	if json.Unmarshal(m.Body, &env) == nil && len(env.Payload) > 0 && json.Indent(&pretty, env.Payload, "", "  ") == nil {
		out.Payload, out.PayloadOK, out.OccurredAt = pretty.String(), true, env.OccurredAt
	} else if pretty.Reset(); json.Indent(&pretty, m.Body, "", "  ") == nil {
		out.Payload, out.PayloadOK = pretty.String(), true
	} else {
		out.Payload = strings.ToValidUTF8(string(m.Body), "\uFFFD")
	}
	// Credentials a producer put in a header are not shown, nor the count
	// of the lane's readings (x-delivery-count), as no reading shows them.
	shown := poison.ShownHeaders(m.Headers)
	names := make([]string, 0, len(shown))
	for k := range shown {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		out.Headers = append(out.Headers, headerJSON{Name: k, Value: headerText(shown[k])})
	}
	return out
}

// headerText renders an AMQP header value: strings as they are, tables
// and arrays (x-death) as JSON.
func headerText(v any) string {
	switch v := v.(type) {
	case string:
		return strings.ToValidUTF8(v, "\uFFFD")
	case []byte:
		return strings.ToValidUTF8(string(v), "\uFFFD")
	case time.Time:
		return v.UTC().Format(time.RFC3339)
	case amqp.Table, map[string]any, []any:
		b, err := json.MarshalIndent(v, "", "  ")
		if err == nil {
			return string(b)
		}
	}
	return fmt.Sprint(v)
}
