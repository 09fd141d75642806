package console

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/warrenbus/warren/internal/secret"
	"github.com/warrenbus/warren/runtime/poison"
)

// causesJSON is a consumer's poison lane grouped by cause.
type causesJSON struct {
	Consumer    string      `json:"consumer"`
	PoisonQueue string      `json:"poison_queue"`
	Messages    int         `json:"messages"`
	Groups      []groupJSON `json:"groups"`
	ReadOnly    bool        `json:"read_only"`
	CanEdit     bool        `json:"can_edit"` // the console can check edited payloads
}

// groupJSON is one group as the page shows it: text only.
type groupJSON struct {
	ID          string            `json:"id"`
	Kind        string            `json:"kind"`
	Exception   string            `json:"exception"`
	Cause       string            `json:"cause"`
	Count       int               `json:"count"`
	FirstSeen   string            `json:"first_seen"` // RFC 3339, "" when unknown
	LastSeen    string            `json:"last_seen"`
	RoutingKeys []poison.KeyCount `json:"routing_keys"`
	Example     string            `json:"example"`
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func (s *Server) listCauses(w http.ResponseWriter, r *http.Request) {
	c, ok := s.consumer(w, r)
	if !ok {
		return
	}
	groups, err := poison.Groups(r.Context(), s.cfg.Broker, c, poison.FromPoison)
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	out := causesJSON{Consumer: c.Name, PoisonQueue: c.PoisonQueue, Groups: []groupJSON{}, ReadOnly: s.cfg.ReadOnly, CanEdit: s.cfg.Validate != nil}
	for _, g := range groups {
		out.Messages += g.Count
		out.Groups = append(out.Groups, groupJSON{
			ID: g.ID, Kind: g.Cause.Kind, Exception: g.Cause.Exception, Cause: g.Cause.Text, Count: g.Count,
			FirstSeen: stamp(g.FirstSeen), LastSeen: stamp(g.LastSeen), RoutingKeys: g.RoutingKeys, Example: g.Example,
		})
	}
	writeJSON(w, http.StatusOK, out)
}

// groupActionJSON says what an action on a group did.
type groupActionJSON struct {
	Action  string `json:"action"`
	Group   string `json:"group"`
	From    string `json:"from"`
	To      string `json:"to"`
	Matched int    `json:"matched"` // in the group when the action began
	Count   int    `json:"count"`   // moved or exported
	Summary string `json:"summary"`
	Lines   string `json:"lines,omitempty"` // the export, JSON lines
	Error   string `json:"error,omitempty"`
}

// maxExport bounds what one export answer holds; the CLI exports more.
const maxExport = 10_000

func (s *Server) actOnGroup(w http.ResponseWriter, r *http.Request, req actionRequest) {
	c, ok := s.consumer(w, r)
	if !ok {
		return
	}
	action := r.PathValue("action")
	var lines bytes.Buffer
	exported := 0
	act := poison.GroupAct{
		Action: action, Group: r.PathValue("group"), Expect: req.Expect, By: s.by(req), Reason: req.Reason,
		Export: func(m poison.Message) error {
			if exported++; exported > maxExport {
				return fmt.Errorf("the group holds more than %d messages: export it with warren poison export", maxExport)
			}
			line, err := poison.ExportLine(m)
			lines.Write(line)
			return err
		},
	}
	g, done, err := poison.ActOnGroup(r.Context(), s.cfg.Broker, c, act)
	out := groupActionJSON{Action: action, Group: act.Group, From: done.From, To: done.To, Matched: done.Matched, Count: done.Count, Lines: lines.String()}
	verb := map[string]string{poison.ActRetry: "retried", poison.ActDiscard: "discarded", poison.ActExport: "exported"}[action]
	if g.ID != "" {
		out.Summary = fmt.Sprintf("%s %s of %d in group %s from %s", verb, plural(done.Count, "message"), g.Count, g.ID, done.From)
		if done.To != "" {
			out.Summary += " to " + done.To
		}
	}
	status := http.StatusOK
	switch {
	case err == nil:
	case errors.Is(err, poison.ErrNoGroup):
		status = http.StatusNotFound
	case errors.Is(err, poison.ErrExpect):
		status = http.StatusConflict
	case done.Matched == 0:
		status = http.StatusBadRequest // refused before reading: an unknown action, no reason
	default:
		status = http.StatusBadGateway
	}
	if err != nil {
		out.Error = secret.Text(err.Error())
	}
	s.cfg.Logger.Info("console "+action+" group", "group", act.Group, "from", done.From, "to", done.To, "messages", done.Count, "err", out.Error)
	writeJSON(w, status, out)
}

func (s *Server) edit(w http.ResponseWriter, r *http.Request, req actionRequest) {
	c, ok := s.consumer(w, r)
	if !ok {
		return
	}
	if s.cfg.Validate == nil {
		writeError(w, http.StatusNotImplemented, "this console cannot check edited payloads against their schemas: nothing was changed")
		return
	}
	if req.ID == "" {
		writeError(w, http.StatusBadRequest, "expected the id of the message to edit: nothing was changed")
		return
	}
	by := s.by(req)
	m, err := poison.EditMessage(r.Context(), s.cfg.Broker, c, poison.Edit{ID: req.ID, Payload: []byte(req.Payload), By: by, ValidateVersion: s.cfg.Validate})
	switch {
	case errors.Is(err, poison.ErrInvalidPayload):
		writeError(w, http.StatusUnprocessableEntity, err.Error())
		return
	case errors.Is(err, poison.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
		return
	case errors.Is(err, poison.ErrSeveralCopies):
		// The page edits a message by its id alone, so it cannot say which.
		writeError(w, http.StatusConflict, err.Error()+"; edit one of them with warren poison edit --copy N")
		return
	case err != nil:
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	rec := poison.Action{By: by, Action: "edit", ID: m.ID, Cause: poison.CauseOf(m).Text, From: c.PoisonQueue, To: poison.RetryDestination(c), Matched: 1, Count: 1}
	summary := fmt.Sprintf("edited %s (%s): retried to %s, the original kept in %s", m.ID, m.RoutingKey, rec.To, poison.DiscardQueue(c))
	if err := poison.RecordAction(r.Context(), s.cfg.Broker, c, rec); err != nil {
		summary += "; not recorded in the history: " + err.Error()
	}
	s.cfg.Logger.Info("console edit", "id", m.ID, "consumer", c.Name)
	writeJSON(w, http.StatusOK, map[string]string{"summary": secret.Text(summary)})
}

// by is who acts, as the history records it.
func (s *Server) by(req actionRequest) string {
	if req.By != "" {
		return req.By
	}
	return "warren console"
}
